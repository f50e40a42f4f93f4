//! `scaffold queue … --format json`: each answer as a struct, so keys keep the documented
//! order.

use scaffold_runtime::ItemRecord;
use scaffold_runtime::bench::BenchReport;
use scaffold_runtime::store::status::{QueueStatus, WorkerStatus};
use serde::Serialize;
use serde_json::Value;

use std::io::{self, Write};

use super::{BenchSummary, Printed, RemoteSummary};
use crate::queue::time;
use scaffold_runtime::bench::remote::RemoteBenchReport;

/// `printed` as one JSON document and a newline.
pub(super) fn print(out: &mut dyn Write, printed: &Printed) -> io::Result<()> {
    super::super::inert::to_writer(&mut *out, &to_json(printed))?;
    writeln!(out)
}

/// The JSON documents, as structs so keys keep the documented order.
#[derive(Serialize)]
#[serde(untagged)]
enum Doc<'a> {
    Migrated {
        database: &'a str,
        schema_version: i64,
    },
    Enqueued {
        #[serde(flatten)]
        item: ItemJson<'a>,
        duplicate: bool,
    },
    Status(&'a QueueStatus),
    List {
        items: Vec<ItemJson<'a>>,
    },
    Show {
        #[serde(flatten)]
        item: ItemJson<'a>,
        lease_owner: Option<&'a str>,
        lease_expires_at: Option<String>,
        checkpoint: Option<&'a Value>,
        created_at: String,
        updated_at: String,
        effects: Vec<EffectJson<'a>>,
        attempts: Vec<AttemptJson<'a>>,
        artifacts: Vec<ArtifactJson<'a>>,
    },
    Serving {
        listen: &'a str,
        origin: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        dashboard: Option<&'a str>,
    },
    OperatorAdded {
        operator: &'a str,
        token: &'a str,
    },
    OperatorRemoved {
        removed: &'a str,
    },
    Operators {
        operators: Vec<OperatorJson<'a>>,
    },
    Stopped {
        stopped: bool,
    },
    Enrolled {
        worker: &'a str,
        account: &'a str,
        kinds: Option<&'a [String]>,
        expires_at: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        token: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    },
    Revoked {
        revoked: &'a [String],
    },
    ArtifactStored {
        account: &'a str,
        name: &'a str,
        sha256: &'a str,
        size: u64,
    },
    ArtifactFetched {
        sha256: &'a str,
        size: u64,
        file: String,
    },
    Workers {
        workers: Vec<WorkerJson<'a>>,
    },
    Retried {
        retried: u64,
        ids: &'a [i64],
    },
    Discarded {
        discarded: i64,
    },
    Cancelled {
        cancelled: i64,
    },
    Signalled {
        signal: &'a str,
        woken: u64,
    },
    Released {
        worker: &'a str,
        released: u64,
    },
    Draining {
        draining: &'a str,
    },
    /// The headline `jobs_per_sec` is the median of the runs (`enqueue_ms`, `drain_ms` and
    /// `completed` are those of the run at the median); each run's rate follows, in order.
    Bench {
        backend: &'a str,
        jobs: u64,
        concurrency: usize,
        enqueue_ms: u64,
        drain_ms: u64,
        jobs_per_sec: u64,
        completed: u64,
        runs: usize,
        jobs_per_sec_median: u64,
        jobs_per_sec_min: u64,
        jobs_per_sec_max: u64,
        jobs_per_sec_each: Vec<u64>,
    },
    /// `bench --remote`: the medians of the runs, then each run's figures in order.
    BenchRemote {
        backend: &'a str,
        jobs: u64,
        concurrency: usize,
        runs: usize,
        remote_jobs_per_sec: u64,
        direct_jobs_per_sec: u64,
        remote_over_direct: f64,
        start_latency_p50_ms: f64,
        remote_jobs_per_sec_each: Vec<u64>,
        direct_jobs_per_sec_each: Vec<u64>,
        start_latency_p50_ms_each: Vec<f64>,
    },
}

#[derive(Serialize)]
struct AttemptJson<'a> {
    attempt: i32,
    fence: i64,
    holder: Option<&'a str>,
    claimed_at: Option<String>,
    finished_at: String,
    outcome: &'a str,
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct EffectJson<'a> {
    key: &'a str,
    output: &'a Value,
    fence: i64,
    recorded_at: String,
}

#[derive(Serialize)]
struct WorkerJson<'a> {
    id: &'a str,
    state: &'static str,
    lanes: &'a [String],
    started_at: String,
    last_heartbeat_at: String,
    lease_ms: i64,
    held: &'a [i64],
}

#[derive(Serialize)]
struct ItemJson<'a> {
    id: i64,
    kind: &'a str,
    lane: &'a str,
    state: &'static str,
    priority: i32,
    attempt: i32,
    max_attempts: i32,
    run_at: String,
    fence: i64,
    dedupe_key: Option<&'a str>,
    parked_on: Option<&'a str>,
    last_error: Option<&'a str>,
    payload: &'a Value,
}

/// One of an item's artifacts: an input (fence 0) or an attempt's output.
#[derive(Serialize)]
struct ArtifactJson<'a> {
    role: &'static str,
    fence: i64,
    name: &'a str,
    sha256: &'a str,
    size: u64,
}

/// One operator, as `scaffold queue operator list --format json` prints it.
#[derive(Serialize)]
struct OperatorJson<'a> {
    name: &'a str,
    created_at: String,
}

fn to_json(printed: &Printed) -> Doc<'_> {
    match printed {
        Printed::Migrated {
            database,
            schema_version,
        } => Doc::Migrated {
            database,
            schema_version: *schema_version,
        },
        Printed::Enqueued { item, duplicate } => Doc::Enqueued {
            item: item_json(item),
            duplicate: *duplicate,
        },
        Printed::Serving {
            listen,
            origin,
            dashboard,
        } => Doc::Serving {
            listen,
            origin,
            dashboard: dashboard.as_deref(),
        },
        Printed::OperatorAdded { name, token } => Doc::OperatorAdded {
            operator: name,
            token,
        },
        Printed::OperatorRemoved { name } => Doc::OperatorRemoved { removed: name },
        Printed::Operators(ops) => Doc::Operators {
            operators: ops
                .iter()
                .map(|o| OperatorJson {
                    name: &o.name,
                    created_at: time::format(o.created_at),
                })
                .collect(),
        },
        Printed::Stopped => Doc::Stopped { stopped: true },
        Printed::Enrolled {
            worker,
            account,
            kinds,
            expires_at,
            token,
            file,
        } => Doc::Enrolled {
            worker,
            account,
            kinds: kinds.as_deref(),
            expires_at: time::format(*expires_at),
            token: token.as_deref(),
            file: file.as_ref().map(|f| f.display().to_string()),
        },
        Printed::Revoked { ids, .. } => Doc::Revoked { revoked: ids },
        Printed::ArtifactStored { account, artifact } => Doc::ArtifactStored {
            account,
            name: &artifact.name,
            sha256: &artifact.sha256,
            size: artifact.size,
        },
        Printed::ArtifactFetched { sha256, size, file } => Doc::ArtifactFetched {
            sha256,
            size: *size,
            file: file.display().to_string(),
        },
        Printed::Show {
            item,
            effects,
            attempts,
            artifacts,
            ..
        } => Doc::Show {
            item: item_json(item),
            lease_owner: item.lease_owner.as_deref(),
            lease_expires_at: item.lease_expires_at.map(time::format),
            checkpoint: item.checkpoint.as_ref(),
            created_at: time::format(item.created_at),
            updated_at: time::format(item.updated_at),
            effects: effects
                .iter()
                .map(|e| EffectJson {
                    key: &e.key,
                    output: &e.output,
                    fence: e.fence,
                    recorded_at: time::format(e.recorded_at),
                })
                .collect(),
            attempts: attempts
                .iter()
                .map(|a| AttemptJson {
                    attempt: a.attempt,
                    fence: a.fence,
                    holder: a.holder.as_deref(),
                    claimed_at: a.claimed_at.map(time::format),
                    finished_at: time::format(a.finished_at),
                    outcome: &a.outcome,
                    error: a.error.as_deref(),
                })
                .collect(),
            artifacts: artifacts
                .iter()
                .map(|a| ArtifactJson {
                    role: a.role.as_str(),
                    fence: a.fence,
                    name: &a.artifact.name,
                    sha256: &a.artifact.sha256,
                    size: a.artifact.size,
                })
                .collect(),
        },
        Printed::Workers { workers, .. } => Doc::Workers {
            workers: workers
                .iter()
                .map(|WorkerStatus { worker: w, held }| WorkerJson {
                    id: &w.id,
                    state: w.state.as_str(),
                    lanes: &w.lanes,
                    started_at: time::format(w.started_at),
                    last_heartbeat_at: time::format(w.last_seen_at),
                    lease_ms: w.lease_ms,
                    held,
                })
                .collect(),
        },
        Printed::Cancelled { id } => Doc::Cancelled { cancelled: *id },
        Printed::Signalled { signal, woken } => Doc::Signalled {
            signal,
            woken: *woken,
        },
        Printed::Released { worker, released } => Doc::Released {
            worker,
            released: *released,
        },
        Printed::Draining { worker } => Doc::Draining { draining: worker },
        Printed::Status(status) => Doc::Status(status),
        Printed::List(items) => Doc::List {
            items: items.iter().map(item_json).collect(),
        },
        Printed::Retried { ids, count } => Doc::Retried {
            retried: *count,
            ids,
        },
        Printed::Discarded { id } => Doc::Discarded { discarded: *id },
        Printed::Bench(runs) => {
            let s = BenchSummary::of(runs);
            // The run at the median rate (the lower of an even count's middle pair).
            let mut by_rate: Vec<&BenchReport> = runs.iter().collect();
            by_rate.sort_by_key(|r| r.jobs_per_sec);
            let mid = by_rate.get((by_rate.len().max(1) - 1) / 2).copied();
            Doc::Bench {
                backend: mid.map_or("", |r| r.backend.as_str()),
                jobs: mid.map_or(0, |r| r.jobs),
                concurrency: mid.map_or(0, |r| r.concurrency),
                enqueue_ms: mid.map_or(0, |r| r.enqueue_ms),
                drain_ms: mid.map_or(0, |r| r.drain_ms),
                jobs_per_sec: s.median,
                completed: mid.map_or(0, |r| r.completed),
                runs: s.runs,
                jobs_per_sec_median: s.median,
                jobs_per_sec_min: s.min,
                jobs_per_sec_max: s.max,
                jobs_per_sec_each: runs.iter().map(|r| r.jobs_per_sec).collect(),
            }
        }
        Printed::BenchRemote(runs) => bench_remote(runs),
    }
}

fn bench_remote(runs: &[RemoteBenchReport]) -> Doc<'_> {
    let s = RemoteSummary::of(runs);
    let first = runs.first();
    Doc::BenchRemote {
        backend: first.map_or("", |r| r.backend.as_str()),
        jobs: first.map_or(0, |r| r.jobs),
        concurrency: first.map_or(0, |r| r.concurrency),
        runs: s.runs,
        remote_jobs_per_sec: s.remote.median,
        direct_jobs_per_sec: s.direct.median,
        remote_over_direct: (super::ratio(s.remote.median, s.direct.median) * 100.0).round()
            / 100.0,
        start_latency_p50_ms: (s.start_p50_ms * 100.0).round() / 100.0,
        remote_jobs_per_sec_each: runs.iter().map(|r| r.remote.jobs_per_sec).collect(),
        direct_jobs_per_sec_each: runs.iter().map(|r| r.direct.jobs_per_sec).collect(),
        start_latency_p50_ms_each: runs
            .iter()
            .map(|r| (r.start_latency_p50_ms() * 100.0).round() / 100.0)
            .collect(),
    }
}

fn item_json(i: &ItemRecord) -> ItemJson<'_> {
    ItemJson {
        id: i.id,
        kind: &i.kind,
        lane: &i.lane,
        state: i.state.as_str(),
        priority: i.priority,
        attempt: i.attempt,
        max_attempts: i.max_attempts,
        run_at: time::format(i.run_at),
        fence: i.fence,
        dedupe_key: i.dedupe_key.as_deref(),
        parked_on: i.parked_on.as_deref(),
        last_error: i.last_error.as_deref(),
        payload: &i.payload,
    }
}
