//! A handler's job files on every backend: an input verified before it is read, an output
//! stored and recorded with the attempt that completed the item, a tampered input a
//! permanent failure with its reason, an input the item does not have permanent too.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use super::super::{TestBackend, fresh, get, ok};
use super::REGISTRY;
use crate::artifacts::sha256_hex;
use crate::context::WorkContext;
use crate::error::WorkError;
use crate::handler::WorkHandler;
use crate::item::{ArtifactRef, Item, ItemState, NewItem};
use crate::store::coordinator::ArtifactRole;
use crate::work_loop::WorkLoop;

/// Upper-cases input `in.txt` into output `out.txt`; asks for an input it lacks first.
struct FilesHandler;

impl WorkHandler for FilesHandler {
    type Payload = Value;
    const KIND: &'static str = "JOB";
    const REQUIRES: &'static [&'static str] = &["jobs.run"];
    async fn handle(&self, ctx: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        match ctx.input("absent.txt").await {
            Err(WorkError::Permanent(why)) => assert!(why.contains("absent.txt"), "{why}"),
            other => panic!("an input the item lacks: {other:?}"),
        }
        let path = ctx.input("in.txt").await?;
        let bytes = std::fs::read(&path).map_err(|e| WorkError::Transient(e.to_string()))?;
        ctx.output("out.txt", bytes.to_ascii_uppercase()).await?;
        Ok(())
    }
}

/// Stores `bytes` under `sha256` for the default account, as a producer's put does (the
/// digest unchecked here, so a test can store bytes that do not match their name).
async fn store_as(b: &TestBackend, sha256: &str, bytes: &[u8]) {
    ok(
        ok(b.store.coordinator(), "the coordinator's tables")
            .put_artifact(
                crate::item::DEFAULT_ACCOUNT.to_owned(),
                sha256.to_owned(),
                bytes.to_vec(),
                b.store.now(),
            )
            .await,
        "put an artifact",
    );
}

pub async fn loop_handler_files<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let good = sha256_hex(b"abc");
    store_as(&b, &good, b"abc").await;
    let good_id = b
        .enqueue(NewItem::new("JOB", json!({"n": 1})).input(ArtifactRef {
            name: "in.txt".to_owned(),
            sha256: good,
            size: 3,
        }))
        .await;
    let named = sha256_hex(b"xyz");
    store_as(&b, &named, b"zzz").await;
    let bad_id = b
        .enqueue(
            NewItem::new("JOB", json!({"n": 2}))
                .max_attempts(5)
                .input(ArtifactRef {
                    name: "in.txt".to_owned(),
                    sha256: named,
                    size: 3,
                }),
        )
        .await;
    let lp = ok(
        WorkLoop::builder(b.worker().clone(), REGISTRY)
            .handler(FilesHandler)
            .handler(super::FlakyHandler)
            .lane("default")
            .poll_interval(Duration::from_millis(5))
            .build(),
        "build",
    );
    let store = b.store.clone();
    let settled = async move {
        loop {
            let (a, b) = (get(&store, good_id).await, get(&store, bad_id).await);
            if a.state == ItemState::Completed && b.state == ItemState::Dead {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    ok(
        tokio::time::timeout(Duration::from_secs(30), lp.run(settled))
            .await
            .expect("both items settle"),
        "run",
    );
    let done = get(&b.store, good_id).await;
    let outputs: Vec<(String, String, i64)> = ok(
        ok(b.store.coordinator(), "the coordinator's tables")
            .item_artifacts(good_id)
            .await,
        "artifacts",
    )
    .into_iter()
    .filter(|a| a.role == ArtifactRole::Output)
    .map(|a| (a.artifact.name, a.artifact.sha256, a.fence))
    .collect();
    assert_eq!(
        outputs,
        vec![("out.txt".to_owned(), sha256_hex(b"ABC"), done.fence)],
        "the output, recorded with the attempt that completed the item"
    );
    let dead = get(&b.store, bad_id).await;
    assert_eq!(dead.attempt, 1, "a tampered input is not retried");
    let why = dead.last_error.unwrap_or_default();
    assert!(why.contains("failed its SHA-256 check"), "{why}");
}
