//! PostgreSQL-only behaviour: LISTEN/NOTIFY wake-ups, and a worker whose connections are cut
//! by `pg_terminate_backend` while it runs. Each test uses a fresh schema of the database
//! `SCAFFOLD_TEST_DATABASE_URL` names; without it each test prints that it was skipped.

// The PostgreSQL backend: left out of a build without it.
#![cfg(feature = "postgres")]

use crate::pg_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pg_common::{database_named, fresh_url};
use scaffold_runtime::{
    Item, ItemState, ListFilter, NewItem, Store, WorkContext, WorkError, WorkHandler, WorkKindSpec,
    WorkLoop,
};
use serde::{Deserialize, Serialize};

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "PG",
    permission: "pg.run",
    ..WorkKindSpec::DEFAULT
}]];

#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    n: u32,
}

struct CountingHandler {
    runs: Arc<AtomicUsize>,
}

impl WorkHandler for CountingHandler {
    type Payload = Payload;
    const KIND: &'static str = "PG";
    const REQUIRES: &'static [&'static str] = &["pg.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Payload>) -> Result<(), WorkError> {
        let n = item.payload.n;
        let runs = Arc::clone(&self.runs);
        ctx.once("effect", |_| async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(n)
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok(())
    }
}

async fn count(store: &Store, state: ItemState) -> u64 {
    store
        .stats()
        .await
        .expect("stats")
        .iter()
        .map(|l| l.get(state).count)
        .sum()
}

/// A raw connection to the test server, for what the store does not expose.
async fn raw() -> tokio_postgres::Client {
    let url = std::env::var(pg_common::ENV).expect("checked");
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("a raw connection");
    tokio::spawn(conn);
    client
}

/// With a poll interval of an hour, only a notification can make the idle worker claim the
/// items enqueued after it went idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_wakes_an_idle_worker() {
    if !database_named() {
        return;
    }
    let (url, _guard) = fresh_url("");
    let store = Store::open(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    let runs = Arc::new(AtomicUsize::new(0));
    let lp = WorkLoop::builder(store.clone(), KINDS)
        .handler(CountingHandler {
            runs: Arc::clone(&runs),
        })
        .poll_interval(Duration::from_secs(3600))
        .build()
        .expect("build");
    let producer = store.clone();
    let done = async move {
        // Enqueue in a few rounds while the worker idles between them.
        for round in 0..5u32 {
            producer
                .enqueue_many(
                    (0..20)
                        .map(|i| NewItem::new("PG", serde_json::json!({ "n": round * 20 + i })))
                        .collect(),
                )
                .await
                .expect("enqueue");
            while count(&producer, ItemState::Completed).await < u64::from((round + 1) * 20) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    // A guard against a hang (a lost wake-up waits an hour), not a timing assertion.
    tokio::time::timeout(Duration::from_secs(120), lp.run(done))
        .await
        .expect("every round was woken without the hour-long poll")
        .expect("run");
    assert_eq!(runs.load(Ordering::SeqCst), 100);
    assert_eq!(count(&store, ItemState::Completed).await, 100);
}

/// Cuts every connection of a running worker (`pg_terminate_backend`) several times: the
/// pool reconnects, the listener reconnects with backoff, and every item completes with
/// its effect recorded exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_survives_its_connections_being_cut() {
    if !database_named() {
        return;
    }
    let app = format!("scaffold_cut_{}", std::process::id());
    let (url, _guard) = fresh_url(&format!("&application_name={app}"));
    let store = Store::open(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    const ITEMS: u32 = 600;
    store
        .enqueue_many(
            (0..ITEMS)
                .map(|n| NewItem::new("PG", serde_json::json!({ "n": n })))
                .collect(),
        )
        .await
        .expect("enqueue");
    let runs = Arc::new(AtomicUsize::new(0));
    let lp = WorkLoop::builder(store.clone(), KINDS)
        .handler(CountingHandler {
            runs: Arc::clone(&runs),
        })
        .concurrency(4)
        .prefetch(16)
        .lease(Duration::from_millis(800))
        .sweep_interval(Duration::from_millis(50))
        .poll_interval(Duration::from_millis(20))
        .build()
        .expect("build");
    let admin = raw().await;
    let watcher = store.clone();
    let cuts = Arc::new(AtomicUsize::new(0));
    let cuts_done = Arc::clone(&cuts);
    let until_done = async move {
        let give_up = Instant::now() + Duration::from_secs(120);
        let mut next_cut = 50u64;
        loop {
            let completed = match watcher.stats().await {
                Ok(stats) => stats
                    .iter()
                    .map(|l| l.get(ItemState::Completed).count)
                    .sum(),
                // The watcher shares the pool: its own connection may have just been cut.
                Err(_) => 0,
            };
            if completed >= u64::from(ITEMS) {
                return;
            }
            assert!(
                Instant::now() < give_up,
                "no progress: {completed} completed"
            );
            if completed >= next_cut && cuts_done.load(Ordering::SeqCst) < 5 {
                let killed = admin
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name = $1",
                        &[&app],
                    )
                    .await
                    .expect("terminate the worker's sessions");
                if !killed.is_empty() {
                    cuts_done.fetch_add(1, Ordering::SeqCst);
                }
                next_cut += 100;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    lp.run(until_done).await.expect("run");
    assert!(cuts.load(Ordering::SeqCst) >= 3, "the connections were cut");

    let items = store.list(ListFilter::default()).await.expect("list");
    assert_eq!(items.len(), ITEMS as usize);
    assert!(items.iter().all(|i| i.state == ItemState::Completed));
    let client = raw().await;
    let schema = url
        .split("schema=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("the schema in the URL");
    let row = client
        .query_one(
            &format!(
                "SELECT count(*), count(DISTINCT item_id) FROM \"{schema}\".work_effects \
                 WHERE effect_key = 'effect'"
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
    println!(
        "connection cuts: {} cuts, {ITEMS} items, effect closures run {} times, {} stale \
         completions rejected, {} leases lost",
        cuts.load(Ordering::SeqCst),
        runs.load(Ordering::SeqCst),
        lp.counters().stale_rejected.load(Ordering::SeqCst),
        lp.counters().leases_lost.load(Ordering::SeqCst),
    );
}

/// Retention: a loop with `retain_completed(ZERO)` deletes items (and their effects) once
/// completed, so the table ends empty after a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_empties_the_table_behind_the_loop() {
    if !database_named() {
        return;
    }
    let (url, _guard) = fresh_url("");
    let store = Store::open(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    const ITEMS: u32 = 300;
    store
        .enqueue_many(
            (0..ITEMS)
                .map(|n| NewItem::new("PG", serde_json::json!({ "n": n })))
                .collect(),
        )
        .await
        .expect("enqueue");
    let runs = Arc::new(AtomicUsize::new(0));
    let lp = WorkLoop::builder(store.clone(), KINDS)
        .handler(CountingHandler {
            runs: Arc::clone(&runs),
        })
        .retain_completed(Duration::ZERO)
        .sweep_interval(Duration::from_millis(20))
        .build()
        .expect("build");
    let watcher = store.clone();
    let emptied = async move {
        while !watcher
            .list(ListFilter::default())
            .await
            .expect("list")
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // A guard against a hang (retention that never runs), not a timing assertion.
    tokio::time::timeout(Duration::from_secs(120), lp.run(emptied))
        .await
        .expect("the table emptied")
        .expect("run");
    assert_eq!(runs.load(Ordering::SeqCst), ITEMS as usize);
    assert_eq!(
        lp.counters().completed.load(Ordering::SeqCst),
        u64::from(ITEMS)
    );
    let client = raw().await;
    let schema = url
        .split("schema=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("the schema in the URL");
    let effects: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".work_effects"),
            &[],
        )
        .await
        .expect("count effects")
        .get(0);
    assert_eq!(effects, 0, "effects go with their items");
}

/// A producer's own PostgreSQL transaction holds its business write and the outbox row:
/// rolled back, neither exists and nothing is relayed; committed, both do, and the relay
/// creates the item with the id `enqueue_in_postgres` returned, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_transaction_commits_its_outbox_row_with_its_business_write() {
    if !database_named() {
        return;
    }
    let (url, _guard) = fresh_url("");
    let store = Store::open(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    let schema = url
        .split("schema=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("the schema in the URL")
        .to_owned();
    // The producer's connection keeps the server's default search_path: the runtime must
    // name its own schema.
    let mut client = raw().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE \"{schema}\".shipments (id text PRIMARY KEY, state text NOT NULL)"
        ))
        .await
        .expect("business table");
    let write = |id: &str| {
        format!("INSERT INTO \"{schema}\".shipments (id, state) VALUES ('{id}', 'shipped')")
    };

    let tx = client.transaction().await.expect("begin");
    tx.batch_execute(&write("s-1"))
        .await
        .expect("business write");
    store
        .enqueue_in_postgres(&tx, NewItem::new("PG", serde_json::json!({ "n": 1 })))
        .await
        .expect("outbox row");
    tx.rollback().await.expect("rollback");
    assert_eq!(store.relay_outbox(100).await.expect("relay"), 0);
    assert!(
        store
            .list(ListFilter::default())
            .await
            .expect("list")
            .is_empty()
    );

    let tx = client.transaction().await.expect("begin");
    tx.batch_execute(&write("s-2"))
        .await
        .expect("business write");
    let id = store
        .enqueue_in_postgres(&tx, NewItem::new("PG", serde_json::json!({ "n": 2 })))
        .await
        .expect("outbox row");
    tx.commit().await.expect("commit");
    assert_eq!(store.relay_outbox(100).await.expect("relay"), 1);
    assert_eq!(store.relay_outbox(100).await.expect("relay again"), 0);
    let items = store.list(ListFilter::default()).await.expect("list");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, id, "the item has the outbox row's id");
    let shipped: i64 = client
        .query_one(&format!("SELECT count(*) FROM \"{schema}\".shipments"), &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(shipped, 1, "only the committed business write exists");

    // Another backend refuses rather than writing elsewhere.
    let memory = Store::open("memory://").await.expect("memory store");
    let tx = client.transaction().await.expect("begin");
    let err = memory
        .enqueue_in_postgres(&tx, NewItem::new("PG", serde_json::json!({ "n": 3 })))
        .await
        .expect_err("a memory store has no PostgreSQL outbox");
    assert!(err.to_string().contains("needs a postgres store"), "{err}");
}
