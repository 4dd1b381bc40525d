#!/bin/bash
# Merges the shard runs of deploy/slurm/robustream-array.sh into one run directory, equal to the
# run of the whole source on one machine (docs/deploy.md#slurm). Queue it behind the array:
#
#   array=$(sbatch --parsable deploy/slurm/robustream-array.sh)
#   sbatch --dependency=afterok:${array%%;*} deploy/slurm/merge.sh
#
# afterok on the array's job id waits for every task to end with exit code 0; a requeued task is
# waited for again. If a task fails for good the dependency can never be met: the merge stays
# pending (squeue reason DependencyNeverSatisfied) until you cancel it, or is cancelled at once with
# `sbatch --kill-on-invalid-dep=yes`. Rerun the failed tasks (sbatch --array=<their ids> ...; they
# resume), then submit the merge again.
#
#SBATCH --job-name=robustream-merge
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=01:00:00
#SBATCH --output=robustream-merge-%j.out
set -euo pipefail

: "${RESULTS:?set RESULTS to the folder of the shard runs (the one the array wrote to)}"
ROBUSTREAM=${ROBUSTREAM:-robustream}

shopt -s nullglob
shards=("$RESULTS"/shard-*)
[ ${#shards[@]} -gt 0 ] || { echo "robustream-merge: no shard-* run in $RESULTS" >&2; exit 1; }
exec "$ROBUSTREAM" merge "${shards[@]}" --out "$RESULTS/merged"
