//! The worker's end of `/v1/ws`: presence (its lanes, sent on connect and whenever they
//! change) and the coordinator's notices (`work_available` wakes that lane's claimer,
//! `drain`, `upgrade_required`, `revoked`). A claim never rides it. A cut socket is made
//! again with back-off and jitter; every lane is woken when it comes back (work may have
//! come while it was down); an expired session is renewed first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::client::{Client, backoff};
use crate::error::StoreError;
use crate::protocol::PROTOCOL_HEADER;

/// What the coordinator last said of this worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    Working = 0,
    Drain = 1,
    UpgradeRequired = 2,
    Revoked = 3,
}

/// The notices of one remote store, shared by its socket task and its callers.
#[derive(Debug, Default)]
pub(crate) struct Notices {
    lanes: Mutex<BTreeMap<String, Arc<Notify>>>,
    announced: Mutex<BTreeSet<String>>,
    standing: AtomicU8,
    /// Woken on every change of standing.
    pub changed: Notify,
    /// Woken when the coordinator has recorded this worker's leaving.
    pub left: Notify,
    /// Frames to send (presence, leaving).
    out: Mutex<Option<mpsc::UnboundedSender<Value>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Notices {
    /// `lane`'s wake-up (one permit kept: a notice before the claimer waits is not lost).
    pub(super) fn lane(&self, lane: &str) -> Arc<Notify> {
        Arc::clone(lock(&self.lanes).entry(lane.to_owned()).or_default())
    }

    pub(super) fn standing(&self) -> Standing {
        match self.standing.load(Ordering::SeqCst) {
            1 => Standing::Drain,
            2 => Standing::UpgradeRequired,
            3 => Standing::Revoked,
            _ => Standing::Working,
        }
    }

    /// Raises the standing (never lowers it: a drain heard stays heard).
    pub(super) fn raise(&self, s: Standing) {
        let prev = self.standing.fetch_max(s as u8, Ordering::SeqCst);
        if prev < s as u8 {
            self.changed.notify_waiters();
            // A claimer waiting for work looks at the standing when woken.
            for n in lock(&self.lanes).values() {
                n.notify_one();
            }
        }
    }

    /// Announces `lanes` (sent now when connected, and on every reconnect).
    pub(super) fn present(&self, lanes: &[String]) {
        let lanes: BTreeSet<String> = lanes.iter().cloned().collect();
        let changed = {
            let mut a = lock(&self.announced);
            let changed = *a != lanes;
            *a = lanes;
            changed
        };
        if changed {
            let _ = self.send(self.presence());
        }
    }

    fn presence(&self) -> Value {
        let lanes: Vec<String> = lock(&self.announced).iter().cloned().collect();
        json!({"type": "presence", "lanes": lanes})
    }

    /// Sends `frame` when the socket is up (dropped otherwise: presence is sent again on
    /// connect); whether it was.
    pub(super) fn send(&self, frame: Value) -> bool {
        lock(&self.out)
            .as_ref()
            .is_some_and(|tx| tx.send(frame).is_ok())
    }

    fn wake_all(&self) {
        for n in lock(&self.lanes).values() {
            n.notify_one();
        }
    }
}

/// Keeps the socket up until the store is dropped (`notices` has no other owner), the
/// worker is revoked, or the coordinator requires an upgrade.
pub(crate) async fn run(client: Client, notices: std::sync::Weak<Notices>) {
    let mut attempt = 0u32;
    loop {
        let Some(n) = notices.upgrade() else { return };
        if matches!(n.standing(), Standing::Revoked | Standing::UpgradeRequired) {
            return;
        }
        drop(n);
        match connect_once(&client, &notices).await {
            Ok(()) => attempt = 0,
            Err(StoreError::Revoked) => {
                if let Some(n) = notices.upgrade() {
                    tracing::error!("the coordinator revoked this worker");
                    n.raise(Standing::Revoked);
                }
                return;
            }
            Err(StoreError::UpgradeRequired { .. }) => {
                if let Some(n) = notices.upgrade() {
                    n.raise(Standing::UpgradeRequired);
                }
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "the coordinator's socket is down; connecting again");
                attempt = attempt.saturating_add(1);
            }
        }
        tokio::time::sleep(backoff(attempt)).await;
    }
}

/// One connection: open, announce, relay notices until it closes.
async fn connect_once(
    client: &Client,
    notices: &std::sync::Weak<Notices>,
) -> Result<(), StoreError> {
    let session = client.session().await?;
    let origin = client.shared.config.origin();
    let ws_url = match origin.strip_prefix("https://") {
        Some(rest) => format!("wss://{rest}/v1/ws"),
        None => format!("ws://{}/v1/ws", origin.trim_start_matches("http://")),
    };
    let unreachable = |cause: String| StoreError::Unreachable {
        origin: origin.to_owned(),
        cause,
    };
    let mut req = ws_url
        .as_str()
        .into_client_request()
        .map_err(|e| unreachable(e.to_string()))?;
    let bearer = format!("Bearer {}", session.token)
        .parse()
        .map_err(|_| unreachable("a session token that is not a header value".to_owned()))?;
    req.headers_mut().insert("authorization", bearer);
    req.headers_mut().insert(
        PROTOCOL_HEADER,
        session
            .protocol
            .to_string()
            .parse()
            .map_err(|_| unreachable("a bad protocol version".to_owned()))?,
    );
    let connector = tokio_tungstenite::Connector::Rustls(Arc::clone(&client.shared.tls));
    let (ws, _) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async_tls_with_config(req, None, true, Some(connector)),
    )
    .await
    .map_err(|_| unreachable("the socket did not open in 10 s".to_owned()))?
    .map_err(|e| match &e {
        tokio_tungstenite::tungstenite::Error::Http(r) if r.status() == 401 => {
            let revoked = r
                .body()
                .as_deref()
                .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                .is_some_and(|c| c == "revoked");
            if revoked {
                StoreError::Revoked
            } else {
                StoreError::Unreachable {
                    origin: origin.to_owned(),
                    cause: "the socket was refused its session".to_owned(),
                }
            }
        }
        other => unreachable(other.to_string()),
    })?;
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let Some(n) = notices.upgrade() else {
        return Ok(());
    };
    *lock(&n.out) = Some(tx);
    let hello = n.presence();
    // Work may have come while the socket was down.
    n.wake_all();
    drop(n);
    let text = |v: Value| Message::Text(v.to_string().into());
    sink.send(text(hello))
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    let mut ping = tokio::time::interval(Duration::from_secs(20));
    ping.tick().await;
    let result = loop {
        tokio::select! {
            msg = stream.next() => {
                let Some(n) = notices.upgrade() else { break Ok(()) };
                match msg {
                    None => break Err(unreachable("the socket closed".to_owned())),
                    Some(Err(e)) => break Err(unreachable(e.to_string())),
                    Some(Ok(Message::Text(t))) => {
                        match heard(&n, t.as_str()) {
                            Heard::Go => {}
                            Heard::SessionExpired => {
                                client.drop_session(&session.token).await;
                                break Err(unreachable("the session expired".to_owned()));
                            }
                            Heard::Stop(e) => break Err(e),
                        }
                    }
                    Some(Ok(Message::Close(_))) => break Err(unreachable("the coordinator closed the socket".to_owned())),
                    Some(Ok(_)) => {}
                }
            }
            frame = rx.recv() => match frame {
                Some(f) => {
                    if let Err(e) = sink.send(text(f)).await {
                        break Err(unreachable(e.to_string()));
                    }
                }
                None => break Ok(()),
            },
            _ = ping.tick() => {
                if let Err(e) = sink.send(text(json!({"type": "ping"}))).await {
                    break Err(unreachable(e.to_string()));
                }
            }
        }
    };
    if let Some(n) = notices.upgrade() {
        *lock(&n.out) = None;
    }
    let _ = sink.send(Message::Close(None)).await;
    result
}

enum Heard {
    Go,
    SessionExpired,
    Stop(StoreError),
}

/// What one notice means.
fn heard(n: &Notices, text: &str) -> Heard {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "work_available" => {
            if let Some(lane) = v.get("lane").and_then(Value::as_str) {
                n.lane(lane).notify_one();
            }
            Heard::Go
        }
        "drain" => {
            tracing::info!("the coordinator asked this worker to drain");
            n.raise(Standing::Drain);
            Heard::Go
        }
        "upgrade_required" => {
            n.raise(Standing::UpgradeRequired);
            Heard::Stop(StoreError::UpgradeRequired {
                min: v
                    .pointer("/supported/min")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                max: v
                    .pointer("/supported/max")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                speaks: (0, 0),
            })
        }
        "left" => {
            n.left.notify_waiters();
            Heard::Go
        }
        "revoked" => Heard::Stop(StoreError::Revoked),
        "session_expired" => Heard::SessionExpired,
        "unsupported" => {
            tracing::error!(notice = %crate::protocol::inert(text), "the coordinator did not understand a socket frame of this worker");
            Heard::Go
        }
        _ => Heard::Go,
    }
}
