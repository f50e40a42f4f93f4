#!/usr/bin/env bash
# The dashboard's server time on a PostgreSQL queue of 1,000,000 items (issue 36: < 50 ms
# at the median for the lanes, items and one-item pages), beside what the peers' dashboards
# run for their state counts at that size: riverui's and Oban Web's exact
# `count(*) … GROUP BY state` (both fall back to caches or estimates above a threshold
# because of it). One run, one schema, after the same warm-ups.
#
#   benches/dashboard.sh                 # 1,000,000 items, 200 requests per page
#   ITEMS=100000 RUNS=50 benches/dashboard.sh
#
# Server time is the dashboard's own `Server-Timing: app;dur=…` (the handler, its store
# calls and the template; not the loopback hop). The items are benches/seed-items.sh's;
# the one item measured also has 3 failed attempts and 2 recorded effects.
#
# Environment: PGURL (default postgres://postgres@127.0.0.1:5432/test), ITEMS (1000000),
# RUNS (200), BIN (default: this tree's release build).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/test}
ITEMS=${ITEMS:-1000000}
RUNS=${RUNS:-200}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" --bin scaffold >&2
  BIN=$TARGET/release/scaffold
fi

schema="scaffold_dashboard_$$"
sep='?'; case "$PGURL" in *\?*) sep='&';; esac
url="${PGURL}${sep}schema=${schema}"
export PGOPTIONS="-c client_min_messages=warning -c search_path=${schema}"
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  psql "$PGURL" -q -c "DROP SCHEMA IF EXISTS \"$schema\" CASCADE" >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$BIN" queue migrate --database "$url" >/dev/null
source "$ROOT/benches/seed-items.sh"
seed_items "$ITEMS"
# The item the one-item page shows: a failed one, with its attempts and effects.
item=$(psql "$PGURL" -q -t -A -c "SELECT id FROM work_items WHERE state = 'failed' ORDER BY id DESC LIMIT 1")
psql "$PGURL" -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO work_attempts (item_id, attempt, fence, holder, claimed_at, finished_at, outcome, error)
SELECT $item, a, a, 'bench-worker', 1000 * a, 1000 * a + 500, 'failed', 'carrier timed out'
FROM generate_series(1, 3) AS a;
INSERT INTO work_effects (item_id, effect_key, output, fence, recorded_at)
VALUES ($item, 'label', '{"tracking": "1Z999"}', 1, 1500), ($item, 'email', '{"sent": true}', 2, 2500);
SQL

"$BIN" queue serve --database "$url" --insecure-loopback --listen 127.0.0.1:0 \
  --dashboard 127.0.0.1:0 --format json > "$work/serve.out" 2> "$work/serve.err" &
server=$!
for _ in $(seq 1 100); do [ -s "$work/serve.out" ] && break; sleep 0.1; done
base=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["dashboard"].rstrip("/"))' "$work/serve.out")
echo "dashboard at $base over $ITEMS items (schema $schema)" >&2

python3 - "$base" "$RUNS" "$item" "$PGURL" <<'PY'
import statistics, subprocess, sys, urllib.request

base, runs, item, pgurl = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
pages = [
    ("lanes  /", "/"),
    ("items  /items", "/items"),
    ("items  /items?state=dead", "/items?state=dead"),
    ("items  /items?lane=bulk&kind=KIND_3", "/items?lane=bulk&kind=KIND_3"),
    (f"item   /items/{item}", f"/items/{item}"),
]

def server_ms(path):
    with urllib.request.urlopen(base + path) as r:
        assert r.status == 200, (path, r.status)
        r.read()
        timing = r.headers["server-timing"]
    return float(timing.split("dur=")[1])

def row(name, xs):
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    print(f"{name:44} median {statistics.median(xs):8.2f} ms   p95 {p95:8.2f} ms   max {xs[-1]:8.2f} ms   (n={len(xs)})")

print(f"scaffold dashboard, server time ({runs} requests each, after 10 warm-ups):")
for name, path in pages:
    for _ in range(10):
        server_ms(path)
    row(name, [server_ms(path) for _ in range(runs)])

def exec_ms(sql):
    out = subprocess.run(["psql", pgurl, "-q", "-t", "-A", "-c", "EXPLAIN (ANALYZE, TIMING OFF) " + sql],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split("Execution Time: ")[1].split(" ms")[0])

peer_runs = 20
print(f"\nwhat the peers count with at this size (PostgreSQL execution time, {peer_runs} runs each, after 2 warm-ups):")
for name, sql in [
    ("riverui/Oban: count(*) GROUP BY state", "SELECT state, count(*) FROM work_items GROUP BY state"),
    ("count(*) GROUP BY lane, state", "SELECT lane, state, count(*) FROM work_items GROUP BY lane, state"),
]:
    for _ in range(2):
        exec_ms(sql)
    row(name, [exec_ms(sql) for _ in range(peer_runs)])
PY
