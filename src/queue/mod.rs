//! `scaffold queue`: the operator CLI of the work-queue runtime (migrate, enqueue, status,
//! list, show, workers, retry, discard, cancel, signal, release, drain, bench). Parsing here, the queue in `scaffold_runtime`, printing in
//! [`crate::report::queue`], with the checker's reporters.

mod error;
mod kinds;
mod remote;
pub(crate) mod time;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use scaffold_runtime::{ItemState, ListFilter, NewItem, Store};

pub use error::QueueError;

use crate::cli::{GlobalArgs, PlainFormat};
use crate::report::queue as report;

/// The database `--database` names unless told otherwise.
pub const DEFAULT_DATABASE: &str = "sqlite://.scaffold/queue.db";

#[derive(Debug, Args)]
pub struct QueueArgs {
    /// The queue database: sqlite://PATH (relative to the working directory),
    /// postgres://USER@HOST:PORT/DB[?schema=NAME] or memory://
    /// [default: sqlite://.scaffold/queue.db]
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "SCAFFOLD_QUEUE_DATABASE"
    )]
    pub database: Option<String>,
    /// Output format.
    #[arg(long, value_enum, global = true, default_value_t = PlainFormat::Human)]
    pub format: PlainFormat,
    #[command(subcommand)]
    pub command: QueueCommand,
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Create the queue database or bring its schema up to date (idempotent).
    Migrate,
    /// Enqueue one item.
    Enqueue(EnqueueArgs),
    /// Items per lane and state (due apart from scheduled), the age of the oldest due item,
    /// and the outbox backlog.
    Status,
    /// List items, newest first.
    List {
        /// Only items in this state (available, running, completed, failed, dead, parked).
        #[arg(long, value_name = "STATE")]
        state: Option<String>,
        /// Only items of this lane.
        #[arg(long, value_name = "LANE")]
        lane: Option<String>,
        /// Only items of this kind.
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// Only items with this dedupe key (of any kind, live or finished).
        #[arg(long, value_name = "KEY")]
        dedupe_key: Option<String>,
        /// The next page: only items older than this id (the last id of the page before).
        #[arg(long, value_name = "ID")]
        after: Option<i64>,
        /// At most this many items (0: all).
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// Every field of one item: lease owner and expiry, attempts, last error, checkpoint,
    /// effects, payload, and the history of its attempts (each claim: fence, holder, when
    /// claimed and finished, outcome, error).
    Show {
        /// The item's id.
        id: i64,
    },
    /// The workers: state, last heartbeat, lanes, and the items each holds.
    Workers,
    /// Cancel a live item: it goes dead, and its holder's writes no longer land.
    Cancel {
        /// The item's id.
        id: i64,
    },
    /// Wake every item parked on a signal.
    Signal {
        /// The signal's name.
        name: String,
    },
    /// Return a dead worker's items now (instead of after their leases) and mark it OFFLINE.
    Release {
        /// The worker's id (`scaffold queue workers`).
        worker: String,
        /// Release even though the worker heartbeated within its lease (it may still be
        /// running those items: their outside effects could then happen twice).
        #[arg(long)]
        force: bool,
    },
    /// Ask a running worker to drain: its loop hears it within a sweep tick, stops claiming,
    /// finishes or releases what it holds and exits. (`release` is for a worker that died.)
    Drain {
        /// The worker's id (`scaffold queue workers`).
        worker: String,
    },
    /// Make a dead item (or every dead item, or every dead item of a kind) available again
    /// with fresh attempts.
    Retry {
        /// The dead item's id.
        #[arg(
            required_unless_present_any = ["all_dead", "kind"],
            conflicts_with_all = ["all_dead", "kind"]
        )]
        id: Option<i64>,
        /// Retry every dead item.
        #[arg(long)]
        all_dead: bool,
        /// Retry every dead item of this kind.
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
    },
    /// Delete a dead item.
    Discard {
        /// The dead item's id.
        id: i64,
    },
    /// Run the coordinator remote workers reach (HTTPS and a WebSocket, README.md#remote-workers-scaffold-queue-serve) until
    /// SIGTERM or ^C: enrollment, device sessions, fenced WorkerJobs, artifacts, and its own
    /// sweeper. The only process that needs the database.
    Serve(remote::ServeArgs),
    /// The dashboard's operators: `add NAME` prints a sign-in token (`scf_op_…`, shown once,
    /// stored as its SHA-256); reading the dashboard needs none.
    #[command(subcommand)]
    Operator(remote::OperatorCommand),
    /// Make a single-use enrollment token for a remote worker (256 bits, stored as its
    /// SHA-256, printed once or written to a new 0600 file).
    Enroll(remote::EnrollArgs),
    /// Revoke a remote worker (by id or name) and the unused tokens made for the name: its
    /// key is deleted, its next call is told it was revoked, its leases run out.
    Revoke {
        /// The worker's id (`scaffold queue workers`) or its name.
        worker: String,
    },
    /// Store a file as an artifact of an account, for `NewItem::input` (prints its SHA-256).
    PutArtifact {
        /// The file (a regular file of at most 64 MiB).
        file: PathBuf,
        /// The account that owns it (the account of the items that read it).
        #[arg(long, value_name = "ACCOUNT", default_value = scaffold_runtime::DEFAULT_ACCOUNT)]
        account: String,
        /// Its name as an input [default: the file's name].
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// Write an account's artifact (an item's input or a worker's output) to a new file.
    GetArtifact {
        /// Its SHA-256 (`scaffold queue show <id>` lists an item's).
        sha256: String,
        /// The account that owns it.
        #[arg(long, value_name = "ACCOUNT", default_value = scaffold_runtime::DEFAULT_ACCOUNT)]
        account: String,
        /// The file to write (must not exist).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Enqueue N no-op items in one batch, then drain them with one loop of concurrency C.
    Bench {
        /// How many items (at most 10,000,000: each is held in memory while enqueued).
        #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
        jobs: u64,
        /// How many handlers run at once (1 to 10,000).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        concurrency: u64,
        /// Run the benchmark this many times (each on a fresh queue) and report the median
        /// and range: one 20k drain lasts under a second, so one run is noise.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
        runs: u32,
        /// Drain through a coordinator on loopback over the database, with one remote worker
        /// loop, then the same on a direct store, and say both (and the start latency of an
        /// item on the idle queue).
        #[arg(long)]
        remote: bool,
    },
}

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The work kind (UPPER_SNAKE_CASE; inside a repository, one its om/ registers).
    pub kind: String,
    /// The payload, as JSON, or `@FILE` to read it from FILE.
    #[arg(long, default_value = "{}", value_name = "JSON|@FILE")]
    pub payload: String,
    /// The lane [default: the lane the kind's spec names, else `default`].
    #[arg(long, value_name = "LANE")]
    pub lane: Option<String>,
    /// Unique among live items of the kind: a second enqueue with the same kind and key
    /// returns the first item and says it was a duplicate.
    #[arg(long, value_name = "KEY")]
    pub dedupe_key: Option<String>,
    /// Not before this time: RFC 3339, milliseconds since the epoch, or +30s/+5m/+2h/+1d.
    #[arg(long, value_name = "TIME")]
    pub run_at: Option<String>,
    /// Higher is claimed first.
    #[arg(long, default_value_t = 0)]
    pub priority: i32,
    /// Attempts before the item is dead (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..))]
    pub max_attempts: Option<i32>,
}

/// Runs `scaffold queue …`; `Ok` carries the exit code.
pub fn run(
    args: QueueArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, QueueError> {
    let json = args.format == PlainFormat::Json;
    let result = working_dir(global).and_then(|cwd| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(QueueError::Runtime)?;
        runtime.block_on(execute(args, &cwd, &mut *out, json))
    });
    match result {
        Ok(printed) => {
            report::print(out, &printed, json).map_err(QueueError::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        // A script that asked for JSON gets its error as JSON too (on stdout, exit 2).
        Err(e) if json => {
            report::print_error(out, &e).map_err(QueueError::Output)?;
            Ok(ExitCode::from(crate::app::EXIT_ERROR))
        }
        Err(e) => Err(e),
    }
}

fn working_dir(global: &GlobalArgs) -> Result<PathBuf, QueueError> {
    global
        .working_dir()
        .map_err(|(path, source)| QueueError::Chdir { path, source })
}

/// The database URL with a relative SQLite path made absolute against `cwd`, and that path
/// (PostgreSQL and memory URLs pass through unchanged).
fn resolve(url: &str, cwd: &Path) -> Result<(String, Option<PathBuf>), QueueError> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        if path.is_empty() {
            return Err(QueueError::InvalidUrl {
                url: scaffold_runtime::store::url::redact_password(url),
            });
        }
        // A queue file inside the working directory (the default `.scaffold/queue.db`) is
        // never reached through a symlink: a committed `.scaffold` link must not put the
        // queue, or a write, outside the repository.
        if let Some(rel) = crate::repo::files::relative(cwd, &cwd.join(path))
            && !rel.split('/').any(|s| s == "..")
        {
            crate::repo::inside::no_links(cwd, &rel)
                .map_err(|reason| QueueError::Refused { reason })?;
        }
        let path = cwd.join(path);
        Ok((format!("sqlite://{}", path.display()), Some(path)))
    } else if url == "memory://"
        || url.starts_with("postgres://")
        || url.starts_with("postgresql://")
    {
        Ok((url.to_owned(), None))
    } else {
        Err(QueueError::InvalidUrl {
            url: scaffold_runtime::store::url::redact_password(url),
        })
    }
}

/// Opens an existing, migrated queue (never creates one).
async fn open_existing(url: &str, cwd: &Path) -> Result<Store, QueueError> {
    let (url, path) = resolve(url, cwd)?;
    if let Some(path) = path
        && !path.exists()
    {
        return Err(QueueError::NoDatabase { path });
    }
    let store = Store::open(&url).await?;
    store.require_migrated().await?;
    Ok(store)
}

/// Runs one command; what it prints when it ends is returned. `out` is for what a
/// long-running command says before it ends (`serve`: where it listens).
async fn execute(
    args: QueueArgs,
    cwd: &Path,
    out: &mut dyn Write,
    json: bool,
) -> Result<report::Printed, QueueError> {
    let database = args.database.as_deref().unwrap_or(DEFAULT_DATABASE);
    Ok(match args.command {
        QueueCommand::Migrate => {
            let (url, _) = resolve(database, cwd)?;
            let store = Store::open(&url).await?;
            let version = store.migrate().await?;
            report::Printed::Migrated {
                // Never the password: this line lands in deploy logs.
                database: scaffold_runtime::store::url::redact_password(&url),
                schema_version: version,
            }
        }
        QueueCommand::Enqueue(e) => enqueue(e, database, cwd).await?,
        QueueCommand::Status => {
            let store = open_existing(database, cwd).await?;
            report::Printed::Status(store.status().await?)
        }
        QueueCommand::List {
            state,
            lane,
            kind,
            dedupe_key,
            after,
            limit,
        } => {
            let state = state
                .map(|s| {
                    s.parse::<ItemState>()
                        .map_err(|_| QueueError::InvalidState { state: s })
                })
                .transpose()?;
            let store = open_existing(database, cwd).await?;
            let filter = ListFilter {
                state,
                lane,
                kind,
                dedupe_key,
                limit: (limit > 0).then_some(limit),
                newest_first: true,
                after,
            };
            report::Printed::List(store.list(filter).await?)
        }
        QueueCommand::Show { id } => {
            let store = open_existing(database, cwd).await?;
            let item = store.get(id).await?.ok_or(QueueError::NotFound { id })?;
            let effects = store.effects(id).await?;
            let attempts = store.attempts(id).await?;
            let artifacts = store.coordinator()?.item_artifacts(id).await?;
            report::Printed::Show {
                item: Box::new(item),
                effects,
                attempts,
                artifacts,
                now: store.now(),
            }
        }
        QueueCommand::Serve(s) => remote::serve(s, database, cwd, out, json).await?,
        QueueCommand::Enroll(e) => remote::enroll(e, database, cwd).await?,
        QueueCommand::Operator(o) => remote::operator(o, database, cwd).await?,
        QueueCommand::Revoke { worker } => remote::revoke(worker, database, cwd).await?,
        QueueCommand::PutArtifact {
            file,
            account,
            name,
        } => remote::put_artifact(file, account, name, database, cwd).await?,
        QueueCommand::GetArtifact {
            sha256,
            account,
            out,
        } => remote::get_artifact(sha256, account, out, database, cwd).await?,
        QueueCommand::Workers => {
            let store = open_existing(database, cwd).await?;
            let workers = store.worker_status().await?;
            report::Printed::Workers {
                workers,
                now: store.now(),
            }
        }
        QueueCommand::Cancel { id } => {
            let store = open_existing(database, cwd).await?;
            store.cancel(id).await.map_err(|e| match e {
                scaffold_runtime::StoreError::WrongState { id, state, .. } => {
                    QueueError::NotLive { id, state }
                }
                other => other.into(),
            })?;
            report::Printed::Cancelled { id }
        }
        QueueCommand::Signal { name } => {
            let store = open_existing(database, cwd).await?;
            let woken = store.signal(&name).await?;
            report::Printed::Signalled {
                signal: name,
                woken,
            }
        }
        QueueCommand::Release { worker, force } => {
            let store = open_existing(database, cwd).await?;
            let workers = store.workers().await?;
            let Some(row) = workers.iter().find(|w| w.id == worker) else {
                return Err(QueueError::UnknownWorker { worker });
            };
            let silent_ms = store.now().millis_since(row.last_seen_at);
            let alive = row.state != scaffold_runtime::WorkerState::Offline
                && i64::try_from(silent_ms).unwrap_or(i64::MAX) < row.lease_ms;
            if alive && !force {
                return Err(QueueError::WorkerAlive {
                    worker,
                    state: row.state.as_str(),
                    silent_ms,
                });
            }
            let released = store.release_worker(&worker).await?;
            report::Printed::Released { worker, released }
        }
        QueueCommand::Drain { worker } => {
            let store = open_existing(database, cwd).await?;
            let workers = store.workers().await?;
            match workers.iter().find(|w| w.id == worker) {
                None => return Err(QueueError::UnknownWorker { worker }),
                Some(row) if row.state == scaffold_runtime::WorkerState::Offline => {
                    return Err(QueueError::WorkerOffline { worker });
                }
                Some(_) => {}
            }
            if !store.drain_worker(&worker).await? {
                // It went OFFLINE between the read and the write.
                return Err(QueueError::WorkerOffline { worker });
            }
            report::Printed::Draining { worker }
        }
        QueueCommand::Retry { id, all_dead, kind } => {
            if let Some(kind) = &kind {
                kinds::check_name(kind)?;
            }
            let store = open_existing(database, cwd).await?;
            match id {
                Some(id) if !all_dead && kind.is_none() => {
                    store.retry(id).await.map_err(|e| not_dead(e, "retried"))?;
                    report::Printed::Retried {
                        ids: vec![id],
                        count: 1,
                    }
                }
                _ => {
                    let count = store.retry_all_dead(kind.as_deref()).await?;
                    report::Printed::Retried {
                        ids: Vec::new(),
                        count,
                    }
                }
            }
        }
        QueueCommand::Discard { id } => {
            let store = open_existing(database, cwd).await?;
            store
                .discard(id)
                .await
                .map_err(|e| not_dead(e, "discarded"))?;
            report::Printed::Discarded { id }
        }
        QueueCommand::Bench {
            jobs,
            concurrency,
            runs,
            remote: true,
        } => {
            let mut reports = Vec::new();
            let concurrency = usize::try_from(concurrency).unwrap_or(10);
            for _ in 0..runs {
                reports.push(bench_remote(args.database.as_deref(), cwd, jobs, concurrency).await?);
            }
            report::Printed::BenchRemote(reports)
        }
        QueueCommand::Bench {
            jobs,
            concurrency,
            runs,
            remote: false,
        } => {
            let mut reports = Vec::new();
            let concurrency = usize::try_from(concurrency).unwrap_or(10);
            for _ in 0..runs {
                reports.push(bench(args.database.as_deref(), cwd, jobs, concurrency).await?);
            }
            report::Printed::Bench(reports)
        }
    })
}

fn not_dead(e: scaffold_runtime::StoreError, action: &'static str) -> QueueError {
    match e {
        scaffold_runtime::StoreError::WrongState { id, state, .. } => {
            QueueError::NotDead { id, state, action }
        }
        other => other.into(),
    }
}

async fn enqueue(
    e: EnqueueArgs,
    database: &str,
    cwd: &Path,
) -> Result<report::Printed, QueueError> {
    kinds::check_name(&e.kind)?;
    if let Some(lane) = &e.lane {
        use crate::generate::names::{NameKind, why_invalid};
        if let Some(reason) = why_invalid(NameKind::Lane, lane) {
            return Err(QueueError::InvalidLane {
                lane: lane.clone(),
                reason,
            });
        }
    }
    let mut spec_lane = None;
    let registered =
        kinds::registered(cwd).map_err(|reason| QueueError::KindsUnreadable { reason })?;
    if let Some(registered) = registered {
        match registered.get(&e.kind) {
            Some(spec) => {
                let named = spec
                    .lane
                    .clone()
                    .unwrap_or_else(|| scaffold_runtime::DEFAULT_LANE.to_owned());
                if let Some(lane) = &e.lane
                    && *lane != named
                {
                    return Err(QueueError::LaneMismatch {
                        kind: e.kind,
                        lane: lane.clone(),
                        spec_lane: named,
                        spec: spec.at.clone(),
                    });
                }
                spec_lane = Some(named);
            }
            None => {
                return Err(QueueError::UnknownKind {
                    kind: e.kind,
                    registered: registered.into_keys().collect::<Vec<_>>().join(", "),
                });
            }
        }
    }
    let text = match e.payload.strip_prefix('@') {
        Some(file) => read_payload(&cwd.join(file))?,
        None => e.payload.clone(),
    };
    if text.len() as u64 > PAYLOAD_LIMIT {
        return Err(QueueError::PayloadTooLarge {
            limit: PAYLOAD_LIMIT,
        });
    }
    let payload: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| QueueError::MalformedPayload { source })?;
    let store = open_existing(database, cwd).await?;
    let mut item = NewItem::new(e.kind.clone(), payload)
        .lane(
            e.lane
                .or(spec_lane)
                .unwrap_or_else(|| scaffold_runtime::DEFAULT_LANE.to_owned()),
        )
        .priority(e.priority);
    if let Some(run_at) = &e.run_at {
        let when =
            time::parse_run_at(run_at, store.now()).ok_or_else(|| QueueError::InvalidRunAt {
                value: run_at.clone(),
            })?;
        item = item.run_at(when);
    }
    if let Some(key) = e.dedupe_key {
        item = item.dedupe_key(key);
    }
    if let Some(n) = e.max_attempts {
        item = item.max_attempts(n);
    }
    let enqueued = store.enqueue_reporting(item).await?;
    let id = enqueued.id;
    let record = store.get(id).await?.ok_or(QueueError::NotFound { id })?;
    Ok(report::Printed::Enqueued {
        item: Box::new(record),
        duplicate: enqueued.duplicate,
    })
}

static BENCH_RUN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Where one bench run goes: a fresh queue every run, removed after it. No `--database`: a
/// file in a temporary folder. `sqlite://PATH`: a fresh file beside PATH (PATH itself is
/// never touched). `postgres://…`: a fresh schema on that server, dropped after. A run never
/// finds another run's items.
struct BenchQueue {
    url: String,
    cleanup: BenchCleanup,
}

enum BenchCleanup {
    Folder(PathBuf),
    Files(PathBuf),
    Schema(String),
    Nothing,
}

impl BenchQueue {
    fn new(database: Option<&str>, cwd: &Path) -> Result<BenchQueue, QueueError> {
        let tag = format!(
            "{}_{}_{}",
            scaffold_runtime::Clock::now(&scaffold_runtime::SystemClock).as_millis(),
            std::process::id(),
            BENCH_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        match database {
            None => {
                let scratch = std::env::temp_dir().join(format!("scaffold-bench-{tag}"));
                std::fs::create_dir(&scratch).map_err(|source| QueueError::Unwritable {
                    path: scratch.clone(),
                    source,
                })?;
                Ok(BenchQueue {
                    url: format!("sqlite://{}", scratch.join("bench.db").display()),
                    cleanup: BenchCleanup::Folder(scratch),
                })
            }
            Some(url) => {
                let (url, path) = resolve(url, cwd)?;
                if let Some(path) = path {
                    let mut name = path.file_name().unwrap_or_default().to_os_string();
                    name.push(format!(".bench-{tag}"));
                    let fresh = path.with_file_name(name);
                    return Ok(BenchQueue {
                        url: format!("sqlite://{}", fresh.display()),
                        cleanup: BenchCleanup::Files(fresh),
                    });
                }
                if url.starts_with("memory:") {
                    return Ok(BenchQueue {
                        url,
                        cleanup: BenchCleanup::Nothing,
                    });
                }
                // Named after the URL's schema when it names one, so its owner knows it.
                let named = url
                    .split_once('?')
                    .and_then(|(_, q)| q.split('&').find_map(|p| p.strip_prefix("schema=")));
                let schema = match named {
                    Some(name) => format!("{}_bench_{tag}", &name[..name.len().min(20)]),
                    None => format!("scaffold_bench_{tag}"),
                };
                Ok(BenchQueue {
                    url: with_schema(&url, &schema),
                    cleanup: BenchCleanup::Schema(schema),
                })
            }
        }
    }

    /// Removes the run's queue (best effort: a bench's leftovers are named for it).
    async fn remove(self) {
        match self.cleanup {
            BenchCleanup::Folder(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            BenchCleanup::Files(file) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut name = file.as_os_str().to_os_string();
                    name.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(name));
                }
            }
            BenchCleanup::Schema(schema) => {
                if let Ok(client) =
                    scaffold_runtime::store::postgres::connect_client(&self.url).await
                {
                    let _ = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                        .await;
                }
            }
            BenchCleanup::Nothing => {}
        }
    }
}

/// `url` with its `schema=` parameter set to `schema` (any other parameter kept).
fn with_schema(url: &str, schema: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("schema="))
        .collect();
    let set = format!("schema={schema}");
    params.push(&set);
    format!("{base}?{}", params.join("&"))
}

async fn bench(
    database: Option<&str>,
    cwd: &Path,
    jobs: u64,
    concurrency: usize,
) -> Result<scaffold_runtime::bench::BenchReport, QueueError> {
    let queue = BenchQueue::new(database, cwd)?;
    let result = async {
        let store = Store::open(&queue.url).await?;
        store.migrate().await?;
        Ok::<_, QueueError>(scaffold_runtime::bench::run(&store, jobs, concurrency).await?)
    }
    .await;
    queue.remove().await;
    result
}

/// One `bench --remote` run: a fresh queue behind a coordinator and a fresh one for the
/// direct drain, on the same database; both removed after.
async fn bench_remote(
    database: Option<&str>,
    cwd: &Path,
    jobs: u64,
    concurrency: usize,
) -> Result<scaffold_runtime::bench::remote::RemoteBenchReport, QueueError> {
    let through = BenchQueue::new(database, cwd)?;
    let direct = match BenchQueue::new(database, cwd) {
        Ok(q) => q,
        Err(e) => {
            through.remove().await;
            return Err(e);
        }
    };
    let state = tempfile::Builder::new()
        .prefix("scaffold-bench-remote")
        .tempdir()
        .map_err(|source| QueueError::Unwritable {
            path: std::env::temp_dir(),
            source,
        })?;
    let result = async {
        let queue = Store::open(&through.url).await?;
        queue.migrate().await?;
        let plain = Store::open(&direct.url).await?;
        plain.migrate().await?;
        Ok::<_, QueueError>(
            scaffold_runtime::bench::remote::run_remote(
                &queue,
                &plain,
                state.path(),
                jobs,
                concurrency,
            )
            .await?,
        )
    }
    .await;
    through.remove().await;
    direct.remove().await;
    result
}

/// The largest payload `enqueue` takes: a coordinator's JSON body limit (a pipe or a
/// device such as `/dev/zero` is read only to here).
const PAYLOAD_LIMIT: u64 = 1 << 20;

/// `--payload @FILE`: at most [`PAYLOAD_LIMIT`] bytes of it, as UTF-8 (a pipe such as
/// `/dev/stdin` is fine; it is read to its end or to the limit).
fn read_payload(path: &std::path::Path) -> Result<String, QueueError> {
    use std::io::Read;
    let fail = |source| QueueError::PayloadFile {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(PAYLOAD_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > PAYLOAD_LIMIT {
        return Err(QueueError::PayloadTooLarge {
            limit: PAYLOAD_LIMIT,
        });
    }
    String::from_utf8(bytes)
        .map_err(|e| fail(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}
