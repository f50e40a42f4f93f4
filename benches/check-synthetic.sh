#!/usr/bin/env bash
# Benchmark: `scaffold check` on a synthetic workspace of >= 500 crates and >= 20,000 .rs
# files, beside `rg -c 'use '` over the same tree in the same run.
#
#   bash benches/check-synthetic.sh [CRATES] [FILES]
#
# Needs python3, ripgrep and hyperfine (apt-get install ripgrep hyperfine).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
crates=${1:-520}
files=${2:-20800}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin scaffold
bin="$here/target/release/scaffold"
python3 "$here/benches/synth.py" "$work/repo" --crates "$crates" --files "$files"
echo "files in tree: $(find "$work/repo" -type f | wc -l), .rs: $(find "$work/repo" -name '*.rs' | wc -l)"
echo "machine: $(nproc) cores, $(uname -m)"

# Sanity: the synthetic repo is clean, so any finding is a checker bug.
"$bin" -C "$work/repo" check --format json > "$work/out.json" || { echo "unexpected findings:"; head -c 2000 "$work/out.json"; exit 1; }

hyperfine --warmup 2 --runs 10 --export-json "$work/bench.json" \
  -n ripgrep "rg -c 'use ' '$work/repo' > /dev/null" \
  -n "scaffold check" "'$bin' -C '$work/repo' check > /dev/null"

python3 - "$work/bench.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
rg, sc = r["ripgrep"]["median"], r["scaffold check"]["median"]
print(f"ripgrep median        {rg*1000:8.1f} ms")
print(f"scaffold check median {sc*1000:8.1f} ms")
print(f"ratio                 {sc/rg:8.2f}x")
PY
