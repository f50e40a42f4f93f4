//! Claiming, and the life of one claimed item: its handler under a heartbeated lease.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, watch};
use tracing::Instrument;

use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::item::{Claimed, Fence, Finish, ItemId, Outcome};
use crate::store::Store;
use crate::time::Timestamp;
use crate::work_loop::{LoopEvent, Shared, completer::Done};

pub(crate) struct Channels {
    pub stop: watch::Receiver<bool>,
    pub cancel: watch::Receiver<bool>,
    pub done: mpsc::UnboundedSender<Done>,
    pub slots: Arc<Semaphore>,
}

impl Clone for Channels {
    fn clone(&self) -> Self {
        Channels {
            stop: self.stop.clone(),
            cancel: self.cancel.clone(),
            done: self.done.clone(),
            slots: Arc::clone(&self.slots),
        }
    }
}

/// Claims items of `lane` while the loop has room, until stopped. Claims in batches: it
/// waits until at most half the prefetch is unfinished (running or waiting to run), then
/// takes as many as fit. Finished items still being written back do not hold the next claim
/// up (so claiming and writing back overlap), but at most a prefetch of them may be pending.
pub(crate) async fn claimer(shared: Arc<Shared>, lane: String, mut ch: Channels) {
    let prefetch = shared.config.prefetch();
    let low_water = prefetch / 2;
    loop {
        if *ch.stop.borrow() {
            return;
        }
        let room_changed = shared.room.notified();
        let unfinished = shared.unfinished.load(Ordering::SeqCst);
        let inflight = shared.inflight.load(Ordering::SeqCst);
        let want =
            (prefetch - unfinished.min(prefetch)).min((2 * prefetch).saturating_sub(inflight));
        if unfinished > low_water || want == 0 {
            tokio::select! {
                () = room_changed => {}
                _ = ch.stop.wait_for(|s| *s) => return,
            }
            continue;
        }
        let claimed = match shared
            .store
            .claim_as(&shared.worker_id, &lane, want, shared.config.lease)
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, lane = %lane, "claim failed; retrying");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            tokio::select! {
                () = shared.store.wait_for_work(&lane, shared.config.poll_interval) => {}
                _ = ch.stop.wait_for(|s| *s) => return,
            }
            continue;
        }
        shared.inflight.fetch_add(claimed.len(), Ordering::SeqCst);
        shared.unfinished.fetch_add(claimed.len(), Ordering::SeqCst);
        shared
            .counters
            .claimed
            .fetch_add(claimed.len() as u64, Ordering::Relaxed);
        for c in claimed {
            let span = tracing::info_span!(
                "work_item",
                id = c.item.id,
                kind = %c.item.kind,
                lane = %c.item.lane,
                fence = c.fence,
                attempt = c.item.attempt
            );
            tokio::spawn(run_item(Arc::clone(&shared), c, ch.clone()).instrument(span));
        }
    }
}

/// Runs one claimed item to its outcome and hands that to the completer.
async fn run_item(shared: Arc<Shared>, claimed: Claimed, mut ch: Channels) {
    let Claimed {
        item: record,
        fence,
        lease_expires_at,
    } = claimed;
    let id = record.id;
    let ctx = WorkContext::new(shared.store.clone(), id, fence, record.checkpoint.clone())
        .with_resources(shared.resources.clone());
    let outcome = match shared.handlers.get(record.kind.as_str()) {
        None => Some(Outcome::Dead {
            error: format!("unknown kind `{}`", record.kind),
        }),
        Some(handler) => {
            let work = async {
                let permit = tokio::select! {
                    p = ch.slots.acquire() => p,
                    // Draining: an item that has not started goes back untouched.
                    _ = ch.stop.wait_for(|s| *s) => return None,
                };
                let began = std::time::Instant::now();
                let result = handler.call(&ctx, &record, fence).await;
                if let Some(h) = shared.durations.get(handler.kind()) {
                    h.observe(began.elapsed());
                }
                drop(permit);
                Some(result)
            };
            tokio::select! {
                result = work => match result {
                    None => Some(Outcome::Release),
                    Some(result) => outcome_of(&shared, record.attempt, result),
                },
                lost = keep_lease(&shared.store, id, fence, shared.config.lease, lease_expires_at) => {
                    tracing::warn!(error = %lost, "lease lost; handler cancelled");
                    shared.counters.leases_lost.fetch_add(1, Ordering::Relaxed);
                    shared.emit(LoopEvent::LeaseLost { id, fence });
                    None
                }
                _ = ch.cancel.wait_for(|c| *c) => Some(Outcome::Release),
            }
        }
    };
    if let Some(outcome) = &outcome {
        log_outcome(outcome, record.attempt >= record.max_attempts);
    }
    let finish = outcome.map(|outcome| Finish { id, fence, outcome });
    // The completer outlives every item task; a send error means the loop is gone.
    let _ = ch.done.send(Done { finish });
    let before = shared.unfinished.fetch_sub(1, Ordering::SeqCst);
    if before <= shared.config.prefetch() / 2 + 1 {
        // At or below the claimers' low water: room for the next claim.
        shared.room.notify_waiters();
    }
}

/// One event per outcome other than success, inside the item's span (id, kind, lane,
/// fence, attempt). Never the payload: errors are the handler's or the runtime's own text,
/// and a payload that does not decode is described by its type, not its contents.
fn log_outcome(outcome: &Outcome, last_attempt: bool) {
    match outcome {
        Outcome::Complete => {}
        Outcome::Retry { error, .. } if last_attempt => {
            tracing::error!(error = %error, "item dead-lettered: out of attempts");
        }
        Outcome::Retry { retry_at, error } => {
            tracing::warn!(error = %error, retry_at = retry_at.as_millis(), "item failed; retry scheduled");
        }
        Outcome::Dead { error } => tracing::error!(error = %error, "item dead-lettered"),
        Outcome::Park { until, signal } => tracing::info!(
            until = until.map(Timestamp::as_millis),
            signal = signal.as_deref(),
            "item parked"
        ),
        Outcome::Release => tracing::info!("item released unstarted or cancelled (drain)"),
    }
}

/// What the store is told for a handler's result; `None` when the lease is gone.
fn outcome_of(shared: &Shared, attempt: i32, result: Result<(), WorkError>) -> Option<Outcome> {
    match result {
        Ok(()) => Some(Outcome::Complete),
        Err(WorkError::Transient(error)) => Some(retry(shared, attempt, error)),
        Err(WorkError::Permanent(error)) => Some(Outcome::Dead { error }),
        Err(WorkError::Park { until, signal }) => Some(Outcome::Park { until, signal }),
        Err(WorkError::Store(StoreError::StaleLease { .. })) => {
            shared.counters.leases_lost.fetch_add(1, Ordering::Relaxed);
            None
        }
        Err(WorkError::Store(e)) => Some(retry(
            shared,
            attempt,
            format!("store error in handler: {e}"),
        )),
    }
}

fn retry(shared: &Shared, attempt: i32, error: String) -> Outcome {
    let retry_at = shared.store.now().plus(shared.config.retry.delay(attempt));
    Outcome::Retry { retry_at, error }
}

/// Renews the lease until it is refused; returns the refusal. Each renewal is scheduled
/// from the `lease_expires_at` the store returned: when a third of the lease has passed.
pub(crate) async fn keep_lease(
    store: &Store,
    id: ItemId,
    fence: Fence,
    lease: Duration,
    mut expires: Timestamp,
) -> StoreError {
    let margin = lease.mul_f64(2.0 / 3.0);
    loop {
        let due = Timestamp::from_millis(expires.as_millis() - crate::time::duration_ms(margin));
        tokio::time::sleep(due.duration_from(store.now())).await;
        match store.heartbeat(id, fence, lease).await {
            Ok(renewed) => expires = renewed,
            Err(e @ StoreError::StaleLease { .. }) => return e,
            Err(e) => {
                if store.now() >= expires {
                    tracing::warn!(error = %e, "heartbeat failed past the lease");
                    return StoreError::StaleLease { id, fence };
                }
                tracing::warn!(error = %e, "heartbeat failed; retrying");
                tokio::time::sleep((lease / 20).max(Duration::from_millis(10))).await;
            }
        }
    }
}
