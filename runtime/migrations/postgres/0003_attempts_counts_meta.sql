-- scaffold-runtime schema, version 3 (PostgreSQL): attempt history, counters kept with every
-- transition, the store's own id, and the indexes `stats` reads instead of scanning.

-- The store's id, minted once: part of the idempotency key `ctx.once` hands a closure, so
-- that key is unique across databases.
CREATE TABLE queue_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO queue_meta (key, value)
    VALUES ('store_id', md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text));

-- When the current attempt was claimed: its attempt row's start.
ALTER TABLE work_items ADD COLUMN claimed_at BIGINT;

-- The state a claim took a running item from when it was not `available` (failed or
-- parked; NULL for available, the common case, so most rows carry no bytes for it): the
-- counters count a running item under it until its attempt ends (see `work_counts`).
ALTER TABLE work_items ADD COLUMN claimed_from TEXT;

-- Every attempt that ended other than by completing: one row, written by the statement that
-- ended it (a failure, a park, a release, the sweeper, a cancel). A completed item is never
-- claimed again, so its row is its last attempt (the holder stays in `lease_owner`) and a
-- completion writes nothing here: the drain's common path costs no extra row.
CREATE TABLE work_attempts (
    item_id     BIGINT NOT NULL,
    attempt     INTEGER NOT NULL,
    fence       BIGINT NOT NULL,
    holder      TEXT,
    claimed_at  BIGINT,
    finished_at BIGINT NOT NULL,
    outcome     TEXT   NOT NULL,
    error       TEXT,
    PRIMARY KEY (item_id, fence)
);

-- Items per (lane, kind, state). One row per key would serialise every claim and every
-- completion on its row lock, so each statement that moves items appends its net change as
-- delta rows (inserts never wait on each other), a reader sums counts and deltas, and the
-- sweeper folds the deltas into the counts. A running item stays counted under the state it
-- was claimed from until its attempt ends; `counts` moves the running ones (read through
-- `work_items_lease`: as many as are held, never the table) to `running`. So a claim writes
-- no counter at all, and a batch of completions one delta row per lane and kind.
CREATE TABLE work_counts (
    lane  TEXT   NOT NULL,
    kind  TEXT   NOT NULL,
    state TEXT   NOT NULL,
    n     BIGINT NOT NULL,
    PRIMARY KEY (lane, kind, state)
);
CREATE TABLE work_count_deltas (
    lane  TEXT   NOT NULL,
    kind  TEXT   NOT NULL,
    state TEXT   NOT NULL,
    delta BIGINT NOT NULL
);
INSERT INTO work_counts (lane, kind, state, n)
    SELECT lane, kind,
        CASE WHEN state = 'running' THEN coalesce(claimed_from, 'available') ELSE state END,
        count(*)
    FROM work_items GROUP BY 1, 2, 3;

-- A batch of completions counted from what its worker knows (lane, kind, claimed from)
-- raises this when fewer rows completed than it counted, so nothing of it is kept and the
-- batch is written again counting the rows themselves.
CREATE FUNCTION scaffold_partial_batch() RETURNS BIGINT LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SCAF1',
        MESSAGE = 'a batch of completions matched fewer rows than it counted';
END $$;

-- What `stats` reads for each lane's oldest item of a state (without scanning the table):
-- available items by due time (scheduled ones are the range past now), and the states off
-- the hot path by creation. Running items are read through `work_items_lease`, completed
-- ones through `work_items_completed`.
CREATE INDEX work_items_available ON work_items (lane, run_at) WHERE state = 'available';
CREATE INDEX work_items_resting ON work_items (lane, state, created_at)
    WHERE state IN ('failed', 'dead', 'parked');

-- Items by dedupe key, finished ones too (`list --dedupe-key`).
CREATE INDEX work_items_by_key ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL;
