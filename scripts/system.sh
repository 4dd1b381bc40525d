#!/usr/bin/env bash
# The Debian packages robustream needs, installed only when one is missing (idempotent, no apt call
# when all are present): a C toolchain and pkg-config for -sys crates, libclang for bindgen (the v4l
# camera and FFmpeg bindings), FFmpeg's development libraries (the video/stream source), the ffmpeg
# CLI (the tests generate their videos with it), `prometheus` for its `promtool`, with which the
# tests check the metrics endpoint's exposition, and `chromium`, in which the tests load the HTML
# report headless. GStreamer's development libraries with the base and good plugins (the `gst:`
# pipeline source; `gst-launch-1.0` from the tools) and Aravis's (GenICam cameras; its tools bring
# `arv-fake-gv-camera-0.8`, the GigE Vision camera simulator the tests run on loopback, and
# `arv-tool-0.8`; libaravis-0.8-0 also carries GStreamer's `aravissrc`; aravis-0.8.pc names
# libusb-1.0, whose -dev package Debian does not pull in). Python for the assets is handled by
# assets.sh.
#
# For 64-bit Arm (Jetson boards), which scripts/test.sh cross-builds and tests under emulation
# (docs/jetson-ci.md#what-ci-checks): Debian's aarch64 cross compiler (cargo's linker for that
# target, .cargo/config.toml) with the aarch64 C library and kernel headers it only recommends
# (named here, since apt runs without recommends; bindgen reads the V4L2 headers for `camera`), the
# aarch64 C++ runtime, qemu-user (the runner of the aarch64 tests) and the Rust standard library
# for `aarch64-unknown-linux-gnu`. That last one comes from rustup (`rustup target add`, done here
# when it is missing); a toolchain without rustup cannot add a target, so this script then stops
# with the fix rather than let the suite skip the Arm build without anyone noticing.
set -euo pipefail
# rustup picks the toolchain by directory (rust-toolchain.toml, `rustup override`): add the target
# to the one this repository builds with.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PKGS=(build-essential pkg-config libclang-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
  libavfilter-dev libavdevice-dev ffmpeg prometheus chromium
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base
  gstreamer1.0-plugins-good gstreamer1.0-tools
  libaravis-dev libusb-1.0-0-dev aravis-tools aravis-tools-cli
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross linux-libc-dev-arm64-cross libstdc++6-arm64-cross
  qemu-user)
AARCH64=aarch64-unknown-linux-gnu

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "system: installing ${missing[*]}" >&2
  SUDO=
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null ||
      { echo "system: need root or sudo to apt-get install ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine has empty package lists; try without an update first (fast when lists are
  # there).
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}" ||
    { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; }
  # Only promtool is wanted: where systemd started the Prometheus server the package brings along
  # (a desktop, not a container), stop it and keep it from starting at boot.
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null &&
    systemctl is-active --quiet prometheus 2>/dev/null; then
    $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi

# The aarch64 standard library is there when its libstd is in the toolchain's library folder for
# that target (how rustup and a hand-built toolchain alike install it).
has_aarch64_std() {
  local dir
  dir=$(rustc --print target-libdir --target "$AARCH64" 2>/dev/null) || return 1
  compgen -G "$dir/libstd-*.rlib" >/dev/null
}
if ! has_aarch64_std; then
  if command -v rustup >/dev/null; then
    echo "system: adding the Rust target $AARCH64 (rustup target add)" >&2
    rustup target add "$AARCH64"
  else
    echo "system: the Rust standard library for $AARCH64 is missing and there is no rustup to" \
      "add it (scripts/test.sh cross-builds and tests the Jetson build); install Rust with rustup" \
      "(https://rustup.rs) and run \`rustup target add $AARCH64\`" >&2
    exit 1
  fi
fi
