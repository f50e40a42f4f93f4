//! Writes made from outside a lease: an operator's retry, discard, cancel and release of a
//! worker's items, and the signal that wakes items parked on it.

use rusqlite::{Connection, OptionalExtension, params};

use super::moves::{before, count, record_ended};
use super::{LIVE, write};
use crate::error::StoreError;
use crate::item::{ItemId, ItemState};
use crate::store::StoreResult;
use crate::store::sql::parse_state;
use crate::time::Timestamp;

fn state_of(conn: &Connection, id: ItemId) -> StoreResult<ItemState> {
    let state: Option<String> = conn
        .query_row("SELECT state FROM work_items WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?;
    let state = state.ok_or(StoreError::NotFound(id))?;
    parse_state(&state)
}

/// Runs `sql`, a write answering the (lane, kind) of each item it moved from `from` to
/// `to` (`None`: deleted), and counts the moves; returns how many.
fn moved(
    tx: &rusqlite::Transaction<'_>,
    sql: &str,
    params: impl rusqlite::Params,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<usize> {
    let rows: Vec<(String, String)> = tx
        .prepare_cached(sql)?
        .query_map(params, |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    count(
        tx,
        rows.iter()
            .map(|(lane, kind)| (lane.as_str(), kind.as_str(), from, to)),
    )?;
    Ok(rows.len())
}

/// An operator's change that matched no row: the item is not in the state it needs, and
/// the error says which it is in.
fn changed_or_wrong_state(
    conn: &Connection,
    id: ItemId,
    changed: usize,
    expected: &'static str,
) -> StoreResult<()> {
    if changed == 0 {
        let state = state_of(conn, id)?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected,
        });
    }
    Ok(())
}

pub(crate) fn retry(conn: &mut Connection, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let tx = write(conn)?;
    let moved = moved(
        &tx,
        "UPDATE work_items SET state = 'available', attempt = 0, run_at = ?2, updated_at = ?2 \
         WHERE id = ?1 AND state = 'dead' RETURNING lane, kind",
        params![id, now.as_millis()],
        Some("dead"),
        Some("available"),
    )?;
    changed_or_wrong_state(&tx, id, moved, "dead")?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn retry_all_dead(
    conn: &mut Connection,
    kind: Option<&str>,
    limit: Option<u64>,
    now: Timestamp,
) -> StoreResult<u64> {
    let tx = write(conn)?;
    // SQLite reads a negative LIMIT as none.
    let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let changed = moved(
        &tx,
        "UPDATE OR IGNORE work_items SET state = 'available', attempt = 0, run_at = ?1, \
         updated_at = ?1 WHERE id IN (SELECT id FROM work_items WHERE state = 'dead' \
         AND (?2 IS NULL OR kind = ?2) ORDER BY id LIMIT ?3) RETURNING lane, kind",
        params![now.as_millis(), kind, limit],
        Some("dead"),
        Some("available"),
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn discard(conn: &mut Connection, id: ItemId) -> StoreResult<()> {
    let tx = write(conn)?;
    let changed = moved(
        &tx,
        "DELETE FROM work_items WHERE id = ?1 AND state = 'dead' RETURNING lane, kind",
        [id],
        Some("dead"),
        None,
    )?;
    changed_or_wrong_state(&tx, id, changed, "dead")?;
    tx.execute("DELETE FROM work_effects WHERE item_id = ?1", [id])?;
    tx.execute("DELETE FROM work_attempts WHERE item_id = ?1", [id])?;
    tx.execute("DELETE FROM item_artifacts WHERE item_id = ?1", [id])?;
    tx.commit()?;
    Ok(())
}

/// Wakes the items parked on a signal (?1) at ?2, at most ?3 (negative: all), oldest
/// first, through `work_items_parked`.
pub(super) const SIGNAL: &str = "UPDATE work_items SET state = 'available', run_at = ?2, parked_on = NULL, \
     updated_at = ?2 WHERE id IN (SELECT id FROM work_items \
     WHERE state = 'parked' AND parked_on = ?1 ORDER BY id LIMIT ?3) RETURNING lane, kind";

pub(crate) fn signal(
    conn: &mut Connection,
    signal: &str,
    limit: Option<u64>,
    now: Timestamp,
) -> StoreResult<u64> {
    let tx = write(conn)?;
    // SQLite reads a negative LIMIT as none.
    let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let changed = moved(
        &tx,
        SIGNAL,
        params![signal, now.as_millis(), limit],
        Some("parked"),
        Some("available"),
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn cancel(conn: &mut Connection, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let tx = write(conn)?;
    let live = format!("id = ?1 AND {LIVE}");
    let rows = before(&tx, &live, &[&id])?;
    let changed = tx.execute(
        &format!(
            "UPDATE work_items SET state = 'dead', last_error = 'cancelled by an operator', \
             lease_owner = NULL, lease_expires_at = NULL, parked_on = NULL, updated_at = ?2 \
             WHERE {live}"
        ),
        params![id, now.as_millis()],
    )?;
    // A running item's attempt ends here; a waiting one's does not.
    record_ended(
        &tx,
        &rows,
        now,
        |_| "dead",
        Some("cancelled by an operator"),
    )?;
    count(
        &tx,
        rows.iter().map(|r| {
            (
                r.lane.as_str(),
                r.kind.as_str(),
                Some(r.counted_as()),
                Some("dead"),
            )
        }),
    )?;
    changed_or_wrong_state(
        &tx,
        id,
        changed,
        "live (available, running, failed or parked)",
    )?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn release_worker(
    conn: &mut Connection,
    owner: &str,
    now: Timestamp,
) -> StoreResult<u64> {
    let tx = write(conn)?;
    let held = "state = 'running' AND lease_owner = ?1";
    let rows = before(&tx, held, &[&owner])?;
    let changed = tx.execute(
        &format!(
            "UPDATE work_items SET state = 'available', run_at = ?2, lease_owner = NULL, \
             lease_expires_at = NULL, last_error = 'released by an operator', updated_at = ?2 \
             WHERE {held}"
        ),
        params![owner, now.as_millis()],
    )?;
    record_ended(&tx, &rows, now, |_| "released", None)?;
    count(
        &tx,
        rows.iter().map(|r| {
            (
                r.lane.as_str(),
                r.kind.as_str(),
                Some(r.counted_as()),
                Some("available"),
            )
        }),
    )?;
    tx.execute(
        "UPDATE workers SET state = 'OFFLINE' WHERE id = ?1",
        [owner],
    )?;
    tx.commit()?;
    Ok(changed as u64)
}
