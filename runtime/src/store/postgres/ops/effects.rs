//! Effects recorded once per item and key (`ctx.once`): the fenced record, and reading one
//! or all of an item's.

use serde_json::Value;
use tokio_postgres::types::Json;

use super::HELD;
use crate::error::StoreError;
use crate::item::{EffectRecord, EffectStart, Held, ItemId};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::time::Timestamp;

pub(crate) async fn effect(
    db: &PostgresBackend,
    id: ItemId,
    key: &str,
) -> StoreResult<Option<Value>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached("SELECT output FROM work_effects WHERE item_id = $1 AND effect_key = $2")
        .await?;
    conn.query_opt(&stmt, &[&id, &key])
        .await?
        .map(|r| Ok(r.try_get::<_, Json<Value>>(0)?.0))
        .transpose()
}

/// Before an effect runs: its recorded output, or `held`'s lease checked and renewed, in one
/// statement (the effect runs only when the store said, at that moment, that this holder
/// still holds the item).
pub(crate) async fn begin_effect(
    db: &PostgresBackend,
    held: &Held,
    key: &str,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<EffectStart> {
    let conn = db.conn().await?;
    // One round trip: the recorded output if any; else the renewal's new lease end (no
    // renewal when the effect is recorded: a recorded effect needs no lease to be read).
    let stmt = conn
        .prepare_cached(&format!(
            "WITH recorded AS (SELECT output FROM work_effects \
                 WHERE item_id = $1 AND effect_key = $6), \
             renewed AS ({} AND NOT EXISTS (SELECT 1 FROM recorded) RETURNING lease_expires_at) \
             SELECT (SELECT output FROM recorded), (SELECT lease_expires_at FROM renewed)",
            super::lease::RENEW.replace(" RETURNING lease_expires_at", "")
        ))
        .await?;
    let row = conn
        .query_one(
            &stmt,
            &[
                &held.id,
                &held.fence,
                &held.owner,
                &now.as_millis(),
                &lease_until.as_millis(),
                &key,
            ],
        )
        .await?;
    if let Some(output) = row.try_get::<_, Option<Json<Value>>>(0)? {
        return Ok(EffectStart::Recorded(output.0));
    }
    match row.try_get::<_, Option<i64>>(1)? {
        Some(end) => Ok(EffectStart::Run {
            lease_expires_at: Timestamp::from_millis(end),
            verified_at: now,
        }),
        None => Err(StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        }),
    }
}

pub(crate) async fn record_effect(
    db: &PostgresBackend,
    held: &Held,
    key: &str,
    output: Value,
    now: Timestamp,
) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    // Locks the row while held, so no claim moves the fence before the effect is recorded.
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT id FROM work_items WHERE {HELD} FOR UPDATE"
        ))
        .await?;
    if tx
        .query_opt(
            &stmt,
            &[&held.id, &held.fence, &held.owner, &now.as_millis()],
        )
        .await?
        .is_none()
    {
        return Err(StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        });
    }
    let stmt = tx
        .prepare_cached(
            "INSERT INTO work_effects (item_id, effect_key, output, fence, recorded_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .await?;
    tx.execute(
        &stmt,
        &[
            &held.id,
            &key,
            &Json(&output),
            &held.fence,
            &now.as_millis(),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn effects(db: &PostgresBackend, id: ItemId) -> StoreResult<Vec<EffectRecord>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT effect_key, output, fence, recorded_at FROM work_effects \
             WHERE item_id = $1 ORDER BY effect_key",
        )
        .await?;
    let rows = conn.query(&stmt, &[&id]).await?;
    rows.iter()
        .map(|r| {
            Ok(EffectRecord {
                key: r.try_get(0)?,
                output: r.try_get::<_, Json<Value>>(1)?.0,
                fence: r.try_get(2)?,
                recorded_at: Timestamp::from_millis(r.try_get(3)?),
            })
        })
        .collect()
}
