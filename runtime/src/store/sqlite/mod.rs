//! The SQLite backend: one connection per process behind a mutex, every write in a
//! `BEGIN IMMEDIATE` transaction (a deferred transaction that upgrades to a writer can fail
//! with `SQLITE_BUSY_SNAPSHOT` whatever the busy timeout), calls run on tokio's blocking pool.
//! Many processes may share one file: SQLite serialises their writers, and every fenced
//! update re-checks fence, state and lease in its `WHERE` clause.

mod coordinator;
mod dashboard;
mod ops;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use serde_json::Value;

pub use schema::LATEST_VERSION;

use crate::error::StoreError;
use crate::item::{
    AttemptRecord, Claimed, EffectRecord, EffectStart, Enqueued, Finish, Held, ItemId, ItemRecord,
    ListFilter, NewItem, OutboxStats, WorkerRecord, WorkerState,
};
use crate::store::{
    Backend, BoxFuture, ClaimRequest, Counts, LaneAges, RelayReport, StoreResult, TxBody,
};
use crate::time::Timestamp;

/// The SQLite backend (`sqlite://PATH`).
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl SqliteBackend {
    /// Opens the file at `path`; see [`crate::Store::open`].
    pub async fn open(path: &Path) -> StoreResult<Self> {
        let owned = path.to_owned();
        let conn = tokio::task::spawn_blocking(move || schema::open(&owned))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))??;
        Ok(SqliteBackend {
            conn: Arc::new(Mutex::new(conn)),
            path: path.to_owned(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn run<T, F>(&self, f: F) -> BoxFuture<'_, StoreResult<T>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                f(&mut guard)
            })
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?
        })
    }
}

impl Backend for SqliteBackend {
    fn coordinator(&self) -> Option<&dyn crate::store::coordinator::CoordinatorStore> {
        Some(self)
    }

    fn dashboard(&self) -> Option<&dyn crate::store::dashboard::DashboardStore> {
        Some(self)
    }

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn migrate(&self) -> BoxFuture<'_, StoreResult<i64>> {
        self.run(schema::migrate)
    }

    fn schema_version(&self) -> BoxFuture<'_, StoreResult<i64>> {
        self.run(|c| Ok(schema::version(c)?))
    }

    fn enqueue_many(
        &self,
        items: Vec<NewItem>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Enqueued>>> {
        self.run(move |c| ops::enqueue_many(c, &items, now))
    }

    fn claim(&self, req: ClaimRequest, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<Claimed>>> {
        self.run(move |c| ops::claim(c, &req, now))
    }

    fn heartbeat(
        &self,
        held: Held,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Timestamp>> {
        self.run(move |c| ops::heartbeat(c, &held, lease_until, now))
    }

    fn checkpoint(
        &self,
        held: Held,
        state: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::checkpoint(c, &held, &state, now))
    }

    fn finish_many(
        &self,
        batch: std::sync::Arc<[Finish]>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<StoreResult<()>>>> {
        self.run(move |c| ops::finish_many(c, &batch, now))
    }

    fn sweep(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| ops::sweep(c, now))
    }

    fn retry(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::retry(c, id, now))
    }

    fn retry_all_dead(
        &self,
        kind: Option<String>,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| ops::retry_all_dead(c, kind.as_deref(), limit, now))
    }

    fn purge_completed(&self, before: Timestamp, limit: usize) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| ops::purge_completed(c, before, limit))
    }

    fn discard(&self, id: ItemId) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::discard(c, id))
    }

    fn signal(
        &self,
        signal: String,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| ops::signal(c, &signal, limit, now))
    }

    fn get(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Option<ItemRecord>>> {
        self.run(move |c| ops::get(c, id))
    }

    fn list(&self, filter: ListFilter) -> BoxFuture<'_, StoreResult<Vec<ItemRecord>>> {
        self.run(move |c| ops::list(c, &filter))
    }

    fn effect(&self, id: ItemId, key: String) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        self.run(move |c| ops::effect(c, id, &key))
    }

    fn begin_effect(
        &self,
        held: Held,
        key: String,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<EffectStart>> {
        self.run(move |c| ops::begin_effect(c, &held, &key, lease_until, now))
    }

    fn record_effect(
        &self,
        held: Held,
        key: String,
        output: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::record_effect(c, &held, &key, &output, now))
    }

    fn attempts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<AttemptRecord>>> {
        self.run(move |c| ops::attempts(c, id))
    }

    fn store_id(&self) -> BoxFuture<'_, StoreResult<String>> {
        self.run(ops::store_id)
    }

    fn transaction(&self, body: TxBody, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::transaction(c, body, now))
    }

    fn relay_outbox(
        &self,
        limit: usize,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<RelayReport>> {
        self.run(move |c| ops::relay_outbox(c, limit, now))
    }

    fn mark_silent_workers(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run(move |c| ops::mark_silent_workers(c, now))
    }

    fn effects(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<EffectRecord>>> {
        self.run(move |c| ops::effects(c, id))
    }

    fn cancel(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::cancel(c, id, now))
    }

    fn release_worker(&self, owner: String, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| ops::release_worker(c, &owner, now))
    }

    fn outbox_stats(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<OutboxStats>> {
        self.run(move |c| ops::outbox_stats(c, now))
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        self.run(ops::counts)
    }

    fn ages(
        &self,
        lanes: Vec<String>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<LaneAges>>> {
        self.run(move |c| ops::ages(c, &lanes, now))
    }

    fn purge_retained(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<(u64, u64)>> {
        self.run(move |c| ops::purge_retained(c, before, limit))
    }

    fn put_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| ops::put_worker(c, &worker))
    }

    fn touch_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<WorkerState>> {
        self.run(move |c| ops::touch_worker(c, &worker))
    }

    fn drain_worker(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| ops::drain_worker(c, &id))
    }

    fn workers(&self) -> BoxFuture<'_, StoreResult<Vec<WorkerRecord>>> {
        self.run(ops::workers)
    }
}
