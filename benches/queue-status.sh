#!/usr/bin/env bash
# `scaffold queue status` on a PostgreSQL queue of 1,000,000 items, beside what it replaced:
# the per-(lane, state) `count(*)` over the table that status ran before the counters. Both
# in one hyperfine run, on one schema, after the same warm-ups.
#
#   benches/queue-status.sh                  # 1,000,000 items
#   ITEMS=100000 benches/queue-status.sh
#
# The items are written by one INSERT … SELECT and the counters from them: 3 lanes, 8 kinds, 70% completed, 20% available and due, 5% available and
# scheduled (50,000 at a million), 0.1% running (1,000: a hundred workers of ten), 2%
# failed, 2% dead, 0.9% parked. The oldest-age probes are index lookups; the scheduled count
# and the oldest running item read their index range (cost grows with those two counts, not
# with the table). Then status is timed twice: with the
# counters folded (the sweeper's state after a tick), and with 20,000 delta rows not folded
# yet (what a few seconds of a 70,000 jobs/s drain leaves between two sweeps).
#
# Environment: PGURL (default postgres://postgres@127.0.0.1:5432/test), ITEMS (1000000),
# BIN (default: this tree's release build).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/test}
ITEMS=${ITEMS:-1000000}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" --bin scaffold >&2
  BIN=$TARGET/release/scaffold
fi

schema="scaffold_status_$$"
sep='?'; case "$PGURL" in *\?*) sep='&';; esac
url="${PGURL}${sep}schema=${schema}"
export PGOPTIONS="-c client_min_messages=warning -c search_path=${schema}"
trap 'psql "$PGURL" -q -c "DROP SCHEMA IF EXISTS \"$schema\" CASCADE" >/dev/null' EXIT

"$BIN" queue migrate --database "$url" >/dev/null
source "$ROOT/benches/seed-items.sh"
seed_items "$ITEMS"
"$BIN" queue status --database "$url" --format json >/dev/null   # folds nothing; warms
"$BIN" queue status --database "$url" --format json | python3 -c '
import json, sys
states = ("available", "running", "completed", "failed", "dead", "parked", "scheduled")
n = sum(l[s] for l in json.load(sys.stdin)["lanes"] for s in states)
print(f"status counts {n:,} items", file=sys.stderr)
assert n > 0'
# The sweeper's fold, as a sweep tick would run it.
psql "$PGURL" -q -v ON_ERROR_STOP=1 <<'SQL'
WITH d AS (DELETE FROM work_count_deltas RETURNING lane, kind, state, delta),
     s AS (SELECT lane, kind, state, sum(delta)::int8 AS n FROM d GROUP BY lane, kind, state)
INSERT INTO work_counts AS c (lane, kind, state, n) SELECT lane, kind, state, n FROM s
ON CONFLICT (lane, kind, state) DO UPDATE SET n = c.n + excluded.n;
SQL

count_sql="SELECT lane, state, count(*) FROM work_items GROUP BY lane, state"
hyperfine --warmup 3 --runs 20 -N --export-json /tmp/queue-status-folded.json \
  -n "scaffold queue status (folded)" "$BIN queue status --database $url --format json" \
  -n "psql: count(*) per lane and state (what status ran before)" "psql $PGURL -q -t -c \"$count_sql\"" \
  -n "psql: SELECT 1 (psql's own cost)" "psql $PGURL -q -t -c \"SELECT 1\""

# 20,000 delta rows not folded yet: +1/-1 pairs on one key (each pair sums to 0).
psql "$PGURL" -q -v ON_ERROR_STOP=1 <<'SQL'
INSERT INTO work_count_deltas (lane, kind, state, delta)
SELECT 'default', 'KIND_' || ((g / 2) % 8),
       CASE WHEN (g / 16) % 2 = 0 THEN 'running' ELSE 'available' END,
       CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END
FROM generate_series(0, 19999) AS g;
SQL
hyperfine --warmup 3 --runs 20 -N --export-json /tmp/queue-status-deltas.json \
  -n "scaffold queue status (20,000 deltas unfolded)" "$BIN queue status --database $url --format json"
