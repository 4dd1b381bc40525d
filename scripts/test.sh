#!/usr/bin/env bash
# robustream's whole test suite, the README's second command (and what CI runs): installs missing
# Debian packages and the cached assets the end-to-end tests need (no-ops when present), checks
# formatting and lints, runs each benchmark once as a smoke test, then every unit, integration and
# doc test against the real model and ONNX Runtime; then the 64-bit Arm (Jetson) build: its lints,
# and the library's tests run under qemu-user (docs/jetson-ci.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/system.sh
bash scripts/assets.sh
cargo fmt --all -- --check
cargo clippy --release --locked --all-targets -- -D warnings
cargo test --release --locked --benches
cargo test --release --locked

# 64-bit Arm (Jetson boards): cross-built with Debian's aarch64 linker and run under qemu-user, both
# named in .cargo/config.toml and installed by scripts/system.sh, in a target folder of its own so
# that these builds (another target, other features) never evict the x86 artifacts above. Linted
# without default features and with the Jetson package's (`camera`: V4L2, bindgen on the aarch64
# headers; `gpu`). What this checks and what it costs: docs/jetson-ci.md#what-ci-checks.
A64=(--release --locked --target aarch64-unknown-linux-gnu --no-default-features)
A64_DIR="${CARGO_TARGET_DIR:-target}/aarch64"
CARGO_TARGET_DIR="$A64_DIR" cargo clippy "${A64[@]}" --all-targets -- -D warnings
CARGO_TARGET_DIR="$A64_DIR" cargo clippy "${A64[@]}" --features camera,gpu --all-targets -- -D warnings
# Under emulation, the library's tests: on aarch64 every vectorised kernel runs its portable body,
# so the kernel, scenario and view tests hold it to the reference fixtures (Pillow, OpenCV,
# imagecorruptions) the x86 levels meet; the other modules' tests cost seconds more. Left out: the
# GPU host tests (gpu::, pipeline::gpu::), which load an x86 build of the CUDA kernels, and the
# segmentation-mask tests (source::segment::), which load ONNX Runtime's x86 library.
CARGO_TARGET_DIR="$A64_DIR" cargo test "${A64[@]}" --lib -- --skip gpu:: --skip source::segment::

# The demo end to end under qemu-user: the aarch64 binary with PyPI's aarch64 ONNX Runtime, its
# records held to the x86 run's (same top-1, top-1 probability within 1e-4; docs/jetson-ort.md).
bash scripts/aarch64-demo.sh
