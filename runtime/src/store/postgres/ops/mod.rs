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
use crate::store::sql::{COLS, LIVE};
use crate::time::Timestamp;

/// The guard every fenced update carries: $1 = id, $2 = fence, $3 = owner, $4 = now. The
/// owner as well as the fence: fences are guessable, a lease's holder is not.
const HELD: &str =
    "id = $1 AND fence = $2 AND lease_owner = $3 AND state = 'running' AND lease_expires_at > $4";

fn task(msg: String) -> StoreError {
    StoreError::Task(msg)
}

fn parse_state(s: &str) -> StoreResult<ItemState> {
    s.parse()
        .map_err(|e: crate::item::UnknownState| task(e.to_string()))
}

fn record(row: &Row) -> StoreResult<ItemRecord> {
    let state: String = row.try_get(4)?;
    Ok(ItemRecord {
        id: row.try_get(0)?,
        kind: row.try_get(1)?,
        lane: row.try_get(2)?,
        payload: row.try_get::<_, Json<Value>>(3)?.0,
        state: parse_state(&state)?,
        priority: row.try_get(5)?,
        attempt: row.try_get(6)?,
        max_attempts: row.try_get(7)?,
        run_at: Timestamp::from_millis(row.try_get(8)?),
        lease_owner: row.try_get(9)?,
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
