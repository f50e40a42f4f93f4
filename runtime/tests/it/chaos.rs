//! Process-kill chaos: worker processes on one queue (a SQLite file, or a PostgreSQL schema
//! when `SCAFFOLD_TEST_DATABASE_URL` names a server), SIGKILLed and restarted while items
//! run, some of them stalling past their lease (a blocked executor, as in a long GC pause)
//! so their late completions are stale. At the end every item is completed, every effect is
//! recorded exactly once, no stale completion was accepted, and the SQLite file passes
//! `PRAGMA integrity_check`.
//!
//! The workers are this test binary re-executed on the ignored test `chaos_worker_process`.

// The SQLite and PostgreSQL backends: left out of a build without them.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

use crate::pg_common;
use crate::worker_process;

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use scaffold_runtime::{
    Item, ItemState, NewItem, Store, WorkContext, WorkError, WorkHandler, WorkKindSpec, WorkLoop,
};
use serde::{Deserialize, Serialize};

const WORKER_ENV: &str = "SCAFFOLD_CHAOS_WORKER_URL";
const ITEMS: u32 = 2_000;
const WORKERS: usize = 3;
const MIN_KILLS: usize = 12;
const LEASE: Duration = Duration::from_millis(500);

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "CHAOS",
    permission: "chaos.run",
    ..WorkKindSpec::DEFAULT
}]];

#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    n: u32,
}

struct ChaosHandler;

impl WorkHandler for ChaosHandler {
    type Payload = Payload;
    const KIND: &'static str = "CHAOS";
    const REQUIRES: &'static [&'static str] = &["chaos.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Payload>) -> Result<(), WorkError> {
        let n = item.payload.n;
        let r = mix(u64::from(n) ^ (item.fence as u64).wrapping_mul(0x9e37_79b9));
        tokio::time::sleep(Duration::from_millis(5 + r % 25)).await;
        ctx.once("effect", |_| async move { Ok(n) }).await?;
        if r.is_multiple_of(97) {
            // A stall that blocks the whole worker (heartbeats too) past the lease: when it
            // wakes, its completion is stale and must be refused.
            std::thread::sleep(LEASE * 2);
        }
        Ok(())
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

/// A worker process. Does nothing unless re-executed by `chaos_kill_workers`.
#[test]
#[ignore = "a worker process of chaos_kill_workers, which runs it"]
fn chaos_worker_process() {
    let Ok(url) = std::env::var(WORKER_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async move {
        let store = Store::open(&url).await.expect("the worker opens the queue");
        let loop_ = WorkLoop::builder(store, KINDS)
            .handler(ChaosHandler)
            .lane("default")
            .concurrency(4)
            .prefetch(8)
            .lease(LEASE)
            .sweep_interval(Duration::from_millis(100))
            .poll_interval(Duration::from_millis(20))
            .observer(worker_process::print_events("CHAOS"))
            .build()
            .expect("the worker loop builds");
        loop_
            .run(std::future::pending())
            .await
            .expect("the loop runs until killed");
    });
}

#[derive(Debug, Default)]
struct Log {
    completed: Vec<(i64, i64)>,
    stale_rejected: usize,
    leases_lost: usize,
}

fn spawn_worker(url: &str, log: &Arc<Mutex<Log>>) -> Child {
    let log = Arc::clone(log);
    worker_process::spawn(
        "chaos::chaos_worker_process",
        WORKER_ENV,
        url,
        "CHAOS",
        move |line| {
            let Ok(mut log) = log.lock() else { return };
            match line.event {
                "completed" => log.completed.push((line.id, line.fence)),
                "stale" => log.stale_rejected += 1,
                "lost" => log.leases_lost += 1,
                _ => {}
            }
        },
    )
}

async fn remaining(store: &Store) -> u64 {
    let stats = store.stats().await.expect("stats");
    stats
        .iter()
        .map(|l| {
            l.get(ItemState::Available).count
                + l.get(ItemState::Running).count
                + l.get(ItemState::Failed).count
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kill_workers() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = dir.path().join("chaos.db").display().to_string();
    let all = chaos(&format!("sqlite://{db}")).await;
    let conn = rusqlite::Connection::open(&db).expect("open for checks");
    let (effects, distinct): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT item_id) FROM work_effects WHERE effect_key = 'effect'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("count effects");
    assert_eq!(
        (effects, distinct),
        (i64::from(ITEMS), i64::from(ITEMS)),
        "every effect recorded exactly once"
    );
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok");
    assert_eq!(all.len(), ITEMS as usize);
}

/// The same chaos on PostgreSQL: worker processes share one schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kill_workers_postgres() {
    if !pg_common::database_named() {
        return;
    }
    let (url, guard) = pg_common::fresh_url("&pool_size=4");
    let all = chaos(&url).await;
    let base = std::env::var(pg_common::ENV).expect("checked");
    let (client, conn) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .expect("a raw connection");
    tokio::spawn(conn);
    let row = client
        .query_one(
            &format!(
                "SELECT count(*), count(DISTINCT item_id) FROM \"{}\".work_effects \
                 WHERE effect_key = 'effect'",
                guard.schema
            ),
            &[],
        )
        .await
        .expect("count effects");
    let (effects, distinct): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(
        (effects, distinct),
        (i64::from(ITEMS), i64::from(ITEMS)),
        "every effect recorded exactly once"
    );
    assert_eq!(all.len(), ITEMS as usize);
}

/// Runs the chaos on the queue at `url`; returns every item, after checking that all
/// completed and that no stale completion was accepted.
async fn chaos(url: &str) -> Vec<scaffold_runtime::ItemRecord> {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    let items = (0..ITEMS)
        .map(|n| NewItem::new("CHAOS", serde_json::json!({ "n": n })))
        .collect();
    store.enqueue_many(items).await.expect("enqueue");

    let log = Arc::new(Mutex::new(Log::default()));
    let mut workers: Vec<Child> = (0..WORKERS).map(|_| spawn_worker(url, &log)).collect();
    let mut kills = 0;
    let mut rng = mix(u64::from(std::process::id()) | 1);
    // A guard against a hang, not a timing assertion: the run takes a few seconds.
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let left = remaining(&store).await;
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the workers stopped making progress ({left} items left)"
        );
        if kills < MIN_KILLS {
            rng = mix(rng);
            let victim = usize::try_from(rng % WORKERS as u64).unwrap_or(0);
            workers[victim].kill().expect("SIGKILL a worker");
            workers[victim].wait().expect("reap the killed worker");
            kills += 1;
            workers[victim] = spawn_worker(url, &log);
        }
    }
    for w in &mut workers {
        w.kill().expect("stop a worker");
        w.wait().expect("reap a worker");
    }

    assert!(kills >= 10, "only {kills} kills happened while items ran");
    let all = store.list(Default::default()).await.expect("list");
    assert_eq!(all.len(), ITEMS as usize);
    let not_done: Vec<_> = all
        .iter()
        .filter(|i| i.state != ItemState::Completed)
        .collect();
    assert!(not_done.is_empty(), "items not completed: {not_done:?}");
    // What `status` and the dashboard read equals what is there after the kills.
    scaffold_runtime::testing::conformance::counters_agree(&store).await;

    let fences: std::collections::HashMap<i64, i64> = all.iter().map(|i| (i.id, i.fence)).collect();
    let log = log.lock().expect("the log");
    let stale_accepted = log
        .completed
        .iter()
        .filter(|(id, fence)| fences.get(id) != Some(fence))
        .count();
    let reclaimed = all.iter().filter(|i| i.fence > 1).count();
    println!(
        "chaos ({}): {ITEMS} items, {WORKERS} workers, {kills} SIGKILLs, {reclaimed} items claimed more than once, \
         {} completions logged, stale completions rejected {}, leases lost {}, stale completions accepted {stale_accepted}",
        store.backend_name(),
        log.completed.len(),
        log.stale_rejected,
        log.leases_lost
    );
    assert_eq!(
        stale_accepted, 0,
        "a completion with a stale fence was accepted"
    );
    assert!(
        reclaimed > 0,
        "the kills took items away from their workers"
    );
    drop(log);
    all
}
