#!/usr/bin/env bash
# The oracle of issue "check on real workspaces": run `scaffold check` on a real Cargo
# workspace with one layer per crate and compare the edges it finds in code with
# `cargo metadata --no-deps --offline` (precision, recall, and every disagreement).
#
#   bash benches/oracle.sh <workspace> [timing rounds]
#   bash benches/oracle.sh <workspace> 0 --ab-tree DIR   (a copy for benches/ab-check.py)
#
# The workspace is copied to a temporary folder first: it is not written to. With a round
# count, also times `rg -c 'use '`, a cold and a warm `scaffold check` on the copy, paired
# per round (needs ripgrep). A workspace whose rust-toolchain file names a toolchain that
# is not installed: set RUSTUP_TOOLCHAIN=stable for `cargo metadata`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ws=${1:?usage: benches/oracle.sh <workspace> [timing rounds]}
cargo build --release --quiet --locked --manifest-path "$here/Cargo.toml" --bin scaffold
bin="${CARGO_TARGET_DIR:-$here/target}/release/scaffold"
exec python3 "$here/benches/oracle.py" "$ws" "$bin" "${2:-0}" "${@:3}"
