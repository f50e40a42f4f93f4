#!/usr/bin/env bash
# The coordinator alone, beside the direct path, on the same database in one run: for each
# store (SQLite, then PostgreSQL), alternating per round, `scaffold queue bench` (one
# in-process loop, concurrency 10) and `examples/coordinator_load.rs` (CLIENTS remote
# workers over loopback, claims of 100, one batch completion per claim), each on a fresh
# queue. Prints each run and the medians; the issue's bar is coordinator ≥ 50% of direct.
#
#   benches/coordinator-load.sh                 # 3 rounds, 20,000 jobs, 4 clients
#   ROUNDS=5 JOBS=50000 CLIENTS=8 benches/coordinator-load.sh
#
# Environment: PGURL (default postgres://postgres@127.0.0.1:5432/test; empty: SQLite only),
# ROUNDS (3), JOBS (20000), CLIENTS (4).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGURL=${PGURL-postgres://postgres@127.0.0.1:5432/test}
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-20000}
CLIENTS=${CLIENTS:-4}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" --bin scaffold >&2
cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" -p scaffold-runtime --example coordinator_load >&2
BIN=$TARGET/release/scaffold
LOAD=$TARGET/release/examples/coordinator_load
OUT=$(mktemp)
SCRATCH=$(mktemp -d)
trap 'rm -rf "$OUT" "$SCRATCH"' EXIT

direct() { # store-url
  "$BIN" queue bench --jobs "$JOBS" --concurrency 10 --database "$1" --format json \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"backend": d["backend"], "path": "direct", "jobs_per_sec": d["jobs_per_sec"]}))'
}

remote() { # store-url
  "$LOAD" "$1" "$JOBS" "$CLIENTS"
}

stores=("sqlite")
[ -n "$PGURL" ] && stores+=("postgres")
for round in $(seq 1 "$ROUNDS"); do
  for s in "${stores[@]}"; do
    for path in direct remote; do
      if [ $((round % 2)) -eq 0 ]; then [ "$path" = direct ] && path=remote || path=direct; fi
      if [ "$s" = sqlite ]; then
        url="sqlite://$SCRATCH/$path-$round.db"
      else
        schema="scaffold_load_${path}_$$_$round"
        psql "$PGURL" -q -c "CREATE SCHEMA \"$schema\"" >/dev/null
        sep='?'; case "$PGURL" in *\?*) sep='&';; esac
        url="${PGURL}${sep}schema=${schema}"
      fi
      "$path" "$url" | tee -a "$OUT" >&2
      if [ "$s" = postgres ]; then
        PGOPTIONS="-c client_min_messages=warning" psql "$PGURL" -q -c "DROP SCHEMA IF EXISTS \"$schema\" CASCADE" >/dev/null
      fi
    done
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault((r["backend"], r["path"]), []).append(r["jobs_per_sec"])
print()
print("| store | direct (`queue bench`), median | coordinator (remote clients), median | coordinator / direct |")
print("|---|---|---|---|")
for backend in sorted({b for b, _ in runs}):
    d = statistics.median(runs.get((backend, "direct"), [0]))
    c = statistics.median(runs.get((backend, "coordinator"), [0]))
    each = lambda k: " · ".join(f"{x:,}" for x in runs.get((backend, k), []))
    print(f"| {backend} | **{d:,.0f}** ({each('direct')}) | **{c:,.0f}** ({each('coordinator')}) | {c / d if d else 0:.2f} |")
PY
