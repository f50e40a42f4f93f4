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

static KINDS: &[&[scaffold_runtime::WorkKindSpec]] = &[&[scaffold_runtime::WorkKindSpec {
    name: "SLOW",
    permission: "slow.run",
    ..scaffold_runtime::WorkKindSpec::DEFAULT
}]];

/// Runs an item at once, or (`{"hang": true}`) says it started and waits to be released.
struct Slow(
    std::sync::Arc<tokio::sync::Notify>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);

impl scaffold_runtime::WorkHandler for Slow {
    type Payload = serde_json::Value;
    const KIND: &'static str = "SLOW";
    const REQUIRES: &'static [&'static str] = &["slow.run"];
    async fn handle(
        &self,
        _: &scaffold_runtime::WorkContext,
        item: &scaffold_runtime::Item<serde_json::Value>,
    ) -> Result<(), scaffold_runtime::WorkError> {
        if item.payload["hang"] == true {
            self.1.store(true, std::sync::atomic::Ordering::SeqCst);
            self.0.notified().await;
        }
        Ok(())
    }
}

/// `/metrics` shows items per kind, the outbox backlog and handler durations; `/health` is
/// 200 while the loop claims and 503 once it drains and after it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_kinds_outbox_durations_and_health_follows_the_loop() {
    let c = MemoryContainer::new();
    c.store
        .enqueue(NewItem::new("SLOW", serde_json::json!({})))
        .await
        .expect("enqueue");
    let producer = c.store.clone();
    c.store
        .transaction(move |tx| producer.enqueue_in(tx, NewItem::new("SLOW", serde_json::json!({}))))
        .await
        .expect("outbox row");
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let hanging = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lp = scaffold_runtime::WorkLoop::builder(c.store.clone(), KINDS)
        .handler(Slow(
            std::sync::Arc::clone(&release),
            std::sync::Arc::clone(&hanging),
        ))
        .relay_outbox(false)
        .poll_interval(Duration::from_millis(5))
        .drain_timeout(Duration::from_secs(30))
        .build()
        .expect("build");
    assert_eq!(
        metrics::health(&c.store, Some(&lp)).await.0,
        503,
        "not started"
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let lp = lp.clone();
        tokio::spawn(async move {
            lp.run(async {
                let _ = stop_rx.await;
            })
            .await
        })
    };
    while lp
        .counters()
        .completed
        .load(std::sync::atomic::Ordering::SeqCst)
        < 1
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        metrics::health(&c.store, Some(&lp)).await,
        (200, "ok\n".to_owned())
    );
    let text = metrics::Snapshot::read(&c.store)
        .await
        .expect("snapshot")
        .render(Some(&lp));
    for line in [
        "scaffold_queue_kind_items{kind=\"SLOW\",state=\"completed\"} 1",
        "scaffold_outbox_pending 1",
        "scaffold_handler_duration_seconds_count{kind=\"SLOW\"} 1",
        "scaffold_handler_duration_seconds_bucket{kind=\"SLOW\",le=\"+Inf\"} 1",
        "scaffold_worker_up{lanes=\"default\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
    assert!(
        !text.contains(&std::process::id().to_string()),
        "a label carries the pid:\n{text}"
    );

    // A hanging item keeps the drain open: /health must say 503 throughout it.
    c.store
        .enqueue(NewItem::new("SLOW", serde_json::json!({"hang": true})))
        .await
        .expect("enqueue");
    // Its handler running, not only claimed: an item claimed but not started is released
    // at once by the drain, which then ends before this test could see it draining.
    while !hanging.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop_tx.send(()).expect("stop");
    while lp.state() != scaffold_runtime::LoopState::Draining {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        metrics::health(&c.store, Some(&lp)).await,
        (503, "draining\n".to_owned())
    );
    release.notify_one();
    running.await.expect("join").expect("run");
    assert_eq!(
        metrics::health(&c.store, Some(&lp)).await,
        (503, "stopped\n".to_owned())
    );
}
