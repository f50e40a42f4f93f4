//! The runtime's errors: what the store refuses ([`StoreError`]), how a handler fails
//! ([`WorkError`]), and what a work loop refuses at build ([`BuildError`]).

use std::path::PathBuf;

use crate::item::{Fence, ItemId, ItemState};
use crate::time::Timestamp;

/// What the store refuses or fails at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The fence presented is not the current one, or the lease has expired, or the item is
    /// no longer running. Nothing was changed.
    #[error("stale lease on item {id}: fence {fence} is not current or its lease has expired")]
    StaleLease { id: ItemId, fence: Fence },
    #[error("no work item with id {0}")]
    NotFound(ItemId),
    #[error("item {id} is {state}, expected {expected}")]
    WrongState {
        id: ItemId,
        state: ItemState,
        expected: &'static str,
    },
    #[error("`{url}` is not a queue URL (expected sqlite://PATH, postgres://… or memory://)")]
    InvalidUrl { url: String },
    #[error("{} is not a SQLite database; it was left untouched", path.display())]
    NotADatabase { path: PathBuf },
    #[error(
        "the queue database has schema version {found}, newer than this runtime knows ({supported}); upgrade scaffold"
    )]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("the queue database is not migrated (schema version {found}, need {required})")]
    NotMigrated { found: i64, required: i64 },
    #[error("cannot write the queue database at {}: {source}", path.display())]
    Unwritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the folder of the queue database {} does not exist ({}); create it, or fix the URL",
        path.display(),
        dir.display()
    )]
    MissingDirectory { path: PathBuf, dir: PathBuf },
    #[error("the SQLite backend failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the PostgreSQL backend failed: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("no PostgreSQL connection could be had: {0}")]
    PostgresPool(#[from] deadpool_postgres::PoolError),
    #[error("a JSON value could not be encoded or decoded: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a store task stopped unexpectedly: {0}")]
    Task(String),
    /// An operation of one backend asked of a store on another.
    #[error("`{operation}` needs a {needs} store; this one is {backend}")]
    WrongBackend {
        operation: &'static str,
        needs: &'static str,
        backend: &'static str,
    },
}

impl StoreError {
    /// Whether this is [`StoreError::StaleLease`].
    pub fn is_stale_lease(&self) -> bool {
        matches!(self, StoreError::StaleLease { .. })
    }
}

/// How a handler fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkError {
    /// Worth retrying: retried with exponential backoff and jitter until `max_attempts`,
    /// then dead.
    #[error("transient: {0}")]
    Transient(String),
    /// Not worth retrying: dead at once.
    #[error("permanent: {0}")]
    Permanent(String),
    /// Not a failure: the orchestration waits until `until` or for `signal`.
    #[error("parked")]
    Park {
        until: Option<Timestamp>,
        signal: Option<String>,
    },
    /// A store call from the handler failed; a stale lease here means the item was lost.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl WorkError {
    /// A transient error with `msg`.
    pub fn transient(msg: impl std::fmt::Display) -> Self {
        WorkError::Transient(msg.to_string())
    }

    /// A permanent error with `msg`.
    pub fn permanent(msg: impl std::fmt::Display) -> Self {
        WorkError::Permanent(msg.to_string())
    }

    /// Park until `when`.
    pub fn park_until(when: Timestamp) -> Self {
        WorkError::Park {
            until: Some(when),
            signal: None,
        }
    }

    /// Park until `signal` is sent with [`crate::Store::signal`].
    pub fn park_for_signal(signal: impl Into<String>) -> Self {
        WorkError::Park {
            until: None,
            signal: Some(signal.into()),
        }
    }
}

/// What [`crate::WorkLoopBuilder::build`] refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    #[error("handler for kind `{kind}`, which the registry does not hold")]
    UnknownKind { kind: String },
    #[error(
        "kind `{kind}` is registered on lane `{lane}`, which this loop serves, but has no handler"
    )]
    MissingHandler { kind: String, lane: String },
    #[error(
        "the handler for `{kind}` requires {requires:?}, which does not include the permission `{permission}` its spec names"
    )]
    PermissionNotGranted {
        kind: String,
        permission: String,
        requires: Vec<String>,
    },
    #[error("two handlers for kind `{kind}`")]
    DuplicateHandler { kind: String },
    #[error("kind `{kind}` is registered twice")]
    DuplicateKind { kind: String },
    #[error("concurrency must be at least 1")]
    ZeroConcurrency,
}
