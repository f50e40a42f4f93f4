//! Conformance: leases under the loop — a lost lease cancels its handler, and heartbeats
//! keep a handler that runs longer than its lease.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::super::{TestBackend, fresh, get, ok};
use super::{REGISTRY, hanging};
use crate::context::WorkContext;
use crate::error::WorkError;
use crate::handler::WorkHandler;
use crate::item::{Item, ItemState};
use crate::time::ManualClock;
use crate::work_loop::{LoopEvent, WorkLoop};

pub async fn loop_lost_lease_cancels_handler<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let (id, h) = hanging(&b).await;
    let (started, dropped) = (Arc::clone(&h.started), Arc::clone(&h.dropped));
    let lost = Arc::new(tokio::sync::Notify::new());
    let on_lost = Arc::clone(&lost);
    let lease = Duration::from_millis(300);
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(h)
            .lane("slow")
            .lease(lease)
            .concurrency(1)
            .prefetch(1)
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
    let lp = &lp;
    let thief_fence = Arc::new(AtomicI64::new(0));
    let held = Arc::clone(&thief_fence);
    ok(
        lp.run(async move {
            started.notified().await;
            // Another worker takes the item over: the lease expires and it is claimed anew.
            // The loop may learn of its loss between the sweep and the thief's claim and take
            // the freed item back itself (a remote store announces it on the socket): then
            // that lease is the one to expire, until the thief holds the item.
            let fence = loop {
                clock.advance(lease + Duration::from_millis(1));
                ok(store.sweep().await, "sweep");
                let thief = ok(
                    store.claim("slow", 1, Duration::from_secs(60)).await,
                    "steal",
                );
                if let Some(c) = thief.first() {
                    break c.fence;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            // Every lease the loop held before the thief's is found lost.
            while lp.counters().leases_lost.load(Ordering::SeqCst)
                < u64::try_from(fence - 1).unwrap_or(0)
            {
                lost.notified().await;
            }
            held.store(fence, Ordering::SeqCst);
        })
        .await,
        "run",
    );
    let fence = thief_fence.load(Ordering::SeqCst);
    let lost_leases = u64::try_from(fence - 1).unwrap_or(0);
    assert!(lost_leases >= 1, "the loop held the item first");
    assert_eq!(
        dropped.load(Ordering::SeqCst) as u64,
        lost_leases,
        "each lost lease cancelled its handler"
    );
    assert_eq!(
        lp.counters().leases_lost.load(Ordering::SeqCst),
        lost_leases
    );
    assert_eq!(lp.counters().completed.load(Ordering::SeqCst), 0);
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.fence),
        (ItemState::Running, fence),
        "the new holder keeps it"
    );
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
        for _ in 0..12 {
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
    let id = b.enqueue(spec.item(json!({}))).await;
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(LongHandler {
                clock: Arc::clone(&b.clock),
                step: lease / 6,
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
