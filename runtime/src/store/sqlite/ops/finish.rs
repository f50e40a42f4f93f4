//! Finishing held items: completions in one bulk statement, then every other outcome's
//! fenced update.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::moves::{Before, before, count, record_ended};
use super::{HELD, write};
use crate::error::StoreError;
use crate::item::{Fence, Finish, ItemId, Outcome};
use crate::store::StoreResult;
use crate::time::Timestamp;

/// What a completion sets. A completed item is never claimed again, so its row is its last
/// attempt as it stands: the holder stays in `lease_owner` (read as no lease once the item
/// is not running) and nothing is written to `work_attempts`.
const COMPLETED: &str = "state = 'completed', lease_expires_at = NULL";

/// How a fenced write ends an attempt other than by completing: what it sets (beyond the
/// lease, cleared), the parameters after the guard's four, the state it leaves the item in
/// and the attempt's outcome (both from the row before), and the attempt's error.
struct Ending<'a> {
    set: &'static str,
    extra: Vec<&'a dyn rusqlite::ToSql>,
    to: fn(&Before) -> &'static str,
    outcome: fn(&Before) -> &'static str,
    error: Option<&'a str>,
}

fn finish_one(tx: &Transaction<'_>, f: &Finish, now: Timestamp) -> StoreResult<()> {
    let n = now.as_millis();
    let (id, fence, owner) = (f.id, f.fence, f.owner.as_str());
    let (retry_ms, until_ms);
    let ending = match &f.outcome {
        Outcome::Complete => None,
        Outcome::Retry { retry_at, error } => {
            retry_ms = retry_at.as_millis();
            Some(Ending {
                set: "state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'failed' END, \
                      run_at = ?5, last_error = ?6",
                extra: vec![&retry_ms, error],
                to: retried,
                outcome: retried,
                error: Some(error),
            })
        }
        Outcome::Dead { error } => Some(Ending {
            set: "state = 'dead', last_error = ?5",
            extra: vec![error],
            to: |_| "dead",
            outcome: |_| "dead",
            error: Some(error),
        }),
        Outcome::Park { until, signal } => {
            until_ms = until.unwrap_or(Timestamp::MAX).as_millis();
            Some(Ending {
                set: "state = 'parked', run_at = ?5, parked_on = ?6, \
                      attempt = max(attempt - 1, 0)",
                extra: vec![&until_ms, signal],
                to: |_| "parked",
                outcome: |_| "parked",
                error: None,
            })
        }
        Outcome::Release => Some(Ending {
            set: "state = 'available', run_at = ?4, attempt = max(attempt - 1, 0)",
            extra: Vec::new(),
            to: |_| "available",
            outcome: |_| "released",
            error: None,
        }),
    };
    let changed = match ending {
        None => {
            let moved: Vec<(String, String, Option<String>)> = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET {COMPLETED}, updated_at = ?4 WHERE {HELD} \
                     RETURNING lane, kind, claimed_from"
                ))?
                .query_map(params![id, fence, owner, n], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            count_completions(tx, &moved)?;
            moved.len()
        }
        Some(e) => {
            // Read the row as it is, write the outcome, then its attempt and its counters.
            let guard: [&dyn rusqlite::ToSql; 4] = [&id, &fence, &owner, &n];
            let held = before(tx, HELD, &guard)?;
            let all: Vec<&dyn rusqlite::ToSql> = guard.into_iter().chain(e.extra).collect();
            let changed = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET {}, lease_owner = NULL, lease_expires_at = NULL, \
                     updated_at = ?4 WHERE {HELD}",
                    e.set
                ))?
                .execute(all.as_slice())?;
            record_ended(tx, &held, now, e.outcome, e.error)?;
            count(
                tx,
                held.iter().map(|r| {
                    (
                        r.lane.as_str(),
                        r.kind.as_str(),
                        Some(r.counted_as()),
                        Some((e.to)(r)),
                    )
                }),
            )?;
            changed
        }
    };
    if changed == 1 {
        return Ok(());
    }
    if matches!(f.outcome, Outcome::Complete) && f.repeat_is_success {
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
    let mut stmt = tx.prepare_cached(&format!(
        "UPDATE work_items AS w SET {COMPLETED}, updated_at = ?2 \
         FROM (SELECT value ->> 0 AS id, value ->> 1 AS fence, value ->> 2 AS owner \
               FROM json_each(?1)) AS b \
         WHERE w.id = b.id AND w.fence = b.fence AND w.lease_owner = b.owner \
             AND w.state = 'running' AND w.lease_expires_at > ?2 \
         RETURNING id, fence, lane, kind, claimed_from"
    ))?;
    let rows = stmt.query_map(params![json, now.as_millis()], |r| {
        Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?, r.get(4)?)))
    })?;
    let mut moved = Vec::with_capacity(triples.len());
    for row in rows {
        let (key, origin) = row?;
        done.insert(key);
        moved.push(origin);
    }
    count_completions(tx, &moved)?;
    Ok(done)
}

/// The counters' change of completed items, given as (lane, kind, state claimed from):
/// one statement for the batch, in its transaction.
fn count_completions(
    tx: &Transaction<'_>,
    moved: &[(String, String, Option<String>)],
) -> StoreResult<()> {
    count(
        tx,
        moved.iter().map(|(lane, kind, from)| {
            (
                lane.as_str(),
                kind.as_str(),
                Some(from.as_deref().unwrap_or("available")),
                Some("completed"),
            )
        }),
    )
}

/// A retry's end: dead on its last attempt, else failed.
fn retried(r: &Before) -> &'static str {
    if r.attempt >= r.max_attempts {
        "dead"
    } else {
        "failed"
    }
}
