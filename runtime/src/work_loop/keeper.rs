//! The lease keeper: every held item's heartbeat, on a thread and a runtime of its own.
//!
//! A handler that computes without yielding holds the worker thread it runs on; with every
//! worker thread so held, nothing else of the loop's runtime runs, its timers included. A
//! heartbeat there would starve and the lease pass to another worker while the handler
//! still works. Here each held item's heartbeat is a task on the keeper's own current-thread
//! runtime, over the store's lease backend (connections driven on that runtime), renewing
//! at a third of the lease from the end the store returned, until the item's outcome is
//! written (its [`Lease`] dropped), not only until the handler returns. When a renewal is
//! refused or the lease runs out, the item's task hears it (see [`Lease::lost`]).
//!
//! Most items finish long before their first renewal is due, so an item costs the keeper
//! nothing until then: it waits in one ordered map of first renewals (a lock, an insert, a
//! removal; the keeper's thread is woken only when an item is due sooner than anything it
//! already waits for), and its renewal task starts when that time comes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use crate::error::StoreError;
use crate::item::Held;
use crate::store::Store;
use crate::time::Timestamp;

/// What the keeper is asked: keep `held`'s lease from `expires` on.
struct Keep {
    held: Held,
    /// When the lease was granted (the call sent) and when it ends, by the store's clock.
    from: Timestamp,
    expires: Timestamp,
    /// Told why the lease is gone; closed when the item's [`Lease`] is dropped, which
    /// stops its renewals.
    lost: oneshot::Sender<StoreError>,
}

/// The items whose first renewal is not due yet, by (due time in ms, sequence number).
#[derive(Default)]
struct Pending {
    due: BTreeMap<(i64, u64), Keep>,
    next_seq: u64,
    /// When the keeper looks next (`i64::MAX`: when woken).
    looks_at: i64,
    closed: bool,
}

#[derive(Default)]
struct State {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl State {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        // Nothing here panics while holding it; a poisoned map is still a map.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The keeper of one loop.
pub(crate) struct Keeper {
    state: Arc<State>,
    /// The store's clock, which places each first renewal.
    clock: Arc<dyn crate::time::Clock>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeper").finish_non_exhaustive()
    }
}

/// One item's kept lease: [`Lease::lost`] resolves when it is gone; dropping it stops the
/// heartbeat (after the outcome is written).
pub(crate) struct Lease {
    /// Dropped with the lease, which ends its renewal task (see [`Keep::lost`]).
    lost: oneshot::Receiver<StoreError>,
    /// Its place among the first renewals not due yet, while it may be there.
    pending: Option<(Arc<State>, (i64, u64))>,
}

impl Lease {
    /// Stops renewing: the item's outcome is written (or it was lost).
    pub(crate) fn release(self) {}

    /// Resolves with why the lease is gone (a refused renewal, or the end passed while
    /// renewals failed); never while it is kept.
    pub(crate) async fn lost(&mut self) -> StoreError {
        match (&mut self.lost).await {
            Ok(e) => e,
            // The keeper is gone (the loop ended): nothing keeps the lease any more.
            Err(_) => std::future::pending().await,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Not due yet: out of the map, and no task ever starts. Started: dropping `lost`
        // ends its task.
        if let Some((state, key)) = self.pending.take() {
            state.pending().due.remove(&key);
        }
    }
}

impl Keeper {
    /// Starts the keeper's thread over `store` (the loop's lease store), renewing leases of
    /// `lease`.
    pub(super) fn start(store: Store, lease: Duration) -> std::io::Result<Keeper> {
        let state = Arc::new(State::default());
        state.pending().looks_at = i64::MAX;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::clone(&state);
        let clock = Arc::clone(store.clock());
        let thread = std::thread::Builder::new()
            .name("scaffold-lease-keeper".to_owned())
            .spawn(move || rt.block_on(watch_due(shared, store, lease)))?;
        Ok(Keeper {
            state,
            clock,
            thread: Some(thread),
        })
    }

    /// Keeps `held`'s lease, which the store granted until `expires`: first renewed when a
    /// third of what is left of it has passed.
    pub(super) fn keep(&self, held: Held, expires: Timestamp) -> Lease {
        let (lost_tx, lost_rx) = oneshot::channel();
        let from = self.clock.now();
        let due = third(from, expires).as_millis();
        let (id, fence) = (held.id, held.fence);
        let keep = Keep {
            held,
            from,
            expires,
            lost: lost_tx,
        };
        let mut pending = self.state.pending();
        if pending.closed {
            drop(pending);
            // Its writes stay fenced: a lease that runs out refuses them all.
            tracing::error!(
                id,
                fence,
                "the lease keeper has stopped; this item's lease is not renewed"
            );
            return Lease {
                lost: lost_rx,
                pending: None,
            };
        }
        let key = (due, pending.next_seq);
        pending.next_seq += 1;
        pending.due.insert(key, keep);
        let sooner = due < pending.looks_at;
        if sooner {
            pending.looks_at = due;
        }
        drop(pending);
        if sooner {
            self.state.wake.notify_one();
        }
        Lease {
            lost: lost_rx,
            pending: Some((Arc::clone(&self.state), key)),
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // The keeper's loop ends; its runtime drops what it still keeps.
        self.state.pending().closed = true;
        self.state.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The keeper's loop: starts the renewal task of each item whose first renewal has come
/// due, then sleeps until the next one is (or an item due sooner arrives).
async fn watch_due(state: Arc<State>, store: Store, lease: Duration) {
    loop {
        let now = store.now().as_millis();
        let (ready, next) = {
            let mut pending = state.pending();
            if pending.closed {
                pending.due.clear();
                return;
            }
            let later = pending.due.split_off(&(now.saturating_add(1), 0));
            let ready = std::mem::replace(&mut pending.due, later);
            let next = pending.due.keys().next().map(|(t, _)| *t);
            pending.looks_at = next.unwrap_or(i64::MAX);
            (ready, next)
        };
        for keep in ready.into_values() {
            let store = store.clone();
            tokio::spawn(async move {
                let Keep {
                    held,
                    from,
                    expires,
                    mut lost,
                } = keep;
                tokio::select! {
                    // A lease dropped before this task first ran sends no heartbeat.
                    biased;
                    () = lost.closed() => {}
                    e = keep_lease(&store, &held, lease, from, expires) => {
                        let _ = lost.send(e);
                    }
                }
            });
        }
        let woken = state.wake.notified();
        match next {
            Some(t) => {
                let wait = Timestamp::from_millis(t).duration_from(store.now());
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = woken => {}
                }
            }
            None => woken.await,
        }
    }
}

/// A third of the way from `from` to `expires`: when a lease granted at `from` is renewed.
fn third(from: Timestamp, expires: Timestamp) -> Timestamp {
    let left = expires.as_millis().saturating_sub(from.as_millis()).max(0);
    Timestamp::from_millis(from.as_millis().saturating_add(left / 3))
}

/// Renews the lease until it is refused; returns the refusal. Each renewal is scheduled
/// from the lease the store returned, on the store's clock from when the call was sent:
/// when a third of what was left of it has passed (a remote store's lease is what the
/// coordinator said was left, placed on this clock, so no wall clocks are compared).
pub(crate) async fn keep_lease(
    store: &Store,
    held: &Held,
    lease: Duration,
    mut from: Timestamp,
    mut expires: Timestamp,
) -> StoreError {
    loop {
        let due = third(from, expires);
        tokio::time::sleep(due.duration_from(store.now())).await;
        let sent = store.now();
        match store.heartbeat(held, lease).await {
            Ok(renewed) => {
                from = sent;
                expires = renewed;
            }
            Err(e @ (StoreError::StaleLease { .. } | StoreError::Revoked)) => return e,
            Err(e) => {
                if store.now() >= expires {
                    tracing::warn!(id = held.id, fence = held.fence, error = %e, "heartbeat failed past the lease");
                    return StoreError::StaleLease {
                        id: held.id,
                        fence: held.fence,
                    };
                }
                tracing::warn!(id = held.id, fence = held.fence, error = %e, "heartbeat failed; retrying");
                tokio::time::sleep((lease / 20).max(Duration::from_millis(10))).await;
            }
        }
    }
}

/// Where a loop's keeper lives: started by `WorkLoop::run`, kept for the loop's life.
#[derive(Debug, Default)]
pub(crate) struct KeeperSlot(std::sync::OnceLock<Keeper>);

impl KeeperSlot {
    /// Starts the keeper unless it runs already.
    pub(crate) fn start(&self, store: Store, lease: Duration) -> std::io::Result<()> {
        if self.0.get().is_none() {
            let keeper = Keeper::start(store, lease)?;
            let _ = self.0.set(keeper);
        }
        Ok(())
    }

    /// Keeps `held`'s lease (see [`Keeper::keep`]). Outside a running loop there is no
    /// keeper: the lease is then not renewed, and its writes stay fenced.
    pub(crate) fn keep(&self, held: Held, expires: Timestamp) -> Lease {
        match self.0.get() {
            Some(k) => k.keep(held, expires),
            None => {
                let (_lost_tx, lost) = oneshot::channel();
                tracing::error!(
                    id = held.id,
                    fence = held.fence,
                    "no lease keeper runs; this item's lease is not renewed"
                );
                Lease {
                    lost,
                    pending: None,
                }
            }
        }
    }
}
