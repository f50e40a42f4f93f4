//! The SQL of every store operation. Each function runs one `BEGIN IMMEDIATE` transaction
//! (or one read) on the given connection.
//!
//! Split by what each operation does; this module holds what they share (the column list,
//! the fence guard, the write transaction and row decoding).

mod admin;
mod effects;
mod enqueue;
mod finish;
mod lease;
mod moves;
mod outbox;
#[cfg(test)]
mod plans;
mod queries;
mod retention;
mod workers;

pub(crate) use admin::{cancel, discard, release_worker, retry, retry_all_dead, signal};
pub(crate) use effects::{begin_effect, effect, effects, record_effect};
pub(crate) use enqueue::enqueue_many;
pub(crate) use finish::finish_many;
pub(crate) use lease::{checkpoint, claim, has_due_sql, heartbeat, sweep};
pub(crate) use outbox::{relay_outbox, transaction};
pub(crate) use queries::{ages, attempts, counts, get, list, outbox_stats, store_id};
pub(crate) use retention::{purge_completed, purge_retained};
pub(crate) use workers::{drain_worker, mark_silent_workers, put_worker, touch_worker, workers};

use rusqlite::types::Type;
use rusqlite::{Connection, Row, Transaction, TransactionBehavior};
use serde_json::Value;

use crate::item::{ItemRecord, ItemState};
use crate::store::sql::COLS;
use crate::time::Timestamp;

/// The guard every fenced update carries: ?1 = id, ?2 = fence, ?3 = owner, ?4 = now. The
/// owner as well as the fence: fences are guessable, a lease's holder is not.
pub(super) const HELD: &str =
    "id = ?1 AND fence = ?2 AND lease_owner = ?3 AND state = 'running' AND lease_expires_at > ?4";

/// The states a claim takes an item from, as the predicate of `work_items_claim` spells
/// it (`migrations/sqlite/0007_state_predicates.sql`). SQLite uses a partial index only
/// for a query whose WHERE clause holds the index's predicate as written, or a term that
/// implies it (`state = 'available'` does; an `IN` list implies no `OR` chain), and
/// evaluates `state IN (…)` of more than two values by building a table for every row it
/// writes: hence `OR`, and one text for the index and its queries.
pub(super) const CLAIMABLE: &str = "(state = 'available' OR state = 'failed' OR state = 'parked')";

/// The states an item is live in (not completed, dead or cancelled): the predicate of the
/// unique `work_items_dedupe`, as [`CLAIMABLE`] is `work_items_claim`'s.
pub(super) const LIVE: &str =
    "(state = 'available' OR state = 'running' OR state = 'failed' OR state = 'parked')";

/// The states off the hot path that `stats` reads by age: `work_items_resting`'s predicate.
pub(super) const RESTING: &str = "(state = 'failed' OR state = 'dead' OR state = 'parked')";

/// How many columns [`COLS`] lists: where a column a statement returns after them is.
pub(super) const COLS_COUNT: usize = 20;

pub(super) fn write(conn: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
}

fn conversion(col: usize, msg: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, Type::Text, msg.into())
}

/// A stored JSON text; text that does not parse comes back as a JSON string, so the
/// handler's decode fails and the item goes dead (undecodable payload is permanent).
fn json_text(raw: String) -> Value {
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

fn record(row: &Row<'_>) -> rusqlite::Result<ItemRecord> {
    let state: String = row.get(4)?;
    let state = state
        .parse::<ItemState>()
        .map_err(|e| conversion(4, e.to_string()))?;
    // A completed item keeps its last holder in the column (its last attempt's record,
    // see `finish::COMPLETED`); a lease it has not.
    let lease_owner = match state {
        ItemState::Completed => None,
        _ => row.get(9)?,
    };
    Ok(ItemRecord {
        id: row.get(0)?,
        kind: row.get(1)?,
        lane: row.get(2)?,
        payload: json_text(row.get(3)?),
        state,
        priority: row.get(5)?,
        attempt: row.get(6)?,
        max_attempts: row.get(7)?,
        run_at: Timestamp::from_millis(row.get(8)?),
        lease_owner,
        lease_expires_at: row.get::<_, Option<i64>>(10)?.map(Timestamp::from_millis),
        fence: row.get(11)?,
        dedupe_key: row.get(12)?,
        checkpoint: row.get::<_, Option<String>>(13)?.map(json_text),
        last_error: row.get(14)?,
        parked_on: row.get(15)?,
        created_at: Timestamp::from_millis(row.get(16)?),
        updated_at: Timestamp::from_millis(row.get(17)?),
        claimed_at: row.get::<_, Option<i64>>(18)?.map(Timestamp::from_millis),
        account: row
            .get::<_, Option<String>>(19)?
            .unwrap_or_else(|| crate::item::DEFAULT_ACCOUNT.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cols_count_is_the_length_of_cols() {
        assert_eq!(super::COLS.split(',').count(), super::COLS_COUNT);
    }
}
