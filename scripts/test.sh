#!/usr/bin/env bash
# robustream's whole test suite, the README's second command (and what CI runs): installs missing
# Debian packages and the cached assets the end-to-end tests need (no-ops when present), checks
# formatting and lints, runs each benchmark once as a smoke test, then every unit, integration and
# doc test against the real model and ONNX Runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/system.sh
bash scripts/assets.sh
cargo fmt --all -- --check
cargo clippy --release --locked --all-targets -- -D warnings
cargo test --release --locked --benches
cargo test --release --locked
