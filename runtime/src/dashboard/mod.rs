//! The queue dashboard (README.md#the-dashboard): what an operator woken at night opens
//! first, served by `scaffold queue serve --dashboard ADDR` on its own listener.
//!
//! - Pages: lanes (counts per state, oldest available age, the last hour's completions and
//!   failures), items (by state, lane, kind; found by id or dedupe key; keyset pages newest
//!   first), one item (payload redacted, every attempt, checkpoint, effects, artifacts, lease
//!   holder and expiry, why it is not running, the operators' actions on it), workers, and
//!   the outbox with the latest actions. Server-rendered HTML (templates auto-escaped), one
//!   stylesheet and one script shipped in the binary, no inline script: a strict
//!   Content-Security-Policy is sent with every answer.
//! - Live: one poller reads [`Store::status`] each second for every browser; `/events` (SSE)
//!   sends it when it changes, and the script swaps the page's live region.
//! - Read-only without signing in. An operator signs in with the token
//!   [`add_operator`] printed (stored as its SHA-256) into an HttpOnly, SameSite=Strict
//!   cookie; each action needs the session's CSRF token and a same-origin request, is capped
//!   at [`ACTION_CAP`] items, answers with what changed and is recorded with the operator's
//!   name.
//! - Counts are the maintained counters (the same query layer as `scaffold queue status`),
//!   never a `count(*)` over the table.

mod actions;
mod auth;
mod live;
mod pages;
mod serve;
mod view;
mod why;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use auth::{OPERATOR_PREFIX, add_operator};
pub use serve::Bound;

use crate::error::StoreError;
use crate::store::Store;

/// The most items one action changes.
pub const ACTION_CAP: usize = 10_000;

/// A dashboard's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it listens: a loopback address unless `tls` is given.
    pub listen: SocketAddr,
    /// The TLS certificate chain and key (PEM); plain HTTP on loopback when `None`.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The origin a browser reaches it at when not its own address (a proxy's
    /// `https://ops.example.com`): its host is accepted in `Host`, and an `https` one marks
    /// the session cookie `Secure`.
    pub public_url: Option<String>,
    /// Show payloads, checkpoints and effect outputs whole; otherwise their size and
    /// top-level keys only.
    pub show_payloads: bool,
    /// An operator's signed-in session's life (12 hours).
    pub session_ttl: Duration,
    /// How often the live poller reads the queue's status (1 s).
    pub poll: Duration,
    /// How long a graceful shutdown waits for open requests (SSE streams end at once).
    pub shutdown_grace: Duration,
}

impl Config {
    /// The defaults, listening on `listen` over plain HTTP.
    pub fn new(listen: SocketAddr) -> Self {
        Config {
            listen,
            tls: None,
            public_url: None,
            show_payloads: false,
            session_ttl: Duration::from_secs(12 * 3600),
            poll: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Why the dashboard cannot start.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error(
        "the dashboard serves plain HTTP on a loopback address only, not {addr} (reach it through an SSH tunnel or a TLS proxy, or give it a TLS certificate and key)"
    )]
    NotLoopback { addr: SocketAddr },
    #[error("the dashboard's public URL `{url}` is not usable: {reason}")]
    PublicUrl { url: String, reason: &'static str },
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] crate::coordinator::CoordinatorError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("a dashboard template did not render: {0}")]
    Template(String),
}

/// Binds the dashboard over `store` (which must be migrated and own its database).
pub async fn bind(store: Store, config: Config) -> Result<Bound, DashboardError> {
    serve::bind(store, config).await
}
