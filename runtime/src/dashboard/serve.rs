//! Binding, the routes, the headers every answer carries, and serving (the coordinator's
//! accept loop: HTTP/1.1, a deadline on each request's headers, TLS when given).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State as AxState};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::live::Live;
use super::{Config, DashboardError, actions, pages, view};
use crate::store::Store;

/// The Content-Security-Policy of every answer: nothing but this origin's own script,
/// stylesheet, images and event stream; no inline script or style, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What every request shares.
pub(super) struct Shared {
    pub store: Store,
    pub config: Config,
    pub env: minijinja::Environment<'static>,
    pub live: Arc<Live>,
    /// The origins a state-changing request may come from (`Origin`).
    pub origins: Vec<String>,
    /// The `Host` values answered (anything else: a DNS-rebinding page, refused).
    pub hosts: Vec<String>,
    /// Whether the session cookie is `Secure` (TLS, or an https public URL).
    pub secure: bool,
    pub stop: watch::Receiver<bool>,
}

pub(super) type State = Arc<Shared>;

/// A dashboard bound to its address, ready to run.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
    tls: Option<TlsAcceptor>,
    shared: State,
    stop: watch::Sender<bool>,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

pub(super) async fn bind(store: Store, config: Config) -> Result<Bound, DashboardError> {
    store.require_migrated().await?;
    store.dashboard()?;
    if config.tls.is_none() && !config.listen.ip().is_loopback() {
        return Err(DashboardError::NotLoopback {
            addr: config.listen,
        });
    }
    let public =
        match &config.public_url {
            Some(url) => Some(crate::protocol::origin_of(url).map_err(|reason| {
                DashboardError::PublicUrl {
                    url: url.clone(),
                    reason,
                }
            })?),
            None => None,
        };
    let tls = match &config.tls {
        Some((cert, key)) => Some(crate::coordinator::serve_tls_acceptor(cert, key)?),
        None => None,
    };
    let listener =
        TcpListener::bind(config.listen)
            .await
            .map_err(|source| DashboardError::Listen {
                addr: config.listen,
                source,
            })?;
    let addr = listener
        .local_addr()
        .map_err(|source| DashboardError::Listen {
            addr: config.listen,
            source,
        })?;
    if addr.ip().is_unspecified() && public.is_none() {
        return Err(DashboardError::PublicUrl {
            url: String::new(),
            reason: "a dashboard on a wildcard address answers only to its public URL: give --dashboard-public-url",
        });
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut hosts = vec![addr.to_string()];
    if addr.ip().is_loopback() {
        hosts.push(format!("localhost:{}", addr.port()));
    }
    let mut origins: Vec<String> = hosts.iter().map(|h| format!("{scheme}://{h}")).collect();
    let mut secure = tls.is_some();
    if let Some(origin) = public {
        // Browsers leave a default port out of `Host` and `Origin`.
        let origin = origin
            .strip_suffix(":443")
            .filter(|o| o.starts_with("https://"))
            .or_else(|| {
                origin
                    .strip_suffix(":80")
                    .filter(|o| o.starts_with("http://"))
            })
            .map_or(origin.clone(), str::to_owned);
        secure |= origin.starts_with("https://");
        if let Some((_, host)) = origin.split_once("://") {
            hosts.push(host.to_owned());
        }
        origins.push(origin);
    }
    let (stop, stop_rx) = watch::channel(false);
    let shared = Arc::new(Shared {
        env: view::environment()?,
        live: Arc::new(Live::new()),
        store,
        config,
        origins,
        hosts,
        secure,
        stop: stop_rx,
    });
    Ok(Bound {
        listener,
        addr,
        tls,
        shared,
        stop,
    })
}

impl Bound {
    /// The address it listens on (the port a `:0` listen got).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a browser on this host opens.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/", self.addr)
    }

    /// Serves until `shutdown` resolves: event streams end at once, open requests within
    /// the grace.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), DashboardError> {
        let Bound {
            listener,
            addr,
            tls,
            shared,
            stop,
        } = self;
        if tls.is_none() {
            tracing::info!(%addr, "dashboard serving plain HTTP on a loopback address");
        }
        tracing::info!(%addr, "dashboard listening");
        let poller = tokio::spawn(Arc::clone(&shared.live).run(
            shared.store.clone(),
            shared.config.poll,
            shared.stop.clone(),
        ));
        let app = router(Arc::clone(&shared));
        let mut connections = crate::coordinator::serve_accept_until(
            listener,
            tls,
            app,
            shared.stop.clone(),
            shutdown,
        )
        .await;
        let _ = stop.send(true);
        let drained = tokio::time::timeout(shared.config.shutdown_grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!("dashboard connections still open after the shutdown grace were cut");
        }
        poller.abort();
        Ok(())
    }
}

fn router(s: State) -> Router {
    Router::new()
        .route("/", get(pages::lanes))
        .route("/items", get(pages::items))
        .route("/items/{id}", get(pages::item))
        .route("/workers", get(pages::workers))
        .route("/outbox", get(pages::outbox))
        .route("/events", get(events))
        .route("/login", get(pages::login).post(actions::login))
        .route("/logout", post(actions::logout))
        .route("/items/{id}/{action}", post(actions::item))
        .route("/kinds/retry-dead", post(actions::retry_dead))
        .route("/signal", post(actions::signal))
        .route("/workers/drain", post(actions::drain))
        .route("/assets/app.css", get(css))
        .route("/assets/app.js", get(js))
        .route("/assets/icon.svg", get(icon))
        .route("/favicon.ico", get(icon))
        .fallback(|AxState(s): AxState<State>| async move {
            pages::error(&s, StatusCode::NOT_FOUND, "There is no such page.")
        })
        .layer(middleware::from_fn_with_state(Arc::clone(&s), around))
        .with_state(s)
}

/// Around every request: a `Host` this dashboard answers to (else 421: a page on another
/// site that resolved its name to this address reads nothing), and the headers a scanner
/// expects on every answer.
async fn around(AxState(s): AxState<State>, req: Request, next: Next) -> Response {
    let host_ok = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| {
            s.hosts
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(h))
        });
    let started = std::time::Instant::now();
    let mut response = if host_ok {
        next.run(req).await
    } else {
        (
            StatusCode::MISDIRECTED_REQUEST,
            "this dashboard answers only to its own address\n",
        )
            .into_response()
    };
    let h = response.headers_mut();
    // How long the answer took to make (what benches/dashboard.sh reads; an SSE stream's
    // is the time to its first byte).
    if let Ok(v) = HeaderValue::from_str(&format!(
        "app;dur={:.2}",
        started.elapsed().as_secs_f64() * 1000.0
    )) {
        h.insert("server-timing", v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null`
    // with a form's POST, and the same-origin check would refuse every sign-in and action.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "permissions-policy",
        HeaderValue::from_static("camera=(), microphone=(), geolocation=()"),
    );
    if s.secure {
        h.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn events(AxState(s): AxState<State>) -> Response {
    s.live.events(s.stop.clone()).into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/app.css"))
}

async fn js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    )
}

async fn icon() -> Response {
    asset("image/svg+xml", include_str!("assets/icon.svg"))
}
