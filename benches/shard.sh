#!/bin/bash
# Shard overhead end to end (BENCHMARKS.md#shards): one run of a folder of 54 photos (the demo
# photos, six copies each) under the imagenet-c plan, the same run as 3 shards one after another on
# this machine, and their merge. Prints wall seconds per run (median of REPS) and the frames each
# shard evaluated. Usage: bash benches/shard.sh [BIN] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/robustream}
REPS=${2:-3}
MODEL=assets/models/efficientnet_lite0.toml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/photos"
for k in 1 2 3 4 5 6; do
  for f in astronaut.png camera.png chelsea.png china.jpg coffee.png flower.jpg grace_hopper.jpg quokka.jpg rocket.jpg; do
    cp "assets/photos/$f" "$work/photos/c${k}_$f"
  done
done
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { "$BIN" run --model "$MODEL" --source "$work/photos" --scenarios imagenet-c --quiet "$@"; }
for r in $(seq "$REPS"); do
  rm -rf "$work"/whole "$work"/s? "$work"/merged
  echo "whole $(secs run --out "$work/whole")"
  for i in 0 1 2; do echo "shard$i $(secs run --out "$work/s$i" --shard "$i/3")"; done
  echo "merge $(secs "$BIN" merge "$work"/s0 "$work"/s1 "$work"/s2 --out "$work/merged")"
done > "$work/times"
for k in whole shard0 shard1 shard2 merge; do
  echo "$k $(grep "^$k " "$work/times" | cut -d' ' -f2 | median)"
done
for i in 0 1 2; do
  echo "shard$i frames $(python3 -c "import json;print(json.load(open('$work/s$i/summary.json'))['frames']['read'])")"
done
