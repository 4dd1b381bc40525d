#!/usr/bin/env bash
# Runs an aarch64 Linux program under qemu-user on an x86-64 machine:
#   bash scripts/qemu-aarch64.sh PROGRAM [ARGS...]
# usable as cargo's runner for aarch64-unknown-linux-gnu. It gives qemu a -L prefix of its own
# (docs/jetson-ort.md#why-it-crashed-under-qemu-user, #one-glibc-in-the-emulated-process):
# - an Arm /proc/cpuinfo for the emulated core: ONNX Runtime's cpuinfo crashes inside dlopen on
#   the host's x86 one, which qemu-user 7.2 passes through;
# - the cross toolchain's loader and libraries also under lib/aarch64-linux-gnu and
#   usr/lib/aarch64-linux-gnu, and an empty ld.so.cache, so that a host with libc6:arm64 installed
#   (FFmpeg's arm64 packages) does not mix its libc.so.6 with the cross loader (a hang in the first
#   pthread_create).
# QEMU_CPU defaults to neoverse-n1 (Armv8.2 with dot product, no SVE, like a Jetson Orin's
# Cortex-A78AE), the core the cpuinfo file describes.
set -euo pipefail
CROSS=/usr/aarch64-linux-gnu/lib
SYSROOT=${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}/aarch64/sysroot
export QEMU_CPU=${QEMU_CPU:-neoverse-n1}

if [ ! -f "$CROSS/ld-linux-aarch64.so.1" ]; then
  echo "qemu-aarch64.sh: $CROSS/ld-linux-aarch64.so.1 not found; install gcc-aarch64-linux-gnu" >&2
  exit 127
fi
# Made once; each part is checked so that a partial prefix is completed, never replaced under a
# running program.
mkdir -p "$SYSROOT"/{lib,usr/lib,etc,proc}
[ -L "$SYSROOT/lib/aarch64-linux-gnu" ] || ln -s "$CROSS" "$SYSROOT/lib/aarch64-linux-gnu"
[ -L "$SYSROOT/usr/lib/aarch64-linux-gnu" ] || ln -s "$CROSS" "$SYSROOT/usr/lib/aarch64-linux-gnu"
[ -L "$SYSROOT/lib/ld-linux-aarch64.so.1" ] \
  || ln -s "$CROSS/ld-linux-aarch64.so.1" "$SYSROOT/lib/ld-linux-aarch64.so.1"
[ -f "$SYSROOT/etc/ld.so.cache" ] || : > "$SYSROOT/etc/ld.so.cache"
# What Linux shows for a Neoverse N1 (MIDR 0x414fd0c1, as qemu's model reports), one entry per
# host processor; rewritten atomically when the processor count changed.
CPUS=$(getconf _NPROCESSORS_ONLN)
if [ "$(grep -c '^processor' "$SYSROOT/proc/cpuinfo" 2>/dev/null)" != "$CPUS" ]; then
  TMP=$(mktemp "$SYSROOT/proc/.cpuinfo.XXXXXX")
  for ((i = 0; i < CPUS; i++)); do
    printf 'processor\t: %d\nBogoMIPS\t: 50.00\n' "$i"
    printf 'Features\t: fp asimd aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n'
    printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n'
  done > "$TMP"
  chmod 644 "$TMP"
  mv -f "$TMP" "$SYSROOT/proc/cpuinfo"
fi
exec qemu-aarch64 -L "$SYSROOT" "$@"
