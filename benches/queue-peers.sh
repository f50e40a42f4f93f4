#!/usr/bin/env bash
# Side-by-side drain benchmark on one PostgreSQL server: `scaffold queue bench` (this repo,
# fencing on), Graphile Worker 0.17.3 (npm, Node 20) and River's Rust client (`riverqueue`
# 0.5.0), each draining the same N no-op jobs with one process and concurrency 10. Every run
# gets a fresh database, so no peer sees another's tables, dead tuples or statistics.
#
#   benches/queue-peers.sh                      # N = 20000 and 100000, best of 3 runs each
#   JOBS="20000" RUNS=1 PEERS="scaffold graphile" benches/queue-peers.sh
#
# Environment:
#   PGURL   server URL without a database (default postgres://postgres@127.0.0.1:5432)
#   JOBS    space-separated backlog sizes (default "20000 100000")
#   RUNS    runs per peer and size; the best is reported (default 3)
#   PEERS   any of scaffold graphile river (default all three; river is skipped with a
#           note if it does not build)
#   CACHE   where npm packages and the River build go (default target/queue-peers)
# Needs psql, node >= 20, npm, cargo. Prints one JSON line per run, then a table.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
JOBS=${JOBS:-"20000 100000"}
RUNS=${RUNS:-3}
PEERS=${PEERS:-"scaffold graphile river"}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CACHE=${CACHE:-$TARGET/queue-peers}
CONCURRENCY=10
LOCAL_QUEUE=500
DB=queue_peers_bench

mkdir -p "$CACHE"
RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"; psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true' EXIT

fresh_db() {
  psql "$PGURL/postgres" -qX -v ON_ERROR_STOP=1 \
    -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
}

has() { [[ " $PEERS " == *" $1 "* ]]; }

# --- build / install -------------------------------------------------------------------
if has scaffold; then
  (cd "$ROOT" && cargo build --release --quiet --bin scaffold)
  SCAFFOLD=$TARGET/release/scaffold
fi
if has graphile; then
  GW=$CACHE/graphile
  if [ ! -f "$GW/node_modules/graphile-worker/package.json" ] ||
     ! grep -q '"version": "0.17.3"' "$GW/node_modules/graphile-worker/package.json"; then
    mkdir -p "$GW"
    echo '{"private":true}' > "$GW/package.json"
    (cd "$GW" && npm install --silent --no-audit --no-fund graphile-worker@0.17.3)
  fi
fi
if has river; then
  RIVER_TARGET=$CACHE/river-target
  if (cd "$ROOT/benches/queue-peers/river" &&
      CARGO_TARGET_DIR=$RIVER_TARGET cargo build --release --quiet) >"$CACHE/river-build.log" 2>&1; then
    RIVER=$RIVER_TARGET/release/river-bench
  else
    echo "note: the River bench did not build here (see $CACHE/river-build.log); skipping River" >&2
    PEERS=${PEERS/river/}
  fi
fi

# --- runs ------------------------------------------------------------------------------
run_peer() { # peer jobs -> one JSON line
  local peer=$1 n=$2
  fresh_db
  case $peer in
    scaffold)
      timeout 600 "$SCAFFOLD" queue bench --database "$PGURL/$DB" --jobs "$n" \
        --concurrency "$CONCURRENCY" --format json | tr -d '\n' ;;
    graphile)
      NODE_PATH=$GW/node_modules timeout 600 node "$ROOT/benches/queue-peers/graphile-bench.js" \
        "$PGURL/$DB" "$n" "$CONCURRENCY" "$LOCAL_QUEUE" ;;
    river)
      timeout 600 "$RIVER" "$PGURL/$DB" "$n" "$CONCURRENCY" ;;
  esac
  echo
}

echo "# $(date -u +%FT%TZ) $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$(psql "$PGURL/postgres" -AtXc 'SHOW server_version') ;" \
  "shared_buffers $(psql "$PGURL/postgres" -AtXc 'SHOW shared_buffers')," \
  "synchronous_commit $(psql "$PGURL/postgres" -AtXc 'SHOW synchronous_commit')"
for n in $JOBS; do
  for r in $(seq 1 "$RUNS"); do
    # Interleaved, so a burst of load from elsewhere hits every peer alike.
    for peer in $PEERS; do
      line=$(run_peer "$peer" "$n")
      echo "$line"
      rate=$(sed -n 's/.*"jobs_per_sec":\([0-9]*\).*/\1/p' <<<"$line")
      echo "$peer $n $rate $(cut -d' ' -f1 /proc/loadavg)" >> "$RESULTS"
    done
  done
done

# --- table -----------------------------------------------------------------------------
echo
printf '%-10s %8s %12s %-28s %s\n' peer jobs "best jobs/s" "runs" "scaffold / peer"
for n in $JOBS; do
  best_scaffold=$(awk -v n="$n" '$1=="scaffold" && $2==n {if ($3>b) b=$3} END {print b+0}' "$RESULTS")
  for peer in $PEERS; do
    best=$(awk -v p="$peer" -v n="$n" '$1==p && $2==n {if ($3>b) b=$3} END {print b+0}' "$RESULTS")
    runs=$(awk -v p="$peer" -v n="$n" '$1==p && $2==n {printf "%s%s", s, $3; s="·"}' "$RESULTS")
    ratio=$(awk -v a="$best_scaffold" -v b="$best" 'BEGIN {if (b>0 && a>0) printf "%.2fx", a/b; else print "-"}')
    printf '%-10s %8s %12s %-28s %s\n' "$peer" "$n" "$best" "$runs" "$ratio"
  done
done
