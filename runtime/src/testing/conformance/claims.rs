//! Conformance: items in and out — migrations, enqueue, dedupe among live items, due
//! times, priority, lanes, and the fence a claim takes.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok};
use crate::item::{ItemState, ListFilter, NewItem};

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
    let one = b.enqueue(new("A")).await;
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
    let first = b.enqueue(new("A").dedupe_key("k")).await;
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
    ok(b.store.complete(&c.held()).await, "complete");
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
    let id = b.enqueue(new("A").run_at(later)).await;
    assert!(ok(b.worker().claim("default", 10, LEASE).await, "claim").is_empty());
    b.clock.advance(Duration::from_secs(61));
    let claimed = ok(b.worker().claim("default", 10, LEASE).await, "claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].item.id, id);
}

pub async fn priority_orders_claims<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let low = ok(b.store.enqueue(new("A")).await, "low");
    let high = ok(b.store.enqueue(new("A").priority(5)).await, "high");
    let mid = ok(b.store.enqueue(new("A").priority(1)).await, "mid");
    let first = ok(b.worker().claim("default", 1, LEASE).await, "claim");
    assert_eq!(first[0].item.id, high);
    let rest: Vec<i64> = ok(b.worker().claim("default", 5, LEASE).await, "claim")
        .into_iter()
        .map(|c| c.item.id)
        .collect();
    assert_eq!(rest, vec![mid, low]);
}

pub async fn claim_increments_fence<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c1 = ok(
        b.worker().claim_as("w1", "default", 5, LEASE).await,
        "claim",
    )
    .remove(0);
    assert_eq!(c1.fence, 1);
    assert_eq!(c1.lease_expires_at, b.store.now().plus(LEASE));
    let rec = get(&b.store, id).await;
    assert_eq!(rec.state, ItemState::Running);
    // The holder is the one the claim was made as (a remote worker's: its enrolled id).
    assert_eq!(rec.lease_owner.as_deref(), Some(c1.held().owner.as_str()));
    if b.worker.is_none() {
        assert_eq!(rec.lease_owner.as_deref(), Some("w1"));
        // What the claim hands over is the item as stored, to the column (PostgreSQL
        // returns only what it did not set itself, and fills in the rest).
        assert_eq!(c1.item, rec, "the claimed item differs from the stored one");
    }
    assert_eq!(rec.attempt, 1);
    assert!(
        ok(b.worker().claim("default", 5, LEASE).await, "claim").is_empty(),
        "a running item is not claimed twice"
    );
    b.clock.advance(LEASE + Duration::from_millis(1));
    assert_eq!(ok(b.store.sweep().await, "sweep"), 1);
    let c2 = ok(
        b.worker().claim_as("w2", "default", 5, LEASE).await,
        "reclaim",
    )
    .remove(0);
    assert_eq!(c2.fence, 2);
    let rec = get(&b.store, id).await;
    assert_eq!(rec.attempt, 2);
    if b.worker.is_none() {
        assert_eq!(
            c2.item, rec,
            "the reclaimed item differs from the stored one"
        );
    }
}

pub async fn lanes_are_separate<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let fast = ok(b.store.enqueue(new("A").lane("fast")).await, "fast");
    ok(b.store.enqueue(new("A")).await, "default");
    let got = ok(b.worker().claim("fast", 10, LEASE).await, "claim fast");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].item.id, fast);
    assert!(ok(b.worker().claim("fast", 10, LEASE).await, "again").is_empty());
    assert_eq!(
        ok(b.worker().claim("default", 10, LEASE).await, "default").len(),
        1
    );
}
