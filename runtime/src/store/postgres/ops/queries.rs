//! Read-only queries: one item, a filtered list, per-lane stats, outbox stats and counts
//! per kind and state.

use super::{COLS, lock, parse_state, record};
use crate::item::{AttemptRecord, ItemId, ItemRecord, ListFilter, OutboxStats};
use crate::store::postgres::PostgresBackend;
use crate::store::sql::{ListValue, list_query};
use crate::store::{Counts, LaneAges, StoreResult};
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
    let (sql, values) = list_query(filter, '$');
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = values
        .iter()
        .map(|v| -> &(dyn tokio_postgres::types::ToSql + Sync) {
            match v {
                ListValue::Text(text) => text,
                ListValue::Int(n) => n,
            }
        })
        .collect();
    let stmt = conn.prepare_cached(&sql).await?;
    let rows = conn.query(&stmt, &params).await?;
    rows.iter().map(record).collect()
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

/// Items per (lane, kind, state): the folded counts plus the deltas not folded yet, with
/// the running items (as many as are held, through `work_items_lease`) moved from the state
/// they were claimed from, under which the counters keep them, to `running`.
pub(crate) async fn counts(db: &PostgresBackend) -> StoreResult<Counts> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "WITH running AS (SELECT lane, kind, coalesce(claimed_from, 'available') AS claimed_from, \
                 count(*) AS n FROM work_items \
                 WHERE state = 'running' GROUP BY 1, 2, 3) \
             SELECT lane, kind, state, sum(n)::int8 FROM ( \
                 SELECT lane, kind, state, n FROM work_counts \
                 UNION ALL SELECT lane, kind, state, delta FROM work_count_deltas \
                 UNION ALL SELECT lane, kind, claimed_from, -n FROM running \
                 UNION ALL SELECT lane, kind, 'running', n FROM running) c \
             GROUP BY lane, kind, state HAVING sum(n) <> 0 ORDER BY lane, kind, state",
        )
        .await?;
    let rows = conn.query(&stmt, &[]).await?;
    rows.iter()
        .map(|r| {
            let n: i64 = r.try_get(3)?;
            Ok((
                r.try_get(0)?,
                r.try_get(1)?,
                parse_state(&r.try_get::<_, String>(2)?)?,
                u64::try_from(n).unwrap_or(0),
            ))
        })
        .collect()
}

/// Folds the deltas into the counts: one pass at a time across hosts (the sweeper's lock).
pub(crate) async fn fold_counts(db: &PostgresBackend) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    lock(&tx, db.keys.sweep).await?;
    let stmt = tx
        .prepare_cached(
            "WITH d AS (DELETE FROM work_count_deltas RETURNING lane, kind, state, delta), \
             s AS (SELECT lane, kind, state, sum(delta)::int8 AS n FROM d \
                 GROUP BY lane, kind, state) \
             INSERT INTO work_counts AS c (lane, kind, state, n) SELECT lane, kind, state, n FROM s \
             ON CONFLICT (lane, kind, state) DO UPDATE SET n = c.n + excluded.n",
        )
        .await?;
    tx.execute(&stmt, &[]).await?;
    // Keys whose items are all gone (a kind renamed, a lane retired) leave the table.
    tx.execute("DELETE FROM work_counts WHERE n = 0", &[])
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Each lane's oldest item of each state and its scheduled items, one index probe each
/// (the first entry of an index in its order; the scheduled count is the range of available
/// items past now), all in one round trip.
pub(crate) async fn ages(
    db: &PostgresBackend,
    lanes: &[String],
    now: Timestamp,
) -> StoreResult<Vec<LaneAges>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT l.lane, \
               (SELECT run_at FROM work_items WHERE state = 'available' AND lane = l.lane \
                    AND run_at <= $2 ORDER BY run_at LIMIT 1), \
               (SELECT min(created_at) FROM work_items WHERE state = 'running' \
                    AND lane = l.lane), \
               (SELECT updated_at FROM work_items WHERE state = 'completed' AND lane = l.lane \
                    ORDER BY updated_at LIMIT 1), \
               (SELECT created_at FROM work_items WHERE state IN ('failed', 'dead', 'parked') \
                    AND state = 'failed' AND lane = l.lane ORDER BY created_at LIMIT 1), \
               (SELECT created_at FROM work_items WHERE state IN ('failed', 'dead', 'parked') \
                    AND state = 'dead' AND lane = l.lane ORDER BY created_at LIMIT 1), \
               (SELECT created_at FROM work_items WHERE state IN ('failed', 'dead', 'parked') \
                    AND state = 'parked' AND lane = l.lane ORDER BY created_at LIMIT 1), \
               (SELECT count(*) FROM work_items WHERE state = 'available' AND lane = l.lane \
                    AND run_at > $2) \
             FROM unnest($1::text[]) AS l(lane) ORDER BY l.lane",
        )
        .await?;
    let rows = conn.query(&stmt, &[&lanes, &now.as_millis()]).await?;
    rows.iter()
        .map(|r| {
            let mut ages = LaneAges::new(r.try_get::<_, String>(0)?);
            for (i, slot) in ages.oldest.iter_mut().enumerate() {
                *slot = r
                    .try_get::<_, Option<i64>>(i + 1)?
                    .map(Timestamp::from_millis);
            }
            let scheduled: i64 = r.try_get(7)?;
            ages.scheduled = u64::try_from(scheduled).unwrap_or(0);
            Ok(ages)
        })
        .collect()
}

/// The ended attempts of item `id`, oldest first: its rows in `work_attempts`, and a
/// completed item's own row (its last attempt: see `finish::COMPLETED`).
pub(crate) async fn attempts(db: &PostgresBackend, id: ItemId) -> StoreResult<Vec<AttemptRecord>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT attempt, fence, holder, claimed_at, finished_at, outcome, error \
             FROM work_attempts WHERE item_id = $1 \
             UNION ALL SELECT attempt, fence, lease_owner, claimed_at, updated_at, \
                 'completed', NULL FROM work_items \
             WHERE id = $1 AND state = 'completed' AND fence > 0 \
             ORDER BY 2",
        )
        .await?;
    let rows = conn.query(&stmt, &[&id]).await?;
    rows.iter()
        .map(|r| {
            Ok(AttemptRecord {
                attempt: r.try_get(0)?,
                fence: r.try_get(1)?,
                holder: r.try_get(2)?,
                claimed_at: r.try_get::<_, Option<i64>>(3)?.map(Timestamp::from_millis),
                finished_at: Timestamp::from_millis(r.try_get(4)?),
                outcome: r.try_get(5)?,
                error: r.try_get(6)?,
            })
        })
        .collect()
}

/// The store's id, minted by the schema's migration.
pub(crate) async fn store_id(db: &PostgresBackend) -> StoreResult<String> {
    let conn = db.conn().await?;
    let row = conn
        .query_one("SELECT value FROM queue_meta WHERE key = 'store_id'", &[])
        .await?;
    Ok(row.try_get(0)?)
}
