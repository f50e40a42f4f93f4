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

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::context::WorkContext;
use crate::error::{BuildError, StoreError, WorkError};
use crate::handler::WorkHandler;
use crate::item::{Finish, Item, ItemRecord, ItemState, ListFilter, NewItem, Outcome, WorkerState};
use crate::retry::RetryPolicy;
use crate::spec::WorkKindSpec;
use crate::store::Store;
use crate::time::ManualClock;
use crate::work_loop::{LoopEvent, WorkLoop};

/// A fresh store for one test, its clock, and whatever must live as long as it (a
/// temporary directory, a database schema).
pub struct TestBackend {
    pub store: Store,
    pub clock: Arc<ManualClock>,
    pub guard: Box<dyn Any + Send>,
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
#[macro_export]
macro_rules! conformance_suite {
    ($make:path) => {
        $crate::conformance_suite!(@tests $make;
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
            stats_per_lane_and_state,
            loop_build_refusals,
            loop_drains_all_items,
            loop_unknown_kind_and_undecodable_payload_are_dead,
            loop_transient_retries_with_backoff,
            loop_lost_lease_cancels_handler,
            loop_drain_releases_items_past_deadline,
            loop_worker_lifecycle,
            loop_relays_the_outbox,
            loop_heartbeats_keep_a_long_handler,
        );
    };
    (@tests $make:path; $($name:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $crate::testing::conformance::$name($make).await;
            }
        )*
    };
}

const LEASE: Duration = Duration::from_secs(30);

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e:?}"),
    }
}

fn stale<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::StaleLease { .. }) => {}
        other => panic!("{what}: expected StaleLease, got {other:?}"),
    }
}

async fn get(store: &Store, id: i64) -> ItemRecord {
    ok(store.get(id).await, "get").unwrap_or_else(|| panic!("item {id} missing"))
}

fn new(kind: &str) -> NewItem {
    NewItem::new(kind, json!({"n": 1}))
}

async fn fresh<F, Fut>(make: F) -> TestBackend
where
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
{
    let b = make().await;
    ok(b.store.migrate().await, "migrate");
    b
}

pub async fn migrate_is_idempotent<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let v1 = ok(b.store.migrate().await, "second migrate");
    let v2 = ok(b.store.migrate().await, "third migrate");
    assert_eq!(v1, v2);
    assert_eq!(ok(b.store.schema_version().await, "version"), v1);
    ok(b.store.require_migrated().await, "require_migrated");
}

pub async fn enqueue_one_and_many<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let one = ok(b.store.enqueue(new("A")).await, "enqueue");
    let many = ok(
        b.store
            .enqueue_many(
                (0..50)
                    .map(|i| NewItem::new("B", json!({"i": i})))
                    .collect(),
            )
            .await,
        "enqueue_many",
    );
    assert_eq!(many.len(), 50);
    let mut all = many.clone();
    all.push(one);
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 51, "ids are distinct");
    let rec = get(&b.store, many[7]).await;
    assert_eq!(rec.payload, json!({"i": 7}));
    assert_eq!(rec.state, ItemState::Available);
    assert_eq!((rec.attempt, rec.fence), (0, 0));
    let listed = ok(b.store.list(ListFilter::default()).await, "list");
    assert_eq!(listed.len(), 51);
}

pub async fn dedupe_key_is_unique_among_live_items<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let first = ok(b.store.enqueue(new("A").dedupe_key("k")).await, "enqueue");
    let again = ok(
        b.store.enqueue(new("A").dedupe_key("k")).await,
        "enqueue dup",
    );
    assert_eq!(first, again, "a live duplicate returns the live item's id");
    let batch = ok(
        b.store
            .enqueue_many(vec![new("A").dedupe_key("m"), new("A").dedupe_key("m")])
            .await,
        "batch dup",
    );
    assert_eq!(batch[0], batch[1]);
    assert_eq!(
        ok(b.store.list(ListFilter::default()).await, "list").len(),
        2
    );
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    assert_eq!(c.item.id, first);
    ok(b.store.complete(first, c.fence).await, "complete");
    let after = ok(
        b.store.enqueue(new("A").dedupe_key("k")).await,
        "enqueue after completion",
    );
    assert_ne!(after, first, "a completed item frees its key");
}

pub async fn dedupe_is_race_free<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = b.store.clone();
            tokio::spawn(async move { store.enqueue(new("A").dedupe_key("race")).await })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(ok(ok(t.await, "join"), "enqueue"));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "every racer got the same item");
    assert_eq!(
        ok(b.store.list(ListFilter::default()).await, "list").len(),
        1
    );
}

pub async fn run_at_delays_claim<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let later = b.store.now().plus(Duration::from_secs(60));
    let id = ok(b.store.enqueue(new("A").run_at(later)).await, "enqueue");
    assert!(ok(b.store.claim("default", 10, LEASE).await, "claim").is_empty());
    b.clock.advance(Duration::from_secs(61));
    let claimed = ok(b.store.claim("default", 10, LEASE).await, "claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].item.id, id);
}

pub async fn priority_orders_claims<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let low = ok(b.store.enqueue(new("A")).await, "low");
    let high = ok(b.store.enqueue(new("A").priority(5)).await, "high");
    let mid = ok(b.store.enqueue(new("A").priority(1)).await, "mid");
    let first = ok(b.store.claim("default", 1, LEASE).await, "claim");
    assert_eq!(first[0].item.id, high);
    let rest: Vec<i64> = ok(b.store.claim("default", 5, LEASE).await, "claim")
        .into_iter()
        .map(|c| c.item.id)
        .collect();
    assert_eq!(rest, vec![mid, low]);
}

pub async fn claim_increments_fence<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let c1 = ok(b.store.claim_as("w1", "default", 5, LEASE).await, "claim").remove(0);
    assert_eq!(c1.fence, 1);
    assert_eq!(c1.lease_expires_at, b.store.now().plus(LEASE));
    let rec = get(&b.store, id).await;
    assert_eq!(rec.state, ItemState::Running);
    assert_eq!(rec.lease_owner.as_deref(), Some("w1"));
    assert_eq!(rec.attempt, 1);
    assert!(
        ok(b.store.claim("default", 5, LEASE).await, "claim").is_empty(),
        "a running item is not claimed twice"
    );
    b.clock.advance(LEASE + Duration::from_millis(1));
    assert_eq!(ok(b.store.sweep().await, "sweep"), 1);
    let c2 = ok(b.store.claim_as("w2", "default", 5, LEASE).await, "reclaim").remove(0);
    assert_eq!(c2.fence, 2);
    assert_eq!(get(&b.store, id).await.attempt, 2);
}

pub async fn lanes_are_separate<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let fast = ok(b.store.enqueue(new("A").lane("fast")).await, "fast");
    ok(b.store.enqueue(new("A")).await, "default");
    let got = ok(b.store.claim("fast", 10, LEASE).await, "claim fast");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].item.id, fast);
    assert!(ok(b.store.claim("fast", 10, LEASE).await, "again").is_empty());
    assert_eq!(
        ok(b.store.claim("default", 10, LEASE).await, "default").len(),
        1
    );
}

pub async fn heartbeat_returns_renewed_lease<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(Duration::from_secs(20));
    let renewed = ok(b.store.heartbeat(id, c.fence, LEASE).await, "heartbeat");
    assert_eq!(renewed, b.store.now().plus(LEASE));
    assert_eq!(get(&b.store, id).await.lease_expires_at, Some(renewed));
    b.clock.advance(Duration::from_secs(20));
    assert_eq!(
        ok(b.store.sweep().await, "sweep"),
        0,
        "the renewed lease holds past the first"
    );
    ok(b.store.complete(id, c.fence).await, "complete");
}

pub async fn stale_fence_fails_closed<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let old = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(LEASE + Duration::from_millis(1));
    ok(b.store.sweep().await, "sweep");
    let cur = ok(b.store.claim("default", 1, LEASE).await, "reclaim").remove(0);
    let before = get(&b.store, id).await;
    stale(b.store.heartbeat(id, old.fence, LEASE).await, "heartbeat");
    stale(
        b.store.checkpoint(id, old.fence, json!({"x": 1})).await,
        "checkpoint",
    );
    stale(b.store.complete(id, old.fence).await, "complete");
    let retry_at = b.store.now();
    stale(
        b.store
            .fail(
                id,
                old.fence,
                Outcome::Retry {
                    retry_at,
                    error: "x".into(),
                },
            )
            .await,
        "fail transient",
    );
    stale(
        b.store
            .fail(id, old.fence, Outcome::Dead { error: "x".into() })
            .await,
        "fail permanent",
    );
    stale(
        b.store.record_effect(id, old.fence, "e", json!(1)).await,
        "record_effect",
    );
    assert_eq!(
        get(&b.store, id).await,
        before,
        "a stale holder changed nothing"
    );
    assert!(ok(b.store.effect(id, "e").await, "effect").is_none());
    ok(
        b.store.complete(id, cur.fence).await,
        "current holder completes",
    );
}

pub async fn expired_lease_fails_closed<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(LEASE);
    let before = get(&b.store, id).await;
    stale(b.store.heartbeat(id, c.fence, LEASE).await, "heartbeat");
    stale(
        b.store.checkpoint(id, c.fence, json!(1)).await,
        "checkpoint",
    );
    stale(b.store.complete(id, c.fence).await, "complete");
    stale(
        b.store
            .fail(id, c.fence, Outcome::Dead { error: "x".into() })
            .await,
        "fail",
    );
    assert_eq!(get(&b.store, id).await, before, "nothing changed");
}

pub async fn complete_repeated_with_same_fence_succeeds<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    ok(b.store.complete(id, c.fence).await, "complete");
    let done = get(&b.store, id).await;
    ok(b.store.complete(id, c.fence).await, "complete again");
    assert_eq!(get(&b.store, id).await, done);
    stale(
        b.store.complete(id, c.fence - 1).await,
        "an older fence is still refused",
    );
    let batch = ok(
        b.store
            .finish_many(vec![
                Finish {
                    id,
                    fence: c.fence,
                    outcome: Outcome::Complete,
                },
                Finish {
                    id,
                    fence: c.fence + 1,
                    outcome: Outcome::Complete,
                },
            ])
            .await,
        "batch",
    );
    assert!(batch[0].is_ok());
    assert!(
        matches!(batch[1], Err(StoreError::StaleLease { .. })),
        "each row checks its own fence"
    );
}

pub async fn transient_backs_off_then_dead<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let policy = RetryPolicy {
        base: Duration::from_secs(2),
        cap: Duration::from_secs(5),
    };
    let id = ok(b.store.enqueue(new("A").max_attempts(3)).await, "enqueue");
    for attempt in 1..=3 {
        let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
        assert_eq!(c.item.attempt, attempt);
        let delay = policy.delay(attempt);
        assert!(delay >= policy.step(attempt) / 2 && delay <= policy.step(attempt));
        let retry_at = b.store.now().plus(delay);
        ok(
            b.store
                .fail(
                    id,
                    c.fence,
                    Outcome::Retry {
                        retry_at,
                        error: format!("boom {attempt}"),
                    },
                )
                .await,
            "fail",
        );
        let rec = get(&b.store, id).await;
        if attempt < 3 {
            assert_eq!(rec.state, ItemState::Failed);
            assert_eq!(rec.run_at, retry_at);
            b.clock.advance(delay);
        } else {
            assert_eq!(rec.state, ItemState::Dead, "out of attempts");
            assert_eq!(rec.last_error.as_deref(), Some("boom 3"));
        }
    }
    assert_eq!(policy.step(1), Duration::from_secs(2));
    assert_eq!(policy.step(2), Duration::from_secs(4));
    assert_eq!(policy.step(9), Duration::from_secs(5), "capped");
}

pub async fn permanent_is_dead_at_once<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    ok(
        b.store
            .fail(
                id,
                c.fence,
                Outcome::Dead {
                    error: "bad".into(),
                },
            )
            .await,
        "fail",
    );
    let rec = get(&b.store, id).await;
    assert_eq!((rec.state, rec.attempt), (ItemState::Dead, 1));
}

pub async fn sweeper_returns_expired_leases<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let last = ok(b.store.enqueue(new("A").max_attempts(1)).await, "enqueue");
    ok(b.store.claim("default", 2, LEASE).await, "claim");
    assert_eq!(ok(b.store.sweep().await, "early sweep"), 0);
    b.clock.advance(LEASE);
    assert_eq!(ok(b.store.sweep().await, "sweep"), 2);
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.lease_owner.clone()),
        (ItemState::Available, None)
    );
    assert_eq!(rec.attempt, 1, "the expired attempt counts");
    assert_eq!(
        get(&b.store, last).await.state,
        ItemState::Dead,
        "out of attempts"
    );
}

pub async fn retry_and_discard_dead_items<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let ids = ok(
        b.store
            .enqueue_many(vec![new("A"), new("A"), new("A")])
            .await,
        "enqueue",
    );
    for c in ok(b.store.claim("default", 3, LEASE).await, "claim") {
        ok(
            b.store
                .fail(c.item.id, c.fence, Outcome::Dead { error: "x".into() })
                .await,
            "fail",
        );
    }
    ok(b.store.retry(ids[0]).await, "retry");
    let rec = get(&b.store, ids[0]).await;
    assert_eq!((rec.state, rec.attempt), (ItemState::Available, 0));
    assert!(
        matches!(
            b.store.retry(ids[0]).await,
            Err(StoreError::WrongState { .. })
        ),
        "only dead items retry"
    );
    assert!(matches!(
        b.store.retry(9_999_999).await,
        Err(StoreError::NotFound(_))
    ));
    ok(b.store.discard(ids[1]).await, "discard");
    assert!(ok(b.store.get(ids[1]).await, "get").is_none());
    assert!(
        matches!(
            b.store.discard(ids[0]).await,
            Err(StoreError::WrongState { .. })
        ),
        "only dead items discard"
    );
    assert_eq!(ok(b.store.retry_all_dead().await, "retry all"), 1);
    assert_eq!(get(&b.store, ids[2]).await.state, ItemState::Available);
}

pub async fn once_records_effects_once<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let runs = AtomicUsize::new(0);
    let c1 = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    let ctx = WorkContext::new(b.store.clone(), id, c1.fence, None);
    let out: String = ok(
        ctx.once("send", || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("sent-1".to_owned())
        })
        .await,
        "once",
    );
    assert_eq!(out, "sent-1");
    // The worker dies before completing; the item comes back and the handler runs again.
    b.clock.advance(LEASE);
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.store.claim("default", 1, LEASE).await, "reclaim").remove(0);
    let ctx2 = WorkContext::new(b.store.clone(), id, c2.fence, None);
    let again: String = ok(
        ctx2.once("send", || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("sent-2".to_owned())
        })
        .await,
        "once again",
    );
    assert_eq!(again, "sent-1", "the recorded output comes back");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the effect ran once");
    // A stale holder's effect is not recorded.
    let r: Result<u8, WorkError> = ctx.once("other", || async { Ok(1) }).await;
    assert!(matches!(
        r,
        Err(WorkError::Store(StoreError::StaleLease { .. }))
    ));
    assert!(ok(b.store.effect(id, "other").await, "effect").is_none());
    assert_eq!(
        ok(b.store.effect(id, "send").await, "effect"),
        Some(json!("sent-1"))
    );
}

pub async fn checkpoint_is_fenced<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = ok(b.store.enqueue(new("A")).await, "enqueue");
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    ok(
        b.store.checkpoint(id, c.fence, json!({"cursor": 10})).await,
        "checkpoint",
    );
    assert_eq!(
        get(&b.store, id).await.checkpoint,
        Some(json!({"cursor": 10}))
    );
    stale(
        b.store
            .checkpoint(id, c.fence + 1, json!({"cursor": 99}))
            .await,
        "wrong fence",
    );
    b.clock.advance(LEASE);
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.store.claim("default", 1, LEASE).await, "reclaim").remove(0);
    assert_eq!(
        c2.item.checkpoint,
        Some(json!({"cursor": 10})),
        "the next claim sees the checkpoint"
    );
}

pub async fn outbox_commits_with_the_producer_transaction<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let direct = ok(b.store.enqueue(new("A")).await, "enqueue");
    let store = b.store.clone();
    let rolled_back: Result<i64, StoreError> = b
        .store
        .transaction(move |tx| {
            store.enqueue_in(tx, new("OUT"))?;
            Err(StoreError::Task("producer aborted".into()))
        })
        .await;
    assert!(rolled_back.is_err());
    assert_eq!(
        ok(b.store.relay_outbox(100).await, "relay"),
        0,
        "a rolled-back row was never written"
    );
    let store = b.store.clone();
    let row = ok(
        b.store
            .transaction(move |tx| {
                if let Some(conn) = tx.connection() {
                    conn.execute_batch(
                        "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)",
                    )?;
                    conn.execute("INSERT INTO orders (id) VALUES (1)", [])?;
                }
                store.enqueue_in(tx, new("OUT").dedupe_key("order-1"))
            })
            .await,
        "commit",
    );
    assert_ne!(row, direct, "outbox ids never collide with item ids");
    assert!(
        ok(b.store.get(row).await, "get").is_none(),
        "not an item before the relay"
    );
    assert_eq!(ok(b.store.relay_outbox(100).await, "relay"), 1);
    let item = get(&b.store, row).await;
    assert_eq!((item.id, item.kind.as_str()), (row, "OUT"));
    assert_eq!(ok(b.store.relay_outbox(100).await, "relay again"), 0);
    assert_eq!(
        ok(b.store.list(ListFilter::default()).await, "list").len(),
        2,
        "relaying twice is a no-op"
    );
    let next = ok(b.store.enqueue(new("A")).await, "enqueue after relay");
    assert!(next > row);
}

#[derive(Debug, Serialize, Deserialize)]
struct Steps {
    n: u32,
}

struct StepHandler {
    ran: Arc<std::sync::Mutex<Vec<String>>>,
    fail_at_b: Arc<AtomicBool>,
}

impl WorkHandler for StepHandler {
    type Payload = Steps;
    const KIND: &'static str = "ORCH";
    const REQUIRES: &'static [&'static str] = &["orch.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Steps>) -> Result<(), WorkError> {
        let ran = Arc::clone(&self.ran);
        let a: u32 = ctx
            .step("a", || async move {
                ran.lock()
                    .map_err(|_| WorkError::permanent("poisoned"))?
                    .push("a".into());
                Ok(item.payload.n + 1)
            })
            .await?;
        if self.fail_at_b.swap(false, Ordering::SeqCst) {
            return Err(WorkError::transient("crash before b"));
        }
        let ran = Arc::clone(&self.ran);
        let b: u32 = ctx
            .step("b", || async move {
                ran.lock()
                    .map_err(|_| WorkError::permanent("poisoned"))?
                    .push("b".into());
                Ok(a * 10)
            })
            .await?;
        assert_eq!(b, (item.payload.n + 1) * 10);
        Ok(())
    }
}

pub async fn orchestration_resumes_at_last_checkpoint<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let h = StepHandler {
        ran: Arc::default(),
        fail_at_b: Arc::new(AtomicBool::new(true)),
    };
    let id = ok(
        b.store.enqueue(NewItem::new("ORCH", json!({"n": 4}))).await,
        "enqueue",
    );
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    let ctx = WorkContext::new(b.store.clone(), id, c.fence, c.item.checkpoint.clone());
    let item = Item::from_record(&c.item, c.fence, Steps { n: 4 });
    assert!(matches!(
        h.handle(&ctx, &item).await,
        Err(WorkError::Transient(_))
    ));
    // The worker restarts: the lease expires and another claim resumes after step a.
    b.clock.advance(LEASE);
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.store.claim("default", 1, LEASE).await, "reclaim").remove(0);
    let ctx2 = WorkContext::new(b.store.clone(), id, c2.fence, c2.item.checkpoint.clone());
    assert_eq!(ctx2.finished_steps(), vec!["a".to_owned()]);
    ok(
        h.handle(
            &ctx2,
            &Item::from_record(&c2.item, c2.fence, Steps { n: 4 }),
        )
        .await,
        "resume",
    );
    ok(b.store.complete(id, c2.fence).await, "complete");
    let ran = h.ran.lock().map(|r| r.clone()).unwrap_or_default();
    assert_eq!(
        ran,
        vec!["a".to_owned(), "b".to_owned()],
        "no step ran twice"
    );
    assert_eq!(
        get(&b.store, id).await.checkpoint,
        Some(json!({"steps": {"a": 5, "b": 50}}))
    );
}

pub async fn park_until_time_and_signal<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let timed = ok(b.store.enqueue(new("A")).await, "enqueue");
    let signalled = ok(b.store.enqueue(new("A")).await, "enqueue");
    let claimed = ok(b.store.claim("default", 2, LEASE).await, "claim");
    let until = b.store.now().plus(Duration::from_secs(600));
    for c in &claimed {
        let outcome = if c.item.id == timed {
            Outcome::Park {
                until: Some(until),
                signal: None,
            }
        } else {
            Outcome::Park {
                until: None,
                signal: Some("approved".into()),
            }
        };
        ok(b.store.fail(c.item.id, c.fence, outcome).await, "park");
    }
    let rec = get(&b.store, timed).await;
    assert_eq!(
        (rec.state, rec.attempt),
        (ItemState::Parked, 0),
        "parking gives the attempt back"
    );
    assert!(ok(b.store.claim("default", 5, LEASE).await, "claim").is_empty());
    assert_eq!(ok(b.store.signal("other").await, "signal"), 0);
    assert_eq!(ok(b.store.signal("approved").await, "signal"), 1);
    let woke = ok(b.store.claim("default", 5, LEASE).await, "claim");
    assert_eq!(
        woke.iter().map(|c| c.item.id).collect::<Vec<_>>(),
        vec![signalled]
    );
    b.clock.advance(Duration::from_secs(600));
    let due = ok(b.store.claim("default", 5, LEASE).await, "claim");
    assert_eq!(
        due.iter().map(|c| c.item.id).collect::<Vec<_>>(),
        vec![timed]
    );
}

pub async fn stats_per_lane_and_state<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    ok(
        b.store
            .enqueue_many(vec![new("A"), new("A"), new("A"), new("A").lane("bulk")])
            .await,
        "enqueue",
    );
    b.clock.advance(Duration::from_secs(5));
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    ok(b.store.complete(c.item.id, c.fence).await, "complete");
    ok(b.store.claim("default", 1, LEASE).await, "claim");
    let stats = ok(b.store.stats().await, "stats");
    let lanes: Vec<&str> = stats.iter().map(|l| l.lane.as_str()).collect();
    assert_eq!(lanes, vec!["bulk", "default"]);
    let d = &stats[1];
    assert_eq!(d.get(ItemState::Available).count, 1);
    assert_eq!(d.get(ItemState::Available).oldest_age_ms, 5000);
    assert_eq!(d.get(ItemState::Running).count, 1);
    assert_eq!(d.get(ItemState::Completed).count, 1);
    assert_eq!(d.get(ItemState::Dead).count, 0);
    assert_eq!(stats[0].get(ItemState::Available).count, 1);
}

// ---- the work loop over this backend ----

#[derive(Debug, Serialize, Deserialize)]
struct Job {
    n: u32,
}

static REGISTRY: &[&[WorkKindSpec]] = &[&[
    WorkKindSpec {
        name: "JOB",
        permission: "jobs.run",
        lane: "default",
        ..WorkKindSpec::DEFAULT
    },
    WorkKindSpec {
        name: "FLAKY",
        permission: "jobs.run",
        lane: "default",
        ..WorkKindSpec::DEFAULT
    },
    WorkKindSpec {
        name: "HANG",
        permission: "jobs.hang",
        lane: "slow",
        ..WorkKindSpec::DEFAULT
    },
    WorkKindSpec {
        name: "LONG",
        permission: "jobs.long",
        lane: "long",
        max_attempts: 1,
        ..WorkKindSpec::DEFAULT
    },
]];

#[derive(Default)]
struct JobHandler {
    done: Arc<AtomicUsize>,
}

impl WorkHandler for JobHandler {
    type Payload = Job;
    const KIND: &'static str = "JOB";
    const REQUIRES: &'static [&'static str] = &["jobs.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Job>) -> Result<(), WorkError> {
        let n = item.payload.n;
        ctx.once("effect", || async move { Ok(n) }).await?;
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

struct FlakyHandler;

impl WorkHandler for FlakyHandler {
    type Payload = Job;
    const KIND: &'static str = "FLAKY";
    const REQUIRES: &'static [&'static str] = &["jobs.run"];
    async fn handle(&self, _: &WorkContext, item: &Item<Job>) -> Result<(), WorkError> {
        if item.attempt < 2 {
            Err(WorkError::transient("first try fails"))
        } else {
            Ok(())
        }
    }
}

struct HangHandler {
    started: Arc<tokio::sync::Notify>,
    dropped: Arc<AtomicUsize>,
}

struct DropFlag(Arc<AtomicUsize>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl WorkHandler for HangHandler {
    type Payload = Value;
    const KIND: &'static str = "HANG";
    const REQUIRES: &'static [&'static str] = &["jobs.hang"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        let _flag = DropFlag(Arc::clone(&self.dropped));
        self.started.notify_one();
        std::future::pending::<()>().await;
        Ok(())
    }
}

struct WrongPermission;
impl WorkHandler for WrongPermission {
    type Payload = Value;
    const KIND: &'static str = "JOB";
    const REQUIRES: &'static [&'static str] = &["something.else"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        Ok(())
    }
}

struct Unregistered;
impl WorkHandler for Unregistered {
    type Payload = Value;
    const KIND: &'static str = "NOT_REGISTERED";
    const REQUIRES: &'static [&'static str] = &[];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        Ok(())
    }
}

fn hang() -> HangHandler {
    HangHandler {
        started: Arc::default(),
        dropped: Arc::default(),
    }
}

pub async fn loop_build_refusals<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let s = || b.store.clone();
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .handler(FlakyHandler)
        .handler(Unregistered)
        .build();
    assert!(matches!(r, Err(BuildError::UnknownKind { kind }) if kind == "NOT_REGISTERED"));
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .build();
    assert!(matches!(r, Err(BuildError::MissingHandler { kind, .. }) if kind == "FLAKY"));
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(WrongPermission)
        .handler(FlakyHandler)
        .build();
    assert!(
        matches!(r, Err(BuildError::PermissionNotGranted { permission, .. }) if permission == "jobs.run")
    );
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .handler(FlakyHandler)
        .concurrency(0)
        .build();
    assert!(matches!(r, Err(BuildError::ZeroConcurrency)));
    let built = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .handler(FlakyHandler)
        .lane("default")
        .build();
    assert!(
        built.is_ok(),
        "HANG rides lane `slow`, which this loop does not serve"
    );
    let by_spec = ok(
        WorkLoop::builder(s(), REGISTRY).handler(hang()).build(),
        "build",
    );
    assert_eq!(
        by_spec.lanes(),
        ["slow".to_owned()],
        "with no lane given, the specs' lanes"
    );
    let slow = WorkLoop::builder(s(), REGISTRY).lane("slow").build();
    assert!(matches!(slow, Err(BuildError::MissingHandler { kind, .. }) if kind == "HANG"));
}

/// Resolves once `store` holds `n` items in `state`.
async fn until_count(store: &Store, state: ItemState, n: u64) {
    loop {
        let count: u64 = ok(store.stats().await, "stats")
            .iter()
            .map(|l| l.get(state).count)
            .sum();
        if count >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn job_loop(store: &Store, done: Arc<AtomicUsize>) -> WorkLoop {
    ok(
        WorkLoop::builder(store.clone(), REGISTRY)
            .handler(JobHandler { done })
            .handler(FlakyHandler)
            .lane("default")
            .concurrency(4)
            .prefetch(16)
            .poll_interval(Duration::from_millis(5))
            .retry_policy(RetryPolicy {
                base: Duration::ZERO,
                cap: Duration::ZERO,
            })
            .build(),
        "build",
    )
}

pub async fn loop_drains_all_items<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let n: u32 = 300;
    ok(
        b.store
            .enqueue_many(
                (0..n)
                    .map(|i| NewItem::new("JOB", json!({"n": i})))
                    .collect(),
            )
            .await,
        "enqueue",
    );
    let done = Arc::new(AtomicUsize::new(0));
    let lp = job_loop(&b.store, Arc::clone(&done));
    ok(
        lp.run(until_count(&b.store, ItemState::Completed, u64::from(n)))
            .await,
        "run",
    );
    assert_eq!(done.load(Ordering::SeqCst), n as usize);
    assert_eq!(lp.counters().completed.load(Ordering::SeqCst), u64::from(n));
    assert_eq!(lp.counters().stale_rejected.load(Ordering::SeqCst), 0);
    let items = ok(b.store.list(ListFilter::default()).await, "list");
    assert!(
        items
            .iter()
            .all(|i| i.state == ItemState::Completed && i.fence == 1)
    );
    for i in items.iter().take(5) {
        assert!(ok(b.store.effect(i.id, "effect").await, "effect").is_some());
    }
}

pub async fn loop_unknown_kind_and_undecodable_payload_are_dead<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let unknown = ok(
        b.store.enqueue(NewItem::new("NOBODY", json!({}))).await,
        "enqueue",
    );
    let garbled = ok(
        b.store
            .enqueue(NewItem::new("JOB", json!({"n": "not a number"})))
            .await,
        "enqueue",
    );
    let lp = job_loop(&b.store, Arc::default());
    ok(
        lp.run(until_count(&b.store, ItemState::Dead, 2)).await,
        "run",
    );
    let u = get(&b.store, unknown).await;
    assert_eq!((u.state, u.attempt), (ItemState::Dead, 1), "dead at once");
    assert!(
        u.last_error
            .as_deref()
            .is_some_and(|e| e.contains("unknown kind"))
    );
    let g = get(&b.store, garbled).await;
    assert_eq!((g.state, g.attempt), (ItemState::Dead, 1), "dead at once");
    assert!(
        g.last_error
            .as_deref()
            .is_some_and(|e| e.contains("undecodable payload"))
    );
}

pub async fn loop_transient_retries_with_backoff<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(
        b.store
            .enqueue(NewItem::new("FLAKY", json!({"n": 1})))
            .await,
        "enqueue",
    );
    let lp = job_loop(&b.store, Arc::default());
    ok(
        lp.run(until_count(&b.store, ItemState::Completed, 1)).await,
        "run",
    );
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.attempt, rec.fence),
        (ItemState::Completed, 2, 2)
    );
    assert_eq!(rec.last_error.as_deref(), Some("first try fails"));
    assert_eq!(lp.counters().retried.load(Ordering::SeqCst), 1);
}

pub async fn loop_lost_lease_cancels_handler<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(
        b.store
            .enqueue(NewItem::new("HANG", json!({})).lane("slow"))
            .await,
        "enqueue",
    );
    let h = hang();
    let (started, dropped) = (Arc::clone(&h.started), Arc::clone(&h.dropped));
    let lost = Arc::new(tokio::sync::Notify::new());
    let on_lost = Arc::clone(&lost);
    let lease = Duration::from_millis(300);
    let lp = ok(
        WorkLoop::builder(b.store.clone(), REGISTRY)
            .handler(h)
            .lane("slow")
            .lease(lease)
            .poll_interval(Duration::from_secs(3600))
            .drain_timeout(Duration::from_millis(50))
            .observer(move |e| {
                if matches!(e, LoopEvent::LeaseLost { .. }) {
                    on_lost.notify_one();
                }
            })
            .build(),
        "build",
    );
    let store = b.store.clone();
    let clock = Arc::clone(&b.clock);
    ok(
        lp.run(async move {
            started.notified().await;
            // Another worker takes the item over: the lease expires and it is claimed anew.
            clock.advance(lease + Duration::from_millis(1));
            ok(store.sweep().await, "sweep");
            let thief = ok(
                store.claim("slow", 1, Duration::from_secs(60)).await,
                "steal",
            );
            assert_eq!(thief.len(), 1);
            lost.notified().await;
        })
        .await,
        "run",
    );
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the handler was cancelled"
    );
    assert_eq!(lp.counters().leases_lost.load(Ordering::SeqCst), 1);
    assert_eq!(lp.counters().completed.load(Ordering::SeqCst), 0);
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.fence),
        (ItemState::Running, 2),
        "the new holder keeps it"
    );
}

pub async fn loop_drain_releases_items_past_deadline<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = ok(
        b.store
            .enqueue(NewItem::new("HANG", json!({})).lane("slow"))
            .await,
        "enqueue",
    );
    let h = hang();
    let (started, dropped) = (Arc::clone(&h.started), Arc::clone(&h.dropped));
    let lp = ok(
        WorkLoop::builder(b.store.clone(), REGISTRY)
            .handler(h)
            .lane("slow")
            .drain_timeout(Duration::from_millis(50))
            .build(),
        "build",
    );
    ok(
        lp.run(async move { started.notified().await }).await,
        "run returns Ok after the drain",
    );
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.attempt, rec.lease_owner.clone()),
        (ItemState::Available, 0, None),
        "released, attempt given back"
    );
    assert_eq!(lp.counters().released.load(Ordering::SeqCst), 1);
}

pub async fn loop_worker_lifecycle<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    ok(
        b.store.enqueue(NewItem::new("JOB", json!({"n": 1}))).await,
        "enqueue",
    );
    let lp = job_loop(&b.store, Arc::default());
    let store = b.store.clone();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen_in = Arc::clone(&seen);
    let me = lp.worker_id().to_owned();
    ok(
        lp.run(async move {
            until_count(&store, ItemState::Completed, 1).await;
            let rows = ok(store.workers().await, "workers");
            if let Ok(mut s) = seen_in.lock() {
                s.extend(rows.into_iter().filter(|w| w.id == me).map(|w| w.state));
            }
        })
        .await,
        "run",
    );
    let during = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(during, vec![WorkerState::Online]);
    let rows = ok(b.store.workers().await, "workers");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].state, WorkerState::Offline);
    assert_eq!(rows[0].lanes, vec!["default".to_owned()]);
}

pub async fn loop_relays_the_outbox<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let store = b.store.clone();
    let row = ok(
        b.store
            .transaction(move |tx| store.enqueue_in(tx, NewItem::new("JOB", json!({"n": 7}))))
            .await,
        "producer transaction",
    );
    let done = Arc::new(AtomicUsize::new(0));
    let lp = ok(
        WorkLoop::builder(b.store.clone(), REGISTRY)
            .handler(JobHandler {
                done: Arc::clone(&done),
            })
            .handler(FlakyHandler)
            .poll_interval(Duration::from_millis(5))
            .sweep_interval(Duration::from_millis(5))
            .build(),
        "build",
    );
    ok(
        lp.run(until_count(&b.store, ItemState::Completed, 1)).await,
        "run",
    );
    assert_eq!(
        get(&b.store, row).await.state,
        ItemState::Completed,
        "the relayed item keeps the row id"
    );
    assert_eq!(done.load(Ordering::SeqCst), 1);
}

/// Runs for twice its lease by the store's clock; only renewed leases let it complete.
struct LongHandler {
    clock: Arc<ManualClock>,
    step: Duration,
}

impl WorkHandler for LongHandler {
    type Payload = Value;
    const KIND: &'static str = "LONG";
    const REQUIRES: &'static [&'static str] = &["jobs.long"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        for _ in 0..6 {
            self.clock.advance(self.step);
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
        Ok(())
    }
}

pub async fn loop_heartbeats_keep_a_long_handler<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let lease = Duration::from_millis(300);
    let spec = REGISTRY[0][3];
    let id = ok(b.store.enqueue(spec.item(json!({}))).await, "enqueue");
    let lp = ok(
        WorkLoop::builder(b.store.clone(), REGISTRY)
            .handler(LongHandler {
                clock: Arc::clone(&b.clock),
                step: lease / 3,
            })
            .lease(lease)
            .sweep_interval(Duration::from_millis(20))
            .build(),
        "build",
    );
    assert_eq!(lp.lanes(), ["long".to_owned()]);
    let store = b.store.clone();
    let settled = async move {
        while !matches!(
            get(&store, id).await.state,
            ItemState::Completed | ItemState::Dead
        ) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    ok(lp.run(settled).await, "run");
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.fence, rec.lane.as_str()),
        (ItemState::Completed, 1, "long")
    );
    assert_eq!(lp.counters().leases_lost.load(Ordering::SeqCst), 0);
}
