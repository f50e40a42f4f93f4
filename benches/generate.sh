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
# Uses hyperfine when it is installed (apt-get install hyperfine) and no A_BIN is given,
# else times RUNS rounds itself, interleaved, and prints the median, mean and slowest.
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
# Each preparation ends with `sync`: the generator fsyncs what it writes, and on ext4 an
# fsync also writes back the copy's dirty pages, which would be billed to the command.
worker_prep="rm -rf $work/w && cp -a $work/base $work/w && sync"
warm_prep="rm -rf $work/w && cp -a $work/warm $work/w && sync"
worker_cmd="$bin -C $work/w worker maintenance NOTIFY_SHIPMENT > /dev/null"

if [ -z "${A_BIN:-}" ] && command -v hyperfine > /dev/null; then
    hyperfine --warmup 2 --runs "$runs" --prepare "rm -rf $work/a && sync" \
        -n "init + namespace" "bash -c '$bin -C $work init a --name acme > /dev/null && $bin -C $work/a namespace shipping > /dev/null'"
    hyperfine --warmup 2 --runs "$runs" --prepare "$worker_prep" \
        -n "worker maintenance NOTIFY_SHIPMENT" "$bin -C $work/w worker maintenance NOTIFY_SHIPMENT"
    hyperfine --warmup 2 --runs "$runs" --prepare "$warm_prep" \
        -n "worker maintenance NOTIFY_SHIPMENT, cache warm" "$bin -C $work/w worker maintenance NOTIFY_SHIPMENT"
    exit 0
fi

# Rounds, not blocks: each round times every case once for each binary (the binaries'
# order alternating), so a slow spell of this shared VM lands on all of them alike. Each
# case's preparation runs untimed before it. The report is each case's median, mean and
# slowest run.
times=$work/times
mkdir -p "$times"
# time_one KEY PREPARE COMMAND: one run of COMMAND after PREPARE, its wall time appended to
# KEY's list.
time_one() {
    local key=$1 prep=$2 cmd=$3 t0 t1
    bash -c "$prep"
    t0=$(date +%s%N)
    bash -c "$cmd"
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000000 )) >> "$times/$key"
}
labels=(${A_BIN:+before} this)
bins=(${A_BIN:+"$A_BIN"} "$bin")
cases=("init + namespace" "init alone" "worker maintenance NOTIFY_SHIPMENT" "worker maintenance NOTIFY_SHIPMENT, cache warm")
for round in $(seq "$runs"); do
    order=("${!labels[@]}")
    (( round % 2 == 0 && ${#order[@]} == 2 )) && order=(1 0)
    for i in "${order[@]}"; do
        b=${bins[$i]} l=${labels[$i]}
        time_one "$l.0" "rm -rf $work/a && sync" \
            "$b -C $work init a --name acme > /dev/null && $b -C $work/a namespace shipping > /dev/null"
        time_one "$l.1" "rm -rf $work/a && sync" "$b -C $work init a --name acme > /dev/null"
        time_one "$l.2" "$worker_prep" "$b -C $work/w worker maintenance NOTIFY_SHIPMENT > /dev/null"
        time_one "$l.3" "$warm_prep" "$b -C $work/w worker maintenance NOTIFY_SHIPMENT > /dev/null"
    done
done
for l in "${labels[@]}"; do
    for c in "${!cases[@]}"; do
        sort -n "$times/$l.$c" | awk -v name="$l: ${cases[$c]}" '
            { t[NR] = $1; sum += $1 }
            END {
                med = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
                printf "%s: median %d ms, mean %d ms, max %d ms over %d runs\n", name, med, sum / NR, t[NR], NR
            }'
    done
done
