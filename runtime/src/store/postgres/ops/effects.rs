//! Effects recorded once per item and key (`ctx.once`): the fenced record, and reading one
//! or all of an item's.

use serde_json::Value;
use tokio_postgres::types::Json;

use super::HELD;
use crate::error::StoreError;
use crate::item::{EffectRecord, Fence, ItemId};
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

pub(crate) async fn record_effect(
    db: &PostgresBackend,
    id: ItemId,
    fence: Fence,
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
        .query_opt(&stmt, &[&id, &fence, &now.as_millis()])
        .await?
        .is_none()
    {
        return Err(StoreError::StaleLease { id, fence });
    }
    let stmt = tx
        .prepare_cached(
            "INSERT INTO work_effects (item_id, effect_key, output, fence, recorded_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .await?;
    tx.execute(
        &stmt,
        &[&id, &key, &Json(&output), &fence, &now.as_millis()],
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
