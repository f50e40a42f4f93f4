//! What `scaffold queue` refuses: every error names what was wrong and how to fix it, and
//! exits 2.

use std::path::PathBuf;

use miette::Diagnostic;
use scaffold_runtime::{ItemState, StoreError};
use thiserror::Error;

#[derive(Debug, Error, Diagnostic)]
pub enum QueueError {
    #[error("cannot use {} as the working directory", path.display())]
    #[diagnostic(code(scaffold::queue::chdir), help("pass an existing directory to -C"))]
    Chdir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{url}` is not a queue database URL")]
    #[diagnostic(
        code(scaffold::queue::url),
        help(
            "use sqlite://PATH (relative to the working directory), postgres://USER@HOST:PORT/DB[?schema=NAME] or memory://"
        )
    )]
    InvalidUrl { url: String },
    #[error(
        "the queue URL `{url}` has a bad `{parameter}`{}",
        value.as_deref().map(|v| format!(" ({v:?})")).unwrap_or_default()
    )]
    #[diagnostic(
        code(scaffold::queue::url_parameter),
        help("`{parameter}` takes {allowed}")
    )]
    UrlParameter {
        url: String,
        parameter: String,
        value: Option<String>,
        allowed: String,
    },
    #[error("refused the queue database's path")]
    #[diagnostic(
        code(scaffold::queue::refused),
        help("point --database at a real file, or remove the symlink; nothing was written")
    )]
    Refused {
        #[source]
        reason: crate::repo::inside::Refusal,
    },
    #[error("there is no queue database at {}", path.display())]
    #[diagnostic(
        code(scaffold::queue::no_database),
        help("create it with `scaffold queue migrate`, or point --database at an existing one")
    )]
    NoDatabase { path: PathBuf },
    #[error("{} is not a SQLite database; it was left untouched", path.display())]
    #[diagnostic(
        code(scaffold::queue::not_a_database),
        help("point --database at a queue database, or at a path where a new one may be created")
    )]
    NotADatabase { path: PathBuf },
    #[error("the queue database has schema version {found}; this scaffold knows up to {supported}")]
    #[diagnostic(
        code(scaffold::queue::schema_too_new),
        help("a newer scaffold migrated this database; upgrade scaffold to use it")
    )]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("the queue database is not migrated (schema version {found}, need {required})")]
    #[diagnostic(
        code(scaffold::queue::not_migrated),
        help("run `scaffold queue migrate`")
    )]
    NotMigrated { found: i64, required: i64 },
    #[error("cannot create or write the queue database at {}", path.display())]
    #[diagnostic(
        code(scaffold::queue::unwritable),
        help("check that the folder exists or can be created, and that it is writable")
    )]
    Unwritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no work item with id {id}")]
    #[diagnostic(
        code(scaffold::queue::not_found),
        help("`scaffold queue list` shows the items")
    )]
    NotFound { id: i64 },
    #[error("item {id} is {state}; only dead items can be {action}")]
    #[diagnostic(
        code(scaffold::queue::not_dead),
        help("`scaffold queue list --state dead` shows the dead items")
    )]
    NotDead {
        id: i64,
        state: ItemState,
        action: &'static str,
    },
    #[error("the payload is not valid JSON")]
    #[diagnostic(
        code(scaffold::queue::payload),
        help("pass a JSON value, e.g. --payload '{{\"shipment_id\": \"s-1\"}}'")
    )]
    MalformedPayload {
        #[source]
        source: serde_json::Error,
    },
    #[error("`{kind}` is not a work kind name: {reason}")]
    #[diagnostic(
        code(scaffold::queue::kind_syntax),
        help(
            "kinds are upper-case letters, digits and single underscores, starting with a letter, at most 64 characters (e.g. `NOTIFY_SHIPMENT`): the rule `scaffold worker` holds a new kind to"
        )
    )]
    InvalidKind { kind: String, reason: String },
    #[error("unknown kind `{kind}`: the repository's om/ registers no such kind")]
    #[diagnostic(
        code(scaffold::queue::unknown_kind),
        help("registered kinds: {registered}")
    )]
    UnknownKind { kind: String, registered: String },
    #[error("cannot read the kinds the repository registers: {reason}")]
    #[diagnostic(
        code(scaffold::queue::kinds_unreadable),
        help(
            "enqueue checks a kind against om/'s WorkKindSpec literals, and reads only regular files inside the repository; fix that path, or run from outside the repository"
        )
    )]
    KindsUnreadable { reason: String },
    #[error("`{value}` is not a time")]
    #[diagnostic(
        code(scaffold::queue::run_at),
        help(
            "use RFC 3339 (2026-11-30T12:00:00Z), milliseconds since the epoch, or a delay (+30s, +5m, +2h, +1d), between 1970 and the end of 9999"
        )
    )]
    InvalidRunAt { value: String },
    #[error("`{lane}` is not a lane name: {reason}")]
    #[diagnostic(
        code(scaffold::queue::lane_syntax),
        help(
            "lanes are lower-case letters, digits and single hyphens, starting with a letter (e.g. `default`, `bulk`)"
        )
    )]
    InvalidLane { lane: String, reason: String },
    #[error("kind `{kind}` runs on lane `{spec_lane}` ({spec}), not `{lane}`")]
    #[diagnostic(
        code(scaffold::queue::lane_mismatch),
        help(
            "drop --lane (the spec's lane is the default), or change the spec's `lane:` and deploy a worker on it"
        )
    )]
    LaneMismatch {
        kind: String,
        lane: String,
        spec_lane: String,
        spec: String,
    },
    #[error("cannot read the payload file {}", path.display())]
    #[diagnostic(
        code(scaffold::queue::payload_file),
        help(
            "--payload @FILE reads FILE (relative to the working directory); pass the JSON itself otherwise"
        )
    )]
    PayloadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the payload is larger than {} MiB", limit >> 20)]
    #[diagnostic(
        code(scaffold::payload_too_large),
        help(
            "a payload is the item's parameters; put large inputs where the handler reads them and pass their names"
        )
    )]
    PayloadTooLarge { limit: u64 },
    #[error(
        "item {id} is {state}; only a live item (available, running, failed, parked) can be cancelled"
    )]
    #[diagnostic(
        code(scaffold::queue::not_live),
        help("`scaffold queue show {id}` shows the item")
    )]
    NotLive { id: i64, state: ItemState },
    #[error("no worker `{worker}` in the queue's workers")]
    #[diagnostic(
        code(scaffold::queue::unknown_worker),
        help("`scaffold queue workers` lists them")
    )]
    UnknownWorker { worker: String },
    #[error("worker `{worker}` is OFFLINE: there is no loop to drain")]
    #[diagnostic(
        code(scaffold::queue::worker_offline),
        help(
            "a worker that died leaves its items until their leases run out; `scaffold queue release {worker}` returns them now"
        )
    )]
    WorkerOffline { worker: String },
    #[error(
        "worker `{worker}` is {state} and heartbeated {silent_ms} ms ago, within its lease: it may still be running its items"
    )]
    #[diagnostic(
        code(scaffold::queue::worker_alive),
        help(
            "stop the worker first (its drain releases its items), wait until it has been silent for a lease, or pass --force if you know it is gone"
        )
    )]
    WorkerAlive {
        worker: String,
        state: &'static str,
        silent_ms: u64,
    },
    #[error("`{state}` is not an item state")]
    #[diagnostic(
        code(scaffold::queue::state),
        help("states: available, running, completed, failed, dead, parked")
    )]
    InvalidState { state: String },
    #[error("the coordinator cannot start")]
    #[diagnostic(
        code(scaffold::queue::serve),
        help(
            "serve TLS with --tls-cert, --tls-key and --public-url, or plain HTTP on a loopback address with --insecure-loopback"
        )
    )]
    Serve(#[source] scaffold_runtime::coordinator::CoordinatorError),
    #[error("the dashboard cannot start")]
    #[diagnostic(
        code(scaffold::queue::dashboard),
        help(
            "give --dashboard a loopback address (127.0.0.1:PORT; reach it through an SSH tunnel or a TLS proxy with --dashboard-public-url), or serve TLS"
        )
    )]
    Dashboard(#[source] scaffold_runtime::dashboard::DashboardError),
    #[error("an operator named `{name}` exists already")]
    #[diagnostic(
        code(scaffold::queue::operator_exists),
        help(
            "`scaffold queue operator remove {name}` first to give it a new token (its sessions end)"
        )
    )]
    OperatorExists { name: String },
    #[error("no operator is named `{name}`")]
    #[diagnostic(
        code(scaffold::queue::unknown_operator),
        help("`scaffold queue operator list` lists them")
    )]
    UnknownOperator { name: String },
    #[error("`{value}` is not a usable {what}")]
    #[diagnostic(code(scaffold::queue::argument), help("{what} takes {takes}"))]
    BadArgument {
        what: &'static str,
        value: String,
        takes: &'static str,
    },
    #[error("cannot read {}", path.display())]
    #[diagnostic(
        code(scaffold::queue::unreadable),
        help("give a regular file of at most 64 MiB")
    )]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}", path.display())]
    #[diagnostic(
        code(scaffold::queue::file_exists),
        help(
            "name a file that does not exist yet: a token or an artifact is never written over another file"
        )
    )]
    CannotCreate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no artifact {sha256} is stored for account `{account}`")]
    #[diagnostic(
        code(scaffold::queue::no_artifact),
        help("`scaffold queue show <id>` lists an item's artifacts with their accounts' digests")
    )]
    NoArtifact { account: String, sha256: String },
    #[error("no enrolled worker has the id or name `{who}`")]
    #[diagnostic(
        code(scaffold::queue::unknown_remote_worker),
        help("`scaffold queue workers` lists the workers; a revoked one is revoked already")
    )]
    UnknownRemoteWorker { who: String },
    #[error("the queue store failed")]
    #[diagnostic(code(scaffold::queue::store))]
    Store(#[source] StoreError),
    #[error("cannot start the async runtime")]
    #[diagnostic(code(scaffold::queue::runtime))]
    Runtime(#[source] std::io::Error),
    #[error("cannot write output")]
    #[diagnostic(code(scaffold::queue::io))]
    Output(#[source] std::io::Error),
}

impl From<StoreError> for QueueError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::InvalidUrl { url } => QueueError::InvalidUrl { url },
            StoreError::UrlParameter {
                url,
                parameter,
                value,
                allowed,
            } => QueueError::UrlParameter {
                url,
                parameter,
                value,
                allowed,
            },
            StoreError::NotADatabase { path } => QueueError::NotADatabase { path },
            StoreError::SchemaTooNew { found, supported } => {
                QueueError::SchemaTooNew { found, supported }
            }
            StoreError::NotMigrated { found, required } => {
                QueueError::NotMigrated { found, required }
            }
            StoreError::Unwritable { path, source } => QueueError::Unwritable { path, source },
            StoreError::NotFound(id) => QueueError::NotFound { id },
            other => QueueError::Store(other),
        }
    }
}
