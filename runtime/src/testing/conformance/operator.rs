//! Conformance: what an operator calls at night — cancel, release a dead worker's items,
//! show an item's effects, the outbox backlog, scheduled items kept apart from due ones,
//! and newest-first listing by kind.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok, stale};
use crate::error::StoreError;
use crate::item::{ItemState, ListFilter, NewItem, WorkerRecord, WorkerState};

pub async fn operator_cancel_and_release<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let waiting = b.enqueue(new("A")).await;
    let running = b.enqueue(new("A")).await;
    let c = ok(b.store.claim_as("w-1", "default", 1, LEASE).await, "claim");
    assert_eq!(c[0].item.id, waiting);
    let second = ok(b.store.claim_as("w-2", "default", 1, LEASE).await, "claim").remove(0);
    assert_eq!(second.item.id, running);

    // Cancel a running item: its holder's writes no longer land.
    ok(b.store.cancel(running).await, "cancel running");
    let rec = get(&b.store, running).await;
    assert_eq!(rec.state, ItemState::Dead);
    assert_eq!(rec.last_error.as_deref(), Some("cancelled by an operator"));
    stale(b.store.complete(&second.held()).await, "holder completes");
    match b.store.cancel(running).await {
        Err(StoreError::WrongState { .. }) => {}
        other => panic!("cancelling a dead item: {other:?}"),
    }

    // Release a dead worker's items now, instead of after its lease.
    ok(
        b.store
            .put_worker(WorkerRecord {
                id: "w-1".to_owned(),
                lanes: vec!["default".to_owned()],
                state: WorkerState::Online,
                started_at: b.store.now(),
                last_seen_at: b.store.now(),
                lease_ms: 30_000,
            })
            .await,
        "put worker",
    );
    assert_eq!(ok(b.store.release_worker("w-1").await, "release"), 1);
    let rec = get(&b.store, waiting).await;
    assert_eq!((rec.state, rec.lease_owner), (ItemState::Available, None));
    stale(
        b.store.complete(&c[0].held()).await,
        "released holder completes",
    );
    let w = ok(b.store.workers().await, "workers");
    assert_eq!(w[0].state, WorkerState::Offline);
    let again = ok(b.store.claim("default", 1, LEASE).await, "claim again").remove(0);
    assert_eq!((again.item.id, again.item.attempt), (waiting, 2));
}

pub async fn operator_views<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let due = b.enqueue(new("A")).await;
    let later = b.store.now().plus(Duration::from_secs(3600));
    ok(
        b.store.enqueue(new("SWEEP").run_at(later)).await,
        "scheduled",
    );
    let newest = b.enqueue(new("B")).await;
    let stats = ok(b.store.stats().await, "stats");
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0].get(ItemState::Available).count, 2, "due items");
    assert_eq!(
        stats[0].scheduled, 1,
        "the future item is scheduled, not available"
    );

    let listed = ok(
        b.store
            .list(ListFilter {
                newest_first: true,
                limit: Some(2),
                ..ListFilter::default()
            })
            .await,
        "list",
    );
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].id, newest);
    let by_kind = ok(
        b.store
            .list(ListFilter {
                kind: Some("A".to_owned()),
                ..ListFilter::default()
            })
            .await,
        "list by kind",
    );
    assert_eq!(by_kind.iter().map(|r| r.id).collect::<Vec<_>>(), [due]);

    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    ok(
        b.store.record_effect(&c.held(), "b", json!(2)).await,
        "effect",
    );
    ok(
        b.store.record_effect(&c.held(), "a", json!({"x": 1})).await,
        "effect",
    );
    let effects = ok(b.store.effects(c.item.id).await, "effects");
    assert_eq!(
        effects
            .iter()
            .map(|e| (e.key.as_str(), e.fence))
            .collect::<Vec<_>>(),
        [("a", c.fence), ("b", c.fence)]
    );
    assert_eq!(effects[0].output, json!({"x": 1}));

    let empty = ok(b.store.outbox_stats().await, "outbox stats");
    assert_eq!((empty.pending, empty.refused), (0, 0));
    for n in 0..3 {
        ok(
            b.store
                .transaction(move |tx| tx.enqueue(NewItem::new("A", json!({ "n": n }))))
                .await,
            "outbox row",
        );
    }
    b.clock.advance(Duration::from_secs(2));
    let backlog = ok(b.store.outbox_stats().await, "outbox stats");
    assert_eq!(backlog.pending, 3);
    assert!(backlog.oldest_pending_age_ms >= 2_000);
    ok(b.store.relay_outbox(2).await, "relay two");
    assert_eq!(ok(b.store.outbox_stats().await, "outbox stats").pending, 1);
}
