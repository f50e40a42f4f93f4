//! A remote worker's job files and failures, against a real coordinator over SQLite: inputs
//! fetched and verified by SHA-256 before the handler runs (a tampered one is a permanent
//! failure and nothing runs), outputs and partial results uploaded and named by the
//! completion, the workspace kept or removed by the cleanup policy, an unknown parameter
//! permanent at once, and every failure message that leaves the worker sanitized.

#![cfg(all(feature = "coordinator", feature = "remote", feature = "sqlite"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use scaffold_runtime::artifacts::{Cleanup, sha256_hex};
use scaffold_runtime::store::coordinator::ArtifactRole;
use scaffold_runtime::{
    ArtifactRef, Item, ItemId, ItemState, NewItem, Store, WorkContext, WorkError, WorkHandler,
    WorkKindSpec, WorkLoop,
};
use serde_json::{Value, json};

use crate::remote_worker::Server;

static KINDS: &[&[WorkKindSpec]] = &[&[
    WorkKindSpec {
        name: "CONVERT",
        permission: "convert.run",
        ..WorkKindSpec::DEFAULT
    },
    WorkKindSpec {
        name: "LEAKY",
        permission: "leaky.run",
        ..WorkKindSpec::DEFAULT
    },
    WorkKindSpec {
        name: "STRICT",
        permission: "strict.run",
        ..WorkKindSpec::DEFAULT
    },
]];

/// Upper-cases input `in.txt` into output `out.txt`, after a partial result.
struct Convert {
    ran: Arc<AtomicUsize>,
    seen: Arc<std::sync::Mutex<Vec<std::path::PathBuf>>>,
}

impl WorkHandler for Convert {
    type Payload = Value;
    const KIND: &'static str = "CONVERT";
    const REQUIRES: &'static [&'static str] = &["convert.run"];
    async fn handle(&self, ctx: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        self.ran.fetch_add(1, Ordering::SeqCst);
        let input = ctx.input("in.txt").await?;
        self.seen.lock().expect("seen").push(input.clone());
        let text =
            std::fs::read_to_string(&input).map_err(|e| WorkError::Transient(e.to_string()))?;
        ctx.output("part-1.txt", text[..1].to_uppercase()).await?;
        let scratch = ctx.workspace()?.join("out.txt");
        std::fs::write(&scratch, text.to_uppercase())
            .map_err(|e| WorkError::Transient(e.to_string()))?;
        ctx.output_file("out.txt", &scratch).await?;
        // A URI or a path is never a result's name.
        for bad in ["file:///tmp/out.txt", "worker://w/out", "/tmp/out.txt"] {
            let err = ctx.output(bad, "x").await.expect_err("refused");
            assert!(matches!(err, WorkError::Permanent(_)), "{err:?}");
        }
        Ok(())
    }
}

/// Fails with everything a failure message must not carry.
struct Leaky;

impl WorkHandler for Leaky {
    type Payload = Value;
    const KIND: &'static str = "LEAKY";
    const REQUIRES: &'static [&'static str] = &["leaky.run"];
    async fn handle(&self, _: &WorkContext, item: &Item<Value>) -> Result<(), WorkError> {
        if item.payload.get("panic").is_some() {
            panic!("boom reading /srv/acme/secrets/key.pem");
        }
        Err(WorkError::Transient(format!(
            "provider refused scf_ses_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3 for {} at /home/worker/.state/device.key\nstack backtrace:\n   0: acme::provider::call\n             at ./src/provider.rs:10:5",
            item.payload["email"].as_str().unwrap_or("")
        )))
    }
}

/// A remote kind's payload: unknown fields refused.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Strict {
    #[allow(dead_code)]
    n: u32,
}

struct StrictHandler(Arc<AtomicUsize>);

impl WorkHandler for StrictHandler {
    type Payload = Strict;
    const KIND: &'static str = "STRICT";
    const REQUIRES: &'static [&'static str] = &["strict.run"];
    async fn handle(&self, _: &WorkContext, _: &Item<Strict>) -> Result<(), WorkError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Runs a remote worker over `s` until every one of `ids` is completed or dead.
async fn work(
    s: &Server,
    jobs: &std::path::Path,
    ids: &[ItemId],
) -> (
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
    Arc<std::sync::Mutex<Vec<std::path::PathBuf>>>,
) {
    let home = tempfile::tempdir().expect("tempdir");
    let token = s.token_file("files").await;
    let store = Store::open_remote(
        s.config("files", &home.path().join("state"))
            .token_file(&token),
    )
    .await
    .expect("enrolls");
    let ran = Arc::new(AtomicUsize::new(0));
    let strict = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let lp = WorkLoop::builder(store, KINDS)
        .handler(Convert {
            ran: Arc::clone(&ran),
            seen: Arc::clone(&seen),
        })
        .handler(Leaky)
        .handler(StrictHandler(Arc::clone(&strict)))
        .workspaces(jobs, Cleanup::KeepFailed)
        .poll_interval(Duration::from_millis(20))
        .build()
        .expect("build");
    let admin = s.store.clone();
    let ids = ids.to_vec();
    lp.run(async move {
        loop {
            let mut done = true;
            for id in &ids {
                let state = admin.get(*id).await.ok().flatten().map(|i| i.state);
                done &= matches!(state, Some(ItemState::Completed | ItemState::Dead));
            }
            if done {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("run");
    (ran, strict, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_are_verified_before_the_handler_and_outputs_ride_the_completion() {
    let s = Server::start(Duration::from_secs(30)).await;
    let good = s
        .store
        .put_artifact("default", "in.txt", b"hello".to_vec())
        .await
        .expect("put");
    let good_id = s
        .store
        .enqueue(NewItem::new("CONVERT", json!({})).input(good))
        .await
        .expect("enqueue");
    // Stored under the digest of other bytes: what a corrupted blob looks like to a worker.
    let named = sha256_hex(b"expected");
    s.store
        .coordinator()
        .expect("tables")
        .put_artifact(
            "default".to_owned(),
            named.clone(),
            b"tampered".to_vec(),
            s.store.now(),
        )
        .await
        .expect("put tampered");
    let bad_id = s
        .store
        .enqueue(
            NewItem::new("CONVERT", json!({}))
                .max_attempts(5)
                .input(ArtifactRef {
                    name: "in.txt".to_owned(),
                    sha256: named,
                    size: 8,
                }),
        )
        .await
        .expect("enqueue");
    let jobs = tempfile::tempdir().expect("tempdir");
    let (ran, _, seen) = work(&s, jobs.path(), &[good_id, bad_id]).await;

    // The good item: its handler read the verified input from its workspace; the partial
    // result and the output were stored and named with the completion.
    let done = s.store.get(good_id).await.expect("get").expect("item");
    assert_eq!(done.state, ItemState::Completed, "{:?}", done.last_error);
    let arts = s
        .store
        .coordinator()
        .expect("tables")
        .item_artifacts(good_id)
        .await
        .expect("artifacts");
    let outputs: Vec<(String, String)> = arts
        .iter()
        .filter(|a| a.role == ArtifactRole::Output)
        .map(|a| (a.artifact.name.clone(), a.artifact.sha256.clone()))
        .collect();
    assert_eq!(
        outputs,
        vec![
            ("out.txt".to_owned(), sha256_hex(b"HELLO")),
            ("part-1.txt".to_owned(), sha256_hex(b"H")),
        ]
    );
    let stored = s
        .store
        .coordinator()
        .expect("tables")
        .get_artifact("default".to_owned(), sha256_hex(b"HELLO"))
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(stored, b"HELLO");
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].starts_with(jobs.path()), "{}", seen[0].display());
    // Completed: its workspace is gone (the policy keeps only failed ones).
    assert!(!jobs.path().join(format!("{good_id}-1")).exists());

    // The tampered item: dead at its first attempt, its handler never ran.
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "the handler ran only for the good item"
    );
    let dead = s.store.get(bad_id).await.expect("get").expect("item");
    assert_eq!((dead.state, dead.attempt), (ItemState::Dead, 1));
    let error = dead.last_error.unwrap_or_default();
    assert!(error.contains("failed its SHA-256 check"), "{error}");
    assert!(!error.contains('/'), "no path leaves the worker: {error}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_leave_the_worker_sanitized_and_unknown_parameters_are_permanent() {
    let s = Server::start(Duration::from_secs(30)).await;
    let leaky = s
        .store
        .enqueue(NewItem::new("LEAKY", json!({"email": "ada@example.com"})).max_attempts(1))
        .await
        .expect("enqueue");
    let panics = s
        .store
        .enqueue(NewItem::new("LEAKY", json!({"panic": true})).max_attempts(1))
        .await
        .expect("enqueue");
    let unknown = s
        .store
        .enqueue(NewItem::new("STRICT", json!({"n": 1, "cmd": "rm -rf /"})).max_attempts(5))
        .await
        .expect("enqueue");
    let jobs = tempfile::tempdir().expect("tempdir");
    let (_, strict, _) = work(&s, jobs.path(), &[leaky, panics, unknown]).await;

    let error = |id| {
        let s = &s;
        async move {
            s.store
                .get(id)
                .await
                .expect("get")
                .and_then(|i| i.last_error)
                .unwrap_or_default()
        }
    };
    assert_eq!(
        error(leaky).await,
        "transient: provider refused scf_ses_[redacted] for [payload] at [path]"
    );
    assert_eq!(
        error(panics).await,
        "transient: the handler panicked: boom reading [path]"
    );
    // Refused before the handler, never retried, and the parameter's value is not echoed.
    let rec = s.store.get(unknown).await.expect("get").expect("item");
    assert_eq!((rec.state, rec.attempt), (ItemState::Dead, 1));
    assert_eq!(strict.load(Ordering::SeqCst), 0);
    let e = rec.last_error.unwrap_or_default();
    assert!(e.contains("unknown field") && !e.contains("rm -rf"), "{e}");
    s.stop().await;
}
