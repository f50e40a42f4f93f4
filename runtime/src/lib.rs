//! scaffold-runtime: the work queue generated workers run on.
//!
//! Kinds and lanes, leases with fencing tokens, heartbeats scheduled from the renewed lease,
//! retries with backoff and jitter, dead letters, dedupe, checkpoints, a transactional
//! outbox relay, orchestration steps that park and resume, graceful drain, and queue depth
//! and lag per lane. Embedded default: SQLite (one file, zero setup); the in-memory twin runs
//! the same semantics for tests (see docs/reference.md#the-work-queue-scaffold-runtime).
//!
//! Cargo features `sqlite` and `postgres` (both default) build the two database backends;
//! with neither, the crate is the work loop, the memory backend and the types (how a
//! remote worker, which holds no database credentials, links it).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use scaffold_runtime::{NewItem, Store};
//! let store = Store::open("sqlite://.scaffold/queue.db").await?;
//! store.migrate().await?;
//! let id = store
//!     .enqueue(NewItem::new("NOTIFY_SHIPMENT", serde_json::json!({"shipment_id": "s-1"}))
//!         .lane("default")
//!         .dedupe_key("s-1"))
//!     .await?;
//! # let _ = id; Ok(()) }
//! ```

/// The SQLite binding the store uses, for producers that open their own connection and
/// write outbox rows with [`Tx::sqlite`].
#[cfg(feature = "sqlite")]
pub use rusqlite;
/// The PostgreSQL driver the store uses, for producers writing outbox rows in their own
/// transaction ([`Store::enqueue_in_postgres`]) and workers with tables of their own
/// ([`store::postgres::connect_client`]).
#[cfg(feature = "postgres")]
pub use tokio_postgres;

pub mod artifacts;
pub mod bench;
#[cfg(any(feature = "postgres", feature = "coordinator"))]
mod cert_check;
pub mod context;
#[cfg(feature = "coordinator")]
pub mod coordinator;
#[cfg(feature = "dashboard")]
pub mod dashboard;
pub mod error;
pub mod handler;
pub mod item;
pub mod metrics;
pub mod outbox;
#[cfg(any(feature = "coordinator", feature = "remote"))]
pub mod protocol;
pub mod resources;
pub mod retry;
pub mod sanitize;
pub mod spec;
pub mod store;
pub mod testing;
pub mod time;
pub mod work_loop;

pub use context::{Effect, WorkContext};
pub use error::{BuildError, StoreError, WorkError};
pub use handler::WorkHandler;
pub use item::{
    ArtifactRef, AttemptRecord, ClaimOrigin, Claimed, DEFAULT_ACCOUNT, DEFAULT_LANE, EffectRecord,
    EffectStart, Enqueued, Fence, Finish, Held, Item, ItemId, ItemRecord, ItemState, LaneStats,
    ListFilter, NewItem, OutboxStats, Outcome, StateStats, WorkerRecord, WorkerState,
};
pub use outbox::{Relay, Tx};
pub use resources::{Needs, ResourceError, Resources};
pub use retry::RetryPolicy;
pub use spec::{OrchestrationKindSpec, OrchestrationRegistry, Registry, WorkKindSpec};
pub use store::{Backend, Store};
pub use time::{Clock, DatabaseClock, ManualClock, MonotonicClock, SystemClock, Timestamp};
pub use work_loop::{LoopEvent, LoopState, WorkLoop, WorkLoopBuilder, shutdown_signal};
