#!/usr/bin/env bash
# The pipeline's end-to-end figures of issue 13 (BENCHMARKS.md, "Latency and cores"): runs a
# robustream binary on
#   clip_all   an 8 s, 25 fps 640x360 clip (ffmpeg testsrc2) in real time, all 96 ImageNet-C
#              variants per frame (the issue's command);
#   clip_demo  the same clip in real time with the demo plan (11 variants per frame);
#   offline    the synthetic camera unpaced, 24 frames of 640x480, all 96 variants (no drops);
# REPEAT times each (default 3) and prints one line per run plus the medians: run wall time, frames
# read / dropped, record age p50 / p99 (capture -> record written, per frame), total p50 / p99
# (capture -> inference done, per variant), wait p99 (ms), variants per second, CPU utilisation of
# the main pass. Usage: bash benches/live.sh [BIN] (default target/release/robustream; run from the
# repository root after `bash scripts/setup.sh`). An older binary without `age` / `run.cpu` reports
# `total` as its age and CPU from /usr/bin/time.
set -euo pipefail
BIN=${1:-target/release/robustream}
REPEAT=${REPEAT:-3}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=640x360:rate=25 -t 8 "$DIR/clip.mp4"
cat > "$DIR/synthetic.toml" <<TOML
[source]
path = "synthetic"
kind = "synthetic"
[source.synthetic]
width = 640
height = 480
frames = 24
TOML
one() { # name, args...
  local name=$1; shift
  local out="$DIR/$name"
  rm -rf "$out"
  /usr/bin/time -f "%e %U %S" -o "$DIR/time" "$BIN" run --quiet "$@" --out "$out" >/dev/null 2>&1
  python3 - "$out/summary.json" "$out/records.jsonl" "$DIR/time" "$name" "$DIR/rows.tsv" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2])]
wall, user, sys_ = (float(x) for x in open(sys.argv[3]).read().split())
lat = s["latency_ms"]
total = lat["total"]
age = lat.get("age") or total
wait = lat.get("wait", {}).get("p99", float("nan"))
cpu = s["run"].get("cpu")
util = cpu["utilisation"] if cpu else (user + sys_) / wall / 2
pass_wall = cpu["wall_s"] if cpu else s["run"]["wall_s"]
f = s["frames"]
row = [wall, f["read"], f["dropped"], age["p50"], age["p99"], total["p50"], total["p99"], wait,
       len(recs) / pass_wall, util]
print(f"{sys.argv[4]:<10} wall {wall:6.2f} s  read {f['read']:4d}  dropped {f['dropped']:4d}  "
      f"age p50 {age['p50']:8.1f} p99 {age['p99']:8.1f}  total p50 {total['p50']:8.1f} "
      f"p99 {total['p99']:8.1f}  wait p99 {wait:6.1f}  {row[8]:6.1f} variants/s  cpu {util:.3f}")
with open(sys.argv[5], "a") as t:
    t.write("\t".join([sys.argv[4]] + [str(x) for x in row]) + "\n")
PY
}
for i in $(seq "$REPEAT"); do
  one clip_all --config configs/demo.toml --source "$DIR/clip.mp4" --realtime --scenarios imagenet-c-all
  one clip_demo --config configs/demo.toml --source "$DIR/clip.mp4" --realtime
  one offline --config "$DIR/synthetic.toml" --model assets/models/efficientnet_lite0.toml \
    --scenarios imagenet-c-all
done
echo "medians of $REPEAT:"
python3 - "$DIR/rows.tsv" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    name, *nums = line.split("\t")
    rows.setdefault(name, []).append([float(x) for x in nums])
labels = ["wall s", "read", "dropped", "age p50", "age p99", "total p50", "total p99", "wait p99",
          "variants/s", "cpu"]
for name, rs in rows.items():
    med = [statistics.median(c) for c in zip(*rs)]
    print(f"{name:<10} " + "  ".join(f"{l} {v:.4g}" for l, v in zip(labels, med)))
PY
