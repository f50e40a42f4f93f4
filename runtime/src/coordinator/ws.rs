//! `/v1/ws`: presence and notification only (`work_available`, `drain`, `upgrade_required`,
//! `revoked`); a claim never rides the socket. Unknown message types and fields are answered
//! `{"type": "unsupported", …}` and the socket is kept.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::broadcast;

use super::auth::Authed;
use super::limits::Held;
use super::wire::inert;
use super::{PROTOCOL, State};
use crate::item::WorkerState;

/// The most lanes one coordinator watches (a lane is a worker's word; this bounds what a
/// hostile one can make it watch).
const MAX_LANES: usize = 1_000;
/// The most lanes one socket subscribes.
const LANES_PER_SOCKET: usize = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Lane watchers and the broadcast of lanes with work; and when each worker was last
/// marked seen.
#[derive(Debug)]
pub(crate) struct Notifier {
    tx: broadcast::Sender<String>,
    watched: Mutex<HashSet<String>>,
    seen: Mutex<HashMap<String, (Instant, BTreeSet<String>)>>,
}

impl Default for Notifier {
    fn default() -> Self {
        Notifier {
            tx: broadcast::channel(1024).0,
            watched: Mutex::default(),
            seen: Mutex::default(),
        }
    }
}

impl Notifier {
    /// Records that `worker` works `lane`; returns its lanes when its presence is due to be
    /// written (at most once per `every`, or at once for a new lane).
    pub(crate) fn seen(&self, worker: &str, lane: &str, every: Duration) -> Option<Vec<String>> {
        let now = Instant::now();
        let mut seen = lock(&self.seen);
        if seen.len() > 100_000 {
            seen.retain(|_, (at, _)| now.duration_since(*at) < Duration::from_secs(3600));
        }
        let (at, lanes) = seen
            .entry(worker.to_owned())
            .or_insert_with(|| (now - every, BTreeSet::new()));
        let new_lane = lanes.insert(lane.to_owned());
        if new_lane || now.duration_since(*at) >= every {
            *at = now;
            return Some(lanes.iter().cloned().collect());
        }
        None
    }
}

/// Starts watching `lane` (once per coordinator): whenever it has due work, every socket
/// subscribed to it hears `work_available` — at once on PostgreSQL, whose enqueues notify
/// (and again at most once a second while work waits); elsewhere within a quarter second,
/// and every quarter second while work waits.
pub(crate) fn watch(s: &State, lane: &str) {
    {
        let mut w = lock(&s.notify.watched);
        if w.contains(lane) || w.len() >= MAX_LANES {
            return;
        }
        w.insert(lane.to_owned());
    }
    let s = Arc::clone(s);
    let lane = lane.to_owned();
    tokio::spawn(async move {
        let notified = s.store.backend_name() == "postgres";
        let step = if notified {
            Duration::from_secs(5)
        } else {
            Duration::from_millis(250)
        };
        let mut shutdown = s.shutdown.clone();
        let mut last: Option<Instant> = None;
        loop {
            if *shutdown.borrow() {
                return;
            }
            let t0 = Instant::now();
            tokio::select! {
                () = s.store.wait_for_work(&lane, step) => {}
                _ = shutdown.changed() => return,
            }
            let woken = notified && t0.elapsed() < step;
            let quiet = last.is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
            // A polled store is looked at, and due work announced, every step (a quarter
            // second): holding notices to one a second while work waited could not tell
            // new work from old, so an item enqueued within a second of the last notice
            // waited out that second (~1 s from enqueue to start on SQLite).
            if notified && !(woken || quiet) {
                continue;
            }
            let due = match s.store.coordinator() {
                Ok(c) => c.has_due(lane.clone(), None, None, s.store.now()).await,
                Err(e) => Err(e),
            };
            match due {
                Ok(true) => {
                    last = Some(Instant::now());
                    let _ = s.notify.tx.send(lane.clone());
                }
                Ok(false) => last = None,
                Err(e) => tracing::warn!(error = %e, lane = %lane, "watching a lane failed"),
            }
        }
    });
}

/// What a worker may send.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientFrame {
    /// Its lanes (subscribed for `work_available`), and that it is there.
    Presence {
        lanes: Vec<String>,
    },
    Ping,
    /// The worker drains (SIGTERM) or has drained and goes (OFFLINE).
    Leaving {
        state: String,
    },
}

/// Serves one worker's socket until it closes, the worker is revoked, or the coordinator
/// shuts down.
pub(crate) async fn serve(s: State, a: Authed, mut socket: WebSocket, _gate: Held) {
    let mut rx = s.notify.tx.subscribe();
    let mut lanes: BTreeSet<String> = BTreeSet::new();
    let mut shutdown = s.shutdown.clone();
    // Presence, and a look for a drain or a revocation: well inside three leases.
    let every = (s.config.lease / 3)
        .clamp(Duration::from_millis(200), Duration::from_secs(5))
        .min(s.config.sweep_interval.max(Duration::from_millis(200)) * 5);
    let mut tick = tokio::time::interval(every);
    let mut draining_said = false;
    loop {
        let out = tokio::select! {
            msg = socket.recv() => match msg {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(Message::Text(text))) => frame(&s, &a, &mut lanes, text.as_str()).await,
                Some(Ok(Message::Binary(_))) => Some(json!({"type": "unsupported", "reason": "binary"})),
                Some(Ok(_)) => None,
            },
            lane = rx.recv() => match lane {
                Ok(lane) if lanes.contains(&lane) => Some(json!({"type": "work_available", "lane": lane})),
                _ => None,
            },
            _ = tick.tick() => {
                match look(&s, &a, &lanes).await {
                    Look::Revoked => {
                        let _ = send(&mut socket, json!({"type": "revoked"})).await;
                        break;
                    }
                    Look::Expired => {
                        let _ = send(&mut socket, json!({"type": "session_expired"})).await;
                        break;
                    }
                    Look::State(WorkerState::Draining) if !draining_said => {
                        draining_said = true;
                        Some(json!({"type": "drain"}))
                    }
                    Look::State(WorkerState::UpgradeRequired) => {
                        let _ = send(&mut socket, upgrade_required()).await;
                        break;
                    }
                    _ => None,
                }
            }
            _ = shutdown.changed() => break,
        };
        if let Some(out) = out
            && send(&mut socket, out).await.is_err()
        {
            break;
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}

fn upgrade_required() -> serde_json::Value {
    json!({"type": "upgrade_required", "supported": {"min": PROTOCOL.0, "max": PROTOCOL.1}})
}

async fn send(socket: &mut WebSocket, v: serde_json::Value) -> Result<(), axum::Error> {
    socket.send(Message::Text(v.to_string().into())).await
}

/// One frame from the worker; the answer, if any.
async fn frame(
    s: &State,
    a: &Authed,
    lanes: &mut BTreeSet<String>,
    text: &str,
) -> Option<serde_json::Value> {
    let frame: ClientFrame = match serde_json::from_str(text) {
        Ok(f) => f,
        Err(e) => {
            let msg = e.to_string();
            let got = msg
                .strip_prefix("unknown variant `")
                .or_else(|| msg.strip_prefix("unknown field `"))
                .and_then(|r| r.split_once('`'))
                .map(|(g, _)| inert(g));
            return Some(json!({
                "type": "unsupported",
                "got": got,
                "reason": if got.is_some() { "unknown" } else { "malformed" },
                "protocol": {"min": PROTOCOL.0, "max": PROTOCOL.1},
            }));
        }
    };
    match frame {
        ClientFrame::Ping => Some(json!({"type": "pong"})),
        ClientFrame::Leaving { state } => {
            let written = match state.as_str() {
                "draining" => s.store.drain_worker(&a.worker.id).await.map(|_| ()),
                "offline" => {
                    let now = s.store.now();
                    s.store
                        .put_worker(crate::item::WorkerRecord {
                            id: a.worker.id.clone(),
                            lanes: lanes.iter().cloned().collect(),
                            state: WorkerState::Offline,
                            started_at: now,
                            last_seen_at: now,
                            lease_ms: i64::try_from(s.config.lease.as_millis()).unwrap_or(i64::MAX),
                        })
                        .await
                }
                other => {
                    return Some(
                        json!({"type": "unsupported", "reason": "bad_state", "got": inert(other)}),
                    );
                }
            };
            if let Err(e) = written {
                tracing::warn!(worker = %a.worker.id, error = %e, "cannot record a worker's leaving");
            }
            Some(json!({"type": "left"}))
        }
        ClientFrame::Presence { lanes: asked } => {
            let ok = asked.len() <= LANES_PER_SOCKET
                && asked
                    .iter()
                    .all(|l| !l.is_empty() && l.len() <= 128 && !l.chars().any(char::is_control));
            if !ok {
                return Some(json!({"type": "unsupported", "reason": "bad_lanes"}));
            }
            *lanes = asked.into_iter().collect();
            for l in lanes.iter() {
                watch(s, l);
            }
            match s
                .presence(&a.worker.id, lanes.iter().cloned().collect())
                .await
            {
                Ok(WorkerState::Draining) => Some(json!({"type": "drain"})),
                Ok(WorkerState::UpgradeRequired) => Some(upgrade_required()),
                Ok(_) => None,
                Err(_) => None,
            }
        }
    }
}

enum Look {
    State(WorkerState),
    Revoked,
    Expired,
    Unknown,
}

/// The worker's presence written, and what it found: its state, a revocation, or an
/// expired session.
async fn look(s: &State, a: &Authed, lanes: &BTreeSet<String>) -> Look {
    let now = s.store.now();
    if a.session.expires_at <= now {
        return Look::Expired;
    }
    let Ok(c) = s.store.coordinator() else {
        return Look::Unknown;
    };
    match c.remote_worker(a.worker.id.clone()).await {
        Ok(Some(w)) if w.revoked_at.is_some() => return Look::Revoked,
        Ok(None) => return Look::Revoked,
        Ok(Some(_)) => {}
        Err(_) => return Look::Unknown,
    }
    match s
        .presence(&a.worker.id, lanes.iter().cloned().collect())
        .await
    {
        Ok(state) => Look::State(state),
        Err(_) => Look::Unknown,
    }
}
