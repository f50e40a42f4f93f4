//! Enrollment, sessions, versions and revocation.

use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use scaffold_runtime::coordinator::{EnrollOptions, enroll, revoke, tokens};
use serde_json::{Value, json};

use super::common::{Server, code, logs, open_session};

fn enroll_body(token: &str, name: &str, key: &SigningKey) -> Value {
    json!({
        "token": token,
        "worker_name": name,
        "public_key": tokens::b64(key.verifying_key().as_bytes()),
        "protocol": {"min": 1, "max": 1},
    })
}

fn key() -> SigningKey {
    SigningKey::generate(&mut rand_core::OsRng)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_spent_once_and_dies_expired_or_revoked() {
    let s = Server::fresh_with(|c| c.limits.per_address_per_minute = 1_000).await;
    let http = s.http();
    let token = s.token("w1", "acme", None).await;
    assert!(
        token.starts_with("scf_enr_") && token.len() >= 8 + 43,
        "{token}"
    );
    let (status, body) = http
        .post("/v1/enroll", enroll_body(&token, "w1", &key()), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["account"].as_str(), body["protocol"].as_i64()),
        (Some("acme"), Some(1))
    );
    // Replayed, even with another key.
    let (status, body) = http
        .post("/v1/enroll", enroll_body(&token, "w1", &key()), None)
        .await;
    assert_eq!((status, code(&body)), (401, "token_spent"));
    // Expired.
    let short = enroll(
        &s.store,
        &EnrollOptions {
            worker: "w2".into(),
            account: "acme".into(),
            kinds: None,
            ttl: Duration::from_millis(1),
        },
    )
    .await
    .expect("enroll");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, body) = http
        .post("/v1/enroll", enroll_body(&short.token, "w2", &key()), None)
        .await;
    assert_eq!((status, code(&body)), (401, "token_expired"));
    // Revoked before it was used.
    let doomed = s.token("w3", "acme", None).await;
    revoke(&s.store, "w3").await.expect("revoke");
    let (status, body) = http
        .post("/v1/enroll", enroll_body(&doomed, "w3", &key()), None)
        .await;
    assert_eq!((status, code(&body)), (401, "token_revoked"));
    // Never issued, and one for another name (spent all the same).
    let (status, body) = http
        .post(
            "/v1/enroll",
            enroll_body("scf_enr_AAAA", "w4", &key()),
            None,
        )
        .await;
    assert_eq!((status, code(&body)), (401, "token_unknown"));
    let other = s.token("w5", "acme", None).await;
    let (status, body) = http
        .post("/v1/enroll", enroll_body(&other, "w6", &key()), None)
        .await;
    assert_eq!((status, code(&body)), (401, "worker_name_mismatch"));
    let (status, body) = http
        .post("/v1/enroll", enroll_body(&other, "w5", &key()), None)
        .await;
    assert_eq!((status, code(&body)), (401, "token_spent"));
    // A key that is not an Ed25519 point.
    let fresh = s.token("w7", "acme", None).await;
    let mut bad = enroll_body(&fresh, "w7", &key());
    bad["public_key"] = json!(tokens::b64(&[0u8; 31]));
    let (status, body) = http.post("/v1/enroll", bad, None).await;
    assert_eq!((status, code(&body)), (400, "bad_public_key"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_needs_the_enrolled_key_and_a_fresh_nonce() {
    let s = Server::fresh().await;
    let d = s.device("w1", "acme", None).await;
    let http = s.http();
    // Signed by another key.
    let (_, c) = http
        .post("/v1/session/challenge", json!({"worker_id": d.id}), None)
        .await;
    let nonce = c["nonce"].as_str().expect("nonce").to_owned();
    let raw = tokens::unb64(&nonce).expect("nonce bytes");
    let forged = key().sign(&tokens::session_message(&d.id, &raw, &s.origin));
    let (status, body) = http
        .post(
            "/v1/session",
            json!({"worker_id": d.id, "nonce": nonce, "signature": tokens::b64(&forged.to_bytes())}),
            None,
        )
        .await;
    assert_eq!((status, code(&body)), (401, "bad_signature"));
    // The nonce was spent by that try: the right signature over it is refused too.
    let right = d.key.sign(&tokens::session_message(&d.id, &raw, &s.origin));
    let replay =
        json!({"worker_id": d.id, "nonce": nonce, "signature": tokens::b64(&right.to_bytes())});
    let (status, body) = http.post("/v1/session", replay.clone(), None).await;
    assert_eq!((status, code(&body)), (401, "nonce_invalid"));
    // A fresh nonce with the right signature opens a session; replaying it does not.
    let token = open_session(&http, &s.origin, &d.id, &d.key).await;
    assert!(token.starts_with("scf_ses_"));
    let (_, c) = http
        .post("/v1/session/challenge", json!({"worker_id": d.id}), None)
        .await;
    let nonce = c["nonce"].as_str().expect("nonce").to_owned();
    let raw = tokens::unb64(&nonce).expect("nonce bytes");
    let sig = tokens::b64(
        &d.key
            .sign(&tokens::session_message(&d.id, &raw, &s.origin))
            .to_bytes(),
    );
    let body = json!({"worker_id": d.id, "nonce": nonce, "signature": sig});
    assert_eq!(http.post("/v1/session", body.clone(), None).await.0, 200);
    let (status, answer) = http.post("/v1/session", body, None).await;
    assert_eq!((status, code(&answer)), (401, "nonce_invalid"));
    // Signed for another origin (the Host header is never what is signed).
    let (_, c) = http
        .post("/v1/session/challenge", json!({"worker_id": d.id}), None)
        .await;
    let nonce = c["nonce"].as_str().expect("nonce").to_owned();
    let raw = tokens::unb64(&nonce).expect("nonce bytes");
    let sig = d.key.sign(&tokens::session_message(
        &d.id,
        &raw,
        "https://evil.example",
    ));
    let (status, answer) = http
        .post(
            "/v1/session",
            json!({"worker_id": d.id, "nonce": nonce, "signature": tokens::b64(&sig.to_bytes())}),
            None,
        )
        .await;
    assert_eq!((status, code(&answer)), (401, "bad_signature"));
    // A session token that was never issued.
    let (status, answer) = d
        .http
        .post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 1}),
            Some("scf_ses_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        )
        .await;
    assert_eq!((status, code(&answer)), (401, "unauthenticated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2_is_told_to_upgrade_before_anything_is_claimed() {
    let s = Server::fresh().await;
    let d = s.device("w1", "acme", None).await;
    s.store
        .enqueue(scaffold_runtime::NewItem::new("A", json!({})).account("acme"))
        .await
        .expect("enqueue");
    let v2 = s.http().speaking(2);
    // Enroll.
    let token = s.token("w2", "acme", None).await;
    let (status, body) = v2
        .post("/v1/enroll", enroll_body(&token, "w2", &key()), None)
        .await;
    assert_eq!((status, code(&body)), (426, "upgrade_required"));
    assert_eq!(body["supported"], json!({"min": 1, "max": 1}));
    // A range with nothing in common, on a protocol-1 request.
    let mut body = enroll_body(&token, "w2", &key());
    body["protocol"] = json!({"min": 2, "max": 3});
    let (status, answer) = s.http().post("/v1/enroll", body, None).await;
    assert_eq!((status, code(&answer)), (426, "upgrade_required"));
    // Claim: refused before the claim, so the item is still available.
    let (status, body) = v2
        .post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 1}),
            Some(&d.session),
        )
        .await;
    assert_eq!((status, code(&body)), (426, "upgrade_required"));
    let items = s.store.list(Default::default()).await.expect("list");
    assert_eq!(items[0].state, scaffold_runtime::ItemState::Available);
    let row = s.store.workers().await.expect("workers");
    assert!(
        row.iter()
            .any(|w| w.id == d.id && w.state == scaffold_runtime::WorkerState::UpgradeRequired),
        "{row:?}"
    );
    // Session.
    let (_, c) = v2
        .post("/v1/session/challenge", json!({"worker_id": d.id}), None)
        .await;
    let nonce = c["nonce"].as_str().expect("nonce").to_owned();
    let raw = tokens::unb64(&nonce).expect("nonce bytes");
    let sig = d.key.sign(&tokens::session_message(&d.id, &raw, &s.origin));
    let (status, body) = v2
        .post(
            "/v1/session",
            json!({"worker_id": d.id, "nonce": nonce, "signature": tokens::b64(&sig.to_bytes())}),
            None,
        )
        .await;
    assert_eq!((status, code(&body)), (426, "upgrade_required"));
    // No header at all.
    let r = reqwest::Client::new()
        .post(format!("http://{}/v1/jobs/claim", s.addr))
        .bearer_auth(&d.session)
        .json(&json!({"lane": "default", "max": 1}))
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status().as_u16(), 400);
    let body: Value = r.json().await.expect("json");
    assert_eq!(code(&body), "protocol_missing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_worker_is_told_so_and_its_lease_runs_out() {
    let s = Server::fresh_with(|c| c.lease = Duration::from_millis(600)).await;
    let d = s.device("w1", "acme", None).await;
    let id = s
        .store
        .enqueue(scaffold_runtime::NewItem::new("A", json!({})).account("acme"))
        .await
        .expect("enqueue");
    let job = d.claim("default", 1).await.remove(0);
    assert_eq!(
        revoke(&s.store, &d.id).await.expect("revoke"),
        vec![d.id.clone()]
    );
    let (status, body) = d
        .post(
            &format!("/v1/jobs/{}/heartbeat", job["job"].as_str().expect("job")),
            json!({"fence": job["fence"]}),
        )
        .await;
    assert_eq!((status, code(&body)), (401, "revoked"));
    let (status, body) = d
        .post("/v1/jobs/claim", json!({"lane": "default", "max": 1}))
        .await;
    assert_eq!((status, code(&body)), (401, "revoked"));
    let (status, body) = s
        .http()
        .post("/v1/session/challenge", json!({"worker_id": d.id}), None)
        .await;
    assert_eq!((status, code(&body)), (401, "revoked"));
    // Its lease runs out and the coordinator's sweeper hands the item back.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let item = s.store.get(id).await.expect("get").expect("item");
    assert_eq!(
        item.state,
        scaffold_runtime::ItemState::Available,
        "{item:?}"
    );
    assert!(
        !s.store
            .workers()
            .await
            .expect("workers")
            .iter()
            .any(|w| w.id == d.id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_key_or_signature_reaches_the_logs() {
    let s = Server::fresh_with(|c| c.limits.per_address_per_minute = 1_000).await;
    let mut secrets: Vec<String> = Vec::new();
    for n in 0..3 {
        let d = s.device(&format!("w{n}"), "acme", None).await;
        secrets.push(d.session.clone());
        secrets.push(tokens::b64(&d.key.to_bytes()));
        let (_, c) = s
            .http()
            .post("/v1/session/challenge", json!({"worker_id": d.id}), None)
            .await;
        let nonce = c["nonce"].as_str().expect("nonce").to_owned();
        let raw = tokens::unb64(&nonce).expect("nonce bytes");
        let sig = tokens::b64(
            &d.key
                .sign(&tokens::session_message(&d.id, &raw, &s.origin))
                .to_bytes(),
        );
        secrets.push(sig.clone());
        let (status, body) = s
            .http()
            .post(
                "/v1/session",
                json!({"worker_id": d.id, "nonce": nonce, "signature": sig}),
                None,
            )
            .await;
        assert_eq!(status, 200);
        secrets.push(body["token"].as_str().expect("token").to_owned());
        // Refused calls too: a spent token, a bad bearer.
        let spent = s.token(&format!("x{n}"), "acme", None).await;
        secrets.push(spent.clone());
        let body = json!({"token": spent, "worker_name": format!("x{n}"),
            "public_key": tokens::b64(key().verifying_key().as_bytes()), "protocol": {"min": 1, "max": 1}});
        assert_eq!(s.http().post("/v1/enroll", body.clone(), None).await.0, 200);
        assert_eq!(s.http().post("/v1/enroll", body, None).await.0, 401);
        let _ = d.post("/v1/jobs/1.1/heartbeat", json!({"fence": 1})).await;
    }
    s.stop().await.expect("stop");
    let logs = String::from_utf8_lossy(&logs().lock().expect("logs")).into_owned();
    assert!(
        logs.contains("a remote worker enrolled"),
        "the run logged nothing:\n{logs}"
    );
    for secret in &secrets {
        assert!(!logs.contains(secret.as_str()), "a secret reached the logs");
        // Nor its unprefixed body.
        let bare = secret
            .trim_start_matches("scf_enr_")
            .trim_start_matches("scf_ses_");
        assert!(!logs.contains(bare), "a secret's body reached the logs");
    }
}
