#!/usr/bin/env bash
# Sourced by the benches that need a big PostgreSQL queue (queue-status.sh, dashboard.sh):
# `seed_items N` writes N items into the schema PGOPTIONS' search_path names, by one
# INSERT … SELECT, and the counters from them: 3 lanes, 8 kinds, 70% completed, 20%
# available and due, 5% available and scheduled, 0.1% running (held by `bench-worker`), 2%
# failed, 2% dead, 0.9% parked; then VACUUM ANALYZE, as autovacuum would have by now.
# Needs PGURL.

seed_items() {
  local ITEMS=$1
  psql "$PGURL" -q -v ON_ERROR_STOP=1 <<SQL
\set items $ITEMS
WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8 AS ms),
     g AS (SELECT g, g % 1000 AS p FROM generate_series(1, :items) AS g)
INSERT INTO work_items (id, kind, lane, payload, state, attempt, max_attempts, run_at,
                        lease_owner, lease_expires_at, fence, claimed_at, claimed_from, parked_on,
                        last_error, created_at, updated_at)
SELECT nextval('scaffold_ids'), 'KIND_' || (g % 8),
       CASE WHEN g % 10 < 7 THEN 'default' WHEN g % 10 < 9 THEN 'bulk' ELSE 'payments' END,
       '{"n": 1}',
       CASE WHEN p < 700 THEN 'completed' WHEN p < 950 THEN 'available' WHEN p < 951 THEN 'running'
            WHEN p < 971 THEN 'failed' WHEN p < 991 THEN 'dead' ELSE 'parked' END,
       1, 5,
       CASE WHEN p BETWEEN 900 AND 949 THEN ms + 3600000 ELSE ms - (g % 600000) END,
       CASE WHEN p = 950 THEN 'bench-worker' END,
       CASE WHEN p = 950 THEN ms + 30000 END,
       1,
       CASE WHEN p = 950 THEN ms END,
       CASE WHEN p = 950 THEN 'available' END,
       CASE WHEN p >= 991 THEN 'signal' END,
       CASE WHEN p BETWEEN 951 AND 990 THEN 'boom' END,
       ms - (g % 600000), ms - (g % 600000)
FROM g, now;
-- The counters, as the runtime's own writes would have left them (a running item counted
-- under the state it was claimed from).
INSERT INTO work_counts (lane, kind, state, n)
SELECT lane, kind, CASE WHEN state = 'running' THEN claimed_from ELSE state END, count(*)
FROM work_items GROUP BY 1, 2, 3;
SQL
  # What autovacuum would have done to a table this size by now (its visibility map lets the
  # index probes below skip the heap).
  psql "$PGURL" -q -c "VACUUM ANALYZE work_items"
}
