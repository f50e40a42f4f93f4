//! The work loop (docs/reference.md#the-work-queue-scaffold-runtime): claims items of its lanes in batches, runs their handlers
//! with bounded concurrency under heartbeated leases, writes outcomes in batched fenced
//! transactions, sweeps expired leases, and drains on a shutdown signal.
//!
//! Tasks: one claimer per lane, one task per claimed item, one completer writing finished
//! items in batches, one sweeper; and on a thread of its own the lease keeper, which renews
//! every held item's lease until its outcome is written (a handler that never yields cannot
//! starve it).

mod builder;
mod completer;
mod item_task;
mod keeper;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, mpsc, watch};

pub use builder::WorkLoopBuilder;

use crate::error::StoreError;
use crate::handler::DynHandler;
use crate::item::{Fence, ItemId, WorkerRecord, WorkerState};
use crate::retry::RetryPolicy;
use crate::spec::WorkKindSpec;
use crate::store::Store;

/// An item outcome the store answered, as an observer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopEvent {
    /// The store accepted the finish (`outcome`: completed, retry, dead, parked, released).
    Finished {
        id: ItemId,
        fence: Fence,
        outcome: &'static str,
    },
    /// The store refused the finish: the fence was stale or the lease expired.
    StaleRejected { id: ItemId, fence: Fence },
    /// A heartbeat was refused; the handler was cancelled.
    LeaseLost { id: ItemId, fence: Fence },
}

pub(crate) type Observer = Arc<dyn Fn(&LoopEvent) + Send + Sync>;

/// Where a loop is in its life, as `/health` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopState {
    /// Built, not running yet.
    Starting,
    /// Claiming and running items.
    Running,
    /// Stopped claiming; finishing or releasing in-flight items.
    Draining,
    /// `run` returned.
    Stopped,
}

impl LoopState {
    /// The state's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LoopState::Starting => "starting",
            LoopState::Running => "running",
            LoopState::Draining => "draining",
            LoopState::Stopped => "stopped",
        }
    }

    const fn from_u8(n: u8) -> Self {
        match n {
            1 => LoopState::Running,
            2 => LoopState::Draining,
            3 => LoopState::Stopped,
            _ => LoopState::Starting,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub concurrency: usize,
    pub prefetch: Option<usize>,
    pub lease: Duration,
    pub retry: RetryPolicy,
    pub drain_timeout: Duration,
    pub poll_interval: Duration,
    pub sweep_interval: Duration,
    pub worker_id: Option<String>,
    pub relay: bool,
    pub retain_completed: Option<Duration>,
    /// Claim only items of these kinds (every kind of the loop's lanes when `None`).
    pub kinds: Option<Vec<String>>,
    /// The most items one claim asks for (as many as the prefetch has room for when `None`).
    pub claim_batch: Option<usize>,
    /// Where jobs' workspaces live and when they go (by default `jobs/` in a remote
    /// worker's state directory, else the system's temporary directory).
    pub workspaces: Option<crate::artifacts::Workspaces>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            concurrency: 8,
            prefetch: None,
            lease: Duration::from_secs(30),
            retry: RetryPolicy::DEFAULT,
            drain_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_millis(200),
            sweep_interval: Duration::from_secs(1),
            worker_id: None,
            relay: true,
            retain_completed: None,
            kinds: None,
            claim_batch: None,
            workspaces: None,
        }
    }
}

impl Config {
    /// At least the concurrency; by default exactly it, so a killed worker strands no more
    /// items than it was running, and an idle worker beside a busy one finds work.
    fn prefetch(&self) -> usize {
        self.prefetch
            .unwrap_or(self.concurrency)
            .max(self.concurrency)
    }

    fn lease_ms(&self) -> i64 {
        crate::time::duration_ms(self.lease)
    }
}

/// Counters of one loop since it was built.
#[derive(Debug, Default)]
pub struct LoopCounters {
    pub claimed: AtomicU64,
    pub completed: AtomicU64,
    pub retried: AtomicU64,
    pub dead: AtomicU64,
    pub parked: AtomicU64,
    pub released: AtomicU64,
    pub stale_rejected: AtomicU64,
    pub leases_lost: AtomicU64,
    /// Handlers that panicked (each a failed attempt).
    pub panicked: AtomicU64,
}

impl LoopCounters {
    /// (name, value) of every counter, for metrics.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("claimed", get(&self.claimed)),
            ("completed", get(&self.completed)),
            ("retried", get(&self.retried)),
            ("dead", get(&self.dead)),
            ("parked", get(&self.parked)),
            ("released", get(&self.released)),
            ("stale_rejected", get(&self.stale_rejected)),
            ("leases_lost", get(&self.leases_lost)),
            ("panicked", get(&self.panicked)),
        ]
    }
}

pub(crate) struct Shared {
    pub store: Store,
    pub handlers: BTreeMap<&'static str, Arc<dyn DynHandler>>,
    pub lanes: Vec<String>,
    pub config: Config,
    pub worker_id: String,
    pub counters: LoopCounters,
    pub observer: Option<Observer>,
    /// What handlers reach through [`WorkContext::resource`](crate::WorkContext::resource).
    pub resources: crate::resources::Resources,
    /// Items claimed and not yet written back.
    pub inflight: AtomicUsize,
    /// Items claimed whose handler has not finished (running or waiting for a slot): what
    /// the prefetch bounds. `inflight` minus this is finished items awaiting write-back.
    pub unfinished: AtomicUsize,
    /// Items asked for by claims still on their way (of any lane): counted against the
    /// prefetch until they return, so the lanes' claimers never hold more than it between
    /// them.
    pub claiming: AtomicUsize,
    /// Held while a claimer reserves room or settles a claim: a reservation reads
    /// `unfinished + claiming` and adds to `claiming` as one step.
    pub claim_gate: std::sync::Mutex<()>,
    /// Woken when in-flight items are written back, when handlers finishing bring
    /// `unfinished` down to the claimers' low water, and when a claim returns with less
    /// than it reserved.
    pub room: Notify,
    /// A [`LoopState`] as a number.
    pub state: AtomicU8,
    /// How long each kind's handler ran, per call.
    pub durations: BTreeMap<&'static str, crate::metrics::Histogram>,
    /// Renews held leases on its own thread; started by `run`.
    pub keeper: keeper::KeeperSlot,
    /// Woken when an operator's DRAINING is heard (the sweeper's presence write), or the
    /// coordinator stops a remote worker (`halt`).
    pub drain_requested: Notify,
    /// Why a remote worker must stop: revoked (at once) or an upgrade required (after its
    /// jobs); `run` returns it.
    pub halt: std::sync::Mutex<Option<StoreError>>,
    /// Where this loop's jobs keep their files.
    pub workspaces: Arc<crate::artifacts::Workspaces>,
}

impl Shared {
    pub(crate) fn halted(&self) -> std::sync::MutexGuard<'_, Option<StoreError>> {
        self.halt
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The claimers' lock over `unfinished + claiming` (see `item_task::Reservation`).
    pub(crate) fn gate(&self) -> std::sync::MutexGuard<'_, ()> {
        self.claim_gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn emit(&self, event: LoopEvent) {
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }
}

/// A running worker's loop. See [`WorkLoopBuilder`].
#[derive(Clone)]
pub struct WorkLoop {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WorkLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkLoop")
            .field("worker_id", &self.shared.worker_id)
            .field("lanes", &self.shared.lanes)
            .finish_non_exhaustive()
    }
}

impl WorkLoop {
    /// Starts building a loop over `store` for the kinds of `registry` (`om::KINDS`).
    pub fn builder(store: Store, registry: &[&[WorkKindSpec]]) -> WorkLoopBuilder {
        WorkLoopBuilder::new(store, registry)
    }

    fn from_parts(
        store: Store,
        handlers: BTreeMap<&'static str, Arc<dyn DynHandler>>,
        lanes: Vec<String>,
        config: Config,
        observer: Option<Observer>,
        resources: crate::resources::Resources,
    ) -> Self {
        // A remote worker is who the coordinator enrolled, never its host and pid.
        let worker_id = match store.remote() {
            Some(remote) => remote.worker_id().to_owned(),
            None => config.worker_id.clone().unwrap_or_else(|| {
                let salt = crate::retry::random_u64() & 0xff_ffff;
                format!("worker-{}-{salt:06x}", std::process::id())
            }),
        };
        let workspaces = config
            .workspaces
            .clone()
            .unwrap_or_else(|| match store.remote() {
                Some(remote) => crate::artifacts::Workspaces::new(
                    remote.state_dir().join("jobs"),
                    crate::artifacts::Cleanup::default(),
                ),
                None => crate::artifacts::Workspaces::in_temp(),
            });
        let durations = handlers
            .keys()
            .map(|k| (*k, crate::metrics::Histogram::default()))
            .collect();
        WorkLoop {
            shared: Arc::new(Shared {
                store,
                durations,
                state: AtomicU8::new(0),
                handlers,
                lanes,
                config,
                worker_id,
                counters: LoopCounters::default(),
                observer,
                resources,
                inflight: AtomicUsize::new(0),
                unfinished: AtomicUsize::new(0),
                claiming: AtomicUsize::new(0),
                claim_gate: std::sync::Mutex::new(()),
                room: Notify::new(),
                keeper: keeper::KeeperSlot::default(),
                drain_requested: Notify::new(),
                halt: std::sync::Mutex::new(None),
                workspaces: Arc::new(workspaces),
            }),
        }
    }

    /// The worker's id.
    pub fn worker_id(&self) -> &str {
        &self.shared.worker_id
    }

    /// Builds every resource registered with `resource_with` that is not built yet. A
    /// worker calls it before [`run`](Self::run), so a provider it cannot set up (a missing
    /// setting) stops it at start rather than failing items.
    pub fn init_resources(&self) -> Result<(), crate::resources::ResourceError> {
        self.shared.resources.init_all()
    }

    /// Puts `value` in the place of the registered resource of type `T`: a test runs the
    /// worker's own loop on a provider's twin.
    pub fn set_resource<T: Send + Sync + 'static>(
        &self,
        value: T,
    ) -> Result<(), crate::resources::ResourceError> {
        self.shared.resources.set(value)
    }

    /// The lanes served.
    pub fn lanes(&self) -> &[String] {
        &self.shared.lanes
    }

    /// The loop's counters.
    pub fn counters(&self) -> &LoopCounters {
        &self.shared.counters
    }

    /// Where the loop is in its life.
    pub fn state(&self) -> LoopState {
        LoopState::from_u8(self.shared.state.load(Ordering::SeqCst))
    }

    /// Each handled kind's handler durations.
    pub fn durations(&self) -> impl Iterator<Item = (&'static str, &crate::metrics::Histogram)> {
        self.shared.durations.iter().map(|(k, h)| (*k, h))
    }

    fn enter(&self, state: LoopState) {
        self.shared.state.store(state as u8, Ordering::SeqCst);
    }

    fn worker_row(&self, state: WorkerState, started: crate::time::Timestamp) -> WorkerRecord {
        WorkerRecord {
            id: self.shared.worker_id.clone(),
            lanes: self.shared.lanes.clone(),
            state,
            started_at: started,
            last_seen_at: self.shared.store.now(),
            lease_ms: self.shared.config.lease_ms(),
        }
    }

    /// The loop's own move of its worker row (REGISTERED, DRAINING, OFFLINE).
    async fn set_state(
        &self,
        state: WorkerState,
        started: crate::time::Timestamp,
    ) -> Result<(), StoreError> {
        self.shared
            .store
            .put_worker(self.worker_row(state, started))
            .await
    }

    /// Runs until `shutdown` resolves (or an operator's `scaffold queue drain` is heard),
    /// then drains: stops claiming, lets in-flight handlers finish within the drain timeout,
    /// cancels and releases the rest, writes every outcome, marks the worker OFFLINE and
    /// returns.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), StoreError> {
        let shared = &self.shared;
        shared
            .keeper
            .start(shared.store.lease_store(), shared.config.lease)
            .map_err(|e| StoreError::Task(format!("cannot start the lease keeper: {e}")))?;
        let started = shared.store.now();
        self.set_state(WorkerState::Registered, started).await?;
        // ONLINE as presence is written: an operator's drain, asked as the worker came up,
        // stands (and is heard at once).
        if self
            .shared
            .store
            .touch_worker(self.worker_row(WorkerState::Online, started))
            .await?
            == WorkerState::Draining
        {
            shared.drain_requested.notify_one();
        }
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let (stop_tx, stop_rx) = watch::channel(false);
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let slots = Arc::new(Semaphore::new(shared.config.concurrency));
        let completer = tokio::spawn(completer::run(Arc::clone(shared), done_rx));
        // On a remote store the coordinator sweeps, relays and purges: the loop only keeps
        // its presence and hears the coordinator's word.
        let sweeper = if shared.store.remote().is_some() {
            tokio::spawn(presence(Arc::clone(shared), stop_rx.clone(), started))
        } else {
            tokio::spawn(sweeper(Arc::clone(shared), stop_rx.clone(), started))
        };
        self.enter(LoopState::Running);
        tracing::info!(worker = %shared.worker_id, lanes = ?shared.lanes, "worker online");
        let claimers: Vec<_> = shared
            .lanes
            .iter()
            .map(|lane| {
                tokio::spawn(item_task::claimer(
                    Arc::clone(shared),
                    lane.clone(),
                    item_task::Channels {
                        stop: stop_rx.clone(),
                        cancel: cancel_rx.clone(),
                        done: done_tx.clone(),
                        slots: Arc::clone(&slots),
                    },
                ))
            })
            .collect();
        drop(done_tx);
        tokio::select! {
            () = shutdown => {}
            () = shared.drain_requested.notified() => {
                tracing::info!(worker = %shared.worker_id, "an operator asked this worker to drain");
            }
        }

        self.enter(LoopState::Draining);
        let revoked = matches!(shared.halted().as_ref(), Some(StoreError::Revoked));
        if revoked {
            // Nothing more of this worker is taken: its handlers stop now.
            tracing::error!(worker = %shared.worker_id, "revoked by the coordinator; stopping at once");
            let _ = cancel_tx.send(true);
        }
        tracing::info!(worker = %shared.worker_id, "draining");
        // From here on a store error must not cut the drain short: log it and go on.
        if let Err(e) = self.set_state(WorkerState::Draining, started).await {
            tracing::warn!(error = %e, "cannot mark the worker DRAINING");
        }
        let _ = stop_tx.send(true);
        for claimer in claimers {
            let _ = claimer.await;
        }
        let settled = tokio::time::timeout(shared.config.drain_timeout, wait_idle(shared)).await;
        if settled.is_err() {
            tracing::warn!(worker = %shared.worker_id, "drain deadline passed; releasing in-flight items");
            let _ = cancel_tx.send(true);
            wait_idle(shared).await;
        }
        let _ = completer.await;
        let _ = sweeper.await;
        self.enter(LoopState::Stopped);
        let halt = shared.halted().take();
        if let Some(halt) = halt {
            return Err(halt);
        }
        self.set_state(WorkerState::Offline, started).await?;
        tracing::info!(worker = %shared.worker_id, "worker offline");
        Ok(())
    }
}

async fn wait_idle(shared: &Shared) {
    loop {
        let notified = shared.room.notified();
        if shared.inflight.load(Ordering::SeqCst) == 0 {
            return;
        }
        notified.await;
    }
}

/// Completed items deleted per retention statement.
const PURGE_BATCH: usize = 5000;

/// Outbox rows relayed per sweep tick.
const RELAY_BATCH: usize = 1000;

async fn sweeper(
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    started: crate::time::Timestamp,
) {
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(shared.config.sweep_interval) => {}
        }
        match shared.store.sweep().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(count = n, "returned expired leases"),
            Err(e) => tracing::warn!(error = %e, "sweep failed"),
        }
        if let Err(e) = shared.store.fold_counts().await {
            tracing::warn!(error = %e, "folding the item counters failed");
        }
        if shared.config.relay {
            // Rows the relay refuses are logged by the store, one error each.
            match shared.store.relay_outbox(RELAY_BATCH).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(count = n, "relayed outbox rows"),
                Err(e) => tracing::warn!(error = %e, "outbox relay failed"),
            }
        }
        match shared.store.mark_silent_workers().await {
            Ok(ids) => {
                for id in ids {
                    tracing::warn!(worker = %id, "worker silent for three leases; marked OFFLINE");
                }
            }
            Err(e) => tracing::warn!(error = %e, "marking silent workers failed"),
        }
        if let Some(keep) = shared.config.retain_completed {
            match shared.store.purge_retained(keep, PURGE_BATCH).await {
                Ok((0, 0)) => {}
                Ok((outbox, workers)) => {
                    tracing::debug!(
                        outbox,
                        workers,
                        "purged relayed outbox rows and offline workers"
                    );
                }
                Err(e) => tracing::warn!(error = %e, "purging outbox rows and workers failed"),
            }
            // In batches, so one tick never holds a long transaction.
            loop {
                match shared.store.purge_completed(keep, PURGE_BATCH).await {
                    Ok(n) if n as usize >= PURGE_BATCH => continue,
                    Ok(0) => break,
                    Ok(n) => {
                        tracing::debug!(count = n, "purged completed items");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "purging completed items failed");
                        break;
                    }
                }
            }
        }
        let now = shared.store.now();
        let row = WorkerRecord {
            id: shared.worker_id.clone(),
            lanes: shared.lanes.clone(),
            state: WorkerState::Online,
            started_at: started,
            last_seen_at: now,
            lease_ms: shared.config.lease_ms(),
        };
        if *stop.borrow() {
            return;
        }
        // Presence never overwrites an operator's DRAINING; hearing it, the loop drains.
        match shared.store.touch_worker(row).await {
            Ok(WorkerState::Draining) => shared.drain_requested.notify_one(),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "worker row update failed"),
        }
    }
}

/// A remote worker's presence, every sweep interval and whenever the coordinator's word
/// changes: DRAINING heard drains the loop; a revocation or a required upgrade halts it.
async fn presence(
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    started: crate::time::Timestamp,
) {
    loop {
        let row = WorkerRecord {
            id: shared.worker_id.clone(),
            lanes: shared.lanes.clone(),
            state: WorkerState::Online,
            started_at: started,
            last_seen_at: shared.store.now(),
            lease_ms: shared.config.lease_ms(),
        };
        match shared.store.touch_worker(row).await {
            Ok(WorkerState::Draining) => shared.drain_requested.notify_one(),
            Ok(_) => {}
            Err(e @ (StoreError::Revoked | StoreError::UpgradeRequired { .. })) => {
                tracing::error!(worker = %shared.worker_id, error = %e, "the coordinator stops this worker");
                *shared.halted() = Some(e);
                shared.drain_requested.notify_one();
                return;
            }
            Err(e) => tracing::warn!(error = %e, "presence failed"),
        }
        let notice = async {
            match shared.store.remote() {
                Some(r) => r.notice().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(shared.config.sweep_interval) => {}
            () = notice => {}
        }
    }
}

/// Resolves on SIGTERM or ctrl-c (SIGINT): the shutdown future a worker's `main` hands to
/// [`WorkLoop::run`], so a deployment's stop drains the loop and the process exits 0.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                return;
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for SIGTERM; only ctrl-c drains"),
        }
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        tracing::warn!(error = %e, "cannot listen for ctrl-c");
        std::future::pending::<()>().await;
    }
}
