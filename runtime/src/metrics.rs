//! Prometheus text exposition of queue depth and lag per lane and state, plus a work loop's
//! counters, and a tiny `/metrics` HTTP endpoint a worker binds to its metrics port.

use std::fmt::Write as _;
use std::future::Future;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::item::{ItemState, LaneStats};
use crate::store::Store;
use crate::work_loop::WorkLoop;

/// Renders `stats` (and `loop_`'s counters) in the Prometheus text format, lanes and states
/// in a fixed order.
pub fn render(stats: &[LaneStats], loop_: Option<&WorkLoop>) -> String {
    let mut out = String::new();
    out.push_str("# HELP scaffold_queue_items Work items per lane and state.\n");
    out.push_str("# TYPE scaffold_queue_items gauge\n");
    for lane in stats {
        for state in ItemState::ALL {
            let _ = writeln!(
                out,
                "scaffold_queue_items{{lane=\"{}\",state=\"{}\"}} {}",
                escape(&lane.lane),
                state,
                lane.get(state).count
            );
        }
    }
    out.push_str("# HELP scaffold_queue_oldest_age_seconds Age of the oldest item per lane and state (available: since due).\n");
    out.push_str("# TYPE scaffold_queue_oldest_age_seconds gauge\n");
    for lane in stats {
        for state in ItemState::ALL {
            let ms = lane.get(state).oldest_age_ms;
            let _ = writeln!(
                out,
                "scaffold_queue_oldest_age_seconds{{lane=\"{}\",state=\"{}\"}} {}.{:03}",
                escape(&lane.lane),
                state,
                ms / 1000,
                ms % 1000
            );
        }
    }
    if let Some(loop_) = loop_ {
        out.push_str("# HELP scaffold_worker_items_total Items this worker handled, by event.\n");
        out.push_str("# TYPE scaffold_worker_items_total counter\n");
        for (name, value) in loop_.counters().snapshot() {
            let _ = writeln!(
                out,
                "scaffold_worker_items_total{{worker=\"{}\",event=\"{name}\"}} {value}",
                escape(loop_.worker_id())
            );
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Serves `GET /metrics` on `listener` until `shutdown` resolves. Any other path is 404.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    loop_: Option<WorkLoop>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (mut socket, _) = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => accepted?,
        };
        let store = store.clone();
        let loop_ = loop_.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if request.starts_with("GET /metrics ") {
                match store.stats().await {
                    Ok(stats) => ("200 OK", render(&stats, loop_.as_ref())),
                    Err(e) => ("503 Service Unavailable", format!("store error: {e}\n")),
                }
            } else {
                ("404 Not Found", "not found\n".to_owned())
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        });
    }
}
