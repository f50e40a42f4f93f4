//! The contract every backend implements: the object-safe [`Backend`] trait and the types
//! its methods take and return.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::StoreResult;
use crate::item::{
    ArtifactRef, AttemptRecord, Claimed, EffectRecord, EffectStart, Enqueued, Finish, Held, ItemId,
    ItemRecord, ItemState, ListFilter, NewItem, OutboxStats, WorkerRecord, WorkerState,
};
use crate::outbox::Tx;
use crate::time::Timestamp;

/// A boxed, sendable future: what the object-safe [`Backend`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A producer's transaction body, run by [`Backend::transaction`].
pub type TxBody = Box<dyn FnOnce(&mut Tx<'_>) -> StoreResult<()> + Send>;

/// A claim request: up to `n` due items of `lane` (of `kinds` only, when given), leased
/// to `owner` until `lease_until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    pub lane: String,
    pub n: usize,
    pub owner: String,
    pub lease_until: Timestamp,
    /// Only items of these kinds (a remote worker's enrolled kinds); every kind when `None`.
    pub kinds: Option<Vec<String>>,
    /// Only items of this account (a remote worker's); every account when `None`.
    pub account: Option<String>,
    /// Each claimed item's inputs in [`Claimed::inputs`], read by the claim itself (one
    /// statement on PostgreSQL, one transaction on SQLite), not by a second call.
    pub with_inputs: bool,
    /// The remote session (its token's SHA-256) the claim is made under, when the caller
    /// trusted what it knew of it without a look-up: the claim takes nothing unless that
    /// session is live and its worker not revoked, checked in the claim's own statement.
    pub session: Option<String>,
}

/// Items per (lane, kind, state), from the counters every transition keeps: what `stats`,
/// `kind_counts` and the dashboard read instead of counting the table.
pub type Counts = Vec<(String, String, ItemState, u64)>;

/// A storage backend. Every method that changes a claimed item checks, row by row, the
/// fence, the owner, the `running` state and an unexpired lease, and changes nothing
/// otherwise.
pub trait Backend: Send + Sync + fmt::Debug {
    /// `sqlite`, `memory`, `postgres`.
    fn name(&self) -> &'static str;
    /// The schema the queue's tables live in, on PostgreSQL.
    fn postgres_schema(&self) -> Option<&str> {
        None
    }
    /// Applies the migrations not applied yet; returns the schema version now in force.
    fn migrate(&self) -> BoxFuture<'_, StoreResult<i64>>;
    /// The schema version in force (0 for a new database).
    fn schema_version(&self) -> BoxFuture<'_, StoreResult<i64>>;
    /// Inserts `items` in one transaction, each under a fresh id (ids are never reused); an
    /// item whose (kind, dedupe key) a live item holds is not inserted and yields that
    /// item's id, marked a duplicate.
    fn enqueue_many(
        &self,
        items: Vec<NewItem>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Enqueued>>>;
    /// Atomically takes up to `n` due items, sets the lease and increments each fence.
    fn claim(&self, req: ClaimRequest, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<Claimed>>>;
    /// Renews the lease to `lease_until`; returns the stored `lease_expires_at`.
    fn heartbeat(
        &self,
        held: Held,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Timestamp>>;
    /// Stores `state` as the item's checkpoint.
    fn checkpoint(
        &self,
        held: Held,
        state: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// Applies every finish in one write transaction; one result per finish, in order.
    fn finish_many(
        &self,
        batch: std::sync::Arc<[Finish]>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<StoreResult<()>>>>;
    /// Returns running items whose lease expired to available (dead when out of attempts).
    fn sweep(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>>;
    /// Makes a dead item available again with fresh attempts.
    fn retry(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>>;
    /// Retries every dead item (of `kind`, when given; of the first `limit` dead by id, when
    /// given); returns how many.
    fn retry_all_dead(
        &self,
        kind: Option<String>,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// Deletes a dead item.
    fn discard(&self, id: ItemId) -> BoxFuture<'_, StoreResult<()>>;
    /// Makes every item parked on `signal` available; returns how many.
    fn signal(
        &self,
        signal: String,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// One item.
    fn get(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Option<ItemRecord>>>;
    /// Items matching `filter`, by id.
    fn list(&self, filter: ListFilter) -> BoxFuture<'_, StoreResult<Vec<ItemRecord>>>;
    /// The recorded output of effect `key` of item `id`, if recorded.
    fn effect(&self, id: ItemId, key: String) -> BoxFuture<'_, StoreResult<Option<Value>>>;
    /// Before an effect runs, in one transaction: its recorded output, or (when it is not
    /// recorded) the check that `held` still holds a live lease, renewed to `lease_until`.
    /// A holder whose lease is gone gets `StaleLease` and must not run the effect.
    fn begin_effect(
        &self,
        held: Held,
        key: String,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<EffectStart>>;
    /// Records effect `key` (fenced: only the current holder records). Recording a key that
    /// is already recorded changes nothing and succeeds.
    fn record_effect(
        &self,
        held: Held,
        key: String,
        output: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// The ended attempts of item `id`, oldest first.
    fn attempts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<AttemptRecord>>>;
    /// The store's own id, minted once when its schema was made.
    fn store_id(&self) -> BoxFuture<'_, StoreResult<String>>;
    /// Runs `body` in one write transaction of this store; commits when it returns Ok.
    fn transaction(&self, body: TxBody, now: Timestamp) -> BoxFuture<'_, StoreResult<()>>;
    /// Turns up to `limit` unrelayed outbox rows into items whose id is the row id; returns
    /// how many rows it relayed. A row whose (kind, dedupe key) a live item holds is relayed
    /// as that duplicate. A row whose id another item already has is never dropped: it
    /// stays unrelayed with its `relay_error` set (and is no longer picked), and is counted
    /// in [`RelayReport::refused`].
    fn relay_outbox(&self, limit: usize, now: Timestamp)
    -> BoxFuture<'_, StoreResult<RelayReport>>;
    /// Marks OFFLINE every worker not OFFLINE whose row was last seen three of its leases
    /// before `now`; returns their ids.
    fn mark_silent_workers(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>>;
    /// Deletes up to `limit` outbox rows relayed before `before`, and OFFLINE worker rows
    /// last seen before it (retention); returns (outbox rows, workers) deleted.
    fn purge_retained(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<(u64, u64)>>;
    /// Inserts or replaces a worker row.
    fn put_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// A loop's presence: inserts the row when missing, else updates its lanes, lease and
    /// `last_seen_at` and makes it ONLINE, but never overwrites an operator's DRAINING (nor a
    /// remote worker's UPGRADE_REQUIRED).
    /// Returns the state the row has after the call (DRAINING: the loop is to drain).
    fn touch_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<WorkerState>>;
    /// An operator's drain: marks worker `id` DRAINING unless it is OFFLINE; returns
    /// whether a row changed (false for an unknown or offline worker).
    fn drain_worker(&self, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// Every worker row, by id.
    fn workers(&self) -> BoxFuture<'_, StoreResult<Vec<WorkerRecord>>>;
    /// Deletes up to `limit` completed items last updated before `before`, with their
    /// effects (retention); returns how many items it deleted.
    fn purge_completed(&self, before: Timestamp, limit: usize) -> BoxFuture<'_, StoreResult<u64>>;
    /// Every recorded effect of item `id`, by key.
    fn effects(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<EffectRecord>>>;
    /// Cancels a live item (available, running, failed or parked): it goes dead with
    /// `last_error` saying so, and its holder's fence no longer matches a running item, so
    /// nothing it writes lands. [`StoreError::WrongState`] for a completed or dead item.
    ///
    /// [`StoreError::WrongState`]: crate::StoreError::WrongState
    fn cancel(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>>;
    /// Returns every item `owner` holds to available now (its attempts stay spent), and
    /// marks the worker OFFLINE: for a worker known dead, instead of waiting for its leases.
    fn release_worker(&self, owner: String, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>>;
    /// The outbox's backlog.
    fn outbox_stats(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<OutboxStats>>;
    /// Items per (lane, kind, state), sorted, from the maintained counters (zero rows left
    /// out).
    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>>;
    /// Folds counter deltas into the counters (the sweeper's; a no-op where there are none).
    fn fold_counts(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
    /// The oldest item of each (lane, state) present in `counts` (for `available`, the
    /// earliest due one; for `completed`, the earliest finished), and the available items
    /// of each lane not due yet: read through indexes, never by counting the table.
    fn ages(
        &self,
        lanes: Vec<String>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<crate::store::LaneAges>>>;
    /// A backend for the lease keeper's own thread and runtime (one whose connections are
    /// driven there, so handlers that never yield cannot starve a heartbeat); `None`: this
    /// one serves it (nothing of it is tied to a runtime).
    fn lease_backend(&self) -> Option<Arc<dyn Backend>> {
        None
    }
    /// The coordinator's tables, where this backend owns a database (memory, SQLite,
    /// PostgreSQL); `None` for one that does not (a remote worker's).
    fn coordinator(&self) -> Option<&dyn super::coordinator::CoordinatorStore> {
        None
    }
    /// The dashboard's tables, where this backend owns a database; `None` otherwise.
    fn dashboard(&self) -> Option<&dyn super::dashboard::DashboardStore> {
        None
    }
    /// The bytes of artifact `sha256` of `account` (an input of a job this worker holds), read
    /// no further than `limit` bytes (a longer answer is returned cut at `limit + 1`, which
    /// the caller sees is not the size it named); `None` when it is not stored. By default
    /// from the coordinator's tables of a store that owns them.
    fn fetch_artifact(
        &self,
        account: String,
        sha256: String,
        limit: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>> {
        let _ = limit;
        Box::pin(async move { artifact_tables(self)?.get_artifact(account, sha256).await })
    }
    /// Stores `bytes` (whose digest and size `output` names) as output `output.name` of
    /// `held`'s attempt. By default stored and recorded with the attempt at once (fenced and
    /// owner-checked); the remote store uploads it, checks the coordinator's answer, and
    /// names it with the completion.
    fn put_output(
        &self,
        held: Held,
        account: String,
        output: ArtifactRef,
        bytes: Vec<u8>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let c = artifact_tables(self)?;
            c.put_artifact(account.clone(), output.sha256.clone(), bytes, now)
                .await?;
            c.record_outputs(held, account, vec![(output.name, output.sha256)], now)
                .await
        })
    }
    /// The inputs of item `id`, for a claim that did not carry them (a local loop's).
    fn item_inputs(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<ArtifactRef>>> {
        Box::pin(async move {
            let Some(c) = self.coordinator() else {
                return Ok(Vec::new());
            };
            Ok(c.item_artifacts(id)
                .await?
                .into_iter()
                .filter(|a| a.role == super::coordinator::ArtifactRole::Input)
                .map(|a| a.artifact)
                .collect())
        })
    }
    /// The worker side of a remote backend; `None` for one that owns its database.
    fn remote(&self) -> Option<&dyn RemoteSide> {
        None
    }
    /// Resolves when items may have become claimable on `lane`, or after `max` at the
    /// latest. Backends without wake-ups (SQLite, memory) just wait `max`: the poll.
    fn wait_for_work(&self, lane: String, max: Duration) -> BoxFuture<'_, ()> {
        let _ = lane;
        Box::pin(tokio::time::sleep(max))
    }
}

/// The tables a backend keeps artifacts in; `Unsupported` for one that keeps none.
fn artifact_tables<B: Backend + ?Sized>(
    backend: &B,
) -> StoreResult<&dyn super::coordinator::CoordinatorStore> {
    backend.coordinator().ok_or_else(|| {
        crate::error::StoreError::Unsupported(format!(
            "the {} store keeps no artifacts",
            backend.name()
        ))
    })
}

/// What a remote backend (a worker over the coordinator) adds: the identity the coordinator
/// gave it, and what the coordinator says of it (drain, upgrade, revocation).
pub trait RemoteSide: Send + Sync {
    /// The worker id the coordinator minted at enrollment: the loop's identity.
    fn worker_id(&self) -> &str;
    /// The worker's own state directory (its jobs' workspaces live under it).
    fn state_dir(&self) -> &std::path::Path;
    /// Resolves when the coordinator's word on this worker changes.
    fn notice(&self) -> BoxFuture<'_, ()>;
    /// ONLINE, DRAINING (an operator's drain, heard), or the error that stops the worker
    /// ([`StoreError::Revoked`]: at once; [`StoreError::UpgradeRequired`]: after its jobs).
    ///
    /// [`StoreError::Revoked`]: crate::StoreError::Revoked
    /// [`StoreError::UpgradeRequired`]: crate::StoreError::UpgradeRequired
    fn standing(&self) -> StoreResult<WorkerState>;
}

/// What one relay pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayReport {
    /// Rows turned into items (or found to be duplicates of live items).
    pub relayed: u64,
    /// Rows left unrelayed because their id is another item's: (row id, reason).
    pub refused: Vec<(ItemId, String)>,
}
