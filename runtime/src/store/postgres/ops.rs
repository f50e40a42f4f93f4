//! The SQL of every store operation on PostgreSQL. Writes that touch more than one statement
//! run in one transaction; single-statement writes run on their own (a statement is atomic).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering;

use deadpool_postgres::Transaction;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::Json;

use super::PostgresBackend;
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

/// The fence guard every fenced update carries: $1 = id, $2 = fence, $3 = now.
const HELD: &str = "id = $1 AND fence = $2 AND state = 'running' AND lease_expires_at > $3";

const LIVE: &str = "('available', 'running', 'failed', 'parked')";

/// How many times an enqueue retries a row whose live duplicate finished between the insert
/// and the look-up of the duplicate's id.
const DEDUPE_ROUNDS: usize = 5;

fn task(msg: String) -> StoreError {
    StoreError::Task(msg)
}

fn parse_state(s: &str) -> StoreResult<ItemState> {
    s.parse()
        .map_err(|e: crate::item::UnknownState| task(e.to_string()))
}

fn record(row: &Row) -> StoreResult<ItemRecord> {
    let state: String = row.try_get(4)?;
    Ok(ItemRecord {
        id: row.try_get(0)?,
        kind: row.try_get(1)?,
        lane: row.try_get(2)?,
        payload: row.try_get::<_, Json<Value>>(3)?.0,
        state: parse_state(&state)?,
        priority: row.try_get(5)?,
        attempt: row.try_get(6)?,
        max_attempts: row.try_get(7)?,
        run_at: Timestamp::from_millis(row.try_get(8)?),
        lease_owner: row.try_get(9)?,
        lease_expires_at: row
            .try_get::<_, Option<i64>>(10)?
            .map(Timestamp::from_millis),
        fence: row.try_get(11)?,
        dedupe_key: row.try_get(12)?,
        checkpoint: row.try_get::<_, Option<Json<Value>>>(13)?.map(|j| j.0),
        last_error: row.try_get(14)?,
        parked_on: row.try_get(15)?,
        created_at: Timestamp::from_millis(row.try_get(16)?),
        updated_at: Timestamp::from_millis(row.try_get(17)?),
    })
}

fn limit_of(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Inserts `items` with the given ids in one statement; returns the ids inserted (a row
/// whose dedupe key a live item holds, or whose id exists, is skipped).
async fn insert_items(
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
    let stmt = tx
        .prepare_cached(
            "INSERT INTO work_items (id, kind, lane, payload, state, priority, attempt, \
                 max_attempts, run_at, fence, dedupe_key, created_at, updated_at) \
             SELECT t.id, t.kind, t.lane, t.payload, 'available', t.priority, 0, \
                 t.max_attempts, t.run_at, 0, t.dedupe_key, $9, $9 \
             FROM unnest($1::int8[], $2::text[], $3::text[], $4::jsonb[], $5::int4[], \
                 $6::int4[], $7::int8[], $8::text[]) \
                 AS t(id, kind, lane, payload, priority, max_attempts, run_at, dedupe_key) \
             ORDER BY t.id \
             ON CONFLICT DO NOTHING RETURNING id",
        )
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
            ],
        )
        .await?;
    rows.iter()
        .map(|r| r.try_get::<_, i64>(0).map_err(StoreError::from))
        .collect()
}

/// Wakes listeners of the schema's channel for each lane (delivered at commit).
async fn notify_lanes(
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
async fn live_ids_for_keys(
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

/// Claims in one statement: the ids are picked (and locked) once into an array by the
/// ordered, limited scan of `work_items_claim`, then updated by primary key. Not as a join
/// (`UPDATE … FROM (SELECT …) picked WHERE w.id = picked.id`): a join's plan follows the
/// estimates, and a queue table's estimates are wrong most of the time (a vacuum of an
/// emptied table says 0 rows; an analyze sees whatever state the backlog was in). With
/// estimates of one row the planner may nest a scan of the whole table inside a loop over
/// the picked rows: on the retention purge, written that way, that took 38 s for 20,000
/// rows right after a vacuum. An array makes every plan linear.
pub(crate) async fn claim(
    db: &PostgresBackend,
    req: &ClaimRequest,
    now: Timestamp,
) -> StoreResult<Vec<Claimed>> {
    db.wake.claim_started(&req.lane).await;
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(&format!(
            "UPDATE work_items AS w SET state = 'running', fence = w.fence + 1, \
                 attempt = w.attempt + 1, lease_owner = $1, lease_expires_at = $2, \
                 updated_at = $3, parked_on = NULL \
             WHERE w.id = ANY(ARRAY(SELECT id FROM work_items \
                 WHERE lane = $4 AND state IN ('available', 'failed', 'parked') AND run_at <= $3 \
                 ORDER BY priority DESC, run_at, id LIMIT $5 \
                 FOR UPDATE SKIP LOCKED)) \
             RETURNING {}",
            COLS.split(", ")
                .map(|c| format!("w.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .await?;
    let rows = conn
        .query(
            &stmt,
            &[
                &req.owner,
                &req.lease_until.as_millis(),
                &now.as_millis(),
                &req.lane,
                &limit_of(req.n),
            ],
        )
        .await?;
    let mut claimed = rows
        .iter()
        .map(|r| {
            record(r).map(|item| Claimed {
                fence: item.fence,
                lease_expires_at: req.lease_until,
                item,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    claimed.sort_by(|a, b| {
        (b.item.priority, a.item.run_at, a.item.id).cmp(&(
            a.item.priority,
            b.item.run_at,
            b.item.id,
        ))
    });
    Ok(claimed)
}

pub(crate) async fn heartbeat(
    db: &PostgresBackend,
    id: ItemId,
    fence: Fence,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<Timestamp> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(&format!(
            "UPDATE work_items SET lease_expires_at = $4, updated_at = $3 WHERE {HELD} \
             RETURNING lease_expires_at"
        ))
        .await?;
    let row = conn
        .query_opt(
            &stmt,
            &[&id, &fence, &now.as_millis(), &lease_until.as_millis()],
        )
        .await?;
    match row {
        Some(r) => Ok(Timestamp::from_millis(r.try_get(0)?)),
        None => Err(StoreError::StaleLease { id, fence }),
    }
}

pub(crate) async fn checkpoint(
    db: &PostgresBackend,
    id: ItemId,
    fence: Fence,
    state: Value,
    now: Timestamp,
) -> StoreResult<()> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(&format!(
            "UPDATE work_items SET checkpoint = $4, updated_at = $3 WHERE {HELD}"
        ))
        .await?;
    let changed = conn
        .execute(&stmt, &[&id, &fence, &now.as_millis(), &Json(&state)])
        .await?;
    if changed == 1 {
        Ok(())
    } else {
        Err(StoreError::StaleLease { id, fence })
    }
}

async fn finish_one(tx: &Transaction<'_>, f: &Finish, now: Timestamp) -> StoreResult<()> {
    let n = now.as_millis();
    let changed = match &f.outcome {
        Outcome::Complete => {
            let stmt = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET state = 'completed', lease_owner = NULL, \
                     lease_expires_at = NULL, updated_at = $3 WHERE {HELD}"
                ))
                .await?;
            tx.execute(&stmt, &[&f.id, &f.fence, &n]).await?
        }
        Outcome::Retry { retry_at, error } => {
            let stmt = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET state = CASE WHEN attempt >= max_attempts THEN 'dead' \
                     ELSE 'failed' END, run_at = $4, last_error = $5, lease_owner = NULL, \
                     lease_expires_at = NULL, updated_at = $3 WHERE {HELD}"
                ))
                .await?;
            tx.execute(&stmt, &[&f.id, &f.fence, &n, &retry_at.as_millis(), error])
                .await?
        }
        Outcome::Dead { error } => {
            let stmt = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET state = 'dead', last_error = $4, lease_owner = NULL, \
                     lease_expires_at = NULL, updated_at = $3 WHERE {HELD}"
                ))
                .await?;
            tx.execute(&stmt, &[&f.id, &f.fence, &n, error]).await?
        }
        Outcome::Park { until, signal } => {
            let stmt = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET state = 'parked', run_at = $4, parked_on = $5, \
                     attempt = GREATEST(attempt - 1, 0), lease_owner = NULL, \
                     lease_expires_at = NULL, updated_at = $3 WHERE {HELD}"
                ))
                .await?;
            let until = until.unwrap_or(Timestamp::MAX).as_millis();
            tx.execute(&stmt, &[&f.id, &f.fence, &n, &until, signal])
                .await?
        }
        Outcome::Release => {
            let stmt = tx
                .prepare_cached(&format!(
                    "UPDATE work_items SET state = 'available', run_at = $3, \
                     attempt = GREATEST(attempt - 1, 0), lease_owner = NULL, \
                     lease_expires_at = NULL, updated_at = $3 WHERE {HELD}"
                ))
                .await?;
            tx.execute(&stmt, &[&f.id, &f.fence, &n]).await?
        }
    };
    if changed == 1 {
        return Ok(());
    }
    if matches!(f.outcome, Outcome::Complete) {
        // Completion repeated with the same fence is success.
        let stmt = tx
            .prepare_cached(
                "SELECT state = 'completed' AND fence = $2 FROM work_items WHERE id = $1",
            )
            .await?;
        let done = tx.query_opt(&stmt, &[&f.id, &f.fence]).await?;
        if let Some(row) = done
            && row.try_get::<_, bool>(0)?
        {
            return Ok(());
        }
    }
    Err(StoreError::StaleLease {
        id: f.id,
        fence: f.fence,
    })
}

pub(crate) async fn finish_many(
    db: &PostgresBackend,
    batch: &[Finish],
    now: Timestamp,
) -> StoreResult<Vec<StoreResult<()>>> {
    let mut conn = db.conn().await?;
    // The completions go first, as one statement on its own: each row's outcome stands
    // alone (no row's write depends on another's), so they need no transaction around them,
    // and the usual batch (all completions, all still held) costs one round trip and one
    // commit instead of three. A batch retried after an error finds its completions done
    // with the same fence, which is success.
    let completed = complete_bulk(&conn, batch, now).await?;
    vacuum_behind_the_drain(db, completed.len() as u64);
    let all_done = batch
        .iter()
        .all(|f| matches!(f.outcome, Outcome::Complete) && completed.contains(&(f.id, f.fence)));
    if all_done {
        return Ok(batch.iter().map(|_| Ok(())).collect());
    }
    let tx = conn.transaction().await?;
    let mut results = Vec::with_capacity(batch.len());
    let mut released = false;
    for f in batch {
        if matches!(f.outcome, Outcome::Complete) && completed.contains(&(f.id, f.fence)) {
            results.push(Ok(()));
            continue;
        }
        match finish_one(&tx, f, now).await {
            Err(StoreError::Postgres(e)) => return Err(StoreError::Postgres(e)),
            Ok(()) if matches!(f.outcome, Outcome::Release) => {
                released = true;
                results.push(Ok(()));
            }
            other => results.push(other),
        }
    }
    if released {
        // Released items are claimable at once: wake every lane's listeners.
        let stmt = tx.prepare_cached("SELECT pg_notify($1, '*')").await?;
        tx.execute(&stmt, &[&db.channel()]).await?;
    }
    tx.commit().await?;
    Ok(results)
}

/// Completes every `Complete` of `batch` in one statement; each row still checks its own
/// fence, state and lease. Returns the (id, fence) pairs it completed; the rest go through
/// [`finish_one`], which tells a repeated completion from a stale one.
async fn complete_bulk(
    conn: &deadpool_postgres::Object,
    batch: &[Finish],
    now: Timestamp,
) -> StoreResult<HashSet<(ItemId, Fence)>> {
    // Each row is matched by id (the primary key) and by its own "id:fence" pair (a hashed
    // `= ANY` filter): one table scan, no join whose plan depends on estimates (see `claim`).
    let (ids, held): (Vec<i64>, Vec<String>) = batch
        .iter()
        .filter(|f| matches!(f.outcome, Outcome::Complete))
        .map(|f| (f.id, format!("{}:{}", f.id, f.fence)))
        .unzip();
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let stmt = conn
        .prepare_cached(
            "UPDATE work_items AS w SET state = 'completed', lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = $3 \
             WHERE w.id = ANY($1::int8[]) \
                 AND (w.id::text || ':' || w.fence::text) = ANY($2::text[]) \
                 AND w.state = 'running' AND w.lease_expires_at > $3 \
             RETURNING w.id, w.fence",
        )
        .await?;
    let rows = conn.query(&stmt, &[&ids, &held, &now.as_millis()]).await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect()
}

/// Takes the transaction-scoped advisory lock `key`, waiting while another session (another
/// host's sweep or relay) holds it: passes run one at a time across hosts. Waiting rather
/// than skipping keeps `sweep()` meaning "expired leases are back when it returns": a pass
/// skipped because another host's pass (with an earlier `now`) held the lock would not.
/// The lock ends with the transaction, so a host that dies mid-pass frees it at once.
async fn lock(tx: &Transaction<'_>, key: i64) -> StoreResult<()> {
    let stmt = tx
        .prepare_cached("SELECT pg_advisory_xact_lock($1)")
        .await?;
    tx.execute(&stmt, &[&key]).await?;
    Ok(())
}

pub(crate) async fn sweep(db: &PostgresBackend, now: Timestamp) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    lock(&tx, db.keys.sweep).await?;
    let stmt = tx
        .prepare_cached(
            "UPDATE work_items SET state = CASE WHEN attempt >= max_attempts THEN 'dead' \
             ELSE 'available' END, last_error = 'lease expired', lease_owner = NULL, \
             lease_expires_at = NULL, run_at = $1, updated_at = $1 \
             WHERE state = 'running' AND lease_expires_at <= $1",
        )
        .await?;
    // No wake-up: an item back from an expired lease has already waited a lease; the next
    // poll finds it. (Waking here would also hand it straight back to an idle claimer of the
    // host whose handler may still be running it.)
    let changed = tx.execute(&stmt, &[&now.as_millis()]).await?;
    tx.commit().await?;
    Ok(changed)
}

async fn state_of(tx: &Transaction<'_>, id: ItemId) -> StoreResult<ItemState> {
    let row = tx
        .query_opt("SELECT state FROM work_items WHERE id = $1", &[&id])
        .await?
        .ok_or(StoreError::NotFound(id))?;
    parse_state(&row.try_get::<_, String>(0)?)
}

pub(crate) async fn retry(db: &PostgresBackend, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "UPDATE work_items SET state = 'available', attempt = 0, run_at = $2, \
             updated_at = $2 WHERE id = $1 AND state = 'dead'",
            &[&id, &now.as_millis()],
        )
        .await?;
    if changed == 0 {
        let state = state_of(&tx, id).await?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected: "dead",
        });
    }
    tx.execute("SELECT pg_notify($1, '*')", &[&db.channel()])
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn retry_all_dead(db: &PostgresBackend, now: Timestamp) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    // A dead item whose dedupe key a live item holds stays dead (SQLite's UPDATE OR
    // IGNORE); of several dead items sharing a free key, the oldest is retried.
    let changed = tx
        .execute(
            &format!(
                "UPDATE work_items AS w SET state = 'available', attempt = 0, run_at = $1, \
                 updated_at = $1 WHERE w.state = 'dead' AND (w.dedupe_key IS NULL OR ( \
                     NOT EXISTS (SELECT 1 FROM work_items l WHERE l.dedupe_key = w.dedupe_key \
                         AND l.kind = w.kind AND l.state IN {LIVE}) \
                     AND w.id = (SELECT min(d.id) FROM work_items d \
                         WHERE d.dedupe_key = w.dedupe_key AND d.kind = w.kind \
                             AND d.state = 'dead')))"
            ),
            &[&now.as_millis()],
        )
        .await?;
    if changed > 0 {
        tx.execute("SELECT pg_notify($1, '*')", &[&db.channel()])
            .await?;
    }
    tx.commit().await?;
    Ok(changed)
}

pub(crate) async fn discard(db: &PostgresBackend, id: ItemId) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "DELETE FROM work_items WHERE id = $1 AND state = 'dead'",
            &[&id],
        )
        .await?;
    if changed == 0 {
        let state = state_of(&tx, id).await?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected: "dead",
        });
    }
    tx.execute("DELETE FROM work_effects WHERE item_id = $1", &[&id])
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn purge_completed(
    db: &PostgresBackend,
    before: Timestamp,
    limit: usize,
) -> StoreResult<u64> {
    let conn = db.conn().await?;
    // One statement: the items and their effects go together. SKIP LOCKED lets purges on
    // several hosts share the work; the partial index `work_items_completed` finds them.
    // The ids are picked once into an array (see `claim` for why, not a join).
    let stmt = conn
        .prepare_cached(
            "WITH gone AS (DELETE FROM work_items WHERE id = ANY(ARRAY( \
                 SELECT id FROM work_items WHERE state = 'completed' AND updated_at < $1 \
                 ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING id), \
             fx AS (DELETE FROM work_effects WHERE item_id = ANY(ARRAY(SELECT id FROM gone))) \
             SELECT count(*) FROM gone",
        )
        .await?;
    let row = conn
        .query_one(&stmt, &[&before.as_millis(), &limit_of(limit)])
        .await?;
    let purged = u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0);
    let since = db.purged_since_vacuum.fetch_add(purged, Ordering::Relaxed) + purged;
    if since >= VACUUM_AFTER_PURGED {
        db.purged_since_vacuum.store(0, Ordering::Relaxed);
        // SKIP_LOCKED: when another host's vacuum (or autovacuum) has the table, this one
        // is not needed. A failure (say, a role that does not own the tables) costs only
        // the clean-up, never the purge.
        if let Err(e) = conn
            .batch_execute("VACUUM (SKIP_LOCKED) work_items, work_effects")
            .await
        {
            tracing::warn!(error = %e, "vacuuming work_items after a purge failed");
        }
    }
    Ok(purged)
}

/// Items completed (by this backend) after which it vacuums `work_items` in the background.
///
/// Each claim walks `work_items_claim` from its start, and every item claimed since the
/// last vacuum left an entry there pointing at a dead row version: on a draining backlog
/// of a million items each claim crossed more of them than the one before, and the drain
/// rate fell from ~77k to ~45k items/s from its start to its end with autovacuum never
/// running (it wakes once a minute and waits for 20% of the table). A vacuum every 100,000
/// completions takes well under a second on this table and keeps the front of the index
/// clean; it runs on its own pooled connection beside the loop, one at a time per backend,
/// `SKIP_LOCKED` when another host's (or autovacuum's) already has the table.
const VACUUM_AFTER_FINISHED: u64 = 100_000;

fn vacuum_behind_the_drain(db: &PostgresBackend, completed: u64) {
    let since = db
        .finished_since_vacuum
        .fetch_add(completed, Ordering::Relaxed)
        + completed;
    if since < VACUUM_AFTER_FINISHED || db.vacuuming.swap(true, Ordering::AcqRel) {
        return;
    }
    db.finished_since_vacuum.store(0, Ordering::Relaxed);
    let db = db.clone();
    tokio::spawn(async move {
        let ran = async {
            let conn = db.conn().await?;
            conn.batch_execute("VACUUM (SKIP_LOCKED) work_items")
                .await?;
            Ok::<_, StoreError>(())
        }
        .await;
        if let Err(e) = ran {
            tracing::warn!(error = %e, "vacuuming work_items behind the drain failed");
        }
        db.vacuuming.store(false, Ordering::Release);
    });
}

/// Rows purged (by this backend) after which retention vacuums `work_items` itself.
///
/// Every item leaves three dead row versions behind (claim, completion, purge) and an entry
/// of each in the indexes; until a vacuum removes them the claim walks the dead part of
/// `work_items_claim` and the heap keeps growing. Autovacuum wakes once a minute
/// (`autovacuum_naptime`) and by default waits for dead rows to reach 20% of the table, so
/// at queue speeds (tens of thousands of items a second) it lags by millions of rows — the
/// starvation of River #59. Retention knows how many rows it just deleted, so it runs the
/// vacuum itself; on a table emptied by the purge that takes tens of milliseconds.
const VACUUM_AFTER_PURGED: u64 = 25_000;

pub(crate) async fn signal(db: &PostgresBackend, signal: &str, now: Timestamp) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "UPDATE work_items SET state = 'available', run_at = $2, parked_on = NULL, \
             updated_at = $2 WHERE state = 'parked' AND parked_on = $1",
            &[&signal, &now.as_millis()],
        )
        .await?;
    if changed > 0 {
        tx.execute("SELECT pg_notify($1, '*')", &[&db.channel()])
            .await?;
    }
    tx.commit().await?;
    Ok(changed)
}

pub(crate) async fn get(db: &PostgresBackend, id: ItemId) -> StoreResult<Option<ItemRecord>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(&format!("SELECT {COLS} FROM work_items WHERE id = $1"))
        .await?;
    conn.query_opt(&stmt, &[&id])
        .await?
        .as_ref()
        .map(record)
        .transpose()
}

pub(crate) async fn list(
    db: &PostgresBackend,
    filter: &ListFilter,
) -> StoreResult<Vec<ItemRecord>> {
    let conn = db.conn().await?;
    let order = if filter.newest_first { "DESC" } else { "ASC" };
    let stmt = conn
        .prepare_cached(&format!(
            "SELECT {COLS} FROM work_items WHERE ($1::text IS NULL OR state = $1) \
             AND ($2::text IS NULL OR lane = $2) AND ($4::text IS NULL OR kind = $4) \
             ORDER BY id {order} LIMIT $3"
        ))
        .await?;
    let limit: Option<i64> = filter.limit.map(limit_of);
    let rows = conn
        .query(
            &stmt,
            &[
                &filter.state.map(ItemState::as_str),
                &filter.lane,
                &limit,
                &filter.kind,
            ],
        )
        .await?;
    rows.iter().map(record).collect()
}

pub(crate) async fn stats(db: &PostgresBackend, now: Timestamp) -> StoreResult<Vec<LaneStats>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT lane, state, count(*), min(created_at), \
                    min(CASE WHEN run_at <= $1 THEN run_at END), \
                    (state = 'available' AND run_at > $1) AS scheduled \
             FROM work_items GROUP BY lane, state, scheduled",
        )
        .await?;
    let rows = conn.query(&stmt, &[&now.as_millis()]).await?;
    let mut lanes: BTreeMap<String, LaneStats> = BTreeMap::new();
    for r in &rows {
        let lane: String = r.try_get(0)?;
        let state = parse_state(&r.try_get::<_, String>(1)?)?;
        let count: i64 = r.try_get(2)?;
        if r.try_get::<_, bool>(5)? {
            lanes
                .entry(lane.clone())
                .or_insert_with(|| LaneStats::new(lane))
                .scheduled = u64::try_from(count).unwrap_or(0);
            continue;
        }
        let oldest_created: Option<i64> = r.try_get(3)?;
        let oldest_due: Option<i64> = r.try_get(4)?;
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
             max_attempts, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id"
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
            "SELECT id, kind, lane, payload, dedupe_key, run_at, priority, max_attempts \
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

pub(crate) async fn put_worker(db: &PostgresBackend, w: &WorkerRecord) -> StoreResult<()> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET \
             lanes = excluded.lanes, state = excluded.state, \
             last_seen_at = excluded.last_seen_at, lease_ms = excluded.lease_ms",
        )
        .await?;
    conn.execute(
        &stmt,
        &[
            &w.id,
            &w.lanes.join(","),
            &w.state.as_str(),
            &w.started_at.as_millis(),
            &w.last_seen_at.as_millis(),
            &w.lease_ms,
        ],
    )
    .await?;
    Ok(())
}

pub(crate) async fn workers(db: &PostgresBackend) -> StoreResult<Vec<WorkerRecord>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "SELECT id, lanes, state, started_at, last_seen_at, lease_ms FROM workers \
             ORDER BY id",
        )
        .await?;
    let rows = conn.query(&stmt, &[]).await?;
    rows.iter()
        .map(|r| {
            let lanes: String = r.try_get(1)?;
            let state: String = r.try_get(2)?;
            Ok(WorkerRecord {
                id: r.try_get(0)?,
                lanes: lanes
                    .split(',')
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
                state: WorkerState::parse(&state)
                    .ok_or_else(|| task(format!("unknown worker state `{state}`")))?,
                started_at: Timestamp::from_millis(r.try_get(3)?),
                last_seen_at: Timestamp::from_millis(r.try_get(4)?),
                lease_ms: r.try_get(5)?,
            })
        })
        .collect()
}

pub(crate) async fn mark_silent_workers(
    db: &PostgresBackend,
    now: Timestamp,
) -> StoreResult<Vec<String>> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(
            "UPDATE workers SET state = 'OFFLINE' WHERE state <> 'OFFLINE' \
             AND $1 - last_seen_at > 3 * LEAST(lease_ms, 1000000000000) RETURNING id",
        )
        .await?;
    let rows = conn.query(&stmt, &[&now.as_millis()]).await?;
    let mut ids = rows
        .iter()
        .map(|r| r.try_get::<_, String>(0))
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort();
    Ok(ids)
}

pub(crate) async fn purge_retained(
    db: &PostgresBackend,
    before: Timestamp,
    limit: usize,
) -> StoreResult<(u64, u64)> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let outbox = tx
        .execute(
            "DELETE FROM outbox WHERE id = ANY(ARRAY(SELECT id FROM outbox \
             WHERE relayed_at IS NOT NULL AND relayed_at < $1 ORDER BY relayed_at LIMIT $2))",
            &[&before.as_millis(), &limit_of(limit)],
        )
        .await?;
    let workers = tx
        .execute(
            "DELETE FROM workers WHERE state = 'OFFLINE' AND last_seen_at < $1",
            &[&before.as_millis()],
        )
        .await?;
    tx.commit().await?;
    Ok((outbox, workers))
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

pub(crate) async fn cancel(db: &PostgresBackend, id: ItemId, now: Timestamp) -> StoreResult<()> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            &format!(
                "UPDATE work_items SET state = 'dead', last_error = 'cancelled by an operator', \
                 lease_owner = NULL, lease_expires_at = NULL, parked_on = NULL, updated_at = $2 \
                 WHERE id = $1 AND state IN {LIVE}"
            ),
            &[&id, &now.as_millis()],
        )
        .await?;
    if changed == 0 {
        let state = state_of(&tx, id).await?;
        return Err(StoreError::WrongState {
            id,
            state,
            expected: "live (available, running, failed or parked)",
        });
    }
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn release_worker(
    db: &PostgresBackend,
    owner: &str,
    now: Timestamp,
) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    let changed = tx
        .execute(
            "UPDATE work_items SET state = 'available', run_at = $2, lease_owner = NULL, \
             lease_expires_at = NULL, last_error = 'released by an operator', updated_at = $2 \
             WHERE state = 'running' AND lease_owner = $1",
            &[&owner, &now.as_millis()],
        )
        .await?;
    tx.execute(
        "UPDATE workers SET state = 'OFFLINE' WHERE id = $1",
        &[&owner],
    )
    .await?;
    if changed > 0 {
        tx.execute("SELECT pg_notify($1, '*')", &[&db.channel()])
            .await?;
    }
    tx.commit().await?;
    Ok(changed)
}

pub(crate) async fn outbox_stats(db: &PostgresBackend, now: Timestamp) -> StoreResult<OutboxStats> {
    let conn = db.conn().await?;
    let row = conn
        .query_one(
            "SELECT count(*) FILTER (WHERE relay_error IS NULL), \
                    count(*) FILTER (WHERE relay_error IS NOT NULL), \
                    min(created_at) FILTER (WHERE relay_error IS NULL) \
             FROM outbox WHERE relayed_at IS NULL",
            &[],
        )
        .await?;
    let (pending, refused, oldest): (i64, i64, Option<i64>) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    Ok(OutboxStats {
        pending: u64::try_from(pending).unwrap_or(0),
        refused: u64::try_from(refused).unwrap_or(0),
        oldest_pending_age_ms: oldest.map_or(0, |t| now.millis_since(Timestamp::from_millis(t))),
    })
}

pub(crate) async fn kind_counts(
    db: &PostgresBackend,
) -> StoreResult<Vec<(String, ItemState, u64)>> {
    let conn = db.conn().await?;
    let rows = conn
        .query(
            "SELECT kind, state, count(*) FROM work_items GROUP BY kind, state \
             ORDER BY kind, state",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let n: i64 = r.try_get(2)?;
            Ok((
                r.try_get(0)?,
                parse_state(&r.try_get::<_, String>(1)?)?,
                u64::try_from(n).unwrap_or(0),
            ))
        })
        .collect()
}
