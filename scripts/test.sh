#!/usr/bin/env bash
# robustream's whole test suite, the README's second command (and what CI runs): installs missing
# Debian packages and the cached assets the end-to-end tests need (no-ops when present), checks
# formatting, lints and the API docs, runs each benchmark once as a smoke test beside every unit,
# integration and doc test against the real model and ONNX Runtime, builds at the declared
# minimum Rust version; then the 64-bit Arm (Jetson) build: its lints, and the library's tests and
# the demo run under qemu-user (docs/jetson-ci.md).
#
#   bash scripts/test.sh           everything, as CI runs it
#   bash scripts/test.sh --quick   the edit-test loop: formatting, lints and the native unit and
#                                  integration tests (no benches, docs, minimum version or Arm)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

QUICK=false
case "${1:-}" in
  "") ;;
  --quick) QUICK=true ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
# Seconds per step, printed at the end: where the suite's time goes.
STEPS=()
step() {
  local name=$1 t=$SECONDS
  shift
  "$@"
  STEPS+=("$name $((SECONDS - t)) s")
}
report() { printf 'test.sh: %s\n' "${STEPS[@]}" >&2; }
trap report EXIT

step system bash scripts/system.sh
step assets bash scripts/assets.sh
step fmt cargo fmt --all -- --check
step clippy cargo clippy --release --locked --all-targets -- -D warnings
if $QUICK; then
  step tests cargo test --release --locked --lib --bins --tests
  exit 0
fi
# Once over every target (the library, the binary, the integration tests and each benchmark as a
# smoke test), so the library's unit tests run once; doc tests apart (`--all-targets` leaves them out).
step tests cargo test --release --locked --all-targets
step doctests cargo test --release --locked --doc
# The code's docs build without a broken link or a malformed comment. They are for the people who
# change the code (the crate has no library users), so private items are documented and a doc
# comment may link to one (rustdoc's `private_intra_doc_links` then makes the link all the same).
step docs env RUSTDOCFLAGS="-D warnings -A rustdoc::private_intra_doc_links" \
  cargo doc --no-deps --locked --document-private-items
# The declared minimum Rust version (`rust-version` in Cargo.toml) builds every target: a type check
# with that toolchain, which rustup installs once (scripts/system.sh adds the Arm target the same way).
MSRV=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
msrv_check() {
  if ! rustup run "$MSRV" rustc --version >/dev/null 2>&1; then
    echo "test.sh: installing Rust $MSRV (the declared rust-version) with rustup" >&2
    rustup toolchain install "$MSRV" --profile minimal
  fi
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" cargo "+$MSRV" check --locked --all-targets
}
step msrv msrv_check

# 64-bit Arm (Jetson boards): cross-built with Debian's aarch64 linker and run under qemu-user, both
# named in .cargo/config.toml and installed by scripts/system.sh, in a target folder of its own so
# that these builds (another target, other features) never evict the x86 artifacts above. Linted
# without default features and with the Jetson package's (`camera`: V4L2, bindgen on the aarch64
# headers; `gpu`). What this checks and what it costs: docs/jetson-ci.md#what-ci-checks.
A64=(--release --locked --target aarch64-unknown-linux-gnu --no-default-features)
A64_DIR="${CARGO_TARGET_DIR:-target}/aarch64"
step a64-clippy env CARGO_TARGET_DIR="$A64_DIR" cargo clippy "${A64[@]}" --all-targets -- -D warnings
step a64-clippy-jetson env CARGO_TARGET_DIR="$A64_DIR" \
  cargo clippy "${A64[@]}" --features camera,gpu --all-targets -- -D warnings
# Under emulation, the library's tests: on aarch64 every vectorised kernel runs its portable body,
# so the kernel, scenario and view tests hold it to the reference fixtures (Pillow, OpenCV,
# imagecorruptions) the x86 levels meet; the other modules' tests cost seconds more. Left out: the
# GPU host tests (gpu::, pipeline::gpu::), which load an x86 build of the CUDA kernels, and the
# segmentation-mask tests (source::segment::), which load ONNX Runtime's x86 library.
step a64-tests env CARGO_TARGET_DIR="$A64_DIR" \
  cargo test "${A64[@]}" --lib -- --skip gpu:: --skip source::segment::

# The demo end to end under qemu-user: the aarch64 binary with PyPI's aarch64 ONNX Runtime, its
# records held to the x86 run's (same top-1, top-1 probability within 1e-4; docs/jetson-ort.md).
step a64-demo bash scripts/aarch64-demo.sh
