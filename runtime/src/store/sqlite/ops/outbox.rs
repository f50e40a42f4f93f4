//! The transactional outbox: producer transactions and the outbox rows they write, and the
//! relay that turns pending rows into items.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::enqueue::{duplicate_of, insert_item, next_ids};
use super::{json_text, write};
use crate::item::{ItemId, NewItem};
use crate::outbox::{OutboxSink, Tx};
use crate::store::{RelayReport, StoreResult, TxBody};
use crate::time::Timestamp;

pub(crate) fn transaction(conn: &mut Connection, body: TxBody, now: Timestamp) -> StoreResult<()> {
    let tx = write(conn)?;
    {
        let conn: &Connection = &tx;
        let mut handle = Tx::new(conn, now);
        body(&mut handle)?;
    }
    tx.commit()?;
    Ok(())
}

/// Inserts an outbox row for `item` on `conn` (inside the caller's transaction).
/// A connection inside a transaction on the queue's SQLite file, as the outbox sees it.
impl OutboxSink for Connection {
    fn insert(&self, item: &NewItem, now: Timestamp) -> StoreResult<ItemId> {
        insert_outbox(self, item, now)
    }

    fn connection(&self) -> Option<&Connection> {
        Some(self)
    }
}

pub(crate) fn insert_outbox(
    conn: &Connection,
    item: &NewItem,
    now: Timestamp,
) -> StoreResult<ItemId> {
    let payload = serde_json::to_string(&item.payload)?;
    let id = next_ids(conn, 1)?;
    conn.prepare_cached(
        "INSERT INTO outbox (id, kind, lane, payload, dedupe_key, run_at, priority, max_attempts, \
             created_at, account) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        id,
        item.kind,
        item.lane,
        payload,
        item.dedupe_key,
        item.run_at.map(Timestamp::as_millis),
        item.priority,
        item.max_attempts,
        now.as_millis(),
        item.stored_account(),
    ])?;
    Ok(id)
}

pub(crate) fn relay_outbox(
    conn: &mut Connection,
    limit: usize,
    now: Timestamp,
) -> StoreResult<RelayReport> {
    let tx = write(conn)?;
    let rows = {
        let mut stmt = tx.prepare_cached(
            "SELECT id, kind, lane, payload, dedupe_key, run_at, priority, max_attempts, account \
             FROM outbox WHERE relayed_at IS NULL AND relay_error IS NULL ORDER BY id LIMIT ?1",
        )?;
        let mapped = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            let item = NewItem {
                kind: r.get(1)?,
                lane: r.get(2)?,
                payload: Value::Null,
                dedupe_key: r.get(4)?,
                run_at: r.get::<_, Option<i64>>(5)?.map(Timestamp::from_millis),
                priority: r.get(6)?,
                max_attempts: r.get(7)?,
                account: r
                    .get::<_, Option<String>>(8)?
                    .unwrap_or_else(|| crate::item::DEFAULT_ACCOUNT.to_owned()),
                inputs: Vec::new(),
            };
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(3)?, item))
        })?;
        mapped.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut report = RelayReport::default();
    let mut inserted = Vec::new();
    for (id, payload, item) in &rows {
        let fresh = insert_item(&tx, *id, item, payload, now)?;
        if fresh {
            inserted.push((
                item.lane.as_str(),
                item.kind.as_str(),
                None,
                Some("available"),
            ));
        }
        if fresh
            || duplicate_of(&tx, item)?.is_some()
            || relayed_before(&tx, *id, &item.kind, payload)?
        {
            tx.prepare_cached("UPDATE outbox SET relayed_at = ?2 WHERE id = ?1")?
                .execute(params![id, now.as_millis()])?;
            report.relayed += 1;
        } else {
            let reason = format!("id {id} is already another item's");
            tx.prepare_cached("UPDATE outbox SET relay_error = ?2 WHERE id = ?1")?
                .execute(params![id, reason])?;
            report.refused.push((*id, reason));
        }
    }
    super::moves::count(&tx, inserted)?;
    tx.commit()?;
    Ok(report)
}

/// Whether the item `id` is this outbox row's own (same kind and payload): the row was
/// relayed before and lost its stamp, so relaying it again is a no-op, not a collision.
fn relayed_before(conn: &Connection, id: ItemId, kind: &str, payload: &str) -> StoreResult<bool> {
    let found: Option<(String, String)> = conn
        .prepare_cached("SELECT kind, payload FROM work_items WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(found.is_some_and(|(k, p)| k == kind && json_text(p) == json_text(payload.to_owned())))
}
