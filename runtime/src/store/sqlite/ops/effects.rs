//! Effects recorded once per item and key (`ctx.once`): the fenced record, and reading one
//! or all of an item's.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{HELD, json_text, write};
use crate::error::StoreError;
use crate::item::{EffectRecord, EffectStart, Held, ItemId};
use crate::store::StoreResult;
use crate::time::Timestamp;

pub(crate) fn effect(conn: &mut Connection, id: ItemId, key: &str) -> StoreResult<Option<Value>> {
    let raw: Option<String> = conn
        .prepare_cached("SELECT output FROM work_effects WHERE item_id = ?1 AND effect_key = ?2")?
        .query_row(params![id, key], |r| r.get(0))
        .optional()?;
    Ok(raw.map(json_text))
}

/// Before an effect runs: its recorded output, or `held`'s lease checked and renewed, in one
/// write transaction (the effect runs only when the store said, at that moment, that this
/// holder still holds the item).
pub(crate) fn begin_effect(
    conn: &mut Connection,
    held: &Held,
    key: &str,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<EffectStart> {
    let tx = write(conn)?;
    let recorded: Option<String> = tx
        .prepare_cached("SELECT output FROM work_effects WHERE item_id = ?1 AND effect_key = ?2")?
        .query_row(params![held.id, key], |r| r.get(0))
        .optional()?;
    let start = match recorded {
        Some(raw) => EffectStart::Recorded(json_text(raw)),
        None => match super::lease::renew(&tx, held, lease_until, now)? {
            Some(lease_expires_at) => EffectStart::Run {
                lease_expires_at,
                verified_at: now,
            },
            None => {
                return Err(StoreError::StaleLease {
                    id: held.id,
                    fence: held.fence,
                });
            }
        },
    };
    tx.commit()?;
    Ok(start)
}

pub(crate) fn record_effect(
    conn: &mut Connection,
    held: &Held,
    key: &str,
    output: &Value,
    now: Timestamp,
) -> StoreResult<()> {
    let text = serde_json::to_string(output)?;
    let tx = write(conn)?;
    let current: Option<i64> = tx
        .prepare_cached(&format!("SELECT id FROM work_items WHERE {HELD}"))?
        .query_row(
            params![held.id, held.fence, held.owner, now.as_millis()],
            |r| r.get(0),
        )
        .optional()?;
    if current.is_none() {
        return Err(StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        });
    }
    tx.prepare_cached(
        "INSERT OR IGNORE INTO work_effects (item_id, effect_key, output, fence, recorded_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![held.id, key, text, held.fence, now.as_millis()])?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn effects(conn: &mut Connection, id: ItemId) -> StoreResult<Vec<EffectRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT effect_key, output, fence, recorded_at FROM work_effects WHERE item_id = ?1 \
         ORDER BY effect_key",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok(EffectRecord {
            key: r.get(0)?,
            output: json_text(r.get(1)?),
            fence: r.get(2)?,
            recorded_at: Timestamp::from_millis(r.get(3)?),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
