-- scaffold-runtime schema, version 2 (SQLite).

-- Ids are never reused (DESIGN §7): items and outbox rows draw from one persisted
-- high-water mark, so an id freed by a discard or a purge never comes back and (id, fence)
-- names one attempt of one item for ever. Seeded past every id already handed out.
CREATE TABLE id_counter (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    next_id   INTEGER NOT NULL
);
INSERT INTO id_counter (singleton, next_id)
SELECT 1, max(COALESCE((SELECT max(id) FROM work_items), 0),
              COALESCE((SELECT max(id) FROM outbox), 0)) + 1;

-- Dedupe keys are unique per kind among live items (not across kinds).
DROP INDEX work_items_dedupe;
CREATE UNIQUE INDEX work_items_dedupe ON work_items (kind, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND state IN ('available', 'running', 'failed', 'parked');

-- What retention reads: completed items by age.
CREATE INDEX IF NOT EXISTS work_items_completed ON work_items (updated_at) WHERE state = 'completed';

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
