//! The generated remote worker as processes: the generated coordinator's binary over a
//! SQLite queue, two tokens from its `enroll`, two daemons of the generated remote worker
//! (their own state directories, no database setting) whose handler — edited as its author
//! would — turns each item's input file into an output file. Items are enqueued with input
//! artifacts through the queue's own store; every one must end completed, with its output
//! stored under its last fence and digest-checked here.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scaffold_runtime::store::coordinator::ArtifactRole;
use scaffold_runtime::{ItemState, NewItem, Store};

/// Items enqueued for the two daemons.
const ITEMS: usize = 20;

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
        let path = ctx.input("label.txt").await?;
        let text = std::fs::read(&path).map_err(|e| WorkError::Transient(e.to_string()))?;
        ctx.output("label.out", text.to_ascii_uppercase()).await?;
        let id = item.payload.id.clone();
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

/// Rewrites the kind's handler, builds the two binaries, runs them and checks every item.
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
            .env_remove("ACME_COORDINATOR_PUBLIC_URL");
    };
    let mut serve = Command::new(bin("acme-coordinator"));
    serve
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    coordinator_env(&mut serve);
    let _coordinator = Running(serve.spawn().expect("the coordinator starts"));
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
        let daemon = Command::new(bin("acme-render"))
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env(
                "ACME_RENDER_COORDINATOR_URL",
                format!("http://127.0.0.1:{port}"),
            )
            .env("ACME_RENDER_TOKEN_FILE", &token)
            .env("ACME_RENDER_STATE_DIR", &state)
            .env("ACME_RENDER_CONCURRENCY", "2")
            .env("ACME_METRICS_PORT", free_port().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("a daemon starts");
        daemons.push((Running(daemon), token));
    }

    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let store = Store::open(&queue).await.expect("the queue");
        let mut ids = Vec::new();
        for n in 0..ITEMS {
            let input = store
                .put_artifact("default", "label.txt", input_of(n))
                .await
                .expect("an input");
            let item = NewItem::new(
                "RENDER_LABEL",
                serde_json::json!({ "id": format!("parcel-{n}") }),
            )
            .lane("render")
            .input(input);
            ids.push((n, store.enqueue(item).await.expect("enqueued")));
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        for (n, id) in &ids {
            let item = loop {
                let item = store.get(*id).await.expect("the store").expect("the item");
                if matches!(item.state, ItemState::Completed | ItemState::Dead) {
                    break item;
                }
                assert!(
                    Instant::now() < deadline,
                    "item {n} never finished: {item:?}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            assert_eq!(item.state, ItemState::Completed, "item {n}: {item:?}");
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
            assert_eq!(outputs, vec![want], "item {n}'s output");
        }
        let workers = store.workers().await.expect("the workers");
        let render: Vec<_> = workers
            .iter()
            .filter(|w| w.id.starts_with("render"))
            .collect();
        assert_eq!(render.len(), 2, "two enrolled daemons: {workers:?}");
    });
    for (_, token) in &daemons {
        assert!(
            !token.exists(),
            "{}: the spent token is deleted",
            token.display()
        );
    }
}
