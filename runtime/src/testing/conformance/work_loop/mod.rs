//! Conformance: the work loop over the backend.
//!
//! The cases are grouped by topic in the submodules; this module holds the kinds, handlers
//! and helpers they share.

mod builder;
mod files;
mod leases;
mod lifecycle;
mod outcomes;
mod robust;

pub use builder::*;
pub use files::*;
pub use leases::*;
pub use lifecycle::*;
pub use outcomes::*;
pub use robust::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{TestBackend, ok};
use crate::context::WorkContext;
use crate::error::WorkError;
use crate::handler::WorkHandler;
use crate::item::{Item, ItemId, ItemState, NewItem};
use crate::retry::RetryPolicy;
use crate::spec::WorkKindSpec;
use crate::store::Store;
use crate::work_loop::WorkLoop;

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
        ctx.once("effect", |_| async move { Ok(n) }).await?;
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

fn hang() -> HangHandler {
    HangHandler {
        started: Arc::default(),
        dropped: Arc::default(),
    }
}

/// One `HANG` item enqueued on lane `slow`, and the handler that hangs on it.
async fn hanging(b: &TestBackend) -> (ItemId, HangHandler) {
    let id = b
        .enqueue(NewItem::new("HANG", json!({})).lane("slow"))
        .await;
    (id, hang())
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
