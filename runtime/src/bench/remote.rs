//! `scaffold queue bench --remote`: the same drain through a coordinator on loopback and one
//! remote worker loop, beside the direct store on the same database, and how long an item
//! waits on an idle queue from its enqueue to its handler's start (the socket's
//! `work_available`, not a poll).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use super::BenchReport;
use crate::context::WorkContext;
use crate::coordinator::{Config, Coordinator, EnrollOptions, Transport, enroll};
use crate::error::{StoreError, WorkError};
use crate::handler::WorkHandler;
use crate::item::{Item, NewItem};
use crate::spec::WorkKindSpec;
use crate::store::Store;
use crate::store::remote::RemoteConfig;
use crate::work_loop::WorkLoop;

/// What one run of `scaffold queue bench --remote` measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteBenchReport {
    pub backend: String,
    pub jobs: u64,
    pub concurrency: usize,
    /// The drain through the coordinator: one remote worker loop.
    pub remote: BenchReport,
    /// The same drain on a direct store over the same database.
    pub direct: BenchReport,
    /// Enqueue → handler start on an idle queue, each sample in ms.
    pub start_latency_ms: Vec<f64>,
}

impl RemoteBenchReport {
    /// The median of the start latencies.
    pub fn start_latency_p50_ms(&self) -> f64 {
        let mut v = self.start_latency_ms.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => f64::midpoint(v[n / 2 - 1], v[n / 2]),
        }
    }
}

/// The probe's kind: its handler says when it started.
const PROBE_KIND: &str = "BENCH_PROBE";

static PROBE_KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: PROBE_KIND,
    permission: "bench.run",
    lane: "probe",
    ..WorkKindSpec::DEFAULT
}]];

struct Probe(tokio::sync::mpsc::UnboundedSender<Instant>);

impl WorkHandler for Probe {
    type Payload = serde_json::Value;
    const KIND: &'static str = PROBE_KIND;
    const REQUIRES: &'static [&'static str] = &["bench.run"];
    async fn handle(&self, _: &WorkContext, _: &Item<Self::Payload>) -> Result<(), WorkError> {
        let _ = self.0.send(Instant::now());
        Ok(())
    }
}

/// Start-latency samples taken on an idle queue.
const PROBES: usize = 31;

/// The most jobs a claim over the coordinator takes, and what the direct side is held to.
const CLAIM: usize = 100;

/// A coordinator on `127.0.0.1:0` over `queue` (migrated, empty), a remote worker enrolled
/// with it (its state in `state_dir`), `jobs` no-op items drained through it with one loop
/// of `concurrency` (claims of up to 100), then the start latency on the idle queue; and
/// the same drain on `direct` (another fresh queue on the same database, claims of up to 100
/// as well).
pub async fn run_remote(
    queue: &Store,
    direct: &Store,
    state_dir: &Path,
    jobs: u64,
    concurrency: usize,
) -> Result<RemoteBenchReport, StoreError> {
    let task = |e: String| StoreError::Task(e);
    let mut config = Config::new(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        Transport::InsecureLoopback,
    );
    config.lease = Duration::from_secs(60);
    let bound = Coordinator::new(queue.clone(), config)
        .map_err(|e| task(e.to_string()))?
        .bind()
        .await
        .map_err(|e| task(e.to_string()))?;
    let origin = bound.origin().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(bound.run(async {
        let _ = stopped.await;
    }));
    let result = async {
        let token = enroll(
            queue,
            &EnrollOptions {
                worker: "bench".to_owned(),
                account: crate::item::DEFAULT_ACCOUNT.to_owned(),
                kinds: None,
                ttl: Duration::from_secs(600),
            },
        )
        .await
        .map_err(|e| task(e.to_string()))?;
        let token_file = state_dir.join("bench.token");
        write_private(&token_file, &token.token)?;
        let worker = Store::open_remote(
            RemoteConfig::new(origin, state_dir.join("state"), "bench").token_file(&token_file),
        )
        .await?;
        let remote = super::drain(queue, &worker, jobs, concurrency, Some(CLAIM)).await?;
        let start_latency_ms = latency(queue, &worker).await?;
        Ok::<_, StoreError>((remote, start_latency_ms))
    }
    .await;
    let _ = stop.send(());
    let _ = server.await;
    let (remote, start_latency_ms) = result?;
    // The same loop on a direct store, its claims bounded as the coordinator bounds the
    // remote worker's: the comparison is of the transport, not of the claim size.
    let direct = super::drain(direct, direct, jobs, concurrency, Some(CLAIM)).await?;
    Ok(RemoteBenchReport {
        backend: queue.backend_name().to_owned(),
        jobs,
        concurrency,
        remote,
        direct,
        start_latency_ms,
    })
}

fn write_private(path: &Path, text: &str) -> Result<(), StoreError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| StoreError::RemoteState {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    f.write_all(text.as_bytes()).map_err(fail)
}

/// Enqueue → handler start, one probe at a time on the idle queue.
async fn latency(queue: &Store, worker: &Store) -> Result<Vec<f64>, StoreError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let loop_ = WorkLoop::builder(worker.clone(), PROBE_KINDS)
        .handler(Probe(tx))
        .lane("probe")
        // A poll this long never answers first: what wakes the claimer is the socket.
        .poll_interval(Duration::from_secs(5))
        .build()
        .map_err(|e| StoreError::Task(e.to_string()))?;
    let samples: Arc<Mutex<Vec<f64>>> = Arc::default();
    let out = Arc::clone(&samples);
    let queue = queue.clone();
    let probing = async move {
        // Let the loop come online and its socket announce the lane.
        tokio::time::sleep(Duration::from_millis(500)).await;
        for i in 0..PROBES {
            let t0 = Instant::now();
            if queue
                .enqueue(NewItem::new(PROBE_KIND, json!({ "i": i })).lane("probe"))
                .await
                .is_err()
            {
                return;
            }
            let Ok(Some(started)) = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await
            else {
                return;
            };
            if let Ok(mut s) = out.lock() {
                s.push(started.saturating_duration_since(t0).as_secs_f64() * 1000.0);
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    };
    loop_.run(probing).await?;
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    if samples.len() < PROBES {
        return Err(StoreError::Task(format!(
            "only {} of {PROBES} probes started within 10 s",
            samples.len()
        )));
    }
    Ok(samples)
}
