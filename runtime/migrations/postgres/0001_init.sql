-- scaffold-runtime schema, version 1 (PostgreSQL). The same tables as the SQLite schema.
-- Times are milliseconds since the Unix epoch, written from the runtime's clock (never the
-- server's), so an injected clock moves leases on every backend alike.

-- Items and outbox rows share one id space: a relayed item keeps its outbox row's id.
CREATE SEQUENCE scaffold_ids;

CREATE TABLE work_items (
    id               BIGINT  PRIMARY KEY DEFAULT nextval('scaffold_ids'),
    kind             TEXT    NOT NULL,
    lane             TEXT    NOT NULL,
    payload          JSONB   NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('available','running','completed','failed','dead','parked')),
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    run_at           BIGINT  NOT NULL,
    lease_owner      TEXT,
    lease_expires_at BIGINT,
    fence            BIGINT  NOT NULL DEFAULT 0,
    dedupe_key       TEXT,
    checkpoint       JSONB,
    last_error       TEXT,
    parked_on        TEXT,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL
);

-- What claim reads: due items of a lane, highest priority first, then oldest.
CREATE INDEX work_items_claim ON work_items (lane, priority DESC, run_at, id)
    WHERE state IN ('available', 'failed', 'parked');

-- What the sweeper reads: running items by lease expiry.
CREATE INDEX work_items_lease ON work_items (lease_expires_at) WHERE state = 'running';

-- Dedupe keys are unique among live items (race-free: the index enforces it).
CREATE UNIQUE INDEX work_items_dedupe ON work_items (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND state IN ('available', 'running', 'failed', 'parked');

-- What retention reads: completed items by age. (Updates that change `state` are never HOT
-- here anyway: `state` is in the partial indexes' predicates.)
CREATE INDEX work_items_completed ON work_items (updated_at) WHERE state = 'completed';

CREATE TABLE work_effects (
    item_id     BIGINT NOT NULL,
    effect_key  TEXT   NOT NULL,
    output      JSONB  NOT NULL,
    fence       BIGINT NOT NULL,
    recorded_at BIGINT NOT NULL,
    PRIMARY KEY (item_id, effect_key)
);

CREATE TABLE outbox (
    id           BIGINT  PRIMARY KEY DEFAULT nextval('scaffold_ids'),
    kind         TEXT    NOT NULL,
    lane         TEXT    NOT NULL,
    payload      JSONB   NOT NULL,
    dedupe_key   TEXT,
    run_at       BIGINT,
    priority     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    created_at   BIGINT  NOT NULL,
    relayed_at   BIGINT
);

CREATE INDEX outbox_pending ON outbox (id) WHERE relayed_at IS NULL;

CREATE TABLE workers (
    id           TEXT   PRIMARY KEY,
    lanes        TEXT   NOT NULL,
    state        TEXT   NOT NULL CHECK (state IN ('REGISTERED','ONLINE','DRAINING','OFFLINE')),
    started_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
