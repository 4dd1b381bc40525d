#!/usr/bin/env bash
# The GPU path's checks and figures on a CUDA machine (docs/gpu.md#gpu-resident-scenarios),
# written for one short session on a lent GPU:
#
#   OUT=DIR bash gpu_check.sh [STEP...]      STEP: tests e2e bench live (default: all, in that order)
#
# Run from a folder holding:
#   robustream            the binary (cargo build --release; `--no-default-features --features gpu`
#                         where FFmpeg/V4L2 are missing)
#   tests-lib             the library's unit tests (cargo test --release --lib --no-run, same flags)
#   bench-gpu             benches/gpu.rs (cargo bench --bench gpu --no-run, same flags)
#   host/kernels-*.so     the tests' host build of the kernels (from $TMPDIR/robustream-gpu-host/
#                         on the build machine: the GPU machine may have no C++ compiler)
#   models/, photos/, assets/frost/   the demo model, photos and frost textures (scripts/assets.sh)
# with ORT_DYLIB_PATH set to the GPU build of ONNX Runtime, LD_LIBRARY_PATH holding its CUDA and
# cuDNN libraries and NVRTC (libnvrtc.so.13; else ROBUSTREAM_NVRTC=path). PROVIDER (cuda) and
# FRAMES (300) and CLEAN_FRAMES (2000) let the script be tried on a machine without a GPU. Writes under $OUT, each file as
# its step ends (a step cut short by its timeout still leaves its output):
#   device.txt      the GPU, cores, driver
#   tests.txt       every GPU corruption on the device against its host build, and repeated bit for
#                   bit; every scenario with kernels through a device worker vs a host-build worker
#   e2e.txt         imagenet-c-all over synthetic frames, CUDA provider, variants made on the CPU
#                   workers vs on the GPU: variants/s, host CPU use, and the records compared
#   bench.txt       each GPU corruption (severity 3) vs one CPU core, and the copies (criterion)
#   live.txt        the same plan live at 30 fps for 10 s with the GPU making variants: drops
#   exp.txt         (step exp, not run by default) what limits the GPU path: e2e's GPU run under
#                   CUDA's synchronisation modes, more queues, other worker counts; and the CPU path
#   pipeline.txt    the CPU-made pipeline's own GPU goals (BENCHMARKS.md, issue 13): the bare engine
#                   at batch 32 and 64, the clean plan over 2,000 frames, the demo plan live at 30 fps
#   stall.txt       (step stall, issue 29) imagenet-c-all and the demo plan live at 30 fps for 10 s,
#                   the engine as before issue 29 (one session, the sizes 1..64, no engine-thread
#                   warm-up) against its defaults now (a session per size, one shape from the plan,
#                   two warm-up rounds on the engine thread), variants made on the CPU and on the
#                   GPU; each run's run.batches, and its batches.csv as stall-NAME.batches.csv; then
#                   bench --mode paced --fps 30 and --mode multi-stream
set -uo pipefail
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$G/gpu-out}
PROVIDER=${PROVIDER:-cuda}
FRAMES=${FRAMES:-300}
CLEAN_FRAMES=${CLEAN_FRAMES:-2000}
EXP_FRAMES=${EXP_FRAMES:-200}
STEPS=${*:-tests e2e bench live pipeline}
: "${ORT_DYLIB_PATH:?must name the GPU build of ONNX Runtime (device.sh sets it)}"
mkdir -p "$OUT" "${TMPDIR:-/tmp}/robustream-gpu-host"
cd "$G"
cp host/kernels-*.so "${TMPDIR:-/tmp}/robustream-gpu-host/" 2>/dev/null
# The lib tests and the bench look for models/ and photos/ under ./assets (crate::assets::dirs).
mkdir -p assets
for d in models photos; do [ -e "assets/$d" ] || ln -s "../$d" "assets/$d"; done
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; } \
  > "$OUT/device.txt" 2>&1
step() { echo "== $1 ($(date +%T))" >&2; SECONDS=0; }
# One line per run: variants/s while evaluating, host cores busy, frames, and each stage's
# p50/p99 (ms) from summary.json.
summary='import json, sys; r = json.load(open(sys.argv[1])); u = r["run"].get("cpu") or {}; l = r.get("latency_ms", {})
n = sum(1 for _ in open(sys.argv[1].replace("summary.json", "records.jsonl")))
print("  ", n, "variants in", u.get("wall_s"), "s =", round(n / (u.get("wall_s") or 1)), "variants/s;",
      "cores", round((u.get("cpu_s") or 0) / (u.get("wall_s") or 1), 2), "frames", r.get("frames"), "end", r["run"].get("end"))
print("   p50/p99 ms:", "; ".join("%s %s/%s" % (k, v.get("p50"), v.get("p99")) for k, v in l.items()))'

config() { # name scenarios_on frames realtime [plan] [more [pipeline] lines]
  cat > "run-$1.toml" <<T
model = "models/efficientnet_lite0.toml"
scenarios = ["${5:-imagenet-c-all}"]
seed = 0
[source]
path = "synthetic"
kind = "synthetic"
[source.synthetic]
width = 640
height = 480
fps = 30
frames = $3
realtime = $4
[pipeline]
max_batch = 64
${6:-}
[engine]
provider = "$PROVIDER"
library = "$ORT_DYLIB_PATH"
scenarios_on = "$2"
T
}

for s in $STEPS; do case $s in
tests)
  step tests
  # Only the device tests: the other gpu:: tests compare with the CPU kernels and read fixtures
  # from the checkout (they ran where the binary was built).
  timeout 200 ./tests-lib device_kernels device_background device_workers --test-threads 1 --nocapture > "$OUT/tests.txt" 2>&1
  echo "rc=$? after ${SECONDS} s" >> "$OUT/tests.txt"
  grep -E "FAILED|out of tolerance|test result|^rc=" "$OUT/tests.txt" | tail -8 >&2
  ;;
e2e)
  step e2e
  {
    for on in cpu gpu; do
      config "$on" "$on" "$FRAMES" false
      rm -rf "runs/$on"; SECONDS=0
      timeout 150 ./robustream run --quiet --config "run-$on.toml" --out "runs/$on" > /dev/null
      echo "$on: rc=$? after ${SECONDS} s"; python3 -c "$summary" "runs/$on/summary.json"
    done
    python3 - <<'P'
import json, os
def load(on):
    if not os.path.exists(f"runs/{on}/summary.json"):
        return None, None
    recs = [json.loads(l) for l in open(f"runs/{on}/records.jsonl")]
    return recs, json.load(open(f"runs/{on}/summary.json"))["run"]
runs = {on: load(on) for on in ("cpu", "gpu")}
for on, (recs, run) in runs.items():
    if run is None:
        print(on, "no summary"); continue
    cpu = run.get("cpu") or {}
    wall = cpu.get("wall_s") or run.get("wall_s") or 1
    print(f"{on}: {len(recs)} variants in {wall} s evaluating = {len(recs) / wall:.0f} variants/s; "
          f"host CPU {cpu.get('cpu_s')} s = {(cpu.get('cpu_s') or 0) / wall:.2f} cores of {cpu.get('cores')}; "
          f"whole run {run.get('wall_s')} s; warm-up ms {run.get('engine_warmup_ms')}")
    print(f"  scenarios_on {run.get('scenarios_on')} gpu {run.get('gpu')} fallback {run.get('cpu_fallback')}")
    print(f"  end {run.get('end')} error {run.get('error')} failed {run.get('variants_failed')}")
(c, _), (g, _) = runs["cpu"], runs["gpu"]
if c and g:
    key = lambda r: (r["frame"], r["scenario"])
    c = {key(r): r for r in c}; g = {key(r): r for r in g}
    clean = lambda d, f: d.get((f, "clean"), {}).get("pred")
    by = {}
    for k, r in g.items():
        if k not in c: continue
        name = k[1].split("/")[1] if "/" in k[1] else k[1]
        a = by.setdefault(name, [0, 0, 0, 0, 0.0])
        a[0] += r["pred"] == c[k]["pred"]
        a[1] += 1
        a[2] += r["pred"] == clean(g, k[0])
        a[3] += c[k]["pred"] == clean(c, k[0])
        a[4] = max(a[4], abs(r["prob"][0] - c[k]["prob"][0]) if r["pred"] == c[k]["pred"] else 0)
    print("scenario              GPU=CPU top-1   kept clean's top-1: GPU / CPU   max |dp| when equal")
    for s, (a, n, kg, kc, dp) in sorted(by.items()):
        print(f"  {s:20s} {a:5d}/{n:<5d}  {kg:5d} / {kc:<5d}  {dp:.2e}")
P
  } > "$OUT/e2e.txt" 2>&1
  cat "$OUT/e2e.txt" >&2
  ;;
bench)
  step bench
  # Severity 3 on the GPU beside the CPU's severity 3, and the copies.
  timeout 200 ./bench-gpu --bench '/3$|copies_' > "$OUT/bench.txt" 2>&1
  echo "rc=$? after ${SECONDS} s" >> "$OUT/bench.txt"
  tail -3 "$OUT/bench.txt" >&2
  ;;
live)
  step live
  {
    config live gpu 600 true
    rm -rf runs/live
    timeout 60 ./robustream run --quiet --config run-live.toml --out runs/live --duration 10 > /dev/null
    echo "rc=$? after ${SECONDS} s"
    python3 -c "
import json; r = json.load(open('runs/live/summary.json'))
print({k: r['run'].get(k) for k in ('wall_s', 'cpu', 'end', 'scenarios_on', 'cpu_fallback')})
print(r.get('frames')); l = r.get('latency_ms', {})
print({k: {q: l[k].get(q) for q in ('p50', 'p99', 'max')} for k in ('total', 'age', 'infer') if k in l})"
  } > "$OUT/live.txt" 2>&1
  cat "$OUT/live.txt" >&2
  ;;
pipeline)
  step pipeline
  {
    for b in 32 64; do
      timeout 40 ./robustream bench --model models/efficientnet_lite0.toml --provider "$PROVIDER" \
        --library "$ORT_DYLIB_PATH" --mode offline --batch "$b" --duration 8 2>&1 | grep -v "^warning"
    done
    config clean cpu "$CLEAN_FRAMES" false clean
    rm -rf runs/clean
    timeout 90 ./robustream run --quiet --config run-clean.toml --out runs/clean > /dev/null
    echo "clean plan, CPU-made: rc=$?"; python3 -c "$summary" runs/clean/summary.json
    config demo cpu 600 true demo
    rm -rf runs/demo
    timeout 40 ./robustream run --quiet --config run-demo.toml --out runs/demo --duration 10 > /dev/null
    echo "demo plan live, CPU-made: rc=$?"; python3 -c "$summary" runs/demo/summary.json
  } > "$OUT/pipeline.txt" 2>&1
  cat "$OUT/pipeline.txt" >&2
  ;;
exp)
  # What limits the GPU path: the same plan under CUDA's synchronisation modes, more hardware
  # queues, and other worker counts; then the CPU path with the same frames.
  step exp
  {
    for v in "-" "ROBUSTREAM_GPU_SYNC=spin" "ROBUSTREAM_GPU_SYNC=yield" "CUDA_DEVICE_MAX_CONNECTIONS=32"; do
      config exp gpu "$EXP_FRAMES" false
      rm -rf runs/exp
      env ${v#-} timeout 60 ./robustream run --quiet --config run-exp.toml --out runs/exp > /dev/null
      echo "[$v] rc=$?"; python3 -c "$summary" runs/exp/summary.json
    done
    for w in 4 8 32; do
      config exp gpu "$EXP_FRAMES" false imagenet-c-all "workers = $w"
      rm -rf runs/exp
      timeout 60 ./robustream run --quiet --config run-exp.toml --out runs/exp > /dev/null
      echo "[workers = $w] rc=$?"; python3 -c "$summary" runs/exp/summary.json
    done
    config exp cpu "$EXP_FRAMES" false
    rm -rf runs/exp
    timeout 60 ./robustream run --quiet --config run-exp.toml --out runs/exp > /dev/null
    echo "[variants made on the CPU] rc=$?"; python3 -c "$summary" runs/exp/summary.json
  } > "$OUT/exp.txt" 2>&1
  cat "$OUT/exp.txt" >&2
  ;;
stall)
  step stall
  batches='import json, sys; r = json.load(open(sys.argv[1]))["run"]; b = r.get("batches") or {}
print("   engine:", r.get("engine"))
print("   batches", b.get("count"), "rows", b.get("rows"), "padded", b.get("padded_rows"), "shape changes", b.get("shape_changes"))
for k in ("infer_ms", "gap_ms", "queue_max_ms"): print("  ", k, b.get(k))
for z, v in (b.get("by_shape") or {}).items(): print("   shape", z, "calls", v["calls"], "after change", v["after_change"], "ms", v.get("ms"), "after change", v.get("ms_after_change"))
print("   engine-thread warm-up ms", b.get("engine_thread_warmup_ms"))'
  {
    for plan in imagenet-c-all demo; do
      for on in cpu gpu; do
        for engine in before now; do
          name="$plan-$on-$engine"
          config "$name" "$on" 600 true "$plan"
          [ "$engine" = before ] &&
            printf 'sessions = "shared"\nlive_shapes = "sizes"\nengine_thread_warmup = 0\n' >> "run-$name.toml"
          rm -rf "runs/$name"
          timeout 60 ./robustream run --quiet --config "run-$name.toml" --out "runs/$name" --duration 10 > /dev/null
          echo "[$name] rc=$?"; python3 -c "$summary" "runs/$name/summary.json"
          python3 -c "$batches" "runs/$name/summary.json"
          cp "runs/$name/batches.csv" "$OUT/stall-$name.batches.csv" 2>/dev/null
        done
      done
    done
    for mode in "paced --fps 30" "multi-stream"; do
      # shellcheck disable=SC2086
      timeout 40 ./robustream bench --model models/efficientnet_lite0.toml --provider "$PROVIDER" \
        --library "$ORT_DYLIB_PATH" --mode $mode --duration 8 2>&1 | grep -v "^warning"
    done
  } > "$OUT/stall.txt" 2>&1
  cat "$OUT/stall.txt" >&2
  ;;
*) echo "unknown step $s (tests e2e bench live pipeline exp stall)" >&2 ;;
esac; done
