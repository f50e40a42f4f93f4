#!/usr/bin/env bash
# Benchmark: `scaffold check` on a synthetic workspace of >= 500 crates and >= 20,000 .rs
# files, beside `rg -c 'use '` over the same tree in the same run, and beside
# `scaffold check` without the work-queue rules (kinds, lanes, managers, ...) of issue 7.
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
bin="${CARGO_TARGET_DIR:-$here/target}/release/scaffold"
python3 "$here/benches/synth.py" "$work/repo" --crates "$crates" --files "$files"
echo "files in tree: $(find "$work/repo" -type f | wc -l), .rs: $(find "$work/repo" -name '*.rs' | wc -l)"
echo "machine: $(nproc) cores, $(uname -m)"

# Sanity: the synthetic repo is clean, so any finding is a checker bug.
"$bin" -C "$work/repo" check --format json > "$work/out.json" || { echo "unexpected findings:"; head -c 2000 "$work/out.json"; exit 1; }

# The same check with only the rules that are not about the work queue.
wq="kind-unhandled kind-unregistered-handler kind-requires-mismatch kind-untested kind-duplicate
lane-undeployed manager-enqueues handler-builds-context namespace-bare settings-undocumented
worker-shell-exec runtime-drift"
without=""
for id in $("$bin" rules | awk '$2 == "error" || $2 == "warning" {print $1}'); do
  case " $(echo $wq) " in *" $id "*) ;; *) without="$without --rule $id" ;; esac
done

hyperfine --warmup 2 --runs 10 --export-json "$work/bench.json" \
  -n ripgrep "rg -c 'use ' '$work/repo' > /dev/null" \
  -n "scaffold check" "'$bin' -C '$work/repo' check > /dev/null" \
  -n "scaffold check without work-queue rules" "'$bin' -C '$work/repo' check $without > /dev/null"

python3 - "$work/bench.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
rg, sc = r["ripgrep"]["median"], r["scaffold check"]["median"]
wo = r["scaffold check without work-queue rules"]["median"]
print(f"ripgrep median                 {rg*1000:8.1f} ms")
print(f"scaffold check median          {sc*1000:8.1f} ms")
print(f"  without work-queue rules     {wo*1000:8.1f} ms")
print(f"ratio to ripgrep               {sc/rg:8.2f}x")
print(f"work-queue rules on / off      {sc/wo:8.2f}x")
PY
