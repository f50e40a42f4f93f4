//! The backend conformance suite: the same tests run against every backend (River's
//! `riverdrivertest` is the model). A backend's test file instantiates it with
//! [`conformance_suite!`](crate::conformance_suite) and a factory:
//!
//! ```ignore
//! async fn make() -> scaffold_runtime::testing::conformance::TestBackend { … }
//! scaffold_runtime::conformance_suite!(make);
//! ```
//!
//! Every test gets a fresh, migrated store whose clock is a [`ManualClock`].

mod claims;
mod coordinator;
mod dashboard;
mod failures;
mod holders;
mod leases;
mod lifetimes;
mod operator;
mod orchestration;
mod stats_retention;
mod work_loop;

pub use claims::*;
pub use coordinator::*;
pub use dashboard::*;
pub use failures::*;
pub use holders::*;
pub use leases::*;
pub use lifetimes::*;
pub use operator::*;
pub use orchestration::*;
pub use stats_retention::*;
pub use work_loop::*;

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::error::StoreError;
use crate::item::{ItemId, ItemRecord, NewItem};
use crate::store::Store;
use crate::time::ManualClock;

/// A fresh store for one test, its clock, and whatever must live as long as it (a
/// temporary directory, a database schema).
pub struct TestBackend {
    pub store: Store,
    pub clock: Arc<ManualClock>,
    pub guard: Box<dyn Any + Send>,
    /// The store a worker holds where it is not `store`: a remote worker's, over a
    /// coordinator on `store`'s database. `None`: workers use `store` too.
    pub worker: Option<Store>,
    /// A second worker's store where workers do not use `store` (a second enrolled device):
    /// cases with two workers use it.
    pub other_worker: Option<Store>,
}

impl TestBackend {
    /// A backend whose workers use `store` itself.
    pub fn new(store: Store, clock: Arc<ManualClock>, guard: Box<dyn Any + Send>) -> Self {
        TestBackend {
            store,
            clock,
            guard,
            worker: None,
            other_worker: None,
        }
    }

    /// The store a worker holds (claims, heartbeats, effects, outcomes, its loop); `store`
    /// is the operator's and producer's side.
    pub fn worker(&self) -> &Store {
        self.worker.as_ref().unwrap_or(&self.store)
    }

    /// A second worker's store (`store` itself where workers use it).
    pub fn other_worker(&self) -> &Store {
        self.other_worker
            .as_ref()
            .or(self.worker.as_ref())
            .unwrap_or(&self.store)
    }

    /// Enqueues `item`; a test whose set-up cannot enqueue fails here.
    pub async fn enqueue(&self, item: NewItem) -> ItemId {
        ok(self.store.enqueue(item).await, "enqueue")
    }
}

impl std::fmt::Debug for TestBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestBackend")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// Instantiates every conformance test for the backend `$make` builds (an `async fn() ->
/// TestBackend`). Needs `tokio` (macros, multi-thread runtime) in the caller's dev-deps.
///
/// `conformance_suite!(make, run_if = available)` runs each test only when `available()`
/// (a `fn() -> bool`) says the backend can be reached; `available` prints why a test is
/// skipped when it returns false (a skipped test must never pass silently).
#[macro_export]
macro_rules! conformance_suite {
    ($make:path) => {
        $crate::conformance_suite!($make, run_if = $crate::testing::conformance::always);
    };
    ($make:path, run_if = $available:path) => {
        $crate::conformance_suite!(@tests $make, $available;
            migrate_is_idempotent,
            enqueue_one_and_many,
            dedupe_key_is_unique_among_live_items,
            dedupe_is_race_free,
            run_at_delays_claim,
            priority_orders_claims,
            claim_increments_fence,
            lanes_are_separate,
            heartbeat_returns_renewed_lease,
            stale_fence_fails_closed,
            expired_lease_fails_closed,
            complete_repeated_with_same_fence_succeeds,
            transient_backs_off_then_dead,
            permanent_is_dead_at_once,
            sweeper_returns_expired_leases,
            retry_and_discard_dead_items,
            once_records_effects_once,
            checkpoint_is_fenced,
            outbox_commits_with_the_producer_transaction,
            orchestration_resumes_at_last_checkpoint,
            park_until_time_and_signal,
            a_park_on_a_signal_no_store_holds_is_refused,
            stats_per_lane_and_state,
            retention_purges_old_completed_items,
            loop_build_refusals,
            loop_drains_all_items,
            loop_unknown_kind_and_undecodable_payload_are_dead,
            loop_a_park_on_a_signal_no_store_holds_is_dead,
            loop_transient_retries_with_backoff,
            loop_lost_lease_cancels_handler,
            loop_drain_releases_items_past_deadline,
            loop_worker_lifecycle,
            loop_relays_the_outbox,
            loop_heartbeats_keep_a_long_handler,
            ids_are_never_reused,
            dedupe_is_per_kind,
            poison_item_runs_out_of_attempts,
            silent_workers_go_offline_and_tables_are_purged,
            loop_prefetch_defaults_to_concurrency,
            loop_prefetch_holds_across_lanes,
            operator_cancel_and_release,
            operator_views,
            fenced_writes_check_the_holder,
            a_batch_completes_each_row_for_its_own_holder,
            begin_effect_checks_and_renews_the_lease,
            once_runs_only_under_a_live_lease,
            attempts_are_recorded,
            claims_filter_by_kind,
            retry_dead_of_one_kind,
            list_by_dedupe_key_and_keyset,
            presence_keeps_an_operators_drain,
            dashboard_operators_and_sessions,
            dashboard_activity_by_lane_and_time,
            signal_at_most_wakes_at_most_that_many,
            retry_dead_at_most_takes_at_most_that_many,
            loop_busy_handler_keeps_its_lease,
            loop_panic_is_a_failed_attempt,
            loop_cancel_stops_the_handler,
            loop_hears_an_operators_drain,
            loop_handler_files,
        );
    };
    (@tests $make:path, $available:path; $($name:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                if !$available() {
                    return;
                }
                // Every store the case made, kept past it: its counters must equal a count
                // of its items once it is done.
                let made = $crate::testing::conformance::Made::default();
                $crate::testing::conformance::$name(|| made.track($make())).await;
                made.counters_agree().await;
            }
        )*
    };
}

/// The conformance cases a remote worker's store runs, listed here once: every case whose
/// worker calls (claims, heartbeats, fences, effects, checkpoints, outcomes, parking) go
/// through [`TestBackend::worker`] — over the wire, to a coordinator on the direct store's
/// database — while its operator's side (enqueue, sweep, signal, reads) uses the direct
/// store. `$make` builds such a backend (`tests/it/conformance_remote.rs`) whose coordinator
/// leases for the suite's `LEASE` (30 s) and backs off as configured; `$make_loop` one
/// whose coordinator leases for 300 ms (the loop cases' lease: the lease is the
/// coordinator's, never the worker's) and retries at once (the loop cases' policy).
#[macro_export]
macro_rules! remote_conformance_suite {
    ($make:path, $make_loop:path, run_if = $available:path) => {
        $crate::conformance_suite!(@tests $make_loop, $available;
            loop_drains_all_items,
            loop_transient_retries_with_backoff,
            loop_lost_lease_cancels_handler,
            loop_heartbeats_keep_a_long_handler,
            loop_drain_releases_items_past_deadline,
            loop_busy_handler_keeps_its_lease,
            loop_panic_is_a_failed_attempt,
            loop_cancel_stops_the_handler,
            loop_hears_an_operators_drain,
            loop_prefetch_defaults_to_concurrency,
            loop_prefetch_holds_across_lanes,
            loop_handler_files,
            loop_a_park_on_a_signal_no_store_holds_is_dead,
        );
        $crate::conformance_suite!(@tests $make, $available;
            run_at_delays_claim,
            priority_orders_claims,
            claim_increments_fence,
            lanes_are_separate,
            heartbeat_returns_renewed_lease,
            stale_fence_fails_closed,
            expired_lease_fails_closed,
            complete_repeated_with_same_fence_succeeds,
            transient_backs_off_then_dead,
            permanent_is_dead_at_once,
            once_records_effects_once,
            checkpoint_is_fenced,
            park_until_time_and_signal,
            a_park_on_a_signal_no_store_holds_is_refused,
            begin_effect_checks_and_renews_the_lease,
            once_runs_only_under_a_live_lease,
        );
    };
}

/// The stores a conformance case made (see [`conformance_suite!`]), kept with what they
/// need alive until the case's counters are checked.
#[derive(Default)]
pub struct Made(std::sync::Mutex<Vec<(Store, Arc<dyn Any + Send + Sync>)>>);

impl std::fmt::Debug for Made {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Made").finish_non_exhaustive()
    }
}

impl Made {
    /// `backend`, recorded.
    pub async fn track(&self, backend: impl Future<Output = TestBackend>) -> TestBackend {
        let b = backend.await;
        let guard: Arc<dyn Any + Send + Sync> = Arc::new(std::sync::Mutex::new(b.guard));
        if let Ok(mut made) = self.0.lock() {
            made.push((b.store.clone(), Arc::clone(&guard)));
        }
        TestBackend {
            store: b.store,
            clock: b.clock,
            guard: Box::new(guard),
            worker: b.worker,
            other_worker: b.other_worker,
        }
    }

    /// Panics unless every recorded store's counters equal a count of its items.
    pub async fn counters_agree(&self) {
        let made = self.0.lock().map(|m| m.clone()).unwrap_or_default();
        for (store, _guard) in made {
            counters_agree(&store).await;
        }
    }
}

/// Panics unless the store's counters (after a fold) equal a count of its items per (lane,
/// kind, state): what `stats` and the dashboard read must be what is there.
pub async fn counters_agree(store: &Store) {
    ok(store.fold_counts().await, "fold the counters");
    let counted = ok(store.counts().await, "counts");
    let mut listed: std::collections::BTreeMap<(String, String, crate::item::ItemState), u64> =
        Default::default();
    for r in ok(store.list(crate::item::ListFilter::default()).await, "list") {
        *listed.entry((r.lane, r.kind, r.state)).or_default() += 1;
    }
    let listed: Vec<_> = listed
        .into_iter()
        .map(|((lane, kind, state), n)| (lane, kind, state, n))
        .collect();
    assert_eq!(counted, listed, "the counters disagree with the items");
}

/// The default `run_if` of [`conformance_suite!`](crate::conformance_suite): always run.
pub fn always() -> bool {
    true
}

pub(super) const LEASE: Duration = Duration::from_secs(30);

pub(super) fn ok<T, E: std::fmt::Debug>(r: Result<T, E>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e:?}"),
    }
}

pub(super) fn stale<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::StaleLease { .. }) => {}
        other => panic!("{what}: expected StaleLease, got {other:?}"),
    }
}

pub(super) async fn get(store: &Store, id: i64) -> ItemRecord {
    ok(store.get(id).await, "get").unwrap_or_else(|| panic!("item {id} missing"))
}

pub(super) fn new(kind: &str) -> NewItem {
    NewItem::new(kind, json!({"n": 1}))
}

pub(super) async fn fresh<F, Fut>(make: F) -> TestBackend
where
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
{
    let b = make().await;
    ok(b.store.migrate().await, "migrate");
    b
}
