//! Everything `scaffold queue` prints, human and JSON, in one place (beside the checker's
//! reporters: printing happens under `report/` only). Output is
//! deterministic: lanes by name, items by id, fixed key order.

use std::io::{self, Write};

use scaffold_runtime::bench::BenchReport;
use scaffold_runtime::bench::remote::RemoteBenchReport;
use scaffold_runtime::store::coordinator::{ArtifactRole, ItemArtifact};
use scaffold_runtime::store::status::{LaneStatus, QueueStatus, WorkerStatus};
use scaffold_runtime::{
    ArtifactRef, AttemptRecord, EffectRecord, ItemRecord, ItemState, Timestamp,
};
use serde_json::Value;

use crate::queue::{QueueError, time};

/// What a queue command has to say.
#[derive(Debug)]
pub enum Printed {
    Migrated {
        database: String,
        schema_version: i64,
    },
    Enqueued {
        item: Box<ItemRecord>,
        duplicate: bool,
    },
    Status(QueueStatus),
    List(Vec<ItemRecord>),
    Show {
        item: Box<ItemRecord>,
        effects: Vec<EffectRecord>,
        attempts: Vec<AttemptRecord>,
        /// Its inputs and each attempt's outputs.
        artifacts: Vec<ItemArtifact>,
        now: Timestamp,
    },
    /// Each worker with the ids of the items it holds.
    Workers {
        workers: Vec<WorkerStatus>,
        now: Timestamp,
    },
    Retried {
        ids: Vec<i64>,
        count: u64,
    },
    Discarded {
        id: i64,
    },
    Cancelled {
        id: i64,
    },
    Signalled {
        signal: String,
        woken: u64,
    },
    Released {
        worker: String,
        released: u64,
    },
    Draining {
        worker: String,
    },
    /// One report per run (at least one).
    Bench(Vec<BenchReport>),
    /// `bench --remote`: each run's drain through a coordinator and on a direct store.
    BenchRemote(Vec<RemoteBenchReport>),
    /// The coordinator is listening (said before it serves).
    Serving {
        listen: String,
        origin: String,
        /// The dashboard's URL, when it is served too.
        dashboard: Option<String>,
    },
    /// The coordinator has shut down.
    Stopped,
    /// An enrollment token: `token` when it is printed (once), `file` when it was written.
    Enrolled {
        worker: String,
        account: String,
        kinds: Option<Vec<String>>,
        expires_at: Timestamp,
        token: Option<String>,
        file: Option<std::path::PathBuf>,
    },
    Revoked {
        who: String,
        ids: Vec<String>,
    },
    /// A new operator's token, printed once.
    OperatorAdded {
        name: String,
        token: String,
    },
    OperatorRemoved {
        name: String,
    },
    Operators(Vec<scaffold_runtime::store::dashboard::Operator>),
    ArtifactStored {
        account: String,
        artifact: ArtifactRef,
    },
    ArtifactFetched {
        sha256: String,
        size: u64,
        file: std::path::PathBuf,
    },
}

/// Writes a command line clap refused as the JSON error document [`print_error`] writes
/// (code `scaffold::usage`): a script that asked for `--format json` gets JSON whatever
/// went wrong. The message is clap's first line; its usage and tips are the help.
pub fn print_usage_error(out: &mut dyn Write, error: &clap::Error) -> io::Result<()> {
    // `StyledStr`'s text, without its styles.
    let rendered = error.render().to_string();
    let mut lines = rendered.lines();
    let message = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned();
    let help: Vec<&str> = lines.map(str::trim_end).filter(|l| !l.is_empty()).collect();
    let doc = serde_json::json!({
        "error": {
            "code": "scaffold::usage",
            "message": message,
            "causes": [],
            "help": (!help.is_empty()).then(|| help.join("\n")),
        }
    });
    super::inert::to_writer(&mut *out, &doc)?;
    writeln!(out)
}

/// Writes `error` as one JSON document: `{"error":{"code":…,"message":…,"causes":[…],"help":…}}`.
pub fn print_error(out: &mut dyn Write, error: &QueueError) -> io::Result<()> {
    use miette::Diagnostic;
    let mut causes = Vec::new();
    let mut next = std::error::Error::source(error);
    while let Some(e) = next {
        causes.push(e.to_string());
        next = e.source();
    }
    let doc = serde_json::json!({
        "error": {
            "code": error.code().map(|c| c.to_string()),
            "message": error.to_string(),
            "causes": causes,
            "help": error.help().map(|h| h.to_string()),
        }
    });
    super::inert::to_writer(&mut *out, &doc)?;
    writeln!(out)
}

/// Writes `printed` to `out`, as JSON (one document and a newline) or for people.
pub fn print(out: &mut dyn Write, printed: &Printed, as_json: bool) -> io::Result<()> {
    if as_json {
        return json::print(out, printed);
    }
    match printed {
        Printed::Migrated {
            database,
            schema_version,
        } => {
            writeln!(out, "migrated {database} (schema version {schema_version})")
        }
        Printed::Enqueued {
            item,
            duplicate: false,
        } => writeln!(
            out,
            "enqueued item {} ({} on lane {}, {}, runs at {})",
            item.id,
            item.kind,
            item.lane,
            item.state,
            time::format(item.run_at)
        ),
        Printed::Enqueued {
            item,
            duplicate: true,
        } => writeln!(
            out,
            "duplicate: live item {} ({}, {}) already holds dedupe key `{}`; nothing was enqueued",
            item.id,
            item.kind,
            item.state,
            item.dedupe_key.as_deref().unwrap_or_default()
        ),
        Printed::Status(QueueStatus { lanes, outbox }) => {
            status_table(out, lanes)?;
            writeln!(
                out,
                "outbox: {} pending (oldest {}), {} refused by the relay",
                outbox.pending,
                age(outbox.oldest_pending_age_ms),
                outbox.refused
            )
        }
        Printed::List(items) => list_table(out, items),
        Printed::Show {
            item,
            effects,
            attempts,
            artifacts,
            now,
        } => {
            show(out, item, effects, attempts, *now)?;
            artifacts_list(out, artifacts)
        }
        Printed::Serving {
            listen,
            origin,
            dashboard,
        } => {
            writeln!(
                out,
                "coordinator listening on {listen} (sessions signed for {origin}); SIGTERM or ^C stops it"
            )?;
            match dashboard {
                Some(url) => writeln!(out, "dashboard at {url}"),
                None => Ok(()),
            }
        }
        Printed::OperatorAdded { name, token } => writeln!(
            out,
            "operator {name} added; its sign-in token (shown once, stored only as its SHA-256):\n{token}"
        ),
        Printed::OperatorRemoved { name } => writeln!(
            out,
            "operator {name} removed: its token no longer signs in and its sessions have ended"
        ),
        Printed::Operators(ops) => {
            if ops.is_empty() {
                return writeln!(
                    out,
                    "no operators (`scaffold queue operator add NAME` adds one)"
                );
            }
            for o in ops {
                writeln!(out, "{}  added {}", o.name, time::format(o.created_at))?;
            }
            Ok(())
        }
        Printed::Stopped => writeln!(out, "coordinator stopped"),
        Printed::Enrolled {
            worker,
            account,
            kinds,
            expires_at,
            token,
            file,
        } => {
            let kinds = kinds
                .as_ref()
                .map_or_else(|| "every kind".to_owned(), |k| k.join(", "));
            match (token, file) {
                (Some(token), _) => writeln!(
                    out,
                    "enrollment token for {worker} (account {account}, {kinds}), single use, until {}:
{token}",
                    time::format(*expires_at)
                ),
                (None, Some(file)) => writeln!(
                    out,
                    "enrollment token for {worker} (account {account}, {kinds}), single use, until {}, written to {} (0600)",
                    time::format(*expires_at),
                    file.display()
                ),
                (None, None) => Ok(()),
            }
        }
        Printed::Revoked { who, ids } => writeln!(
            out,
            "revoked {} ({}): its key is gone, its next call is refused, its leases run out",
            who,
            ids.join(", ")
        ),
        Printed::ArtifactStored { account, artifact } => writeln!(
            out,
            "stored {} ({} bytes) for account {account} as {}",
            artifact.name, artifact.size, artifact.sha256
        ),
        Printed::ArtifactFetched { sha256, size, file } => {
            writeln!(out, "wrote {sha256} ({size} bytes) to {}", file.display())
        }
        Printed::Workers { workers, now } => workers_table(out, workers, *now),
        Printed::Cancelled { id } => writeln!(out, "cancelled item {id} (now dead)"),
        Printed::Signalled { signal, woken } => {
            writeln!(out, "signal `{signal}` woke {woken} parked item(s)")
        }
        Printed::Released { worker, released } => writeln!(
            out,
            "released {released} item(s) held by {worker}; {worker} is OFFLINE"
        ),
        Printed::Draining { worker } => writeln!(
            out,
            "asked {worker} to drain: its loop stops claiming within a sweep tick, finishes or releases what it holds, and exits"
        ),
        Printed::Retried { ids, count } => match ids.as_slice() {
            [id] => writeln!(out, "retried item {id}"),
            _ => writeln!(out, "retried {count} dead item(s)"),
        },
        Printed::Discarded { id } => writeln!(out, "discarded item {id}"),
        Printed::Bench(runs) => {
            for b in runs {
                writeln!(
                    out,
                    "{}: {} jobs, concurrency {}: enqueued in {} ms, drained in {} ms: {} jobs/s ({} completed)",
                    b.backend,
                    b.jobs,
                    b.concurrency,
                    b.enqueue_ms,
                    b.drain_ms,
                    b.jobs_per_sec,
                    b.completed
                )?;
            }
            if runs.len() > 1 {
                let s = BenchSummary::of(runs);
                writeln!(
                    out,
                    "median {} jobs/s over {} runs (range {}–{})",
                    s.median, s.runs, s.min, s.max
                )?;
            }
            Ok(())
        }
        Printed::BenchRemote(runs) => {
            for r in runs {
                writeln!(
                    out,
                    "{}: {} jobs, concurrency {}: through the coordinator {} jobs/s, direct (claims of up to 100 as well) {} jobs/s ({:.2}); enqueue → start on an idle queue p50 {:.1} ms",
                    r.backend,
                    r.jobs,
                    r.concurrency,
                    r.remote.jobs_per_sec,
                    r.direct.jobs_per_sec,
                    ratio(r.remote.jobs_per_sec, r.direct.jobs_per_sec),
                    r.start_latency_p50_ms()
                )?;
            }
            if runs.len() > 1 {
                let s = RemoteSummary::of(runs);
                writeln!(
                    out,
                    "median over {} runs: through the coordinator {} jobs/s, direct (claims of up to 100 as well) {} jobs/s ({:.2}); start p50 {:.1} ms",
                    s.runs,
                    s.remote.median,
                    s.direct.median,
                    ratio(s.remote.median, s.direct.median),
                    s.start_p50_ms
                )?;
            }
            Ok(())
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The medians of several `bench --remote` runs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RemoteSummary {
    runs: usize,
    remote: BenchSummary,
    direct: BenchSummary,
    start_p50_ms: f64,
}

impl RemoteSummary {
    fn of(runs: &[RemoteBenchReport]) -> Self {
        let remote: Vec<BenchReport> = runs.iter().map(|r| r.remote.clone()).collect();
        let direct: Vec<BenchReport> = runs.iter().map(|r| r.direct.clone()).collect();
        let mut p50: Vec<f64> = runs
            .iter()
            .map(RemoteBenchReport::start_latency_p50_ms)
            .collect();
        p50.sort_by(f64::total_cmp);
        let start_p50_ms = match p50.len() {
            0 => 0.0,
            n if n % 2 == 1 => p50[n / 2],
            n => f64::midpoint(p50[n / 2 - 1], p50[n / 2]),
        };
        RemoteSummary {
            runs: runs.len(),
            remote: BenchSummary::of(&remote),
            direct: BenchSummary::of(&direct),
            start_p50_ms,
        }
    }
}

/// The median and range of several bench runs' `jobs_per_sec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BenchSummary {
    runs: usize,
    median: u64,
    min: u64,
    max: u64,
}

impl BenchSummary {
    fn of(runs: &[BenchReport]) -> Self {
        let mut rates: Vec<u64> = runs.iter().map(|r| r.jobs_per_sec).collect();
        rates.sort_unstable();
        let n = rates.len();
        let median = match n {
            0 => 0,
            n if n % 2 == 1 => rates[n / 2],
            n => (rates[n / 2 - 1] + rates[n / 2]) / 2,
        };
        BenchSummary {
            runs: n,
            median,
            min: rates.first().copied().unwrap_or(0),
            max: rates.last().copied().unwrap_or(0),
        }
    }
}

fn show(
    out: &mut dyn Write,
    i: &ItemRecord,
    effects: &[EffectRecord],
    attempts: &[AttemptRecord],
    now: Timestamp,
) -> io::Result<()> {
    let opt = |t: Option<Timestamp>| t.map_or_else(|| "-".to_owned(), time::format);
    writeln!(out, "item {} ({}, lane {})", i.id, i.kind, i.lane)?;
    writeln!(out, "  state         {}", i.state)?;
    writeln!(out, "  attempt       {}/{}", i.attempt, i.max_attempts)?;
    writeln!(out, "  fence         {}", i.fence)?;
    writeln!(out, "  priority      {}", i.priority)?;
    writeln!(out, "  run at        {}", time::format(i.run_at))?;
    writeln!(
        out,
        "  lease owner   {}",
        i.lease_owner.as_deref().unwrap_or("-")
    )?;
    let expiry = match i.lease_expires_at {
        Some(t) if t > now => format!("{} (in {})", time::format(t), age(t.millis_since(now))),
        Some(t) => format!(
            "{} (expired {} ago)",
            time::format(t),
            age(now.millis_since(t))
        ),
        None => "-".to_owned(),
    };
    writeln!(out, "  lease expires {expiry}")?;
    writeln!(
        out,
        "  dedupe key    {}",
        i.dedupe_key.as_deref().unwrap_or("-")
    )?;
    writeln!(
        out,
        "  parked on     {}",
        i.parked_on.as_deref().unwrap_or("-")
    )?;
    writeln!(
        out,
        "  last error    {}",
        i.last_error.as_deref().unwrap_or("-")
    )?;
    writeln!(out, "  created       {}", time::format(i.created_at))?;
    writeln!(out, "  updated       {}", opt(Some(i.updated_at)))?;
    writeln!(
        out,
        "  checkpoint    {}",
        i.checkpoint
            .as_ref()
            .map_or_else(|| "-".to_owned(), Value::to_string)
    )?;
    writeln!(out, "  payload       {}", i.payload)?;
    if effects.is_empty() {
        writeln!(out, "  effects       -")?;
    } else {
        writeln!(out, "  effects")?;
        for e in effects {
            writeln!(
                out,
                "    {} = {} (fence {}, {})",
                e.key,
                e.output,
                e.fence,
                time::format(e.recorded_at)
            )?;
        }
    }
    if attempts.is_empty() {
        writeln!(out, "  attempts      -")?;
    } else {
        writeln!(out, "  attempts")?;
        for a in attempts {
            writeln!(
                out,
                "    #{} fence {} by {}: claimed {}, {} {}{}",
                a.attempt,
                a.fence,
                a.holder.as_deref().unwrap_or("-"),
                opt(a.claimed_at),
                a.outcome,
                time::format(a.finished_at),
                a.error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

fn artifacts_list(out: &mut dyn Write, artifacts: &[ItemArtifact]) -> io::Result<()> {
    if artifacts.is_empty() {
        return writeln!(out, "  artifacts     -");
    }
    writeln!(out, "  artifacts")?;
    for a in artifacts {
        let whose = match a.role {
            ArtifactRole::Input => "input".to_owned(),
            ArtifactRole::Output => format!("output of fence {}", a.fence),
        };
        writeln!(
            out,
            "    {} = {} ({} bytes, {whose})",
            a.artifact.name, a.artifact.sha256, a.artifact.size
        )?;
    }
    Ok(())
}

fn workers_table(out: &mut dyn Write, workers: &[WorkerStatus], now: Timestamp) -> io::Result<()> {
    if workers.is_empty() {
        return writeln!(out, "no workers");
    }
    let width = workers
        .iter()
        .map(|w| w.worker.id.len())
        .max()
        .unwrap_or(6)
        .max(6);
    writeln!(
        out,
        "{:<width$}  {:<10}  {:>14}  {:<16}  HELD",
        "WORKER", "STATE", "LAST HEARTBEAT", "LANES"
    )?;
    for WorkerStatus { worker: w, held } in workers {
        let held = if held.is_empty() {
            "-".to_owned()
        } else {
            format!(
                "{} ({})",
                held.len(),
                held.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        writeln!(
            out,
            "{:<width$}  {:<10}  {:>14}  {:<16}  {held}",
            w.id,
            w.state.as_str(),
            format!("{} ago", age(now.millis_since(w.last_seen_at).max(1))),
            w.lanes.join(",")
        )?;
    }
    Ok(())
}

fn age(ms: u64) -> String {
    match ms {
        0 => "-".to_owned(),
        ms if ms < 1000 => format!("{ms}ms"),
        ms if ms < 120_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms if ms < 7_200_000 => format!("{}m", ms / 60_000),
        ms => format!("{}h", ms / 3_600_000),
    }
}

fn status_table(out: &mut dyn Write, lanes: &[LaneStatus]) -> io::Result<()> {
    if lanes.is_empty() {
        return writeln!(out, "the queue is empty");
    }
    let width = lanes.iter().map(|l| l.lane.len()).max().unwrap_or(4).max(4);
    write!(out, "{:<width$}", "LANE")?;
    for state in ItemState::ALL {
        write!(out, "  {:>9}", state.as_str().to_uppercase())?;
    }
    writeln!(out, "  {:>9}  OLDEST AVAILABLE", "SCHEDULED")?;
    for l in lanes {
        write!(out, "{:<width$}", l.lane)?;
        for state in ItemState::ALL {
            write!(out, "  {:>9}", l.count(state))?;
        }
        writeln!(
            out,
            "  {:>9}  {}",
            l.scheduled,
            age(l.oldest_available_age_ms)
        )?;
    }
    Ok(())
}

fn list_table(out: &mut dyn Write, items: &[ItemRecord]) -> io::Result<()> {
    if items.is_empty() {
        return writeln!(out, "no items");
    }
    writeln!(
        out,
        "{:>8}  {:<24}  {:<12}  {:<9}  {:>7}  {:<24}  LAST ERROR",
        "ID", "KIND", "LANE", "STATE", "ATTEMPT", "RUN AT"
    )?;
    for i in items {
        writeln!(
            out,
            "{:>8}  {:<24}  {:<12}  {:<9}  {:>7}  {:<24}  {}",
            i.id,
            i.kind,
            i.lane,
            i.state,
            format!("{}/{}", i.attempt, i.max_attempts),
            time::format(i.run_at),
            i.last_error.as_deref().unwrap_or("-")
        )?;
    }
    Ok(())
}

mod json;
