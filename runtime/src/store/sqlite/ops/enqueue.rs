//! Enqueueing: fresh ids from the shared high-water mark, the insert, and dedupe against
//! live items of the same kind.

use rusqlite::{Connection, OptionalExtension, params};

use super::{LIVE, write};
use crate::error::StoreError;
use crate::item::{Enqueued, ItemId, NewItem};
use crate::store::StoreResult;
use crate::time::Timestamp;

/// Takes `n` fresh ids from the persisted high-water mark that items and outbox rows share
/// (inside the caller's write transaction); returns the first. Ids are never handed out
/// twice: not after a discard, a purge or a restart. The mark also catches up with the
/// largest id in either table (two primary-key look-ups), so a row written by someone
/// else (an older runtime on the same file, a producer inserting ids of its own) can
/// never wedge every later enqueue on an id it took.
pub(super) fn next_ids(conn: &Connection, n: usize) -> rusqlite::Result<i64> {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "UPDATE id_counter SET next_id = max(next_id, \
             COALESCE((SELECT max(id) FROM work_items), 0) + 1, \
             COALESCE((SELECT max(id) FROM outbox), 0) + 1) + ?1 \
         WHERE singleton = 1 RETURNING next_id - ?1",
    )?
    .query_row([n], |r| r.get(0))
}

/// The live item of a kind (?1) holding a dedupe key (?2), through `work_items_dedupe`.
pub(super) fn live_id_sql() -> String {
    format!("SELECT id FROM work_items WHERE kind = ?1 AND dedupe_key = ?2 AND {LIVE}")
}

fn live_id_for_key(conn: &Connection, kind: &str, key: &str) -> rusqlite::Result<Option<ItemId>> {
    conn.prepare_cached(&live_id_sql())?
        .query_row([kind, key], |r| r.get(0))
        .optional()
}

/// Why `item` was not inserted as `id`: the live duplicate holding its (kind, dedupe key),
/// or `None` when nothing explains it but the id being taken.
pub(super) fn duplicate_of(conn: &Connection, item: &NewItem) -> rusqlite::Result<Option<ItemId>> {
    match item.dedupe_key.as_deref() {
        Some(key) => live_id_for_key(conn, &item.kind, key),
        None => Ok(None),
    }
}

/// One item's insert: ?1 id, ?2 kind, ?3 lane, ?4 payload, ?5 priority, ?6 max attempts,
/// ?7 due, ?8 dedupe key, ?9 now, ?10 account.
pub(super) const INSERT_ITEM: &str = "INSERT OR IGNORE INTO work_items (id, kind, lane, payload, state, priority, attempt, \
         max_attempts, run_at, fence, dedupe_key, created_at, updated_at, account) \
     VALUES (?1, ?2, ?3, ?4, 'available', ?5, 0, ?6, ?7, 0, ?8, ?9, ?9, ?10)";

/// Inserts `item` as `id`; false when a live item of its kind holds its dedupe key (or `id`
/// exists).
pub(super) fn insert_item(
    conn: &Connection,
    id: ItemId,
    item: &NewItem,
    payload: &str,
    now: Timestamp,
) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare_cached(INSERT_ITEM)?;
    let changed = stmt.execute(params![
        id,
        item.kind,
        item.lane,
        payload,
        item.priority,
        item.max_attempts,
        item.run_at.unwrap_or(now).as_millis(),
        item.dedupe_key,
        now.as_millis(),
        item.stored_account(),
    ])?;
    Ok(changed == 1)
}

pub(crate) fn enqueue_many(
    conn: &mut Connection,
    items: &[NewItem],
    now: Timestamp,
) -> StoreResult<Vec<Enqueued>> {
    let tx = write(conn)?;
    let first = next_ids(&tx, items.len())?;
    let mut out = Vec::with_capacity(items.len());
    let mut inserted = Vec::with_capacity(items.len());
    // A duplicate leaves its id unused: ids are unique and increasing, not dense.
    for (id, item) in (first..).zip(items) {
        let payload = serde_json::to_string(&item.payload)?;
        if insert_item(&tx, id, item, &payload, now)? {
            attach_inputs(&tx, id, item)?;
            inserted.push((
                item.lane.as_str(),
                item.kind.as_str(),
                None,
                Some("available"),
            ));
            out.push(Enqueued::new(id));
        } else {
            let existing = duplicate_of(&tx, item)?.ok_or_else(|| {
                StoreError::Task(format!(
                    "fresh id {id} is taken by a row this runtime did not write"
                ))
            })?;
            out.push(Enqueued::duplicate_of(existing));
        }
    }
    super::moves::count(&tx, inserted)?;
    tx.commit()?;
    Ok(out)
}

/// Attaches `item`'s inputs to item `id`, each refused unless stored under its account.
fn attach_inputs(conn: &Connection, id: ItemId, item: &NewItem) -> StoreResult<()> {
    for input in &item.inputs {
        let size: Option<i64> = conn
            .prepare_cached("SELECT size FROM artifacts WHERE account = ?1 AND sha256 = ?2")?
            .query_row([&item.account, &input.sha256], |r| r.get(0))
            .optional()?;
        let Some(size) = size else {
            return Err(StoreError::ArtifactMissing {
                account: item.account.clone(),
                sha256: input.sha256.clone(),
            });
        };
        conn.prepare_cached(
            "INSERT OR REPLACE INTO item_artifacts (item_id, fence, role, name, sha256, size) \
             VALUES (?1, 0, 'input', ?2, ?3, ?4)",
        )?
        .execute(params![id, input.name, input.sha256, size])?;
    }
    Ok(())
}
