#!/usr/bin/env bash
# The GPU path's checks and figures on a CUDA machine (docs/gpu.md#gpu-resident-scenarios),
# written for one short session on a lent GPU. Run from a folder holding:
#   robustream            the binary (cargo build --release; `--no-default-features --features gpu`
#                         where FFmpeg/V4L2 are missing)
#   tests-lib             the library's unit tests (cargo test --release --lib --no-run, same flags)
#   bench-gpu             benches/gpu.rs (cargo bench --bench gpu --no-run, same flags)
#   host/kernels-*.so     the tests' host build of the kernels (from $TMPDIR/robustream-gpu-host/
#                         on the build machine: the GPU machine may have no C++ compiler)
#   models/, photos/      the demo model and photos (scripts/assets.sh)
# with ORT_DYLIB_PATH set to the GPU build of ONNX Runtime, LD_LIBRARY_PATH holding its CUDA and
# cuDNN libraries and NVRTC (libnvrtc.so.13; else ROBUSTREAM_NVRTC=path). Writes under $OUT:
#   lib-tests.txt   every kernel on the device against its host build, and repeated bit for bit
#   bench.txt       each GPU corruption vs one CPU core (criterion)
#   e2e.txt         imagenet-c-all over synthetic frames, CUDA provider, variants made on the CPU
#                   workers vs on the GPU: variants/s, host CPU use, and the records compared
#   live.txt        the same plan live at 30 fps for 10 s with the GPU making variants: drops
set -uo pipefail
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$G/gpu-out}
mkdir -p "$OUT" "${TMPDIR:-/tmp}/robustream-gpu-host"
cd "$G"
cp host/kernels-*.so "${TMPDIR:-/tmp}/robustream-gpu-host/" 2>/dev/null
{ nvidia-smi -L; nproc; } > "$OUT/device.txt" 2>&1

echo "== device tests" >&2
# Only the device test: the other gpu:: tests compare with CPU kernels and read fixtures from the
# checkout, which the GPU machine does not have (they ran where the binary was built).
timeout 180 ./tests-lib gpu::tests::device_kernels_match_their_host_build --nocapture \
  > "$OUT/lib-tests.txt" 2>&1
echo "rc=$?" >> "$OUT/lib-tests.txt"; tail -3 "$OUT/lib-tests.txt" >&2

echo "== bench" >&2
timeout 240 ./bench-gpu --bench > "$OUT/bench.txt" 2>&1
echo "rc=$?" >> "$OUT/bench.txt"; tail -2 "$OUT/bench.txt" >&2

config() { # on frames realtime
  cat > "run-$1.toml" <<T
model = "models/efficientnet_lite0.toml"
scenarios = ["imagenet-c-all"]
seed = 0
[source]
path = "synthetic"
kind = "synthetic"
[source.synthetic]
width = 640
height = 480
fps = 30
frames = $2
realtime = $3
[pipeline]
max_batch = 64
[engine]
provider = "cuda"
library = "$ORT_DYLIB_PATH"
scenarios_on = "$1"
T
}
echo "== end to end" >&2
{
  for on in cpu gpu; do
    config "$on" 300 false
    rm -rf "runs/$on"
    /usr/bin/time -f "$on: wall %e s, user %U s, sys %S s" timeout 200 \
      ./robustream run --quiet --config "run-$on.toml" --out "runs/$on" > /dev/null
    echo "$on: rc=$?"
  done
  python3 - <<'P'
import json
def load(on):
    recs = [json.loads(l) for l in open(f"runs/{on}/records.jsonl")]
    run = json.load(open(f"runs/{on}/summary.json"))["run"]
    return recs, run
for on in ("cpu", "gpu"):
    recs, run = load(on)
    print(on, "variants", len(recs), "wall_s", run.get("wall_s"), "variants/s",
          round(len(recs) / max(run.get("wall_s") or 1, 1e-9), 1), "cpu", run.get("cpu"),
          "scenarios_on", run.get("scenarios_on"), "fallback", run.get("cpu_fallback"))
(c, _), (g, _) = load("cpu"), load("gpu")
key = lambda r: (r["frame"], r["scenario"])
c = {key(r): r for r in c}; g = {key(r): r for r in g}
same = diff = 0
by = {}
for k, r in g.items():
    if k not in c: continue
    s = k[1].split("/")[1] if "/" in k[1] else k[1]
    a = by.setdefault(s, [0, 0])
    a[1] += 1
    if r.get("pred") == c[k].get("pred"): a[0] += 1
for s, (a, n) in sorted(by.items()):
    print(f"  {s:20s} top-1 agreement GPU vs CPU variants {a}/{n}")
P
} > "$OUT/e2e.txt" 2>&1
tail -25 "$OUT/e2e.txt" >&2

echo "== live" >&2
{
  config gpu 300 true
  rm -rf runs/live
  timeout 60 ./robustream run --quiet --config run-gpu.toml --out runs/live --duration 10
  echo "rc=$?"
  python3 -c "import json; r=json.load(open('runs/live/summary.json')); print({k: r['run'].get(k) for k in ('wall_s','cpu','end','scenarios_on')}); print(r.get('frames'))"
} > "$OUT/live.txt" 2>&1
tail -5 "$OUT/live.txt" >&2
