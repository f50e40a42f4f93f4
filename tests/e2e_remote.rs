//! The generated remote worker as processes, under chaos: the generated coordinator's binary
//! over a SQLite queue (leases of one second), two tokens from its `enroll`, two daemons of
//! the generated remote worker (their own state directories, no database setting) whose
//! handler — edited as its author would — turns each item's input file into an output file.
//! Among the items, enqueued with input artifacts through the queue's own store: handlers
//! that compute for three leases without yielding, first attempts failing with a token, an
//! absolute path, a backtrace and a payload value in the message, and an input whose stored
//! bytes are not the ones its digest names. While they are worked, the daemons are
//! SIGKILLed and started again on the identity in their state directories (ten times), the
//! coordinator is SIGKILLed and started again (twice), and a daemon is SIGSTOPped for three
//! leases.
//!
//! Counted, and each must be 0: items lost (not completed), items completed other than once
//! under their last fence, effects recorded other than once, outputs missing or wrong, the
//! corrupted item not dead at once (or its handler run), failure messages carrying a token,
//! an absolute path, a backtrace or a payload value.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scaffold_runtime::store::coordinator::ArtifactRole;
use scaffold_runtime::{ItemState, NewItem, Store};

/// Items enqueued for the two daemons.
const ITEMS: usize = 60;

/// What item `n` is: every tenth computes for three leases, every tenth (offset 5) fails its
/// first attempt leakily, and item 7's input is corrupted.
fn id_of(n: usize) -> String {
    match n {
        7 => format!("parcel-{n}-tampered"),
        _ if n.is_multiple_of(10) => format!("parcel-{n}-cpu"),
        _ if n % 10 == 5 => format!("parcel-{n}-leaky"),
        _ => format!("parcel-{n}"),
    }
}

/// The handler the test gives the kind: the input `label.txt` upper-cased into the output
/// `label.out`, the effect recorded once.
const HANDLER: &str = r#"//! Handles `RENDER_LABEL` items: the label's text, rendered (upper-cased) into a file.

use acme_om::shipping::types::work::RenderLabelPayload;
use scaffold_runtime::{Item, WorkContext, WorkError, WorkHandler};

/// The permission this handler's calls take.
pub const PERMISSION: &str = "shipping.render_label";

/// The key the effect is recorded under.
pub const EFFECT: &str = "render_label";

/// Handles `RENDER_LABEL`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderLabelHandler;

impl WorkHandler for RenderLabelHandler {
    type Payload = RenderLabelPayload;
    const KIND: &'static str = "RENDER_LABEL";
    const REQUIRES: &'static [&'static str] = &[PERMISSION];

    async fn handle(
        &self,
        ctx: &WorkContext,
        item: &Item<Self::Payload>,
    ) -> Result<(), WorkError> {
        let id = item.payload.id.clone();
        if id.ends_with("-cpu") {
            // Rendering a large label: three leases of computing without an await.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
            let mut x = 0_u64;
            while std::time::Instant::now() < until {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        }
        if id.ends_with("-leaky") && item.attempt == 1 {
            return Err(WorkError::Transient(format!(
                "cannot render {id}: /var/lib/worker/state/device.key refused token \
                 scf_ses_c2VjcmV0LXNlc3Npb24tdG9rZW4\n   0: std::backtrace::Backtrace::create\n             \
                 at /rustc/1a2b3c/library/std/src/backtrace.rs:331:13"
            )));
        }
        let path = ctx.input("label.txt").await?;
        let text = std::fs::read(&path).map_err(|e| WorkError::Transient(e.to_string()))?;
        ctx.output("label.out", text.to_ascii_uppercase()).await?;
        ctx.once(EFFECT, |_| async move { Ok(serde_json::json!({ "render_label": id })) })
            .await?;
        Ok(())
    }
}
"#;

/// A process killed when dropped (a failed assertion leaves nothing running).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn input_of(n: usize) -> Vec<u8> {
    format!("label of parcel {n}").into_bytes()
}

/// A daemon of the generated remote worker on `state` (enrolling with `token` on its first
/// start).
fn daemon(bin: &Path, port: u16, token: &Path, state: &Path) -> Running {
    let child = Command::new(bin)
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(
            "ACME_RENDER_COORDINATOR_URL",
            format!("http://127.0.0.1:{port}"),
        )
        .env("ACME_RENDER_TOKEN_FILE", token)
        .env("ACME_RENDER_STATE_DIR", state)
        .env("ACME_RENDER_CONCURRENCY", "3")
        .env("ACME_METRICS_PORT", free_port().to_string())
        .stdout(Stdio::null())
        .stderr(log(&state.with_extension("log")))
        .spawn()
        .expect("a daemon starts");
    Running(child)
}

/// `path` opened for appending: where a process's stderr goes, shown when the test fails.
fn log(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("a log file")
}

/// What the processes wrote to stderr (their logs), for a failure's message.
fn logs(dir: &Path) -> String {
    let mut out = String::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    paths.sort();
    for p in paths {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        out.push_str(&format!("== {} (last 40 lines)\n", p.display()));
        for l in tail.iter().rev() {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Sends `signal` (`-STOP`, `-CONT`) to `child` (argv, no shell).
fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill {signal}");
}

/// Rewrites the kind's handler, builds the two binaries, runs them under chaos and counts.
pub fn run(dir: &Path, target: &Path, cargo: impl Fn(&[&str])) {
    let handler = dir.join("workers/render/src/handlers/render_label.rs");
    std::fs::write(&handler, HANDLER).expect("the handler");
    cargo(&[
        "build",
        "--locked",
        "-p",
        "acme-render",
        "-p",
        "acme-coordinator",
    ]);
    let bin = |name: &str| target.join("debug").join(name);
    let tmp = tempfile::tempdir().expect("tempdir");
    let queue = format!("sqlite://{}", tmp.path().join("queue.db").display());
    let port = free_port();
    let coordinator_env = |c: &mut Command| {
        c.env("ACME_DATABASE_URL", &queue)
            .env("ACME_COORDINATOR_LISTEN", format!("127.0.0.1:{port}"))
            .env("ACME_COORDINATOR_LEASE_SECS", "1")
            .env_remove("ACME_COORDINATOR_PUBLIC_URL");
    };
    let start_coordinator = || {
        let mut serve = Command::new(bin("acme-coordinator"));
        serve
            .arg("serve")
            .stdout(Stdio::null())
            .stderr(log(&tmp.path().join("coordinator.log")));
        coordinator_env(&mut serve);
        Running(serve.spawn().expect("the coordinator starts"))
    };
    let mut coordinator = start_coordinator();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut health = Command::new(bin("acme-coordinator"));
        health.arg("health");
        coordinator_env(&mut health);
        if health.output().expect("health runs").status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the coordinator never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut daemons = Vec::new();
    for w in 0..2 {
        let token = tmp.path().join(format!("render-{w}.token"));
        let mut enroll = Command::new(bin("acme-coordinator"));
        enroll
            .args(["enroll", "--worker", "render", "--out"])
            .arg(&token);
        coordinator_env(&mut enroll);
        let out = enroll.output().expect("enroll runs");
        assert!(
            out.status.success(),
            "enroll: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let state: PathBuf = tmp.path().join(format!("render-{w}"));
        let running = daemon(&bin("acme-render"), port, &token, &state);
        daemons.push((running, token, state));
    }

    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let store = rt.block_on(Store::open(&queue)).expect("the queue");
    let mut ids = Vec::new();
    rt.block_on(async {
        for n in 0..ITEMS {
            let input = if id_of(n).ends_with("-tampered") {
                // Stored under the digest of other bytes: what the worker downloads does not
                // match what the item names.
                let named = scaffold_runtime::artifacts::sha256_hex(&input_of(n));
                store
                    .coordinator()
                    .expect("the coordinator's tables")
                    .put_artifact(
                        "default".to_owned(),
                        named.clone(),
                        b"tampered bytes".to_vec(),
                        store.now(),
                    )
                    .await
                    .expect("a tampered input");
                scaffold_runtime::ArtifactRef {
                    name: "label.txt".to_owned(),
                    sha256: named,
                    size: input_of(n).len() as u64,
                }
            } else {
                store
                    .put_artifact("default", "label.txt", input_of(n))
                    .await
                    .expect("an input")
            };
            let item = NewItem::new("RENDER_LABEL", serde_json::json!({ "id": id_of(n) }))
                .lane("render")
                .input(input);
            ids.push((n, store.enqueue(item).await.expect("enqueued")));
        }
    });

    // Chaos while the items are worked: a SIGKILL and a restart on the same state directory
    // every 400 ms, alternating daemons, ten times; then one daemon stopped for three leases.
    let finished = |store: &Store| {
        rt.block_on(async {
            let mut done = 0;
            for (_, id) in &ids {
                let item = store.get(*id).await.expect("the store").expect("the item");
                if matches!(item.state, ItemState::Completed | ItemState::Dead) {
                    done += 1;
                }
            }
            done
        })
    };
    let (mut kills, mut coordinator_kills) = (0, 0);
    while kills < 10 {
        std::thread::sleep(Duration::from_millis(400));
        let (running, token, state) = &mut daemons[kills % 2];
        let _ = running.0.kill();
        let _ = running.0.wait();
        *running = daemon(&bin("acme-render"), port, token, state);
        kills += 1;
        // The coordinator too, twice: SIGKILLed and started again on the same queue and
        // port; the daemons' calls in flight fail and are retried.
        if kills % 4 == 3 {
            let _ = coordinator.0.kill();
            let _ = coordinator.0.wait();
            coordinator = start_coordinator();
            coordinator_kills += 1;
        }
    }
    signal(&daemons[0].0.0, "-STOP");
    std::thread::sleep(Duration::from_secs(3));
    signal(&daemons[0].0.0, "-CONT");
    let deadline = Instant::now() + Duration::from_secs(120);
    while finished(&store) < ITEMS {
        if Instant::now() > deadline {
            let unfinished: Vec<String> = rt.block_on(async {
                let mut out = Vec::new();
                for (n, id) in &ids {
                    let item = store.get(*id).await.expect("the store").expect("the item");
                    if !matches!(item.state, ItemState::Completed | ItemState::Dead) {
                        out.push(format!(
                            "{n}: {:?} attempt {} run_at {:?} owner {:?} expires {:?} error {:?}",
                            item.state,
                            item.attempt,
                            item.run_at,
                            item.lease_owner,
                            item.lease_expires_at,
                            item.last_error
                        ));
                    }
                }
                out
            });
            panic!(
                "{} of {ITEMS} items finished after the chaos; unfinished:\n{}\n{}",
                finished(&store),
                unfinished.join("\n"),
                logs(tmp.path())
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    let (mut lost, mut completions_wrong, mut effects_wrong, mut outputs_wrong) = (0, 0, 0, 0);
    let (mut tampered_wrong, mut leaks) = (0, Vec::new());
    rt.block_on(async {
        for (n, id) in &ids {
            let item = store.get(*id).await.expect("the store").expect("the item");
            let attempts = store.attempts(*id).await.expect("the attempts");
            let effects = store.effects(*id).await.expect("the effects");
            for a in &attempts {
                let Some(error) = &a.error else { continue };
                // The token's secret part (its `scf_ses_` prefix may stay, to say what was
                // redacted), a path, a backtrace's frames, a payload value.
                let leaked = ["c2VjcmV0", "/var/lib", "/rustc", "backtrace", "parcel-"]
                    .iter()
                    .any(|needle| error.contains(needle));
                if leaked {
                    leaks.push(format!("item {n}: {error}"));
                }
            }
            if id_of(*n).ends_with("-tampered") {
                if item.state != ItemState::Dead || item.attempt != 1 || !effects.is_empty() {
                    tampered_wrong += 1;
                }
                continue;
            }
            if item.state != ItemState::Completed {
                lost += 1;
                continue;
            }
            let completed: Vec<_> = attempts
                .iter()
                .filter(|a| a.outcome == "completed")
                .collect();
            if completed.len() != 1 || completed[0].fence != item.fence {
                completions_wrong += 1;
            }
            if effects.len() != 1 {
                effects_wrong += 1;
            }
            let outputs: Vec<String> = store
                .coordinator()
                .expect("the coordinator's tables")
                .item_artifacts(item.id)
                .await
                .expect("the item's artifacts")
                .into_iter()
                .filter(|a| a.role == ArtifactRole::Output && a.fence == item.fence)
                .map(|a| a.artifact.sha256)
                .collect();
            let want = scaffold_runtime::artifacts::sha256_hex(&input_of(*n).to_ascii_uppercase());
            if outputs != vec![want] {
                outputs_wrong += 1;
            }
        }
    });
    let leaky_failures = rt.block_on(async {
        let mut seen = 0;
        for (n, id) in &ids {
            if id_of(*n).ends_with("-leaky") {
                let attempts = store.attempts(*id).await.expect("the attempts");
                seen += attempts.iter().filter(|a| a.error.is_some()).count();
            }
        }
        seen
    });
    println!(
        "generated remote worker under chaos: {ITEMS} items, {kills} SIGKILLs and restarts of a daemon, \
         {coordinator_kills} of the coordinator, one SIGSTOP of three leases; \
         lost {lost}, completions not once under the last fence {completions_wrong}, effects not once {effects_wrong}, \
         outputs wrong {outputs_wrong}, corrupted input not dead at once {tampered_wrong}, leaky failures recorded {leaky_failures}, \
         failure messages leaking {}",
        leaks.len()
    );
    assert_eq!(
        (
            lost,
            completions_wrong,
            effects_wrong,
            outputs_wrong,
            tampered_wrong
        ),
        (0, 0, 0, 0, 0)
    );
    assert!(
        leaky_failures >= 6,
        "every leaky item failed its first attempt"
    );
    assert!(leaks.is_empty(), "{leaks:#?}");
    // SIGTERM: a daemon drains and exits 0.
    let (running, _, _) = &mut daemons[1];
    signal(&running.0, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = running.0.try_wait().expect("the daemon's status") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "the daemon exits 0 after its drain: {status:?}"
    );
    let workers = rt.block_on(store.workers()).expect("the workers");
    let render: Vec<_> = workers
        .iter()
        .filter(|w| w.id.starts_with("render"))
        .collect();
    assert_eq!(
        render.len(),
        2,
        "two daemons, each one identity across its restarts: {workers:?}"
    );
    for (_, token, _) in &daemons {
        assert!(
            !token.exists(),
            "{}: the spent token is deleted",
            token.display()
        );
    }
}
