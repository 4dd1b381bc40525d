#!/usr/bin/env bash
# The background / object part of the demo (run by scripts/setup.sh after the main demo; seconds).
# On imgaug's quokka with its outline mask (assets/photos/masks.csv):
#  1. a contact sheet of the background and object groups (IN-9, XIMAGENET-12, Hard ImageNet
#     ablations, Corner Cases placements, RFS noise), the pool scenarios fed with backgrounds given
#     on the command line: the quokka's own Only-BG-T (same class, from masks.csv) and a photo of
#     another class (the palace);
#  2. a short run of the in9, ximagenet12 and hard-imagenet groups over the photos with masks (one
#     photo: the pool scenarios have no earlier frame and are skipped as warming up, as they are on
#     the first frame of any stream).
# Idempotent: it rewrites runs/demo_background/. Needs the release binary and the assets.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin="${CARGO_TARGET_DIR:-target}/release/robustream"
model=assets/models/efficientnet_lite0.toml
out=runs/demo_background
mkdir -p "$out"
export ORT_DYLIB_PATH="${ORT_DYLIB_PATH:-$PWD/assets/lib/libonnxruntime.so}"

"$bin" preview --image assets/photos/quokka.jpg --mask assets/photos/quokka_mask.png \
  --model "$model" --class wallaby \
  --background assets/photos/masks.csv --background assets/photos/china.jpg:palace \
  --scenarios in9,ximagenet12,hard-imagenet,corner-cases,rfs --tile 128 \
  --out "$out/sheet.png"

"$bin" run --model "$model" --source assets/photos/masks.csv \
  --scenarios in9,ximagenet12,hard-imagenet --out "$out/run" --quiet
