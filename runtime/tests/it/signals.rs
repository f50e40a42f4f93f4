//! SIGTERM drains a worker process: it stops claiming, finishes or releases what it holds,
//! marks itself OFFLINE and exits 0.

// The SQLite backend: left out of a build without it.
#![cfg(feature = "sqlite")]

use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use scaffold_runtime::{
    Item, ItemState, NewItem, Store, WorkContext, WorkError, WorkHandler, WorkKindSpec, WorkLoop,
    WorkerState,
};

const WORKER_ENV: &str = "SCAFFOLD_SIGNALS_WORKER_DB";
const ITEMS: u32 = 200;

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "SLOW",
    permission: "slow.run",
    ..WorkKindSpec::DEFAULT
}]];

struct Slow;

impl WorkHandler for Slow {
    type Payload = serde_json::Value;
    const KIND: &'static str = "SLOW";
    const REQUIRES: &'static [&'static str] = &["slow.run"];
    async fn handle(&self, _: &WorkContext, _: &Item<Self::Payload>) -> Result<(), WorkError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(())
    }
}

/// The worker process `sigterm_drains_and_exits_zero` starts.
#[test]
#[ignore = "a worker process of sigterm_drains_and_exits_zero, which runs it"]
fn signals_worker_process() {
    let Ok(db) = std::env::var(WORKER_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    rt.block_on(async move {
        let store = Store::open(&format!("sqlite://{db}")).await.expect("open");
        let loop_ = WorkLoop::builder(store, KINDS)
            .handler(Slow)
            .concurrency(2)
            .worker_id("signals-worker")
            .build()
            .expect("build");
        loop_
            .run(scaffold_runtime::shutdown_signal())
            .await
            .expect("the loop drains");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db").display().to_string();
    let store = Store::open(&format!("sqlite://{db}")).await.expect("open");
    store.migrate().await.expect("migrate");
    let items = (0..ITEMS)
        .map(|i| NewItem::new("SLOW", serde_json::json!({ "i": i })))
        .collect();
    store.enqueue_many(items).await.expect("enqueue");

    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "signals::signals_worker_process",
            "--nocapture",
            "--ignored",
        ])
        .env(WORKER_ENV, &db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the worker");
    // Wait until it is working, so the signal lands mid-run.
    loop {
        let stats = store.stats().await.expect("stats");
        if stats
            .iter()
            .map(|l| l.get(ItemState::Completed).count)
            .sum::<u64>()
            >= 5
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = i32::try_from(child.id()).expect("a pid");
    kill(Pid::from_raw(pid), Signal::SIGTERM).expect("send SIGTERM");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait for the worker");
    assert!(
        status.success(),
        "the worker exits 0 after draining: {status:?}"
    );

    let workers = store.workers().await.expect("workers");
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].state, WorkerState::Offline);
    let stats = store.stats().await.expect("stats");
    let count = |s| stats.iter().map(|l| l.get(s).count).sum::<u64>();
    assert_eq!(count(ItemState::Running), 0, "nothing is left running");
    assert_eq!(
        count(ItemState::Completed) + count(ItemState::Available),
        u64::from(ITEMS)
    );
    assert!(
        count(ItemState::Available) > 0,
        "the drain stopped claiming before the end"
    );
}
