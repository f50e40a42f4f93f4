//! `scaffold queue serve`, `enroll`, `revoke`, `put-artifact` and `get-artifact`: the
//! coordinator remote workers reach (README.md#remote-workers-scaffold-queue-serve) and the operator's side of it. The server
//! itself is `scaffold_runtime::coordinator`; this parses, opens the store and prints.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use scaffold_runtime::coordinator::{self, Config, Coordinator, EnrollOptions, Transport};
use scaffold_runtime::dashboard;

use super::error::QueueError;
use super::{open_existing, report};

/// The largest artifact `put-artifact` reads (the coordinator's default cap).
const ARTIFACT_MAX: u64 = 64 << 20;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,
    /// The TLS certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "public_url"], conflicts_with = "insecure_loopback")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The origin workers reach this coordinator at (https://…): what sessions are signed
    /// for, never the Host header.
    #[arg(long, value_name = "URL", requires = "tls_cert")]
    pub public_url: Option<String>,
    /// Serve plain HTTP, on a loopback address only (a worker sharing this host's network
    /// namespace, as in compose).
    #[arg(long, required_unless_present = "tls_cert")]
    pub insecure_loopback: bool,
    /// The lease a remote job holds between heartbeats.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub lease: Duration,
    /// Completed items, relayed outbox rows, offline workers, spent credentials and
    /// unreferenced artifacts older than this are deleted.
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = duration)]
    pub retain: Duration,
    /// Serve the dashboard on its own listener at ADDR (a loopback address unless the
    /// coordinator serves TLS, whose certificate it then uses too).
    #[arg(long, value_name = "ADDR")]
    pub dashboard: Option<SocketAddr>,
    /// The origin a browser reaches the dashboard at through a proxy (https://…): accepted
    /// as its Host, and an https one marks the session cookie Secure.
    #[arg(long, value_name = "URL", requires = "dashboard")]
    pub dashboard_public_url: Option<String>,
    /// Show payloads, checkpoints and effect outputs whole on the dashboard (by default
    /// only their size and top-level keys).
    #[arg(long, requires = "dashboard")]
    pub show_payloads: bool,
}

/// `scaffold queue operator …`.
#[derive(Debug, clap::Subcommand)]
pub enum OperatorCommand {
    /// Add an operator and print its token once (stored as its SHA-256 only).
    Add {
        /// Its name (1 to 64 of A-Z a-z 0-9 . _ -): every action it takes is recorded under it.
        name: String,
    },
    /// Remove an operator: its token stops working and its sessions end.
    Remove {
        /// Its name.
        name: String,
    },
    /// List the operators.
    List,
}

#[derive(Debug, Args)]
pub struct EnrollArgs {
    /// The worker's name (1 to 64 of A-Z a-z 0-9 . _ -): its coordinator-minted id starts
    /// with it.
    #[arg(long, value_name = "NAME")]
    pub worker: String,
    /// The account whose items it may claim.
    #[arg(long, value_name = "ACCOUNT", default_value = scaffold_runtime::DEFAULT_ACCOUNT)]
    pub account: String,
    /// The kinds it may claim (comma-separated); every kind when left out.
    #[arg(long, value_name = "KIND,…", value_delimiter = ',')]
    pub kinds: Option<Vec<String>>,
    /// How long the token may be used.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = duration)]
    pub ttl: Duration,
    /// Write the token to this new file (0600) instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (write it like 30s, 15m, 2h or 1d)"))
}

/// Runs the coordinator until SIGTERM or ^C; says where it listens first.
pub(super) async fn serve(
    a: ServeArgs,
    database: &str,
    cwd: &Path,
    out: &mut dyn Write,
    json: bool,
) -> Result<report::Printed, QueueError> {
    // What the coordinator logs (never a token, a key or a signature) goes to stderr.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .try_init();
    let store = open_existing(database, cwd).await?;
    let transport = match (a.tls_cert, a.tls_key, a.public_url) {
        (Some(cert), Some(key), Some(public_url)) => Transport::Tls {
            cert: cwd.join(cert),
            key: cwd.join(key),
            public_url,
        },
        _ => Transport::InsecureLoopback,
    };
    let mut config = Config::new(a.listen, transport);
    config.lease = a.lease;
    config.retain = Some(a.retain);
    let tls_files = match &config.transport {
        Transport::Tls { cert, key, .. } => Some((cert.clone(), key.clone())),
        Transport::InsecureLoopback => None,
    };
    let bound = Coordinator::new(store.clone(), config)
        .map_err(QueueError::Serve)?
        .bind()
        .await
        .map_err(QueueError::Serve)?;
    let dashboard = match a.dashboard {
        Some(listen) => {
            let mut d = dashboard::Config::new(listen);
            d.tls = tls_files;
            d.public_url = a.dashboard_public_url;
            d.show_payloads = a.show_payloads;
            Some(
                dashboard::bind(store, d)
                    .await
                    .map_err(QueueError::Dashboard)?,
            )
        }
        None => None,
    };
    report::print(
        out,
        &report::Printed::Serving {
            listen: bound.local_addr().to_string(),
            origin: bound.origin().to_owned(),
            dashboard: dashboard.as_ref().map(dashboard::Bound::url),
        },
        json,
    )
    .map_err(QueueError::Output)?;
    out.flush().map_err(QueueError::Output)?;
    // One shutdown for both servers: SIGTERM or ^C stops the coordinator and the dashboard.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        scaffold_runtime::shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    match dashboard {
        Some(d) => {
            let (c, d) = tokio::join!(bound.run(stopped(stop_rx.clone())), d.run(stopped(stop_rx)));
            c.map_err(QueueError::Serve)?;
            d.map_err(QueueError::Dashboard)?;
        }
        None => bound
            .run(stopped(stop_rx))
            .await
            .map_err(QueueError::Serve)?,
    }
    Ok(report::Printed::Stopped)
}

/// `scaffold queue operator add|remove|list`.
pub(super) async fn operator(
    c: OperatorCommand,
    database: &str,
    cwd: &Path,
) -> Result<report::Printed, QueueError> {
    if let OperatorCommand::Add { name } | OperatorCommand::Remove { name } = &c
        && !coordinator::valid_name(name)
    {
        return Err(QueueError::BadArgument {
            what: "operator name",
            value: name.clone(),
            takes: "1 to 64 of A-Z a-z 0-9 . _ -",
        });
    }
    let store = open_existing(database, cwd).await?;
    match c {
        OperatorCommand::Add { name } => match dashboard::add_operator(&store, &name).await? {
            Some(token) => Ok(report::Printed::OperatorAdded { name, token }),
            None => Err(QueueError::OperatorExists { name }),
        },
        OperatorCommand::Remove { name } => {
            if store.dashboard()?.remove_operator(name.clone()).await? {
                Ok(report::Printed::OperatorRemoved { name })
            } else {
                Err(QueueError::UnknownOperator { name })
            }
        }
        OperatorCommand::List => Ok(report::Printed::Operators(
            store.dashboard()?.operators().await?,
        )),
    }
}

/// A single-use enrollment token, printed once or written to a new 0600 file.
pub(super) async fn enroll(
    a: EnrollArgs,
    database: &str,
    cwd: &Path,
) -> Result<report::Printed, QueueError> {
    for (what, value) in [("worker name", &a.worker), ("account", &a.account)] {
        if !coordinator::valid_name(value) {
            return Err(QueueError::BadArgument {
                what,
                value: value.clone(),
                takes: "1 to 64 of A-Z a-z 0-9 . _ -",
            });
        }
    }
    if let Some(kinds) = &a.kinds {
        for kind in kinds {
            super::kinds::check_name(kind)?;
        }
    }
    let store = open_existing(database, cwd).await?;
    let options = EnrollOptions {
        worker: a.worker.clone(),
        account: a.account.clone(),
        kinds: a.kinds.clone(),
        ttl: a.ttl,
    };
    // The file first: a token that cannot be written is never made.
    let file = match &a.out {
        Some(path) => Some((cwd.join(path), new_private_file(&cwd.join(path))?)),
        None => None,
    };
    let token = coordinator::enroll(&store, &options)
        .await
        .map_err(QueueError::Serve)?;
    let shown = match file {
        Some((path, mut f)) => {
            f.write_all(format!("{}\n", token.token).as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|source| QueueError::CannotCreate {
                    path: path.clone(),
                    source,
                })?;
            None
        }
        None => Some(token.token),
    };
    Ok(report::Printed::Enrolled {
        worker: a.worker,
        account: a.account,
        kinds: a.kinds,
        expires_at: token.expires_at,
        token: shown,
        file: a.out,
    })
}

/// A new file only this user reads; an existing path (a link included) is refused.
fn new_private_file(path: &Path) -> Result<std::fs::File, QueueError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path).map_err(|source| QueueError::CannotCreate {
        path: path.to_owned(),
        source,
    })
}

/// `scaffold queue revoke <worker>`.
pub(super) async fn revoke(
    who: String,
    database: &str,
    cwd: &Path,
) -> Result<report::Printed, QueueError> {
    let store = open_existing(database, cwd).await?;
    let ids = coordinator::revoke(&store, &who)
        .await
        .map_err(QueueError::Serve)?;
    if ids.is_empty() {
        return Err(QueueError::UnknownRemoteWorker { who });
    }
    Ok(report::Printed::Revoked { who, ids })
}

/// `scaffold queue put-artifact FILE`.
pub(super) async fn put_artifact(
    file: PathBuf,
    account: String,
    name: Option<String>,
    database: &str,
    cwd: &Path,
) -> Result<report::Printed, QueueError> {
    let path = cwd.join(&file);
    let bytes = read_bounded(&path)?;
    let name = name.unwrap_or_else(|| {
        file.file_name().map_or_else(
            || "artifact".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        )
    });
    let store = open_existing(database, cwd).await?;
    let stored = store.put_artifact(&account, &name, bytes).await?;
    Ok(report::Printed::ArtifactStored {
        account,
        artifact: stored,
    })
}

/// A regular file's bytes, at most [`ARTIFACT_MAX`]; nothing that could block is opened.
fn read_bounded(path: &Path) -> Result<Vec<u8>, QueueError> {
    let unreadable = |source| QueueError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(unreadable(std::io::Error::other("not a regular file")));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(unreadable)?
        .take(ARTIFACT_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > ARTIFACT_MAX {
        return Err(unreadable(std::io::Error::other("over 64 MiB")));
    }
    Ok(bytes)
}

/// `scaffold queue get-artifact SHA256 --out FILE`.
pub(super) async fn get_artifact(
    sha256: String,
    account: String,
    out_file: PathBuf,
    database: &str,
    cwd: &Path,
) -> Result<report::Printed, QueueError> {
    if !coordinator::tokens::is_sha256_hex(&sha256) {
        return Err(QueueError::BadArgument {
            what: "artifact digest",
            value: sha256,
            takes: "64 lower-case hex digits (its SHA-256)",
        });
    }
    let store = open_existing(database, cwd).await?;
    let bytes = store
        .coordinator()?
        .get_artifact(account.clone(), sha256.clone())
        .await?
        .ok_or_else(|| QueueError::NoArtifact {
            account: account.clone(),
            sha256: sha256.clone(),
        })?;
    let path = cwd.join(&out_file);
    let mut f = new_private_file(&path)?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(|source| QueueError::CannotCreate { path, source })?;
    Ok(report::Printed::ArtifactFetched {
        sha256,
        size: bytes.len() as u64,
        file: out_file,
    })
}
