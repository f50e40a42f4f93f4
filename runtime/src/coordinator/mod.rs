//! The coordinator (README.md#remote-workers-scaffold-queue-serve, seeds 002 and 003): the HTTPS and WebSocket service remote
//! workers reach with device keys, holding no database credentials of their own. It owns
//! the store and keeps no state outside it but open sockets, so several coordinators may
//! share one PostgreSQL queue (a session made on one is honoured by all; `work_available`
//! fans out through each one's `LISTEN`).
//!
//! - [`enroll`] / [`revoke`]: the operator's side (`scaffold queue enroll`, `revoke`);
//! - [`Coordinator::bind`] then [`Bound::run`]: the server (`scaffold queue serve`), with its
//!   own sweeper (expired leases, silent workers, the outbox relay, retention).
//!
//! Every job call is fenced *and* owner-checked (the session's worker must hold the item's
//! current lease); the protocol version is checked before a claim, never after one; every
//! time on the wire is the store's.

mod artifacts;
mod auth;
mod error;
mod jobs;
mod limits;
mod metrics;
mod origins;
mod probe;
mod serve;
mod sweep;
pub mod tokens;
pub mod wire;
mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use error::{ApiError, CoordinatorError};
pub use probe::probe_health;
pub use serve::Bound;
#[cfg(feature = "dashboard")]
pub(crate) use serve::{accept_until as serve_accept_until, tls_acceptor as serve_tls_acceptor};

use crate::retry::RetryPolicy;
use crate::store::Store;
use crate::store::coordinator::NewEnrollment;

pub use crate::protocol::{PROTOCOL, PROTOCOL_HEADER};

/// How the coordinator is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// TLS with this PEM certificate chain and key; `public_url` is the origin sessions are
    /// signed for (never the `Host` header).
    Tls {
        cert: PathBuf,
        key: PathBuf,
        public_url: String,
    },
    /// Plain HTTP, on a loopback address only (said at start).
    InsecureLoopback,
}

/// Limits, each refused with a typed 413 or 429.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// A JSON body's bytes (1 MiB).
    pub json_body: usize,
    /// An artifact's bytes (64 MiB), hashed while streamed.
    pub artifact: usize,
    /// Jobs one claim may ask for (100).
    pub claim_max: u32,
    /// The longest a claim waits for work (30 s).
    pub claim_wait: Duration,
    /// Enrollment and challenge calls per source address per minute (10).
    pub per_address_per_minute: u32,
    /// A WebSocket message's bytes (16 KiB: presence and notification only).
    pub socket_message: usize,
    /// Artifact uploads held in memory at once (4).
    pub uploads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            json_body: 1 << 20,
            artifact: 64 << 20,
            claim_max: 100,
            claim_wait: Duration::from_secs(30),
            per_address_per_minute: 10,
            socket_message: 16 << 10,
            uploads: 4,
        }
    }
}

/// A coordinator's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub transport: Transport,
    /// The lease a remote job holds, renewed by its heartbeats.
    pub lease: Duration,
    pub limits: Limits,
    /// The backoff of a failed attempt: the coordinator's, never the worker's.
    pub retry: RetryPolicy,
    /// A session's life (15 minutes).
    pub session_ttl: Duration,
    /// A challenge nonce's life (60 s).
    pub nonce_ttl: Duration,
    /// How often the sweeper runs (and sockets hear a drain or a revocation).
    pub sweep_interval: Duration,
    /// Completed items, relayed outbox rows, offline workers, spent credentials and
    /// unreferenced artifacts older than this are deleted; kept for ever when `None`.
    pub retain: Option<Duration>,
    /// How long a graceful shutdown waits for open requests.
    pub shutdown_grace: Duration,
    /// On plain loopback HTTP, the origin sessions are signed for when workers reach the
    /// coordinator through a local forwarder on another port (`http://127.0.0.1:PORT`); the
    /// listening address when `None`. Never the `Host` header.
    pub loopback_origin: Option<String>,
}

impl Config {
    /// The defaults, listening on `listen` over `transport`.
    pub fn new(listen: SocketAddr, transport: Transport) -> Self {
        Config {
            listen,
            transport,
            lease: Duration::from_secs(30),
            limits: Limits::default(),
            retry: RetryPolicy::default(),
            session_ttl: Duration::from_secs(15 * 60),
            nonce_ttl: Duration::from_secs(60),
            sweep_interval: Duration::from_secs(1),
            retain: Some(Duration::from_secs(24 * 3600)),
            shutdown_grace: Duration::from_secs(10),
            loopback_origin: None,
        }
    }
}

/// A coordinator over a migrated store, ready to bind.
#[derive(Debug, Clone)]
pub struct Coordinator {
    store: Store,
    config: Config,
}

impl Coordinator {
    /// Refuses plain HTTP off loopback and a public URL that is not an `https` origin.
    pub fn new(store: Store, config: Config) -> Result<Self, CoordinatorError> {
        match &config.transport {
            Transport::InsecureLoopback if !config.listen.ip().is_loopback() => {
                return Err(CoordinatorError::NotLoopback {
                    addr: config.listen,
                });
            }
            Transport::Tls { public_url, .. } => {
                let origin =
                    origin_of(public_url).map_err(|reason| CoordinatorError::PublicUrl {
                        url: public_url.clone(),
                        reason,
                    })?;
                if !origin.starts_with("https://") {
                    return Err(CoordinatorError::PublicUrl {
                        url: public_url.clone(),
                        reason: "a TLS coordinator's public URL is https://",
                    });
                }
            }
            Transport::InsecureLoopback => {}
        }
        Ok(Coordinator { store, config })
    }

    /// Binds the listener (and loads the TLS files): the address is known from here on.
    pub async fn bind(self) -> Result<Bound, CoordinatorError> {
        serve::bind(self.store, self.config).await
    }
}

pub use crate::protocol::origin_of;

/// What `scaffold queue enroll` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrollOptions {
    pub worker: String,
    pub account: String,
    /// Every kind when `None`.
    pub kinds: Option<Vec<String>>,
    pub ttl: Duration,
}

/// A fresh enrollment token: shown once, never stored (only its SHA-256 is).
pub struct EnrollmentToken {
    pub token: String,
    pub expires_at: crate::time::Timestamp,
}

impl std::fmt::Debug for EnrollmentToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnrollmentToken")
            .field("token", &"scf_enr_…")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// A name the coordinator accepts for a worker or an account: 1 to 64 of `A-Z a-z 0-9 . _ -`.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Makes a single-use enrollment token for `o.worker`, stored as its SHA-256.
pub async fn enroll(store: &Store, o: &EnrollOptions) -> Result<EnrollmentToken, CoordinatorError> {
    let token = tokens::new_token(tokens::ENROLL_PREFIX)
        .map_err(|e| CoordinatorError::Random(e.to_string()))?;
    let now = store.now();
    let expires_at = now.plus(o.ttl);
    store
        .coordinator()?
        .create_enrollment(NewEnrollment {
            token_sha256: tokens::sha256_hex(token.as_bytes()),
            worker_name: o.worker.clone(),
            account: o.account.clone(),
            kinds: o.kinds.clone(),
            created_at: now,
            expires_at,
        })
        .await?;
    Ok(EnrollmentToken { token, expires_at })
}

/// Revokes the worker whose id or name is `who`; returns the ids revoked.
pub async fn revoke(store: &Store, who: &str) -> Result<Vec<String>, CoordinatorError> {
    Ok(store
        .coordinator()?
        .revoke(who.to_owned(), store.now())
        .await?)
}

/// The coordinator's shared state, for every request.
pub(crate) struct Shared {
    pub store: Store,
    pub config: Config,
    pub origin: String,
    pub metrics: metrics::Metrics,
    pub limits: limits::Gates,
    pub notify: ws::Notifier,
    /// Sessions a claim may know without a look-up (see [`auth::Sessions`]).
    pub sessions: auth::Sessions,
    /// Where the jobs it handed out were claimed from (see [`origins::Origins`]).
    pub origins: origins::Origins,
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// The store's id, part of every idempotency key an effect is handed.
    pub store_id: String,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

pub(crate) type State = Arc<Shared>;
