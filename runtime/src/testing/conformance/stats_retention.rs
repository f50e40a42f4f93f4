//! Conformance: counts and ages per lane and state, and the retention purge of completed
//! items with their effects.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok};
use crate::item::ItemState;

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
    ok(b.store.complete(&c.held()).await, "complete");
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
        b.store.record_effect(&old[0].held(), "e", json!(1)).await,
        "record effect",
    );
    // The higher id completes first: a purge takes the oldest completions first.
    ok(b.store.complete(&old[1].held()).await, "complete");
    b.clock.advance(Duration::from_secs(1));
    ok(b.store.complete(&old[0].held()).await, "complete");
    b.clock.advance(Duration::from_secs(10));
    ok(b.store.complete(&recent.held()).await, "complete");
    b.clock.advance(Duration::from_secs(1));
    let keep = Duration::from_secs(5);
    assert_eq!(
        ok(b.store.purge_completed(keep, 1).await, "purge"),
        1,
        "limit holds"
    );
    assert!(
        ok(b.store.get(old[1].item.id).await, "get").is_none(),
        "the oldest completion goes first"
    );
    assert!(ok(b.store.get(old[0].item.id).await, "get").is_some());
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
