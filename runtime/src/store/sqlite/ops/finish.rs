//! Finishing held items: completions in one bulk statement, then every other outcome's
//! fenced update.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::moves::{Before, before, count, record_ended};
use super::{HELD, write};
use crate::error::StoreError;
use crate::item::{ClaimOrigin, Fence, Finish, ItemId, Outcome};
use crate::store::StoreResult;
use crate::store::sql::completions_by_holder;
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
            count_completions(
                tx,
                moved
                    .iter()
                    .map(|(lane, kind, from)| (lane.as_str(), kind.as_str(), from.as_deref())),
            )?;
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
        // Completion repeated by its holder with the same fence is success (a completed
        // item keeps its holder); under another's name it is refused like any other write.
        let done: Option<bool> = tx
            .prepare_cached(
                "SELECT state = 'completed' AND fence = ?2 AND lease_owner IS ?3 \
                 FROM work_items WHERE id = ?1",
            )?
            .query_row(params![id, fence, owner], |r| r.get(0))
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
        if matches!(f.outcome, Outcome::Complete)
            && completed.contains(&(f.id, f.fence, f.owner.as_str()))
        {
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

/// Completes every `Complete` of `batch`, one statement per holder (a loop's batch, or a
/// remote worker's, has one); each row still checks its own fence, owner, state and lease.
/// Returns the (id, fence, holder)s it completed (a finish presented under another holder's
/// name beside the real holder's is not taken for it); the rest go through [`finish_one`],
/// which tells a repeated completion from a stale one.
fn complete_bulk<'a>(
    tx: &Transaction<'_>,
    batch: &'a [Finish],
    now: Timestamp,
) -> StoreResult<HashSet<(ItemId, Fence, &'a str)>> {
    let groups = completions_by_holder(batch);
    let mut done = HashSet::with_capacity(groups.iter().map(|(_, group)| group.len()).sum());
    for (owner, group) in &groups {
        complete_held_by(tx, owner, group, now, &mut done)?;
    }
    Ok(done)
}

/// A batch's completions held by one holder: ?1 the (id, fence) pairs as a JSON array,
/// ?2 now, ?3 the holder; each completed row's `returned` columns.
pub(super) fn complete_sql(returned: &str) -> String {
    format!(
        "UPDATE work_items AS w SET {COMPLETED}, updated_at = ?2 \
         FROM (SELECT value ->> 0 AS id, value ->> 1 AS fence FROM json_each(?1)) AS b \
         WHERE w.id = b.id AND w.fence = b.fence AND w.lease_owner = ?3 \
             AND w.state = 'running' AND w.lease_expires_at > ?2 \
         RETURNING {returned}"
    )
}

/// Completes `completions`, all held by `owner`, in one statement, adding the (id, fence,
/// holder)s it completed to `done`, and counts them. A group whose every completion carries
/// its claim's origin (a local loop's) is counted from that, each row's lane, kind and
/// state not read back (only its id and fence); otherwise from the rows.
fn complete_held_by<'a>(
    tx: &Transaction<'_>,
    owner: &'a str,
    completions: &[&'a Finish],
    now: Timestamp,
    done: &mut HashSet<(ItemId, Fence, &'a str)>,
) -> StoreResult<()> {
    let pairs: Vec<[i64; 2]> = completions.iter().map(|f| [f.id, f.fence]).collect();
    let json = serde_json::to_string(&pairs)?;
    let origins: Option<HashMap<(ItemId, Fence), &ClaimOrigin>> = completions
        .iter()
        .map(|f| f.origin.as_ref().map(|o| ((f.id, f.fence), o)))
        .collect();
    let returned = if origins.is_some() {
        "id, fence"
    } else {
        "id, fence, lane, kind, claimed_from"
    };
    let mut stmt = tx.prepare_cached(&complete_sql(returned))?;
    let mut rows = stmt.query(params![json, now.as_millis(), owner])?;
    match origins {
        Some(origins) => {
            let mut moved = Vec::with_capacity(completions.len());
            while let Some(r) = rows.next()? {
                let key = (r.get(0)?, r.get(1)?);
                if let Some(o) = origins.get(&key) {
                    moved.push((o.lane.as_str(), o.kind.as_str(), Some(o.from.as_str())));
                }
                done.insert((key.0, key.1, owner));
            }
            drop(rows);
            count_completions(tx, moved)
        }
        None => {
            let mut moved: Vec<(String, String, Option<String>)> =
                Vec::with_capacity(completions.len());
            while let Some(r) = rows.next()? {
                done.insert((r.get(0)?, r.get(1)?, owner));
                moved.push((r.get(2)?, r.get(3)?, r.get(4)?));
            }
            drop(rows);
            count_completions(
                tx,
                moved
                    .iter()
                    .map(|(lane, kind, from)| (lane.as_str(), kind.as_str(), from.as_deref())),
            )
        }
    }
}

/// The counters' change of completed items, given as (lane, kind, state claimed from, `None`
/// for available): one statement for the batch, in its transaction.
fn count_completions<'a>(
    tx: &Transaction<'_>,
    moved: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
) -> StoreResult<()> {
    count(
        tx,
        moved.into_iter().map(|(lane, kind, from)| {
            (
                lane,
                kind,
                Some(from.unwrap_or("available")),
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
