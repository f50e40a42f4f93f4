//! Conformance: the work loop over the backend.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{TestBackend, fresh, get, ok};
use crate::context::WorkContext;
use crate::error::{BuildError, WorkError};
use crate::handler::WorkHandler;
use crate::item::{Item, ItemState, ListFilter, NewItem, WorkerState};
use crate::retry::RetryPolicy;
use crate::spec::WorkKindSpec;
use crate::store::Store;
use crate::time::ManualClock;
use crate::work_loop::{LoopEvent, WorkLoop};

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
    let id = ok(b.store.enqueue(spec.item(json!({}))).await, "enqueue");
    let lp = ok(
        WorkLoop::builder(b.store.clone(), REGISTRY)
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
    let build = |id: &str| {
        ok(
            WorkLoop::builder(b.store.clone(), REGISTRY)
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
    let held_by = |store: Store, owner: &'static str| async move {
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
    };
    let (first, second) = (build("first"), build("second"));
    let store = b.store.clone();
    let (seen_first, seen_second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (sf, ss) = (Arc::clone(&seen_first), Arc::clone(&seen_second));
    let first_run = {
        let first = first.clone();
        let store = store.clone();
        tokio::spawn(async move {
            first
                .run(async move {
                    while held_by(store.clone(), "first").await < 2 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    // Many claim rounds pass: none may take more.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    sf.store(held_by(store.clone(), "first").await, Ordering::SeqCst);
                    let second_run = second.run(async {
                        while held_by(store.clone(), "second").await < 2 {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        ss.store(held_by(store.clone(), "second").await, Ordering::SeqCst);
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
