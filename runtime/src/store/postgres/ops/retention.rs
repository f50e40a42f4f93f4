//! Retention: purging completed items with their effects (and vacuuming after a large
//! purge), relayed outbox rows and offline workers.

use std::sync::atomic::Ordering;

use super::{counted, limit_of};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::time::Timestamp;

pub(crate) async fn purge_completed(
    db: &PostgresBackend,
    before: Timestamp,
    limit: usize,
) -> StoreResult<u64> {
    let conn = db.conn().await?;
    // One statement: the items, their effects, attempts and counts go together. SKIP LOCKED lets purges on
    // several hosts share the work; the partial index `work_items_completed` finds them.
    // The ids are picked once into an array (see `claim` for why, not a join).
    let stmt = conn
        .prepare_cached(&format!(
            "WITH gone AS (DELETE FROM work_items WHERE id = ANY(ARRAY( \
                 SELECT id FROM work_items WHERE state = 'completed' AND updated_at < $1 \
                 ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING id, lane, kind), \
             fx AS (DELETE FROM work_effects WHERE item_id = ANY(ARRAY(SELECT id FROM gone))), \
             att AS (DELETE FROM work_attempts WHERE item_id = ANY(ARRAY(SELECT id FROM gone))), \
             arts AS (DELETE FROM item_artifacts WHERE item_id = ANY(ARRAY(SELECT id FROM gone))), \
             {} \
             SELECT count(*) FROM gone",
            counted("SELECT lane, kind, 'completed' AS old_state, NULL AS new_state FROM gone")
        ))
        .await?;
    let row = conn
        .query_one(&stmt, &[&before.as_millis(), &limit_of(limit)])
        .await?;
    let purged = u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0);
    let since = db.purged_since_vacuum.fetch_add(purged, Ordering::Relaxed) + purged;
    if since >= VACUUM_AFTER_PURGED {
        db.purged_since_vacuum.store(0, Ordering::Relaxed);
        // SKIP_LOCKED: when another host's vacuum (or autovacuum) has the table, this one
        // is not needed. A failure (say, a role that does not own the tables) costs only
        // the clean-up, never the purge.
        if let Err(e) = conn
            .batch_execute("VACUUM (SKIP_LOCKED) work_items, work_effects")
            .await
        {
            tracing::warn!(error = %e, "vacuuming work_items after a purge failed");
        }
    }
    Ok(purged)
}

/// Rows purged (by this backend) after which retention vacuums `work_items` itself.
///
/// Every item leaves three dead row versions behind (claim, completion, purge) and an entry
/// of each in the indexes; until a vacuum removes them the claim walks the dead part of
/// `work_items_claim` and the heap keeps growing. Autovacuum wakes once a minute
/// (`autovacuum_naptime`) and by default waits for dead rows to reach 20% of the table, so
/// at queue speeds (tens of thousands of items a second) it lags by millions of rows — the
/// starvation of River #59. Retention knows how many rows it just deleted, so it runs the
/// vacuum itself; on a table emptied by the purge that takes tens of milliseconds.
const VACUUM_AFTER_PURGED: u64 = 25_000;

pub(crate) async fn purge_retained(
    db: &PostgresBackend,
    before: Timestamp,
    limit: usize,
) -> StoreResult<(u64, u64)> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let outbox = tx
        .execute(
            "DELETE FROM outbox WHERE id = ANY(ARRAY(SELECT id FROM outbox \
             WHERE relayed_at IS NOT NULL AND relayed_at < $1 ORDER BY relayed_at LIMIT $2))",
            &[&before.as_millis(), &limit_of(limit)],
        )
        .await?;
    let workers = tx
        .execute(
            "DELETE FROM workers WHERE state = 'OFFLINE' AND last_seen_at < $1",
            &[&before.as_millis()],
        )
        .await?;
    tx.commit().await?;
    Ok((outbox, workers))
}
