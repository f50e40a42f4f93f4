//! Read-only queries: one item, a filtered list, per-lane stats, outbox stats and counts
//! per kind and state.

use rusqlite::{Connection, OptionalExtension, params};

use super::{COLS, record};
use crate::error::StoreError;
use crate::item::{ItemId, ItemRecord, ItemState, LaneStats, ListFilter, OutboxStats};
use crate::store::StoreResult;
use crate::store::sql::LaneTally;
use crate::time::Timestamp;

pub(crate) fn get(conn: &mut Connection, id: ItemId) -> StoreResult<Option<ItemRecord>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLS} FROM work_items WHERE id = ?1"))?
        .query_row([id], record)
        .optional()?)
}

pub(crate) fn list(conn: &mut Connection, filter: &ListFilter) -> StoreResult<Vec<ItemRecord>> {
    let limit = filter
        .limit
        .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let order = if filter.newest_first { "DESC" } else { "ASC" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM work_items WHERE (?1 IS NULL OR state = ?1) \
         AND (?2 IS NULL OR lane = ?2) AND (?4 IS NULL OR kind = ?4) ORDER BY id {order} LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![
            filter.state.map(ItemState::as_str),
            filter.lane,
            limit,
            filter.kind
        ],
        record,
    )?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub(crate) fn stats(conn: &mut Connection, now: Timestamp) -> StoreResult<Vec<LaneStats>> {
    let mut stmt = conn.prepare_cached(
        "SELECT lane, state, count(*), min(created_at), \
                min(CASE WHEN run_at <= ?1 THEN run_at END), \
                state = 'available' AND run_at > ?1 AS scheduled \
         FROM work_items GROUP BY lane, state, scheduled",
    )?;
    let mut lanes = LaneTally::new(now);
    let rows = stmt.query_map([now.as_millis()], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Option<i64>>(3)?,
            r.get::<_, Option<i64>>(4)?,
            r.get::<_, bool>(5)?,
        ))
    })?;
    for row in rows {
        let (lane, state, count, oldest_created, oldest_due, scheduled) = row?;
        if scheduled {
            lanes.scheduled(lane, count);
            continue;
        }
        let state: ItemState = state
            .parse()
            .map_err(|e: crate::item::UnknownState| StoreError::Task(e.to_string()))?;
        lanes.add(lane, state, count, oldest_created, oldest_due);
    }
    Ok(lanes.finish())
}

pub(crate) fn outbox_stats(conn: &mut Connection, now: Timestamp) -> StoreResult<OutboxStats> {
    let (pending, refused, oldest): (i64, i64, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*) FILTER (WHERE relay_error IS NULL), \
                    count(*) FILTER (WHERE relay_error IS NOT NULL), \
                    min(created_at) FILTER (WHERE relay_error IS NULL) \
             FROM outbox WHERE relayed_at IS NULL",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(OutboxStats {
        pending: u64::try_from(pending).unwrap_or(0),
        refused: u64::try_from(refused).unwrap_or(0),
        oldest_pending_age_ms: oldest.map_or(0, |t| now.millis_since(Timestamp::from_millis(t))),
    })
}

pub(crate) fn kind_counts(conn: &mut Connection) -> StoreResult<Vec<(String, ItemState, u64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT kind, state, count(*) FROM work_items GROUP BY kind, state ORDER BY kind, state",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, state, n) = row?;
        let state = state
            .parse::<ItemState>()
            .map_err(|e| StoreError::Task(e.to_string()))?;
        out.push((kind, state, u64::try_from(n).unwrap_or(0)));
    }
    Ok(out)
}
