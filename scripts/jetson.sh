#!/usr/bin/env bash
# The Jetson build (docs/jetson.md#building): cross-builds the release binary for 64-bit Arm
# (aarch64-unknown-linux-gnu) on a Debian x86-64 machine, checks that it starts under qemu-user and
# makes the x86 build's pixels, and packs a tarball from which a Jetson runs the demo after
# unpacking (docs/jetson.md#the-package).
#
#   bash scripts/jetson.sh
#
# Features camera + gpu; not video (FFmpeg): a binary linked against Debian's FFmpeg 5.1 would not
# start on any JetPack release, and installing arm64 FFmpeg through multiarch brings libc6:arm64,
# which breaks the qemu runner (docs/jetson.md#features).
#
# Installs what is missing and only that (no apt call when everything is there): the Rust target
# (rustup), Debian's aarch64 cross compiler, C library and kernel headers (bindgen reads the V4L2
# headers for the camera source), qemu-user and `file`. The x86 assets (model, photos, frost
# textures) come from scripts/assets.sh; ONNX Runtime for aarch64 is the CPU build from PyPI's
# onnxruntime wheel, cached in ${ROBUSTREAM_CACHE:-~/.cache/robustream}/jetson/. Nothing else is
# downloaded. Builds in ${CARGO_TARGET_DIR:-target/aarch64}, away from the x86 build's cache.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
SECONDS=0
CLEANUP=()
trap 'rm -rf "${CLEANUP[@]}"' EXIT
log() { echo "jetson: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

for arg in "$@"; do
  case $arg in
    -h | --help)
      sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$arg' (known: --help)" ;;
  esac
done

TARGET=aarch64-unknown-linux-gnu
TRIPLE=aarch64-linux-gnu
ORT_VERSION=1.31.1
ORT_WHEEL_PLATFORM=manylinux_2_28_aarch64
FEATURES=camera,gpu
QEMU=(qemu-aarch64 -L "/usr/$TRIPLE")
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/aarch64}
CACHE=${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}

# --- what the build needs ------------------------------------------------------------------------
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_install() {
  command -v "${SUDO:-true}" >/dev/null || die "need root or sudo to apt-get install $*"
  log "installing $*"
  local apt=($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
  # A fresh machine has empty package lists; try without an update first (fast when lists are there).
  "${apt[@]}" install -y --no-install-recommends "$@" ||
    { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "$@"; }
}

HOST_PKGS=(gcc-$TRIPLE libc6-dev-arm64-cross libstdc++6-arm64-cross linux-libc-dev-arm64-cross
  qemu-user libclang-dev file)
missing=()
for p in "${HOST_PKGS[@]}"; do installed "$p" || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

# The qemu runner takes the C library from the cross packages (/usr/aarch64-linux-gnu); a
# libc6:arm64 from multiarch would be loaded beside that loader instead, and aarch64 programs then
# hang in their first thread start.
if installed libc6:arm64; then
  die "libc6:arm64 is installed (Debian multiarch): under 'qemu-aarch64 -L /usr/aarch64-linux-gnu' its libc.so.6 is loaded next to the cross package's older loader and aarch64 programs hang; remove the :arm64 packages (docs/jetson.md#features)"
fi

command -v rustup >/dev/null ||
  die "rustup not found: the cross build needs the Rust target $TARGET (install Rust with rustup, https://rustup.rs, then re-run)"
rustup target list --installed | grep -qx "$TARGET" || {
  log "adding the Rust target $TARGET"
  rustup target add "$TARGET"
}

# The demo model, photos and frost textures the package carries (idempotent: downloads nothing
# once they are cached).
bash scripts/assets.sh

# --- build ---------------------------------------------------------------------------------------
# The linker comes from .cargo/config.toml. bindgen (the V4L2 bindings) passes cargo's target to
# clang, which then reads the aarch64 headers of the cross packages.
log "building robustream for $TARGET with features $FEATURES in $CARGO_TARGET_DIR"
build_start=$SECONDS
cargo build --release --locked --target "$TARGET" --no-default-features --features "$FEATURES"
log "build took $((SECONDS - build_start)) s"
BIN=$CARGO_TARGET_DIR/$TARGET/release/robustream

# --- checks under emulation ----------------------------------------------------------------------
kind=$(file -b "$BIN")
[[ $kind == *"ARM aarch64"* ]] || die "$BIN is not an aarch64 executable: $kind"
log "file: $kind"
# The newest glibc symbol version the binary needs: a board's C library must be at least as new
# (JetPack 6 is Ubuntu 22.04, glibc 2.35).
GLIBC_NEED=$("$TRIPLE-objdump" -T "$BIN" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
log "needs $GLIBC_NEED or newer"
VERSION=$("${QEMU[@]}" "$BIN" --version) || die "$BIN does not start under ${QEMU[*]}"
log "under qemu: $VERSION"
n=$("${QEMU[@]}" "$BIN" scenarios | grep -c .) || die "'robustream scenarios' failed under qemu"
log "under qemu: 'robustream scenarios' lists $n lines"

CHECK_DIR=$CARGO_TARGET_DIR/jetson/check
rm -rf "$CHECK_DIR"
mkdir -p "$CHECK_DIR"
PHOTO=assets/photos/chelsea.png
"${QEMU[@]}" "$BIN" apply --scenario corruption/fog/3 "$PHOTO" "$CHECK_DIR/fog3-aarch64.png" >/dev/null ||
  die "'robustream apply --scenario corruption/fog/3' failed under qemu"
X86=${ROBUSTREAM_X86:-target/release/robustream}
if [ -x "$X86" ]; then
  "$X86" apply --scenario corruption/fog/3 "$PHOTO" "$CHECK_DIR/fog3-x86.png" >/dev/null
  cmp -s "$CHECK_DIR/fog3-aarch64.png" "$CHECK_DIR/fog3-x86.png" ||
    die "corruption/fog/3 on $PHOTO differs between aarch64 ($CHECK_DIR/fog3-aarch64.png) and x86 ($X86)"
  log "under qemu: 'apply --scenario corruption/fog/3' wrote the x86 build's bytes"
else
  log "no x86 binary at $X86 (set ROBUSTREAM_X86, or build it with scripts/setup.sh): the aarch64 PNG is not compared"
fi

# --- ONNX Runtime for aarch64 --------------------------------------------------------------------
# The CPU build from PyPI's wheel: its manylinux_2_28 tag means glibc 2.28 or newer.
ORT_CACHE=$CACHE/jetson
ORT_LIB=$ORT_CACHE/libonnxruntime.so.$ORT_VERSION
if [ ! -f "$ORT_LIB" ]; then
  mkdir -p "$ORT_CACHE"
  TMP=$(mktemp -d "$ORT_CACHE/.tmp.XXXXXX")
  CLEANUP+=("$TMP")
  log "downloading onnxruntime==$ORT_VERSION ($ORT_WHEEL_PLATFORM) from PyPI"
  "$CACHE/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: --platform "$ORT_WHEEL_PLATFORM" --python-version 3.12 \
    --implementation cp --abi cp312 -d "$TMP" "onnxruntime==$ORT_VERSION" >&2
  # The library and the licences beside it, each renamed into place whole.
  "$CACHE/venv/bin/python" - "$TMP"/*.whl "$ORT_CACHE" "$ORT_VERSION" <<'EOF'
import os, sys, zipfile
whl, dest, version = sys.argv[1:]
members = {f"onnxruntime/capi/libonnxruntime.so.{version}": f"libonnxruntime.so.{version}",
           "onnxruntime/LICENSE": "LICENSE", "onnxruntime/ThirdPartyNotices.txt": "ThirdPartyNotices.txt"}
with zipfile.ZipFile(whl) as z:
    # The library last: its presence says the cache is complete.
    for member, name in sorted(members.items(), key=lambda m: m[1].startswith("lib")):
        tmp = os.path.join(dest, f".{name}.part")
        with z.open(member) as src, open(tmp, "wb") as out:
            out.write(src.read())
        os.chmod(tmp, 0o755 if name.startswith("lib") else 0o644)
        os.replace(tmp, os.path.join(dest, name))
EOF
fi
kind=$(file -b "$ORT_LIB")
[[ $kind == *"ARM aarch64"* ]] || die "$ORT_LIB is not an aarch64 library: $kind"

# --- the package ---------------------------------------------------------------------------------
NAME=robustream-${VERSION#robustream }-$TARGET
STAGE=$CARGO_TARGET_DIR/jetson/$NAME
TARBALL=$CARGO_TARGET_DIR/jetson/$NAME.tar.gz
rm -rf "$STAGE"
mkdir -p "$STAGE"/assets/{lib,models,photos,frost} "$STAGE"/configs "$STAGE"/licenses/onnxruntime
# Without the debug line tables (72 MB → 11 MB); the symbols stay, so a backtrace still names the
# functions.
"$TRIPLE-strip" --strip-debug -o "$STAGE/robustream" "$BIN"
cp "$ORT_LIB" "$STAGE/assets/lib/"
ln -s "libonnxruntime.so.$ORT_VERSION" "$STAGE/assets/lib/libonnxruntime.so"
cp "$ORT_CACHE"/{LICENSE,ThirdPartyNotices.txt} "$STAGE/licenses/onnxruntime/"
cp assets/models/{efficientnet_lite0.onnx,efficientnet_lite0.toml,imagenet_classes.txt} "$STAGE/assets/models/"
cp assets/photos/* "$STAGE/assets/photos/"
cp assets/frost/* "$STAGE/assets/frost/"
# The demo config as the repository has it: its paths are relative to the file (../assets/...),
# and run from the package folder the binary finds the frost textures in ./assets.
cp configs/demo.toml "$STAGE/configs/"
cp docs/jetson.md "$STAGE/JETSON.md"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT (with local changes)"
cat >"$STAGE/BUILD.txt" <<EOF
$VERSION for $TARGET, commit $COMMIT
cargo features: $FEATURES (docs/jetson.md#features)
C library: $GLIBC_NEED or newer; debug line tables stripped
ONNX Runtime: $ORT_VERSION, CPU build (PyPI onnxruntime, $ORT_WHEEL_PLATFORM) in assets/lib
$(rustc --version)

Run the demo from this folder:  ./robustream run --config configs/demo.toml
EOF
# Reproducible: sorted names, no owners, every mtime the commit's.
MTIME=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$MTIME" \
  -C "$(dirname "$STAGE")" -czf "$TARBALL" "$NAME"
# The package as a board sees it: unpacked elsewhere, run from its folder, where frost finds its
# textures in ./assets (the x86 build, run from the checkout, reads the same textures).
UNPACK=$(mktemp -d)
CLEANUP+=("$UNPACK")
tar xzf "$TARBALL" -C "$UNPACK"
(cd "$UNPACK/$NAME" && "${QEMU[@]}" ./robustream apply --scenario corruption/frost/3 \
  assets/photos/chelsea.png "$UNPACK/frost3-aarch64.png" >/dev/null) ||
  die "the unpacked package's binary failed 'apply --scenario corruption/frost/3' under qemu"
if [ -x "$X86" ]; then
  "$X86" apply --scenario corruption/frost/3 "$PHOTO" "$UNPACK/frost3-x86.png" >/dev/null
  cmp -s "$UNPACK/frost3-aarch64.png" "$UNPACK/frost3-x86.png" ||
    die "corruption/frost/3 from the unpacked package differs from the x86 build's"
  log "unpacked package under qemu: 'apply --scenario corruption/frost/3' wrote the x86 build's bytes"
else
  log "unpacked package under qemu: 'apply --scenario corruption/frost/3' ran (not compared: no x86 binary)"
fi
log "package: $TARBALL ($(du -h "$TARBALL" | cut -f1)), features $FEATURES"
log "done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
echo "$REPO/$TARBALL"
