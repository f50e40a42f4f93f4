-- scaffold-runtime schema, version 6 (PostgreSQL): the dashboard's operators (README.md#the-dashboard).
-- Tokens are stored as their SHA-256 (hex), never as themselves.

-- Named operators (`scaffold queue operator add NAME`): one sign-in token each.
CREATE TABLE operators (
    name         TEXT    PRIMARY KEY,
    token_sha256 TEXT    NOT NULL UNIQUE,
    created_at   BIGINT  NOT NULL
);

-- Signed-in browsers: the cookie's token, by its SHA-256; removing the operator ends them.
CREATE TABLE operator_sessions (
    token_sha256 TEXT    PRIMARY KEY,
    operator     TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator);

-- Every action an operator took, with what it changed (shown on an item's page).
CREATE TABLE operator_actions (
    id       BIGSERIAL PRIMARY KEY,
    at       BIGINT  NOT NULL,
    operator TEXT    NOT NULL,
    action   TEXT    NOT NULL,
    item_id  BIGINT,
    target   TEXT,
    changed  BIGINT  NOT NULL,
    detail   TEXT    NOT NULL
);
CREATE INDEX operator_actions_item ON operator_actions (item_id) WHERE item_id IS NOT NULL;

-- The dashboard's failures per minute: attempts by when they ended (only attempts that did
-- not complete have a row, so the drain's completions write nothing to it).
CREATE INDEX work_attempts_finished ON work_attempts (finished_at);
