//! Read-only queries: one item, a filtered list, per-lane stats, outbox stats and counts
//! per kind and state.

use super::{COLS, limit_of, parse_state, record};
use crate::item::{ItemId, ItemRecord, ItemState, LaneStats, ListFilter, OutboxStats};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::store::sql::LaneTally;
use crate::time::Timestamp;

pub(crate) async fn get(db: &PostgresBackend, id: ItemId) -> StoreResult<Option<ItemRecord>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(&format!("SELECT {COLS} FROM work_items WHERE id = $1"))
        .await?;
    conn.query_opt(&stmt, &[&id])
        .await?
        .as_ref()
        .map(record)
        .transpose()
}

pub(crate) async fn list(
    db: &PostgresBackend,
    filter: &ListFilter,
) -> StoreResult<Vec<ItemRecord>> {
    let conn = db.conn().await?;
    let order = if filter.newest_first { "DESC" } else { "ASC" };
    let stmt = conn
        .prepare_cached(&format!(
            "SELECT {COLS} FROM work_items WHERE ($1::text IS NULL OR state = $1) \
             AND ($2::text IS NULL OR lane = $2) AND ($4::text IS NULL OR kind = $4) \
             ORDER BY id {order} LIMIT $3"
        ))
        .await?;
    let limit: Option<i64> = filter.limit.map(limit_of);
    let rows = conn
        .query(
            &stmt,
            &[
                &filter.state.map(ItemState::as_str),
                &filter.lane,
                &limit,
                &filter.kind,
            ],
        )
        .await?;
    rows.iter().map(record).collect()
}

pub(crate) async fn stats(db: &PostgresBackend, now: Timestamp) -> StoreResult<Vec<LaneStats>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT lane, state, count(*), min(created_at), \
                    min(CASE WHEN run_at <= $1 THEN run_at END), \
                    (state = 'available' AND run_at > $1) AS scheduled \
             FROM work_items GROUP BY lane, state, scheduled",
        )
        .await?;
    let rows = conn.query(&stmt, &[&now.as_millis()]).await?;
    let mut lanes = LaneTally::new(now);
    for r in &rows {
        let lane: String = r.try_get(0)?;
        let state = parse_state(&r.try_get::<_, String>(1)?)?;
        let count: i64 = r.try_get(2)?;
        if r.try_get::<_, bool>(5)? {
            lanes.scheduled(lane, count);
            continue;
        }
        lanes.add(lane, state, count, r.try_get(3)?, r.try_get(4)?);
    }
    Ok(lanes.finish())
}

pub(crate) async fn outbox_stats(db: &PostgresBackend, now: Timestamp) -> StoreResult<OutboxStats> {
    let conn = db.conn().await?;
    let row = conn
        .query_one(
            "SELECT count(*) FILTER (WHERE relay_error IS NULL), \
                    count(*) FILTER (WHERE relay_error IS NOT NULL), \
                    min(created_at) FILTER (WHERE relay_error IS NULL) \
             FROM outbox WHERE relayed_at IS NULL",
            &[],
        )
        .await?;
    let (pending, refused, oldest): (i64, i64, Option<i64>) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    Ok(OutboxStats {
        pending: u64::try_from(pending).unwrap_or(0),
        refused: u64::try_from(refused).unwrap_or(0),
        oldest_pending_age_ms: oldest.map_or(0, |t| now.millis_since(Timestamp::from_millis(t))),
    })
}

pub(crate) async fn kind_counts(
    db: &PostgresBackend,
) -> StoreResult<Vec<(String, ItemState, u64)>> {
    let conn = db.conn().await?;
    let rows = conn
        .query(
            "SELECT kind, state, count(*) FROM work_items GROUP BY kind, state \
             ORDER BY kind, state",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let n: i64 = r.try_get(2)?;
            Ok((
                r.try_get(0)?,
                parse_state(&r.try_get::<_, String>(1)?)?,
                u64::try_from(n).unwrap_or(0),
            ))
        })
        .collect()
}
