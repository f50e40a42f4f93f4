//! Conformance: what a coordinator (and an operator) asks of the store — claims of some
//! kinds only, retrying the dead of one kind, finding items by dedupe key and paging by
//! keyset, worker presence that never overwrites an operator's drain, and silent workers
//! read as OFFLINE.

use std::future::Future;
use std::time::Duration;

use super::{LEASE, TestBackend, fresh, get, new, ok};
use crate::item::{ItemState, ListFilter, Outcome, WorkerRecord, WorkerState};

pub async fn claims_filter_by_kind<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let a = b.enqueue(new("A")).await;
    let x = b.enqueue(new("B")).await;
    let y = b.enqueue(new("C")).await;
    let kinds = ["B".to_owned(), "C".to_owned()];
    let got = ok(
        b.store
            .claim_kinds("remote", "default", Some(&kinds), 10, LEASE)
            .await,
        "claim B and C",
    );
    let mut ids: Vec<i64> = got.iter().map(|c| c.item.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [x, y]);
    assert_eq!(get(&b.store, a).await.state, ItemState::Available);
    let none = ok(
        b.store
            .claim_kinds("remote", "default", Some(&["Z".to_owned()]), 10, LEASE)
            .await,
        "claim Z",
    );
    assert!(none.is_empty());
}

pub async fn retry_dead_of_one_kind<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    for kind in ["A", "A", "B"] {
        b.enqueue(new(kind)).await;
    }
    for c in ok(b.store.claim("default", 3, LEASE).await, "claim") {
        ok(
            b.store
                .fail(&c.held(), Outcome::Dead { error: "x".into() })
                .await,
            "dead",
        );
    }
    assert_eq!(ok(b.store.retry_all_dead(Some("A")).await, "retry A"), 2);
    let dead = ok(
        b.store
            .list(ListFilter {
                state: Some(ItemState::Dead),
                ..ListFilter::default()
            })
            .await,
        "dead",
    );
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].kind, "B");
    assert_eq!(ok(b.store.retry_all_dead(None).await, "retry all"), 1);
}

pub async fn list_by_dedupe_key_and_keyset<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    for i in 0..7 {
        // Duplicates of live keys return the live item: 3 items.
        b.enqueue(new("A").dedupe_key(format!("k{}", i % 3))).await;
    }
    let keyed = ok(
        b.store
            .list(ListFilter {
                dedupe_key: Some("k1".into()),
                ..ListFilter::default()
            })
            .await,
        "by key",
    );
    assert_eq!(keyed.len(), 1);
    assert_eq!(keyed[0].dedupe_key.as_deref(), Some("k1"));
    // Finished items are found by their key too.
    let c = ok(b.store.claim("default", 3, LEASE).await, "claim");
    for c in &c {
        ok(b.store.complete(&c.held()).await, "complete");
    }
    let again = b.enqueue(new("A").dedupe_key("k1")).await;
    let both = ok(
        b.store
            .list(ListFilter {
                dedupe_key: Some("k1".into()),
                newest_first: true,
                ..ListFilter::default()
            })
            .await,
        "by key after completion",
    );
    assert_eq!(both.len(), 2);
    assert_eq!(both[0].id, again);
    // Keyset pages, newest first: each page starts after the last id of the one before.
    for _ in 0..6 {
        b.enqueue(new("B")).await;
    }
    let all = ok(
        b.store
            .list(ListFilter {
                newest_first: true,
                ..ListFilter::default()
            })
            .await,
        "all",
    );
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = ok(
            b.store
                .list(ListFilter {
                    newest_first: true,
                    limit: Some(4),
                    after,
                    ..ListFilter::default()
                })
                .await,
            "page",
        );
        if page.is_empty() {
            break;
        }
        after = page.last().map(|r| r.id);
        paged.extend(page);
    }
    assert_eq!(
        paged.iter().map(|r| r.id).collect::<Vec<_>>(),
        all.iter().map(|r| r.id).collect::<Vec<_>>()
    );
    let oldest_first = ok(
        b.store
            .list(ListFilter {
                after: Some(all[all.len() - 2].id),
                ..ListFilter::default()
            })
            .await,
        "oldest first after",
    );
    assert_eq!(
        oldest_first.first().map(|r| r.id),
        Some(all[all.len() - 3].id)
    );
}

fn worker(id: &str, state: WorkerState, at: crate::time::Timestamp) -> WorkerRecord {
    WorkerRecord {
        id: id.to_owned(),
        lanes: vec!["default".to_owned()],
        state,
        started_at: at,
        last_seen_at: at,
        lease_ms: 1_000,
    }
}

pub async fn presence_keeps_an_operators_drain<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let now = b.store.now();
    assert_eq!(
        ok(
            b.store
                .touch_worker(worker("w1", WorkerState::Online, now))
                .await,
            "first touch"
        ),
        WorkerState::Online
    );
    assert!(ok(b.store.drain_worker("w1").await, "drain"));
    assert!(!ok(b.store.drain_worker("nobody").await, "drain unknown"));
    b.clock.advance(Duration::from_millis(100));
    let later = b.store.now();
    assert_eq!(
        ok(
            b.store
                .touch_worker(worker("w1", WorkerState::Online, later))
                .await,
            "touch"
        ),
        WorkerState::Draining,
        "the loop's presence overwrote the operator's drain"
    );
    let rows = ok(b.store.workers().await, "workers");
    assert_eq!(
        (rows[0].state, rows[0].last_seen_at),
        (WorkerState::Draining, later)
    );
    // A worker silent for three of its leases reads OFFLINE, swept or not.
    b.clock.advance(Duration::from_millis(3_001));
    let rows = ok(b.store.workers().await, "workers later");
    assert_eq!(rows[0].state, WorkerState::Offline);
}
