//! The store: one handle ([`Store`]) over a backend ([`Backend`]): SQLite (`sqlite://PATH`)
//! or the in-memory twin (`memory://`); PostgreSQL plugs in as a third.
//!
//! The backend is a trait object rather than an enum: a PostgreSQL backend (a later crate
//! feature, or a crate of its own) then plugs in with `Store::from_backend` without editing a
//! match in every method here, and the conformance suite takes any `Store` alike. To stay
//! object-safe the async methods return boxed futures; one allocation per call is noise next
//! to a database round trip, and calls are batched (claims, completions) where it matters.
//! Backends never read a clock: the [`Store`] passes `now` in, so an injected [`Clock`] moves
//! lease expiry and `run_at` on every backend the same way. On PostgreSQL, where many hosts
//! share one queue, [`Store::open`] reads the server's clock ([`DatabaseClock`]: measured at
//! connect and every 30 s, carried forward on the host's monotonic clock), so a host whose
//! own clock runs ahead does not sweep leases another host still holds.

mod backend;
pub mod coordinator;
pub mod dashboard;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "remote")]
pub mod remote;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod status;
pub mod url;

pub use backend::{Backend, BoxFuture, ClaimRequest, Counts, RelayReport, RemoteSide, TxBody};

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::error::StoreError;
use crate::item::{
    AttemptRecord, Claimed, EffectRecord, EffectStart, Enqueued, Finish, Held, ItemId, ItemRecord,
    ItemState, LaneStats, ListFilter, NewItem, OutboxStats, WorkerRecord, WorkerState,
};
use crate::outbox::Tx;
use crate::time::{Clock, MonotonicClock, SystemClock, Timestamp};

/// How often a store on the database's clock re-measures its offset from the server.
#[cfg(feature = "postgres")]
const CLOCK_RESYNC: Duration = Duration::from_secs(30);

/// The schema version this runtime writes; every backend's migrations end at it.
pub const SCHEMA_VERSION: i64 = 7;

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// The longest lease counted for a worker's silence (every backend caps it alike).
pub(crate) const SILENCE_CAP_MS: i64 = 1_000_000_000_000;

/// Counts by kind then state, from per-(lane, kind, state) counts.
pub(crate) fn kinds_of(counts: &Counts) -> Vec<(String, ItemState, u64)> {
    let mut by_kind: std::collections::BTreeMap<(String, ItemState), u64> = Default::default();
    for (_, kind, state, n) in counts {
        *by_kind.entry((kind.clone(), *state)).or_default() += n;
    }
    by_kind
        .into_iter()
        .map(|((kind, state), n)| (kind, state, n))
        .collect()
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The queue: a cheap, clonable handle over one backend and one clock.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
    /// The store's id, read once ([`Store::store_id`]).
    id: Arc<std::sync::OnceLock<String>>,
}

/// Each lane's oldest item of each state and its scheduled items, as [`Backend::ages`]
/// reads them through indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneAges {
    pub lane: String,
    /// Indexed like [`ItemState::ALL`]: the earliest due `run_at` (available), the earliest
    /// `updated_at` (completed: when the oldest kept one finished), else the earliest
    /// `created_at`; `None` when there is none.
    pub oldest: [Option<Timestamp>; 6],
    /// Available items whose `run_at` has not come.
    pub scheduled: u64,
}

impl LaneAges {
    pub fn new(lane: impl Into<String>) -> Self {
        LaneAges {
            lane: lane.into(),
            oldest: [None; 6],
            scheduled: 0,
        }
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens `sqlite://PATH` (the file is created when missing; its folder must exist,
    /// except a missing `.scaffold/`, which is created),
    /// `postgres://USER@HOST:PORT/DB[?schema=NAME&pool_size=N&sslmode=…]` or `memory://`.
    /// A file that is not a SQLite database, or one with a newer schema, is refused and left
    /// untouched. On PostgreSQL the store reads the server's clock
    /// ([`Store::open_with_host_clock`]); elsewhere the system clock.
    pub async fn open(url: &str) -> StoreResult<Store> {
        if is_postgres(url) {
            Self::open_with_host_clock(url, Arc::new(MonotonicClock::new())).await
        } else {
            Self::open_with_clock(url, Arc::new(SystemClock)).await
        }
    }

    /// Opens `url` on the database's clock where the backend has one of its own
    /// (PostgreSQL: a [`DatabaseClock`] over `host`, its offset measured now and every
    /// 30 s); on the other backends `host` is the store's clock.
    pub async fn open_with_host_clock(url: &str, host: Arc<dyn Clock>) -> StoreResult<Store> {
        if !is_postgres(url) {
            return Self::open_with_clock(url, host).await;
        }
        Self::open_postgres(url, host).await
    }

    #[cfg(not(feature = "postgres"))]
    async fn open_postgres(url: &str, _host: Arc<dyn Clock>) -> StoreResult<Store> {
        Err(StoreError::BackendNotBuilt {
            url: url::redact_password(url),
            backend: "postgres",
        })
    }

    #[cfg(feature = "postgres")]
    async fn open_postgres(url: &str, host: Arc<dyn Clock>) -> StoreResult<Store> {
        let backend = Arc::new(postgres::PostgresBackend::connect(url).await?);
        let clock = crate::time::DatabaseClock::new(host);
        backend.sync_clock(&clock).await?;
        let (weak_backend, weak_clock) = (Arc::downgrade(&backend), Arc::downgrade(&clock));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(CLOCK_RESYNC).await;
                let (Some(backend), Some(clock)) = (weak_backend.upgrade(), weak_clock.upgrade())
                else {
                    return;
                };
                if let Err(e) = backend.sync_clock(&clock).await {
                    tracing::warn!(error = %e, "cannot read the database's clock; keeping the last offset");
                }
            }
        });
        Ok(Self::from_backend(backend, clock))
    }

    /// [`Store::open`] with the clock the store reads, on every backend as given (tests move
    /// time with a [`crate::ManualClock`]; on PostgreSQL this bypasses the database's clock).
    pub async fn open_with_clock(url: &str, clock: Arc<dyn Clock>) -> StoreResult<Store> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(StoreError::InvalidUrl {
                    url: url.to_owned(),
                });
            }
            #[cfg(feature = "sqlite")]
            return Ok(Self::from_backend(
                Arc::new(sqlite::SqliteBackend::open(std::path::Path::new(path)).await?),
                clock,
            ));
            #[cfg(not(feature = "sqlite"))]
            return Err(StoreError::BackendNotBuilt {
                url: url::redact_password(url),
                backend: "sqlite",
            });
        } else if is_postgres(url) {
            #[cfg(feature = "postgres")]
            return Ok(Self::from_backend(
                Arc::new(postgres::PostgresBackend::connect(url).await?),
                clock,
            ));
            #[cfg(not(feature = "postgres"))]
            return Err(StoreError::BackendNotBuilt {
                url: url::redact_password(url),
                backend: "postgres",
            });
        } else if url == "memory://" || url == "memory:" {
            Ok(Self::from_backend(
                Arc::new(memory::MemoryBackend::new()),
                clock,
            ))
        } else {
            Err(StoreError::InvalidUrl {
                url: url::redact_password(url),
            })
        }
    }

    /// A remote worker's store: the coordinator at `config.url`, reached with the device key
    /// in `config.state_dir` (enrolling with the token file on the first start). It works
    /// the items the coordinator hands it; every producer or operator call answers
    /// [`StoreError::Unsupported`]. Times are the store's clock (the system's), placed from
    /// what the coordinator says is left of each lease, never compared with its wall clock.
    #[cfg(feature = "remote")]
    pub async fn open_remote(config: remote::RemoteConfig) -> StoreResult<Store> {
        Self::open_remote_with_clock(config, Arc::new(MonotonicClock::new())).await
    }

    /// [`Store::open_remote`] on `clock` (tests inject one hours off the coordinator's).
    #[cfg(feature = "remote")]
    pub async fn open_remote_with_clock(
        config: remote::RemoteConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<Store> {
        let backend = remote::RemoteBackend::open(config).await?;
        Ok(Self::from_backend(Arc::new(backend), clock))
    }

    /// The worker side of a remote store (its coordinator-given id, its notices); `None`
    /// for a store that owns its database.
    pub fn remote(&self) -> Option<&dyn RemoteSide> {
        self.backend.remote()
    }

    /// A store over any backend (how PostgreSQL plugs in).
    pub fn from_backend(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>) -> Store {
        Store {
            backend,
            clock,
            id: Arc::default(),
        }
    }

    /// The store a lease keeper uses on its own thread: the backend's lease backend (its
    /// own connections, driven there) on the same clock, or this store.
    pub fn lease_store(&self) -> Store {
        match self.backend.lease_backend() {
            Some(backend) => Store {
                backend,
                clock: Arc::clone(&self.clock),
                id: Arc::clone(&self.id),
            },
            None => self.clone(),
        }
    }

    /// The store's own id, minted once when its schema was made: part of every idempotency
    /// key [`crate::WorkContext::once`] hands a closure.
    pub async fn store_id(&self) -> StoreResult<String> {
        if let Some(id) = self.id.get() {
            return Ok(id.clone());
        }
        let id = self.backend.store_id().await?;
        Ok(self.id.get_or_init(|| id).clone())
    }

    /// The dashboard's tables (operators, their sessions and actions, activity);
    /// [`StoreError::Unsupported`] on a store that owns no database.
    pub fn dashboard(&self) -> StoreResult<&dyn dashboard::DashboardStore> {
        self.backend.dashboard().ok_or_else(|| {
            StoreError::Unsupported(format!(
                "the {} store keeps no dashboard tables",
                self.backend.name()
            ))
        })
    }

    /// The coordinator's tables of this store's database (enrollments, devices, sessions,
    /// artifacts); [`StoreError::Unsupported`] on a store that owns no database.
    pub fn coordinator(&self) -> StoreResult<&dyn coordinator::CoordinatorStore> {
        self.backend.coordinator().ok_or_else(|| {
            StoreError::Unsupported(format!(
                "the {} store keeps no coordinator tables",
                self.backend.name()
            ))
        })
    }

    /// Stores `bytes` as an artifact of `account` and returns its reference (SHA-256 hex and
    /// size), for [`NewItem::input`](crate::NewItem::input).
    #[cfg(feature = "coordinator")]
    pub async fn put_artifact(
        &self,
        account: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> StoreResult<crate::item::ArtifactRef> {
        let sha256 = crate::coordinator::tokens::sha256_hex(&bytes);
        let size = bytes.len() as u64;
        self.coordinator()?
            .put_artifact(account.to_owned(), sha256.clone(), bytes, self.now())
            .await?;
        Ok(crate::item::ArtifactRef {
            name: name.to_owned(),
            sha256,
            size,
        })
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The store's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Now, by the store's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Applies pending migrations (idempotent); returns the schema version.
    pub async fn migrate(&self) -> StoreResult<i64> {
        self.backend.migrate().await
    }

    /// The schema version in force.
    pub async fn schema_version(&self) -> StoreResult<i64> {
        self.backend.schema_version().await
    }

    /// Refuses a store whose schema is not the one this runtime writes.
    pub async fn require_migrated(&self) -> StoreResult<()> {
        let found = self.schema_version().await?;
        let required = SCHEMA_VERSION;
        if found > required {
            Err(StoreError::SchemaTooNew {
                found,
                supported: required,
            })
        } else if found < required {
            Err(StoreError::NotMigrated { found, required })
        } else {
            Ok(())
        }
    }

    /// Enqueues one item; returns its id (the live duplicate's id when a live item of the
    /// same kind holds its dedupe key: [`Store::enqueue_reporting`] tells the two apart).
    pub async fn enqueue(&self, item: NewItem) -> StoreResult<ItemId> {
        Ok(self.enqueue_reporting(item).await?.id)
    }

    /// Enqueues one item; says whether it was a duplicate.
    pub async fn enqueue_reporting(&self, item: NewItem) -> StoreResult<Enqueued> {
        let out = self.enqueue_many_reporting(vec![item]).await?;
        out.into_iter()
            .next()
            .ok_or_else(|| StoreError::Task("enqueue returned no id".to_owned()))
    }

    /// Enqueues many items in one transaction; ids in the order given.
    pub async fn enqueue_many(&self, items: Vec<NewItem>) -> StoreResult<Vec<ItemId>> {
        let out = self.enqueue_many_reporting(items).await?;
        Ok(out.into_iter().map(|e| e.id).collect())
    }

    /// Enqueues many items in one transaction; for each, its id and whether it was a
    /// duplicate, in the order given.
    pub async fn enqueue_many_reporting(&self, items: Vec<NewItem>) -> StoreResult<Vec<Enqueued>> {
        let kinds: Vec<String> = items.iter().map(|i| i.kind.clone()).collect();
        let out = self.backend.enqueue_many(items, self.now()).await?;
        for (e, kind) in out.iter().zip(&kinds) {
            if e.duplicate {
                tracing::debug!(id = e.id, kind = %kind, "enqueue was a duplicate of a live item");
            }
        }
        Ok(out)
    }

    /// Claims up to `n` due items of `lane` for `lease`, as `owner`.
    pub async fn claim_as(
        &self,
        owner: &str,
        lane: &str,
        n: usize,
        lease: Duration,
    ) -> StoreResult<Vec<Claimed>> {
        self.claim_kinds(owner, lane, None, n, lease).await
    }

    /// [`Store::claim_as`], of `kinds` only when given (a remote worker's enrolled kinds).
    pub async fn claim_kinds(
        &self,
        owner: &str,
        lane: &str,
        kinds: Option<&[String]>,
        n: usize,
        lease: Duration,
    ) -> StoreResult<Vec<Claimed>> {
        self.claim_with((owner, lane, kinds, n, lease), None).await
    }

    /// [`Store::claim_kinds`] for a remote worker of `account` (the coordinator's claim):
    /// of that account's items only, each with its inputs ([`Claimed::inputs`]); under
    /// `session` (a token's SHA-256), nothing unless that session is live and its worker
    /// not revoked, checked by the claim itself.
    #[allow(clippy::too_many_arguments)]
    pub async fn claim_for(
        &self,
        owner: &str,
        lane: &str,
        account: &str,
        kinds: Option<&[String]>,
        n: usize,
        lease: Duration,
        session: Option<&str>,
    ) -> StoreResult<Vec<Claimed>> {
        self.claim_with((owner, lane, kinds, n, lease), Some((account, session)))
            .await
    }

    /// Claims (owner, lane, kinds, n, lease) now; for a remote worker's (account, session)
    /// when given, with the items' inputs.
    async fn claim_with(
        &self,
        (owner, lane, kinds, n, lease): (&str, &str, Option<&[String]>, usize, Duration),
        remote: Option<(&str, Option<&str>)>,
    ) -> StoreResult<Vec<Claimed>> {
        let now = self.now();
        let req = ClaimRequest {
            lane: lane.to_owned(),
            n,
            owner: owner.to_owned(),
            lease_until: now.plus(lease),
            kinds: kinds.map(<[String]>::to_vec),
            account: remote.map(|(account, _)| account.to_owned()),
            with_inputs: remote.is_some(),
            session: remote.and_then(|(_, session)| session.map(str::to_owned)),
        };
        self.backend.claim(req, now).await
    }

    /// Claims up to `n` due items of `lane` for `lease` (owner `anonymous`).
    pub async fn claim(&self, lane: &str, n: usize, lease: Duration) -> StoreResult<Vec<Claimed>> {
        self.claim_as("anonymous", lane, n, lease).await
    }

    /// Renews `held`'s lease for `lease` from now; returns the new `lease_expires_at`.
    pub async fn heartbeat(&self, held: &Held, lease: Duration) -> StoreResult<Timestamp> {
        let now = self.now();
        self.backend
            .heartbeat(held.clone(), now.plus(lease), now)
            .await
    }

    /// Stores the item's checkpoint.
    pub async fn checkpoint(&self, held: &Held, state: Value) -> StoreResult<()> {
        self.backend
            .checkpoint(held.clone(), state, self.now())
            .await
    }

    /// The bytes of `account`'s artifact `sha256` (an input of a job this worker holds),
    /// read no further than `limit` bytes and one more (the caller checks digest and size).
    pub async fn fetch_artifact(
        &self,
        account: &str,
        sha256: &str,
        limit: u64,
    ) -> StoreResult<Option<Vec<u8>>> {
        self.backend
            .fetch_artifact(account.to_owned(), sha256.to_owned(), limit)
            .await
    }

    /// Stores `bytes` as output `output` of `held`'s attempt (see
    /// [`Backend::put_output`]).
    pub async fn put_output(
        &self,
        held: &Held,
        account: &str,
        output: crate::item::ArtifactRef,
        bytes: Vec<u8>,
    ) -> StoreResult<()> {
        self.backend
            .put_output(held.clone(), account.to_owned(), output, bytes, self.now())
            .await
    }

    /// The inputs of item `id` as stored (none on a store without artifacts).
    pub async fn item_inputs(&self, id: ItemId) -> StoreResult<Vec<crate::item::ArtifactRef>> {
        self.backend.item_inputs(id).await
    }

    /// Completes the item. Repeating it with the same fence succeeds.
    pub async fn complete(&self, held: &Held) -> StoreResult<()> {
        self.finish(Finish::of(held, crate::item::Outcome::Complete))
            .await
    }

    /// Fails the item: transient (retry at `retry_at`, dead when out of attempts) or dead.
    pub async fn fail(&self, held: &Held, outcome: crate::item::Outcome) -> StoreResult<()> {
        self.finish(Finish::of(held, outcome)).await
    }

    /// Applies one finish.
    pub async fn finish(&self, finish: Finish) -> StoreResult<()> {
        let mut results = self.finish_many(vec![finish]).await?;
        results
            .pop()
            .unwrap_or_else(|| Err(StoreError::Task("finish returned no result".to_owned())))
    }

    /// Applies many finishes in one write transaction; each row checks its own fence.
    pub async fn finish_many(&self, batch: Vec<Finish>) -> StoreResult<Vec<StoreResult<()>>> {
        self.finish_shared(std::sync::Arc::from(batch)).await
    }

    /// [`finish_many`](Self::finish_many) of a batch the caller keeps (to write again after
    /// an error, or to count what was written) without copying it.
    pub(crate) async fn finish_shared(
        &self,
        batch: std::sync::Arc<[Finish]>,
    ) -> StoreResult<Vec<StoreResult<()>>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        if batch.iter().any(|f| f.outcome.bad_signal().is_some()) {
            return self.finish_refusing_bad_signals(&batch).await;
        }
        self.backend.finish_many(batch, self.now()).await
    }

    /// A batch with parks on signal names no store writes: those are refused one by one
    /// ([`StoreError::InvalidSignal`]), the rest written as usual.
    async fn finish_refusing_bad_signals(
        &self,
        batch: &[Finish],
    ) -> StoreResult<Vec<StoreResult<()>>> {
        let writable: Vec<Finish> = batch
            .iter()
            .filter(|f| f.outcome.bad_signal().is_none())
            .cloned()
            .collect();
        let mut written = if writable.is_empty() {
            Vec::new()
        } else {
            self.backend
                .finish_many(std::sync::Arc::from(writable), self.now())
                .await?
        }
        .into_iter();
        Ok(batch
            .iter()
            .map(|f| match f.outcome.bad_signal() {
                Some(len) => Err(StoreError::InvalidSignal { len }),
                None => written.next().unwrap_or_else(|| {
                    Err(StoreError::Task(
                        "finish returned too few results".to_owned(),
                    ))
                }),
            })
            .collect())
    }

    /// Returns expired leases to available; returns how many items moved.
    pub async fn sweep(&self) -> StoreResult<u64> {
        self.backend.sweep(self.now()).await
    }

    /// Retries a dead item.
    pub async fn retry(&self, id: ItemId) -> StoreResult<()> {
        self.backend.retry(id, self.now()).await
    }

    /// Retries every dead item (of `kind`, when given); returns how many.
    pub async fn retry_all_dead(&self, kind: Option<&str>) -> StoreResult<u64> {
        self.backend
            .retry_all_dead(kind.map(str::to_owned), None, self.now())
            .await
    }

    /// Retries the dead items (of `kind`, when given) among the first `limit` dead ones by
    /// id: an operator's capped action. One whose dedupe key a live item holds stays dead,
    /// as in [`Store::retry_all_dead`]; returns how many were retried.
    pub async fn retry_dead_at_most(&self, kind: Option<&str>, limit: u64) -> StoreResult<u64> {
        self.backend
            .retry_all_dead(kind.map(str::to_owned), Some(limit), self.now())
            .await
    }

    /// Deletes a dead item.
    pub async fn discard(&self, id: ItemId) -> StoreResult<()> {
        self.backend.discard(id).await
    }

    /// Wakes every item parked on `signal`.
    pub async fn signal(&self, signal: &str) -> StoreResult<u64> {
        self.backend
            .signal(signal.to_owned(), None, self.now())
            .await
    }

    /// Wakes at most `limit` items parked on `signal` (lowest ids first): an operator's
    /// capped action; what is left waits for the next call.
    pub async fn signal_at_most(&self, signal: &str, limit: u64) -> StoreResult<u64> {
        self.backend
            .signal(signal.to_owned(), Some(limit), self.now())
            .await
    }

    /// One item.
    pub async fn get(&self, id: ItemId) -> StoreResult<Option<ItemRecord>> {
        self.backend.get(id).await
    }

    /// Items matching `filter`.
    pub async fn list(&self, filter: ListFilter) -> StoreResult<Vec<ItemRecord>> {
        self.backend.list(filter).await
    }

    /// Counts and oldest ages per lane and state: counts from the counters every transition
    /// keeps, ages and scheduled items through indexes, so the answer costs the same at a
    /// million items as at ten.
    pub async fn stats(&self) -> StoreResult<Vec<LaneStats>> {
        let counts = self.backend.counts().await?;
        self.stats_of(&counts).await
    }

    /// [`Store::stats`] from counts already read.
    pub(crate) async fn stats_of(&self, counts: &Counts) -> StoreResult<Vec<LaneStats>> {
        let now = self.now();
        let mut lanes: std::collections::BTreeMap<String, LaneStats> = Default::default();
        for (lane, _, state, n) in counts {
            lanes
                .entry(lane.clone())
                .or_insert_with(|| LaneStats::new(lane.clone()))
                .get_mut(*state)
                .count += n;
        }
        let names: Vec<String> = lanes.keys().cloned().collect();
        for ages in self.backend.ages(names, now).await? {
            let Some(l) = lanes.get_mut(&ages.lane) else {
                continue;
            };
            l.scheduled = ages.scheduled;
            let available = l.get_mut(ItemState::Available);
            available.count = available.count.saturating_sub(ages.scheduled);
            for (state, oldest) in ItemState::ALL.into_iter().zip(ages.oldest) {
                let s = l.get_mut(state);
                if s.count > 0 {
                    s.oldest_age_ms = oldest.map_or(0, |t| now.millis_since(t));
                }
            }
        }
        Ok(lanes.into_values().collect())
    }

    /// Items per (lane, kind, state), sorted (states in [`ItemState::ALL`]'s order), from
    /// the counters (zero rows left out).
    pub async fn counts(&self) -> StoreResult<Counts> {
        let mut counts = self.backend.counts().await?;
        counts.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
        Ok(counts)
    }

    /// Folds the counters' deltas (the sweeper's; see [`Backend::fold_counts`]).
    pub async fn fold_counts(&self) -> StoreResult<()> {
        self.backend.fold_counts().await
    }

    /// The recorded output of effect `key` of item `id`.
    pub async fn effect(&self, id: ItemId, key: &str) -> StoreResult<Option<Value>> {
        self.backend.effect(id, key.to_owned()).await
    }

    /// Before effect `key` of `held`'s item runs: its recorded output, or the check that
    /// `held` still holds a live lease (renewed for `lease`), in one call.
    pub async fn begin_effect(
        &self,
        held: &Held,
        key: &str,
        lease: Duration,
    ) -> StoreResult<EffectStart> {
        let now = self.now();
        self.backend
            .begin_effect(held.clone(), key.to_owned(), now.plus(lease), now)
            .await
    }

    /// Records effect `key` of `held`'s item (fenced).
    pub async fn record_effect(&self, held: &Held, key: &str, output: Value) -> StoreResult<()> {
        self.backend
            .record_effect(held.clone(), key.to_owned(), output, self.now())
            .await
    }

    /// The ended attempts of item `id`, oldest first.
    pub async fn attempts(&self, id: ItemId) -> StoreResult<Vec<AttemptRecord>> {
        self.backend.attempts(id).await
    }

    /// Runs `body` in one write transaction; its outbox rows ([`Store::enqueue_in`]) commit
    /// with it or not at all.
    pub async fn transaction<T, F>(&self, body: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> StoreResult<T> + Send + 'static,
    {
        let slot: Arc<Mutex<Option<T>>> = Arc::new(Mutex::new(None));
        let out = Arc::clone(&slot);
        let boxed: TxBody = Box::new(move |tx| {
            let value = body(tx)?;
            if let Ok(mut guard) = out.lock() {
                *guard = Some(value);
            }
            Ok(())
        });
        self.backend.transaction(boxed, self.now()).await?;
        let mut guard = slot
            .lock()
            .map_err(|_| StoreError::Task("transaction result lock poisoned".to_owned()))?;
        guard
            .take()
            .ok_or_else(|| StoreError::Task("transaction produced no value".to_owned()))
    }

    /// Inserts an outbox row for `item` inside the producer's transaction `tx`; the relay
    /// turns it into an item with the same id. Returns that id.
    pub fn enqueue_in(&self, tx: &mut Tx<'_>, item: NewItem) -> StoreResult<ItemId> {
        tx.enqueue(item)
    }

    /// Inserts an outbox row for `item` inside a transaction the producer opened on its own
    /// PostgreSQL connection (to the queue's database), beside its business writes: the row
    /// commits or rolls back with them, and the relay turns it into an item with the
    /// returned id. The queue's schema is named in the statement, so the producer's
    /// `search_path` does not matter. [`StoreError::WrongBackend`] on another backend.
    #[cfg(feature = "postgres")]
    pub async fn enqueue_in_postgres(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        item: NewItem,
    ) -> StoreResult<ItemId> {
        let schema = self
            .backend
            .postgres_schema()
            .ok_or(StoreError::WrongBackend {
                operation: "enqueue_in_postgres",
                needs: "postgres",
                backend: self.backend.name(),
            })?;
        postgres::insert_outbox_in(tx, schema, &item, self.now()).await
    }

    /// Relays up to `limit` outbox rows; returns how many it relayed. A row it must refuse
    /// (its id is another item's, which only a foreign writer can cause) is logged as an
    /// error and left unrelayed: [`Store::relay_outbox_report`] lists them.
    pub async fn relay_outbox(&self, limit: usize) -> StoreResult<u64> {
        Ok(self.relay_outbox_report(limit).await?.relayed)
    }

    /// [`Store::relay_outbox`], with the rows it refused.
    pub async fn relay_outbox_report(&self, limit: usize) -> StoreResult<RelayReport> {
        let report = self.backend.relay_outbox(limit, self.now()).await?;
        for (id, reason) in &report.refused {
            tracing::error!(outbox_id = id, reason = %reason, "outbox row left unrelayed");
        }
        Ok(report)
    }

    /// Marks OFFLINE the workers silent for three of their leases; returns their ids.
    pub async fn mark_silent_workers(&self) -> StoreResult<Vec<String>> {
        self.backend.mark_silent_workers(self.now()).await
    }

    /// Deletes up to `limit` outbox rows relayed more than `older_than` ago, and OFFLINE
    /// workers last seen before then; returns (outbox rows, workers) deleted.
    pub async fn purge_retained(
        &self,
        older_than: Duration,
        limit: usize,
    ) -> StoreResult<(u64, u64)> {
        let before = Timestamp::from_millis(
            self.now()
                .as_millis()
                .saturating_sub(crate::time::duration_ms(older_than)),
        );
        self.backend.purge_retained(before, limit).await
    }

    /// Inserts or replaces a worker row.
    pub async fn put_worker(&self, worker: WorkerRecord) -> StoreResult<()> {
        self.backend.put_worker(worker).await
    }

    /// A loop's presence (see [`Backend::touch_worker`]): never overwrites DRAINING, and
    /// returns the row's state.
    pub async fn touch_worker(&self, worker: WorkerRecord) -> StoreResult<WorkerState> {
        self.backend.touch_worker(worker).await
    }

    /// Asks worker `id` to drain (`scaffold queue drain`): its loop hears it within a sweep
    /// tick, stops claiming and drains. Returns whether the worker was there and not OFFLINE.
    pub async fn drain_worker(&self, id: &str) -> StoreResult<bool> {
        self.backend.drain_worker(id.to_owned()).await
    }

    /// Deletes up to `limit` items completed more than `older_than` ago, with their effects;
    /// returns how many. What [`crate::WorkLoopBuilder::retain_completed`] runs each sweep.
    pub async fn purge_completed(&self, older_than: Duration, limit: usize) -> StoreResult<u64> {
        let before = Timestamp::from_millis(
            self.now()
                .as_millis()
                .saturating_sub(crate::time::duration_ms(older_than)),
        );
        self.backend.purge_completed(before, limit).await
    }

    /// Waits until items may have become claimable on `lane` (a wake-up from the backend,
    /// on PostgreSQL a notification), or `max` at the latest.
    pub async fn wait_for_work(&self, lane: &str, max: Duration) {
        self.backend.wait_for_work(lane.to_owned(), max).await;
    }

    /// Every worker row; one silent for three of its leases reads OFFLINE whether or not a
    /// sweeper has marked it yet.
    pub async fn workers(&self) -> StoreResult<Vec<WorkerRecord>> {
        let now = self.now();
        let mut rows = self.backend.workers().await?;
        for w in &mut rows {
            let silent = i64::try_from(now.millis_since(w.last_seen_at)).unwrap_or(i64::MAX);
            if w.state != WorkerState::Offline
                && silent > w.lease_ms.min(SILENCE_CAP_MS).saturating_mul(3)
            {
                w.state = WorkerState::Offline;
            }
        }
        Ok(rows)
    }

    /// Every recorded effect of item `id`, by key.
    pub async fn effects(&self, id: ItemId) -> StoreResult<Vec<EffectRecord>> {
        self.backend.effects(id).await
    }

    /// Cancels a live item (see [`Backend::cancel`]).
    pub async fn cancel(&self, id: ItemId) -> StoreResult<()> {
        self.backend.cancel(id, self.now()).await
    }

    /// Returns a dead worker's items now and marks it OFFLINE; returns how many items.
    pub async fn release_worker(&self, owner: &str) -> StoreResult<u64> {
        self.backend
            .release_worker(owner.to_owned(), self.now())
            .await
    }

    /// The outbox's backlog.
    pub async fn outbox_stats(&self) -> StoreResult<OutboxStats> {
        self.backend.outbox_stats(self.now()).await
    }

    /// How many items of each kind are in each state, by kind then state.
    pub async fn kind_counts(&self) -> StoreResult<Vec<(String, ItemState, u64)>> {
        Ok(kinds_of(&self.backend.counts().await?))
    }
}
