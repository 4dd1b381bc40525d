#!/usr/bin/env bash
# The demo evaluation (configs/demo.toml) run twice: by the aarch64 build under qemu-user with the
# aarch64 ONNX Runtime from PyPI, and by the x86-64 build. The script compares the two runs'
# records and exits non-zero if they differ (docs/jetson-ort.md#the-emulated-demo).
#   bash scripts/aarch64-demo.sh    # 4-7 min on 2 busy cores with both binaries built
# Needs: scripts/assets.sh done (model, photos, x86 ONNX Runtime), the aarch64 cross tools and
# qemu-user (scripts/system.sh), rust target aarch64-unknown-linux-gnu.
# Environment: ROBUSTREAM_X86_BIN / ROBUSTREAM_AARCH64_BIN use these binaries instead of building
# them; AARCH64_DEMO_TOL is the largest |Δp| of the top-1 probability allowed (default 1e-4, why:
# docs/jetson-ort.md#the-emulated-demo); AARCH64_DEMO_TIMEOUT bounds the emulated run (s, 1800);
# AARCH64_DEMO_FRAMES runs both binaries on the demo's first N photos only (`--limit N`; every
# scenario still runs on each: scripts/test-aarch64.sh gives 3, 33 records, a third of the emulated
# time; unset: all 9, 99 records).
#
# The emulated run goes through scripts/qemu-aarch64.sh, whose -L prefix gives ONNX Runtime an Arm
# /proc/cpuinfo (the host's x86 one made it crash inside dlopen) and keeps glibc in one piece.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
START=$(date +%s)
log() { echo "aarch64-demo: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

CACHE=${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}
ARM=$CACHE/aarch64
ORT_VERSION=1.31.1
ORT_LIB=$ARM/lib/libonnxruntime.so.$ORT_VERSION
TRIPLE=aarch64-unknown-linux-gnu
TOL=${AARCH64_DEMO_TOL:-1e-4}
OUT=$REPO/runs/aarch64-demo

for f in "$CACHE/lib/libonnxruntime.so" "$CACHE/models/efficientnet_lite0.toml" "$CACHE/photos/demo.csv"; do
  [ -e "$f" ] || fail "$f is missing; run \`bash scripts/assets.sh\` first"
done
command -v qemu-aarch64 >/dev/null || fail "qemu-aarch64 not found; install qemu-user (scripts/system.sh)"
[ -f /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ] \
  || fail "/usr/aarch64-linux-gnu/lib/libstdc++.so.6 not found; install gcc-aarch64-linux-gnu libstdc++6-arm64-cross"

# --- the aarch64 ONNX Runtime, from the PyPI wheel (cached: a re-run downloads nothing) -----------
if [ ! -f "$ORT_LIB" ]; then
  PY=$CACHE/venv/bin/python
  [ -x "$PY" ] || PY=python3
  TMP=$(mktemp -d "$CACHE/.tmp.XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  log "downloading onnxruntime==$ORT_VERSION for manylinux_2_28_aarch64 from PyPI"
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_aarch64 --python-version 3.12 --implementation cp \
    "onnxruntime==$ORT_VERSION" -d "$TMP" >&2
  mkdir -p "$ARM/lib"
  "$PY" - "$TMP"/*.whl "$ORT_LIB" <<'EOF'
import os, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
member = "onnxruntime/capi/" + os.path.basename(dest)
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(dest + ".part", "wb") as out:
    out.write(src.read())
os.chmod(dest + ".part", 0o755)
os.replace(dest + ".part", dest)
EOF
fi

# --- the two binaries (cargo reuses what is built; the aarch64 build has its own target dir) ------
X86_BIN=${ROBUSTREAM_X86_BIN:-}
if [ -z "$X86_BIN" ]; then
  cargo build --release --locked
  X86_BIN=${CARGO_TARGET_DIR:-target}/release/robustream
fi
ARM_BIN=${ROBUSTREAM_AARCH64_BIN:-}
if [ -z "$ARM_BIN" ]; then
  A64_DIR="${CARGO_TARGET_DIR:-target}/aarch64"
  CARGO_TARGET_DIR="$A64_DIR" cargo build --release --locked --target $TRIPLE --no-default-features
  ARM_BIN=$A64_DIR/$TRIPLE/release/robustream
fi

# --- the two runs: the demo config as it is, and a copy whose paths are absolute and whose engine
# library is the aarch64 one ------------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT"
sed -e "s#\"\.\./#\"$REPO/#" -e "s#^library = .*#library = \"$ORT_LIB\"#" configs/demo.toml > "$OUT/demo-aarch64.toml"
grep -q "^library = \"$ORT_LIB\"" "$OUT/demo-aarch64.toml" || fail "configs/demo.toml has no \`library =\` line to replace"

LIMIT=()
if [ -n "${AARCH64_DEMO_FRAMES:-}" ]; then
  [[ $AARCH64_DEMO_FRAMES =~ ^[1-9][0-9]*$ ]] || fail "AARCH64_DEMO_FRAMES=$AARCH64_DEMO_FRAMES: give a whole number of photos, 1 or more"
  LIMIT=(--limit "$AARCH64_DEMO_FRAMES")
fi

T0=$(date +%s)
"$X86_BIN" run --config configs/demo.toml "${LIMIT[@]}" --out "$OUT/x86_64" --quiet > "$OUT/x86_64.log" 2>&1 \
  || { tail -5 "$OUT/x86_64.log" >&2; fail "the x86-64 run failed (log: $OUT/x86_64.log)"; }
T1=$(date +%s)
# A stuck emulation ends at the timeout: SIGTERM stops the run, SIGKILL 20 s later if that did not.
timeout -k 20 "${AARCH64_DEMO_TIMEOUT:-1800}" bash scripts/qemu-aarch64.sh "$ARM_BIN" \
  run --config "$OUT/demo-aarch64.toml" "${LIMIT[@]}" --out "$OUT/aarch64" --quiet > "$OUT/aarch64.log" 2>&1 \
  || { tail -5 "$OUT/aarch64.log" >&2; fail "the aarch64 run under qemu failed (log: $OUT/aarch64.log)"; }
T2=$(date +%s)
log "x86-64 run $((T1 - T0)) s, aarch64 run under qemu-user (${QEMU_CPU:-neoverse-n1}) $((T2 - T1)) s"

# --- same records, same top-1, top-1 probability within TOL ----------------------------------------
python3 - "$OUT/x86_64/records.jsonl" "$OUT/aarch64/records.jsonl" "$TOL" <<'EOF'
import json, sys
def load(path):
    with open(path) as f:
        return {(r["frame"], r["scenario"]): r for r in map(json.loads, f) if r.get("scenario")}
x86, arm, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
bad = []
if x86.keys() != arm.keys():
    bad.append(f"record sets differ: {len(x86.keys() - arm.keys())} only on x86-64, "
               f"{len(arm.keys() - x86.keys())} only on aarch64")
worst, at = 0.0, None
for key in sorted(x86.keys() & arm.keys()):
    a, b = x86[key], arm[key]
    if a["pred"] != b["pred"]:
        bad.append(f"{key[0]} {key[1]}: top-1 {a['pred']} on x86-64, {b['pred']} on aarch64 "
                   f"(x86-64 margin to top-2: {a['prob'][0] - a['prob'][1]:.4g})")
        continue
    d = abs(a["prob"][0] - b["prob"][0])
    if d > worst:
        worst, at = d, key
    if d > tol:
        bad.append(f"{key[0]} {key[1]}: top-1 probability {a['prob'][0]:.6f} on x86-64, "
                   f"{b['prob'][0]:.6f} on aarch64, |Δp| {d:.3g} > {tol:g}")
for line in bad:
    print(f"aarch64-demo: FAIL: {line}", file=sys.stderr)
where = f" ({at[0]} {at[1]})" if at else ""
print(f"aarch64-demo: {len(x86)} records on x86-64, {len(arm)} on aarch64, {len(bad)} differences; "
      f"max |Δp| of a same top-1's probability {worst:.3g}{where}, tolerance {tol:g}",
      file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
log "OK in $(($(date +%s) - START)) s"
