-- scaffold-runtime schema, version 1 (SQLite). Times are milliseconds since the Unix epoch.

CREATE TABLE work_items (
    id               INTEGER PRIMARY KEY,
    kind             TEXT    NOT NULL,
    lane             TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('available','running','completed','failed','dead','parked')),
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
    updated_at       INTEGER NOT NULL
);

-- What claim reads: due items of a lane, highest priority first, then oldest.
CREATE INDEX work_items_claim ON work_items (lane, priority DESC, run_at, id)
    WHERE state IN ('available', 'failed', 'parked');

-- What the sweeper reads: running items by lease expiry.
CREATE INDEX work_items_lease ON work_items (lease_expires_at) WHERE state = 'running';

-- Dedupe keys are unique among live items (race-free: the index enforces it).
CREATE UNIQUE INDEX work_items_dedupe ON work_items (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND state IN ('available', 'running', 'failed', 'parked');



CREATE TABLE work_effects (
    item_id     INTEGER NOT NULL,
    effect_key  TEXT    NOT NULL,
    output      TEXT    NOT NULL,
    fence       INTEGER NOT NULL,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (item_id, effect_key)
);

CREATE TABLE outbox (
    id           INTEGER PRIMARY KEY,
    kind         TEXT    NOT NULL,
    lane         TEXT    NOT NULL,
    payload      TEXT    NOT NULL,
    dedupe_key   TEXT,
    run_at       INTEGER,
    priority     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    relayed_at   INTEGER
);

CREATE INDEX outbox_pending ON outbox (id) WHERE relayed_at IS NULL;

CREATE TABLE workers (
    id           TEXT    PRIMARY KEY,
    lanes        TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('REGISTERED','ONLINE','DRAINING','OFFLINE')),
    started_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
);
