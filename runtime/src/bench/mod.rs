//! The throughput benchmark behind `scaffold queue bench`: enqueue N no-op items in one
//! batch, then one in-process work loop with concurrency C drains them, fencing on; and
//! with `--remote` ([`remote`]) the same drain through a coordinator.

#[cfg(all(feature = "coordinator", feature = "remote"))]
pub mod remote;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::handler::WorkHandler;
use crate::item::{Item, NewItem};
use crate::spec::WorkKindSpec;
use crate::store::Store;
use crate::work_loop::{LoopEvent, WorkLoop};

/// The kind the benchmark enqueues.
pub const BENCH_KIND: &str = "BENCH_NOOP";

static BENCH_KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: BENCH_KIND,
    permission: "bench.run",
    lane: "bench",
    ..WorkKindSpec::DEFAULT
}]];

struct Noop;

impl WorkHandler for Noop {
    type Payload = serde_json::Value;
    const KIND: &'static str = BENCH_KIND;
    const REQUIRES: &'static [&'static str] = &["bench.run"];
    async fn handle(&self, _: &WorkContext, _: &Item<Self::Payload>) -> Result<(), WorkError> {
        Ok(())
    }
}

/// What `scaffold queue bench --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    pub backend: String,
    pub jobs: u64,
    pub concurrency: usize,
    pub enqueue_ms: u64,
    pub drain_ms: u64,
    pub jobs_per_sec: u64,
    pub completed: u64,
}

/// Items per enqueue transaction.
const ENQUEUE_BATCH: usize = 50_000;

/// Enqueues `jobs` no-op items on lane `bench` of `store` (migrated, empty lane) in one
/// batch, then drains them with one loop of `concurrency`. `jobs_per_sec` is `jobs` over the
/// drain time.
pub async fn run(store: &Store, jobs: u64, concurrency: usize) -> Result<BenchReport, StoreError> {
    drain(store, store, jobs, concurrency, None).await
}

/// Enqueues `jobs` no-op items on `producer`, then drains them with one loop of
/// `concurrency` over `worker` (the same store, or a remote worker's over its coordinator),
/// each claim of at most `claim_batch` items when given.
pub(crate) async fn drain(
    producer: &Store,
    worker: &Store,
    jobs: u64,
    concurrency: usize,
    claim_batch: Option<usize>,
) -> Result<BenchReport, StoreError> {
    let store = producer;
    let items: Vec<NewItem> = (0..jobs)
        .map(|i| NewItem::new(BENCH_KIND, json!({ "i": i })).lane("bench"))
        .collect();
    let t0 = Instant::now();
    // In batches: one statement of a million rows' arrays holds them all in memory twice.
    let mut items = items;
    while !items.is_empty() {
        let rest = items.split_off(items.len().min(ENQUEUE_BATCH));
        store
            .enqueue_many(std::mem::replace(&mut items, rest))
            .await?;
    }
    let enqueue = t0.elapsed();

    let completed = Arc::new(AtomicU64::new(0));
    let all_done = Arc::new(tokio::sync::Notify::new());
    let (seen, wake) = (Arc::clone(&completed), Arc::clone(&all_done));
    let mut builder = WorkLoop::builder(worker.clone(), BENCH_KINDS)
        .handler(Noop)
        .lane("bench")
        .concurrency(concurrency.max(1))
        .prefetch((concurrency * 50).clamp(64, 1000))
        .lease(Duration::from_secs(60));
    if let Some(n) = claim_batch {
        builder = builder.claim_batch(n);
    }
    let loop_ = builder
        .observer(move |e| {
            if matches!(
                e,
                LoopEvent::Finished {
                    outcome: "completed",
                    ..
                }
            ) && seen.fetch_add(1, Ordering::Relaxed) + 1 == jobs
            {
                wake.notify_one();
            }
        })
        .build()
        .map_err(|e| StoreError::Task(e.to_string()))?;
    let t1 = Instant::now();
    let mut drain = Duration::ZERO;
    loop_
        .run(async {
            if jobs > 0 {
                all_done.notified().await;
            }
            drain = t1.elapsed();
        })
        .await?;
    let drain_ms = u64::try_from(drain.as_millis()).unwrap_or(u64::MAX);
    let secs = drain.as_secs_f64();
    Ok(BenchReport {
        backend: worker.backend_name().to_owned(),
        jobs,
        concurrency,
        enqueue_ms: u64::try_from(enqueue.as_millis()).unwrap_or(u64::MAX),
        drain_ms,
        jobs_per_sec: if secs > 0.0 {
            (jobs as f64 / secs) as u64
        } else {
            0
        },
        completed: completed.load(Ordering::Relaxed),
    })
}
