//! Read-only queries: one item, a filtered list, per-lane stats, outbox stats and counts
//! per kind and state.

use rusqlite::{Connection, OptionalExtension, params};

use super::{COLS, RESTING, record};
use crate::item::{AttemptRecord, ItemId, ItemRecord, ListFilter, OutboxStats};
use crate::store::sql::{ListValue, list_query, parse_state};
use crate::store::{Counts, LaneAges, StoreResult};
use crate::time::Timestamp;

pub(crate) fn get(conn: &mut Connection, id: ItemId) -> StoreResult<Option<ItemRecord>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLS} FROM work_items WHERE id = ?1"))?
        .query_row([id], record)
        .optional()?)
}

pub(crate) fn list(conn: &mut Connection, filter: &ListFilter) -> StoreResult<Vec<ItemRecord>> {
    let (sql, values) = list_query(filter, '?');
    let params: Vec<&dyn rusqlite::ToSql> = values
        .iter()
        .map(|v| -> &dyn rusqlite::ToSql {
            match v {
                ListValue::Text(text) => text,
                ListValue::Int(n) => n,
            }
        })
        .collect();
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params.as_slice(), record)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
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

/// Items per (lane, kind, state), from the counters every transition keeps, with the running
/// items (as many as are held, through `work_items_lease`) moved from the state they were
/// claimed from, under which the counters keep them, to `running`.
pub(crate) fn counts(conn: &mut Connection) -> StoreResult<Counts> {
    let mut stmt = conn.prepare_cached(
        "WITH running AS (SELECT lane, kind, coalesce(claimed_from, 'available') AS claimed_from, \
                 count(*) AS n FROM work_items \
             WHERE state = 'running' GROUP BY 1, 2, 3) \
         SELECT lane, kind, state, sum(n) FROM ( \
             SELECT lane, kind, state, n FROM work_counts \
             UNION ALL SELECT lane, kind, claimed_from, -n FROM running \
             UNION ALL SELECT lane, kind, 'running', n FROM running) \
         GROUP BY lane, kind, state HAVING sum(n) <> 0 ORDER BY lane, kind, state",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (lane, kind, state, n) = row?;
        out.push((
            lane,
            kind,
            parse_state(&state)?,
            u64::try_from(n).unwrap_or(0),
        ));
    }
    Ok(out)
}

/// A lane's (?1) oldest item in a resting state (?2), through `work_items_resting`.
pub(super) fn resting_sql() -> String {
    format!(
        "SELECT created_at FROM work_items WHERE {RESTING} AND lane = ?1 AND state = ?2 \
         ORDER BY created_at LIMIT 1"
    )
}

/// Each lane's oldest item of each state and its scheduled items, one index probe each:
/// the first entry of an index in its order (`ORDER BY … LIMIT 1`), never a count of the
/// table (the scheduled count is the range of available items past now).
pub(crate) fn ages(
    conn: &mut Connection,
    lanes: &[String],
    now: Timestamp,
) -> StoreResult<Vec<LaneAges>> {
    let n = now.as_millis();
    let first = |sql: &str, args: &[&dyn rusqlite::ToSql]| -> StoreResult<Option<i64>> {
        Ok(conn
            .prepare_cached(sql)?
            .query_row(args, |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten())
    };
    let mut out = Vec::with_capacity(lanes.len());
    for lane in lanes {
        let mut ages = LaneAges::new(lane.clone());
        let available = first(
            "SELECT run_at FROM work_items WHERE state = 'available' AND lane = ?1 \
             AND run_at <= ?2 ORDER BY run_at LIMIT 1",
            params![lane, n],
        )?;
        let scheduled = first(
            "SELECT count(*) FROM work_items WHERE state = 'available' AND lane = ?1 \
             AND run_at > ?2",
            params![lane, n],
        )?;
        let running = first(
            "SELECT min(created_at) FROM work_items WHERE state = 'running' AND lane = ?1",
            params![lane],
        )?;
        let completed = first(
            "SELECT updated_at FROM work_items WHERE state = 'completed' AND lane = ?1 \
             ORDER BY updated_at LIMIT 1",
            params![lane],
        )?;
        let resting = |state: &str| first(&resting_sql(), params![lane, state]);
        let (failed, dead, parked) = (resting("failed")?, resting("dead")?, resting("parked")?);
        ages.oldest = [available, running, completed, failed, dead, parked]
            .map(|t| t.map(Timestamp::from_millis));
        ages.scheduled = scheduled.map_or(0, |c| u64::try_from(c).unwrap_or(0));
        out.push(ages);
    }
    Ok(out)
}

/// The ended attempts of item `id`, oldest first.
pub(crate) fn attempts(conn: &mut Connection, id: ItemId) -> StoreResult<Vec<AttemptRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT attempt, fence, holder, claimed_at, finished_at, outcome, error \
         FROM work_attempts WHERE item_id = ?1 \
         UNION ALL SELECT attempt, fence, lease_owner, claimed_at, updated_at, 'completed', NULL \
         FROM work_items WHERE id = ?1 AND state = 'completed' AND fence > 0 \
         ORDER BY 2",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok(AttemptRecord {
            attempt: r.get(0)?,
            fence: r.get(1)?,
            holder: r.get(2)?,
            claimed_at: r.get::<_, Option<i64>>(3)?.map(Timestamp::from_millis),
            finished_at: Timestamp::from_millis(r.get(4)?),
            outcome: r.get(5)?,
            error: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The store's id, minted by the schema's migration.
pub(crate) fn store_id(conn: &mut Connection) -> StoreResult<String> {
    Ok(conn
        .prepare_cached("SELECT value FROM queue_meta WHERE key = 'store_id'")?
        .query_row([], |r| r.get(0))?)
}
