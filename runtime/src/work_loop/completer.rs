//! Writes finished items back in batches: whatever finished while the last batch was being
//! written goes in the next one, one write transaction, each row checking its own fence.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::item::{Finish, Outcome};
use crate::work_loop::{LoopEvent, Shared};

/// One item task's end: what to write (nothing when the lease was lost), whether it was
/// the item's last attempt (a retry then makes it dead), and its lease, kept until the
/// outcome is written.
pub(crate) struct Done {
    pub finish: Option<Finish>,
    pub last_attempt: bool,
    pub lease: super::keeper::Lease,
}

const MAX_BATCH: usize = 1024;

pub(crate) async fn run(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Done>) {
    let mut buf: Vec<Done> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
        buf.push(first);
        while buf.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(done) => buf.push(done),
                Err(_) => break,
            }
        }
        // Moved out, not copied: the batch is written (and on an error written again) from
        // one shared slice.
        let mut finishes = Vec::with_capacity(buf.len());
        let mut last_attempts = Vec::with_capacity(buf.len());
        for done in &mut buf {
            if let Some(finish) = done.finish.take() {
                finishes.push(finish);
                last_attempts.push(done.last_attempt);
            }
        }
        write(&shared, Arc::from(finishes), &last_attempts).await;
        shared.inflight.fetch_sub(buf.len(), Ordering::SeqCst);
        shared.room.notify_waiters();
        // The outcomes are written: their leases need no more renewing.
        for done in buf.drain(..) {
            done.lease.release();
        }
    }
}

/// Writes `batch`; `last_attempts[i]` says whether `batch[i]` was its item's last attempt.
async fn write(shared: &Shared, batch: Arc<[Finish]>, last_attempts: &[bool]) {
    if batch.is_empty() {
        return;
    }
    let mut delay = Duration::from_millis(20);
    let results = loop {
        match shared.store.finish_shared(Arc::clone(&batch)).await {
            Ok(results) => break results,
            // Revoked, or refused as malformed: asking again changes nothing.
            Err(e @ (crate::StoreError::Revoked | crate::StoreError::Refused { .. })) => {
                tracing::error!(error = %e, count = batch.len(), "outcomes not written");
                return;
            }
            Err(e) if delay < Duration::from_secs(5) => {
                tracing::warn!(error = %e, "writing outcomes failed; retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            Err(e) => {
                // The leases will expire and the sweeper returns the items: nothing is lost.
                tracing::error!(error = %e, count = batch.len(), "writing outcomes failed; leaving them to the sweeper");
                return;
            }
        }
    };
    let c = &shared.counters;
    for ((finish, last_attempt), result) in batch.iter().zip(last_attempts).zip(results) {
        let (id, fence) = (finish.id, finish.fence);
        match result {
            Ok(()) => {
                let (counter, outcome) = match finish.outcome {
                    Outcome::Complete => (&c.completed, "completed"),
                    // A retry of the last attempt leaves the item dead.
                    Outcome::Retry { .. } if *last_attempt => (&c.dead, "dead"),
                    Outcome::Retry { .. } => (&c.retried, "retry"),
                    Outcome::Dead { .. } => (&c.dead, "dead"),
                    Outcome::Park { .. } => (&c.parked, "parked"),
                    Outcome::Release => (&c.released, "released"),
                };
                counter.fetch_add(1, Ordering::Relaxed);
                shared.emit(LoopEvent::Finished { id, fence, outcome });
            }
            Err(e) => {
                tracing::warn!(id, fence, error = %e, "outcome refused: stale lease");
                c.stale_rejected.fetch_add(1, Ordering::Relaxed);
                shared.emit(LoopEvent::StaleRejected { id, fence });
            }
        }
    }
}
