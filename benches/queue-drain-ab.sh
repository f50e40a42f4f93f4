#!/usr/bin/env bash
# The PostgreSQL drain, before and after a change, paired in one run: `scaffold queue bench
# --jobs 20000 --concurrency 10` by two binaries, each run in a fresh schema (dropped after),
# alternating which binary goes first each round so a slow spell of this VM lands on both.
# The report is each binary's median and every run's figure, the ratio of the medians, and
# the median of the rounds' own ratios (each round's two runs are back to back).
#
#   A_BIN=/path/to/old/scaffold benches/queue-drain-ab.sh      # 5 rounds
#   ROUNDS=7 JOBS=100000 A_BIN=… benches/queue-drain-ab.sh
#
# Environment: A_BIN (the "before" binary; required), B_BIN (default: this tree's release
# build), PGURL (default postgres://postgres@127.0.0.1:5432/test), ROUNDS (5), JOBS (20000),
# CONCURRENCY (10), RUNS (1: each invocation is `bench --runs RUNS`, every run on a fresh
# queue of its own, and its figure is that invocation's median).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/test}
ROUNDS=${ROUNDS:-5}
JOBS=${JOBS:-20000}
CONCURRENCY=${CONCURRENCY:-10}
RUNS=${RUNS:-1}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
: "${A_BIN:?set A_BIN to the binary to compare against}"
if [ -z "${B_BIN:-}" ]; then
  cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" --bin scaffold >&2
  B_BIN=$TARGET/release/scaffold
fi
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

run() { # label binary round
  local schema="scaffold_drain_ab_${1,,}_$$_$3"
  local sep='?'; case "$PGURL" in *\?*) sep='&';; esac
  local line
  local url="${PGURL}${sep}schema=${schema}"
  # Made and migrated first: an older binary creates neither the schema it is given nor
  # its tables in bench (a newer one benches in a fresh schema of its own beside it).
  psql "$PGURL" -q -c "CREATE SCHEMA \"$schema\"" >/dev/null
  "$2" queue migrate --database "$url" >/dev/null
  line=$("$2" queue bench --jobs "$JOBS" --concurrency "$CONCURRENCY" --runs "$RUNS" --database "$url" --format json)
  PGOPTIONS="-c client_min_messages=warning" psql "$PGURL" -q -c "DROP SCHEMA IF EXISTS \"$schema\" CASCADE" >/dev/null
  echo "$1 $line" | tee -a "$OUT" >&2
}

for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    run A "$A_BIN" "$round"; run B "$B_BIN" "$round"
  else
    run B "$B_BIN" "$round"; run A "$A_BIN" "$round"
  fi
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = {"A": [], "B": []}
for line in open(sys.argv[1]):
    label, doc = line.split(" ", 1)
    doc = json.loads(doc)
    runs[label].append(doc.get("jobs_per_sec_median", doc["jobs_per_sec"]))
med = {k: statistics.median(v) for k, v in runs.items()}
print()
print("| binary | drain jobs/s, median | runs |")
print("|---|---|---|")
for k in ("A", "B"):
    print(f"| {k} | **{med[k]:,.0f}** | {' · '.join(f'{x:,}' for x in runs[k])} |")
print(f"\nB/A = {med['B'] / med['A']:.3f} (medians)")
# Each round ran A and B back to back: the median of the rounds' own ratios is steadier
# than the ratio of medians when this VM's rate moves between rounds.
ratios = sorted(b / a for a, b in zip(runs["A"], runs["B"]))
print(f"B/A = {statistics.median(ratios):.3f} (median of the {len(ratios)} rounds' ratios; "
      f"range {ratios[0]:.3f}-{ratios[-1]:.3f})")
PY
