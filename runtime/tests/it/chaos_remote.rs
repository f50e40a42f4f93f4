//! Chaos across the wire: a coordinator process over a queue (a SQLite file, or a
//! PostgreSQL schema when `SCAFFOLD_TEST_DATABASE_URL` names a server), three remote worker
//! processes reaching it only through a TCP forwarder this test runs, which cuts a live
//! connection at random every few hundred milliseconds. While 2,000 items are enqueued and
//! worked, workers are SIGKILLed and started again (on the identity in their state
//! directories) at least ten times, one is SIGSTOPped for three leases and continued, and
//! the coordinator is SIGKILLed and started again twice.
//!
//! Among the items: inputs verified and turned into outputs, inputs tampered with (dead at
//! once, no handler started), handlers computing for three leases without yielding, and
//! first attempts failing with a token, a path, a backtrace and a payload value in the
//! message.
//!
//! Counted, never sampled, and printed: items lost (not completed at the end) and stuck,
//! completions accepted for a fence that is not the item's last (or two fences for one
//! item), effect closures run by a holder whose lease had ended or passed to another (from
//! each closure's start and the store's attempt history), and effects recorded other than
//! once with the item's own value. Every one must be 0.
//!
//! The coordinator and the workers are this test binary re-executed on its ignored tests.

#![cfg(all(
    feature = "sqlite",
    feature = "postgres",
    feature = "coordinator",
    feature = "remote"
))]

use crate::pg_common;
use crate::worker_process;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use scaffold_runtime::coordinator::{Config, Coordinator, EnrollOptions, Transport, enroll};
use scaffold_runtime::store::remote::RemoteConfig;
use scaffold_runtime::{
    Clock as _, Item, ItemState, ListFilter, NewItem, Store, SystemClock, WorkContext, WorkError,
    WorkHandler, WorkKindSpec, WorkLoop,
};
use serde::{Deserialize, Serialize};

const COORDINATOR_ENV: &str = "SCAFFOLD_CHAOS_COORDINATOR";
const WORKER_ENV: &str = "SCAFFOLD_CHAOS_REMOTE_WORKER";
const ITEMS: u32 = 2_000;
const BATCH: u32 = 100;
const WORKERS: usize = 3;
const LEASE: Duration = Duration::from_millis(600);

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "WIRE",
    permission: "wire.run",
    ..WorkKindSpec::DEFAULT
}]];

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    n: u32,
    /// What a failure message must never carry.
    #[serde(default)]
    secret: Option<String>,
}

/// Every tenth item has an input artifact, which its handler turns into an output.
fn has_input(n: u32) -> bool {
    n.is_multiple_of(10) && !tampered(n)
}

/// Five items name an input whose stored bytes are not the ones named.
fn tampered(n: u32) -> bool {
    n % 400 == 5
}

/// Five items compute for three leases without yielding.
fn spins(n: u32) -> bool {
    n % 400 == 7
}

/// Some items' first attempt fails with a token, a path, a backtrace and the payload's
/// secret in its message.
fn leaks(n: u32) -> bool {
    n % 97 == 3
}

fn input_bytes(n: u32) -> Vec<u8> {
    format!("input of item {n}").into_bytes()
}

struct WireHandler;

impl WorkHandler for WireHandler {
    type Payload = Payload;
    const KIND: &'static str = "WIRE";
    const REQUIRES: &'static [&'static str] = &["wire.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Payload>) -> Result<(), WorkError> {
        let n = item.payload.n;
        let (id, fence) = (item.id, item.fence);
        println!("WIRE started {id} {fence} {n}");
        if leaks(n) && item.attempt == 1 {
            return Err(WorkError::Transient(format!(
                "provider refused scf_ses_c2VjcmV0LXNlc3Npb24tdG9rZW4tdmFsdWUtMTIzNDU2 reading /var/lib/acme/{n}/key.pem for {}\nstack backtrace:\n   0: acme::provider::call",
                item.payload.secret.as_deref().unwrap_or("")
            )));
        }
        if spins(n) {
            // Never yields: only a heartbeat on its own thread keeps the lease.
            let until = std::time::Instant::now() + LEASE * 3;
            let mut x = 0_u64;
            while std::time::Instant::now() < until {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        if has_input(n) {
            let path = ctx.input("in.txt").await?;
            let bytes = std::fs::read(&path).map_err(|e| WorkError::Transient(e.to_string()))?;
            assert_eq!(bytes, input_bytes(n), "the verified input of item {n}");
            ctx.output("out.txt", bytes.to_ascii_uppercase()).await?;
        }
        tokio::time::sleep(Duration::from_millis(10 + u64::from(n % 5) * 5)).await;
        ctx.once("effect", |effect| async move {
            let start = SystemClock.now().as_millis();
            let until = effect.lease_expires_at().as_millis();
            println!("WIRE ran {id} {fence} {until} {start}");
            Ok(n)
        })
        .await?;
        println!("WIRE handled {id} {fence} {n}");
        Ok(())
    }
}

/// The coordinator process: `<queue url> <listen address> <origin>` in its variable.
#[test]
#[ignore = "the coordinator process of the chaos-across-the-wire tests, which run it"]
fn chaos_coordinator_process() {
    let Ok(args) = std::env::var(COORDINATOR_ENV) else {
        return;
    };
    let mut parts = args.split(' ');
    let (Some(url), Some(listen), Some(origin)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async move {
        let store = Store::open(url)
            .await
            .expect("the coordinator opens the queue");
        let mut config = Config::new(
            listen.parse().expect("an address"),
            Transport::InsecureLoopback,
        );
        config.lease = LEASE;
        config.sweep_interval = Duration::from_millis(50);
        config.loopback_origin = Some(origin.to_owned());
        // Workers restarted many times over open many sessions: no limit in the test's way.
        config.limits.per_address_per_minute = 100_000;
        let bound = Coordinator::new(store, config)
            .expect("config")
            .bind()
            .await
            .expect("the coordinator binds its port again");
        println!("COORDINATOR ready 0 0");
        bound
            .run(std::future::pending())
            .await
            .expect("the coordinator runs until killed");
    });
}

/// A remote worker process: `<origin> <state dir> <token file> <name>` in its variable.
#[test]
#[ignore = "a worker process of the chaos-across-the-wire tests, which run it"]
fn chaos_remote_worker_process() {
    let Ok(args) = std::env::var(WORKER_ENV) else {
        return;
    };
    let parts: Vec<&str> = args.split(' ').collect();
    let [origin, state, token, name] = parts.as_slice() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async move {
        // The coordinator may be down as the worker starts: it waits for it, as a daemon does.
        let store = loop {
            let config = RemoteConfig::new(*origin, *state, *name)
                .token_file(*token)
                .retry_for(Duration::from_secs(2));
            match Store::open_remote(config).await {
                Ok(store) => break store,
                Err(e) => {
                    eprintln!("open: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        let loop_ = WorkLoop::builder(store, KINDS)
            .handler(WireHandler)
            .lane("default")
            .concurrency(4)
            .lease(LEASE)
            .sweep_interval(Duration::from_millis(100))
            .poll_interval(Duration::from_millis(200))
            .observer(worker_process::print_events("WIRE"))
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
    /// (id, fence, the lease end the coordinator confirmed, the closure's start), in ms.
    ran: Vec<(i64, i64, i64, i64)>,
    /// Handlers started on an item whose input was tampered with.
    started_tampered: usize,
}

/// The forwarder between the workers and the coordinator: each connection is piped until
/// either side closes or the cutter cuts it.
struct Forwarder {
    port: u16,
    cuts: Arc<AtomicU64>,
    _task: tokio::task::JoinHandle<()>,
    _cutter: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    async fn start(upstream: std::net::SocketAddr) -> Forwarder {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the forwarder binds");
        let port = listener.local_addr().expect("addr").port();
        let live: Arc<Mutex<BTreeMap<u64, tokio::sync::oneshot::Sender<()>>>> = Arc::default();
        let cuts = Arc::new(AtomicU64::new(0));
        let next = AtomicU64::new(0);
        let conns = Arc::clone(&live);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                    continue;
                };
                let (cut_tx, cut_rx) = tokio::sync::oneshot::channel();
                let n = next.fetch_add(1, Ordering::SeqCst);
                conns.lock().expect("conns").insert(n, cut_tx);
                let conns = Arc::clone(&conns);
                tokio::spawn(async move {
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut_rx => {}
                    }
                    conns.lock().expect("conns").remove(&n);
                });
            }
        });
        let (cut_live, cut_count) = (Arc::clone(&live), Arc::clone(&cuts));
        let cutter = tokio::spawn(async move {
            let mut i = 0u64;
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                i += 1;
                let mut live = cut_live.lock().expect("conns");
                if live.is_empty() {
                    continue;
                }
                let keys: Vec<u64> = live.keys().copied().collect();
                let pick = keys[(i.wrapping_mul(2_654_435_761) as usize) % keys.len()];
                if let Some(cut) = live.remove(&pick) {
                    let _ = cut.send(());
                    cut_count.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Forwarder {
            port,
            cuts,
            _task: task,
            _cutter: cutter,
        }
    }
}

fn this_test_binary(test: &str, env: &str, value: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("the test binary"));
    c.args(["--exact", test, "--nocapture", "--ignored"])
        .env(env, value)
        .stderr(Stdio::null());
    c
}

/// Starts the coordinator and waits until it listens.
fn start_coordinator(url: &str, listen: &str, origin: &str) -> Child {
    let mut child = this_test_binary(
        "chaos_remote::chaos_coordinator_process",
        COORDINATOR_ENV,
        &format!("{url} {listen} {origin}"),
    )
    .stdout(Stdio::piped())
    .spawn()
    .expect("the coordinator starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("COORDINATOR ready") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the coordinator listens");
    child
}

struct Worker {
    state: PathBuf,
    token: PathBuf,
    name: String,
}

fn start_worker(origin: &str, w: &Worker, log: &Arc<Mutex<Log>>) -> Child {
    let log = Arc::clone(log);
    worker_process::spawn(
        "chaos_remote::chaos_remote_worker_process",
        WORKER_ENV,
        &format!(
            "{origin} {} {} {}",
            w.state.display(),
            w.token.display(),
            w.name
        ),
        "WIRE",
        move |line| {
            let Ok(mut log) = log.lock() else { return };
            match line.event {
                "completed" => log.completed.push((line.id, line.fence)),
                "ran" => {
                    if let [Some(Ok(until)), Some(Ok(start))] =
                        [line.rest.first(), line.rest.get(1)].map(|t| t.map(|t| t.parse()))
                    {
                        log.ran.push((line.id, line.fence, until, start));
                    }
                }
                "started" => {
                    if let Some(Ok(n)) = line.rest.first().map(|t| t.parse::<u32>())
                        && tampered(n)
                    {
                        log.started_tampered += 1;
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
    let _ = kill(pid, sig);
}

fn kill_hard(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn chaos(url: &str, home: &Path) {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    let coordinator_port = free_port();
    let listen = format!("127.0.0.1:{coordinator_port}");
    let forwarder = Forwarder::start(listen.parse().expect("addr")).await;
    let origin = format!("http://127.0.0.1:{}", forwarder.port);
    let mut coordinator = start_coordinator(url, &listen, &origin);
    let log = Arc::new(Mutex::new(Log::default()));
    let mut workers = Vec::new();
    for i in 0..WORKERS {
        let name = format!("wire{i}");
        let token = enroll(
            &store,
            &EnrollOptions {
                worker: name.clone(),
                account: "default".to_owned(),
                kinds: None,
                ttl: Duration::from_secs(900),
            },
        )
        .await
        .expect("enroll");
        let w = Worker {
            state: home.join(format!("state{i}")),
            token: home.join(format!("token{i}")),
            name,
        };
        std::fs::write(&w.token, token.token).expect("token file");
        workers.push(w);
    }
    let mut procs: Vec<Child> = workers
        .iter()
        .map(|w| start_worker(&origin, w, &log))
        .collect();
    let mut payload_of: BTreeMap<i64, u32> = BTreeMap::new();
    let (mut kills, mut stops, mut coordinator_kills) = (0_u32, 0_u32, 0_u32);
    let give_up = Instant::now() + Duration::from_secs(300);
    for batch in 0..ITEMS / BATCH {
        let mut items: Vec<NewItem> = Vec::new();
        for i in 0..BATCH {
            let n = batch * BATCH + i;
            let secret = format!("secret-of-item-{n}");
            // Cut claims hand out attempts the worker never hears of: room for them.
            let mut item = NewItem::new("WIRE", serde_json::json!({ "n": n, "secret": secret }))
                .max_attempts(100);
            if has_input(n) {
                item = item.input(
                    store
                        .put_artifact("default", "in.txt", input_bytes(n))
                        .await
                        .expect("an input"),
                );
            }
            if tampered(n) {
                let named = scaffold_runtime::artifacts::sha256_hex(&input_bytes(n));
                store
                    .coordinator()
                    .expect("tables")
                    .put_artifact(
                        "default".to_owned(),
                        named.clone(),
                        b"tampered bytes".to_vec(),
                        store.now(),
                    )
                    .await
                    .expect("a tampered input");
                item = item.input(scaffold_runtime::ArtifactRef {
                    name: "in.txt".to_owned(),
                    sha256: named,
                    size: input_bytes(n).len() as u64,
                });
            }
            items.push(item);
        }
        for (i, id) in store
            .enqueue_many(items)
            .await
            .expect("enqueue")
            .into_iter()
            .enumerate()
        {
            let n = batch * BATCH + u32::try_from(i).expect("small");
            assert!(
                payload_of.insert(id, n).is_none(),
                "id {id} handed out twice"
            );
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
        let victim = usize::try_from(batch).expect("small") % WORKERS;
        match batch {
            // The coordinator dies twice, and comes back on its port.
            6 | 13 => {
                kill_hard(&mut coordinator);
                coordinator_kills += 1;
                tokio::time::sleep(Duration::from_millis(300)).await;
                coordinator = start_coordinator(url, &listen, &origin);
            }
            // One worker stopped for three leases while the others take its jobs.
            9 => {
                signal(&procs[victim], Signal::SIGSTOP);
                stops += 1;
                tokio::time::sleep(LEASE * 3).await;
                signal(&procs[victim], Signal::SIGCONT);
            }
            // Otherwise a worker is killed and started again on its identity.
            _ => {
                kill_hard(&mut procs[victim]);
                kills += 1;
                procs[victim] = start_worker(&origin, &workers[victim], &log);
            }
        }
    }
    let completed = |store: Store| async move {
        store
            .counts()
            .await
            .expect("counts")
            .iter()
            .filter(|(_, _, s, _)| matches!(s, ItemState::Completed | ItemState::Dead))
            .map(|(_, _, _, n)| *n)
            .sum::<u64>()
    };
    loop {
        let done = completed(store.clone()).await;
        if done >= u64::from(ITEMS) {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the workers stopped making progress ({done} of {ITEMS} completed)"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Resumed and restarted holders finish what they still believe they hold.
    tokio::time::sleep(LEASE * 2).await;
    for p in &mut procs {
        kill_hard(p);
    }
    kill_hard(&mut coordinator);

    let items = store.list(ListFilter::default()).await.expect("list");
    let mut history = BTreeMap::new();
    let (mut lost, mut effects_wrong, mut outputs_wrong, mut tampered_wrong) = (0, 0, 0, 0);
    let mut final_fence = BTreeMap::new();
    // Every failure message the workers sent: the items' last errors and each attempt's.
    let mut failures: Vec<String> = Vec::new();
    for item in &items {
        let n = payload_of.get(&item.id).copied().unwrap_or(u32::MAX);
        final_fence.insert(item.id, item.fence);
        for a in store.attempts(item.id).await.expect("attempts") {
            failures.extend(a.error.clone());
            history.insert((item.id, a.fence), a);
        }
        failures.extend(item.last_error.clone());
        let effects = store.effects(item.id).await.expect("effects");
        if tampered(n) {
            // Dead at its first verified attempt, its handler never started.
            let why = item.last_error.as_deref().unwrap_or("");
            if item.state != ItemState::Dead
                || !effects.is_empty()
                || !why.contains("failed its SHA-256 check")
            {
                tampered_wrong += 1;
            }
            continue;
        }
        if item.state != ItemState::Completed {
            lost += 1;
        }
        let own = serde_json::json!(n);
        if effects.len() != 1 || effects[0].output != own {
            effects_wrong += 1;
        }
        if has_input(n) {
            let outputs: Vec<_> = store
                .coordinator()
                .expect("tables")
                .item_artifacts(item.id)
                .await
                .expect("artifacts")
                .into_iter()
                .filter(|a| {
                    a.role == scaffold_runtime::store::coordinator::ArtifactRole::Output
                        && a.fence == item.fence
                })
                .map(|a| a.artifact.sha256)
                .collect();
            let want =
                scaffold_runtime::artifacts::sha256_hex(&input_bytes(n).to_ascii_uppercase());
            if outputs != vec![want] {
                outputs_wrong += 1;
            }
        }
    }
    let leaked: Vec<&String> = failures
        .iter()
        .filter(|m| {
            m.contains("scf_ses_c2Vj")
                || m.contains("secret-of-item")
                || m.contains("/var/lib")
                || m.contains("backtrace")
                || m.contains("acme::provider")
        })
        .collect();
    let started_tampered = log.lock().expect("the log").started_tampered;
    scaffold_runtime::testing::conformance::counters_agree(&store).await;
    let log = log.lock().expect("the log");
    let mut stale_accepted = 0;
    let mut fence_of: BTreeMap<i64, i64> = BTreeMap::new();
    for &(id, fence) in &log.completed {
        let second = fence_of.insert(id, fence).is_some_and(|f| f != fence);
        if second || final_fence.get(&id) != Some(&fence) {
            stale_accepted += 1;
        }
    }
    let (without, in_window) = worker_process::ran_without_a_lease(&log.ran, &history);
    println!(
        "chaos across the wire ({}): {} items, {WORKERS} remote workers, {kills} SIGKILLs, {stops} SIGSTOP for 3 leases, \
         {coordinator_kills} coordinator kills, {} connections cut; lost {lost}, effects not recorded once {effects_wrong}, \
         completions accepted {} (stale accepted {stale_accepted}), stale writes refused {} (completions {}, leases lost {}), \
         effect closures run {}, by a holder whose lease had ended or passed {without} (of them in the window between once's \
         look and the closure's first line: {in_window})",
        store.backend_name(),
        items.len(),
        forwarder.cuts.load(Ordering::SeqCst),
        log.completed.len(),
        log.stale_rejected + log.leases_lost,
        log.stale_rejected,
        log.leases_lost,
        log.ran.len(),
    );
    println!(
        "  job files: {} items with an input (outputs wrong {outputs_wrong}), {} tampered (not dead at once {tampered_wrong}, \
         handlers started on one {started_tampered}), {} computing for 3 leases; {} failure messages sent, {} carrying a \
         token, path, backtrace or payload value",
        (0..ITEMS).filter(|n| has_input(*n)).count(),
        (0..ITEMS).filter(|n| tampered(*n)).count(),
        (0..ITEMS).filter(|n| spins(*n)).count(),
        failures.len(),
        leaked.len(),
    );
    assert_eq!(items.len(), ITEMS as usize, "every item is there");
    assert_eq!(lost, 0, "items not completed");
    assert_eq!(
        outputs_wrong, 0,
        "an item's output not recorded with its last attempt"
    );
    assert_eq!(
        tampered_wrong, 0,
        "a tampered input not dead at once with its reason"
    );
    assert_eq!(started_tampered, 0, "a handler started on a tampered input");
    assert!(
        failures
            .iter()
            .any(|m| m.contains("[redacted]") && m.contains("[path]")),
        "the leaky failures were sent (sanitized): {failures:?}"
    );
    assert!(leaked.is_empty(), "failure messages leaking: {leaked:?}");
    assert_eq!(
        effects_wrong, 0,
        "an effect not recorded once with its own item's value"
    );
    assert_eq!(stale_accepted, 0, "a stale completion was accepted");
    assert_eq!(
        without - in_window,
        0,
        "a holder ran an effect after its lease had ended or passed to another"
    );
    assert!(kills >= 10 && coordinator_kills == 2 && stops == 1);
    assert!(
        forwarder.cuts.load(Ordering::SeqCst) > 0,
        "no connection was cut"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_workers_lose_nothing_sqlite() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    chaos(
        &format!("sqlite://{}", dir.path().join("wire.db").display()),
        dir.path(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_workers_lose_nothing_postgres() {
    if !pg_common::database_named() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (url, _guard) = pg_common::fresh_url("&pool_size=4");
    chaos(&url, dir.path()).await;
}
