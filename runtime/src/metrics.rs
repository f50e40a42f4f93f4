//! Prometheus text exposition of queue depth and lag per lane and state, items per kind and
//! state, the outbox backlog, a work loop's counters and handler durations, and a tiny
//! `/metrics` + `/health` HTTP endpoint a worker binds to its metrics port.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::error::StoreError;
use crate::item::{ItemState, LaneStats, OutboxStats};
use crate::store::Store;
use crate::work_loop::{LoopState, WorkLoop};

/// Upper bounds of the handler-duration buckets, in seconds.
pub const DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0, 300.0,
];

/// A Prometheus histogram of durations, lock-free.
#[derive(Debug, Default)]
pub struct Histogram {
    /// Observations at or below each bound of [`DURATION_BUCKETS`] (not cumulative here).
    buckets: [AtomicU64; DURATION_BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Records one duration.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = DURATION_BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// (cumulative count per bucket, count, sum in seconds).
    pub fn snapshot(&self) -> (Vec<u64>, u64, f64) {
        let mut running = 0;
        let cumulative = self
            .buckets
            .iter()
            .map(|b| {
                running += b.load(Ordering::Relaxed);
                running
            })
            .collect();
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        (cumulative, self.count.load(Ordering::Relaxed), sum)
    }
}

/// Everything `/metrics` shows, read from the store in one go.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub lanes: Vec<LaneStats>,
    pub kinds: Vec<(String, ItemState, u64)>,
    pub outbox: OutboxStats,
}

impl Snapshot {
    /// Reads the queue's figures.
    pub async fn read(store: &Store) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            lanes: store.stats().await?,
            kinds: store.kind_counts().await?,
            outbox: store.outbox_stats().await?,
        })
    }

    /// The Prometheus text of this snapshot and of `loop_`.
    pub fn render(&self, loop_: Option<&WorkLoop>) -> String {
        let mut out = render(&self.lanes, None);
        out.push_str(
            "# HELP scaffold_queue_scheduled_items Available items not due yet, per lane.\n",
        );
        out.push_str("# TYPE scaffold_queue_scheduled_items gauge\n");
        for lane in &self.lanes {
            let _ = writeln!(
                out,
                "scaffold_queue_scheduled_items{{lane=\"{}\"}} {}",
                escape(&lane.lane),
                lane.scheduled
            );
        }
        out.push_str("# HELP scaffold_queue_kind_items Work items per kind and state.\n");
        out.push_str("# TYPE scaffold_queue_kind_items gauge\n");
        for (kind, state, n) in &self.kinds {
            let _ = writeln!(
                out,
                "scaffold_queue_kind_items{{kind=\"{}\",state=\"{state}\"}} {n}",
                escape(kind)
            );
        }
        out.push_str(
            "# HELP scaffold_outbox_pending Outbox rows the relay has yet to turn into items.\n",
        );
        out.push_str("# TYPE scaffold_outbox_pending gauge\n");
        let _ = writeln!(out, "scaffold_outbox_pending {}", self.outbox.pending);
        out.push_str(
            "# HELP scaffold_outbox_refused Outbox rows the relay refused (their id is taken).\n",
        );
        out.push_str("# TYPE scaffold_outbox_refused gauge\n");
        let _ = writeln!(out, "scaffold_outbox_refused {}", self.outbox.refused);
        out.push_str("# HELP scaffold_outbox_oldest_pending_age_seconds Age of the oldest pending outbox row.\n");
        out.push_str("# TYPE scaffold_outbox_oldest_pending_age_seconds gauge\n");
        let ms = self.outbox.oldest_pending_age_ms;
        let _ = writeln!(
            out,
            "scaffold_outbox_oldest_pending_age_seconds {}.{:03}",
            ms / 1000,
            ms % 1000
        );
        if let Some(loop_) = loop_ {
            render_loop(&mut out, loop_);
        }
        out
    }
}

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
        render_loop(&mut out, loop_);
    }
    out
}

/// `loop_`'s counters and handler durations alone, in the Prometheus text format: what a
/// remote worker's `/metrics` answers (the queue's figures are the coordinator's).
pub fn render_work_loop(loop_: &WorkLoop) -> String {
    let mut out = String::new();
    render_loop(&mut out, loop_);
    out
}

/// The loop's counters and handler durations. Labels are stable names (the worker's
/// lanes), never its process id: a restart must not start new series; which instance
/// answered is Prometheus's own `instance` label.
fn render_loop(out: &mut String, loop_: &WorkLoop) {
    let lanes = escape(&loop_.lanes().join(","));
    out.push_str("# HELP scaffold_worker_items_total Items this worker handled, by event.\n");
    out.push_str("# TYPE scaffold_worker_items_total counter\n");
    for (name, value) in loop_.counters().snapshot() {
        let _ = writeln!(
            out,
            "scaffold_worker_items_total{{lanes=\"{lanes}\",event=\"{name}\"}} {value}"
        );
    }
    out.push_str("# HELP scaffold_worker_up Whether the worker's loop is claiming (0 while starting, draining or stopped).\n");
    out.push_str("# TYPE scaffold_worker_up gauge\n");
    let up = u8::from(loop_.state() == LoopState::Running);
    let _ = writeln!(out, "scaffold_worker_up{{lanes=\"{lanes}\"}} {up}");
    out.push_str("# HELP scaffold_handler_duration_seconds How long handlers ran, per kind.\n");
    out.push_str("# TYPE scaffold_handler_duration_seconds histogram\n");
    for (kind, histogram) in loop_.durations() {
        let kind = escape(kind);
        let (cumulative, count, sum) = histogram.snapshot();
        for (bound, n) in DURATION_BUCKETS.iter().zip(&cumulative) {
            let _ = writeln!(
                out,
                "scaffold_handler_duration_seconds_bucket{{kind=\"{kind}\",le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "scaffold_handler_duration_seconds_bucket{{kind=\"{kind}\",le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "scaffold_handler_duration_seconds_sum{{kind=\"{kind}\"}} {sum:.6}"
        );
        let _ = writeln!(
            out,
            "scaffold_handler_duration_seconds_count{{kind=\"{kind}\"}} {count}"
        );
    }
}

/// What `/health` answers: 200 while the loop claims (or, with no loop, while the queue
/// answers); 503 while it starts, drains or has stopped, and when the queue does not
/// answer — so a load balancer or orchestrator stops routing to a draining worker.
pub async fn health(store: &Store, loop_: Option<&WorkLoop>) -> (u16, String) {
    if let Some(loop_) = loop_ {
        let state = loop_.state();
        if state != LoopState::Running {
            return (503, format!("{}\n", state.as_str()));
        }
    }
    match store.schema_version().await {
        Ok(_) => (200, "ok\n".to_owned()),
        Err(e) => (503, format!("queue unavailable: {e}\n")),
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Serves `GET /metrics` and `GET /health` on `listener` until `shutdown` resolves. Any
/// other path is 404.
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
                match Snapshot::read(&store).await {
                    Ok(snapshot) => ("200 OK", snapshot.render(loop_.as_ref())),
                    Err(e) => ("503 Service Unavailable", format!("store error: {e}\n")),
                }
            } else if request.starts_with("GET /health ") {
                match health(&store, loop_.as_ref()).await {
                    (200, body) => ("200 OK", body),
                    (_, body) => ("503 Service Unavailable", body),
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
