//! Stopped-holder chaos: worker processes on one queue (a SQLite file, or a PostgreSQL
//! schema when `SCAFFOLD_TEST_DATABASE_URL` names a server) are SIGSTOPped past their lease
//! and SIGCONTinued, while the test keeps enqueuing, discarding dead items and purging
//! completed ones, so ids would come back if they could. A resumed holder still holds
//! (id, fence) pairs that name nothing current: every write it makes must be refused.
//!
//! Counted, never sampled: every completion the store accepted is checked against the
//! payload the test enqueued under that id (a stale write landing on another item shows as
//! a mismatch), against every other accepted completion of that id (two fences accepted
//! for one id), and every effect still stored against its item. The test asserts that some
//! stale writes were attempted and refused, and that none was accepted.
//!
//! And the effects themselves: each `ctx.once` closure stamps its start, and the store's
//! attempt history (read before any item is discarded or purged) says when each claim's
//! lease ended. A closure that starts after its claim was reaped or after another claim
//! of the item is an effect run by a holder with no lease: the test prints how many, and
//! fails above 0.
//!
//! The workers are this test binary re-executed on the ignored test `stop_worker_process`.

// The SQLite and PostgreSQL backends: left out of a build without them.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

use crate::pg_common;
use crate::worker_process;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use scaffold_runtime::{
    Clock as _, Item, ItemState, ListFilter, NewItem, Store, SystemClock, WorkContext, WorkError,
    WorkHandler, WorkKindSpec, WorkLoop,
};
use serde::{Deserialize, Serialize};
use worker_process::History;

const WORKER_ENV: &str = "SCAFFOLD_STOP_WORKER_URL";
const ROUNDS: u32 = 8;
const PER_ROUND: u32 = 120;
const WORKERS: usize = 3;
const LEASE: Duration = Duration::from_millis(400);
/// Completed items younger than this are not purged: longer than reading their history.
const HISTORY_READ: Duration = Duration::from_secs(1);

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "STOP",
    permission: "stop.run",
    ..WorkKindSpec::DEFAULT
}]];

#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    n: u32,
}

struct StopHandler;

impl WorkHandler for StopHandler {
    type Payload = Payload;
    const KIND: &'static str = "STOP";
    const REQUIRES: &'static [&'static str] = &["stop.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Payload>) -> Result<(), WorkError> {
        let n = item.payload.n;
        let (id, fence) = (item.id, item.fence);
        tokio::time::sleep(Duration::from_millis(15 + u64::from(n % 7) * 5)).await;
        ctx.once("effect", |effect| async move {
            // The outside effect: stamped the moment it starts, beside the end of the lease
            // the store confirmed for it.
            let start = SystemClock.now().as_millis();
            let until = effect.lease_expires_at().as_millis();
            println!("STOP ran {id} {fence} {until} {start}");
            Ok(n)
        })
        .await?;
        println!("STOP handled {} {} {n}", item.id, item.fence);
        Ok(())
    }
}

/// A worker process. Does nothing unless re-executed by the tests below.
#[test]
#[ignore = "a worker process of the stopped-holder chaos tests, which run it"]
fn stop_worker_process() {
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
            .handler(StopHandler)
            .lane("default")
            .concurrency(4)
            .lease(LEASE)
            .sweep_interval(Duration::from_millis(50))
            .poll_interval(Duration::from_millis(10))
            .observer(worker_process::print_events("STOP"))
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
    /// (id, fence) of every completion the store accepted.
    completed: Vec<(i64, i64)>,
    /// (id, fence) → the payload the handler saw.
    handled: BTreeMap<(i64, i64), u32>,
    stale_rejected: usize,
    leases_lost: usize,
    /// Each effect closure that ran: (id, fence, the end of the lease the store confirmed
    /// just before it, the closure's start), in ms.
    ran: Vec<(i64, i64, i64, i64)>,
}

async fn keep_history(store: &Store, id: i64, history: &mut History) -> bool {
    match store.attempts(id).await {
        Ok(attempts) => {
            for a in attempts {
                history.insert((id, a.fence), a);
            }
            true
        }
        Err(_) => false,
    }
}

fn spawn_worker(url: &str, log: &Arc<Mutex<Log>>) -> Child {
    let log = Arc::clone(log);
    worker_process::spawn(
        "chaos_stop::stop_worker_process",
        WORKER_ENV,
        url,
        "STOP",
        move |line| {
            let Ok(mut log) = log.lock() else { return };
            match line.event {
                "completed" => log.completed.push((line.id, line.fence)),
                "handled" => {
                    if let Some(Ok(n)) = line.rest.first().map(|n| n.parse()) {
                        log.handled.insert((line.id, line.fence), n);
                    }
                }
                "ran" => {
                    if let [Some(Ok(until)), Some(Ok(start))] =
                        [line.rest.first(), line.rest.get(1)].map(|t| t.map(|t| t.parse()))
                    {
                        log.ran.push((line.id, line.fence, until, start));
                    }
                }
                "stale" => log.stale_rejected += 1,
                "lost" => log.leases_lost += 1,
                _ => {}
            }
        },
    )
}

fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
    kill(pid, sig).expect("signal a worker");
}

async fn live(store: &Store) -> u64 {
    let stats = store.stats().await.expect("stats");
    stats
        .iter()
        .map(|l| {
            l.get(ItemState::Available).count
                + l.get(ItemState::Running).count
                + l.get(ItemState::Failed).count
                + l.scheduled
        })
        .sum()
}

/// Runs the chaos on `url`; panics on any stale write accepted.
async fn chaos(url: &str) {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    let log = Arc::new(Mutex::new(Log::default()));
    let mut workers: Vec<Child> = (0..WORKERS).map(|_| spawn_worker(url, &log)).collect();
    // What the test enqueued under each id: an id handed out twice fails here at once.
    let mut payload_of: BTreeMap<i64, u32> = BTreeMap::new();
    let (mut stops, mut discarded, mut purged, mut blocked) = (0_usize, 0_u64, 0_u64, 0_u64);
    let mut history = History::new();
    let give_up = Instant::now() + Duration::from_secs(180);
    for round in 0..ROUNDS {
        let items: Vec<NewItem> = (0..PER_ROUND)
            .map(|i| {
                let n = round * PER_ROUND + i;
                // Few attempts: an item its stopped holder keeps past the lease goes dead,
                // is discarded, and its id must never come back.
                let attempts = if n.is_multiple_of(3) { 1 } else { 2 };
                NewItem::new("STOP", serde_json::json!({ "n": n })).max_attempts(attempts)
            })
            .collect();
        let ids = store.enqueue_many(items).await.expect("enqueue");
        for (i, id) in ids.into_iter().enumerate() {
            let n = round * PER_ROUND + u32::try_from(i).expect("small");
            assert!(
                payload_of.insert(id, n).is_none(),
                "id {id} was handed out twice"
            );
        }
        // Stop a holder past its lease while the others reclaim its items.
        let victim = usize::try_from(round).expect("small") % WORKERS;
        tokio::time::sleep(Duration::from_millis(60)).await;
        signal(&workers[victim], Signal::SIGSTOP);
        stops += 1;
        // Dead items are discarded and completed ones purged while it is stopped. On SQLite
        // a process stopped inside a write transaction holds the one write lock until it
        // continues: then these calls wait out the busy timeout and fail, which is counted
        // (not a failure of the test); the SIGCONT comes on time either way.
        let maintenance = {
            let store = store.clone();
            tokio::spawn(async move {
                let (mut discarded, mut purged, mut busy) = (0_u64, 0_u64, 0_u64);
                let mut history = History::new();
                let dead = store
                    .list(ListFilter {
                        state: Some(ItemState::Dead),
                        ..ListFilter::default()
                    })
                    .await
                    .unwrap_or_default();
                for item in dead {
                    if !keep_history(&store, item.id, &mut history).await {
                        busy += 1;
                        continue;
                    }
                    match store.discard(item.id).await {
                        Ok(()) => discarded += 1,
                        Err(_) => busy += 1,
                    }
                }
                // Completed items are purged once older than the time their history takes
                // to read: every one purged was listed and read here first.
                let listed = Instant::now();
                let done = store
                    .list(ListFilter {
                        state: Some(ItemState::Completed),
                        ..ListFilter::default()
                    })
                    .await
                    .unwrap_or_default();
                let mut read = true;
                for item in done {
                    read &= keep_history(&store, item.id, &mut history).await;
                }
                if read && listed.elapsed() < HISTORY_READ {
                    match store.purge_completed(HISTORY_READ, 100_000).await {
                        Ok(n) => purged += n,
                        Err(_) => busy += 1,
                    }
                } else {
                    busy += 1;
                }
                (discarded, purged, busy, history)
            })
        };
        tokio::time::sleep(LEASE * 2 + Duration::from_millis(100)).await;
        signal(&workers[victim], Signal::SIGCONT);
        let (d, p, b, h) = maintenance.await.expect("maintenance");
        history.extend(h);
        discarded += d;
        purged += p;
        blocked += b;
    }
    loop {
        let left = live(&store).await;
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the workers stopped making progress ({left} items left)"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let resumed holders finish what they still hold (their writes must all bounce).
    tokio::time::sleep(LEASE * 2).await;
    for w in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }

    // Effects still stored (items not purged yet) must hold their own item's payload.
    let mut stale_accepted = 0;
    for item in store.list(ListFilter::default()).await.expect("list") {
        assert!(
            keep_history(&store, item.id, &mut history).await,
            "attempts"
        );
        if let Some(v) = store.effect(item.id, "effect").await.expect("effect")
            && v != serde_json::json!(payload_of.get(&item.id))
        {
            stale_accepted += 1;
        }
    }
    // What `status` and the dashboard read equals what is there after the stops, cancels,
    // discards and purges.
    scaffold_runtime::testing::conformance::counters_agree(&store).await;
    let log = log.lock().expect("the log");
    let mut fence_of: BTreeMap<i64, i64> = BTreeMap::new();
    for &(id, fence) in &log.completed {
        // Another item's payload under this id, or a second fence accepted for it.
        let wrong_item = match log.handled.get(&(id, fence)) {
            Some(n) => payload_of.get(&id) != Some(n),
            None => false,
        };
        let second_fence = fence_of.insert(id, fence).is_some_and(|f| f != fence);
        if wrong_item || second_fence || !payload_of.contains_key(&id) {
            stale_accepted += 1;
        }
    }
    let ids: BTreeSet<i64> = payload_of.keys().copied().collect();
    let (without, in_window) = worker_process::ran_without_a_lease(&log.ran, &history);
    println!(
        "stopped-holder chaos ({}): effect closures run {}, run by a holder whose lease had ended or passed to another {without} \
         (of them stopped between once's look at the lease and the closure's first line: {in_window})",
        store.backend_name(),
        log.ran.len(),
    );
    println!(
        "stopped-holder chaos ({}): {} items, {WORKERS} workers, {stops} SIGSTOP/SIGCONT past the lease, \
         {discarded} discarded, {purged} purged ({blocked} calls blocked by a stopped writer), {} completions accepted, stale writes refused {} \
         (completions {}, leases lost {}), stale writes accepted {stale_accepted}",
        store.backend_name(),
        ids.len(),
        log.completed.len(),
        log.stale_rejected + log.leases_lost,
        log.stale_rejected,
        log.leases_lost
    );
    assert_eq!(stale_accepted, 0, "a stale holder's write was accepted");
    assert_eq!(
        without - in_window,
        0,
        "a holder ran an effect after its lease had ended or passed to another"
    );
    assert!(!log.ran.is_empty(), "no effect closure ran");
    assert!(
        log.stale_rejected + log.leases_lost > 0,
        "no stopped holder tried a stale write: the test did not exercise the fence"
    );
    assert_eq!(ids.len(), (ROUNDS * PER_ROUND) as usize);
    assert!(
        discarded > 0,
        "no item went dead and was discarded: ids were never freed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_holders_write_nothing_sqlite() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    chaos(&format!(
        "sqlite://{}",
        dir.path().join("stop.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_holders_write_nothing_postgres() {
    if !pg_common::database_named() {
        return;
    }
    let (url, _guard) = pg_common::fresh_url("&pool_size=4");
    chaos(&url).await;
}
