#!/usr/bin/env bash
# robustream set-up, the README's first command: installs what is missing (Debian packages, the ONNX
# Runtime library, the demo model and photos — registries only, cached under ~/.cache/robustream),
# builds the release binary and runs the demo evaluation. Idempotent: a re-run downloads nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/system.sh
bash scripts/assets.sh
cargo build --release --locked
"${CARGO_TARGET_DIR:-target}/release/robustream" run --config configs/demo.toml "$@"
# The background / object part of the demo: a contact sheet on the quokka and a short run (seconds).
bash scripts/demo_background.sh
