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

-- Every attempt that ended: one row, written by the statement that moved the item out of
-- `running` (a finish, the sweeper, a cancel, a release), in its own transaction.
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
-- completion on its row lock, so a statement appends its net change as delta rows (inserts
-- never wait on each other), a reader sums counts and deltas, and the sweeper folds the
-- deltas into the counts.
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
    SELECT lane, kind, state, count(*) FROM work_items GROUP BY lane, kind, state;

-- Statement-level triggers over the statement's transition tables: one set-based insert
-- per statement, however many rows it moved (a claim of 100 items adds two delta rows).
CREATE FUNCTION work_items_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO work_count_deltas (lane, kind, state, delta)
        SELECT lane, kind, state, count(*) FROM new_rows GROUP BY lane, kind, state;
    RETURN NULL;
END $$;

CREATE FUNCTION work_items_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO work_count_deltas (lane, kind, state, delta)
        SELECT lane, kind, state, -count(*) FROM old_rows GROUP BY lane, kind, state;
    DELETE FROM work_attempts a USING old_rows o WHERE a.item_id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION work_items_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO work_count_deltas (lane, kind, state, delta)
        SELECT lane, kind, state, sum(d) FROM (
            SELECT o.lane, o.kind, o.state, -1 AS d FROM old_rows o JOIN new_rows n USING (id)
                WHERE o.state <> n.state OR o.lane <> n.lane OR o.kind <> n.kind
            UNION ALL
            SELECT n.lane, n.kind, n.state, 1 FROM old_rows o JOIN new_rows n USING (id)
                WHERE o.state <> n.state OR o.lane <> n.lane OR o.kind <> n.kind
        ) moved GROUP BY lane, kind, state HAVING sum(d) <> 0;
    INSERT INTO work_attempts
        (item_id, attempt, fence, holder, claimed_at, finished_at, outcome, error)
        SELECT o.id, o.attempt, o.fence, o.lease_owner, o.claimed_at, n.updated_at,
            CASE
                WHEN n.state = 'completed' THEN 'completed'
                -- Only the sweeper moves an item whose lease has run out.
                WHEN o.lease_expires_at <= n.updated_at THEN 'expired'
                WHEN n.state = 'failed' THEN 'failed'
                WHEN n.state = 'dead' THEN 'dead'
                WHEN n.state = 'parked' THEN 'parked'
                ELSE 'released'
            END,
            CASE WHEN n.state IN ('failed', 'dead') OR o.lease_expires_at <= n.updated_at
                THEN n.last_error END
        FROM old_rows o JOIN new_rows n USING (id)
        WHERE o.state = 'running' AND n.state <> 'running'
        ON CONFLICT (item_id, fence) DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER work_items_inserted AFTER INSERT ON work_items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION work_items_inserted();
CREATE TRIGGER work_items_deleted AFTER DELETE ON work_items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION work_items_deleted();
CREATE TRIGGER work_items_updated AFTER UPDATE ON work_items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION work_items_updated();

-- What `stats` reads for each lane's oldest item of a state (without scanning the table):
-- available items by due time (scheduled ones are the range past now), and the states off
-- the hot path by creation. Running items are read through `work_items_lease`, completed
-- ones through `work_items_completed`.
CREATE INDEX work_items_available ON work_items (lane, run_at) WHERE state = 'available';
CREATE INDEX work_items_resting ON work_items (lane, state, created_at)
    WHERE state IN ('failed', 'dead', 'parked');

-- Items by dedupe key, finished ones too (`list --dedupe-key`).
CREATE INDEX work_items_by_key ON work_items (dedupe_key) WHERE dedupe_key IS NOT NULL;
