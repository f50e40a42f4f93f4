//! Conformance: what outlives one attempt — ids that are never handed out twice, dedupe per
//! kind, attempts counted at claim, workers that fall silent, and the retention of the
//! outbox and worker tables.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok, stale};
use crate::item::{Enqueued, ItemState, ListFilter, NewItem, WorkerRecord, WorkerState};

/// The repro of a stale holder writing to another item: an item dies with its holder
/// stopped, is discarded, and a new item is enqueued. The new item must not get the old id,
/// so the old holder's (id, fence) names nothing current and every write of it is refused.
pub async fn ids_are_never_reused<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let old = b.enqueue(new("A").max_attempts(1)).await;
    let held = ok(
        b.store.claim_as("host-a", "default", 1, LEASE).await,
        "claim",
    )
    .remove(0);
    assert_eq!((held.item.id, held.fence), (old, 1));
    // host-a stops; its lease runs out and another host's sweeper makes the item dead.
    b.clock.advance(LEASE + Duration::from_secs(1));
    assert_eq!(ok(b.store.sweep().await, "sweep"), 1);
    assert_eq!(get(&b.store, old).await.state, ItemState::Dead);
    ok(b.store.discard(old).await, "discard");

    let new_id = ok(
        b.store.enqueue(new("A").max_attempts(1)).await,
        "enqueue again",
    );
    assert!(
        new_id > old,
        "a discarded item's id {old} came back as {new_id}"
    );
    let current = ok(
        b.store.claim_as("host-b", "default", 1, LEASE).await,
        "claim",
    )
    .remove(0);
    assert_eq!((current.item.id, current.fence), (new_id, 1));

    // host-a resumes and writes with what it holds: (old, 1).
    let mine = held.held();
    stale(
        b.store
            .record_effect(&mine, "effect", json!("from host-a"))
            .await,
        "stale effect",
    );
    stale(b.store.heartbeat(&mine, LEASE).await, "stale heartbeat");
    stale(
        b.store.checkpoint(&mine, json!({"step": 9})).await,
        "stale checkpoint",
    );
    stale(b.store.complete(&mine).await, "stale complete");
    assert_eq!(ok(b.store.effect(new_id, "effect").await, "effect"), None);
    let rec = get(&b.store, new_id).await;
    assert_eq!((rec.state, rec.checkpoint), (ItemState::Running, None));

    // A purge frees no id either.
    ok(b.store.complete(&current.held()).await, "complete");
    b.clock.advance(Duration::from_secs(1));
    assert_eq!(
        ok(b.store.purge_completed(Duration::ZERO, 100).await, "purge"),
        1
    );
    let after_purge = ok(b.store.enqueue(new("A")).await, "enqueue after purge");
    assert!(after_purge > new_id, "a purged id came back");

    // Outbox rows draw from the same ids.
    let row = ok(
        b.store
            .transaction(|tx| tx.enqueue(NewItem::new("A", json!({"n": 2}))))
            .await,
        "outbox row",
    );
    assert!(
        row > after_purge,
        "outbox id {row} is not past item {after_purge}"
    );
    let next = ok(b.store.enqueue(new("A")).await, "enqueue after outbox");
    assert!(
        next > row,
        "item {next} reuses the outbox's id space below {row}"
    );
    assert_eq!(ok(b.store.relay_outbox(10).await, "relay"), 1);
    assert_eq!(get(&b.store, row).await.kind, "A");
}

/// Dedupe keys are unique per kind: another kind with the same key is its own item, and a
/// duplicate says it is one.
pub async fn dedupe_is_per_kind<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let first = ok(
        b.store
            .enqueue_reporting(new("NOTIFY_SHIPMENT").dedupe_key("s-1"))
            .await,
        "enqueue",
    );
    assert!(!first.duplicate);
    let other_kind = ok(
        b.store
            .enqueue_reporting(new("FOO").dedupe_key("s-1"))
            .await,
        "other kind",
    );
    assert!(!other_kind.duplicate, "FOO was taken for a duplicate");
    assert_ne!(other_kind.id, first.id);
    let again = ok(
        b.store
            .enqueue_reporting(new("NOTIFY_SHIPMENT").dedupe_key("s-1"))
            .await,
        "duplicate",
    );
    assert_eq!(again, Enqueued::duplicate_of(first.id));
    let batch = ok(
        b.store
            .enqueue_many_reporting(vec![
                new("A").dedupe_key("k"),
                new("B").dedupe_key("k"),
                new("A").dedupe_key("k"),
            ])
            .await,
        "batch",
    );
    assert!(!batch[0].duplicate && !batch[1].duplicate);
    assert_ne!(batch[0].id, batch[1].id);
    assert_eq!(batch[2], Enqueued::duplicate_of(batch[0].id));
    let all = ok(b.store.list(ListFilter::default()).await, "list");
    assert_eq!(all.len(), 4);
    let other = get(&b.store, other_kind.id).await;
    assert_eq!(
        (other.kind.as_str(), other.state),
        ("FOO", ItemState::Available)
    );
}

/// An item that kills every worker that runs it (its lease always runs out) still spends an
/// attempt per claim, and goes dead when they are spent.
pub async fn poison_item_runs_out_of_attempts<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A").max_attempts(3)).await;
    for attempt in 1..=3 {
        let c = ok(b.store.claim("default", 10, LEASE).await, "claim");
        assert_eq!(c.len(), 1, "attempt {attempt} was not claimable");
        assert_eq!(c[0].item.attempt, attempt);
        // The worker dies holding it.
        b.clock.advance(LEASE + Duration::from_secs(1));
        assert_eq!(ok(b.store.sweep().await, "sweep"), 1);
    }
    let rec = get(&b.store, id).await;
    assert_eq!((rec.state, rec.attempt), (ItemState::Dead, 3));
    assert!(ok(b.store.claim("default", 10, LEASE).await, "claim").is_empty());
}

fn worker(id: &str, b: &TestBackend, lease_ms: i64) -> WorkerRecord {
    WorkerRecord {
        id: id.to_owned(),
        lanes: vec!["default".to_owned()],
        state: WorkerState::Online,
        started_at: b.store.now(),
        last_seen_at: b.store.now(),
        lease_ms,
    }
}

/// A worker whose row is not heartbeated for three of its leases is marked OFFLINE by any
/// sweeper; retention deletes OFFLINE workers and relayed outbox rows, and nothing else.
pub async fn silent_workers_go_offline_and_tables_are_purged<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    ok(
        b.store.put_worker(worker("w-quiet", &b, 1_000)).await,
        "put",
    );
    ok(b.store.put_worker(worker("w-busy", &b, 1_000)).await, "put");
    ok(
        b.store.put_worker(worker("w-slow", &b, 60_000)).await,
        "put",
    );
    let row = ok(
        b.store
            .transaction(|tx| tx.enqueue(NewItem::new("A", json!({"n": 1}))))
            .await,
        "outbox row",
    );
    let pending = ok(
        b.store
            .transaction(|tx| tx.enqueue(NewItem::new("A", json!({"n": 2}))))
            .await,
        "second outbox row",
    );
    assert_eq!(ok(b.store.relay_outbox(1).await, "relay one"), 1);

    b.clock.advance(Duration::from_secs(2));
    ok(
        b.store.put_worker(worker("w-busy", &b, 1_000)).await,
        "heartbeat",
    );
    assert!(ok(b.store.mark_silent_workers().await, "mark").is_empty());
    b.clock.advance(Duration::from_millis(1_500));
    assert_eq!(
        ok(b.store.mark_silent_workers().await, "mark"),
        vec!["w-quiet".to_owned()]
    );
    assert!(ok(b.store.mark_silent_workers().await, "mark again").is_empty());
    let states: Vec<(String, WorkerState)> = ok(b.store.workers().await, "workers")
        .into_iter()
        .map(|w| (w.id, w.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("w-busy".to_owned(), WorkerState::Online),
            ("w-quiet".to_owned(), WorkerState::Offline),
            ("w-slow".to_owned(), WorkerState::Online),
        ]
    );

    // Retention of one second: the OFFLINE worker (seen 3.5 s ago) and the relayed row
    // (relayed 3.5 s ago) go; ONLINE workers, the unrelayed row and the items stay.
    let (outbox, workers) = ok(
        b.store.purge_retained(Duration::from_secs(1), 100).await,
        "purge",
    );
    assert_eq!((outbox, workers), (1, 1));
    let left: Vec<String> = ok(b.store.workers().await, "workers")
        .into_iter()
        .map(|w| w.id)
        .collect();
    assert_eq!(left, vec!["w-busy".to_owned(), "w-slow".to_owned()]);
    assert_eq!(get(&b.store, row).await.kind, "A");
    assert_eq!(ok(b.store.relay_outbox(10).await, "relay the rest"), 1);
    assert_eq!(get(&b.store, pending).await.state, ItemState::Available);
    assert_eq!(
        ok(
            b.store.purge_retained(Duration::from_secs(1), 100).await,
            "purge again"
        ),
        (0, 0),
        "a row relayed just now is kept"
    );
}
