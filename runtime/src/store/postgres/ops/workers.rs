//! Worker rows: registering and updating a worker, listing them, and marking silent ones
//! offline.

use super::task;
use crate::item::{WorkerRecord, WorkerState};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::store::sql::worker_record;
use crate::time::Timestamp;

pub(crate) async fn put_worker(db: &PostgresBackend, w: &WorkerRecord) -> StoreResult<()> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET \
             lanes = excluded.lanes, state = excluded.state, \
             last_seen_at = excluded.last_seen_at, lease_ms = excluded.lease_ms",
        )
        .await?;
    conn.execute(
        &stmt,
        &[
            &w.id,
            &w.lanes.join(","),
            &w.state.as_str(),
            &w.started_at.as_millis(),
            &w.last_seen_at.as_millis(),
            &w.lease_ms,
        ],
    )
    .await?;
    Ok(())
}

/// A loop's presence: never turns an operator's DRAINING back (see `Backend::touch_worker`).
pub(crate) async fn touch_worker(
    db: &PostgresBackend,
    w: &WorkerRecord,
) -> StoreResult<WorkerState> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "INSERT INTO workers AS o (id, lanes, state, started_at, last_seen_at, lease_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET \
             lanes = excluded.lanes, last_seen_at = excluded.last_seen_at, \
             lease_ms = excluded.lease_ms, \
             state = CASE WHEN o.state IN ('DRAINING', 'UPGRADE_REQUIRED') THEN o.state ELSE excluded.state END \
             RETURNING state",
        )
        .await?;
    let row = conn
        .query_one(
            &stmt,
            &[
                &w.id,
                &w.lanes.join(","),
                &w.state.as_str(),
                &w.started_at.as_millis(),
                &w.last_seen_at.as_millis(),
                &w.lease_ms,
            ],
        )
        .await?;
    let state: String = row.try_get(0)?;
    WorkerState::parse(&state).ok_or_else(|| task(format!("unknown worker state `{state}`")))
}

/// An operator's drain of worker `id`; whether a row changed.
pub(crate) async fn drain_worker(db: &PostgresBackend, id: &str) -> StoreResult<bool> {
    let conn = db.conn().await?;
    let changed = conn
        .execute(
            "UPDATE workers SET state = 'DRAINING' WHERE id = $1 AND state <> 'OFFLINE'",
            &[&id],
        )
        .await?;
    Ok(changed == 1)
}

pub(crate) async fn workers(db: &PostgresBackend) -> StoreResult<Vec<WorkerRecord>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT id, lanes, state, started_at, last_seen_at, lease_ms FROM workers \
             ORDER BY id",
        )
        .await?;
    let rows = conn.query(&stmt, &[]).await?;
    rows.iter()
        .map(|r| {
            let (lanes, state): (String, String) = (r.try_get(1)?, r.try_get(2)?);
            let times = (r.try_get(3)?, r.try_get(4)?, r.try_get(5)?);
            worker_record(r.try_get(0)?, &lanes, &state, times).map_err(task)
        })
        .collect()
}

pub(crate) async fn mark_silent_workers(
    db: &PostgresBackend,
    now: Timestamp,
) -> StoreResult<Vec<String>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "UPDATE workers SET state = 'OFFLINE' WHERE state <> 'OFFLINE' \
             AND $1 - last_seen_at > 3 * LEAST(lease_ms, 1000000000000) RETURNING id",
        )
        .await?;
    let rows = conn.query(&stmt, &[&now.as_millis()]).await?;
    let mut ids = rows
        .iter()
        .map(|r| r.try_get::<_, String>(0))
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort();
    Ok(ids)
}
