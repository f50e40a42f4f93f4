//! Finishing held items: completions in one bulk statement, every other outcome's fenced
//! update, and the vacuum a long drain runs behind itself.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use deadpool_postgres::Transaction;

use super::{HELD, counted, ending};
use crate::error::StoreError;
use crate::item::{Fence, Finish, ItemId, Outcome};
use crate::store::StoreResult;
use crate::store::postgres::PostgresBackend;
use crate::store::sql::completions_by_holder;
use crate::time::Timestamp;

/// What a completion sets. A completed item is never claimed again, so its row is its last
/// attempt as it stands: the holder stays in `lease_owner` (read as no lease once the item
/// is not running), `claimed_at` and `updated_at` are when it started and finished, and
/// nothing is written to `work_attempts`: the drain's common path writes no extra row.
const COMPLETED: &str = "state = 'completed', lease_expires_at = NULL";

/// The SQLSTATE of `scaffold_partial_batch()` (see the migration).
const PARTIAL_BATCH: &str = "SCAF1";

async fn finish_one(tx: &Transaction<'_>, f: &Finish, now: Timestamp) -> StoreResult<()> {
    let n = now.as_millis();
    let (id, fence, owner) = (&f.id, &f.fence, &f.owner);
    let row = match &f.outcome {
        Outcome::Complete => {
            let stmt = tx
                .prepare_cached(&format!(
                    "WITH f AS (UPDATE work_items SET {COMPLETED}, updated_at = $4 \
                         WHERE {HELD} RETURNING lane, kind, claimed_from), \
                     {} SELECT count(*) FROM f",
                    counted(
                        "SELECT lane, kind, coalesce(claimed_from, 'available') AS old_state, 'completed' AS new_state \
                         FROM f"
                    )
                ))
                .await?;
            tx.query_one(&stmt, &[id, fence, owner, &n]).await?
        }
        Outcome::Retry { retry_at, error } => {
            let state = "CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'failed' END";
            let stmt = tx
                .prepare_cached(&ending(
                    HELD,
                    &format!("state = {state}, run_at = $5, last_error = $6"),
                    "$4",
                    state,
                    state,
                    "$6",
                ))
                .await?;
            tx.query_one(&stmt, &[id, fence, owner, &n, &retry_at.as_millis(), error])
                .await?
        }
        Outcome::Dead { error } => {
            let stmt = tx
                .prepare_cached(&ending(
                    HELD,
                    "state = 'dead', last_error = $5",
                    "$4",
                    "'dead'",
                    "'dead'",
                    "$5",
                ))
                .await?;
            tx.query_one(&stmt, &[id, fence, owner, &n, error]).await?
        }
        Outcome::Park { until, signal } => {
            let stmt = tx
                .prepare_cached(&ending(
                    HELD,
                    "state = 'parked', run_at = $5, parked_on = $6, \
                     attempt = GREATEST(attempt - 1, 0)",
                    "$4",
                    "'parked'",
                    "'parked'",
                    "NULL",
                ))
                .await?;
            let until = until.unwrap_or(Timestamp::MAX).as_millis();
            tx.query_one(&stmt, &[id, fence, owner, &n, &until, signal])
                .await?
        }
        Outcome::Release => {
            let stmt = tx
                .prepare_cached(&ending(
                    HELD,
                    "state = 'available', run_at = $4, attempt = GREATEST(attempt - 1, 0)",
                    "$4",
                    "'available'",
                    "'released'",
                    "NULL",
                ))
                .await?;
            tx.query_one(&stmt, &[id, fence, owner, &n]).await?
        }
    };
    let changed: i64 = row.try_get(0)?;
    if changed == 1 {
        return Ok(());
    }
    if matches!(f.outcome, Outcome::Complete) && f.repeat_is_success {
        // Completion repeated by its holder with the same fence is success (a completed
        // item keeps its holder); under another's name it is refused like any other write.
        let stmt = tx
            .prepare_cached(
                "SELECT state = 'completed' AND fence = $2 AND lease_owner IS NOT DISTINCT FROM $3 \
                 FROM work_items WHERE id = $1",
            )
            .await?;
        let done = tx.query_opt(&stmt, &[&f.id, &f.fence, &f.owner]).await?;
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
    // The completions go first, one statement per holder on its own (a loop's batch, and a
    // remote worker's, has one holder): each row's outcome stands alone (no row's write
    // depends on another's), so they need no transaction around them, and the usual batch
    // (all completions, all still held) costs one round trip and one commit instead of
    // three. A batch retried after an error finds its completions done with the same fence,
    // which is success (or, for a strict finish, a refusal the coordinator tells from a
    // repeat by the attempt on record); several holders' groups are not one transaction.
    let completed = complete_bulk(&conn, batch, now).await?;
    vacuum_behind_the_drain(db, completed.count);
    if completed.all && batch.iter().all(|f| matches!(f.outcome, Outcome::Complete)) {
        return Ok(batch.iter().map(|_| Ok(())).collect());
    }
    let tx = conn.transaction().await?;
    let mut results = Vec::with_capacity(batch.len());
    let mut released = false;
    for f in batch {
        if matches!(f.outcome, Outcome::Complete) && completed.contains(f) {
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

/// The completions [`complete_bulk`] wrote.
struct Completed<'a> {
    /// How many.
    count: u64,
    /// Every completion of the batch (the usual case: nothing to look up); also when the
    /// batch has none, since only completions are asked about.
    all: bool,
    /// Otherwise, which (id, fence, holder)s: a finish presented under another holder's
    /// name beside the real holder's, in one batch, is not taken for the one completed.
    some: HashSet<(ItemId, Fence, &'a str)>,
}

impl Completed<'_> {
    /// Whether completion `f` was written.
    fn contains(&self, f: &Finish) -> bool {
        self.all || self.some.contains(&(f.id, f.fence, f.owner.as_str()))
    }
}

/// Completes every `Complete` of `batch`, one statement per holder (a loop's batch, or a
/// remote worker's, has one); each row still checks its own fence, owner, state and lease.
/// Says which it completed; the rest go through [`finish_one`], which tells a repeated
/// completion from a stale one.
async fn complete_bulk<'a>(
    conn: &deadpool_postgres::Object,
    batch: &'a [Finish],
    now: Timestamp,
) -> StoreResult<Completed<'a>> {
    let groups = completions_by_holder(batch);
    if let [(owner, group)] = groups.as_slice() {
        return complete_held_by(conn, owner, group, now).await;
    }
    let mut done = Completed {
        count: 0,
        all: true,
        some: HashSet::new(),
    };
    for (owner, group) in &groups {
        let part = complete_held_by(conn, owner, group, now).await?;
        done.count += part.count;
        done.all &= part.all;
        if part.all {
            done.some
                .extend(group.iter().map(|f| (f.id, f.fence, f.owner.as_str())));
        } else {
            done.some.extend(part.some);
        }
    }
    if done.all {
        done.some.clear();
    }
    Ok(done)
}

/// Completes `completions`, all held by `owner`, in one statement.
///
/// Each row is matched by id (the primary key) and by its own "id:fence" (a hashed `= ANY`
/// filter), and its holder by one comparison: one table scan, no join whose plan depends on
/// estimates (see `claim`).
///
/// A group whose every completion carries its claim's origin (a local loop's) is counted
/// from that: the statement appends the deltas it was given and answers only how many rows
/// it completed, raising `scaffold_partial_batch()` — which undoes all of it — when that is
/// fewer than it counted. Reading the completed rows back to count them cost the statement
/// an eighth of its rate; a partial batch (a lease lost, a completion repeated) is rare, and
/// is written again counting the rows themselves.
async fn complete_held_by<'a>(
    conn: &deadpool_postgres::Object,
    owner: &'a str,
    completions: &[&'a Finish],
    now: Timestamp,
) -> StoreResult<Completed<'a>> {
    let (ids, held): (Vec<i64>, Vec<String>) = completions
        .iter()
        .map(|f| (f.id, format!("{}:{}", f.id, f.fence)))
        .unzip();
    let now = now.as_millis();
    let matched = "w.id = ANY($1::int8[]) \
         AND (w.id::text || ':' || w.fence::text) = ANY($2::text[]) AND w.lease_owner = $4 \
         AND w.state = 'running' AND w.lease_expires_at > $3";
    if let Some(deltas) = deltas_of(completions) {
        let stmt = conn
            .prepare_cached(&format!(
                "WITH done AS (UPDATE work_items AS w SET {COMPLETED}, updated_at = $3 \
                     WHERE {matched} RETURNING w.id), \
                 counted AS (INSERT INTO work_count_deltas (lane, kind, state, delta) \
                     SELECT * FROM unnest($5::text[], $6::text[], $7::text[], $8::int8[])) \
                 SELECT CASE WHEN count(*) = $9 THEN count(*) ELSE scaffold_partial_batch() END \
                 FROM done"
            ))
            .await?;
        let expected = i64::try_from(completions.len()).unwrap_or(i64::MAX);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
            &ids, &held, &now, &owner, &deltas.0, &deltas.1, &deltas.2, &deltas.3, &expected,
        ];
        match conn.query_one(&stmt, &params).await {
            Ok(_) => {
                return Ok(Completed {
                    count: completions.len() as u64,
                    all: true,
                    some: HashSet::new(),
                });
            }
            Err(e) if e.code().is_some_and(|c| c.code() == PARTIAL_BATCH) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let stmt = conn
        .prepare_cached(&format!(
            "WITH done AS (UPDATE work_items AS w SET {COMPLETED}, updated_at = $3 \
                 WHERE {matched} RETURNING w.id, w.fence, w.lane, w.kind, w.claimed_from), \
             {} \
             SELECT id, fence FROM done",
            counted(
                "SELECT lane, kind, coalesce(claimed_from, 'available') AS old_state, 'completed' AS new_state FROM done"
            ),
        ))
        .await?;
    let rows = conn.query(&stmt, &[&ids, &held, &now, &owner]).await?;
    let some = rows
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, owner)))
        .collect::<StoreResult<HashSet<(ItemId, Fence, &str)>>>()?;
    Ok(Completed {
        count: some.len() as u64,
        all: some.len() == completions.len(),
        some,
    })
}

/// The counters' change of `completions` from their claims' origins, as the columns of
/// `work_count_deltas` (lane, kind, state, delta); `None` when one has no origin.
#[allow(clippy::type_complexity)]
fn deltas_of(
    completions: &[&Finish],
) -> Option<(Vec<String>, Vec<String>, Vec<&'static str>, Vec<i64>)> {
    // A batch's completions are of a few (lane, kind, state)s, most often one: a short
    // list searched from the last one hit costs less per item than a map of strings.
    type Key<'a> = (&'a str, &'a str, &'static str);
    fn add<'a>(net: &mut Vec<(Key<'a>, i64)>, key: Key<'a>, delta: i64, hint: &mut usize) {
        if net.get(*hint).is_none_or(|(k, _)| *k != key) {
            *hint = match net.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    net.push((key, 0));
                    net.len() - 1
                }
            };
        }
        net[*hint].1 += delta;
    }
    let mut net: Vec<(Key<'_>, i64)> = Vec::new();
    let (mut from_hint, mut to_hint) = (0, 0);
    for f in completions {
        let o = f.origin.as_ref()?;
        add(
            &mut net,
            (&o.lane, &o.kind, o.from.as_str()),
            -1,
            &mut from_hint,
        );
        add(&mut net, (&o.lane, &o.kind, "completed"), 1, &mut to_hint);
    }
    net.sort_unstable();
    let mut cols = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((lane, kind, state), delta) in net.into_iter().filter(|(_, d)| *d != 0) {
        cols.0.push(lane.to_owned());
        cols.1.push(kind.to_owned());
        cols.2.push(state);
        cols.3.push(delta);
    }
    Some(cols)
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
