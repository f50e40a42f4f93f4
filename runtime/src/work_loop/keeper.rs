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

use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::error::StoreError;
use crate::item::Held;
use crate::store::Store;
use crate::time::Timestamp;

/// What the keeper is asked: keep `held`'s lease from `expires` on.
struct Keep {
    held: Held,
    expires: Timestamp,
    lost: oneshot::Sender<StoreError>,
    stop: oneshot::Receiver<()>,
}

/// The keeper of one loop.
pub(crate) struct Keeper {
    tx: Option<mpsc::UnboundedSender<Keep>>,
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
    lost: oneshot::Receiver<StoreError>,
    _stop: oneshot::Sender<()>,
}

impl Lease {
    /// Stops renewing: the item's outcome is written (or it was lost).
    pub fn release(self) {}

    /// Resolves with why the lease is gone (a refused renewal, or the end passed while
    /// renewals failed); never while it is kept.
    pub async fn lost(&mut self) -> StoreError {
        match (&mut self.lost).await {
            Ok(e) => e,
            // The keeper is gone (the loop ended): nothing keeps the lease any more.
            Err(_) => std::future::pending().await,
        }
    }
}

impl Keeper {
    /// Starts the keeper's thread over `store` (the loop's lease store), renewing leases of
    /// `lease`.
    pub fn start(store: Store, lease: Duration) -> std::io::Result<Keeper> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Keep>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("scaffold-lease-keeper".to_owned())
            .spawn(move || {
                rt.block_on(async move {
                    while let Some(keep) = rx.recv().await {
                        let store = store.clone();
                        tokio::spawn(async move {
                            let Keep {
                                held,
                                expires,
                                lost,
                                mut stop,
                            } = keep;
                            tokio::select! {
                                e = keep_lease(&store, &held, lease, expires) => {
                                    let _ = lost.send(e);
                                }
                                _ = &mut stop => {}
                            }
                        });
                    }
                });
            })?;
        Ok(Keeper {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Keeps `held`'s lease, which the store granted until `expires`.
    pub fn keep(&self, held: Held, expires: Timestamp) -> Lease {
        let (lost_tx, lost_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let (id, fence) = (held.id, held.fence);
        let sent = self.tx.as_ref().is_some_and(|tx| {
            tx.send(Keep {
                held,
                expires,
                lost: lost_tx,
                stop: stop_rx,
            })
            .is_ok()
        });
        if !sent {
            // Its writes stay fenced: a lease that runs out refuses them all.
            tracing::error!(
                id,
                fence,
                "the lease keeper has stopped; this item's lease is not renewed"
            );
        }
        Lease {
            lost: lost_rx,
            _stop: stop_tx,
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // Closing the channel ends the keeper's loop; its runtime drops what it still keeps.
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Renews the lease until it is refused; returns the refusal. Each renewal is scheduled
/// from the `lease_expires_at` the store returned: when a third of the lease has passed.
pub(crate) async fn keep_lease(
    store: &Store,
    held: &Held,
    lease: Duration,
    mut expires: Timestamp,
) -> StoreError {
    let margin = lease.mul_f64(2.0 / 3.0);
    loop {
        let due = Timestamp::from_millis(expires.as_millis() - crate::time::duration_ms(margin));
        tokio::time::sleep(due.duration_from(store.now())).await;
        match store.heartbeat(held, lease).await {
            Ok(renewed) => expires = renewed,
            Err(e @ StoreError::StaleLease { .. }) => return e,
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
    pub fn start(&self, store: Store, lease: Duration) -> std::io::Result<()> {
        if self.0.get().is_none() {
            let keeper = Keeper::start(store, lease)?;
            let _ = self.0.set(keeper);
        }
        Ok(())
    }

    /// Keeps `held`'s lease (see [`Keeper::keep`]). Outside a running loop there is no
    /// keeper: the lease is then not renewed, and its writes stay fenced.
    pub fn keep(&self, held: Held, expires: Timestamp) -> Lease {
        match self.0.get() {
            Some(k) => k.keep(held, expires),
            None => {
                let (_lost_tx, lost) = oneshot::channel();
                let (stop, _) = oneshot::channel();
                tracing::error!(
                    id = held.id,
                    fence = held.fence,
                    "no lease keeper runs; this item's lease is not renewed"
                );
                Lease { lost, _stop: stop }
            }
        }
    }
}
