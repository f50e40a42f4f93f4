//! Two coordinators on one PostgreSQL queue: no state of their own but sockets.

use std::time::Duration;

use scaffold_runtime::{ItemState, NewItem, Store};
use serde_json::json;

use super::common::{Http, Server, open_session};
use super::socket::{connect, next};
use crate::pg_common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_coordinators_share_one_queue() {
    if !pg_common::database_named() {
        return;
    }
    let (url, _guard) = pg_common::fresh_url("");
    let store = Store::open(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    let one = Server::start(store.clone(), |_| {}).await;
    let other_store = Store::open(&url).await.expect("open the second");
    let two = Server::start(other_store, |_| {}).await;

    // Enrolled on one.
    let d = one.device("w1", "acme", None).await;
    // A session on the other: it signs the other's origin, and its token is good on both.
    let http_two = two.http();
    let session = open_session(&http_two, &two.origin, &d.id, &d.key).await;
    let id = store
        .enqueue(NewItem::new("A", json!({})).account("acme"))
        .await
        .expect("enqueue");
    let (status, body) = http_two
        .post(
            "/v1/jobs/claim",
            json!({"lane": "default", "max": 1}),
            Some(&session),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let job = body["jobs"][0].clone();
    // Completed on the first.
    let http_one: Http = one.http();
    let (status, body) = http_one
        .post(
            &format!("/v1/jobs/{}/complete", job["job"].as_str().expect("job")),
            json!({"fence": job["fence"]}),
            Some(&session),
        )
        .await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        store.get(id).await.expect("get").expect("item").state,
        ItemState::Completed
    );
    // `work_available` is heard through either, as the enqueue's notification fans out.
    let mut on_one = connect(one.addr, &d).await.expect("socket on one");
    let mut d_two = one.device("w2", "acme", None).await;
    d_two.session = open_session(&http_two, &two.origin, &d_two.id, &d_two.key).await;
    let mut on_two = connect(two.addr, &d_two).await.expect("socket on two");
    for ws in [&mut on_one, &mut on_two] {
        futures_util::SinkExt::send(
            ws,
            tokio_tungstenite::tungstenite::Message::Text(
                json!({"type": "presence", "lanes": ["fan"]})
                    .to_string()
                    .into(),
            ),
        )
        .await
        .expect("presence");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t0 = std::time::Instant::now();
    store
        .enqueue(NewItem::new("A", json!({})).account("acme").lane("fan"))
        .await
        .expect("enqueue");
    for ws in [&mut on_one, &mut on_two] {
        let frame = next(ws, Duration::from_secs(3)).await.expect("a frame");
        assert_eq!(frame, json!({"type": "work_available", "lane": "fan"}));
    }
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "heard after {:?}",
        t0.elapsed()
    );
    drop(one);
    drop(two);
}
