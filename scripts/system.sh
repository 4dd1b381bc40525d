#!/usr/bin/env bash
# The Debian packages robustream needs, installed only when one is missing (idempotent, no apt call
# when all are present): a C toolchain and pkg-config for -sys crates, libclang for bindgen (the v4l
# camera and FFmpeg bindings), FFmpeg's development libraries (the video/stream source), the ffmpeg
# CLI (the tests generate their videos with it), `prometheus` for its `promtool`, with which the
# tests check the metrics endpoint's exposition, and `chromium`, in which the tests load the HTML
# report headless. Python for the assets is handled by assets.sh.
set -euo pipefail

PKGS=(build-essential pkg-config libclang-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
  libavfilter-dev libavdevice-dev ffmpeg prometheus chromium)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "system: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "system: need root or sudo to apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has empty package lists; try without an update first (fast when lists are there).
$SUDO apt-get install -y --no-install-recommends "${missing[@]}" ||
  { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; }
# Only promtool is wanted: where systemd started the Prometheus server the package brings along
# (a desktop, not a container), stop it and keep it from starting at boot.
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null &&
  systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
