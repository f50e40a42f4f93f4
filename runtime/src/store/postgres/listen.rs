//! Wake-ups: a dedicated connection `LISTEN`s on the schema's channel and wakes the workers
//! waiting on the lane a notification names (`*`: every lane). A lost connection is
//! re-opened with backoff, and every waiter is woken after a reconnect (notifications sent
//! while it was down are lost). The work loop's poll interval stays the fallback, so a
//! missed notification costs latency, never an item.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Backoff between reconnect attempts of the listener: doubling from the first, capped.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_CAP: Duration = Duration::from_secs(5);

/// One lane's wake-ups: a counter bumped by every notification for the lane, and its value
/// when the last claim of the lane started.
#[derive(Debug)]
struct Lane {
    wakes: watch::Sender<u64>,
    claim_started_at: u64,
}

impl Lane {
    fn new() -> Self {
        Lane {
            wakes: watch::channel(0).0,
            claim_started_at: 0,
        }
    }
}

type Lanes = Mutex<HashMap<String, Lane>>;

/// The listener of one backend; started by the first waiter, stopped when dropped.
///
/// Race-free for a claimer that claims and then waits: the first claim waits (boundedly)
/// until `LISTEN` is in force, so no claim runs before notifications can arrive; a
/// notification that arrives after a claim started (which that claim's snapshot may have
/// missed) makes the following wait return at once; after a reconnect every lane is woken.
pub(crate) struct Wakeups {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    channel: String,
    lanes: Arc<Lanes>,
    listening: Arc<watch::Sender<bool>>,
    waited_for_listen: std::sync::atomic::AtomicBool,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups")
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

/// How long the first claim waits for `LISTEN` to be in force (the poll covers the rest).
const FIRST_LISTEN_WAIT: Duration = Duration::from_secs(5);

impl Drop for Wakeups {
    fn drop(&mut self) {
        if let Ok(mut task) = self.task.lock()
            && let Some(t) = task.take()
        {
            t.abort();
        }
    }
}

impl Wakeups {
    pub(crate) fn new(
        config: tokio_postgres::Config,
        tls: MakeRustlsConnect,
        channel: String,
    ) -> Self {
        Wakeups {
            config,
            tls,
            channel,
            lanes: Arc::default(),
            listening: Arc::new(watch::channel(false).0),
            waited_for_listen: std::sync::atomic::AtomicBool::new(false),
            task: Mutex::new(None),
        }
    }

    /// Notes that a claim of `lane` is starting; the first claim of the backend then waits
    /// for the listener to be in force. The claim's counter is read before that wait, so a
    /// notification missed while not listening still shows: the first `LISTEN` wakes every
    /// lane, and the wait after the claim returns at once (that claim's `now` was read
    /// before it waited, so it may have missed items enqueued meanwhile).
    pub(crate) async fn claim_started(&self, lane: &str) {
        self.ensure_started();
        if let Ok(mut lanes) = self.lanes.lock() {
            let entry = lanes.entry(lane.to_owned()).or_insert_with(Lane::new);
            entry.claim_started_at = *entry.wakes.borrow();
        }
        if !self
            .waited_for_listen
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let mut rx = self.listening.subscribe();
            let _ = tokio::time::timeout(FIRST_LISTEN_WAIT, rx.wait_for(|l| *l)).await;
        }
    }

    /// Resolves on a notification for `lane` (or `*`) since its last claim started, or
    /// after `max`.
    pub(crate) async fn wait(&self, lane: &str, max: Duration) {
        self.ensure_started();
        let mut rx = {
            let Ok(mut lanes) = self.lanes.lock() else {
                tokio::time::sleep(max).await;
                return;
            };
            let entry = lanes.entry(lane.to_owned()).or_insert_with(Lane::new);
            let rx = entry.wakes.subscribe();
            if *rx.borrow() != entry.claim_started_at {
                return;
            }
            rx
        };
        let _ = tokio::time::timeout(max, rx.changed()).await;
    }

    fn ensure_started(&self) {
        let Ok(mut task) = self.task.lock() else {
            return;
        };
        if task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let config = self.config.clone();
        let tls = self.tls.clone();
        let channel = self.channel.clone();
        let lanes = Arc::downgrade(&self.lanes);
        let listening = Arc::clone(&self.listening);
        *task = Some(tokio::spawn(listen(config, tls, channel, lanes, listening)));
    }
}

/// Bumps the counter of `lane` (every lane for `None` or `*`); false once the backend is
/// gone.
fn wake(lanes: &Weak<Lanes>, lane: Option<&str>) -> bool {
    let Some(lanes) = lanes.upgrade() else {
        return false;
    };
    if let Ok(lanes) = lanes.lock() {
        for (name, entry) in lanes.iter() {
            if lane.is_none_or(|l| l == "*" || l == name) {
                entry.wakes.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }
    true
}

async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    channel: String,
    lanes: Weak<Lanes>,
    listening: Arc<watch::Sender<bool>>,
) {
    let mut backoff = BACKOFF_FIRST;
    loop {
        if lanes.strong_count() == 0 {
            return;
        }
        match config.connect(tls.clone()).await {
            Ok((client, mut conn)) => {
                let lanes_for_driver = lanes.clone();
                // Drives the connection and turns notifications into wake-ups.
                let driver = tokio::spawn(async move {
                    while let Some(msg) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                        match msg {
                            Ok(AsyncMessage::Notification(n)) => {
                                if !wake(&lanes_for_driver, Some(n.payload())) {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "queue listener connection failed");
                                return;
                            }
                        }
                    }
                });
                // `channel` is built from a checked identifier.
                match client.batch_execute(&format!("LISTEN \"{channel}\"")).await {
                    Ok(()) => {
                        backoff = BACKOFF_FIRST;
                        // Anything sent while not listening was missed: look again. On the
                        // first LISTEN no claimer is waiting yet (the first claim waits for
                        // it), unless that wait timed out.
                        wake(&lanes, None);
                        listening.send_replace(true);
                    }
                    Err(e) => tracing::warn!(error = %e, "LISTEN failed"),
                }
                let _ = driver.await;
                drop(client);
            }
            Err(e) => tracing::warn!(error = %e, "queue listener cannot connect; retrying"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_CAP);
    }
}
