//! Claiming, and the life of one claimed item: its handler run under a lease the keeper
//! renews on its own thread, stopped when the lease is lost, a panic taken as a failed
//! attempt.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::sync::{Semaphore, mpsc, watch};
use tracing::Instrument;

use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::item::{Claimed, Finish, Held, Outcome};
use crate::store::BoxFuture;
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
/// waits until at most half the prefetch is unfinished (running or waiting to run) or
/// asked for by a claim on its way, then takes as many as fit. Finished items still being
/// written back do not hold the next claim up (so claiming and writing back overlap), but
/// at most two prefetches of them may be pending: one being written while the next waits,
/// so a claim is not held back by a write-back as slow as itself (a remote store's, a round
/// trip away). The claimers of a loop's lanes share its prefetch through [`Reservation`]:
/// one lane's claim waits for another's to return before it takes the room left.
pub(crate) async fn claimer(shared: Arc<Shared>, lane: String, mut ch: Channels) {
    let prefetch = shared.config.prefetch();
    loop {
        if *ch.stop.borrow() {
            return;
        }
        let room_changed = shared.room.notified();
        let Some(reserved) = Reservation::take(&shared, prefetch) else {
            tokio::select! {
                () = room_changed => {}
                _ = ch.stop.wait_for(|s| *s) => return,
            }
            continue;
        };
        let claimed = match shared
            .store
            .claim_kinds(
                &shared.worker_id,
                &lane,
                shared.config.kinds.as_deref(),
                reserved.want,
                shared.config.lease,
            )
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, lane = %lane, "claim failed; retrying");
                Vec::new()
            }
        };
        reserved.settle(claimed.len());
        if claimed.is_empty() {
            tokio::select! {
                () = shared.store.wait_for_work(&lane, shared.config.poll_interval) => {}
                _ = ch.stop.wait_for(|s| *s) => return,
            }
            continue;
        }
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
            // Boxed (one allocation): tokio then moves a pointer, not the item's 2 KB future,
            // into the task and into its cell, and writes a small stage over it as it ends.
            tokio::spawn(Box::pin(run_item(Arc::clone(&shared), c, ch.clone())).instrument(span));
        }
    }
}

/// Room reserved for one claim on its way: `want` items counted in `claiming` until the
/// claim returns ([`settle`](Self::settle)), so the claimers of a loop's lanes never read
/// the same free room and claim it twice. Dropped unsettled (the claimer's task panicked
/// or was dropped mid-claim), it gives the room back rather than starve every lane.
struct Reservation<'a> {
    shared: &'a Shared,
    want: usize,
    settled: bool,
}

impl<'a> Reservation<'a> {
    /// How many items the next claim may ask for; `None` while more than half the prefetch
    /// is unfinished or asked for, or nothing fits.
    fn take(shared: &'a Shared, prefetch: usize) -> Option<Self> {
        let _gate = shared.gate();
        let asked = shared.claiming.load(Ordering::SeqCst);
        let taken = shared.unfinished.load(Ordering::SeqCst) + asked;
        let pending = shared.inflight.load(Ordering::SeqCst) + asked;
        let want = (prefetch - taken.min(prefetch))
            .min((3 * prefetch).saturating_sub(pending))
            .min(shared.config.claim_batch.unwrap_or(usize::MAX));
        if taken > prefetch / 2 || want == 0 {
            return None;
        }
        shared.claiming.fetch_add(want, Ordering::SeqCst);
        Some(Reservation {
            shared,
            want,
            settled: false,
        })
    }

    /// The claim came back with `got` items: they count as in flight and unfinished from
    /// here, and what it did not get is room again (another lane's claimer may wait for it).
    fn settle(mut self, got: usize) {
        self.settled = true;
        let shared = self.shared;
        {
            let _gate = shared.gate();
            shared.inflight.fetch_add(got, Ordering::SeqCst);
            shared.unfinished.fetch_add(got, Ordering::SeqCst);
            shared.claiming.fetch_sub(self.want, Ordering::SeqCst);
        }
        if got < self.want {
            shared.room.notify_waiters();
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.settled = true;
            let gate = self.shared.gate();
            self.shared.claiming.fetch_sub(self.want, Ordering::SeqCst);
            drop(gate);
            self.shared.room.notify_waiters();
        }
    }
}

/// Runs one claimed item to its outcome and hands that to the completer, with its lease:
/// the keeper renews it until the completer has written the outcome.
async fn run_item(shared: Arc<Shared>, claimed: Claimed, mut ch: Channels) {
    let held = claimed.held();
    let origin = claimed.origin();
    let mut lease = shared.keeper.keep(held.clone(), claimed.lease_expires_at);
    let ctx = WorkContext::new(shared.store.clone(), &claimed, shared.config.lease)
        .with_resources(shared.resources.clone())
        .with_shared_workspaces(Arc::clone(&shared.workspaces));
    let has_inputs = !claimed.inputs.is_empty();
    let record = claimed.item;
    let last_attempt = record.attempt >= record.max_attempts;
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
                // Inputs fetched and verified first: a mismatch is the attempt's permanent
                // failure and the handler never starts.
                if has_inputs && let Err(e) = ctx.fetch_inputs().await {
                    drop(permit);
                    return Some(Ok(Err(e)));
                }
                let began = std::time::Instant::now();
                let result = CatchUnwind(handler.call(&ctx, &record, held.fence)).await;
                if let Some(h) = shared.durations.get(handler.kind()) {
                    h.observe(began.elapsed());
                }
                drop(permit);
                Some(result)
            };
            tokio::select! {
                result = work => match result {
                    None => Some(Outcome::Release),
                    Some(Ok(result)) => outcome_of(&shared, &held, &record.kind, record.attempt, result),
                    Some(Err(panic)) => {
                        shared.counters.panicked.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(
                            id = held.id,
                            kind = %record.kind,
                            fence = held.fence,
                            panic = %panic,
                            "handler panicked; the attempt failed"
                        );
                        Some(retry(&shared, record.attempt, format!("the handler panicked: {panic}")))
                    }
                },
                e = lease.lost() => {
                    // Dropped here, at its next await: the handler runs nothing more.
                    lease_lost(&shared, &held, &record.kind, &e);
                    None
                }
                _ = ch.cancel.wait_for(|c| *c) => Some(Outcome::Release),
            }
        }
    };
    // What leaves a remote worker carries no secret, path, backtrace or payload contents.
    let outcome = match shared.store.remote() {
        Some(_) => outcome.map(|o| sanitized(o, &record.payload)),
        None => outcome,
    };
    if let Some(outcome) = &outcome {
        log_outcome(outcome, last_attempt);
    }
    let completed = matches!(outcome, Some(Outcome::Complete));
    let finish = outcome.map(|outcome| {
        let finish = Finish::of(&held, outcome).with_origin(origin);
        if completed {
            finish.with_outputs(ctx.outputs())
        } else {
            finish
        }
    });
    // The completer outlives every item task; a send error means the loop is gone.
    let _ = ch.done.send(Done {
        finish,
        last_attempt,
        lease,
    });
    ctx.clean_up(completed);
    let before = shared.unfinished.fetch_sub(1, Ordering::SeqCst);
    if before <= shared.config.prefetch() / 2 + 1 {
        // At or below the claimers' low water: room for the next claim, unless claims
        // already on their way have reserved it.
        shared.room.notify_waiters();
    }
}

/// The one event of a lost lease (item, kind, fence, holder, why), counted and observed.
fn lease_lost(shared: &Shared, held: &Held, kind: &str, why: &dyn std::fmt::Display) {
    tracing::warn!(
        id = held.id,
        kind,
        fence = held.fence,
        holder = %held.owner,
        why = %why,
        "lease lost (refused, run out, cancelled or released by an operator); the handler was stopped and nothing more of this attempt is written"
    );
    shared.counters.leases_lost.fetch_add(1, Ordering::Relaxed);
    shared.emit(LoopEvent::LeaseLost {
        id: held.id,
        fence: held.fence,
    });
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
fn outcome_of(
    shared: &Shared,
    held: &Held,
    kind: &str,
    attempt: i32,
    result: Result<(), WorkError>,
) -> Option<Outcome> {
    match result {
        Ok(()) => Some(Outcome::Complete),
        Err(WorkError::Transient(error)) => Some(retry(shared, attempt, error)),
        Err(WorkError::Permanent(error)) => Some(Outcome::Dead { error }),
        Err(WorkError::Park { until, signal }) => {
            let park = Outcome::Park { until, signal };
            Some(match park.bad_signal() {
                // The handler's own bug, and one no attempt fixes: no store writes it.
                Some(len) => Outcome::Dead {
                    error: StoreError::InvalidSignal { len }.to_string(),
                },
                None => park,
            })
        }
        Err(
            e @ (WorkError::LeaseLost { .. } | WorkError::Store(StoreError::StaleLease { .. })),
        ) => {
            lease_lost(shared, held, kind, &e);
            None
        }
        Err(WorkError::Store(e)) => Some(retry(
            shared,
            attempt,
            format!("store error in handler: {e}"),
        )),
    }
}

/// `outcome` with its error made fit to leave the worker.
fn sanitized(outcome: Outcome, payload: &serde_json::Value) -> Outcome {
    let clean = |e: String| crate::sanitize::failure_message(&e, payload);
    match outcome {
        Outcome::Retry { retry_at, error } => Outcome::Retry {
            retry_at,
            error: clean(error),
        },
        Outcome::Dead { error } => Outcome::Dead {
            error: clean(error),
        },
        other => other,
    }
}

fn retry(shared: &Shared, attempt: i32, error: String) -> Outcome {
    let retry_at = shared.store.now().plus(shared.config.retry.delay(attempt));
    Outcome::Retry { retry_at, error }
}

/// A handler's future with its panics caught: a panic is the attempt's failure (with the
/// panic's message), never a task that dies without an outcome.
struct CatchUnwind<'a, T>(BoxFuture<'a, T>);

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

/// A panic's message (`panic!("…")` carries a `&str` or a `String`).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
