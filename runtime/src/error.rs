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
    /// A parameter of the queue URL has a value the queue cannot use (`url` without its
    /// password; `value` only where it cannot be secret).
    #[error(
        "the queue URL `{url}` has a bad `{parameter}`{}: {parameter} takes {allowed}",
        value.as_deref().map(|v| format!(" ({v:?})")).unwrap_or_default()
    )]
    UrlParameter {
        url: String,
        parameter: String,
        value: Option<String>,
        allowed: String,
    },
    /// The URL names a backend this build of the runtime leaves out.
    #[error(
        "`{url}` needs the {backend} backend, which this build leaves out (cargo feature `{backend}`)"
    )]
    BackendNotBuilt { url: String, backend: &'static str },
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
    #[cfg(feature = "sqlite")]
    #[error("the SQLite backend failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A statement failed; the message is the server's (or the driver's root cause), said
    /// once rather than as a chain of wrappers.
    #[cfg(feature = "postgres")]
    #[error("the PostgreSQL backend failed: {}", describe_postgres(.0))]
    Postgres(tokio_postgres::Error),
    /// No connection could be opened or had from the pool: `cause` is the server's answer
    /// (`database "x" does not exist`) or the root I/O error. Never the URL (it may hold a
    /// password).
    #[error("cannot connect to PostgreSQL{}: {cause}", target.as_deref().map(|t| format!(" at {t}")).unwrap_or_default())]
    PostgresConnect {
        target: Option<String>,
        cause: String,
    },
    /// The URL's TLS settings cannot be used (an unreadable `sslrootcert`, a verify mode
    /// without one, an unsupported client certificate).
    #[error("PostgreSQL TLS: {message}")]
    PostgresTls { message: String },
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
    /// An artifact an item or a completion names is not stored under the account.
    #[error("artifact {sha256} is not stored for account `{account}`; store it first")]
    ArtifactMissing { account: String, sha256: String },
    /// A park on a signal name no store writes (empty, longer than
    /// [`crate::item::MAX_SIGNAL_LEN`] bytes, or with a control character). Nothing was
    /// changed.
    #[error(
        "cannot park on that signal: its name is {len} bytes; a signal name is 1 to {max} bytes with no control character",
        max = crate::item::MAX_SIGNAL_LEN
    )]
    InvalidSignal { len: usize },
    /// An item asked of a path that cannot carry it (inputs through the outbox), or a
    /// producer's or operator's call asked of a remote worker's store.
    #[error("{0}")]
    Unsupported(String),
    /// The coordinator revoked this worker (`scaffold queue revoke`): it stops at once.
    #[error("the coordinator revoked this worker; it stops (enroll it again to bring it back)")]
    Revoked,
    /// The coordinator speaks none of this worker's protocol versions: it stops claiming,
    /// lets its jobs end, and exits 3.
    #[error(
        "UPGRADE_REQUIRED: the coordinator speaks protocol {min}..={max}, this worker {}..={}; upgrade the worker",
        speaks.0, speaks.1
    )]
    UpgradeRequired {
        min: i64,
        max: i64,
        speaks: (i64, i64),
    },
    /// No answer from the coordinator (no connection, a timeout, a 5xx or 429 past the
    /// retry time).
    #[error("the coordinator at {origin} is unreachable: {cause}")]
    Unreachable { origin: String, cause: String },
    /// The coordinator refused a call as malformed or unauthorized: a bug in this worker
    /// (or a token it was never meant to use), never retried.
    #[error("the coordinator refused {call}: {status} {code}")]
    Refused {
        call: String,
        status: u16,
        code: String,
    },
    /// The remote worker's state directory or a file in it cannot be used.
    #[error("{}: {reason}", path.display())]
    RemoteState { path: PathBuf, reason: String },
    /// The remote worker's TLS settings cannot be used.
    #[error("TLS to the coordinator: {reason}")]
    RemoteTls { reason: String },
    /// The coordinator URL cannot be used.
    #[error("the coordinator URL `{url}` cannot be used: {reason}")]
    InvalidCoordinatorUrl { url: String, reason: String },
}

#[cfg(feature = "postgres")]
impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        StoreError::Postgres(e)
    }
}

#[cfg(feature = "postgres")]
impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        use deadpool_postgres::PoolError;
        let cause = match &e {
            PoolError::Backend(pg) => describe_postgres(pg),
            PoolError::Timeout(_) => "timed out waiting for a connection from the pool".to_owned(),
            other => other.to_string(),
        };
        StoreError::PostgresConnect {
            target: None,
            cause,
        }
    }
}

/// The server's message for a database error, else the driver's message and its root
/// cause: one line, each part once.
#[cfg(feature = "postgres")]
pub(crate) fn describe_postgres(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_owned();
    }
    let top = e.to_string();
    let mut root: Option<&dyn std::error::Error> = None;
    let mut next = std::error::Error::source(e);
    while let Some(s) = next {
        root = Some(s);
        next = s.source();
    }
    match root.map(ToString::to_string) {
        Some(r) if !r.is_empty() && r != top => format!("{top}: {r}"),
        _ => top,
    }
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
    /// This claim's lease is gone (another holder has the item, or an operator cancelled or
    /// released it): the handler stops, and nothing more of it is written.
    #[error("lease lost on item {id} (fence {fence}): another holder has it, or it was cancelled")]
    LeaseLost { id: ItemId, fence: Fence },
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

    /// Park until `signal` is sent with [`crate::Store::signal`]. A signal name is 1 to
    /// [`crate::item::MAX_SIGNAL_LEN`] bytes with no control character; the loop makes an
    /// item parked on another dead at once (no attempt would fix it).
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
    #[error(
        "the handler for `{kind}` takes the resource `{resource}`, which is not registered on the loop (`.resource(…)` or `.resource_with(…)`)"
    )]
    MissingResource {
        kind: String,
        resource: &'static str,
    },
}
