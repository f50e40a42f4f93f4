//! The transactional outbox: producer transactions and the outbox rows they write, and the
//! relay that turns pending rows into items.

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use serde_json::Value;
use tokio_postgres::types::Json;

use super::enqueue::{insert_items, live_ids_for_keys, notify_lanes};
use super::{limit_of, lock, task};
use crate::item::{ItemId, NewItem};
use crate::outbox::{OutboxSink, Tx};
use crate::store::postgres::PostgresBackend;
use crate::store::{RelayReport, StoreResult, TxBody};
use crate::time::Timestamp;

pub(crate) async fn transaction(
    db: &PostgresBackend,
    body: TxBody,
    now: Timestamp,
) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || -> StoreResult<()> {
        let tx = handle.block_on(conn.transaction())?;
        let result = {
            let sink = PostgresOutbox {
                tx: &tx,
                handle: &handle,
            };
            let mut t = Tx::new(&sink, now);
            body(&mut t)
        };
        match result {
            Ok(()) => Ok(handle.block_on(tx.commit())?),
            Err(e) => {
                // Best effort: dropping the transaction rolls back as well.
                let _ = handle.block_on(tx.rollback());
                Err(e)
            }
        }
    })
    .await
    .map_err(|e| task(e.to_string()))?
}

/// A PostgreSQL transaction, driven from a blocking thread through the runtime's handle, as
/// the outbox sees it.
#[derive(Debug)]
pub(crate) struct PostgresOutbox<'a> {
    tx: &'a Transaction<'a>,
    handle: &'a tokio::runtime::Handle,
}

impl OutboxSink for PostgresOutbox<'_> {
    fn insert(&self, item: &NewItem, now: Timestamp) -> StoreResult<ItemId> {
        insert_outbox(self.tx, self.handle, item, now)
    }
}

/// Inserts an outbox row for `item` inside the producer's transaction `tx`; blocks on
/// `handle` (called from a blocking thread, see [`transaction`]).
pub(crate) fn insert_outbox(
    tx: &Transaction<'_>,
    handle: &tokio::runtime::Handle,
    item: &NewItem,
    now: Timestamp,
) -> StoreResult<ItemId> {
    handle.block_on(async {
        let stmt = tx.prepare_cached(&insert_outbox_sql("outbox")).await?;
        insert_outbox_with(&**tx, &stmt, item, now).await
    })
}

/// Inserts an outbox row for `item` in a transaction the producer opened on its own
/// connection: the table is named with the queue's schema, since that connection's
/// `search_path` is the producer's.
pub(crate) async fn insert_outbox_in(
    tx: &tokio_postgres::Transaction<'_>,
    schema: &str,
    item: &NewItem,
    now: Timestamp,
) -> StoreResult<ItemId> {
    let sql = insert_outbox_sql(&format!("\"{schema}\".outbox"));
    insert_outbox_with(tx, sql.as_str(), item, now).await
}

fn insert_outbox_sql(table: &str) -> String {
    format!(
        "INSERT INTO {table} (kind, lane, payload, dedupe_key, run_at, priority, \
             max_attempts, created_at, account) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             RETURNING id"
    )
}

async fn insert_outbox_with<C, S>(
    client: &C,
    statement: &S,
    item: &NewItem,
    now: Timestamp,
) -> StoreResult<ItemId>
where
    C: tokio_postgres::GenericClient + Sync,
    S: tokio_postgres::ToStatement + Sync + Send + ?Sized,
{
    let row = client
        .query_one(
            statement,
            &[
                &item.kind,
                &item.lane,
                &Json(&item.payload),
                &item.dedupe_key,
                &item.run_at.map(Timestamp::as_millis),
                &item.priority,
                &item.max_attempts,
                &now.as_millis(),
                &item.stored_account(),
            ],
        )
        .await?;
    Ok(row.try_get(0)?)
}

pub(crate) async fn relay_outbox(
    db: &PostgresBackend,
    limit: usize,
    now: Timestamp,
) -> StoreResult<RelayReport> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    lock(&tx, db.keys.relay).await?;
    let stmt = tx
        .prepare_cached(
            "SELECT id, kind, lane, payload, dedupe_key, run_at, priority, max_attempts, account \
             FROM outbox WHERE relayed_at IS NULL AND relay_error IS NULL \
             ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
        )
        .await?;
    let rows = tx.query(&stmt, &[&limit_of(limit)]).await?;
    if rows.is_empty() {
        return Ok(RelayReport::default());
    }
    let mut ids = Vec::with_capacity(rows.len());
    let mut items = Vec::with_capacity(rows.len());
    for r in &rows {
        ids.push(r.try_get::<_, i64>(0)?);
        items.push(NewItem {
            kind: r.try_get(1)?,
            lane: r.try_get(2)?,
            payload: r.try_get::<_, Json<Value>>(3)?.0,
            dedupe_key: r.try_get(4)?,
            run_at: r.try_get::<_, Option<i64>>(5)?.map(Timestamp::from_millis),
            priority: r.try_get(6)?,
            max_attempts: r.try_get(7)?,
            account: r
                .try_get::<_, Option<String>>(8)?
                .unwrap_or_else(|| crate::item::DEFAULT_ACCOUNT.to_owned()),
            inputs: Vec::new(),
        });
    }
    let refs: Vec<&NewItem> = items.iter().collect();
    let payloads: Vec<Json<&Value>> = items.iter().map(|i| Json(&i.payload)).collect();
    let inserted = insert_items(&tx, &ids, &refs, payloads, now).await?;
    // A row not inserted is either a duplicate of a live item of its kind (relayed as that)
    // or has an id another item holds: never dropped, left unrelayed with the reason.
    let skipped: Vec<&NewItem> = ids
        .iter()
        .zip(&refs)
        .filter(|(id, _)| !inserted.contains(id))
        .map(|(_, item)| *item)
        .collect();
    let live = live_ids_for_keys(&tx, &skipped).await?;
    // Only an id that really is another item's is refused. A row skipped for a live
    // duplicate that finished between the insert and the look-up (they read different
    // snapshots) is neither: it stays pending and the next pass inserts it.
    let skipped_ids: Vec<i64> = ids
        .iter()
        .filter(|id| !inserted.contains(id))
        .copied()
        .collect();
    // The items holding those ids: this row's own (same kind and payload: relayed before,
    // its stamp lost, so relaying again is a no-op) or another's (a collision).
    let taken: HashMap<i64, (String, Value)> = if skipped_ids.is_empty() {
        HashMap::new()
    } else {
        let stmt = tx
            .prepare_cached("SELECT id, kind, payload FROM work_items WHERE id = ANY($1)")
            .await?;
        tx.query(&stmt, &[&skipped_ids])
            .await?
            .iter()
            .map(|r| {
                Ok((
                    r.try_get::<_, i64>(0)?,
                    (r.try_get(1)?, r.try_get::<_, Json<Value>>(2)?.0),
                ))
            })
            .collect::<StoreResult<_>>()?
    };
    let mut relayed = Vec::with_capacity(ids.len());
    let mut report = RelayReport::default();
    for (id, item) in ids.iter().zip(&refs) {
        let duplicate = item
            .dedupe_key
            .as_ref()
            .is_some_and(|k| live.contains_key(&(item.kind.clone(), k.clone())));
        let own = taken
            .get(id)
            .is_some_and(|(kind, payload)| *kind == item.kind && *payload == item.payload);
        if inserted.contains(id) || duplicate || own {
            relayed.push(*id);
        } else if taken.contains_key(id) {
            report
                .refused
                .push((*id, format!("id {id} is already another item's")));
        }
    }
    let stmt = tx
        .prepare_cached("UPDATE outbox SET relayed_at = $2 WHERE id = ANY($1)")
        .await?;
    tx.execute(&stmt, &[&relayed, &now.as_millis()]).await?;
    if !report.refused.is_empty() {
        let (refused, reasons): (Vec<i64>, Vec<&str>) = report
            .refused
            .iter()
            .map(|(id, reason)| (*id, reason.as_str()))
            .unzip();
        let stmt = tx
            .prepare_cached(
                "UPDATE outbox SET relay_error = r.reason \
                 FROM unnest($1::int8[], $2::text[]) AS r(id, reason) WHERE outbox.id = r.id",
            )
            .await?;
        tx.execute(&stmt, &[&refused, &reasons]).await?;
    }
    notify_lanes(db, &tx, items.iter().map(|i| i.lane.as_str()).collect()).await?;
    tx.commit().await?;
    report.relayed = relayed.len() as u64;
    Ok(report)
}
