-- scaffold-runtime schema, version 3 (SQLite): attempt history, counters kept with every
-- transition, the store's own id, and the indexes `stats` reads instead of scanning.

-- The store's id, minted once: part of the idempotency key `ctx.once` hands a closure, so
-- that key is unique across databases.
CREATE TABLE queue_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO queue_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));

-- When the current attempt was claimed: its attempt row's start.
ALTER TABLE work_items ADD COLUMN claimed_at INTEGER;

-- Every attempt that ended: one row, written by the statement that moved the item out of
-- `running` (a finish, the sweeper, a cancel, a release), in its own transaction.
CREATE TABLE work_attempts (
    item_id     INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    fence       INTEGER NOT NULL,
    holder      TEXT,
    claimed_at  INTEGER,
    finished_at INTEGER NOT NULL,
    outcome     TEXT    NOT NULL,
    error       TEXT,
    PRIMARY KEY (item_id, fence)
);

CREATE TRIGGER work_attempts_end AFTER UPDATE OF state ON work_items
WHEN old.state = 'running' AND new.state <> 'running'
BEGIN
    INSERT OR REPLACE INTO work_attempts
        (item_id, attempt, fence, holder, claimed_at, finished_at, outcome, error)
    VALUES (
        old.id, old.attempt, old.fence, old.lease_owner, old.claimed_at, new.updated_at,
        CASE
            WHEN new.state = 'completed' THEN 'completed'
            -- Only the sweeper moves an item whose lease has run out.
            WHEN old.lease_expires_at <= new.updated_at THEN 'expired'
            WHEN new.state = 'failed' THEN 'failed'
            WHEN new.state = 'dead' THEN 'dead'
            WHEN new.state = 'parked' THEN 'parked'
            ELSE 'released'
        END,
        CASE WHEN new.state IN ('failed', 'dead') OR old.lease_expires_at <= new.updated_at
            THEN new.last_error END
    );
END;

-- An item's attempts go with it (retention, a discard).
CREATE TRIGGER work_attempts_purge AFTER DELETE ON work_items
BEGIN
    DELETE FROM work_attempts WHERE item_id = old.id;
END;

-- Items per (lane, kind, state), kept by the statements that insert, move and delete
-- items (SQLite has one writer at a time, so one row per key serialises nothing new).
CREATE TABLE work_counts (
    lane  TEXT    NOT NULL,
    kind  TEXT    NOT NULL,
    state TEXT    NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (lane, kind, state)
);
INSERT INTO work_counts (lane, kind, state, n)
    SELECT lane, kind, state, count(*) FROM work_items GROUP BY lane, kind, state;

CREATE TRIGGER work_counts_insert AFTER INSERT ON work_items
BEGIN
    INSERT INTO work_counts (lane, kind, state, n) VALUES (new.lane, new.kind, new.state, 1)
        ON CONFLICT (lane, kind, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER work_counts_move AFTER UPDATE OF state, lane, kind ON work_items
WHEN old.state IS NOT new.state OR old.lane IS NOT new.lane OR old.kind IS NOT new.kind
BEGIN
    UPDATE work_counts SET n = n - 1
        WHERE lane = old.lane AND kind = old.kind AND state = old.state;
    INSERT INTO work_counts (lane, kind, state, n) VALUES (new.lane, new.kind, new.state, 1)
        ON CONFLICT (lane, kind, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER work_counts_delete AFTER DELETE ON work_items
BEGIN
    UPDATE work_counts SET n = n - 1
        WHERE lane = old.lane AND kind = old.kind AND state = old.state;
END;

-- What `stats` reads for each lane's oldest item of a state (without scanning the table):
-- available items by due time (scheduled ones are the range past now), and the states off
-- the hot path by creation. Running items are read through `work_items_lease`, completed
-- ones through `work_items_completed`.
CREATE INDEX work_items_available ON work_items (lane, run_at) WHERE state = 'available';
CREATE INDEX work_items_resting ON work_items (lane, state, created_at)
    WHERE state IN ('failed', 'dead', 'parked');

-- Dead items of one kind (`retry --kind`), and live items by dedupe key (`list --dedupe-key`
-- uses `work_items_dedupe` for live ones; this finds finished ones too).
CREATE INDEX work_items_by_key ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL;
