//! Worker rows: registering and updating a worker, listing them, and marking silent ones
//! offline.

use rusqlite::{Connection, params};

use super::{conversion, write};
use crate::item::{WorkerRecord, WorkerState};
use crate::store::StoreResult;
use crate::store::sql::worker_record;
use crate::time::Timestamp;

pub(crate) fn put_worker(conn: &mut Connection, w: &WorkerRecord) -> StoreResult<()> {
    let tx = write(conn)?;
    tx.prepare_cached(
        "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO UPDATE SET lanes = excluded.lanes, \
         state = excluded.state, last_seen_at = excluded.last_seen_at, \
         lease_ms = excluded.lease_ms",
    )?
    .execute(params![
        w.id,
        w.lanes.join(","),
        w.state.as_str(),
        w.started_at.as_millis(),
        w.last_seen_at.as_millis(),
        w.lease_ms,
    ])?;
    tx.commit()?;
    Ok(())
}

/// A loop's presence: never turns an operator's DRAINING back (see `Backend::touch_worker`).
pub(crate) fn touch_worker(conn: &mut Connection, w: &WorkerRecord) -> StoreResult<WorkerState> {
    let tx = write(conn)?;
    let state: String = tx
        .prepare_cached(
            "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO UPDATE SET \
             lanes = excluded.lanes, last_seen_at = excluded.last_seen_at, \
             lease_ms = excluded.lease_ms, \
             state = CASE WHEN workers.state IN ('DRAINING', 'UPGRADE_REQUIRED') THEN workers.state ELSE excluded.state END \
             RETURNING state",
        )?
        .query_row(
            params![
                w.id,
                w.lanes.join(","),
                w.state.as_str(),
                w.started_at.as_millis(),
                w.last_seen_at.as_millis(),
                w.lease_ms,
            ],
            |r| r.get(0),
        )?;
    tx.commit()?;
    WorkerState::parse(&state)
        .ok_or_else(|| crate::error::StoreError::Task(format!("unknown worker state `{state}`")))
}

/// An operator's drain of worker `id`; whether a row changed.
pub(crate) fn drain_worker(conn: &mut Connection, id: &str) -> StoreResult<bool> {
    let tx = write(conn)?;
    let changed = tx.execute(
        "UPDATE workers SET state = 'DRAINING' WHERE id = ?1 AND state <> 'OFFLINE'",
        [id],
    )?;
    tx.commit()?;
    Ok(changed == 1)
}

pub(crate) fn workers(conn: &mut Connection) -> StoreResult<Vec<WorkerRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, lanes, state, started_at, last_seen_at, lease_ms FROM workers ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        let (lanes, state): (String, String) = (r.get(1)?, r.get(2)?);
        let times = (r.get(3)?, r.get(4)?, r.get(5)?);
        worker_record(r.get(0)?, &lanes, &state, times).map_err(|e| conversion(2, e))
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub(crate) fn mark_silent_workers(
    conn: &mut Connection,
    now: Timestamp,
) -> StoreResult<Vec<String>> {
    let tx = write(conn)?;
    let ids = {
        let mut stmt = tx.prepare_cached(
            "UPDATE workers SET state = 'OFFLINE' WHERE state <> 'OFFLINE' \
             AND ?1 - last_seen_at > 3 * min(lease_ms, 1000000000000) RETURNING id",
        )?;
        let rows = stmt.query_map([now.as_millis()], |r| r.get::<_, String>(0))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    tx.commit()?;
    let mut ids = ids;
    ids.sort();
    Ok(ids)
}
