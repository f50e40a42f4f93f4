//! What changes while a page is open: one poller per dashboard reads [`Store::status`] each
//! tick (counters, never the table) for every browser at once, and keeps each lane's last
//! hour of completions and failures by minute. `/events` streams the status as server-sent
//! events whenever it changes.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::watch;

use crate::store::Store;
use crate::store::dashboard::Activity;
use crate::time::Timestamp;

/// Minutes of history the lanes page charts.
pub(super) const MINUTES: usize = 60;
const MINUTE_MS: i64 = 60_000;

/// The latest status (as `scaffold queue status --format json` prints it) and the
/// per-minute history, shared by every request.
#[derive(Debug)]
pub(super) struct Live {
    /// The latest status as JSON (what `/events` sends).
    status: watch::Sender<Option<Arc<str>>>,
    /// The counts of the latest status sent (its ages left out).
    key: Mutex<String>,
    history: Mutex<History>,
}

/// Each lane's completions and failures per minute: minute start (ms) → lane → counts.
#[derive(Debug, Default)]
struct History {
    minutes: BTreeMap<i64, BTreeMap<String, Activity>>,
    /// Whether the hour before the poller started has been read.
    filled: bool,
}

impl Live {
    pub(super) fn new() -> Self {
        Live {
            status: watch::channel(None).0,
            key: Mutex::new(String::new()),
            history: Mutex::new(History::default()),
        }
    }

    /// Each lane's last [`MINUTES`] minutes (oldest first) as of `now`, and whether the
    /// hour before the dashboard started has been read yet.
    pub(super) fn hour(&self, now: Timestamp) -> (BTreeMap<String, Vec<Activity>>, bool) {
        let h = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        let last = minute_of(now.as_millis());
        let first = last - (MINUTES as i64 - 1) * MINUTE_MS;
        let mut lanes: BTreeMap<String, Vec<Activity>> = BTreeMap::new();
        for (minute, by_lane) in h.minutes.range(first..=last) {
            let slot = usize::try_from((minute - first) / MINUTE_MS).unwrap_or(0);
            for (lane, a) in by_lane {
                lanes
                    .entry(lane.clone())
                    .or_insert_with(|| vec![Activity::default(); MINUTES])[slot] = *a;
            }
        }
        (lanes, h.filled)
    }

    /// Reads the status once (so the first page has it) and then polls every `every`
    /// until `stop` is set; reads the hour before it started, minute by minute, in between.
    pub(super) async fn run(
        self: Arc<Self>,
        store: Store,
        every: Duration,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut backfill: Option<i64> = None;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            self.poll_status(&store).await;
            let now = store.now().as_millis();
            let current = minute_of(now);
            // The current and the last minute are read whole each tick (a completion
            // committed late still lands in its minute); older minutes are fixed.
            for minute in [current - MINUTE_MS, current] {
                self.read_minute(&store, minute, now).await;
            }
            // One older minute per tick until the hour is read: pages never wait for it.
            let next = backfill.unwrap_or(current - 2 * MINUTE_MS);
            if next > current - MINUTES as i64 * MINUTE_MS {
                // A minute that could not be read is read again next tick.
                if self.read_minute(&store, next, now).await {
                    backfill = Some(next - MINUTE_MS);
                }
            } else if backfill.is_some() {
                self.history
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .filled = true;
            }
            let mut h = self.history.lock().unwrap_or_else(PoisonError::into_inner);
            let oldest = current - MINUTES as i64 * MINUTE_MS;
            h.minutes.retain(|m, _| *m > oldest);
        }
    }

    async fn poll_status(&self, store: &Store) {
        match store.status().await {
            Ok(status) => {
                // A change is a change of counts: ages grow every tick on their own, and a
                // page redrawn each second for them would be a poll, not a push.
                let mut counts = status.clone();
                for lane in &mut counts.lanes {
                    lane.oldest_available_age_ms = 0;
                }
                counts.outbox.oldest_pending_age_ms = 0;
                let key = serde_json::to_string(&counts).unwrap_or_default();
                let mut last = self.key.lock().unwrap_or_else(PoisonError::into_inner);
                if *last != key {
                    *last = key;
                    let json = serde_json::to_string(&status).unwrap_or_default();
                    self.status.send_replace(Some(Arc::from(json)));
                }
            }
            Err(e) => tracing::warn!(error = %e, "the dashboard cannot read the queue's status"),
        }
    }

    /// Reads one minute's activity into the history; whether it could.
    async fn read_minute(&self, store: &Store, minute: i64, now: i64) -> bool {
        let Ok(d) = store.dashboard() else {
            return false;
        };
        let to = (minute + MINUTE_MS).min(now + 1);
        match d
            .activity(Timestamp::from_millis(minute), Timestamp::from_millis(to))
            .await
        {
            Ok(lanes) => {
                let mut h = self.history.lock().unwrap_or_else(PoisonError::into_inner);
                h.minutes.insert(minute, lanes.into_iter().collect());
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "the dashboard cannot read a minute's activity");
                false
            }
        }
    }

    /// `/events`: the status now, then each change, as `event: status`; a comment every
    /// 15 s keeps proxies from closing the stream; it ends when the dashboard stops.
    pub(super) fn events(
        &self,
        mut stop: watch::Receiver<bool>,
    ) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
        let mut rx = self.status.subscribe();
        rx.mark_changed();
        let stream =
            futures_util::stream::unfold((rx, stop.clone()), |(mut rx, mut stop)| async move {
                loop {
                    tokio::select! {
                        changed = rx.changed() => {
                            changed.ok()?;
                        }
                        _ = stop.wait_for(|s| *s) => return None,
                    }
                    let latest = rx.borrow_and_update().clone();
                    if let Some(s) = latest {
                        let event = Event::default().event("status").data(&*s);
                        return Some((Ok(event), (rx, stop)));
                    }
                }
            });
        let _ = stop.borrow_and_update();
        Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
    }
}

/// The start of the minute `ms` falls in.
fn minute_of(ms: i64) -> i64 {
    ms - ms.rem_euclid(MINUTE_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_line_up() {
        assert_eq!(minute_of(125_000), 120_000);
        assert_eq!(minute_of(120_000), 120_000);
        let live = Live::new();
        {
            let mut h = live.history.lock().expect("history");
            let mut lanes = BTreeMap::new();
            lanes.insert(
                "mail".to_owned(),
                Activity {
                    completed: 4,
                    failed: 1,
                },
            );
            h.minutes.insert(3_600_000 - MINUTE_MS, lanes);
        }
        let (hour, filled) = live.hour(Timestamp::from_millis(3_600_000 + 5));
        assert!(!filled);
        let mail = &hour["mail"];
        assert_eq!(mail.len(), MINUTES);
        assert_eq!(mail[MINUTES - 2].completed, 4);
        assert_eq!(mail[MINUTES - 1].completed, 0);
    }
}
