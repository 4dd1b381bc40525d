#!/usr/bin/env bash
# robustream's whole test suite, the README's second command (and what CI runs): installs missing
# Debian packages and the cached assets the end-to-end tests need (no-ops when present), checks
# formatting, lints, audits the dependencies, runs each benchmark once as a smoke test beside every
# unit, integration and doc test against the real model and ONNX Runtime, builds the API docs and
# at the declared minimum Rust version. Beside these x86-64 steps, in parallel, runs the 64-bit Arm
# (Jetson) half, scripts/test-aarch64.sh: its lints, and the library's tests and the demo under
# qemu-user (docs/jetson-ci.md). Its lines are prefixed `[aarch64] `.
#
#   bash scripts/test.sh           everything, as CI runs it
#   bash scripts/test.sh --quick   the edit-test loop: formatting, lints and the native unit and
#                                  integration tests (no benches, docs, audit, minimum version or Arm)
#
# Why two halves at once: on a 2-core machine most steps keep one core busy (the last, largest
# crate's compile; the longest emulated tests), so the other half uses the other core
# (docs/jetson-ci.md#what-it-costs). The Arm half starts at once, at the lowest priority (nice 19),
# so its builds take only what the x86-64 steps leave; it runs nothing under emulation before the
# x86-64 tests have passed (they measure frame rates and drops in real time), and the x86-64 steps
# after the tests run at its priority, sharing the cores with it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

QUICK=false
case "${1:-}" in
  "") ;;
  --quick) QUICK=true ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
# Seconds per step, printed at the end: where the suite's time goes.
STEPS=()
step() {
  local name=$1 t=$SECONDS
  shift
  "$@"
  STEPS+=("$name $((SECONDS - t)) s")
}
SYNC=
A64_PID=
finish() {
  local rc=$?
  # The Arm half ends with this script: its process group is stopped, and the folder it waits on
  # goes.
  if [ -n "$A64_PID" ] && kill -0 "$A64_PID" 2>/dev/null; then
    kill -- "-$A64_PID" 2>/dev/null || true
    wait "$A64_PID" 2>/dev/null || true
  fi
  [ -z "$SYNC" ] || rm -rf "$SYNC"
  [ ${#STEPS[@]} -eq 0 ] || printf 'test.sh: %s\n' "${STEPS[@]}" >&2
  printf 'test.sh: %s in %d min %d s\n' "$([ "$rc" -eq 0 ] && echo OK || echo FAILED)" \
    $((SECONDS / 60)) $((SECONDS % 60)) >&2
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

step system bash scripts/system.sh
if $QUICK; then
  step assets bash scripts/assets.sh
  step fmt cargo fmt --all -- --check
  step clippy cargo clippy --release --locked --all-targets -- -D warnings
  step tests cargo test --release --locked --lib --bins --tests
  exit 0
fi

# Every crate either half builds, downloaded once, before the two halves' cargo runs would wait on
# each other's lock of the package cache.
step fetch cargo fetch --locked
# The marks the Arm half waits on (below). ($SYNC is under the target folder: the x86-64 binary is
# run from there, and /tmp may be noexec.)
mkdir -p "${CARGO_TARGET_DIR:-target}"
SYNC=$(cd "${CARGO_TARGET_DIR:-target}" && mktemp -d "$(pwd)/test-sync.XXXXXX")

step assets bash scripts/assets.sh
touch "$SYNC/assets"
# The Arm half, in a process group of its own (setsid) so that it can be stopped whole.
ROBUSTREAM_TEST_SYNC=$SYNC setsid nice -n 19 bash scripts/test-aarch64.sh \
  > >(sed -u 's/^/[aarch64] /') 2>&1 &
A64_PID=$!
step fmt cargo fmt --all -- --check
# The dependency audit: advisories (RustSec, a vendored snapshot, offline), licences, bans and
# sources of every crate in Cargo.lock (scripts/audit.sh, deny.toml).
step audit bash scripts/audit.sh
step clippy cargo clippy --release --locked --all-targets -- -D warnings
# Once over every target (the library, the binary, the integration tests and each benchmark as a
# smoke test), so the library's unit tests run once; doc tests apart (`--all-targets` leaves them out).
step tests cargo test --release --locked --all-targets
# The binary the integration tests ran is the one the Arm demo's records are held to; its arrival
# also tells the Arm half that the tests are over and its emulated runs may start.
cp "${CARGO_TARGET_DIR:-target}/release/robustream" "$SYNC/.robustream-x86_64"
mv "$SYNC/.robustream-x86_64" "$SYNC/robustream-x86_64"
# From here on at the Arm half's priority: its emulated tests are the suite's longest step.
renice -n 19 -p $$ >/dev/null
step doctests cargo test --release --locked --doc
# The code's docs build without a broken link or a malformed comment. They are for the people who
# change the code (the crate has no library users), so private items are documented and a doc
# comment may link to one (rustdoc's `private_intra_doc_links` then makes the link all the same).
# `--release` so that the dependencies' metadata is clippy's, not built again for the dev profile.
step docs env RUSTDOCFLAGS="-D warnings -A rustdoc::private_intra_doc_links" \
  cargo doc --release --no-deps --locked --document-private-items
# The declared minimum Rust version (`rust-version` in Cargo.toml) builds every target: a type check
# with that toolchain, which rustup installs once (scripts/system.sh adds the Arm target the same way).
MSRV=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
msrv_check() {
  if ! rustup run "$MSRV" rustc --version >/dev/null 2>&1; then
    echo "test.sh: installing Rust $MSRV (the declared rust-version) with rustup" >&2
    rustup toolchain install "$MSRV" --profile minimal
  fi
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" cargo "+$MSRV" check --locked --all-targets
}
step msrv msrv_check

# The Arm half's result (its own step times are in its lines above).
t=$SECONDS
a64_rc=0
wait "$A64_PID" || a64_rc=$?
A64_PID=
STEPS+=("aarch64-wait $((SECONDS - t)) s")
[ "$a64_rc" -eq 0 ] || { echo "test.sh: the aarch64 half failed (its lines are prefixed [aarch64])" >&2; exit "$a64_rc"; }
