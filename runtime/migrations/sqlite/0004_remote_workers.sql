-- scaffold-runtime schema, version 4 (SQLite): what the coordinator keeps for remote
-- workers (DESIGN §8) — enrollment tokens, device keys, challenge nonces, sessions — and
-- artifacts. Tokens and nonces are stored as their SHA-256 (hex), never as themselves.

-- Every item belongs to an account; a remote worker claims only its own account's. NULL is
-- the default account (`default`), so rows of a queue that uses none carry no bytes for it.
ALTER TABLE work_items ADD COLUMN account TEXT;
ALTER TABLE outbox ADD COLUMN account TEXT;

-- A worker may now read UPGRADE_REQUIRED (its protocol is outside the coordinator's range).
-- SQLite cannot change a CHECK constraint in place: the table is made again.
CREATE TABLE workers_v4 (
    id           TEXT    PRIMARY KEY,
    lanes        TEXT    NOT NULL,
    state        TEXT    NOT NULL
        CHECK (state IN ('REGISTERED', 'ONLINE', 'DRAINING', 'OFFLINE', 'UPGRADE_REQUIRED')),
    started_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    lease_ms     INTEGER NOT NULL DEFAULT 30000
);
INSERT INTO workers_v4 (id, lanes, state, started_at, last_seen_at, lease_ms)
    SELECT id, lanes, state, started_at, last_seen_at, lease_ms FROM workers;
DROP TABLE workers;
ALTER TABLE workers_v4 RENAME TO workers;

-- Single-use enrollment tokens: redeemed by one atomic update
-- (`… WHERE used_at IS NULL AND expires_at > now`).
CREATE TABLE remote_enrollments (
    token_sha256 TEXT   PRIMARY KEY,
    worker_name  TEXT   NOT NULL,
    account      TEXT   NOT NULL,
    kinds        TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER,
    worker_id    TEXT
);

-- Enrolled devices: the coordinator-minted id (the lease owner of everything it claims), the
-- Ed25519 public key, and the account and kinds fixed at enrollment. A revoked worker keeps
-- its row without a key, so its next call is told it was revoked.
CREATE TABLE remote_workers (
    id          TEXT   PRIMARY KEY,
    name        TEXT   NOT NULL,
    account     TEXT   NOT NULL,
    kinds       TEXT,
    public_key  TEXT,
    protocol    INTEGER NOT NULL,
    enrolled_at INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX remote_workers_name ON remote_workers (name);

-- Challenge nonces: single use (deleted as they are redeemed), 60 s.
CREATE TABLE remote_nonces (
    nonce_sha256 TEXT   PRIMARY KEY,
    worker_id    TEXT   NOT NULL,
    expires_at   INTEGER NOT NULL
);

-- Session tokens, 15 minutes; the protocol version the session speaks.
CREATE TABLE remote_sessions (
    token_sha256 TEXT   PRIMARY KEY,
    worker_id    TEXT   NOT NULL,
    protocol     INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);
CREATE INDEX remote_sessions_worker ON remote_sessions (worker_id);

-- Content-addressed blobs per account.
CREATE TABLE artifacts (
    account    TEXT   NOT NULL,
    sha256     TEXT   NOT NULL,
    size       INTEGER NOT NULL,
    bytes      BLOB  NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account, sha256)
);

-- An item's inputs (attached at enqueue, fence 0) and the outputs each attempt recorded
-- with its completion; deleted with the item.
CREATE TABLE item_artifacts (
    item_id INTEGER NOT NULL,
    fence   INTEGER NOT NULL,
    role    TEXT   NOT NULL CHECK (role IN ('input', 'output')),
    name    TEXT   NOT NULL,
    sha256  TEXT   NOT NULL,
    size    INTEGER NOT NULL,
    PRIMARY KEY (item_id, role, fence, name)
);
CREATE INDEX item_artifacts_digest ON item_artifacts (sha256);
