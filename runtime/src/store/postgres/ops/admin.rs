//! Writes made from outside a lease: an operator's retry, discard, cancel and release of a
//! worker's items, and the signal that wakes items parked on it.

use deadpool_postgres::Transaction;

use super::{LIVE, parse_state};
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
    let changed = tx
        .execute(
            "UPDATE work_items SET state = 'available', attempt = 0, run_at = $2, \
             updated_at = $2 WHERE id = $1 AND state = 'dead'",
            &[&id, &now.as_millis()],
        )
        .await?;
    changed_or_wrong_state(&tx, id, changed, "dead").await?;
    commit_waking(db, tx, changed).await.map(|_| ())
}

pub(crate) async fn retry_all_dead(
    db: &PostgresBackend,
    kind: Option<&str>,
    now: Timestamp,
) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    // A dead item whose dedupe key a live item holds stays dead (SQLite's UPDATE OR
    // IGNORE); of several dead items sharing a free key, the oldest is retried.
    let changed = tx
        .execute(
            &format!(
                "UPDATE work_items AS w SET state = 'available', attempt = 0, run_at = $1, \
                 updated_at = $1 WHERE w.state = 'dead' AND ($2::text IS NULL OR w.kind = $2) \
                 AND (w.dedupe_key IS NULL OR ( \
                     NOT EXISTS (SELECT 1 FROM work_items l WHERE l.dedupe_key = w.dedupe_key \
                         AND l.kind = w.kind AND l.state IN {LIVE}) \
                     AND w.id = (SELECT min(d.id) FROM work_items d \
                         WHERE d.dedupe_key = w.dedupe_key AND d.kind = w.kind \
                             AND d.state = 'dead')))"
            ),
            &[&now.as_millis(), &kind],
        )
        .await?;
    commit_waking(db, tx, changed).await
}

pub(crate) async fn discard(db: &PostgresBackend, id: ItemId) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "DELETE FROM work_items WHERE id = $1 AND state = 'dead'",
            &[&id],
        )
        .await?;
    changed_or_wrong_state(&tx, id, changed, "dead").await?;
    tx.execute("DELETE FROM work_effects WHERE item_id = $1", &[&id])
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn signal(db: &PostgresBackend, signal: &str, now: Timestamp) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "UPDATE work_items SET state = 'available', run_at = $2, parked_on = NULL, \
             updated_at = $2 WHERE state = 'parked' AND parked_on = $1",
            &[&signal, &now.as_millis()],
        )
        .await?;
    commit_waking(db, tx, changed).await
}

pub(crate) async fn cancel(db: &PostgresBackend, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            &format!(
                "UPDATE work_items SET state = 'dead', last_error = 'cancelled by an operator', \
                 lease_owner = NULL, lease_expires_at = NULL, parked_on = NULL, updated_at = $2 \
                 WHERE id = $1 AND state IN {LIVE}"
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
    let changed = tx
        .execute(
            "UPDATE work_items SET state = 'available', run_at = $2, lease_owner = NULL, \
             lease_expires_at = NULL, last_error = 'released by an operator', updated_at = $2 \
             WHERE state = 'running' AND lease_owner = $1",
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
