//! Writes made from outside a lease: an operator's retry, discard, cancel and release of a
//! worker's items, and the signal that wakes items parked on it.

use deadpool_postgres::Transaction;

use super::{ATTEMPT_COLS, LIVE, counted, ending, parse_state};
use crate::error::StoreError;
use crate::item::{ItemId, ItemState};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::time::Timestamp;

async fn state_of(tx: &Transaction<'_>, id: ItemId) -> StoreResult<ItemState> {
    let row = tx
        .query_opt("SELECT state FROM work_items WHERE id = $1", &[&id])
        .await?
        .ok_or(StoreError::NotFound(id))?;
    parse_state(&row.try_get::<_, String>(0)?)
}

/// Runs `sql`, a statement answering how many items it moved (`SELECT count(*)`).
async fn moved(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> StoreResult<u64> {
    let n: i64 = tx.query_one(sql, params).await?.try_get(0)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// An operator's change that matched no row: the item is not in the state it needs, and
/// the error says which it is in.
async fn changed_or_wrong_state(
    tx: &Transaction<'_>,
    id: ItemId,
    changed: u64,
    expected: &'static str,
) -> StoreResult<()> {
    if changed == 0 {
        let state = state_of(tx, id).await?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected,
        });
    }
    Ok(())
}

/// Commits an operator's change of `changed` items; when it made any claimable, every
/// lane's workers are woken (`'*'`: the change may span lanes).
async fn commit_waking(
    db: &PostgresBackend,
    tx: Transaction<'_>,
    changed: u64,
) -> StoreResult<u64> {
    if changed > 0 {
        tx.execute("SELECT pg_notify($1, '*')", &[&db.channel()])
            .await?;
    }
    tx.commit().await?;
    Ok(changed)
}

pub(crate) async fn retry(db: &PostgresBackend, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = moved(
        &tx,
        &format!(
            "WITH r AS (UPDATE work_items SET state = 'available', attempt = 0, run_at = $2, \
             updated_at = $2 WHERE id = $1 AND state = 'dead' RETURNING lane, kind), {} \
             SELECT count(*) FROM r",
            counted("SELECT lane, kind, 'dead' AS old_state, 'available' AS new_state FROM r")
        ),
        &[&id, &now.as_millis()],
    )
    .await?;
    changed_or_wrong_state(&tx, id, changed, "dead").await?;
    commit_waking(db, tx, changed).await.map(|_| ())
}

pub(crate) async fn retry_all_dead(
    db: &PostgresBackend,
    kind: Option<&str>,
    limit: Option<u64>,
    now: Timestamp,
) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    // `LIMIT NULL` is no limit.
    let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    // A dead item whose dedupe key a live item holds stays dead (SQLite's UPDATE OR
    // IGNORE); of several dead items sharing a free key, the oldest is retried.
    let changed = moved(
        &tx,
        &format!(
            "WITH r AS (UPDATE work_items AS w SET state = 'available', attempt = 0, run_at = $1, \
             updated_at = $1 WHERE w.state = 'dead' AND ($2::text IS NULL OR w.kind = $2) \
             AND w.id IN (SELECT c.id FROM work_items c WHERE c.state = 'dead' \
                 AND ($2::text IS NULL OR c.kind = $2) ORDER BY c.id LIMIT $3) \
             AND (w.dedupe_key IS NULL OR ( \
                 NOT EXISTS (SELECT 1 FROM work_items l WHERE l.dedupe_key = w.dedupe_key \
                     AND l.kind = w.kind AND l.state IN {LIVE}) \
                 AND w.id = (SELECT min(d.id) FROM work_items d \
                     WHERE d.dedupe_key = w.dedupe_key AND d.kind = w.kind \
                         AND d.state = 'dead'))) RETURNING w.lane, w.kind), {} \
             SELECT count(*) FROM r",
            counted("SELECT lane, kind, 'dead' AS old_state, 'available' AS new_state FROM r")
        ),
        &[&now.as_millis(), &kind, &limit],
    )
    .await?;
    commit_waking(db, tx, changed).await
}

pub(crate) async fn discard(db: &PostgresBackend, id: ItemId) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = moved(
        &tx,
        &format!(
            "WITH gone AS (DELETE FROM work_items WHERE id = $1 AND state = 'dead' \
             RETURNING lane, kind), {} SELECT count(*) FROM gone",
            counted("SELECT lane, kind, 'dead' AS old_state, NULL AS new_state FROM gone")
        ),
        &[&id],
    )
    .await?;
    changed_or_wrong_state(&tx, id, changed, "dead").await?;
    tx.execute("DELETE FROM work_effects WHERE item_id = $1", &[&id])
        .await?;
    tx.execute("DELETE FROM work_attempts WHERE item_id = $1", &[&id])
        .await?;
    tx.execute("DELETE FROM item_artifacts WHERE item_id = $1", &[&id])
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn signal(
    db: &PostgresBackend,
    signal: &str,
    limit: Option<u64>,
    now: Timestamp,
) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    // `LIMIT NULL` is no limit.
    let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    let changed = moved(
        &tx,
        &format!(
            "WITH w AS (SELECT id FROM work_items WHERE state = 'parked' AND parked_on = $1 \
                 ORDER BY id LIMIT $3 FOR UPDATE), \
             r AS (UPDATE work_items SET state = 'available', run_at = $2, parked_on = NULL, \
             updated_at = $2 WHERE id IN (SELECT id FROM w) AND state = 'parked' \
             RETURNING lane, kind), {} \
             SELECT count(*) FROM r",
            counted("SELECT lane, kind, 'parked' AS old_state, 'available' AS new_state FROM r")
        ),
        &[&signal, &now.as_millis(), &limit],
    )
    .await?;
    commit_waking(db, tx, changed).await
}

pub(crate) async fn cancel(db: &PostgresBackend, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    // A running item's attempt ends here (and it is counted under the state it was claimed
    // from); a waiting one's does not.
    let changed = moved(
        &tx,
        &format!(
            "WITH old AS (SELECT id, lane, kind, state, claimed_from, attempt, fence, \
                     lease_owner, claimed_at FROM work_items WHERE id = $1 AND state IN {LIVE} \
                     FOR UPDATE), \
             c AS (UPDATE work_items SET state = 'dead', \
                 last_error = 'cancelled by an operator', lease_owner = NULL, \
                 lease_expires_at = NULL, parked_on = NULL, updated_at = $2 \
                 WHERE id = ANY(ARRAY(SELECT id FROM old))), \
             att AS (INSERT INTO work_attempts ({ATTEMPT_COLS}) \
                 SELECT id, attempt, fence, lease_owner, claimed_at, $2, 'dead', \
                     'cancelled by an operator' FROM old WHERE state = 'running' \
                 ON CONFLICT (item_id, fence) DO NOTHING), \
             {counted} SELECT count(*) FROM old",
            counted = counted(
                "SELECT lane, kind, CASE WHEN state = 'running' THEN coalesce(claimed_from, 'available') ELSE state END \
                 AS old_state, 'dead' AS new_state FROM old"
            ),
        ),
        &[&id, &now.as_millis()],
    )
    .await?;
    changed_or_wrong_state(
        &tx,
        id,
        changed,
        "live (available, running, failed or parked)",
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn release_worker(
    db: &PostgresBackend,
    owner: &str,
    now: Timestamp,
) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = moved(
        &tx,
        &ending(
            "state = 'running' AND lease_owner = $1",
            "state = 'available', run_at = $2, last_error = 'released by an operator'",
            "$2",
            "'available'",
            "'released'",
            "NULL",
        ),
        &[&owner, &now.as_millis()],
    )
    .await?;
    tx.execute(
        "UPDATE workers SET state = 'OFFLINE' WHERE id = $1",
        &[&owner],
    )
    .await?;
    commit_waking(db, tx, changed).await
}
