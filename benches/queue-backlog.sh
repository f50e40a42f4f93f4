#!/usr/bin/env bash
# How the PostgreSQL drain rate grows with the backlog: `scaffold queue bench` (fencing on,
# one process, concurrency 10) on 20,000, 100,000 and 1,000,000 queued no-op items, each
# size in a fresh schema, in one run of this script so the sizes are compared on the same
# host state. The sizes alternate per round (20k, 100k, 1M, then again), so a slow spell of
# this VM lands on every size alike; the report is each size's median.
#
#   benches/queue-backlog.sh                     # 3 rounds
#   ROUNDS=1 SIZES="20000 1000000" benches/queue-backlog.sh
#
# Environment: PGURL (default postgres://postgres@127.0.0.1:5432/test), ROUNDS (3), SIZES.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/test}
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-"20000 100000 1000000"}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" --bin scaffold >&2
BIN=$TARGET/release/scaffold
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

for round in $(seq 1 "$ROUNDS"); do
  for n in $SIZES; do
    schema="scaffold_backlog_${n}_$$_${round}"
    sep='?'; case "$PGURL" in *\?*) sep='&';; esac
    url="${PGURL}${sep}schema=${schema}"
    line=$("$BIN" queue bench --jobs "$n" --concurrency 10 --database "$url" --format json)
    psql "$PGURL" -q -c "DROP SCHEMA IF EXISTS \"$schema\" CASCADE" >/dev/null
    echo "$line" | tee -a "$OUT"
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["jobs"], []).append(r)
base = None
print()
print("| backlog | drain jobs/s, median (runs) | enqueue ms, median | vs 20,000 |")
print("|---|---|---|---|")
for n in sorted(runs):
    rates = [r["jobs_per_sec"] for r in runs[n]]
    med = statistics.median(rates)
    enq = statistics.median(r["enqueue_ms"] for r in runs[n])
    base = base or med
    each = " · ".join(f"{x:,}" for x in rates)
    print(f"| {n:,} | **{med:,.0f}** ({each}) | {enq:,.0f} | {med / base:.0%} |")
PY
