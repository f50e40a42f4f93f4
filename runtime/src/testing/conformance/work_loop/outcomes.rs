//! Conformance: items run by the loop to their outcome — a backlog drained, unknown kinds
//! and undecodable payloads dead at once, transient errors retried, a park on a signal no
//! store holds dead at once, outbox rows relayed and run.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::super::{TestBackend, fresh, get, ok};
use super::{FlakyHandler, JobHandler, REGISTRY, job_loop, until_count};
use crate::context::WorkContext;
use crate::error::WorkError;
use crate::handler::WorkHandler;
use crate::item::{Item, ItemState, ListFilter, NewItem};
use crate::spec::WorkKindSpec;
use crate::work_loop::WorkLoop;

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
    let lp = job_loop(b.worker(), Arc::clone(&done));
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
    let unknown = b.enqueue(NewItem::new("NOBODY", json!({}))).await;
    let garbled = b
        .enqueue(NewItem::new("JOB", json!({"n": "not a number"})))
        .await;
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

/// One kind, whose handler parks each item on the signal its payload names.
static PARKING: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "PARK",
    permission: "jobs.park",
    lane: "default",
    ..WorkKindSpec::DEFAULT
}]];

struct ParkHandler;

impl WorkHandler for ParkHandler {
    type Payload = Value;
    const KIND: &'static str = "PARK";
    const REQUIRES: &'static [&'static str] = &["jobs.park"];
    async fn handle(&self, _: &WorkContext, item: &Item<Value>) -> Result<(), WorkError> {
        let signal = item.payload["signal"].as_str().unwrap_or_default();
        Err(WorkError::park_for_signal(signal))
    }
}

/// A handler that parks on a signal name no store writes (too long for PostgreSQL's index
/// to hold, or empty) has a bug no attempt fixes: the item is dead at once, saying why,
/// and the rest of its batch is written.
pub async fn loop_a_park_on_a_signal_no_store_holds_is_dead<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let park = |signal: String| NewItem::new("PARK", json!({ "signal": signal }));
    let long = b.enqueue(park("s".repeat(4000))).await;
    let empty = b.enqueue(park(String::new())).await;
    let fine = b.enqueue(park("approved".to_owned())).await;
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), PARKING)
            .handler(ParkHandler)
            .lane("default")
            .poll_interval(Duration::from_millis(5))
            .build(),
        "build",
    );
    // Bounded: a store that took the bad parks would leave the loop waiting for ever; the
    // states below then say what it did instead.
    ok(
        lp.run(async {
            let _ = tokio::time::timeout(Duration::from_secs(30), async {
                until_count(&b.store, ItemState::Dead, 2).await;
                until_count(&b.store, ItemState::Parked, 1).await;
            })
            .await;
        })
        .await,
        "run",
    );
    for (id, len) in [(long, 4000), (empty, 0)] {
        let rec = get(&b.store, id).await;
        let error = rec.last_error.unwrap_or_default();
        assert_eq!((rec.state, rec.attempt), (ItemState::Dead, 1), "{error}");
        assert!(
            error.contains(&format!(
                "cannot park on that signal: its name is {len} bytes"
            )),
            "{error}"
        );
    }
    let rec = get(&b.store, fine).await;
    assert_eq!(
        (rec.state, rec.parked_on.as_deref()),
        (ItemState::Parked, Some("approved"))
    );
}

pub async fn loop_transient_retries_with_backoff<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(NewItem::new("FLAKY", json!({"n": 1}))).await;
    let lp = job_loop(b.worker(), Arc::default());
    ok(
        lp.run(until_count(&b.store, ItemState::Completed, 1)).await,
        "run",
    );
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.attempt, rec.fence),
        (ItemState::Completed, 2, 2)
    );
    // A remote worker's message is kept after its failure's code.
    let error = rec.last_error.as_deref().unwrap_or("");
    assert!(
        error == "first try fails" || (b.worker.is_some() && error.ends_with(": first try fails")),
        "{error}"
    );
    assert_eq!(lp.counters().retried.load(Ordering::SeqCst), 1);
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
