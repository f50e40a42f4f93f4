//! The SQL of every store operation on PostgreSQL. Writes that touch more than one statement
//! run in one transaction; single-statement writes run on their own (a statement is atomic).
//!
//! Split by what each operation does; this module holds what they share (the column list,
//! the fence guard, row decoding and the advisory lock of the sweep and the relay).

mod admin;
mod effects;
mod enqueue;
mod finish;
mod lease;
mod outbox;
mod queries;
mod retention;
mod workers;

pub(crate) use admin::{cancel, discard, release_worker, retry, retry_all_dead, signal};
pub(crate) use effects::{begin_effect, effect, effects, record_effect};
pub(crate) use enqueue::enqueue_many;
pub(crate) use finish::finish_many;
pub(crate) use lease::{checkpoint, claim, heartbeat, sweep};
pub(crate) use outbox::{insert_outbox_in, relay_outbox, transaction};
pub(crate) use queries::{ages, attempts, counts, fold_counts, get, list, outbox_stats, store_id};
pub(crate) use retention::{purge_completed, purge_retained};
pub(crate) use workers::{drain_worker, mark_silent_workers, put_worker, touch_worker, workers};

use deadpool_postgres::Transaction;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::Json;

use crate::error::StoreError;
use crate::item::{ItemRecord, ItemState};
use crate::store::StoreResult;
use crate::store::sql::{COLS, parse_state};
use crate::time::Timestamp;

/// The guard every fenced update carries: $1 = id, $2 = fence, $3 = owner, $4 = now. The
/// owner as well as the fence: fences are guessable, a lease's holder is not.
pub(super) const HELD: &str =
    "id = $1 AND fence = $2 AND lease_owner = $3 AND state = 'running' AND lease_expires_at > $4";

/// The states an item is live in (not completed, dead or cancelled). SQLite spells the same
/// set as an `OR` chain (`store/sqlite/ops/mod.rs`); PostgreSQL compares an array.
const LIVE: &str = "('available', 'running', 'failed', 'parked')";

/// The columns of an ended attempt in `work_attempts`.
const ATTEMPT_COLS: &str =
    "item_id, attempt, fence, holder, claimed_at, finished_at, outcome, error";

/// The counters' net change of one statement, as its data-modifying CTE `counted`: `moves`
/// is a query of `(lane, kind, old_state, new_state)`, one row per item the statement moved
/// (`old_state` NULL for an insert, `new_state` NULL for a delete; a running item's state is
/// the one it was claimed from, see the migration). One set-based insert into
/// `work_count_deltas` per statement, made by the statement itself: no trigger and no
/// transition table.
fn counted(moves: &str) -> String {
    format!(
        "counted AS (INSERT INTO work_count_deltas (lane, kind, state, delta) \
         SELECT m.lane, m.kind, v.state, sum(v.d) FROM ({moves}) AS m \
         CROSS JOIN LATERAL (VALUES (m.old_state::text, -1), (m.new_state::text, 1)) AS v(state, d) \
         WHERE v.state IS NOT NULL GROUP BY m.lane, m.kind, v.state HAVING sum(v.d) <> 0)"
    )
}

/// One statement that ends the running attempt of the rows `target` (a condition on
/// `work_items`) picks: locks them, sets `set` (the new state and what goes with it), writes
/// each ended attempt to `work_attempts` as `outcome` with `error`, and counts each item's
/// move from the state it was claimed from to `new_state` (all three SQL over the row
/// before the update). `now` is the statement's parameter for the time; it answers how many
/// rows it ended. The rows are picked once into `old` and updated by primary key (see
/// `claim` for why not a join).
fn ending(
    target: &str,
    set: &str,
    now: &str,
    new_state: &str,
    outcome: &str,
    error: &str,
) -> String {
    format!(
        "WITH old AS (SELECT id, lane, kind, claimed_from, attempt, max_attempts, fence, \
                 lease_owner, claimed_at FROM work_items WHERE {target} FOR UPDATE), \
         ended AS (UPDATE work_items SET {set}, lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = {now} WHERE id = ANY(ARRAY(SELECT id FROM old))), \
         att AS (INSERT INTO work_attempts ({ATTEMPT_COLS}) \
                 SELECT id, attempt, fence, lease_owner, claimed_at, {now}, {outcome}, {error} \
                 FROM old ON CONFLICT (item_id, fence) DO NOTHING), \
         {counted} \
         SELECT count(*) FROM old",
        counted = counted(&format!(
            "SELECT lane, kind, coalesce(claimed_from, 'available') AS old_state, {new_state} AS new_state FROM old"
        )),
    )
}

fn task(msg: String) -> StoreError {
    StoreError::Task(msg)
}

fn record(row: &Row) -> StoreResult<ItemRecord> {
    let state = parse_state(&row.try_get::<_, String>(4)?)?;
    // A completed item keeps its last holder in the column (its last attempt's record, see
    // `finish::COMPLETED`); a lease it has not.
    let lease_owner = match state {
        ItemState::Completed => None,
        _ => row.try_get(9)?,
    };
    Ok(ItemRecord {
        id: row.try_get(0)?,
        kind: row.try_get(1)?,
        lane: row.try_get(2)?,
        payload: row.try_get::<_, Json<Value>>(3)?.0,
        state,
        priority: row.try_get(5)?,
        attempt: row.try_get(6)?,
        max_attempts: row.try_get(7)?,
        run_at: Timestamp::from_millis(row.try_get(8)?),
        lease_owner,
        lease_expires_at: row
            .try_get::<_, Option<i64>>(10)?
            .map(Timestamp::from_millis),
        fence: row.try_get(11)?,
        dedupe_key: row.try_get(12)?,
        checkpoint: row.try_get::<_, Option<Json<Value>>>(13)?.map(|j| j.0),
        last_error: row.try_get(14)?,
        parked_on: row.try_get(15)?,
        created_at: Timestamp::from_millis(row.try_get(16)?),
        updated_at: Timestamp::from_millis(row.try_get(17)?),
        claimed_at: row
            .try_get::<_, Option<i64>>(18)?
            .map(Timestamp::from_millis),
        account: row
            .try_get::<_, Option<String>>(19)?
            .unwrap_or_else(|| crate::item::DEFAULT_ACCOUNT.to_owned()),
    })
}

fn limit_of(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Takes the transaction-scoped advisory lock `key`, waiting while another session (another
/// host's sweep or relay) holds it: passes run one at a time across hosts. Waiting rather
/// than skipping keeps `sweep()` meaning "expired leases are back when it returns": a pass
/// skipped because another host's pass (with an earlier `now`) held the lock would not.
/// The lock ends with the transaction, so a host that dies mid-pass frees it at once.
async fn lock(tx: &Transaction<'_>, key: i64) -> StoreResult<()> {
    let stmt = tx
        .prepare_cached("SELECT pg_advisory_xact_lock($1)")
        .await?;
    tx.execute(&stmt, &[&key]).await?;
    Ok(())
}
