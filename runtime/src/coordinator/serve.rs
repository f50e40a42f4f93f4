//! Binding, the routes, and serving: plain HTTP on loopback or TLS (rustls), HTTP/1.1 with
//! upgrades for the WebSocket, a header-read deadline against slow clients, and a graceful
//! shutdown — the listener closes, long-polls answer with what they have, sockets close,
//! open requests finish within the grace; held jobs keep their leases.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{
    ConnectInfo, DefaultBodyLimit, MatchedPath, RawQuery, Request, State as AxState,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::Service;

use super::error::{ApiError, CoordinatorError, Refusal};
use super::jobs::effect_fence;
use super::{Config, PROTOCOL_HEADER, Shared, State, Transport, limits, metrics, origin_of, ws};
use crate::store::Store;

/// How long a client may take to send a request's headers, and a TLS handshake.
const HEADER_DEADLINE: Duration = Duration::from_secs(10);

/// A coordinator bound to its address, ready to run.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
    tls: Option<TlsAcceptor>,
    origin: String,
    store: Store,
    config: Config,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("addr", &self.addr)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

pub(crate) async fn bind(store: Store, config: Config) -> Result<Bound, CoordinatorError> {
    store.require_migrated().await?;
    let tls = match &config.transport {
        Transport::Tls { cert, key, .. } => Some(tls_acceptor(cert, key)?),
        Transport::InsecureLoopback => None,
    };
    let listener =
        TcpListener::bind(config.listen)
            .await
            .map_err(|source| CoordinatorError::Listen {
                addr: config.listen,
                source,
            })?;
    let addr = listener
        .local_addr()
        .map_err(|source| CoordinatorError::Listen {
            addr: config.listen,
            source,
        })?;
    let origin = match &config.transport {
        Transport::Tls { public_url, .. } => {
            origin_of(public_url).map_err(|reason| CoordinatorError::PublicUrl {
                url: public_url.clone(),
                reason,
            })?
        }
        Transport::InsecureLoopback => match &config.loopback_origin {
            Some(url) => {
                let origin = origin_of(url).map_err(|reason| CoordinatorError::PublicUrl {
                    url: url.clone(),
                    reason,
                })?;
                let host = origin
                    .trim_start_matches("http://")
                    .rsplit_once(':')
                    .map_or("", |(h, _)| h)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                if !origin.starts_with("http://")
                    || !host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
                {
                    return Err(CoordinatorError::PublicUrl {
                        url: url.clone(),
                        reason: "a loopback origin is http://127.0.0.1:PORT or http://[::1]:PORT",
                    });
                }
                origin
            }
            None => format!("http://{addr}"),
        },
    };
    Ok(Bound {
        listener,
        addr,
        tls,
        origin,
        store,
        config,
    })
}

pub(crate) fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, CoordinatorError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let file_error = |what: &'static str, path: &Path| {
        let path = path.to_owned();
        move |e: rustls_pki_types::pem::Error| CoordinatorError::TlsFile {
            what,
            path,
            message: e.to_string(),
        }
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(file_error("certificate", cert))?
        .collect::<Result<_, _>>()
        .map_err(file_error("certificate", cert))?;
    if certs.is_empty() {
        return Err(CoordinatorError::TlsFile {
            what: "certificate",
            path: cert.to_owned(),
            message: "it holds no certificate".to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(file_error("key", key))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| CoordinatorError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| CoordinatorError::Tls(e.to_string()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

impl Bound {
    /// The address it listens on (the port a `:0` listen got).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The origin sessions are signed for.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Serves until `shutdown` resolves, then shuts down gracefully.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), CoordinatorError> {
        let Bound {
            listener,
            addr,
            tls,
            origin,
            store,
            config,
        } = self;
        let store_id = store.store_id().await?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let grace = config.shutdown_grace;
        let shared: State = Arc::new(Shared {
            limits: limits::Gates::new(config.limits.per_address_per_minute, config.limits.uploads),
            metrics: metrics::Metrics::default(),
            notify: ws::Notifier::default(),
            sessions: super::auth::Sessions::default(),
            origins: super::origins::Origins::default(),
            shutdown: stop_rx,
            store,
            config,
            origin,
            store_id,
        });
        if tls.is_none() {
            tracing::warn!(%addr, "serving plain HTTP on a loopback address (--insecure-loopback): nothing off this host can reach it");
        }
        tracing::info!(%addr, origin = %shared.origin, "coordinator listening");
        let sweeper = tokio::spawn(super::sweep::run(Arc::clone(&shared)));
        let app = router(Arc::clone(&shared));
        let mut connections =
            accept_until(listener, tls, app, shared.shutdown.clone(), shutdown).await;
        tracing::info!("coordinator shutting down: answering long-polls, closing sockets");
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!("connections still open after the shutdown grace were cut");
        }
        sweeper.abort();
        Ok(())
    }
}

/// Accepts connections on `listener` (through `tls` when given) and serves `app` on each,
/// until `shutdown` resolves; returns the connections still open (each finishes its open
/// request and closes once `stop` is set). The coordinator and the dashboard share it.
pub(crate) async fn accept_until(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    stop: tokio::sync::watch::Receiver<bool>,
    shutdown: impl Future<Output = ()> + Send,
) -> tokio::task::JoinSet<()> {
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: wait a little, keep serving.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            () = &mut shutdown => break,
        };
        // Answers go out as written: a worker waits on each one (no Nagle delay behind an
        // unacknowledged segment).
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let service = tower::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                let mut app = app.clone();
                async move { app.call(req.map(Body::new)).await }
            });
            let service = TowerToHyperService::new(service);
            match tls {
                Some(tls) => {
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(HEADER_DEADLINE, tls.accept(stream)).await
                    {
                        connection(TokioIo::new(stream), service, stop).await;
                    }
                }
                None => connection(TokioIo::new(stream), service, stop).await,
            }
        });
    }
    connections
}

/// Serves one connection (HTTP/1.1 with upgrades, a deadline on each request's headers)
/// until it closes, or — once `stop` is set — until its open request is answered.
async fn connection<I, S>(io: I, service: S, mut stop: tokio::sync::watch::Receiver<bool>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming> + Send,
    S::Future: Send + 'static,
    S::ResBody: Send + 'static,
    <S::ResBody as hyper::body::Body>::Data: Send,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_DEADLINE);
    let conn = http.serve_connection(io, service).with_upgrades();
    tokio::pin!(conn);
    let stopping = tokio::select! {
        _ = conn.as_mut() => false,
        stopped = stop.wait_for(|s| *s) => { drop(stopped); true }
    };
    if stopping {
        conn.as_mut().graceful_shutdown();
        let _ = conn.await;
    }
}

fn router(s: State) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/enroll", post(enroll))
        .route("/v1/session/challenge", post(challenge))
        .route("/v1/session", post(session))
        .route("/v1/jobs/claim", post(claim))
        .route("/v1/jobs/complete", post(complete_batch))
        .route("/v1/jobs/heartbeat", post(heartbeat_batch))
        .route("/v1/jobs/{job}/heartbeat", post(heartbeat))
        .route("/v1/jobs/{job}/checkpoint", post(checkpoint))
        .route(
            "/v1/jobs/{job}/effects/{key}",
            get(effect_get).post(effect_post),
        )
        .route("/v1/jobs/{job}/complete", post(complete))
        .route("/v1/jobs/{job}/fail", post(fail))
        .route("/v1/jobs/{job}/park", post(park))
        .route("/v1/jobs/{job}/release", post(release))
        .route(
            "/v1/artifacts/{sha256}",
            put(put_artifact).get(get_artifact),
        )
        .route("/v1/ws", get(socket))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
        })
        .layer(middleware::from_fn_with_state(Arc::clone(&s), around))
        .layer(DefaultBodyLimit::disable())
        .with_state(s)
}

/// Around every request: the protocol header on `/v1/`, no caching of any answer (tokens
/// ride in bodies), and the metrics.
async fn around(AxState(s): AxState<State>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let needs_version = req.uri().path().starts_with("/v1/");
    let mut response = if needs_version && !req.headers().contains_key(PROTOCOL_HEADER) {
        ApiError::bad_request("protocol_missing").into_response()
    } else {
        next.run(req).await
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let refusal = response.extensions().get::<Refusal>().map(|r| r.0);
    s.metrics
        .request(&route, response.status().as_u16(), refusal);
    response
}

/// A JSON body, read to the limit.
async fn body(s: &Shared, body: Body) -> Result<Bytes, ApiError> {
    let limit = s.config.limits.json_body;
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let inner = e.into_inner();
        if inner
            .downcast_ref::<http_body_util::LengthLimitError>()
            .is_some()
        {
            ApiError::too_large("body_too_large", limit as u64)
        } else {
            ApiError::bad_request("body_unreadable")
        }
    })
}

fn reply(r: Result<(StatusCode, serde_json::Value), ApiError>) -> Response {
    match r {
        Ok((StatusCode::NO_CONTENT, _)) => StatusCode::NO_CONTENT.into_response(),
        Ok((status, v)) => (status, axum::Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn health(AxState(s): AxState<State>) -> Response {
    if *s.shutdown.borrow() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match s.store.schema_version().await {
        Ok(_) => (StatusCode::OK, "ok\n").into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response(),
    }
}

async fn metrics(AxState(s): AxState<State>) -> Response {
    let sessions = match s.store.coordinator() {
        Ok(c) => c.live_sessions(s.store.now()).await.unwrap_or(0),
        Err(_) => 0,
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(sessions, s.limits.sockets_open()),
    )
        .into_response()
}

async fn enroll(
    AxState(s): AxState<State>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    b: Body,
) -> Response {
    reply(async { s.enroll(peer.ip(), &headers, &body(&s, b).await?).await }.await)
}

async fn challenge(
    AxState(s): AxState<State>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    b: Body,
) -> Response {
    reply(async { s.challenge(peer.ip(), &headers, &body(&s, b).await?).await }.await)
}

async fn session(AxState(s): AxState<State>, headers: HeaderMap, b: Body) -> Response {
    reply(async { s.session(&headers, &body(&s, b).await?).await }.await)
}

async fn claim(AxState(s): AxState<State>, headers: HeaderMap, b: Body) -> Response {
    let claimed = async {
        let (a, known) = s.known_session(&headers).await?;
        s.claim(&a, known, &headers, &body(&s, b).await?).await
    }
    .await;
    match claimed {
        Ok(answer) => (StatusCode::OK, axum::Json(answer)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn complete_batch(AxState(s): AxState<State>, headers: HeaderMap, b: Body) -> Response {
    reply(
        async {
            let a = s.authenticate(&headers).await?;
            s.complete_batch(&a, &body(&s, b).await?).await
        }
        .await,
    )
}

async fn heartbeat_batch(AxState(s): AxState<State>, headers: HeaderMap, b: Body) -> Response {
    reply(
        async {
            let a = s.authenticate(&headers).await?;
            s.heartbeat_batch(&a, &body(&s, b).await?).await
        }
        .await,
    )
}

/// The `{job}` of a job route; a path axum could not decode is a typed 404.
type JobPath = Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>;

fn job_of(p: JobPath) -> Result<String, ApiError> {
    p.map(|p| p.0).map_err(|_| ApiError::not_found())
}

macro_rules! job_call {
    ($name:ident, $method:ident) => {
        async fn $name(
            AxState(s): AxState<State>,
            job: JobPath,
            headers: HeaderMap,
            b: Body,
        ) -> Response {
            reply(
                async {
                    let job = job_of(job)?;
                    let a = s.authenticate(&headers).await?;
                    s.$method(&a, &job, &body(&s, b).await?).await
                }
                .await,
            )
        }
    };
}

job_call!(heartbeat, heartbeat);
job_call!(checkpoint, checkpoint);
job_call!(complete, complete);
job_call!(fail, fail);
job_call!(park, park);
job_call!(release, release);

type EffectPath =
    Result<axum::extract::Path<(String, String)>, axum::extract::rejection::PathRejection>;

async fn effect_get(
    AxState(s): AxState<State>,
    path: EffectPath,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    reply(
        async {
            let (job, key) = path.map(|p| p.0).map_err(|_| ApiError::not_found())?;
            let a = s.authenticate(&headers).await?;
            let fence = effect_fence(query.as_deref())?;
            s.begin_effect(&a, &job, &key, fence).await
        }
        .await,
    )
}

async fn effect_post(
    AxState(s): AxState<State>,
    path: EffectPath,
    headers: HeaderMap,
    b: Body,
) -> Response {
    reply(
        async {
            let (job, key) = path.map(|p| p.0).map_err(|_| ApiError::not_found())?;
            let a = s.authenticate(&headers).await?;
            s.record_effect(&a, &job, &key, &body(&s, b).await?).await
        }
        .await,
    )
}

async fn put_artifact(
    AxState(s): AxState<State>,
    digest: JobPath,
    headers: HeaderMap,
    b: Body,
) -> Response {
    let r = async {
        let digest = job_of(digest)?;
        let a = s.authenticate(&headers).await?;
        s.put_artifact(&a, &digest, b).await
    }
    .await;
    r.unwrap_or_else(IntoResponse::into_response)
}

async fn get_artifact(AxState(s): AxState<State>, digest: JobPath, headers: HeaderMap) -> Response {
    let r = async {
        let digest = job_of(digest)?;
        let a = s.authenticate(&headers).await?;
        s.get_artifact(&a, &digest).await
    }
    .await;
    r.unwrap_or_else(IntoResponse::into_response)
}

async fn socket(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let r = async {
        let a = s.authenticate(&headers).await?;
        let upgrade = upgrade.map_err(|_| ApiError::bad_request("not_a_websocket"))?;
        let gate = s.limits.socket(&a.session_key)?;
        let limit = s.config.limits.socket_message;
        let shared = Arc::clone(&s);
        Ok::<_, ApiError>(
            upgrade
                .max_message_size(limit)
                .max_frame_size(limit)
                .on_upgrade(move |socket| ws::serve(shared, a, socket, gate)),
        )
    }
    .await;
    r.unwrap_or_else(IntoResponse::into_response)
}
