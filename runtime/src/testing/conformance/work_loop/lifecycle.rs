//! Conformance: a loop's life — its worker row online while it runs and offline after,
//! prefetch held to its concurrency, and the drain that releases items past its deadline.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use super::super::{TestBackend, fresh, get, ok};
use super::{REGISTRY, hang, hanging, job_loop, until_count};
use crate::item::{ItemState, ListFilter, NewItem, WorkerState};
use crate::store::Store;
use crate::work_loop::WorkLoop;

pub async fn loop_drain_releases_items_past_deadline<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let (id, h) = hanging(&b).await;
    let (started, dropped) = (Arc::clone(&h.started), Arc::clone(&h.dropped));
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
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
    b.enqueue(NewItem::new("JOB", json!({"n": 1}))).await;
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

/// How many running items `owner` holds.
async fn running_held_by(store: &Store, owner: &str) -> usize {
    ok(
        store
            .list(ListFilter {
                state: Some(ItemState::Running),
                ..ListFilter::default()
            })
            .await,
        "list",
    )
    .iter()
    .filter(|r| r.lease_owner.as_deref() == Some(owner))
    .count()
}

/// Without a prefetch setting a loop holds no more items than it runs: a second worker
/// beside a busy one finds the rest of the backlog, and a killed holder would strand only
/// what it was running. On drain everything held goes back with its attempt.
pub async fn loop_prefetch_defaults_to_concurrency<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let items: Vec<NewItem> = (0..10)
        .map(|_| NewItem::new("HANG", json!({})).lane("slow"))
        .collect();
    ok(b.store.enqueue_many(items).await, "enqueue");
    // Two workers: on a remote store, two enrolled devices (each the id it was given).
    let build = |store: &Store, id: &str| {
        ok(
            WorkLoop::builder(store.clone(), REGISTRY)
                .handler(hang())
                .lane("slow")
                .concurrency(2)
                .worker_id(id)
                .poll_interval(Duration::from_millis(5))
                .drain_timeout(Duration::from_millis(50))
                .build(),
            "build",
        )
    };
    let held_by =
        |store: Store, owner: String| async move { running_held_by(&store, &owner).await };
    let (first, second) = (
        build(b.worker(), "first"),
        build(b.other_worker(), "second"),
    );
    let (first_id, second_id) = (first.worker_id().to_owned(), second.worker_id().to_owned());
    assert_ne!(first_id, second_id);
    let store = b.store.clone();
    let (seen_first, seen_second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (sf, ss) = (Arc::clone(&seen_first), Arc::clone(&seen_second));
    let first_run = {
        let first = first.clone();
        let store = store.clone();
        tokio::spawn(async move {
            first
                .run(async move {
                    while held_by(store.clone(), first_id.clone()).await < 2 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    // Many claim rounds pass: none may take more.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    sf.store(
                        held_by(store.clone(), first_id.clone()).await,
                        Ordering::SeqCst,
                    );
                    let second_run = second.run(async {
                        while held_by(store.clone(), second_id.clone()).await < 2 {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        ss.store(
                            held_by(store.clone(), second_id.clone()).await,
                            Ordering::SeqCst,
                        );
                    });
                    ok(second_run.await, "second run");
                })
                .await
        })
    };
    ok(ok(first_run.await, "join"), "first run");
    assert_eq!(
        seen_first.load(Ordering::SeqCst),
        2,
        "the first worker held more than it ran"
    );
    assert_eq!(
        seen_second.load(Ordering::SeqCst),
        2,
        "the second worker found no work"
    );
    let all = ok(b.store.list(ListFilter::default()).await, "list");
    assert!(
        all.iter()
            .all(|r| r.state == ItemState::Available && r.attempt == 0 && r.lease_owner.is_none()),
        "drain released every held item with its attempt: {all:?}"
    );
}

/// The prefetch bounds the loop, not each lane: a loop of two lanes, each with a backlog,
/// holds no more items than it runs, however its lanes' claims interleave (each lane's
/// claimer once read the same free room and claimed it twice over).
pub async fn loop_prefetch_holds_across_lanes<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let items: Vec<NewItem> = ["slow", "spare"]
        .iter()
        .flat_map(|lane| (0..6).map(move |_| NewItem::new("HANG", json!({})).lane(*lane)))
        .collect();
    ok(b.store.enqueue_many(items).await, "enqueue");
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(hang())
            .lane("slow")
            .lane("spare")
            .concurrency(2)
            .poll_interval(Duration::from_millis(5))
            .drain_timeout(Duration::from_millis(50))
            .build(),
        "build",
    );
    let owner = lp.worker_id().to_owned();
    let store = b.store.clone();
    let held = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&held);
    let running = || running_held_by(&store, &owner);
    ok(
        lp.run(async {
            while running().await < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // Both lanes' claimers have looked for room by now: neither may take more.
            // (Each lane's claimer read the same free room at start and took it twice,
            // on every store whose claim is not ready at once: all but memory's.)
            tokio::time::sleep(Duration::from_millis(200)).await;
            seen.store(running().await, Ordering::SeqCst);
        })
        .await,
        "run",
    );
    assert_eq!(
        held.load(Ordering::SeqCst),
        2,
        "a loop of two lanes held more items than its prefetch"
    );
}
