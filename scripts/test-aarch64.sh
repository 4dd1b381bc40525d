#!/usr/bin/env bash
# The 64-bit Arm (Jetson) half of the test suite: scripts/test.sh starts it beside the x86-64 steps,
# in parallel (most steps of either half keep only one of two cores busy: the last crate's compile,
# the longest emulated tests); run alone it is
#
#   bash scripts/test-aarch64.sh
#
# Cross-built with Debian's aarch64 linker and run under qemu-user, both named in .cargo/config.toml
# and installed by scripts/system.sh, in a target folder of its own so that these builds (another
# target, other features) never evict the x86 artifacts. Linted without default features and with
# the Jetson package's (`camera`: V4L2, bindgen on the aarch64 headers; `gpu`); the library's tests
# and the demo under emulation. What this checks and what it costs: docs/jetson-ci.md#what-ci-checks.
#
# ROBUSTREAM_TEST_SYNC: set by scripts/test.sh, a folder in which it marks what the x86-64 half has
# done: `assets` (scripts/assets.sh ran; the library's tests read the frost textures) and
# `robustream-x86_64` (the x86-64 binary its integration tests ran, a copy, which the demo's records
# are held to; made once those tests passed). The builds start at once; nothing runs under emulation
# before `robustream-x86_64` is there (the x86-64 tests measure frame rates in real time, and an
# emulated process beside them takes a core). The script stops when the folder goes (test.sh
# removes it when it ends). Unset: the script runs system.sh and assets.sh itself and the demo
# builds the x86-64 binary.
#
# The demo runs on its first 3 photos (33 records, every scenario; AARCH64_DEMO_FRAMES, see
# scripts/aarch64-demo.sh; set it empty for all 9).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SYNC=${ROBUSTREAM_TEST_SYNC:-}
STEPS=()
step() {
  local name=$1 t=$SECONDS
  shift
  "$@"
  STEPS+=("$name $((SECONDS - t)) s")
}
report() { [ ${#STEPS[@]} -eq 0 ] || printf 'test-aarch64.sh: %s\n' "${STEPS[@]}" >&2; }
trap report EXIT
# await NAME: until the x86-64 half has made $SYNC/NAME (at once when run alone).
await() {
  [ -n "$SYNC" ] || return 0
  until [ -e "$SYNC/$1" ]; do
    [ -d "$SYNC" ] || { echo "test-aarch64.sh: scripts/test.sh ended; stopping" >&2; exit 1; }
    sleep 2
  done
}

if [ -z "$SYNC" ]; then
  step system bash scripts/system.sh
  step assets bash scripts/assets.sh
fi

A64=(--release --locked --target aarch64-unknown-linux-gnu --no-default-features)
A64_DIR="${CARGO_TARGET_DIR:-target}/aarch64"
a64() { env CARGO_TARGET_DIR="$A64_DIR" cargo "$@"; }
step a64-clippy a64 clippy "${A64[@]}" --all-targets -- -D warnings
step a64-clippy-jetson a64 clippy "${A64[@]}" --features camera,gpu --all-targets -- -D warnings
# The demo's binary, before the tests run, so that it is ready when the x86-64 one is.
step a64-build a64 build "${A64[@]}"
# Under emulation, the library's tests: on aarch64 every vectorised kernel runs its portable body,
# so the kernel, scenario and view tests hold it to the reference fixtures (Pillow, OpenCV,
# imagecorruptions) the x86 levels meet; the other modules' tests cost seconds more. Left out: the
# GPU host tests (gpu::, pipeline::gpu::), which load an x86 build of the CUDA kernels, and the
# segmentation-mask tests (source::segment::), which load ONNX Runtime's x86 library.
step a64-tests-build a64 test "${A64[@]}" --lib --no-run
# The assets, and the end of the x86-64 tests (their binary is here; alone: at once).
step a64-tests-wait await assets
step a64-x86-tests-wait await robustream-x86_64
step a64-tests a64 test "${A64[@]}" --lib -- --skip gpu:: --skip source::segment::

# The demo end to end under qemu-user: the aarch64 binary with PyPI's aarch64 ONNX Runtime, its
# records held to the x86 run's (same top-1, top-1 probability within 1e-4; docs/jetson-ort.md).
export ROBUSTREAM_AARCH64_BIN="$A64_DIR/aarch64-unknown-linux-gnu/release/robustream"
[ -z "$SYNC" ] || export ROBUSTREAM_X86_BIN="$SYNC/robustream-x86_64"
export AARCH64_DEMO_FRAMES=${AARCH64_DEMO_FRAMES-3}
step a64-demo bash scripts/aarch64-demo.sh
