//! `/metrics` answers in Prometheus text over a real TCP socket.

use std::time::Duration;

use scaffold_runtime::testing::MemoryContainer;
use scaffold_runtime::{NewItem, metrics};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn metrics_endpoint_reports_depth_and_lag_per_lane_and_state() {
    let c = MemoryContainer::new();
    c.store
        .enqueue_many(vec![
            NewItem::new("A", serde_json::json!({})),
            NewItem::new("A", serde_json::json!({})).lane("bulk"),
        ])
        .await
        .expect("enqueue");
    c.clock.advance(Duration::from_millis(1500));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(metrics::serve(listener, c.store.clone(), None, async {
        let _ = stopped.await;
    }));

    let get = |path: &'static str| async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .expect("write");
        let mut body = String::new();
        s.read_to_string(&mut body).await.expect("read");
        body
    };
    let ok = get("/metrics").await;
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
    assert!(ok.contains("scaffold_queue_items{lane=\"bulk\",state=\"available\"} 1\n"));
    assert!(ok.contains("scaffold_queue_items{lane=\"default\",state=\"running\"} 0\n"));
    assert!(ok.contains(
        "scaffold_queue_oldest_age_seconds{lane=\"default\",state=\"available\"} 1.500\n"
    ));
    let missing = get("/other").await;
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    stop.send(()).expect("stop the server");
    server.await.expect("join").expect("serve");
}
