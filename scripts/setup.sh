#!/usr/bin/env bash
# robustream set-up, the README's first command: installs what is missing (Debian packages, the ONNX
# Runtime library, the demo model and photos — registries only, cached under ~/.cache/robustream),
# builds the release binary and runs the demo evaluation. Idempotent: a re-run downloads nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Build tools the crates need (a C compiler for a few -sys crates); python3 is handled by assets.sh.
if ! command -v cc >/dev/null; then
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y build-essential pkg-config
fi

bash scripts/assets.sh
cargo build --release --locked
"${CARGO_TARGET_DIR:-target}/release/robustream" run --config configs/demo.toml "$@"
# The background / object part of the demo: a contact sheet on the quokka and a short run (seconds).
bash scripts/demo_background.sh
