//! Claims and the fenced writes of a held lease: the claim itself, heartbeats, checkpoints,
//! and the sweep that hands expired leases back.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{COLS, HELD, record, write};
use crate::error::StoreError;
use crate::item::{Claimed, Fence, ItemId};
use crate::store::{ClaimRequest, StoreResult};
use crate::time::Timestamp;

pub(crate) fn claim(
    conn: &mut Connection,
    req: &ClaimRequest,
    now: Timestamp,
) -> StoreResult<Vec<Claimed>> {
    let tx = write(conn)?;
    let mut claimed = {
        let mut stmt = tx.prepare_cached(&format!(
            "UPDATE work_items SET state = 'running', fence = fence + 1, attempt = attempt + 1, \
                 lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3, parked_on = NULL \
             WHERE id IN (SELECT id FROM work_items \
                 WHERE lane = ?4 AND state IN ('available', 'failed', 'parked') AND run_at <= ?3 \
                 ORDER BY priority DESC, run_at, id LIMIT ?5) \
             RETURNING {COLS}"
        ))?;
        let rows = stmt.query_map(
            params![
                req.owner,
                req.lease_until.as_millis(),
                now.as_millis(),
                req.lane,
                i64::try_from(req.n).unwrap_or(i64::MAX),
            ],
            record,
        )?;
        rows.map(|r| {
            r.map(|item| Claimed {
                fence: item.fence,
                lease_expires_at: req.lease_until,
                item,
            })
        })
        .collect::<rusqlite::Result<Vec<_>>>()?
    };
    tx.commit()?;
    crate::store::sql::claim_order(&mut claimed);
    Ok(claimed)
}

pub(crate) fn heartbeat(
    conn: &mut Connection,
    id: ItemId,
    fence: Fence,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<Timestamp> {
    let tx = write(conn)?;
    let renewed: Option<i64> = tx
        .prepare_cached(&format!(
            "UPDATE work_items SET lease_expires_at = ?4, updated_at = ?3 WHERE {HELD} \
             RETURNING lease_expires_at"
        ))?
        .query_row(
            params![id, fence, now.as_millis(), lease_until.as_millis()],
            |r| r.get(0),
        )
        .optional()?;
    tx.commit()?;
    renewed
        .map(Timestamp::from_millis)
        .ok_or(StoreError::StaleLease { id, fence })
}

pub(crate) fn checkpoint(
    conn: &mut Connection,
    id: ItemId,
    fence: Fence,
    state: &Value,
    now: Timestamp,
) -> StoreResult<()> {
    let text = serde_json::to_string(state)?;
    let tx = write(conn)?;
    let changed = tx
        .prepare_cached(&format!(
            "UPDATE work_items SET checkpoint = ?4, updated_at = ?3 WHERE {HELD}"
        ))?
        .execute(params![id, fence, now.as_millis(), text])?;
    tx.commit()?;
    if changed == 1 {
        Ok(())
    } else {
        Err(StoreError::StaleLease { id, fence })
    }
}

pub(crate) fn sweep(conn: &mut Connection, now: Timestamp) -> StoreResult<u64> {
    let tx = write(conn)?;
    let changed = tx
        .prepare_cached(
            "UPDATE work_items SET state = CASE WHEN attempt >= max_attempts THEN 'dead' \
             ELSE 'available' END, last_error = 'lease expired', lease_owner = NULL, \
             lease_expires_at = NULL, run_at = ?1, updated_at = ?1 \
             WHERE state = 'running' AND lease_expires_at <= ?1",
        )?
        .execute([now.as_millis()])?;
    tx.commit()?;
    Ok(changed as u64)
}
