#!/usr/bin/env bash
# Benchmark: the generator's wall time with a release build —
#   1. `scaffold init` + `scaffold namespace shipping` into a new directory (goal < 1 s);
#   2. `scaffold worker maintenance NOTIFY_SHIPMENT` on that repository (goal < 100 ms),
#      each run on a fresh copy of it: once as init left it (the check cache cold: the
#      generator's plan check reads every file), once after a `scaffold check` (the cache
#      warm, as a repository whose pre-commit hook runs the checker has it).
#
#   bash benches/generate.sh [RUNS]
#   A_BIN=/path/to/older/scaffold bash benches/generate.sh [RUNS]   # both, in one run
#
# Uses hyperfine when it is installed (apt-get install hyperfine), else times RUNS runs
# itself and prints the mean and the slowest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin scaffold
bin="${CARGO_TARGET_DIR:-$here/target}/release/scaffold"
echo "machine: $(nproc) cores, $(uname -m); rustfmt: $(rustfmt --version 2>/dev/null || echo none)"

"$bin" -C "$work" init base --name acme > /dev/null
"$bin" -C "$work/base" namespace shipping > /dev/null
cp -a "$work/base" "$work/warm"
"$bin" -C "$work/warm" check > /dev/null

init_cmd="rm -rf $work/a && $bin -C $work init a --name acme > /dev/null && $bin -C $work/a namespace shipping > /dev/null"
worker_prep="rm -rf $work/w && cp -a $work/base $work/w"
warm_prep="rm -rf $work/w && cp -a $work/warm $work/w"
worker_cmd="$bin -C $work/w worker maintenance NOTIFY_SHIPMENT > /dev/null"

if [ -z "${A_BIN:-}" ] && command -v hyperfine > /dev/null; then
    hyperfine --warmup 2 --runs "$runs" --prepare "rm -rf $work/a" \
        -n "init + namespace" "bash -c '$bin -C $work init a --name acme > /dev/null && $bin -C $work/a namespace shipping > /dev/null'"
    hyperfine --warmup 2 --runs "$runs" --prepare "$worker_prep" \
        -n "worker maintenance NOTIFY_SHIPMENT" "$bin -C $work/w worker maintenance NOTIFY_SHIPMENT"
    hyperfine --warmup 2 --runs "$runs" --prepare "$warm_prep" \
        -n "worker maintenance NOTIFY_SHIPMENT, cache warm" "$bin -C $work/w worker maintenance NOTIFY_SHIPMENT"
    exit 0
fi

# time_runs NAME PREPARE COMMAND: mean and max wall time of $runs runs, PREPARE untimed.
time_runs() {
    local name=$1 prep=$2 cmd=$3 total=0 max=0 t0 t1 ms
    for _ in $(seq "$runs"); do
        bash -c "$prep"
        t0=$(date +%s%N)
        bash -c "$cmd"
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        total=$(( total + ms ))
        (( ms > max )) && max=$ms
    done
    echo "$name: mean $(( total / runs )) ms, max $max ms over $runs runs"
}
for label_bin in ${A_BIN:+"before=$A_BIN"} "this=$bin"; do
    label=${label_bin%%=*}
    b=${label_bin#*=}
    time_runs "$label: init + namespace" "true" \
        "rm -rf $work/a && $b -C $work init a --name acme > /dev/null && $b -C $work/a namespace shipping > /dev/null"
    time_runs "$label: init alone" "rm -rf $work/a" "$b -C $work init a --name acme > /dev/null"
    time_runs "$label: worker maintenance NOTIFY_SHIPMENT" "$worker_prep" \
        "$b -C $work/w worker maintenance NOTIFY_SHIPMENT > /dev/null"
    time_runs "$label: worker maintenance NOTIFY_SHIPMENT, cache warm" "$warm_prep" \
        "$b -C $work/w worker maintenance NOTIFY_SHIPMENT > /dev/null"
done
