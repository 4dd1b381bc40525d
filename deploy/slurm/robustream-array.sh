#!/bin/bash
# One shard of a robustream sweep per task of a Slurm job array (docs/deploy.md#slurm).
#
# Submit from a login node, with the merge queued behind the whole array:
#
#   export RESULTS=/shared/robustream/sweep-1 CONFIG=$PWD/run.toml
#   array=$(sbatch --parsable deploy/slurm/robustream-array.sh)
#   sbatch --dependency=afterok:${array%%;*} deploy/slurm/merge.sh
#
# robustream reads its shard from the array's variables (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT:
# shard = (ID - MIN) / STEP of COUNT), so the number of shards is the number of tasks in --array:
# change --array and nothing else. Each task writes RESULTS/shard-<task id> and always passes
# --resume, so a requeued task (node failure, pre-emption, the time limit below) goes on where it
# stopped instead of starting over. RESULTS must be on a file system every node sees.
#
#SBATCH --job-name=robustream
#SBATCH --array=0-7
#SBATCH --cpus-per-task=8
#SBATCH --mem=16G
#SBATCH --time=04:00:00
#SBATCH --output=robustream-%A_%a.out
#SBATCH --open-mode=append
#SBATCH --requeue
#SBATCH --signal=B:USR1@300
#
# --requeue: Slurm may put the task back in the queue after a node failure or pre-emption; it then
#   starts this script again from the top, and --resume keeps the finished frames.
# --open-mode=append: a requeued task adds to its log instead of truncating it.
# --signal=B:USR1@300: 300 s before the time limit Slurm sends USR1 to this script (B: the batch
#   shell only). The script passes it on to robustream as SIGTERM (which stops the run cleanly:
#   frames in flight finish, summary.json says "interrupted") and then requeues the task with
#   `scontrol requeue`, so a sweep longer than the time limit finishes over several allocations.
#   USR1 rather than TERM so that scancel (which sends TERM) still cancels.
set -uo pipefail

: "${RESULTS:?set RESULTS to the shared folder the shard runs go to (export RESULTS=...; sbatch ...)}"
: "${SLURM_ARRAY_TASK_ID:?submit this script with sbatch as a job array (#SBATCH --array)}"
CONFIG=${CONFIG:-${SLURM_SUBMIT_DIR:-.}/run.toml}
ROBUSTREAM=${ROBUSTREAM:-robustream}

# The array's variables must decide the shard: sbatch exports the submitting shell's environment,
# and a ROBUSTREAM_SHARD or JOB_COMPLETION_INDEX left there would come first and give every task
# the same shard.
unset ROBUSTREAM_SHARD JOB_COMPLETION_INDEX ROBUSTREAM_SHARDS

dir=$RESULTS/shard-$SLURM_ARRAY_TASK_ID
echo "robustream-array: task ${SLURM_ARRAY_JOB_ID:-?}_$SLURM_ARRAY_TASK_ID (job ${SLURM_JOB_ID:-?}," \
  "restart ${SLURM_RESTART_COUNT:-0}) -> $dir" >&2

# robustream runs as a child so that this shell can catch USR1; TERM and INT are not passed on:
# when Slurm cancels, pre-empts or times out the task it signals every process of the job, so
# robustream already has its own (a second one would make it abort without its summary). The shell
# only keeps waiting, so that the task does not end before robustream has written its files.
# The traps are set before robustream starts, so that no signal finds the shell without them.
pid=
requeue=0
trap 'requeue=1; [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null' USR1
trap ':' TERM INT
"$ROBUSTREAM" run --config "$CONFIG" --resume "$dir" "$@" &
pid=$!

# `wait` returns early whenever a trapped signal arrives; wait again until robustream has ended.
while :; do
  wait "$pid"
  status=$?
  kill -0 "$pid" 2>/dev/null || break
done

if [ "$requeue" = 1 ]; then
  echo "robustream-array: the time limit is near; requeueing job ${SLURM_JOB_ID:?} to resume $dir" >&2
  scontrol requeue "$SLURM_JOB_ID"
  exit $?
fi
exit "$status"
