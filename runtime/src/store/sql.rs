//! What the SQL backends (SQLite and PostgreSQL) share beyond their dialects: the item
//! columns every query reads, the states an operator may act on, the claim order, worker
//! rows and the too-new-schema refusal.

use super::{Claimed, SCHEMA_VERSION, StoreResult};
use crate::error::StoreError;
use crate::item::{WorkerRecord, WorkerState};
use crate::time::Timestamp;

/// The `work_items` columns a row is decoded from, in the order both backends decode them.
pub(crate) const COLS: &str = "id, kind, lane, payload, state, priority, attempt, max_attempts, run_at, \
    lease_owner, lease_expires_at, fence, dedupe_key, checkpoint, last_error, parked_on, \
    created_at, updated_at, claimed_at, account";

/// The states an item is live in (not completed, dead or cancelled).
pub(crate) const LIVE: &str = "('available', 'running', 'failed', 'parked')";

/// Sorts claimed items the way a claim hands them out: highest priority first, then the
/// earliest due, then the oldest id (the SQL `ORDER BY` of both claim queries, which a
/// multi-row `UPDATE … RETURNING` does not keep).
pub(crate) fn claim_order(claimed: &mut [Claimed]) {
    claimed.sort_by(|a, b| {
        (b.item.priority, a.item.run_at, a.item.id).cmp(&(
            a.item.priority,
            b.item.run_at,
            b.item.id,
        ))
    });
}

/// A `workers` row (`id, lanes, state, started_at, last_seen_at, lease_ms`) as a record;
/// `Err` names the state the row holds when it is not one this runtime knows.
pub(crate) fn worker_record(
    id: String,
    lanes: &str,
    state: &str,
    (started_at, last_seen_at, lease_ms): (i64, i64, i64),
) -> Result<WorkerRecord, String> {
    Ok(WorkerRecord {
        id,
        lanes: lanes
            .split(',')
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        state: WorkerState::parse(state)
            .ok_or_else(|| format!("unknown worker state `{state}`"))?,
        started_at: Timestamp::from_millis(started_at),
        last_seen_at: Timestamp::from_millis(last_seen_at),
        lease_ms,
    })
}

/// Refuses a database a newer runtime has migrated (its schema past [`SCHEMA_VERSION`]):
/// this runtime would misread its rows.
pub(crate) fn refuse_newer(found: i64) -> StoreResult<()> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}
