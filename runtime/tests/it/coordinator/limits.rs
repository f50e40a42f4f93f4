//! Limits: each a typed 413 or 429, with `Retry-After` where waiting helps.

use std::time::Duration;

use scaffold_runtime::coordinator::tokens;
use serde_json::json;

use super::common::{Server, code};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_sessions_signed_for_the_public_origin() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let server_key = KeyPair::generate().expect("key");
    let server = CertificateParams::new(vec!["localhost".to_owned()])
        .expect("params")
        .signed_by(&server_key, &ca, &ca_key)
        .expect("server cert");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, server.pem()).expect("write");
    std::fs::write(&key, server_key.serialize_pem()).expect("write");
    // The port is known once bound; the public URL names it as workers reach it.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
    let port = probe.local_addr().expect("addr").port();
    drop(probe);
    let store = scaffold_runtime::Store::open("memory://")
        .await
        .expect("open");
    let public_url = format!("https://localhost:{port}");
    let s = super::common::Server::start(store, |c| {
        c.listen = format!("127.0.0.1:{port}").parse().expect("addr");
        c.transport = scaffold_runtime::coordinator::Transport::Tls {
            cert,
            key,
            public_url: public_url.clone(),
        };
    })
    .await;
    assert_eq!(s.origin, public_url);
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("CA"))
        .build()
        .expect("client");
    let health = client
        .get(format!("{public_url}/health"))
        .send()
        .await
        .expect("TLS answers");
    assert_eq!(health.status().as_u16(), 200);
    // A device enrolls and opens a session over TLS, its signature bound to the origin.
    let mut http = super::common::Http::new(&public_url);
    http.client = client.clone();
    let token = s.token("tls", "acme", None).await;
    let key = ed25519_dalek::SigningKey::generate(&mut rand_core::OsRng);
    let (status, body) = http
        .post(
            "/v1/enroll",
            json!({"token": token, "worker_name": "tls",
                "public_key": scaffold_runtime::coordinator::tokens::b64(key.verifying_key().as_bytes()),
                "protocol": {"min": 1, "max": 1}}),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let id = body["worker_id"].as_str().expect("id");
    let session = super::common::open_session(&http, &public_url, id, &key).await;
    assert!(session.starts_with("scf_ses_"));
    // Plain HTTP to the TLS port gets no answer a client could use.
    let plain = reqwest::get(format!("http://localhost:{port}/health")).await;
    assert!(!plain.is_ok_and(|r| r.status().is_success()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_collects_artifacts_no_item_names() {
    let s = Server::fresh_with(|c| c.retain = Some(std::time::Duration::ZERO)).await;
    let c = s.store.coordinator().expect("coordinator tables");
    let kept = s
        .store
        .put_artifact("acme", "in", b"kept".to_vec())
        .await
        .expect("put");
    let gone = s
        .store
        .put_artifact("acme", "x", b"gone".to_vec())
        .await
        .expect("put");
    s.store
        .enqueue(
            scaffold_runtime::NewItem::new("A", json!({}))
                .account("acme")
                .input(kept.clone()),
        )
        .await
        .expect("enqueue");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        c.get_artifact("acme".into(), gone.sha256)
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        c.get_artifact("acme".into(), kept.sha256)
            .await
            .expect("get")
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_probe_makes_the_handshake_and_pins_the_certificate() {
    use rcgen::{CertificateParams, KeyPair};
    use scaffold_runtime::coordinator::{Transport, probe_health};
    let dir = tempfile::tempdir().expect("tempdir");
    let cert_of = |name: &str| {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec!["localhost".to_owned()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let pem = dir.path().join(format!("{name}.pem"));
        let private = dir.path().join(format!("{name}.key"));
        std::fs::write(&pem, cert.pem()).expect("write");
        std::fs::write(&private, key.serialize_pem()).expect("write");
        (pem, private)
    };
    let (cert, key) = cert_of("ours");
    let (other, _) = cert_of("other");
    let store = scaffold_runtime::Store::open("memory://")
        .await
        .expect("open");
    let ours = Transport::Tls {
        cert: cert.clone(),
        key,
        public_url: "https://localhost:7443".to_owned(),
    };
    let s = Server::start(store, |c| c.transport = ours.clone()).await;
    let wait = Duration::from_secs(5);
    let pem = std::fs::read(&cert).expect("our certificate");
    probe_health(s.addr, Some(&pem), wait)
        .await
        .expect("healthy over TLS");
    // Asked for another certificate than the one it serves, or in plain HTTP: unhealthy.
    let theirs = std::fs::read(&other).expect("their certificate");
    let err = probe_health(s.addr, Some(&theirs), wait)
        .await
        .expect_err("another certificate");
    assert!(err.to_string().contains("is not healthy"), "{err}");
    probe_health(s.addr, None, wait)
        .await
        .expect_err("plain HTTP to a TLS port");
    // PEM text without a certificate is refused before anything is asked.
    let err = probe_health(s.addr, Some(b"no PEM here"), wait)
        .await
        .expect_err("no certificate");
    assert!(err.to_string().contains("no usable certificate"), "{err}");
    // A port whose connections the kernel accepts and nothing answers: unhealthy in time.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let err = probe_health(
        silent.local_addr().expect("addr"),
        Some(&pem),
        Duration::from_millis(300),
    )
    .await
    .expect_err("a silent port");
    assert!(err.to_string().contains("no answer within"), "{err}");
    let plain = Server::fresh().await;
    probe_health(plain.addr, None, wait)
        .await
        .expect("healthy over plain HTTP on loopback");
}
