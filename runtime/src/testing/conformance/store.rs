//! Conformance: the store's semantics, call by call.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok, stale};
use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::handler::WorkHandler;
use crate::item::{Finish, Item, ItemState, ListFilter, NewItem, Outcome};
use crate::retry::RetryPolicy;

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

pub async fn retention_purges_old_completed_items<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let ids = ok(
        b.store
            .enqueue_many(vec![new("A"), new("A"), new("A"), new("A")])
            .await,
        "enqueue",
    );
    let claimed = ok(b.store.claim("default", 3, LEASE).await, "claim");
    assert_eq!(claimed.len(), 3);
    let (old, recent) = (&claimed[..2], &claimed[2]);
    ok(
        b.store
            .record_effect(old[0].item.id, old[0].fence, "e", json!(1))
            .await,
        "record effect",
    );
    for c in old {
        ok(b.store.complete(c.item.id, c.fence).await, "complete");
    }
    b.clock.advance(Duration::from_secs(10));
    ok(
        b.store.complete(recent.item.id, recent.fence).await,
        "complete",
    );
    b.clock.advance(Duration::from_secs(1));
    let keep = Duration::from_secs(5);
    assert_eq!(
        ok(b.store.purge_completed(keep, 1).await, "purge"),
        1,
        "limit holds"
    );
    assert_eq!(ok(b.store.purge_completed(keep, 100).await, "purge"), 1);
    assert_eq!(ok(b.store.purge_completed(keep, 100).await, "purge"), 0);
    for c in old {
        assert!(ok(b.store.get(c.item.id).await, "get").is_none(), "purged");
    }
    assert!(ok(b.store.effect(old[0].item.id, "e").await, "effect").is_none());
    assert_eq!(
        get(&b.store, recent.item.id).await.state,
        ItemState::Completed
    );
    assert_eq!(get(&b.store, ids[3]).await.state, ItemState::Available);
}
