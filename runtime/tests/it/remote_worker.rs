//! The remote backend as a worker lives it, against a real coordinator on `127.0.0.1:0`
//! over SQLite: its state directory (0700, key 0600, refused through a symlink or with
//! wider modes, the spent token deleted), time from the lease and never the wall (a worker
//! whose clock is hours off keeps a handler's lease for many leases), a revocation that
//! stops the loop at once, a protocol the coordinator does not speak refused before any
//! claim, a malformed call refused and counted but never retried, and every producer or
//! operator call answered `Unsupported`, naming the coordinator.

#![cfg(all(feature = "coordinator", feature = "remote", feature = "sqlite"))]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use scaffold_runtime::coordinator::{
    Config, Coordinator, CoordinatorError, EnrollOptions, Transport, enroll, revoke,
};
use scaffold_runtime::store::remote::RemoteConfig;
use scaffold_runtime::{
    Clock, Held, Item, ItemState, NewItem, Store, StoreError, SystemClock, Timestamp, WorkContext,
    WorkError, WorkHandler, WorkKindSpec, WorkLoop,
};
use serde_json::{Value, json};

/// A coordinator over a fresh SQLite queue.
pub(crate) struct Server {
    pub(crate) store: Store,
    origin: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), CoordinatorError>>>,
    dir: tempfile::TempDir,
}

impl Server {
    pub(crate) async fn start(lease: Duration) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("q.db").display());
        let store = Store::open(&url).await.expect("open");
        store.migrate().await.expect("migrate");
        let mut config = Config::new(
            "127.0.0.1:0".parse().expect("addr"),
            Transport::InsecureLoopback,
        );
        config.lease = lease;
        config.sweep_interval = Duration::from_millis(100);
        let bound = Coordinator::new(store.clone(), config)
            .expect("config")
            .bind()
            .await
            .expect("bind");
        let origin = bound.origin().to_owned();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(bound.run(async {
            let _ = rx.await;
        }));
        Server {
            store,
            origin,
            stop: Some(tx),
            task: Some(task),
            dir,
        }
    }

    /// A token for `worker`, written to a file of the server's temporary directory.
    pub(crate) async fn token_file(&self, worker: &str) -> std::path::PathBuf {
        let token = enroll(
            &self.store,
            &EnrollOptions {
                worker: worker.to_owned(),
                account: "default".to_owned(),
                kinds: None,
                ttl: Duration::from_secs(900),
            },
        )
        .await
        .expect("enroll");
        let path = self.dir.path().join(format!("{worker}.token"));
        std::fs::write(&path, token.token).expect("token file");
        path
    }

    pub(crate) fn config(&self, worker: &str, state: &Path) -> RemoteConfig {
        RemoteConfig::new(&self.origin, state, worker)
    }

    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrolls_once_into_a_private_state_directory() {
    let s = Server::start(Duration::from_secs(30)).await;
    let home = tempfile::tempdir().expect("tempdir");
    let state = home.path().join("state");
    let token = s.token_file("w").await;
    let store = Store::open_remote(s.config("w", &state).token_file(&token))
        .await
        .expect("enrolls");
    let id = store
        .remote()
        .expect("a remote store")
        .worker_id()
        .to_owned();
    assert!(id.starts_with("w-"), "{id}");
    assert!(!token.exists(), "the spent token file is deleted");
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join("device.key")), 0o600);
    assert_eq!(mode(&state.join("identity.json")), 0o600);
    drop(store);
    // Started again: the same identity, no token needed.
    let again = Store::open_remote(s.config("w", &state))
        .await
        .expect("opens again");
    assert_eq!(again.remote().expect("remote").worker_id(), id);

    // A state directory through a symlink, or open to others, is refused; so is one with
    // no identity and no token.
    let link = home.path().join("link");
    std::os::unix::fs::symlink(&state, &link).expect("symlink");
    let err = Store::open_remote(s.config("w", &link))
        .await
        .expect_err("a symlinked state directory");
    assert!(err.to_string().contains("symlink"), "{err}");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let err = Store::open_remote(s.config("w", &state))
        .await
        .expect_err("a state directory others may read");
    assert!(err.to_string().contains("755"), "{err}");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::set_permissions(
        state.join("device.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    let err = Store::open_remote(s.config("w", &state))
        .await
        .expect_err("a key others may read");
    assert!(err.to_string().contains("device.key"), "{err}");
    let err = Store::open_remote(s.config("w", &home.path().join("empty")))
        .await
        .expect_err("no identity and no token");
    assert!(err.to_string().contains("scaffold queue enroll"), "{err}");
    // A spent token is refused by the coordinator, and said so.
    let spent = home.path().join("spent");
    std::fs::write(
        &spent,
        "scf_enr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    )
    .expect("write");
    let err = Store::open_remote(s.config("w", &home.path().join("other")).token_file(&spent))
        .await
        .expect_err("an unknown token");
    assert!(
        matches!(err, StoreError::Refused { status: 401, .. }),
        "{err}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_and_operator_calls_are_unsupported_naming_the_coordinator() {
    let s = Server::start(Duration::from_secs(30)).await;
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("w").await;
    let store = Store::open_remote(s.config("w", &home.path().join("s")).token_file(&token))
        .await
        .expect("enrolls");
    let said = |e: StoreError| {
        assert!(matches!(e, StoreError::Unsupported(_)), "{e}");
        assert!(e.to_string().contains(&s.origin), "{e}");
    };
    said(
        store
            .enqueue(NewItem::new("A", json!({})))
            .await
            .expect_err("enqueue"),
    );
    said(store.migrate().await.expect_err("migrate"));
    said(store.list(Default::default()).await.expect_err("list"));
    said(store.retry(1).await.expect_err("retry"));
    said(store.sweep().await.expect_err("sweep"));
    said(store.workers().await.expect_err("workers"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_the_coordinator_does_not_speak_is_refused_before_any_claim() {
    let s = Server::start(Duration::from_secs(30)).await;
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("w").await;
    s.store
        .enqueue(NewItem::new("A", json!({})))
        .await
        .expect("enqueue");
    let err = Store::open_remote(
        s.config("w", &home.path().join("s"))
            .token_file(&token)
            .protocol(2, 3),
    )
    .await
    .expect_err("protocol 2..3");
    assert!(
        matches!(err, StoreError::UpgradeRequired { min: 1, max: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("UPGRADE_REQUIRED"), "{err}");
    let items = s.store.list(Default::default()).await.expect("list");
    assert_eq!(items[0].state, ItemState::Available, "nothing was claimed");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_call_is_refused_counted_and_not_retried() {
    let s = Server::start(Duration::from_secs(30)).await;
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("w").await;
    let store = Store::open_remote(s.config("w", &home.path().join("s")).token_file(&token))
        .await
        .expect("enrolls");
    s.store
        .enqueue(NewItem::new("A", json!({})))
        .await
        .expect("enqueue");
    let c = store
        .claim("default", 1, Duration::from_secs(30))
        .await
        .expect("claim")
        .remove(0);
    // An effect key the coordinator refuses (a control character): a 400, the worker's bug.
    let err = store
        .begin_effect(&c.held(), "bad\u{7}key", Duration::from_secs(30))
        .await
        .expect_err("a bad key");
    assert!(
        matches!(err, StoreError::Refused { status: 400, .. }),
        "{err}"
    );
    // A 409 is a lost lease, never a refusal: the handler is cancelled.
    let stale = store
        .checkpoint(&Held::new(c.item.id, c.fence + 1, "x"), json!(1))
        .await
        .expect_err("another fence");
    assert!(stale.is_stale_lease(), "{stale}");
    store.complete(&c.held()).await.expect("complete");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_batch_larger_than_a_call_is_split() {
    let s = Server::start(Duration::from_secs(30)).await;
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("w").await;
    let store = Store::open_remote(s.config("w", &home.path().join("s")).token_file(&token))
        .await
        .expect("enrolls");
    s.store
        .enqueue_many(
            (0..250)
                .map(|i| NewItem::new("A", json!({"i": i})))
                .collect(),
        )
        .await
        .expect("enqueue");
    let mut held = Vec::new();
    while held.len() < 250 {
        let got = store
            .claim("default", 250, Duration::from_secs(30))
            .await
            .expect("claim");
        assert!(got.len() <= 100, "a claim asks for at most 100");
        held.extend(got);
    }
    // The loop's completer hands over up to 1,024 at once; the coordinator takes 100 a call.
    let results = store
        .finish_many(
            held.iter()
                .map(|c| {
                    scaffold_runtime::Finish::of(&c.held(), scaffold_runtime::Outcome::Complete)
                })
                .collect(),
        )
        .await
        .expect("finish");
    assert_eq!(results.len(), 250);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let done = s.store.list(Default::default()).await.expect("list");
    assert!(done.iter().all(|i| i.state == ItemState::Completed));
    s.stop().await;
}

/// A clock five hours ahead of the coordinator's, running.
#[derive(Debug)]
struct Ahead;

impl Clock for Ahead {
    fn now(&self) -> Timestamp {
        SystemClock.now().plus(Duration::from_secs(5 * 3600))
    }
}

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "SLOW",
    permission: "slow.run",
    ..WorkKindSpec::DEFAULT
}]];

/// Works for `for_` of real time, yielding.
struct Slow {
    for_: Duration,
    done: Arc<AtomicUsize>,
}

impl WorkHandler for Slow {
    type Payload = Value;
    const KIND: &'static str = "SLOW";
    const REQUIRES: &'static [&'static str] = &["slow.run"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        tokio::time::sleep(self.for_).await;
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_comes_from_the_lease_never_the_wall() {
    // A 400 ms lease; the handler works for 2 s; the worker's clock is five hours ahead.
    let lease = Duration::from_millis(400);
    let s = Server::start(lease).await;
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("skewed").await;
    let store = Store::open_remote_with_clock(
        s.config("skewed", &home.path().join("s"))
            .token_file(&token),
        Arc::new(Ahead),
    )
    .await
    .expect("enrolls");
    let id = s
        .store
        .enqueue(NewItem::new("SLOW", json!({})).max_attempts(1))
        .await
        .expect("enqueue");
    let done = Arc::new(AtomicUsize::new(0));
    let lp = WorkLoop::builder(store, KINDS)
        .handler(Slow {
            for_: lease * 5,
            done: Arc::clone(&done),
        })
        .poll_interval(Duration::from_millis(20))
        .build()
        .expect("build");
    let admin = s.store.clone();
    lp.run(async move {
        while !matches!(
            admin.get(id).await.ok().flatten().map(|i| i.state),
            Some(ItemState::Completed | ItemState::Dead)
        ) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("run");
    let rec = s.store.get(id).await.expect("get").expect("item");
    assert_eq!(
        (rec.state, rec.fence),
        (ItemState::Completed, 1),
        "the skewed worker lost its lease: {:?}",
        rec.last_error
    );
    assert_eq!(done.load(Ordering::SeqCst), 1);
    assert_eq!(lp.counters().leases_lost.load(Ordering::SeqCst), 0);
    s.stop().await;
}

/// Never ends unless cancelled.
struct Forever {
    started: Arc<tokio::sync::Notify>,
    dropped: Arc<AtomicUsize>,
}

struct OnDrop(Arc<AtomicUsize>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl WorkHandler for Forever {
    type Payload = Value;
    const KIND: &'static str = "SLOW";
    const REQUIRES: &'static [&'static str] = &["slow.run"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        let _flag = OnDrop(Arc::clone(&self.dropped));
        self.started.notify_one();
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_worker_stops_at_once() {
    let s = Server::start(Duration::from_secs(30)).await;
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("doomed").await;
    let store = Store::open_remote(
        s.config("doomed", &home.path().join("s"))
            .token_file(&token),
    )
    .await
    .expect("enrolls");
    s.store
        .enqueue(NewItem::new("SLOW", json!({})))
        .await
        .expect("enqueue");
    let (started, dropped) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
    let lp = WorkLoop::builder(store, KINDS)
        .handler(Forever {
            started: Arc::clone(&started),
            dropped: Arc::clone(&dropped),
        })
        .poll_interval(Duration::from_millis(20))
        .drain_timeout(Duration::from_secs(60))
        .build()
        .expect("build");
    let admin = s.store.clone();
    let revoker = tokio::spawn(async move {
        started.notified().await;
        revoke(&admin, "doomed").await.expect("revoke");
    });
    // Revoked, the loop neither waits out its 60 s drain nor its handler: it stops.
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        lp.run(std::future::pending::<()>()),
    )
    .await
    .expect("the revoked loop stops at once");
    assert!(matches!(out, Err(StoreError::Revoked)), "{out:?}");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the handler was cancelled"
    );
    revoker.await.expect("revoker");
    s.stop().await;
}
