//! The coordinator's HTTP side as a worker calls it: one TLS configuration (the CA file's
//! roots, else the platform's), no redirects, the session opened with the device key and
//! renewed at two thirds of its life (measured on the monotonic clock from when it was asked
//! for, from the coordinator's own times, never against this host's wall clock), and each
//! call's answer sorted into what is retried (no connection, 5xx, 429 after its
//! `Retry-After`), what stops the worker (401 revoked, 426), and what is the worker's bug
//! (any other 4xx: logged and counted, never retried).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use reqwest::{Method, StatusCode, header};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::time::Instant;

use super::RemoteConfig;
use super::identity::Identity;
use crate::error::StoreError;
use crate::protocol::{
    ChallengeAnswer, ChallengeRequest, PROTOCOL_HEADER, SessionAnswer, SessionRequest,
    parse_rfc3339, tokens,
};

/// A live session: its bearer token and when to renew it.
#[derive(Clone)]
pub(crate) struct Session {
    pub token: String,
    pub renew_at: Instant,
    pub protocol: i64,
    /// The coordinator's store id (part of every effect's idempotency key).
    pub store_id: Option<String>,
    /// What the coordinator said it can do beyond the protocol version.
    pub capabilities: Vec<String>,
}

/// What every HTTP client of one remote store shares: settings, the device key, the
/// identity, the session, and the counters of refused calls.
pub(crate) struct Shared {
    pub config: RemoteConfig,
    pub tls: Arc<rustls::ClientConfig>,
    pub key: SigningKey,
    pub identity: Identity,
    pub session: tokio::sync::Mutex<Option<Session>>,
    /// Calls the coordinator refused as malformed or unauthorized (a bug in this worker).
    pub refused: AtomicU64,
    /// Transient failures retried.
    pub retried: AtomicU64,
}

/// An answer: its status and JSON body (`Null` for none).
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub body: Value,
}

impl Reply {
    /// The body's `error` code.
    pub(super) fn code(&self) -> String {
        self.body
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(64)
            .collect()
    }

    pub(super) fn parse<T: DeserializeOwned>(self, call: &str) -> Result<T, StoreError> {
        serde_json::from_value(self.body).map_err(|e| StoreError::Refused {
            call: call.to_owned(),
            status: self.status.as_u16(),
            code: format!("an answer this worker cannot read: {e}"),
        })
    }
}

/// A request's body.
#[derive(Clone)]
pub(crate) enum Payload<'a> {
    None,
    Json(&'a Value),
    Bytes(bytes::Bytes),
}

impl<'a> From<Option<&'a Value>> for Payload<'a> {
    fn from(body: Option<&'a Value>) -> Self {
        body.map_or(Payload::None, Payload::Json)
    }
}

/// The most redirects an artifact download follows.
const MAX_REDIRECTS: usize = 5;

/// An HTTP client over one runtime's connections (the loop's, or the lease keeper's).
#[derive(Clone)]
pub(crate) struct Client {
    http: reqwest::Client,
    pub shared: Arc<Shared>,
}

/// The one TLS configuration of a remote store: the CA file's roots, else the platform's.
pub(crate) fn tls_config(config: &RemoteConfig) -> Result<rustls::ClientConfig, StoreError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |reason: String| StoreError::RemoteTls { reason };
    let mut roots = rustls::RootCertStore::empty();
    match &config.ca_file {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(format!("cannot read the CA file {}: {e}", path.display())))?
                .collect::<Result<_, _>>()
                .map_err(|e| bad(format!("the CA file {} is not PEM: {e}", path.display())))?;
            if certs.is_empty() {
                return Err(bad(format!(
                    "the CA file {} holds no certificate",
                    path.display()
                )));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| bad(format!("a certificate of the CA file is unusable: {e}")))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for c in found.certs {
                let _ = roots.add(c);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

fn jitter(d: Duration) -> Duration {
    // Up to half again, so workers cut off together do not come back together.
    let spread = crate::time::duration_ms(d).max(1) / 2;
    let extra = (crate::retry::random_u64() % u64::try_from(spread.max(1)).unwrap_or(1)) as i64;
    d + Duration::from_millis(u64::try_from(extra).unwrap_or(0))
}

/// Back-off between retries: from 50 ms, doubling, at most 2 s, with jitter.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(50).saturating_mul(1u32 << attempt.min(6));
    jitter(base.min(Duration::from_secs(2)))
}

impl Client {
    pub(super) fn new(shared: Arc<Shared>) -> Result<Client, StoreError> {
        let http = reqwest::Client::builder()
            .use_preconfigured_tls((*shared.tls).clone())
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| StoreError::RemoteTls {
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Client { http, shared })
    }

    /// The path of effect `key` of `held`'s job, the key percent-encoded as one segment.
    pub(super) fn effect_path(&self, held: &crate::item::Held, key: &str) -> String {
        let job = crate::protocol::job_name(held.id, held.fence);
        match reqwest::Url::parse("http://x/") {
            Ok(mut u) => {
                if let Ok(mut p) = u.path_segments_mut() {
                    p.clear()
                        .extend(["v1", "jobs", job.as_str(), "effects", key]);
                }
                u.path().to_owned()
            }
            Err(_) => format!("/v1/jobs/{job}/effects/{key}"),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.shared.config.origin())
    }

    /// Sends one request; `None` for no answer at all (no connection, a timeout).
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Payload<'_>,
        bearer: Option<&str>,
        protocol: i64,
        wait: Duration,
    ) -> Result<Reply, String> {
        let mut req = self
            .http
            .request(method, self.url(path))
            .timeout(self.shared.config.request_timeout + wait)
            .header(PROTOCOL_HEADER, protocol.to_string());
        if let Some(token) = bearer {
            req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        match body {
            Payload::None => {}
            Payload::Json(body) => {
                req = req
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(serde_json::to_vec(body).unwrap_or_default());
            }
            Payload::Bytes(bytes) => {
                req = req
                    .header(header::CONTENT_TYPE, "application/octet-stream")
                    .body(bytes.clone());
            }
        }
        // The error's text names the URL and the cause, never a header.
        let res = req.send().await.map_err(|e| e.without_url().to_string())?;
        reply_of(res).await
    }

    /// A request made until it has an answer that is not transient, for at most the
    /// configured retry time. Without `bearer`, the call carries no session (enrollment,
    /// the challenge).
    pub(super) async fn request_unauthenticated(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply, StoreError> {
        let protocol = self.shared.config.protocol.1;
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            let out = self
                .send(
                    method.clone(),
                    path,
                    Payload::from(body),
                    None,
                    protocol,
                    Duration::ZERO,
                )
                .await;
            match self.transient(&out, started, &mut attempt).await {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return self.settle(out, path),
            }
        }
    }

    /// Whether `out` is worth retrying, and after how long; `None` when it is final or the
    /// retry time is spent.
    async fn transient(
        &self,
        out: &Result<Reply, String>,
        started: Instant,
        attempt: &mut u32,
    ) -> Option<Duration> {
        let wait = match out {
            Err(_) => backoff(*attempt),
            Ok(r) if r.status.is_server_error() => backoff(*attempt),
            Ok(r) if r.status == StatusCode::TOO_MANY_REQUESTS => {
                let after = r
                    .body
                    .get("retry_after")
                    .and_then(Value::as_u64)
                    .unwrap_or(1);
                jitter(Duration::from_secs(after.min(60)))
            }
            Ok(_) => return None,
        };
        if started.elapsed() + wait > self.shared.config.retry_for {
            return None;
        }
        *attempt += 1;
        self.shared.retried.fetch_add(1, Ordering::Relaxed);
        Some(wait)
    }

    /// The final word on an answer: unreachable, revoked, upgrade required, or the reply.
    fn settle(&self, out: Result<Reply, String>, path: &str) -> Result<Reply, StoreError> {
        let origin = self.shared.config.origin().to_owned();
        let reply = out.map_err(|cause| StoreError::Unreachable {
            origin: origin.clone(),
            cause,
        })?;
        if reply.status.is_server_error() || reply.status == StatusCode::TOO_MANY_REQUESTS {
            return Err(StoreError::Unreachable {
                origin,
                cause: format!("{} on {path}", reply.status),
            });
        }
        if reply.status == StatusCode::UNAUTHORIZED && reply.code() == "revoked" {
            return Err(StoreError::Revoked);
        }
        if reply.status == StatusCode::UPGRADE_REQUIRED {
            let range = |k: &str| {
                reply
                    .body
                    .get("supported")
                    .and_then(|s| s.get(k))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            return Err(StoreError::UpgradeRequired {
                min: range("min"),
                max: range("max"),
                speaks: self.shared.config.protocol,
            });
        }
        Ok(reply)
    }

    /// A call under the session (opened or renewed first when due); a 401 other than
    /// `revoked` drops the session and the call is made once more under a new one.
    pub(super) async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        wait: Duration,
    ) -> Result<Reply, StoreError> {
        self.request_with(method, path, Payload::from(body), wait)
            .await
    }

    /// [`Client::request`] with any body.
    async fn request_with(
        &self,
        method: Method,
        path: &str,
        body: Payload<'_>,
        wait: Duration,
    ) -> Result<Reply, StoreError> {
        let (reply, ()) = self
            .under_session(path, |session| {
                let (method, body) = (method.clone(), body.clone());
                async move {
                    let reply = self
                        .send(
                            method,
                            path,
                            body,
                            Some(&session.token),
                            session.protocol,
                            wait,
                        )
                        .await?;
                    Ok((reply, ()))
                }
            })
            .await?;
        Ok(reply)
    }

    /// Makes `attempt` under the session (opened or renewed first when due) until its
    /// answer is not transient, for at most the configured retry time; a 401 other than
    /// `revoked` drops the session and the attempt is made once more under a new one.
    async fn under_session<T, F, Fut>(
        &self,
        path: &str,
        attempt: F,
    ) -> Result<(Reply, T), StoreError>
    where
        T: Default,
        F: Fn(Session) -> Fut,
        Fut: Future<Output = Result<(Reply, T), String>>,
    {
        let started = Instant::now();
        let mut tries = 0;
        let mut reopened = false;
        loop {
            let session = self.session().await?;
            let token = session.token.clone();
            let (out, extra) = match attempt(session).await {
                Ok((reply, extra)) => (Ok(reply), extra),
                Err(e) => (Err(e), T::default()),
            };
            if let Some(wait) = self.transient(&out, started, &mut tries).await {
                tokio::time::sleep(wait).await;
                continue;
            }
            let reply = self.settle(out, path)?;
            if reply.status == StatusCode::UNAUTHORIZED && !reopened {
                reopened = true;
                self.drop_session(&token).await;
                continue;
            }
            return Ok((reply, extra));
        }
    }

    /// [`Client::request`] with a JSON body, expecting a 2xx; anything else but 409 is a
    /// refusal (logged and counted), 409 is `StoreError::StaleLease` for `held`.
    pub(super) async fn call<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: &B,
        wait: Duration,
    ) -> Result<Reply, StoreError> {
        let body = serde_json::to_value(body)?;
        self.request(method, path, Some(&body), wait).await
    }

    /// Uploads `bytes` to `path` (`PUT /v1/artifacts/{sha256}`) under the session.
    pub(super) async fn upload(&self, path: &str, bytes: Vec<u8>) -> Result<Reply, StoreError> {
        self.request_with(
            Method::PUT,
            path,
            Payload::Bytes(bytes::Bytes::from(bytes)),
            Duration::ZERO,
        )
        .await
    }

    /// Downloads `path` from the coordinator under the session, reading no more than
    /// `limit` bytes and one (so a longer answer shows as one); `None` for a 404. Follows
    /// at most [`MAX_REDIRECTS`] redirects: on the coordinator's origin with the bearer
    /// token, to any other origin without it (nor the protocol header); plain `http` only
    /// to a loopback address. Transient failures are retried as for any call.
    pub(super) async fn download(
        &self,
        path: &str,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let (reply, bytes) = self
            .under_session(path, |session| async move {
                self.follow(path, &session, limit).await
            })
            .await?;
        match reply.status {
            s if s.is_success() => Ok(Some(bytes)),
            StatusCode::NOT_FOUND => Ok(None),
            _ => Err(self.refused(path, &reply)),
        }
    }

    /// One download, its redirects followed: the final answer, and its bytes when it is a
    /// success.
    async fn follow(
        &self,
        path: &str,
        session: &Session,
        limit: u64,
    ) -> Result<(Reply, Vec<u8>), String> {
        let home = reqwest::Url::parse(&self.url(path)).map_err(|e| e.to_string())?;
        let mut url = home.clone();
        // Once the chain has left the coordinator's origin, nothing it says is the
        // coordinator's: no token goes anywhere again, and its refusals are no session's.
        let mut left = false;
        for _ in 0..=MAX_REDIRECTS {
            let mut req = self
                .http
                .get(url.clone())
                .timeout(self.shared.config.request_timeout);
            if !left {
                req = req
                    .header(PROTOCOL_HEADER, session.protocol.to_string())
                    .header(header::AUTHORIZATION, format!("Bearer {}", session.token));
            }
            let res = req.send().await.map_err(|e| e.without_url().to_string())?;
            let status = res.status();
            if status.is_redirection() {
                let location = res
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok());
                let Some(next) = location.and_then(|l| url.join(l).ok()) else {
                    return Ok(not_followed("a redirect without a readable location"));
                };
                let loopback = next
                    .host_str()
                    .is_some_and(|h| super::loopback(&format!("http://{h}:0")));
                if !(next.scheme() == "https" || (next.scheme() == "http" && loopback)) {
                    return Ok(not_followed(
                        "a redirect off https (plain http only to a loopback address)",
                    ));
                }
                left |= next.origin() != home.origin();
                url = next;
                continue;
            }
            if status.is_success() {
                let bytes = read_upto(res, limit.saturating_add(1)).await?;
                return Ok((
                    Reply {
                        status,
                        body: Value::Null,
                    },
                    bytes,
                ));
            }
            if left {
                // Another host's trouble: a 5xx or 429 is retried like the coordinator's;
                // any other answer is that host's refusal (never "not stored", never a
                // reason to drop the session).
                if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                    return Err(format!("{status} from the artifact's host"));
                }
                return Ok(not_followed(&format!(
                    "the artifact's host answered {}",
                    status.as_u16()
                )));
            }
            return Ok((reply_of(res).await?, Vec::new()));
        }
        Ok(not_followed(&format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// Counts and logs a refusal that means this worker sent what it should not have.
    pub(super) fn refused(&self, path: &str, reply: &Reply) -> StoreError {
        self.shared.refused.fetch_add(1, Ordering::Relaxed);
        let code = reply.code();
        tracing::error!(call = %path, status = reply.status.as_u16(), code = %code, "the coordinator refused a call; not retried");
        StoreError::Refused {
            call: path.to_owned(),
            status: reply.status.as_u16(),
            code,
        }
    }

    /// The session, opened or renewed when due.
    pub(super) async fn session(&self) -> Result<Session, StoreError> {
        let mut slot = self.shared.session.lock().await;
        if let Some(s) = slot.as_ref()
            && Instant::now() < s.renew_at
        {
            return Ok(s.clone());
        }
        let fresh = self.open_session().await?;
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Forgets the session `token` (the coordinator no longer takes it).
    pub(super) async fn drop_session(&self, token: &str) {
        let mut slot = self.shared.session.lock().await;
        if slot.as_ref().is_some_and(|s| s.token == token) {
            *slot = None;
        }
    }

    /// Challenge, signature, session.
    async fn open_session(&self) -> Result<Session, StoreError> {
        let worker_id = self.shared.identity.worker_id.clone();
        let asked = Instant::now();
        let body = serde_json::to_value(ChallengeRequest {
            worker_id: worker_id.clone(),
        })?;
        let reply = self
            .request_unauthenticated(Method::POST, "/v1/session/challenge", Some(&body))
            .await?;
        if !reply.status.is_success() {
            return Err(self.refused("/v1/session/challenge", &reply));
        }
        let challenge: ChallengeAnswer = reply.parse("/v1/session/challenge")?;
        let nonce = tokens::unb64(&challenge.nonce).ok_or_else(|| StoreError::Refused {
            call: "/v1/session/challenge".to_owned(),
            status: 200,
            code: "a nonce that is not base64url".to_owned(),
        })?;
        let message = tokens::session_message(&worker_id, &nonce, self.shared.config.origin());
        let signature = self.shared.key.sign(&message);
        let body = serde_json::to_value(SessionRequest {
            worker_id,
            nonce: challenge.nonce.clone(),
            signature: tokens::b64(&signature.to_bytes()),
        })?;
        let reply = self
            .request_unauthenticated(Method::POST, "/v1/session", Some(&body))
            .await?;
        if !reply.status.is_success() {
            return Err(self.refused("/v1/session", &reply));
        }
        let session: SessionAnswer = reply.parse("/v1/session")?;
        // The session's life by the coordinator's clock alone: its end minus the moment the
        // challenge was made (the challenge's end less its 60 s).
        let life = match (
            parse_rfc3339(&session.expires_at),
            parse_rfc3339(&challenge.expires_at),
        ) {
            (Some(end), Some(challenge_end)) => {
                let made = challenge_end.as_millis() - 60_000;
                Duration::from_millis(u64::try_from(end.as_millis() - made).unwrap_or(0))
            }
            _ => Duration::from_secs(15 * 60),
        };
        Ok(Session {
            token: session.token,
            renew_at: asked + life.mul_f64(2.0 / 3.0),
            protocol: session.protocol,
            store_id: session.store_id,
            capabilities: session.capabilities,
        })
    }
}

/// The most of one coordinator answer read: a claim of 100 jobs with payloads of up to the
/// coordinator's 1 MiB JSON body each is ~100 MiB; anything past this is not read into
/// memory, whatever the answer (or something posing as the coordinator) says its length is.
const ANSWER_LIMIT: usize = 128 << 20;

/// `res`'s body, read chunk by chunk and refused past `limit` bytes (as no answer: the call
/// is retried, then unreachable; a claim's jobs then go back when their leases run out).
async fn read_capped(res: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    let too_big = || format!("the coordinator's answer is over {limit} bytes; not read further");
    if res
        .content_length()
        .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > limit))
    {
        return Err(too_big());
    }
    let bytes = read_upto(res, limit as u64 + 1).await?;
    if bytes.len() > limit {
        return Err(too_big());
    }
    Ok(bytes)
}

/// The coordinator's answer: its status and JSON body (`Null` for none or one that is not
/// JSON), read up to [`ANSWER_LIMIT`], with its `Retry-After` seconds as `retry_after`.
async fn reply_of(res: reqwest::Response) -> Result<Reply, String> {
    let status = res.status();
    let retry_after = res
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let bytes = read_capped(res, ANSWER_LIMIT).await?;
    let mut body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    if let (Some(s), Value::Object(map)) = (retry_after, &mut body) {
        map.insert("retry_after".to_owned(), Value::from(s));
    }
    Ok(Reply { status, body })
}

/// A download not followed further: final, never retried within the call, and neither the
/// coordinator's 401 nor its 404.
fn not_followed(why: &str) -> (Reply, Vec<u8>) {
    (
        Reply {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            body: serde_json::json!({ "error": why }),
        },
        Vec::new(),
    )
}

/// `res`'s body, at most `limit` bytes of it (the rest is not read).
async fn read_upto(mut res: reqwest::Response, limit: u64) -> Result<Vec<u8>, String> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(|e| e.without_url().to_string())? {
        let room = limit - bytes.len();
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= limit {
            break;
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::read_capped;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback server that keeps each request's head and answers by `route` (the
    /// request's path → the whole answer to write).
    async fn recording(
        route: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static,
    ) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        let route = Arc::new(route);
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let heads = Arc::clone(&kept);
                let route = Arc::clone(&route);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = sock.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                    heads.lock().expect("heads").push(head.to_ascii_lowercase());
                    let _ = sock.write_all(&route(&path)).await;
                });
            }
        });
        (format!("http://{addr}"), heads)
    }

    fn redirect(to: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
        .into_bytes()
    }

    fn ok(body: &[u8]) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    }

    /// A client of `origin` holding a session whose token is `token`.
    fn client(origin: &str, token: &str) -> super::Client {
        let dir = std::env::temp_dir();
        let config = super::RemoteConfig::new(origin, dir, "w")
            .retry_for(std::time::Duration::from_millis(200));
        let tls = Arc::new(super::tls_config(&config).expect("tls"));
        let shared = Arc::new(super::Shared {
            config,
            tls,
            key: ed25519_dalek::SigningKey::from_bytes(&[7; 32]),
            identity: super::Identity {
                worker_id: "w-1".to_owned(),
                account: "default".to_owned(),
                kinds: None,
                coordinator: origin.to_owned(),
            },
            session: tokio::sync::Mutex::new(Some(super::Session {
                token: token.to_owned(),
                renew_at: tokio::time::Instant::now() + std::time::Duration::from_secs(600),
                protocol: 1,
                store_id: None,
                capabilities: Vec::new(),
            })),
            refused: Default::default(),
            retried: Default::default(),
        });
        super::Client::new(shared).expect("client")
    }

    /// A download redirected to another origin is fetched there without the bearer token
    /// (and without the protocol header); one redirected on the coordinator's own origin
    /// keeps it; a redirect to plain http off loopback, or a chain past the limit, is not
    /// followed.
    #[tokio::test]
    async fn a_redirect_to_another_origin_drops_the_bearer_token() {
        let token = "scf_ses_THE-SESSION-TOKEN";
        // The home server's address, known once it is bound, for the hop that comes back.
        let home_at: Arc<Mutex<String>> = Arc::default();
        let back_to = Arc::clone(&home_at);
        let (other, other_heads) = recording(move |path| match path {
            "/away" => redirect(&format!(
                "{}/v1/artifacts/final-after-away",
                back_to.lock().expect("home").clone()
            )),
            "/missing" => {
                b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_vec()
            }
            _ => ok(b"blob bytes"),
        })
        .await;
        let to_other = format!("{other}/blob");
        let to_away = format!("{other}/away");
        let to_missing = format!("{other}/missing");
        let (home, home_heads) = recording(move |path| match path {
            "/v1/artifacts/back" => redirect(&to_away),
            "/v1/artifacts/gone" => redirect(&to_missing),
            "/v1/artifacts/final-after-away" => {
                b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_vec()
            }

            "/v1/artifacts/elsewhere" => redirect(&to_other),
            "/v1/artifacts/here" => redirect("/v1/artifacts/final"),
            "/v1/artifacts/final" => ok(b"home bytes"),
            "/v1/artifacts/insecure" => redirect("http://example.com/blob"),
            "/v1/artifacts/loop" => redirect("/v1/artifacts/loop"),
            _ => {
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()
            }
        })
        .await;
        *home_at.lock().expect("home") = home.clone();
        let c = client(&home, token);

        let got = c
            .download("/v1/artifacts/elsewhere", 100)
            .await
            .expect("fetched");
        assert_eq!(got.as_deref(), Some(&b"blob bytes"[..]));
        let there = other_heads.lock().expect("heads").clone();
        assert_eq!(there.len(), 1);
        assert!(!there[0].contains("authorization"), "{}", there[0]);
        assert!(
            !there[0].contains(&token.to_ascii_lowercase()),
            "{}",
            there[0]
        );
        assert!(!there[0].contains("scaffold-protocol"), "{}", there[0]);
        let first = home_heads.lock().expect("heads")[0].clone();
        assert!(first.contains(&format!(
            "authorization: bearer {}",
            token.to_ascii_lowercase()
        )));

        let got = c
            .download("/v1/artifacts/here", 100)
            .await
            .expect("fetched");
        assert_eq!(got.as_deref(), Some(&b"home bytes"[..]));
        let last = home_heads
            .lock()
            .expect("heads")
            .last()
            .cloned()
            .unwrap_or_default();
        assert!(last.starts_with("get /v1/artifacts/final"), "{last}");
        assert!(
            last.contains("authorization: bearer"),
            "same origin keeps the token"
        );

        // Read no further than the limit and one.
        let got = c.download("/v1/artifacts/final", 3).await.expect("fetched");
        assert_eq!(got.as_deref(), Some(&b"home"[..]));

        assert_eq!(
            c.download("/v1/artifacts/missing", 100)
                .await
                .expect("a 404"),
            None
        );
        for refused in [
            "/v1/artifacts/insecure",
            "/v1/artifacts/loop",
            "/v1/artifacts/back",
            "/v1/artifacts/gone",
        ] {
            let err = c.download(refused, 100).await.expect_err(refused);
            assert!(!err.to_string().contains(token), "{err}");
            // Final at once: not retried within the call.
            let asked = home_heads
                .lock()
                .expect("heads")
                .iter()
                .filter(|h| h.starts_with(&format!("get {refused} ")))
                .count();
            // (the loop is followed 5 times in its one call)
            let once = if refused.ends_with("loop") { 6 } else { 1 };
            assert_eq!(asked, once, "{refused} asked {asked} times");
        }
        // Sent away and back: the token never goes out again once the chain left.
        let back: Vec<String> = home_heads
            .lock()
            .expect("heads")
            .iter()
            .filter(|h| h.starts_with("get /v1/artifacts/final-after-away"))
            .cloned()
            .collect();
        assert_eq!(back.len(), 1, "{back:?}");
        assert!(!back[0].contains("authorization"), "{}", back[0]);
        // A 401 off the coordinator's origin is no reason to drop the session.
        assert_eq!(c.session().await.expect("session").token, token);
    }

    /// A loopback server answering every request with `head` then `chunks` chunked
    /// (no length said) or, with `length`, as one body of that declared length.
    async fn answer(chunks: usize, length: Option<usize>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = sock.read(&mut buf).await;
                let _ = match length {
                    Some(n) => {
                        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {n}\r\n\r\n");
                        sock.write_all(&[head.into_bytes(), vec![b'7'; n]].concat())
                            .await
                    }
                    None => {
                        let mut out =
                            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
                        for _ in 0..chunks {
                            out.extend_from_slice(b"200\r\n");
                            out.extend_from_slice(&[b'7'; 512]);
                            out.extend_from_slice(b"\r\n");
                        }
                        out.extend_from_slice(b"0\r\n\r\n");
                        sock.write_all(&out).await
                    }
                };
            }
        });
        format!("http://{addr}/")
    }

    /// An answer past the limit is refused, its length declared or not; one at the limit is
    /// read whole.
    #[tokio::test]
    async fn an_answer_past_the_limit_is_not_read() {
        let get = |url: String| async move { reqwest::get(url).await.expect("answer") };
        let declared = get(answer(0, Some(4096)).await).await;
        assert!(read_capped(declared, 1024).await.is_err());
        let chunked = get(answer(8, None).await).await;
        let err = read_capped(chunked, 1024).await.expect_err("refused");
        assert!(err.contains("over 1024 bytes"), "{err}");
        let exact = get(answer(2, None).await).await;
        assert_eq!(read_capped(exact, 1024).await.expect("read").len(), 1024);
    }
}
