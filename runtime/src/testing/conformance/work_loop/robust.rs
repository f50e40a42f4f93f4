//! Conformance: the loop under a handler that misbehaves or is overtaken — one that never
//! yields keeps its lease (the keeper renews it on its own thread), one that panics is a
//! failed attempt, one whose item an operator cancels stops and runs nothing more, and an
//! operator's drain is heard.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::{TestBackend, fresh, get, ok};
use super::REGISTRY;
use crate::context::WorkContext;
use crate::error::WorkError;
use crate::handler::WorkHandler;
use crate::item::{Item, ItemState, NewItem, WorkerState};
use crate::retry::RetryPolicy;
use crate::time::ManualClock;
use crate::work_loop::WorkLoop;

/// Computes for three of its leases without yielding once, the store's clock moving as
/// it goes: only a heartbeat that does not need this thread keeps the lease.
struct BusyHandler {
    clock: Arc<ManualClock>,
    lease: Duration,
}

impl WorkHandler for BusyHandler {
    type Payload = Value;
    const KIND: &'static str = "LONG";
    const REQUIRES: &'static [&'static str] = &["jobs.long"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        let step = self.lease / 10;
        for _ in 0..30 {
            let until = Instant::now() + step;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            self.clock.advance(step);
        }
        Ok(())
    }
}

pub async fn loop_busy_handler_keeps_its_lease<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let lease = Duration::from_millis(300);
    let id = b.enqueue(REGISTRY[0][3].item(json!({}))).await;
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(BusyHandler {
                clock: Arc::clone(&b.clock),
                lease,
            })
            .lease(lease)
            .sweep_interval(Duration::from_millis(20))
            .build(),
        "build",
    );
    let store = b.store.clone();
    // Settled: claimed, and no longer running (completed, or swept back if it lost its
    // lease).
    let settled = async move {
        loop {
            let rec = get(&store, id).await;
            if rec.fence >= 1 && rec.state != ItemState::Running {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    ok(lp.run(settled).await, "run");
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.fence),
        (ItemState::Completed, 1),
        "the busy handler lost its lease: {:?}",
        rec.last_error
    );
    assert_eq!(lp.counters().leases_lost.load(Ordering::SeqCst), 0);
}

/// Panics on every attempt.
struct PanicHandler;

impl WorkHandler for PanicHandler {
    type Payload = Value;
    const KIND: &'static str = "JOB";
    const REQUIRES: &'static [&'static str] = &["jobs.run"];
    async fn handle(&self, _: &WorkContext, item: &Item<Value>) -> Result<(), WorkError> {
        panic!("boom on attempt {}", item.attempt);
    }
}

pub async fn loop_panic_is_a_failed_attempt<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b
        .enqueue(NewItem::new("JOB", json!({"n": 1})).max_attempts(2))
        .await;
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(PanicHandler)
            .handler(super::FlakyHandler)
            .lane("default")
            .poll_interval(Duration::from_millis(5))
            .retry_policy(RetryPolicy {
                base: Duration::ZERO,
                cap: Duration::ZERO,
            })
            .build(),
        "build",
    );
    let store = b.store.clone();
    let dead = async move {
        while get(&store, id).await.state != ItemState::Dead {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    ok(
        tokio::time::timeout(Duration::from_secs(30), lp.run(dead))
            .await
            .expect("drain ends after a panic"),
        "run",
    );
    let rec = get(&b.store, id).await;
    assert_eq!(rec.attempt, 2, "the panic was retried");
    assert!(
        rec.last_error
            .as_deref()
            .is_some_and(|e| e.contains("panicked") && e.contains("boom on attempt 2")),
        "{:?}",
        rec.last_error
    );
    let c = lp.counters();
    assert_eq!(
        (
            c.panicked.load(Ordering::SeqCst),
            c.retried.load(Ordering::SeqCst),
            c.dead.load(Ordering::SeqCst)
        ),
        (2, 1, 1),
        "each panic a failed attempt, the last one dead"
    );
    assert_eq!(lp.state(), crate::work_loop::LoopState::Stopped);
}

/// Records one effect, waits to be let on, then tries a second.
struct StepwiseHandler {
    started: Arc<tokio::sync::Notify>,
    go_on: Arc<tokio::sync::Notify>,
    second: Arc<AtomicUsize>,
}

impl WorkHandler for StepwiseHandler {
    type Payload = Value;
    const KIND: &'static str = "HANG";
    const REQUIRES: &'static [&'static str] = &["jobs.hang"];
    async fn handle(&self, ctx: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        ctx.once("first", |_| async { Ok(1) }).await?;
        self.started.notify_one();
        self.go_on.notified().await;
        let second = Arc::clone(&self.second);
        ctx.once("second", |_| async move {
            second.fetch_add(1, Ordering::SeqCst);
            Ok(2)
        })
        .await?;
        Ok(())
    }
}

pub async fn loop_cancel_stops_the_handler<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b
        .enqueue(NewItem::new("HANG", json!({})).lane("slow"))
        .await;
    let h = StepwiseHandler {
        started: Arc::default(),
        go_on: Arc::default(),
        second: Arc::default(),
    };
    let (started, go_on, second) = (
        Arc::clone(&h.started),
        Arc::clone(&h.go_on),
        Arc::clone(&h.second),
    );
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(h)
            .lane("slow")
            .lease(Duration::from_secs(60))
            .poll_interval(Duration::from_millis(5))
            .drain_timeout(Duration::from_millis(50))
            .build(),
        "build",
    );
    let store = b.store.clone();
    let counters = lp.clone();
    ok(
        lp.run(async move {
            started.notified().await;
            ok(store.cancel(id).await, "cancel");
            go_on.notify_one();
            while counters.counters().leases_lost.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await,
        "run",
    );
    assert_eq!(
        second.load(Ordering::SeqCst),
        0,
        "the cancelled handler ran its effect"
    );
    assert_eq!(ok(b.store.effect(id, "second").await, "effect"), None);
    let rec = get(&b.store, id).await;
    assert_eq!(rec.state, ItemState::Dead);
    assert_eq!(lp.counters().completed.load(Ordering::SeqCst), 0);
}

pub async fn loop_hears_an_operators_drain<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(super::JobHandler::default())
            .handler(super::FlakyHandler)
            .lane("default")
            .sweep_interval(Duration::from_millis(10))
            .poll_interval(Duration::from_millis(5))
            .worker_id("drained")
            .build(),
        "build",
    );
    // A remote worker is the id the coordinator gave it.
    let me = lp.worker_id().to_owned();
    let store = b.store.clone();
    let asked = tokio::spawn(async move {
        loop {
            if ok(store.drain_worker(&me).await, "drain") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    ok(
        tokio::time::timeout(
            Duration::from_secs(30),
            lp.run(std::future::pending::<()>()),
        )
        .await
        .expect("the loop drains when an operator asks"),
        "run",
    );
    ok(asked.await, "the drain request");
    let row = ok(b.store.workers().await, "workers")
        .into_iter()
        .find(|w| w.id == lp.worker_id())
        .expect("the worker's row");
    assert_eq!(row.state, WorkerState::Offline);
}
