//! 10,000 random malformed requests against a live coordinator: never a 5xx, never a dropped
//! connection or a panic, and the queue unchanged.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as PropConfig, RngAlgorithm, TestRng, TestRunner};
use scaffold_runtime::NewItem;
use serde_json::{Value, json};

use super::common::Server;

/// One request the fuzzer makes.
#[derive(Debug, Clone)]
struct Req {
    method: &'static str,
    path: String,
    protocol: Option<String>,
    auth: Auth,
    body: Vec<u8>,
}

#[derive(Debug, Clone)]
enum Auth {
    None,
    /// A live session of a worker that holds nothing.
    Session,
    Raw(String),
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9._~-]{0,24}",
        "[0-9]{1,20}\\.[0-9]{1,20}",
        "%[0-9A-F]{2}[a-z]{0,3}",
        Just(String::new()),
        Just("..".to_owned()),
    ]
}

fn path(held: String) -> impl Strategy<Value = String> {
    let op = prop_oneof![
        Just("heartbeat"),
        Just("checkpoint"),
        Just("complete"),
        Just("fail"),
        Just("park"),
        Just("release"),
        Just("effects/k"),
        Just("nope"),
    ];
    prop_oneof![
        prop_oneof![
            Just("/health"),
            Just("/metrics"),
            Just("/v1/enroll"),
            Just("/v1/session/challenge"),
            Just("/v1/session"),
            Just("/v1/jobs/claim"),
            Just("/v1/jobs/complete"),
            Just("/v1/jobs/heartbeat"),
            Just("/v1/ws"),
            Just("/v1/"),
            Just("/"),
        ]
        .prop_map(str::to_owned),
        (segment(), op.clone()).prop_map(|(j, op)| format!("/v1/jobs/{j}/{op}")),
        (Just(held), op).prop_map(|(j, op)| format!("/v1/jobs/{j}/{op}")),
        segment().prop_map(|d| format!("/v1/artifacts/{d}")),
        (segment(), segment()).prop_map(|(a, b)| format!("/v1/jobs/{a}/effects/{b}?fence={b}")),
        (segment(), segment(), segment()).prop_map(|(a, b, c)| format!("/{a}/{b}/{c}")),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[^\u{0}]{0,40}".prop_map(Value::from),
        Just(json!("scf_enr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("fence".to_owned()),
                    Just("lane".to_owned()),
                    Just("max".to_owned()),
                    Just("wait_ms".to_owned()),
                    Just("jobs".to_owned()),
                    Just("job".to_owned()),
                    Just("token".to_owned()),
                    Just("worker_id".to_owned()),
                    Just("state".to_owned()),
                    Just("outputs".to_owned()),
                    Just("class".to_owned()),
                    "[a-z_]{1,10}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(any::<u8>(), 0..512),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        json_value().prop_map(|v| {
            let mut b = v.to_string().into_bytes();
            b.truncate(b.len() / 2);
            b
        }),
    ]
}

fn request(held: String) -> impl Strategy<Value = Req> {
    (
        prop_oneof![
            Just("GET"),
            Just("POST"),
            Just("PUT"),
            Just("DELETE"),
            Just("PATCH")
        ],
        path(held),
        prop_oneof![
            Just(None),
            Just(Some("1".to_owned())),
            Just(Some("2".to_owned())),
            "[ -~]{0,24}".prop_map(Some),
        ],
        prop_oneof![
            Just(Auth::None),
            Just(Auth::Session),
            "[ -~]{0,60}".prop_map(Auth::Raw),
            "[A-Za-z0-9_-]{0,60}".prop_map(|t| Auth::Raw(format!("Bearer scf_ses_{t}"))),
        ],
        body(),
    )
        .prop_map(|(method, path, protocol, auth, body)| Req {
            method,
            path,
            protocol,
            auth,
            body,
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_malformed_requests_change_nothing_and_never_fail_the_server() {
    let s = Server::fresh_with(|c| c.limits.per_address_per_minute = 1_000).await;
    // A job held by one worker; the fuzzer speaks as another of another account.
    let holder = s.device("holder", "acme", None).await;
    for n in 0..3 {
        s.store
            .enqueue(NewItem::new("A", json!({"n": n})).account("acme"))
            .await
            .expect("enqueue");
    }
    let held = holder.claim("default", 1).await.remove(0);
    let held_job = held["job"].as_str().expect("job").to_owned();
    let fuzzer = s.device("fuzzer", "fuzz", Some(&["NONE"])).await;
    let before = s.store.list(Default::default()).await.expect("list");

    let mut runner = TestRunner::new_with_rng(
        PropConfig::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = request(held_job);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(20))
        .build()
        .expect("client");
    let mut sent = 0;
    for _ in 0..10_000 {
        let req = strategy.new_tree(&mut runner).expect("a case").current();
        let Ok(url) = reqwest::Url::parse(&format!("http://{}{}", s.addr, req.path)) else {
            continue;
        };
        let method = reqwest::Method::from_bytes(req.method.as_bytes()).expect("method");
        let mut r = client.request(method, url).body(req.body.clone());
        if let Some(p) = &req.protocol
            && let Ok(v) = reqwest::header::HeaderValue::from_str(p)
        {
            r = r.header("Scaffold-Protocol", v);
        }
        match &req.auth {
            Auth::None => {}
            Auth::Session => r = r.bearer_auth(&fuzzer.session),
            Auth::Raw(v) => {
                if let Ok(v) = reqwest::header::HeaderValue::from_str(v) {
                    r = r.header("Authorization", v);
                }
            }
        }
        let answer = r.send().await;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => panic!("the coordinator dropped {req:?}: {e}"),
        };
        let status = answer.status().as_u16();
        assert!(
            status < 500,
            "{status} for {req:?}: {:?}",
            answer.text().await
        );
        sent += 1;
    }
    assert!(sent > 9_000, "only {sent} requests were sent");
    assert_eq!(
        s.store.list(Default::default()).await.expect("list"),
        before,
        "a malformed request changed the queue"
    );
    assert!(
        s.store
            .attempts(before[0].id)
            .await
            .expect("attempts")
            .is_empty()
    );
    // And the server still serves its own worker.
    let (status, _) = holder
        .post(
            &format!("/v1/jobs/{}/heartbeat", held["job"].as_str().expect("job")),
            json!({"fence": held["fence"]}),
        )
        .await;
    assert_eq!(status, 200);
}
