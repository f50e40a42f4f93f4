//! Effects recorded once per item and key (`ctx.once`): the fenced record, and reading one
//! or all of an item's.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{HELD, json_text, write};
use crate::error::StoreError;
use crate::item::{EffectRecord, Fence, ItemId};
use crate::store::StoreResult;
use crate::time::Timestamp;

pub(crate) fn effect(conn: &mut Connection, id: ItemId, key: &str) -> StoreResult<Option<Value>> {
    let raw: Option<String> = conn
        .prepare_cached("SELECT output FROM work_effects WHERE item_id = ?1 AND effect_key = ?2")?
        .query_row(params![id, key], |r| r.get(0))
        .optional()?;
    Ok(raw.map(json_text))
}

pub(crate) fn record_effect(
    conn: &mut Connection,
    id: ItemId,
    fence: Fence,
    key: &str,
    output: &Value,
    now: Timestamp,
) -> StoreResult<()> {
    let text = serde_json::to_string(output)?;
    let tx = write(conn)?;
    let held: Option<i64> = tx
        .prepare_cached(&format!("SELECT id FROM work_items WHERE {HELD}"))?
        .query_row(params![id, fence, now.as_millis()], |r| r.get(0))
        .optional()?;
    if held.is_none() {
        return Err(StoreError::StaleLease { id, fence });
    }
    tx.prepare_cached(
        "INSERT OR IGNORE INTO work_effects (item_id, effect_key, output, fence, recorded_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, key, text, fence, now.as_millis()])?;
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
