//! Retention: purging completed items with their effects, relayed outbox rows and offline
//! workers.

use rusqlite::{Connection, params};

use super::moves::count;
use super::write;
use crate::store::StoreResult;
use crate::time::Timestamp;

pub(crate) fn purge_completed(
    conn: &mut Connection,
    before: Timestamp,
    limit: usize,
) -> StoreResult<u64> {
    let tx = write(conn)?;
    let picked = "SELECT id FROM work_items WHERE state = 'completed' AND updated_at < ?1 \
                  ORDER BY id LIMIT ?2";
    let args = params![before.as_millis(), i64::try_from(limit).unwrap_or(i64::MAX)];
    tx.execute(
        &format!("DELETE FROM work_effects WHERE item_id IN ({picked})"),
        args,
    )?;
    for table in ["work_attempts", "item_artifacts"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE item_id IN ({picked})"),
            args,
        )?;
    }
    let gone: Vec<(String, String)> = tx
        .prepare(&format!(
            "DELETE FROM work_items WHERE id IN ({picked}) RETURNING lane, kind"
        ))?
        .query_map(args, |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    count(
        &tx,
        gone.iter()
            .map(|(lane, kind)| (lane.as_str(), kind.as_str(), Some("completed"), None)),
    )?;
    let changed = gone.len();
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn purge_retained(
    conn: &mut Connection,
    before: Timestamp,
    limit: usize,
) -> StoreResult<(u64, u64)> {
    let tx = write(conn)?;
    let outbox = tx.execute(
        "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox \
         WHERE relayed_at IS NOT NULL AND relayed_at < ?1 ORDER BY relayed_at LIMIT ?2)",
        params![before.as_millis(), i64::try_from(limit).unwrap_or(i64::MAX)],
    )?;
    let workers = tx.execute(
        "DELETE FROM workers WHERE state = 'OFFLINE' AND last_seen_at < ?1",
        [before.as_millis()],
    )?;
    tx.commit()?;
    Ok((outbox as u64, workers as u64))
}
