//! Claims and the fenced writes of a held lease: the claim itself, heartbeats, checkpoints,
//! and the sweep that hands expired leases back.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::moves::{before, count, record_ended};
use super::{CLAIMABLE, COLS, COLS_COUNT, HELD, record, write};
use crate::error::StoreError;
use crate::item::{ArtifactRef, Claimed, Held};
use crate::store::sql::{ClaimFilter, claim_filters, parse_state};
use crate::store::{ClaimRequest, StoreResult};
use crate::time::Timestamp;

pub(crate) fn claim(
    conn: &mut Connection,
    req: &ClaimRequest,
    now: Timestamp,
) -> StoreResult<Vec<Claimed>> {
    let tx = write(conn)?;
    let mut claimed = {
        let kinds = req.kinds.as_ref().map(serde_json::to_string).transpose()?;
        let (lease_until, now_ms) = (req.lease_until.as_millis(), now.as_millis());
        let limit = i64::try_from(req.n).unwrap_or(i64::MAX);
        let mut params: Vec<&dyn rusqlite::ToSql> =
            vec![&req.owner, &lease_until, &now_ms, &req.lane, &limit];
        let (filters, which) = claim_filters(req, params.len() + 1, '?', kinds_in);
        for filter in which {
            params.push(match filter {
                ClaimFilter::Kinds => &kinds,
                ClaimFilter::Account => &req.account,
                ClaimFilter::Session => &req.session,
            });
        }
        let mut stmt = tx.prepare_cached(&claim_sql(&filters))?;
        let mut rows = stmt.query(params.as_slice())?;
        let mut claimed = Vec::with_capacity(req.n.min(1024));
        while let Some(row) = rows.next()? {
            let item = record(row)?;
            // The state the claim took it from (NULL: available), which the loop hands back
            // with its completion, so a batch is counted without reading it again.
            let from = match row.get::<_, Option<String>>(COLS_COUNT)? {
                Some(state) => parse_state(&state)?,
                None => crate::item::ItemState::Available,
            };
            claimed.push(Claimed {
                fence: item.fence,
                lease_expires_at: req.lease_until,
                item,
                claimed_from: Some(from),
                inputs: Vec::new(),
            });
        }
        claimed
    };
    if req.with_inputs && !claimed.is_empty() {
        attach_inputs(&tx, &mut claimed)?;
    }
    tx.commit()?;
    crate::store::sql::claim_order(&mut claimed);
    Ok(claimed)
}

/// The claim: ?1 owner, ?2 lease end, ?3 now, ?4 lane, ?5 limit, then `filters`' own
/// parameters (`claim_filters`).
pub(super) fn claim_sql(filters: &str) -> String {
    format!(
        "UPDATE work_items SET state = 'running', fence = fence + 1, attempt = attempt + 1, \
             lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3, claimed_at = ?3, \
             parked_on = NULL, claimed_from = NULLIF(state, 'available') \
         WHERE id IN (SELECT id FROM work_items \
             WHERE lane = ?4 AND {CLAIMABLE} AND run_at <= ?3{filters} \
             ORDER BY priority DESC, run_at, id LIMIT ?5) \
         RETURNING {COLS}, claimed_from"
    )
}

/// The test of `kind` against the JSON array of kinds parameter `p` names.
pub(super) fn kinds_in(p: &str) -> String {
    format!("kind IN (SELECT value FROM json_each({p}))")
}

/// Whether a lane has an item a claim would take (?1 lane, ?2 now, ?3 kinds as a JSON
/// array or NULL, ?4 account or NULL): the coordinator's wake-up probe.
pub(crate) fn has_due_sql() -> String {
    format!(
        "SELECT EXISTS (SELECT 1 FROM work_items WHERE lane = ?1 AND {CLAIMABLE} \
         AND run_at <= ?2 AND (?3 IS NULL OR {}) \
         AND (?4 IS NULL OR coalesce(account, 'default') = ?4))",
        kinds_in("?3")
    )
}

/// Renews `held`'s lease to `lease_until` inside `tx`; `None` when `held` is not the
/// current claim (fence, owner, running, unexpired).
pub(super) fn renew(
    tx: &rusqlite::Transaction<'_>,
    held: &Held,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<Option<Timestamp>> {
    let renewed: Option<i64> = tx
        .prepare_cached(&format!(
            "UPDATE work_items SET lease_expires_at = ?5, updated_at = ?4 WHERE {HELD} \
             RETURNING lease_expires_at"
        ))?
        .query_row(
            params![
                held.id,
                held.fence,
                held.owner,
                now.as_millis(),
                lease_until.as_millis()
            ],
            |r| r.get(0),
        )
        .optional()?;
    Ok(renewed.map(Timestamp::from_millis))
}

pub(crate) fn heartbeat(
    conn: &mut Connection,
    held: &Held,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<Timestamp> {
    let tx = write(conn)?;
    let renewed = renew(&tx, held, lease_until, now)?;
    tx.commit()?;
    renewed.ok_or(StoreError::StaleLease {
        id: held.id,
        fence: held.fence,
    })
}

pub(crate) fn checkpoint(
    conn: &mut Connection,
    held: &Held,
    state: &Value,
    now: Timestamp,
) -> StoreResult<()> {
    let text = serde_json::to_string(state)?;
    let tx = write(conn)?;
    let changed = tx
        .prepare_cached(&format!(
            "UPDATE work_items SET checkpoint = ?5, updated_at = ?4 WHERE {HELD}"
        ))?
        .execute(params![
            held.id,
            held.fence,
            held.owner,
            now.as_millis(),
            text
        ])?;
    tx.commit()?;
    if changed == 1 {
        Ok(())
    } else {
        Err(StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        })
    }
}

pub(crate) fn sweep(conn: &mut Connection, now: Timestamp) -> StoreResult<u64> {
    let tx = write(conn)?;
    let expired = "state = 'running' AND lease_expires_at <= ?1";
    let n = now.as_millis();
    let rows = before(&tx, expired, &[&n])?;
    let changed = tx
        .prepare_cached(&format!(
            "UPDATE work_items SET state = CASE WHEN attempt >= max_attempts THEN 'dead' \
             ELSE 'available' END, last_error = 'lease expired', lease_owner = NULL, \
             lease_expires_at = NULL, run_at = ?1, updated_at = ?1 WHERE {expired}"
        ))?
        .execute([n])?;
    record_ended(&tx, &rows, now, |_| "expired", Some("lease expired"))?;
    count(
        &tx,
        rows.iter().map(|r| {
            let to = if r.attempt >= r.max_attempts {
                "dead"
            } else {
                "available"
            };
            (
                r.lane.as_str(),
                r.kind.as_str(),
                Some(r.counted_as()),
                Some(to),
            )
        }),
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

/// Each claimed item's inputs, read in the claim's own transaction.
fn attach_inputs(tx: &Connection, claimed: &mut [Claimed]) -> StoreResult<()> {
    let ids: Vec<i64> = claimed.iter().map(|c| c.item.id).collect();
    for (id, input) in inputs(tx, &ids)? {
        if let Some(c) = claimed.iter_mut().find(|c| c.item.id == id) {
            c.inputs.push(input);
        }
    }
    Ok(())
}

/// The inputs of items `ids`, by item and name.
fn inputs(conn: &Connection, ids: &[i64]) -> StoreResult<Vec<(i64, ArtifactRef)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT item_id, name, sha256, size FROM item_artifacts \
         WHERE role = 'input' AND item_id IN (SELECT value FROM json_each(?1)) \
         ORDER BY item_id, name",
    )?;
    let rows = stmt.query_map([serde_json::to_string(ids)?], |r| {
        Ok((
            r.get(0)?,
            ArtifactRef {
                name: r.get(1)?,
                sha256: r.get(2)?,
                size: u64::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
            },
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
