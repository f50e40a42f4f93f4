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

cache="$work/repo/.scaffold"
hyperfine --warmup 2 --runs 10 --export-json "$work/bench.json" \
  --prepare "true" --prepare "rm -rf '$cache'" --prepare "rm -rf '$cache'" --prepare "true" \
  -n ripgrep "rg -c 'use ' '$work/repo' > /dev/null" \
  -n "cold" "'$bin' -C '$work/repo' check > /dev/null" \
  -n "cold without work-queue rules" "'$bin' -C '$work/repo' check $without > /dev/null" \
  -n "warm" "'$bin' -C '$work/repo' check > /dev/null"

# Cold beside ripgrep again, interleaved: one ripgrep run, one cold check and one cold
# check without the work-queue rules per round, so a busy spell on the host lands on all
# three (hyperfine runs each command's ten runs back to back, and a spell that hits one
# block moves the ratio by a third on this kind of VM). The ratio is taken per round.
python3 - "$bin" "$work/repo" $without > "$work/paired.txt" <<'PY'
import shutil, statistics, subprocess, sys, time
binary, repo, without = sys.argv[1], sys.argv[2], sys.argv[3:]
cache = f"{repo}/.scaffold"
def run(argv):
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000
def cold(extra):
    shutil.rmtree(cache, ignore_errors=True)
    return run([binary, "-C", repo, "check", *extra])
rows = [(run(["rg", "-c", "use ", repo]), cold([]), cold(without)) for _ in range(20)]
med = lambda xs: statistics.median(xs)
rg, c, w = (med([r[i] for r in rows]) for i in range(3))
ratio = med([r[1] / r[0] for r in rows])
onoff = med([r[1] / r[2] for r in rows])
print(f"paired, 20 rounds: ripgrep {rg:.1f} ms, cold {c:.1f} ms, without work-queue rules {w:.1f} ms")
print(f"check, cold, paired per round  {ratio:5.2f}x ripgrep (median of the rounds' ratios)")
print(f"  work-queue rules on/off, paired {onoff:5.2f}x")
PY

# Warm again, on the same tree with every member listed in [workspace] members (as
# `cargo new` writes them) instead of five globs.
python3 "$here/benches/synth.py" "$work/literal" --crates "$crates" --files "$files" --literal-members
"$bin" -C "$work/literal" check > /dev/null
hyperfine --warmup 2 --runs 10 --export-json "$work/literal.json" \
  -n "warm, literal members" "'$bin' -C '$work/literal' check > /dev/null"

# A legacy repository adopting the gate: the same literal tree with services and apps
# forbidden the layers they import (~25,000 findings), all accepted in agent/baseline.yml.
sed -i -e 's|services: {paths: \["services/\*\*"\], may_import: \[om, packages, runtime\]}|services: {paths: ["services/**"], may_import: [runtime], must_not_import: [om, packages]}|' \
  -e 's|apps:     {paths: \["apps/\*\*"\], may_import: \[services, packages, om\]}|apps:     {paths: ["apps/**"], may_import: [], must_not_import: [services, packages, om]}|' \
  "$work/literal/agent/codemap.yml"
CI=false "$bin" -C "$work/literal" check --write-baseline
"$bin" -C "$work/literal" check > /dev/null
hyperfine --warmup 2 --runs 10 --export-json "$work/legacy.json" \
  -n "warm, legacy baseline" "'$bin' -C '$work/literal' check > /dev/null"

# --staged with one staged file, warm, in a git checkout of the same tree.
git -C "$work/repo" init -q
git -C "$work/repo" add -A
# No automatic gc: it would still be packing in the background when the trap removes the tree.
git -C "$work/repo" -c gc.auto=0 -c user.name=bench -c user.email=bench@invalid commit -q -m synthetic
firsts=("$work"/repo/workers/*/src/module_0.rs)  # no `ls | head`: SIGPIPE under pipefail
one=${firsts[0]#"$work/repo/"}
echo "// touched" >> "$work/repo/$one"
git -C "$work/repo" add "$one"
"$bin" -C "$work/repo" check > /dev/null
hyperfine --warmup 2 --runs 10 --export-json "$work/staged.json" \
  -n "staged" "'$bin' -C '$work/repo' check --staged > /dev/null"

python3 - "$work/bench.json" "$work/staged.json" "$work/literal.json" "$work/legacy.json" <<'PY'
import json, sys
r = {x["command"]: x for f in sys.argv[1:] for x in json.load(open(f))["results"]}
m = lambda k: r[k]["median"] * 1000
rg = m("ripgrep")
print(f"ripgrep                        {rg:8.1f} ms")
print(f"check, cold (no cache)         {m('cold'):8.1f} ms   {m('cold')/rg:5.2f}x ripgrep")
print(f"  without work-queue rules     {m('cold without work-queue rules'):8.1f} ms   rules on/off {m('cold')/m('cold without work-queue rules'):5.2f}x")
print(f"check, warm (cache)            {m('warm'):8.1f} ms   {m('warm')/rg:5.2f}x ripgrep")
print(f"  members listed one by one    {m('warm, literal members'):8.1f} ms   {m('warm, literal members')/rg:5.2f}x ripgrep")
print(f"  legacy, ~25,000 baselined    {m('warm, legacy baseline'):8.1f} ms   {m('warm, legacy baseline')/rg:5.2f}x ripgrep")
print(f"check --staged, 1 file, warm   {m('staged'):8.1f} ms")
PY
cat "$work/paired.txt"
