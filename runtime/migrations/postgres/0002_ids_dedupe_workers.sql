-- scaffold-runtime schema, version 2 (PostgreSQL). Ids already come from one sequence,
-- which never hands an id out twice.

-- Dedupe keys are unique per kind among live items (not across kinds).
DROP INDEX work_items_dedupe;
CREATE UNIQUE INDEX work_items_dedupe ON work_items (kind, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND state IN ('available', 'running', 'failed', 'parked');

-- A row the relay cannot turn into an item (its id is taken by another item: only a
-- foreign writer can cause that) keeps its reason here and stays unrelayed.
ALTER TABLE outbox ADD COLUMN relay_error TEXT;
DROP INDEX outbox_pending;
CREATE INDEX outbox_pending ON outbox (id) WHERE relayed_at IS NULL AND relay_error IS NULL;
-- What retention reads: relayed rows by age.
CREATE INDEX outbox_relayed ON outbox (relayed_at) WHERE relayed_at IS NOT NULL;

-- Workers heartbeat their row; the sweeper marks one OFFLINE after three of its leases
-- of silence, and retention deletes OFFLINE rows.
ALTER TABLE workers ADD COLUMN lease_ms BIGINT NOT NULL DEFAULT 30000;

-- A queue table turns over all its rows: let autovacuum start after 1% of them changed
-- instead of 20% (the backend also vacuums behind long drains and after purges itself).
ALTER TABLE work_items SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);
