//! The SQL of every store operation. Each function runs one `BEGIN IMMEDIATE` transaction
//! (or one read) on the given connection.

use std::collections::BTreeMap;

use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde_json::Value;

use crate::error::StoreError;
use crate::item::{
    Claimed, EffectRecord, Enqueued, Fence, Finish, ItemId, ItemRecord, ItemState, LaneStats,
    ListFilter, NewItem, OutboxStats, Outcome, WorkerRecord, WorkerState,
};
use crate::outbox::{OutboxSink, Tx};
use crate::store::{ClaimRequest, RelayReport, StoreResult, TxBody};
use crate::time::Timestamp;

const COLS: &str = "id, kind, lane, payload, state, priority, attempt, max_attempts, run_at, \
    lease_owner, lease_expires_at, fence, dedupe_key, checkpoint, last_error, parked_on, \
    created_at, updated_at";

/// The fence guard every fenced update carries: ?1 = id, ?2 = fence, ?3 = now.
const HELD: &str = "id = ?1 AND fence = ?2 AND state = 'running' AND lease_expires_at > ?3";

const LIVE: &str = "('available', 'running', 'failed', 'parked')";

fn write(conn: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
}

fn conversion(col: usize, msg: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, Type::Text, msg.into())
}

/// A stored JSON text; text that does not parse comes back as a JSON string, so the
/// handler's decode fails and the item goes dead (undecodable payload is permanent).
fn json_text(raw: String) -> Value {
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

fn record(row: &Row<'_>) -> rusqlite::Result<ItemRecord> {
    let state: String = row.get(4)?;
    let state = state
        .parse::<ItemState>()
        .map_err(|e| conversion(4, e.to_string()))?;
    Ok(ItemRecord {
        id: row.get(0)?,
        kind: row.get(1)?,
        lane: row.get(2)?,
        payload: json_text(row.get(3)?),
        state,
        priority: row.get(5)?,
        attempt: row.get(6)?,
        max_attempts: row.get(7)?,
        run_at: Timestamp::from_millis(row.get(8)?),
        lease_owner: row.get(9)?,
        lease_expires_at: row.get::<_, Option<i64>>(10)?.map(Timestamp::from_millis),
        fence: row.get(11)?,
        dedupe_key: row.get(12)?,
        checkpoint: row.get::<_, Option<String>>(13)?.map(json_text),
        last_error: row.get(14)?,
        parked_on: row.get(15)?,
        created_at: Timestamp::from_millis(row.get(16)?),
        updated_at: Timestamp::from_millis(row.get(17)?),
    })
}

/// Takes `n` fresh ids from the persisted high-water mark that items and outbox rows share
/// (inside the caller's write transaction); returns the first. Ids are never handed out
/// twice: not after a discard, a purge or a restart. The mark also catches up with the
/// largest id in either table (two primary-key look-ups), so a row written by someone
/// else (an older runtime on the same file, a producer inserting ids of its own) can
/// never wedge every later enqueue on an id it took.
fn next_ids(conn: &Connection, n: usize) -> rusqlite::Result<i64> {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "UPDATE id_counter SET next_id = max(next_id, \
             COALESCE((SELECT max(id) FROM work_items), 0) + 1, \
             COALESCE((SELECT max(id) FROM outbox), 0) + 1) + ?1 \
         WHERE singleton = 1 RETURNING next_id - ?1",
    )?
    .query_row([n], |r| r.get(0))
}

fn live_id_for_key(conn: &Connection, kind: &str, key: &str) -> rusqlite::Result<Option<ItemId>> {
    conn.prepare_cached(&format!(
        "SELECT id FROM work_items WHERE kind = ?1 AND dedupe_key = ?2 AND state IN {LIVE}"
    ))?
    .query_row([kind, key], |r| r.get(0))
    .optional()
}

/// Why `item` was not inserted as `id`: the live duplicate holding its (kind, dedupe key),
/// or `None` when nothing explains it but the id being taken.
fn duplicate_of(conn: &Connection, item: &NewItem) -> rusqlite::Result<Option<ItemId>> {
    match item.dedupe_key.as_deref() {
        Some(key) => live_id_for_key(conn, &item.kind, key),
        None => Ok(None),
    }
}

/// Inserts `item` as `id`; false when a live item of its kind holds its dedupe key (or `id`
/// exists).
fn insert_item(
    conn: &Connection,
    id: ItemId,
    item: &NewItem,
    payload: &str,
    now: Timestamp,
) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR IGNORE INTO work_items (id, kind, lane, payload, state, priority, attempt, \
             max_attempts, run_at, fence, dedupe_key, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, 'available', ?5, 0, ?6, ?7, 0, ?8, ?9, ?9)",
    )?;
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
    // A duplicate leaves its id unused: ids are unique and increasing, not dense.
    for (id, item) in (first..).zip(items) {
        let payload = serde_json::to_string(&item.payload)?;
        if insert_item(&tx, id, item, &payload, now)? {
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
    tx.commit()?;
    Ok(out)
}

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
    claimed.sort_by(|a, b| {
        (b.item.priority, a.item.run_at, a.item.id).cmp(&(
            a.item.priority,
            b.item.run_at,
            b.item.id,
        ))
    });
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

fn finish_one(tx: &Transaction<'_>, f: &Finish, now: Timestamp) -> StoreResult<()> {
    let n = now.as_millis();
    let changed = match &f.outcome {
        Outcome::Complete => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'completed', lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = ?3 WHERE {HELD}"
            ))?
            .execute(params![f.id, f.fence, n])?,
        Outcome::Retry { retry_at, error } => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = CASE WHEN attempt >= max_attempts THEN 'dead' \
                 ELSE 'failed' END, run_at = ?4, last_error = ?5, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = ?3 WHERE {HELD}"
            ))?
            .execute(params![f.id, f.fence, n, retry_at.as_millis(), error])?,
        Outcome::Dead { error } => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'dead', last_error = ?4, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = ?3 WHERE {HELD}"
            ))?
            .execute(params![f.id, f.fence, n, error])?,
        Outcome::Park { until, signal } => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'parked', run_at = ?4, parked_on = ?5, \
                 attempt = max(attempt - 1, 0), lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = ?3 WHERE {HELD}"
            ))?
            .execute(params![
                f.id,
                f.fence,
                n,
                until.unwrap_or(Timestamp::MAX).as_millis(),
                signal
            ])?,
        Outcome::Release => tx
            .prepare_cached(&format!(
                "UPDATE work_items SET state = 'available', run_at = ?3, \
                 attempt = max(attempt - 1, 0), lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = ?3 WHERE {HELD}"
            ))?
            .execute(params![f.id, f.fence, n])?,
    };
    if changed == 1 {
        return Ok(());
    }
    if matches!(f.outcome, Outcome::Complete) {
        // Completion repeated with the same fence is success.
        let done: Option<bool> = tx
            .prepare_cached(
                "SELECT state = 'completed' AND fence = ?2 FROM work_items WHERE id = ?1",
            )?
            .query_row(params![f.id, f.fence], |r| r.get(0))
            .optional()?;
        if done == Some(true) {
            return Ok(());
        }
    }
    Err(StoreError::StaleLease {
        id: f.id,
        fence: f.fence,
    })
}

pub(crate) fn finish_many(
    conn: &mut Connection,
    batch: &[Finish],
    now: Timestamp,
) -> StoreResult<Vec<StoreResult<()>>> {
    let tx = write(conn)?;
    let completed = complete_bulk(&tx, batch, now)?;
    let mut results = Vec::with_capacity(batch.len());
    for f in batch {
        if matches!(f.outcome, Outcome::Complete) && completed.contains(&(f.id, f.fence)) {
            results.push(Ok(()));
            continue;
        }
        match finish_one(&tx, f, now) {
            Err(StoreError::Sqlite(e)) => return Err(StoreError::Sqlite(e)),
            other => results.push(other),
        }
    }
    tx.commit()?;
    Ok(results)
}

/// Completes every `Complete` of `batch` in one statement; each row still checks its own
/// fence, state and lease. Returns the (id, fence) pairs it completed; the rest go through
/// [`finish_one`], which tells a repeated completion from a stale one.
fn complete_bulk(
    tx: &Transaction<'_>,
    batch: &[Finish],
    now: Timestamp,
) -> StoreResult<std::collections::HashSet<(ItemId, Fence)>> {
    let pairs: Vec<[i64; 2]> = batch
        .iter()
        .filter(|f| matches!(f.outcome, Outcome::Complete))
        .map(|f| [f.id, f.fence])
        .collect();
    let mut done = std::collections::HashSet::with_capacity(pairs.len());
    if pairs.is_empty() {
        return Ok(done);
    }
    let json = serde_json::to_string(&pairs)?;
    let mut stmt = tx.prepare_cached(
        "UPDATE work_items AS w SET state = 'completed', lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = ?2 \
         FROM (SELECT value ->> 0 AS id, value ->> 1 AS fence FROM json_each(?1)) AS b \
         WHERE w.id = b.id AND w.fence = b.fence AND w.state = 'running' \
             AND w.lease_expires_at > ?2 \
         RETURNING id, fence",
    )?;
    let rows = stmt.query_map(params![json, now.as_millis()], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    for row in rows {
        done.insert(row?);
    }
    Ok(done)
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

fn state_of(conn: &Connection, id: ItemId) -> StoreResult<ItemState> {
    let state: Option<String> = conn
        .query_row("SELECT state FROM work_items WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?;
    let state = state.ok_or(StoreError::NotFound(id))?;
    state
        .parse()
        .map_err(|e: crate::item::UnknownState| StoreError::Task(e.to_string()))
}

pub(crate) fn retry(conn: &mut Connection, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let tx = write(conn)?;
    let changed = tx.execute(
        "UPDATE work_items SET state = 'available', attempt = 0, run_at = ?2, updated_at = ?2 \
         WHERE id = ?1 AND state = 'dead'",
        params![id, now.as_millis()],
    )?;
    if changed == 0 {
        let state = state_of(&tx, id)?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected: "dead",
        });
    }
    tx.commit()?;
    Ok(())
}

pub(crate) fn retry_all_dead(conn: &mut Connection, now: Timestamp) -> StoreResult<u64> {
    let tx = write(conn)?;
    let changed = tx.execute(
        "UPDATE OR IGNORE work_items SET state = 'available', attempt = 0, run_at = ?1, \
         updated_at = ?1 WHERE state = 'dead'",
        [now.as_millis()],
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn discard(conn: &mut Connection, id: ItemId) -> StoreResult<()> {
    let tx = write(conn)?;
    let changed = tx.execute(
        "DELETE FROM work_items WHERE id = ?1 AND state = 'dead'",
        [id],
    )?;
    if changed == 0 {
        let state = state_of(&tx, id)?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected: "dead",
        });
    }
    tx.execute("DELETE FROM work_effects WHERE item_id = ?1", [id])?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn purge_completed(
    conn: &mut Connection,
    before: Timestamp,
    limit: usize,
) -> StoreResult<u64> {
    let tx = write(conn)?;
    let picked = "SELECT id FROM work_items WHERE state = 'completed' AND updated_at < ?1 \
                  ORDER BY id LIMIT ?2";
    let args = params![before.as_millis(), i64::try_from(limit).unwrap_or(i64::MAX)];
    tx.execute(
        &format!("DELETE FROM work_effects WHERE item_id IN ({picked})"),
        args,
    )?;
    let changed = tx.execute(
        &format!("DELETE FROM work_items WHERE id IN ({picked})"),
        args,
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn signal(conn: &mut Connection, signal: &str, now: Timestamp) -> StoreResult<u64> {
    let tx = write(conn)?;
    let changed = tx.execute(
        "UPDATE work_items SET state = 'available', run_at = ?2, parked_on = NULL, \
         updated_at = ?2 WHERE state = 'parked' AND parked_on = ?1",
        params![signal, now.as_millis()],
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn get(conn: &mut Connection, id: ItemId) -> StoreResult<Option<ItemRecord>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLS} FROM work_items WHERE id = ?1"))?
        .query_row([id], record)
        .optional()?)
}

pub(crate) fn list(conn: &mut Connection, filter: &ListFilter) -> StoreResult<Vec<ItemRecord>> {
    let limit = filter
        .limit
        .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let order = if filter.newest_first { "DESC" } else { "ASC" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM work_items WHERE (?1 IS NULL OR state = ?1) \
         AND (?2 IS NULL OR lane = ?2) AND (?4 IS NULL OR kind = ?4) ORDER BY id {order} LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![
            filter.state.map(ItemState::as_str),
            filter.lane,
            limit,
            filter.kind
        ],
        record,
    )?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub(crate) fn stats(conn: &mut Connection, now: Timestamp) -> StoreResult<Vec<LaneStats>> {
    let mut stmt = conn.prepare_cached(
        "SELECT lane, state, count(*), min(created_at), \
                min(CASE WHEN run_at <= ?1 THEN run_at END), \
                state = 'available' AND run_at > ?1 AS scheduled \
         FROM work_items GROUP BY lane, state, scheduled",
    )?;
    let mut lanes: BTreeMap<String, LaneStats> = BTreeMap::new();
    let rows = stmt.query_map([now.as_millis()], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Option<i64>>(3)?,
            r.get::<_, Option<i64>>(4)?,
            r.get::<_, bool>(5)?,
        ))
    })?;
    for row in rows {
        let (lane, state, count, oldest_created, oldest_due, scheduled) = row?;
        if scheduled {
            lanes
                .entry(lane.clone())
                .or_insert_with(|| LaneStats::new(lane))
                .scheduled = u64::try_from(count).unwrap_or(0);
            continue;
        }
        let state: ItemState = state
            .parse()
            .map_err(|e: crate::item::UnknownState| StoreError::Task(e.to_string()))?;
        let oldest = if state == ItemState::Available {
            oldest_due
        } else {
            oldest_created
        };
        let entry = lanes
            .entry(lane.clone())
            .or_insert_with(|| LaneStats::new(lane));
        let s = entry.get_mut(state);
        s.count = u64::try_from(count).unwrap_or(0);
        s.oldest_age_ms = oldest.map_or(0, |t| now.millis_since(Timestamp::from_millis(t)));
    }
    Ok(lanes.into_values().collect())
}

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
             created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
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
            "SELECT id, kind, lane, payload, dedupe_key, run_at, priority, max_attempts \
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
            };
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(3)?, item))
        })?;
        mapped.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut report = RelayReport::default();
    for (id, payload, item) in &rows {
        if insert_item(&tx, *id, item, payload, now)?
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

pub(crate) fn put_worker(conn: &mut Connection, w: &WorkerRecord) -> StoreResult<()> {
    let tx = write(conn)?;
    tx.prepare_cached(
        "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO UPDATE SET lanes = excluded.lanes, \
         state = excluded.state, last_seen_at = excluded.last_seen_at, \
         lease_ms = excluded.lease_ms",
    )?
    .execute(params![
        w.id,
        w.lanes.join(","),
        w.state.as_str(),
        w.started_at.as_millis(),
        w.last_seen_at.as_millis(),
        w.lease_ms,
    ])?;
    tx.commit()?;
    Ok(())
}

pub(crate) fn workers(conn: &mut Connection) -> StoreResult<Vec<WorkerRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, lanes, state, started_at, last_seen_at, lease_ms FROM workers ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        let lanes: String = r.get(1)?;
        let state: String = r.get(2)?;
        Ok(WorkerRecord {
            id: r.get(0)?,
            lanes: lanes
                .split(',')
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            state: WorkerState::parse(&state)
                .ok_or_else(|| conversion(2, format!("unknown worker state `{state}`")))?,
            started_at: Timestamp::from_millis(r.get(3)?),
            last_seen_at: Timestamp::from_millis(r.get(4)?),
            lease_ms: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub(crate) fn mark_silent_workers(
    conn: &mut Connection,
    now: Timestamp,
) -> StoreResult<Vec<String>> {
    let tx = write(conn)?;
    let ids = {
        let mut stmt = tx.prepare_cached(
            "UPDATE workers SET state = 'OFFLINE' WHERE state <> 'OFFLINE' \
             AND ?1 - last_seen_at > 3 * min(lease_ms, 1000000000000) RETURNING id",
        )?;
        let rows = stmt.query_map([now.as_millis()], |r| r.get::<_, String>(0))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    tx.commit()?;
    let mut ids = ids;
    ids.sort();
    Ok(ids)
}

pub(crate) fn purge_retained(
    conn: &mut Connection,
    before: Timestamp,
    limit: usize,
) -> StoreResult<(u64, u64)> {
    let tx = write(conn)?;
    let outbox = tx.execute(
        "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox \
         WHERE relayed_at IS NOT NULL AND relayed_at < ?1 ORDER BY relayed_at LIMIT ?2)",
        params![before.as_millis(), i64::try_from(limit).unwrap_or(i64::MAX)],
    )?;
    let workers = tx.execute(
        "DELETE FROM workers WHERE state = 'OFFLINE' AND last_seen_at < ?1",
        [before.as_millis()],
    )?;
    tx.commit()?;
    Ok((outbox as u64, workers as u64))
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

pub(crate) fn cancel(conn: &mut Connection, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let tx = write(conn)?;
    let changed = tx.execute(
        &format!(
            "UPDATE work_items SET state = 'dead', last_error = 'cancelled by an operator', \
             lease_owner = NULL, lease_expires_at = NULL, parked_on = NULL, updated_at = ?2 \
             WHERE id = ?1 AND state IN {LIVE}"
        ),
        params![id, now.as_millis()],
    )?;
    if changed == 0 {
        let state = state_of(&tx, id)?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected: "live (available, running, failed or parked)",
        });
    }
    tx.commit()?;
    Ok(())
}

pub(crate) fn release_worker(
    conn: &mut Connection,
    owner: &str,
    now: Timestamp,
) -> StoreResult<u64> {
    let tx = write(conn)?;
    let changed = tx.execute(
        "UPDATE work_items SET state = 'available', run_at = ?2, lease_owner = NULL, \
         lease_expires_at = NULL, last_error = 'released by an operator', updated_at = ?2 \
         WHERE state = 'running' AND lease_owner = ?1",
        params![owner, now.as_millis()],
    )?;
    tx.execute(
        "UPDATE workers SET state = 'OFFLINE' WHERE id = ?1",
        [owner],
    )?;
    tx.commit()?;
    Ok(changed as u64)
}

pub(crate) fn outbox_stats(conn: &mut Connection, now: Timestamp) -> StoreResult<OutboxStats> {
    let (pending, refused, oldest): (i64, i64, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*) FILTER (WHERE relay_error IS NULL), \
                    count(*) FILTER (WHERE relay_error IS NOT NULL), \
                    min(created_at) FILTER (WHERE relay_error IS NULL) \
             FROM outbox WHERE relayed_at IS NULL",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(OutboxStats {
        pending: u64::try_from(pending).unwrap_or(0),
        refused: u64::try_from(refused).unwrap_or(0),
        oldest_pending_age_ms: oldest.map_or(0, |t| now.millis_since(Timestamp::from_millis(t))),
    })
}

pub(crate) fn kind_counts(conn: &mut Connection) -> StoreResult<Vec<(String, ItemState, u64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT kind, state, count(*) FROM work_items GROUP BY kind, state ORDER BY kind, state",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, state, n) = row?;
        let state = state
            .parse::<ItemState>()
            .map_err(|e| StoreError::Task(e.to_string()))?;
        out.push((kind, state, u64::try_from(n).unwrap_or(0)));
    }
    Ok(out)
}
