//! Finishing held items: completions in one bulk statement, then every other outcome's
//! fenced update.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{HELD, write};
use crate::error::StoreError;
use crate::item::{Fence, Finish, ItemId, Outcome};
use crate::store::StoreResult;
use crate::time::Timestamp;

fn finish_one(tx: &Transaction<'_>, f: &Finish, now: Timestamp) -> StoreResult<()> {
    let n = now.as_millis();
    let (id, fence, owner) = (f.id, f.fence, f.owner.as_str());
    let changed = match &f.outcome {
        Outcome::Complete => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'completed', lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = ?4 WHERE {HELD}"
            ))?
            .execute(params![id, fence, owner, n])?,
        Outcome::Retry { retry_at, error } => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = CASE WHEN attempt >= max_attempts THEN 'dead' \
                 ELSE 'failed' END, run_at = ?5, last_error = ?6, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = ?4 WHERE {HELD}"
            ))?
            .execute(params![id, fence, owner, n, retry_at.as_millis(), error])?,
        Outcome::Dead { error } => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'dead', last_error = ?5, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = ?4 WHERE {HELD}"
            ))?
            .execute(params![id, fence, owner, n, error])?,
        Outcome::Park { until, signal } => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'parked', run_at = ?5, parked_on = ?6, \
                 attempt = max(attempt - 1, 0), lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = ?4 WHERE {HELD}"
            ))?
            .execute(params![
                id,
                fence,
                owner,
                n,
                until.unwrap_or(Timestamp::MAX).as_millis(),
                signal
            ])?,
        Outcome::Release => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'available', run_at = ?4, \
                 attempt = max(attempt - 1, 0), lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = ?4 WHERE {HELD}"
            ))?
            .execute(params![id, fence, owner, n])?,
    };
    if changed == 1 {
        return Ok(());
    }
    if matches!(f.outcome, Outcome::Complete) {
        // Completion repeated with the same fence is success.
        let done: Option<bool> = tx
            .prepare_cached(
                "SELECT state = 'completed' AND fence = ?2 FROM work_items WHERE id = ?1",
            )?
            .query_row(params![id, fence], |r| r.get(0))
            .optional()?;
        if done == Some(true) {
            return Ok(());
        }
    }
    Err(StoreError::StaleLease { id, fence })
}

pub(crate) fn finish_many(
    conn: &mut Connection,
    batch: &[Finish],
    now: Timestamp,
) -> StoreResult<Vec<StoreResult<()>>> {
    let tx = write(conn)?;
    let completed = complete_bulk(&tx, batch, now)?;
    let mut results = Vec::with_capacity(batch.len());
    for f in batch {
        if matches!(f.outcome, Outcome::Complete) && completed.contains(&(f.id, f.fence)) {
            results.push(Ok(()));
            continue;
        }
        match finish_one(&tx, f, now) {
            Err(StoreError::Sqlite(e)) => return Err(StoreError::Sqlite(e)),
            other => results.push(other),
        }
    }
    tx.commit()?;
    Ok(results)
}

/// Completes every `Complete` of `batch` in one statement; each row still checks its own
/// fence, owner, state and lease. Returns the (id, fence) pairs it completed; the rest go through
/// [`finish_one`], which tells a repeated completion from a stale one.
fn complete_bulk(
    tx: &Transaction<'_>,
    batch: &[Finish],
    now: Timestamp,
) -> StoreResult<std::collections::HashSet<(ItemId, Fence)>> {
    let triples: Vec<(i64, i64, &str)> = batch
        .iter()
        .filter(|f| matches!(f.outcome, Outcome::Complete))
        .map(|f| (f.id, f.fence, f.owner.as_str()))
        .collect();
    let mut done = std::collections::HashSet::with_capacity(triples.len());
    if triples.is_empty() {
        return Ok(done);
    }
    let json = serde_json::to_string(&triples)?;
    let mut stmt = tx.prepare_cached(
        "UPDATE work_items AS w SET state = 'completed', lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = ?2 \
         FROM (SELECT value ->> 0 AS id, value ->> 1 AS fence, value ->> 2 AS owner \
               FROM json_each(?1)) AS b \
         WHERE w.id = b.id AND w.fence = b.fence AND w.lease_owner = b.owner \
             AND w.state = 'running' AND w.lease_expires_at > ?2 \
         RETURNING id, fence",
    )?;
    let rows = stmt.query_map(params![json, now.as_millis()], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    for row in rows {
        done.insert(row?);
    }
    Ok(done)
}
