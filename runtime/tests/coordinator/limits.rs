//! Limits: each a typed 413 or 429, with `Retry-After` where waiting helps.

use std::time::Duration;

use scaffold_runtime::coordinator::tokens;
use serde_json::json;

use crate::common::{Server, code};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_and_artifacts_are_413() {
    let s = Server::fresh_with(|c| c.limits.artifact = 1024).await;
    let a = s.device("wa", "acme", None).await;
    let big = "x".repeat((1 << 20) + 10);
    let (status, body) = a
        .post("/v1/jobs/claim", json!({"lane": big, "max": 1}))
        .await;
    assert_eq!((status, code(&body)), (413, "body_too_large"));
    let bytes = vec![7u8; 2048];
    let digest = tokens::sha256_hex(&bytes);
    let (status, body) = a
        .http
        .send(
            a.http
                .client
                .put(format!("{}/v1/artifacts/{digest}", a.http.base))
                .body(bytes),
            Some(&a.session),
        )
        .await;
    assert_eq!((status, code(&body)), (413, "artifact_too_large"));
    assert_eq!(body["limit"], 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrollment_and_challenges_are_rate_limited_per_address() {
    let s = Server::fresh_with(|c| c.limits.per_address_per_minute = 3).await;
    let http = s.http();
    let mut last = (0, json!(null));
    for _ in 0..4 {
        last = http
            .post(
                "/v1/session/challenge",
                json!({"worker_id": "nobody"}),
                None,
            )
            .await;
    }
    assert_eq!((last.0, code(&last.1)), (429, "rate_limited"));
    let r = http
        .client
        .post(format!("{}/v1/enroll", http.base))
        .header("Scaffold-Protocol", "1")
        .json(&json!({}))
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 429);
    let retry: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=60).contains(&retry), "{retry}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_open_claim_per_lane_and_session() {
    let s = Server::fresh().await;
    let a = s.device("wa", "acme", None).await;
    let (http, session) = (a.http.clone(), a.session.clone());
    let first = tokio::spawn(async move {
        http.post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 1, "wait_ms": 1500}),
            Some(&session),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, body) = a
        .post("/v1/jobs/claim", json!({"lane": "default", "max": 1}))
        .await;
    assert_eq!((status, code(&body)), (429, "claim_open"));
    // Another lane is another claim.
    assert!(a.claim("bulk", 1).await.is_empty());
    assert_eq!(first.await.expect("first").0, 200);
    assert!(
        a.claim("default", 1).await.is_empty(),
        "the gate closed with the claim"
    );
    // Refusals are counted by reason.
    let metrics = reqwest::get(format!("http://{}/metrics", s.addr))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("scaffold_coordinator_refusals_total{reason=\"claim_open\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("scaffold_coordinator_sessions_open 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_off_loopback_is_refused() {
    let store = scaffold_runtime::Store::open("memory://")
        .await
        .expect("open");
    let config = scaffold_runtime::coordinator::Config::new(
        "0.0.0.0:0".parse().expect("addr"),
        scaffold_runtime::coordinator::Transport::InsecureLoopback,
    );
    let err = scaffold_runtime::coordinator::Coordinator::new(store, config).expect_err("refused");
    assert!(err.to_string().contains("loopback"), "{err}");
}
