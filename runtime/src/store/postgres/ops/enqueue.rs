//! Enqueueing: fresh ids from the shared sequence, the batch insert, dedupe against live
//! items of the same kind, and the wake-up of each lane written to.

use std::collections::{BTreeSet, HashMap, HashSet};

use deadpool_postgres::Transaction;
use serde_json::Value;
use tokio_postgres::types::Json;

use super::{LIVE, counted, limit_of, task};
use crate::error::StoreError;
use crate::item::{Enqueued, ItemId, NewItem};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::time::Timestamp;

/// How many times an enqueue retries a row whose live duplicate finished between the insert
/// and the look-up of the duplicate's id.
const DEDUPE_ROUNDS: usize = 5;

/// Inserts `items` with the given ids in one statement; returns the ids inserted (a row
/// whose dedupe key a live item holds, or whose id exists, is skipped).
pub(super) async fn insert_items(
    tx: &Transaction<'_>,
    ids: &[ItemId],
    items: &[&NewItem],
    payloads: Vec<Json<&Value>>,
    now: Timestamp,
) -> StoreResult<HashSet<ItemId>> {
    let kinds: Vec<&str> = items.iter().map(|i| i.kind.as_str()).collect();
    let lanes: Vec<&str> = items.iter().map(|i| i.lane.as_str()).collect();
    let priorities: Vec<i32> = items.iter().map(|i| i.priority).collect();
    let max_attempts: Vec<i32> = items.iter().map(|i| i.max_attempts).collect();
    let run_ats: Vec<i64> = items
        .iter()
        .map(|i| i.run_at.unwrap_or(now).as_millis())
        .collect();
    let keys: Vec<Option<&str>> = items.iter().map(|i| i.dedupe_key.as_deref()).collect();
    let accounts: Vec<Option<&str>> = items.iter().map(|i| i.stored_account()).collect();
    let stmt = tx
        .prepare_cached(&format!(
            "WITH ins AS (INSERT INTO work_items (id, kind, lane, payload, state, priority, \
                 attempt, max_attempts, run_at, fence, dedupe_key, created_at, updated_at, \
                 account) \
             SELECT t.id, t.kind, t.lane, t.payload, 'available', t.priority, 0, \
                 t.max_attempts, t.run_at, 0, t.dedupe_key, $9, $9, t.account \
             FROM unnest($1::int8[], $2::text[], $3::text[], $4::jsonb[], $5::int4[], \
                 $6::int4[], $7::int8[], $8::text[], $10::text[]) \
                 AS t(id, kind, lane, payload, priority, max_attempts, run_at, dedupe_key, \
                     account) \
             ORDER BY t.id \
             ON CONFLICT DO NOTHING RETURNING id, lane, kind), \
             {} SELECT id FROM ins",
            counted("SELECT lane, kind, NULL AS old_state, 'available' AS new_state FROM ins")
        ))
        .await?;
    let rows = tx
        .query(
            &stmt,
            &[
                &ids,
                &kinds,
                &lanes,
                &payloads,
                &priorities,
                &max_attempts,
                &run_ats,
                &keys,
                &now.as_millis(),
                &accounts,
            ],
        )
        .await?;
    rows.iter()
        .map(|r| r.try_get::<_, i64>(0).map_err(StoreError::from))
        .collect()
}

/// Wakes listeners of the schema's channel for each lane (delivered at commit).
pub(super) async fn notify_lanes(
    db: &PostgresBackend,
    tx: &Transaction<'_>,
    lanes: BTreeSet<&str>,
) -> StoreResult<()> {
    if lanes.is_empty() {
        return Ok(());
    }
    let lanes: Vec<&str> = lanes.into_iter().collect();
    let stmt = tx
        .prepare_cached("SELECT pg_notify($1, l) FROM unnest($2::text[]) AS l")
        .await?;
    tx.execute(&stmt, &[&db.channel(), &lanes]).await?;
    Ok(())
}

pub(crate) async fn enqueue_many(
    db: &PostgresBackend,
    items: &[NewItem],
    now: Timestamp,
) -> StoreResult<Vec<Enqueued>> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let mut out: Vec<Option<Enqueued>> = vec![None; items.len()];
    let mut pending: Vec<usize> = (0..items.len()).collect();
    for _ in 0..DEDUPE_ROUNDS {
        if pending.is_empty() {
            break;
        }
        let ids = next_ids(&tx, pending.len()).await?;
        let batch: Vec<&NewItem> = pending.iter().map(|&i| &items[i]).collect();
        let payloads: Vec<Json<&Value>> = batch.iter().map(|i| Json(&i.payload)).collect();
        let inserted = insert_items(&tx, &ids, &batch, payloads, now).await?;
        let mut missing: Vec<&NewItem> = Vec::new();
        for (slot, id) in pending.iter().zip(&ids) {
            if inserted.contains(id) {
                attach_inputs(&tx, *id, &items[*slot]).await?;
                out[*slot] = Some(Enqueued::new(*id));
            } else if items[*slot].dedupe_key.is_some() {
                missing.push(&items[*slot]);
            } else {
                return Err(task(format!(
                    "fresh id {id} is taken by a row this runtime did not write"
                )));
            }
        }
        let live = live_ids_for_keys(&tx, &missing).await?;
        pending.retain(|&slot| {
            if out[slot].is_some() {
                return false;
            }
            let item = &items[slot];
            let key = item.dedupe_key.clone().map(|k| (item.kind.clone(), k));
            match key.and_then(|k| live.get(&k)) {
                Some(id) => {
                    out[slot] = Some(Enqueued::duplicate_of(*id));
                    false
                }
                None => true,
            }
        });
    }
    let ids = out
        .into_iter()
        .map(|e| e.ok_or_else(|| task("a duplicate enqueue found no live item".to_owned())))
        .collect::<StoreResult<Vec<_>>>()?;
    notify_lanes(db, &tx, items.iter().map(|i| i.lane.as_str()).collect()).await?;
    tx.commit().await?;
    Ok(ids)
}

/// `n` fresh ids from the shared sequence, ascending.
async fn next_ids(tx: &Transaction<'_>, n: usize) -> StoreResult<Vec<ItemId>> {
    let stmt = tx
        .prepare_cached("SELECT nextval('scaffold_ids') FROM generate_series(1, $1::int8)")
        .await?;
    let rows = tx.query(&stmt, &[&limit_of(n)]).await?;
    let mut ids = rows
        .iter()
        .map(|r| r.try_get::<_, i64>(0))
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort_unstable();
    Ok(ids)
}

/// The live items holding the (kind, dedupe key) of `items`.
pub(super) async fn live_ids_for_keys(
    tx: &Transaction<'_>,
    items: &[&NewItem],
) -> StoreResult<HashMap<(String, String), ItemId>> {
    let (kinds, keys): (Vec<&str>, Vec<&str>) = items
        .iter()
        .filter_map(|i| Some((i.kind.as_str(), i.dedupe_key.as_deref()?)))
        .unzip();
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT w.kind, w.dedupe_key, w.id FROM work_items w \
             JOIN unnest($1::text[], $2::text[]) AS k(kind, dedupe_key) \
                 ON w.kind = k.kind AND w.dedupe_key = k.dedupe_key \
             WHERE w.state IN {LIVE}"
        ))
        .await?;
    let rows = tx.query(&stmt, &[&kinds, &keys]).await?;
    rows.iter()
        .map(|r| Ok(((r.try_get(0)?, r.try_get(1)?), r.try_get(2)?)))
        .collect()
}

/// Attaches `item`'s inputs to item `id`, each refused unless stored under its account (a
/// trigger flags the item `has_inputs`, which the claim asks: 0005_has_inputs.sql).
async fn attach_inputs(tx: &Transaction<'_>, id: ItemId, item: &NewItem) -> StoreResult<()> {
    for input in &item.inputs {
        let inserted = tx
            .execute(
                "INSERT INTO item_artifacts (item_id, fence, role, name, sha256, size) \
                 SELECT $1, 0, 'input', $2, sha256, size FROM artifacts \
                 WHERE account = $3 AND sha256 = $4 \
                 ON CONFLICT (item_id, role, fence, name) \
                 DO UPDATE SET sha256 = excluded.sha256, size = excluded.size",
                &[&id, &input.name, &item.account, &input.sha256],
            )
            .await?;
        if inserted == 0 {
            return Err(StoreError::ArtifactMissing {
                account: item.account.clone(),
                sha256: input.sha256.clone(),
            });
        }
    }
    Ok(())
}
