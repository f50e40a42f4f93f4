//! The WebSocket: presence and notification only, unknown messages answered and the socket
//! kept, one per session, and an operator's drain heard through it.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use scaffold_runtime::NewItem;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::common::{Device, Server, code};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn connect(addr: std::net::SocketAddr, d: &Device) -> Result<Socket, u16> {
    let mut req = format!("ws://{addr}/v1/ws")
        .into_client_request()
        .expect("request");
    req.headers_mut()
        .insert("Scaffold-Protocol", "1".parse().expect("header"));
    req.headers_mut().insert(
        "Authorization",
        format!("Bearer {}", d.session).parse().expect("header"),
    );
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
        Err(e) => panic!("connect: {e}"),
    }
}

/// The next text frame, as JSON, within `within`.
pub async fn next(ws: &mut Socket, within: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let msg = tokio::time::timeout_at(deadline, ws.next())
            .await
            .ok()??
            .ok()?;
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).ok();
        }
    }
}

async fn say(ws: &mut Socket, v: Value) {
    ws.send(Message::Text(v.to_string().into()))
        .await
        .expect("send");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_messages_are_answered_and_the_socket_kept() {
    let s = Server::fresh().await;
    let d = s.device("wa", "acme", None).await;
    let mut ws = connect(s.addr, &d).await.expect("socket");
    say(&mut ws, json!({"type": "claim", "lane": "default"})).await;
    let answer = next(&mut ws, Duration::from_secs(5)).await.expect("answer");
    assert_eq!(
        (answer["type"].as_str(), answer["got"].as_str()),
        (Some("unsupported"), Some("claim"))
    );
    say(
        &mut ws,
        json!({"type": "presence", "lanes": ["default"], "extra": 1}),
    )
    .await;
    let answer = next(&mut ws, Duration::from_secs(5)).await.expect("answer");
    assert_eq!(
        (answer["type"].as_str(), answer["got"].as_str()),
        (Some("unsupported"), Some("extra"))
    );
    ws.send(Message::Text("not json".into()))
        .await
        .expect("send");
    let answer = next(&mut ws, Duration::from_secs(5)).await.expect("answer");
    assert_eq!(answer["reason"], "malformed");
    say(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(
        next(&mut ws, Duration::from_secs(5)).await.expect("pong")["type"],
        "pong"
    );
    // One socket per session.
    assert_eq!(connect(s.addr, &d).await.err(), Some(429));
    // Without a session: 401, never an upgrade.
    let mut anon = d.session.clone();
    anon.replace_range(8..12, "AAAA");
    let bogus = Device {
        session: anon,
        ..s.device("wb", "acme", None).await
    };
    assert_eq!(connect(s.addr, &bogus).await.err(), Some(401));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_available_drain_and_revoked_ride_the_socket() {
    let s = Server::fresh_with(|c| {
        c.lease = Duration::from_millis(900);
        c.sweep_interval = Duration::from_millis(100);
    })
    .await;
    let d = s.device("wa", "acme", None).await;
    let mut ws = connect(s.addr, &d).await.expect("socket");
    say(&mut ws, json!({"type": "presence", "lanes": ["default"]})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.store
        .enqueue(NewItem::new("A", json!({})).account("acme"))
        .await
        .expect("enqueue");
    let frame = next(&mut ws, Duration::from_secs(3))
        .await
        .expect("a frame");
    assert_eq!(frame, json!({"type": "work_available", "lane": "default"}));
    // The claim itself is HTTPS.
    assert_eq!(d.claim("default", 1).await.len(), 1);
    // `scaffold queue drain <worker>` reaches it.
    assert!(s.store.drain_worker(&d.id).await.expect("drain"));
    let mut heard = None;
    for _ in 0..20 {
        match next(&mut ws, Duration::from_secs(1)).await {
            Some(f) if f["type"] == "drain" => {
                heard = Some(f);
                break;
            }
            _ => {}
        }
    }
    assert!(heard.is_some(), "the drain was never heard");
    // A revocation closes it.
    scaffold_runtime::coordinator::revoke(&s.store, &d.id)
        .await
        .expect("revoke");
    let mut revoked = false;
    for _ in 0..20 {
        match next(&mut ws, Duration::from_secs(1)).await {
            Some(f) if f["type"] == "revoked" => {
                revoked = true;
                break;
            }
            None => break,
            _ => {}
        }
    }
    assert!(revoked, "the revocation was never heard");
    let (status, body) = d
        .post("/v1/jobs/claim", json!({"lane": "default", "max": 1}))
        .await;
    assert_eq!((status, code(&body)), (401, "revoked"));
}
