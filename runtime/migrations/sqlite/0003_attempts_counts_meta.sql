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

-- The state a claim took a running item from when it was not `available` (failed or
-- parked; NULL for available, the common case, so most rows carry no bytes for it): the
-- counters count a running item under it until its attempt ends (see `work_counts`).
ALTER TABLE work_items ADD COLUMN claimed_from TEXT;

-- Every attempt that ended other than by completing: one row, written in the transaction
-- that moved the item out of `running` (a failure, a park, a release, the sweeper, a
-- cancel), and deleted with the item. A completed item is never claimed again, so its row
-- is its last attempt (the holder stays in `lease_owner`) and a completion writes nothing
-- here.
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

-- Items per (lane, kind, state), kept by the transactions that insert, move and delete
-- items, once per write (SQLite has one writer at a time, so one row per key serialises
-- nothing new; no trigger: a trigger gave every update a statement journal). A
-- running item stays counted under the state it was claimed from until its attempt ends,
-- and `counts` moves the running ones (read through `work_items_lease`: as many as are
-- held) to `running`: so a claim changes no counter.
CREATE TABLE work_counts (
    lane  TEXT    NOT NULL,
    kind  TEXT    NOT NULL,
    state TEXT    NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (lane, kind, state)
);
INSERT INTO work_counts (lane, kind, state, n)
    SELECT lane, kind,
        CASE WHEN state = 'running' THEN coalesce(claimed_from, 'available') ELSE state END,
        count(*)
    FROM work_items GROUP BY 1, 2, 3;

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
