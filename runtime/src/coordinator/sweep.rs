//! The coordinator's own sweeper — it is the only process that needs the database, so it
//! does what a local work loop's sweep does: expired leases back, silent workers OFFLINE,
//! the outbox relayed, the counters folded, and retention (completed items, relayed outbox
//! rows, offline workers, spent credentials, artifacts no item names).

use super::State;

/// Rows each retention statement deletes at most per pass.
const RETENTION_BATCH: usize = 5_000;
/// Outbox rows relayed at most per pass.
const RELAY_BATCH: usize = 1_000;

pub(crate) async fn run(s: State) {
    let mut shutdown = s.shutdown.clone();
    let mut tick = tokio::time::interval(s.config.sweep_interval);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        pass(&s).await;
    }
}

/// One pass; a failure of any step is logged and the rest still run.
pub(crate) async fn pass(s: &State) {
    let store = &s.store;
    if let Err(e) = store.sweep().await {
        tracing::warn!(error = %e, "sweeping expired leases failed");
    }
    match store.mark_silent_workers().await {
        Ok(ids) if !ids.is_empty() => {
            tracing::info!(workers = ?ids, "silent workers marked OFFLINE")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "marking silent workers failed"),
    }
    if let Err(e) = store.relay_outbox(RELAY_BATCH).await {
        tracing::warn!(error = %e, "relaying the outbox failed");
    }
    if let Err(e) = store.fold_counts().await {
        tracing::warn!(error = %e, "folding the item counters failed");
    }
    let Ok(c) = store.coordinator() else {
        return;
    };
    let now = store.now();
    let Some(keep) = s.config.retain else {
        if let Err(e) = c.purge_credentials(now, now).await {
            tracing::warn!(error = %e, "purging spent credentials failed");
        }
        return;
    };
    let before = crate::time::Timestamp::from_millis(
        now.as_millis()
            .saturating_sub(crate::time::duration_ms(keep)),
    );
    if let Err(e) = store.purge_completed(keep, RETENTION_BATCH).await {
        tracing::warn!(error = %e, "purging completed items failed");
    }
    if let Err(e) = store.purge_retained(keep, RETENTION_BATCH).await {
        tracing::warn!(error = %e, "purging relayed outbox rows and offline workers failed");
    }
    if let Err(e) = c.purge_credentials(now, before).await {
        tracing::warn!(error = %e, "purging spent credentials failed");
    }
    if let Err(e) = c.purge_artifacts(before).await {
        tracing::warn!(error = %e, "purging unreferenced artifacts failed");
    }
}
