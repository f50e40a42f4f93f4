-- scaffold-runtime schema, version 7 (SQLite): the same table and indexes, with every test
-- of `state` against a list written as `state = … OR state = …` instead of `state IN (…)`,
-- and an index for signals.
--
-- Why: SQLite evaluates an `IN` list of more than two constants by building an ephemeral
-- table, and a CHECK constraint's or a partial index's predicate is evaluated for every row
-- an INSERT or UPDATE writes, with no statement-wide `Once`. Version 6 built four of them
-- per enqueued item and seven per claim (`EXPLAIN` shows each `OpenEphemeral`); the `OR`
-- form builds none. Nothing else changes but one index more, for signals
-- (`work_items_parked`, below): the same columns in the same order, the same rows with the
-- same ids, the same indexes on the same columns.
--
-- A query uses a partial index only when its WHERE clause contains the index's predicate
-- term as written (or a term that implies it, such as `state = 'available'`), so the
-- queries read these predicates from the constants `store/sqlite/ops/mod.rs` holds
-- (`CLAIMABLE`, `LIVE`, `RESTING`), and a test holds the two to the same text.
--
-- A CHECK constraint cannot be altered in place, so the table is rebuilt (SQLite's
-- documented procedure: a new table, the rows copied, the old one dropped, the new one
-- renamed). It runs once, in the migration's transaction, in time proportional to the rows
-- the queue holds (1,000,000 items: 1.5 s, the process at 86 MB, on the 2-core machine
-- the READMEs measure on; the old table's pages stay in the file as free pages until
-- reused). No other table refers to `work_items`.

CREATE TABLE work_items_v7 (
    id               INTEGER PRIMARY KEY,
    kind             TEXT    NOT NULL,
    lane             TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state = 'available' OR state = 'running'
        OR state = 'completed' OR state = 'failed' OR state = 'dead' OR state = 'parked'),
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    fence            INTEGER NOT NULL DEFAULT 0,
    dedupe_key       TEXT,
    checkpoint       TEXT,
    last_error       TEXT,
    parked_on        TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    claimed_at       INTEGER,
    claimed_from     TEXT,
    account          TEXT
);

INSERT INTO work_items_v7 (id, kind, lane, payload, state, priority, attempt, max_attempts,
        run_at, lease_owner, lease_expires_at, fence, dedupe_key, checkpoint, last_error,
        parked_on, created_at, updated_at, claimed_at, claimed_from, account)
    SELECT id, kind, lane, payload, state, priority, attempt, max_attempts,
        run_at, lease_owner, lease_expires_at, fence, dedupe_key, checkpoint, last_error,
        parked_on, created_at, updated_at, claimed_at, claimed_from, account
    FROM work_items;

DROP TABLE work_items;
ALTER TABLE work_items_v7 RENAME TO work_items;

-- What claim reads: due items of a lane, highest priority first, then oldest (`CLAIMABLE`).
CREATE INDEX work_items_claim ON work_items (lane, priority DESC, run_at, id)
    WHERE (state = 'available' OR state = 'failed' OR state = 'parked');

-- What the sweeper reads: running items by lease expiry.
CREATE INDEX work_items_lease ON work_items (lease_expires_at) WHERE state = 'running';

-- Dedupe keys are unique among live items of a kind (`LIVE`; race-free: the index
-- enforces it).
CREATE UNIQUE INDEX work_items_dedupe ON work_items (kind, dedupe_key)
    WHERE dedupe_key IS NOT NULL
        AND (state = 'available' OR state = 'running' OR state = 'failed' OR state = 'parked');

-- Completed items by age, for retention and `stats`.
CREATE INDEX work_items_completed ON work_items (updated_at) WHERE state = 'completed';

-- Each lane's oldest available item (`stats`), and the states off the hot path by creation
-- (`RESTING`).
CREATE INDEX work_items_available ON work_items (lane, run_at) WHERE state = 'available';
CREATE INDEX work_items_resting ON work_items (lane, state, created_at)
    WHERE (state = 'failed' OR state = 'dead' OR state = 'parked');

-- Items by dedupe key, finished ones too (`list --dedupe-key`).
CREATE INDEX work_items_by_key ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL;

-- New in version 7: the items parked on a signal, oldest first (`signal`). Without it a
-- signal scanned the table in its write transaction (1,000,000 items, 1,000 parked: 26 ms
-- against 0.05 ms), holding up every other writer. Only parked items are in it.
CREATE INDEX work_items_parked ON work_items (parked_on, id) WHERE state = 'parked';
