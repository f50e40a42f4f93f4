//! WorkerJobs: claims by account and kind, every job call fenced and owner-checked,
//! idempotent finishes, effects, batches, artifacts, and the long-poll.

use std::time::{Duration, Instant};

use scaffold_runtime::coordinator::tokens;
use scaffold_runtime::{ItemState, NewItem, Store};
use serde_json::{Value, json};

use super::common::{Device, Server, code};

fn job(j: &Value) -> String {
    j["job"].as_str().expect("job").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_hands_out_only_the_workers_account_and_kinds() {
    let s = Server::fresh().await;
    let d = s.device("w1", "acme", Some(&["MINE"])).await;
    for (kind, account) in [("MINE", "other"), ("THEIRS", "acme"), ("MINE", "acme")] {
        s.store
            .enqueue(NewItem::new(kind, json!({"k": kind, "a": account})).account(account))
            .await
            .expect("enqueue");
    }
    let jobs = d.claim("default", 10).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["kind"], "MINE");
    assert_eq!(jobs[0]["payload"], json!({"k": "MINE", "a": "acme"}));
    assert!(
        jobs[0]["lease_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0 && ms <= 30_000)
    );
    assert_eq!(jobs[0]["attempt"], 1);
    assert!(
        d.claim("default", 10).await.is_empty(),
        "nothing else is the worker's"
    );
    // Too many at once is a typed 413; none is a 400.
    let (status, body) = d
        .post("/v1/jobs/claim", json!({"lane": "default", "max": 101}))
        .await;
    assert_eq!((status, code(&body)), (413, "claim_too_large"));
    let (status, _) = d
        .post("/v1/jobs/claim", json!({"lane": "default", "max": 0}))
        .await;
    assert_eq!(status, 400);
}

/// A held job, and a second device of the same account that does not hold it.
async fn held(s: &Server) -> (Device, Device, Value, i64) {
    let a = s.device("wa", "acme", None).await;
    let b = s.device("wb", "acme", None).await;
    let id = s
        .store
        .enqueue(NewItem::new("A", json!({})).account("acme").max_attempts(3))
        .await
        .expect("enqueue");
    let j = a.claim("default", 1).await.remove(0);
    (a, b, j, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_call_checks_fence_lease_and_holder() {
    let s = Server::fresh().await;
    let (a, b, j, id) = held(&s).await;
    let name = job(&j);
    let fence = j["fence"].as_i64().expect("fence");
    let stale = tokens_job(id, fence - 1);
    let calls: Vec<(String, Value)> = vec![
        ("heartbeat".into(), json!({"fence": fence})),
        (
            "checkpoint".into(),
            json!({"fence": fence, "state": {"s": 1}}),
        ),
        ("effects/send".into(), json!({"fence": fence, "output": 1})),
        ("complete".into(), json!({"fence": fence})),
        (
            "fail".into(),
            json!({"fence": fence, "class": "transient", "code": "x", "message": "y"}),
        ),
        ("park".into(), json!({"fence": fence, "signal": "s"})),
        ("release".into(), json!({"fence": fence})),
    ];
    for (call, body) in &calls {
        // The right fence from another worker's session.
        let (status, answer) = b
            .post(&format!("/v1/jobs/{name}/{call}"), body.clone())
            .await;
        assert_eq!(
            (status, code(&answer)),
            (409, "stale_lease"),
            "{call} by another worker"
        );
        // A stale fence from the holder: in the path, and in the body.
        let mut older = body.clone();
        older["fence"] = json!(fence - 1);
        let (status, answer) = a.post(&format!("/v1/jobs/{stale}/{call}"), older).await;
        assert_eq!(
            (status, code(&answer)),
            (409, "stale_lease"),
            "{call} with a stale fence"
        );
        let (status, answer) = a.post(&format!("/v1/jobs/{name}/{call}"), json!({"fence": fence + 1, "state": 1, "output": 1, "class": "transient", "code": "x", "message": "y"})).await;
        assert!(
            status == 409 || (status == 400 && code(&answer) == "unknown_field"),
            "{call} with another fence in the body: {status} {answer}"
        );
    }
    let (status, answer) = b
        .http
        .get(
            &format!("/v1/jobs/{name}/effects/send?fence={fence}"),
            Some(&b.session),
        )
        .await;
    assert_eq!((status, code(&answer)), (409, "stale_lease"));
    // Nothing the refused calls said landed.
    let item = s.store.get(id).await.expect("get").expect("item");
    assert_eq!(
        (item.state, item.checkpoint.clone()),
        (ItemState::Running, None)
    );
    assert!(s.store.effects(id).await.expect("effects").is_empty());
    // The holder's own calls work.
    let (status, lease) = a
        .post(
            &format!("/v1/jobs/{name}/heartbeat"),
            json!({"fence": fence}),
        )
        .await;
    assert_eq!(status, 200, "{lease}");
    assert!(lease["lease_ms"].as_u64().is_some_and(|ms| ms > 25_000));
    assert!(
        lease["lease_expires_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let (status, _) = a
        .post(
            &format!("/v1/jobs/{name}/checkpoint"),
            json!({"fence": fence, "state": {"step": 2}}),
        )
        .await;
    assert_eq!(status, 204);
    let (status, effect) = a
        .http
        .get(
            &format!("/v1/jobs/{name}/effects/send?fence={fence}"),
            Some(&a.session),
        )
        .await;
    assert_eq!(status, 200, "{effect}");
    let key = effect["run"]["idempotency_key"].as_str().expect("key");
    assert!(key.ends_with(&format!("-{id}-send")), "{key}");
    let (status, _) = a
        .post(
            &format!("/v1/jobs/{name}/effects/send"),
            json!({"fence": fence, "output": {"sent": true}}),
        )
        .await;
    assert_eq!(status, 204);
    let (status, effect) = a
        .http
        .get(
            &format!("/v1/jobs/{name}/effects/send?fence={fence}"),
            Some(&a.session),
        )
        .await;
    assert_eq!((status, &effect["recorded"]), (200, &json!({"sent": true})));
    let (status, _) = a
        .post(
            &format!("/v1/jobs/{name}/complete"),
            json!({"fence": fence}),
        )
        .await;
    assert_eq!(status, 204);
    let item = s.store.get(id).await.expect("get").expect("item");
    assert_eq!(item.state, ItemState::Completed);
    assert_eq!(item.checkpoint, Some(json!({"step": 2})));
}

fn tokens_job(item: i64, fence: i64) -> String {
    scaffold_runtime::coordinator::wire::job_name(item, fence)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_repeated_is_204_and_another_body_is_409() {
    let s = Server::fresh().await;
    let (a, _b, j, id) = held(&s).await;
    let name = job(&j);
    let fence = j["fence"].as_i64().expect("fence");
    let fail = json!({"fence": fence, "class": "transient", "code": "E_DOWN", "message": "the provider is down"});
    let t0 = s.store.now();
    assert_eq!(
        a.post(&format!("/v1/jobs/{name}/fail"), fail.clone())
            .await
            .0,
        204
    );
    assert_eq!(
        a.post(&format!("/v1/jobs/{name}/fail"), fail.clone())
            .await
            .0,
        204,
        "the same body again"
    );
    let mut other = fail.clone();
    other["message"] = json!("something else");
    let (status, body) = a.post(&format!("/v1/jobs/{name}/fail"), other).await;
    assert_eq!((status, code(&body)), (409, "stale_lease"));
    let (status, body) = a
        .post(
            &format!("/v1/jobs/{name}/complete"),
            json!({"fence": fence}),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "stale_lease"));
    // The retry time is the coordinator's backoff (attempt 1: 0.5 s to 1 s), not the worker's.
    let item = s.store.get(id).await.expect("get").expect("item");
    assert_eq!(item.state, ItemState::Failed);
    assert_eq!(
        item.last_error.as_deref(),
        Some("E_DOWN: the provider is down")
    );
    let wait = item.run_at.millis_since(t0);
    assert!((400..=1_500).contains(&wait), "retry in {wait} ms");
    // Completed, then again with the same outputs (204) and with other ones (409).
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let j = a.claim("default", 1).await.remove(0);
    let (name, fence) = (job(&j), j["fence"].as_i64().expect("fence"));
    let bytes = b"the report".to_vec();
    let digest = tokens::sha256_hex(&bytes);
    put(&a, &digest, bytes).await;
    let done = json!({"fence": fence, "outputs": [{"name": "report", "sha256": digest}]});
    assert_eq!(
        a.post(&format!("/v1/jobs/{name}/complete"), done.clone())
            .await
            .0,
        204
    );
    assert_eq!(
        a.post(&format!("/v1/jobs/{name}/complete"), done).await.0,
        204
    );
    let (status, body) = a
        .post(
            &format!("/v1/jobs/{name}/complete"),
            json!({"fence": fence}),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "stale_lease"));
    let arts = s
        .store
        .coordinator()
        .expect("c")
        .item_artifacts(id)
        .await
        .expect("artifacts");
    assert_eq!(arts.len(), 1);
    assert_eq!(arts[0].artifact.sha256, digest);
}

async fn put(d: &Device, digest: &str, bytes: Vec<u8>) -> (u16, Value) {
    d.http
        .send(
            d.http
                .client
                .put(format!("{}/v1/artifacts/{digest}", d.http.base))
                .body(bytes),
            Some(&d.session),
        )
        .await
}

/// On SQLite and PostgreSQL (whose claim reads inputs only for items flagged with some).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_are_checked_by_their_digest_and_kept_per_account() {
    artifacts_kept(Server::fresh().await).await;
    #[cfg(feature = "postgres")]
    if crate::pg_common::database_named() {
        let (url, _guard) = crate::pg_common::fresh_url("");
        let pg = Store::open(&url).await.expect("open");
        pg.migrate().await.expect("migrate");
        artifacts_kept(Server::start(pg, |_| {}).await).await;
    }
}

async fn artifacts_kept(s: Server) {
    let a = s.device("wa", "acme", None).await;
    let other = s.device("wo", "globex", None).await;
    let bytes = b"input bytes".to_vec();
    let digest = tokens::sha256_hex(&bytes);
    // Bytes that do not hash to the name.
    let (status, body) = put(&a, &digest, b"other bytes".to_vec()).await;
    assert_eq!((status, code(&body)), (422, "digest_mismatch"));
    let (status, _) = put(&a, &"0".repeat(63), bytes.clone()).await;
    assert_eq!(status, 400);
    let (status, stored) = put(&a, &digest, bytes.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(stored, json!({"sha256": digest, "size": bytes.len()}));
    let r = a
        .http
        .client
        .get(format!("{}/v1/artifacts/{digest}", a.http.base))
        .header("Scaffold-Protocol", "1")
        .bearer_auth(&a.session)
        .send()
        .await
        .expect("get");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.bytes().await.expect("bytes").to_vec(), bytes);
    // Another account does not read it.
    let (status, _) = other
        .http
        .get(&format!("/v1/artifacts/{digest}"), Some(&other.session))
        .await;
    assert_eq!(status, 404);
    // Inputs attached at enqueue come with the job; a missing one refuses the enqueue.
    let input = s
        .store
        .put_artifact("acme", "in.txt", bytes.clone())
        .await
        .expect("put");
    assert_eq!(input.sha256, digest);
    let missing = scaffold_runtime::ArtifactRef {
        name: "x".into(),
        sha256: "ab".repeat(32),
        size: 1,
    };
    assert!(matches!(
        s.store
            .enqueue(NewItem::new("A", json!({})).account("acme").input(missing))
            .await,
        Err(scaffold_runtime::StoreError::ArtifactMissing { .. })
    ));
    let id = s
        .store
        .enqueue(
            NewItem::new("A", json!({}))
                .account("acme")
                .input(input.clone()),
        )
        .await
        .expect("enqueue");
    // One claim of an item with inputs and one without: each has its own.
    let bare = s
        .store
        .enqueue(NewItem::new("A", json!({"bare": true})).account("acme"))
        .await
        .expect("enqueue");
    let mut claimed = a.claim("default", 2).await;
    // The bare one (payload `{"bare": true}`) last.
    claimed.sort_by_key(|j| j["payload"]["bare"].as_bool());
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    let j = claimed.remove(0);
    assert_eq!(
        j["inputs"],
        json!([{"name": "in.txt", "sha256": digest, "size": bytes.len()}])
    );
    assert_eq!(claimed[0]["payload"], json!({"bare": true}));
    assert_eq!(claimed[0]["inputs"], json!([]), "{claimed:?}");
    assert_ne!(bare, id);
    // An output never uploaded refuses the completion, which can be made once it is.
    let out = tokens::sha256_hex(b"out");
    let body = json!({"fence": j["fence"], "outputs": [{"name": "o", "sha256": out}]});
    let (status, answer) = a
        .post(&format!("/v1/jobs/{}/complete", job(&j)), body.clone())
        .await;
    assert_eq!((status, code(&answer)), (409, "artifact_missing"));
    assert_eq!(
        s.store.get(id).await.expect("get").expect("item").state,
        ItemState::Running
    );
    assert_eq!(put(&a, &out, b"out".to_vec()).await.0, 200);
    assert_eq!(
        a.post(&format!("/v1/jobs/{}/complete", job(&j)), body)
            .await
            .0,
        204
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_answer_each_job_and_park_and_release_end_the_attempt() {
    let s = Server::fresh().await;
    let a = s.device("wa", "acme", None).await;
    for n in 0..4 {
        s.store
            .enqueue(NewItem::new("A", json!({"n": n})).account("acme"))
            .await
            .expect("enqueue");
    }
    let jobs = a.claim("default", 4).await;
    assert_eq!(jobs.len(), 4);
    let (status, body) = a
        .post(
            "/v1/jobs/heartbeat",
            json!({"jobs": [
                {"job": job(&jobs[0]), "fence": jobs[0]["fence"]},
                {"job": job(&jobs[1]), "fence": 99},
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["status"], 200);
    assert!(body["results"][0]["lease"]["lease_ms"].as_u64().is_some());
    assert_eq!(body["results"][1]["status"], 409);
    assert_eq!(body["results"][1]["error"]["error"], "stale_lease");
    let (status, body) = a
        .post(
            "/v1/jobs/complete",
            json!({"jobs": [
                {"job": job(&jobs[0]), "fence": jobs[0]["fence"]},
                {"job": job(&jobs[1]), "fence": jobs[1]["fence"]},
                {"job": "junk", "fence": 1},
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let statuses: Vec<u64> = body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["status"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(statuses, [204, 204, 404]);
    let until =
        scaffold_runtime::coordinator::wire::rfc3339(s.store.now().plus(Duration::from_secs(60)));
    assert_eq!(
        a.post(
            &format!("/v1/jobs/{}/park", job(&jobs[2])),
            json!({"fence": jobs[2]["fence"], "until": until})
        )
        .await
        .0,
        204
    );
    assert_eq!(
        a.post(
            &format!("/v1/jobs/{}/release", job(&jobs[3])),
            json!({"fence": jobs[3]["fence"]})
        )
        .await
        .0,
        204
    );
    assert_eq!(
        a.post(
            &format!("/v1/jobs/{}/release", job(&jobs[3])),
            json!({"fence": jobs[3]["fence"]})
        )
        .await
        .0,
        204,
        "again"
    );
    let states: Vec<ItemState> = s
        .store
        .list(Default::default())
        .await
        .expect("list")
        .iter()
        .map(|i| i.state)
        .collect();
    assert_eq!(
        states,
        [
            ItemState::Completed,
            ItemState::Completed,
            ItemState::Parked,
            ItemState::Available
        ]
    );
    let outcomes: Vec<String> = s
        .store
        .attempts(
            jobs[3]["job"]
                .as_str()
                .and_then(|j| j.split('.').next())
                .and_then(|i| i.parse().ok())
                .expect("id"),
        )
        .await
        .expect("attempts")
        .into_iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(outcomes, ["released"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_are_named_and_the_connection_kept() {
    let s = Server::fresh().await;
    let a = s.device("wa", "acme", None).await;
    let (status, body) = a
        .post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 1, "priority": 9}),
        )
        .await;
    assert_eq!((status, code(&body)), (400, "unknown_field"));
    assert_eq!(body["field"], "priority");
    let (status, body) = a.post("/v1/jobs/claim", json!({"lane": "default"})).await;
    assert_eq!((status, code(&body)), (400, "invalid_body"));
    // The same client (its pooled connection) goes on.
    assert!(a.claim("default", 1).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_wakes_on_work_and_is_answered_at_shutdown() {
    let s = Server::fresh().await;
    let a = s.device("wa", "acme", None).await;
    let store = s.store.clone();
    let t0 = Instant::now();
    let enqueue = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        store
            .enqueue(NewItem::new("A", json!({})).account("acme"))
            .await
            .expect("enqueue");
    });
    let (status, body) = a
        .post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 5, "wait_ms": 10_000}),
        )
        .await;
    enqueue.await.expect("enqueue task");
    assert_eq!(status, 200);
    assert_eq!(body["jobs"].as_array().map(Vec::len), Some(1));
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "woke after {:?}",
        t0.elapsed()
    );
    // A second long-poll is answered (empty) when the coordinator shuts down.
    let poll = {
        let a_http = a.http.clone();
        let session = a.session.clone();
        tokio::spawn(async move {
            a_http
                .post(
                    "/v1/jobs/claim",
                    json!({"lane": "default", "max": 5, "wait_ms": 30_000}),
                    Some(&session),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t1 = Instant::now();
    s.stop().await.expect("stop");
    let (status, body) = poll.await.expect("poll");
    assert_eq!(
        (status, body["jobs"].as_array().map(Vec::len)),
        (200, Some(0))
    );
    assert!(
        t1.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t1.elapsed()
    );
}

/// A claim trusts what the coordinator knows of a session only as far as the store's own
/// check in the claim: a worker revoked after its session was looked up takes nothing, is
/// answered `401 revoked` on its next claim, and its items stay available. On every store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_worker_claims_nothing_though_its_session_was_known() {
    // Presence is written at most once a sweep interval: a short one, so the revoked
    // worker's call below would write it again if it could.
    let tune = |c: &mut scaffold_runtime::coordinator::Config| {
        c.sweep_interval = Duration::from_millis(1);
    };
    revoked_claims_nothing(Server::fresh_with(tune).await).await;
    let memory = Store::open("memory://").await.expect("memory");
    memory.migrate().await.expect("migrate");
    revoked_claims_nothing(Server::start(memory, tune).await).await;
    #[cfg(feature = "postgres")]
    if crate::pg_common::database_named() {
        let (url, _guard) = crate::pg_common::fresh_url("");
        let pg = Store::open(&url).await.expect("open");
        pg.migrate().await.expect("migrate");
        revoked_claims_nothing(Server::start(pg, tune).await).await;
    }
}

async fn revoked_claims_nothing(s: Server) {
    let d = s.device("w1", "default", None).await;
    s.store
        .enqueue(NewItem::new("K", json!({"n": 1})))
        .await
        .expect("enqueue");
    assert_eq!(
        d.claim("default", 1).await.len(),
        1,
        "the session is known now"
    );
    let second = s
        .store
        .enqueue(NewItem::new("K", json!({"n": 2})))
        .await
        .expect("enqueue");
    scaffold_runtime::coordinator::revoke(&s.store, "w1")
        .await
        .expect("revoke");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (status, body) = d
        .post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 10, "wait_ms": 0}),
        )
        .await;
    assert_eq!((status, code(&body)), (401, "revoked"), "{body}");
    let item = s.store.get(second).await.expect("get").expect("item");
    assert_eq!(item.state, ItemState::Available, "nothing was claimed");
    // Nor was the revoked worker marked present again by that call.
    let workers = s.store.workers().await.expect("workers");
    assert!(
        !workers
            .iter()
            .any(|w| w.id == d.id && w.state == scaffold_runtime::WorkerState::Online),
        "{workers:?}"
    );
}
