//! Claims and the fenced writes of a held lease: the claim itself, heartbeats, checkpoints,
//! and the sweep that hands expired leases back.

use serde_json::Value;
use tokio_postgres::types::Json;

use super::{HELD, ending, limit_of, lock, parse_state};
use crate::error::StoreError;
use crate::item::{Claimed, Held, ItemRecord, ItemState};
use crate::store::postgres::PostgresBackend;
use crate::store::sql::{ClaimFilter, claim_filters};
use crate::store::{ClaimRequest, StoreResult};
use crate::time::Timestamp;

/// Claims in one statement: the ids are picked (and locked) once into an array by the
/// ordered, limited scan of `work_items_claim`, then updated by primary key. Not as a join
/// (`UPDATE … FROM (SELECT …) picked WHERE w.id = picked.id`): a join's plan follows the
/// estimates, and a queue table's estimates are wrong most of the time (a vacuum of an
/// emptied table says 0 rows; an analyze sees whatever state the backlog was in). With
/// estimates of one row the planner may nest a scan of the whole table inside a loop over
/// the picked rows: on the retention purge, written that way, that took 38 s for 20,000
/// rows right after a vacuum. An array makes every plan linear.
///
/// A claim writes nothing but the rows: `claimed_from` keeps the state each was taken from
/// (the `SET` reads the row before the update, so `RETURNING` hands it back), under which
/// the counters go on counting it until its attempt ends — NULL for `available`, the common
/// case, so most rows carry no bytes for it.
pub(crate) async fn claim(
    db: &PostgresBackend,
    req: &ClaimRequest,
    now: Timestamp,
) -> StoreResult<Vec<Claimed>> {
    db.wake.claim_started(&req.lane).await;
    let conn = db.conn().await?;
    let (lease_until, now_ms, limit) = (
        req.lease_until.as_millis(),
        now.as_millis(),
        limit_of(req.n),
    );
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&req.owner, &lease_until, &now_ms, &req.lane, &limit];
    let (filters, which) = claim_filters(req, params.len() + 1, '$', |p| {
        format!("kind = ANY({p}::text[])")
    });
    for filter in which {
        params.push(match filter {
            ClaimFilter::Kinds => &req.kinds,
            ClaimFilter::Account => &req.account,
            ClaimFilter::Session => &req.session,
        });
    }
    let stmt = conn
        .prepare_cached(&format!(
            "UPDATE work_items AS w SET state = 'running', fence = w.fence + 1, \
                 attempt = w.attempt + 1, lease_owner = $1, lease_expires_at = $2, \
                 updated_at = $3, claimed_at = $3, parked_on = NULL, \
                 claimed_from = NULLIF(w.state, 'available') \
             WHERE w.id = ANY(ARRAY(SELECT id FROM work_items \
                 WHERE lane = $4 AND state IN ('available', 'failed', 'parked') AND run_at <= $3\
                 {filters} \
                 ORDER BY priority DESC, run_at, id LIMIT $5 \
                 FOR UPDATE SKIP LOCKED)) \
             RETURNING {CLAIM_COLS}{}",
            if req.with_inputs { INPUTS } else { "" }
        ))
        .await?;
    let rows = conn.query(&stmt, &params).await?;
    // Sized once: a collect through `Result` grows the vector from nothing, copying the
    // claimed items it holds at every doubling.
    let mut claimed = Vec::with_capacity(rows.len());
    for r in &rows {
        claimed.push(claimed_row(r, req, now)?);
    }
    crate::store::sql::claim_order(&mut claimed);
    Ok(claimed)
}

/// What a claim returns of each row: the columns it does not set itself. The state
/// (`running`), the holder, the lease's end, `updated_at` and `claimed_at` (now) and
/// `parked_on` (none) are what the statement was given; returning them cost the drain
/// a fifth of each row's bytes, each encrypted, sent and decoded on the claim's round trip,
/// which is what a draining loop waits on. Then `claimed_from`, and the inputs when asked.
const CLAIM_COLS: &str = "w.id, w.kind, w.lane, w.payload, w.priority, w.attempt, \
     w.max_attempts, w.run_at, w.fence, w.dedupe_key, w.checkpoint, w.last_error, \
     w.created_at, w.account, w.claimed_from";

/// Where a claim's `claimed_from` comes in [`CLAIM_COLS`]; the inputs follow it.
const CLAIMED_FROM: usize = 14;

/// One claimed row ([`CLAIM_COLS`]) as the item it now is: held by `req.owner` until
/// `req.lease_until`, claimed at `now`.
fn claimed_row(
    r: &tokio_postgres::Row,
    req: &ClaimRequest,
    now: Timestamp,
) -> StoreResult<Claimed> {
    let from = match r.try_get::<_, Option<String>>(CLAIMED_FROM)? {
        Some(state) => parse_state(&state)?,
        None => ItemState::Available,
    };
    let listed = if req.with_inputs {
        r.try_get::<_, Option<Value>>(CLAIMED_FROM + 1)?
    } else {
        None
    };
    let inputs = match listed {
        Some(list) => serde_json::from_value(list)?,
        None => Vec::new(),
    };
    let item = ItemRecord {
        id: r.try_get(0)?,
        kind: r.try_get(1)?,
        lane: r.try_get(2)?,
        payload: r.try_get::<_, Json<Value>>(3)?.0,
        state: ItemState::Running,
        priority: r.try_get(4)?,
        attempt: r.try_get(5)?,
        max_attempts: r.try_get(6)?,
        run_at: Timestamp::from_millis(r.try_get(7)?),
        lease_owner: Some(req.owner.clone()),
        lease_expires_at: Some(req.lease_until),
        fence: r.try_get(8)?,
        dedupe_key: r.try_get(9)?,
        checkpoint: r.try_get::<_, Option<Json<Value>>>(10)?.map(|j| j.0),
        last_error: r.try_get(11)?,
        parked_on: None,
        created_at: Timestamp::from_millis(r.try_get(12)?),
        updated_at: now,
        claimed_at: Some(now),
        account: r
            .try_get::<_, Option<String>>(13)?
            .unwrap_or_else(|| crate::item::DEFAULT_ACCOUNT.to_owned()),
    };
    Ok(Claimed {
        fence: item.fence,
        lease_expires_at: req.lease_until,
        item,
        claimed_from: Some(from),
        inputs,
    })
}

/// The column a claim that asks for inputs returns after `claimed_from`: the item's inputs
/// by name, as JSON (read by the claim itself, not by a second round trip), or NULL for an
/// item that has none — looked up only where `has_inputs` says there are some.
const INPUTS: &str = ", CASE WHEN w.has_inputs THEN (SELECT json_agg(json_build_object(\
     'name', a.name, 'sha256', a.sha256, 'size', a.size) ORDER BY a.name) \
     FROM item_artifacts AS a WHERE a.item_id = w.id AND a.role = 'input') END";

/// The statement that renews `held`'s lease: `$5` = the new end; returns it, or no row.
pub(super) const RENEW: &str = "UPDATE work_items SET lease_expires_at = $5, updated_at = $4 \
     WHERE id = $1 AND fence = $2 AND lease_owner = $3 AND state = 'running' \
     AND lease_expires_at > $4 RETURNING lease_expires_at";

pub(crate) async fn heartbeat(
    db: &PostgresBackend,
    held: &Held,
    lease_until: Timestamp,
    now: Timestamp,
) -> StoreResult<Timestamp> {
    let conn = db.conn().await?;
    let stmt = conn.prepare_cached(RENEW).await?;
    let row = conn
        .query_opt(
            &stmt,
            &[
                &held.id,
                &held.fence,
                &held.owner,
                &now.as_millis(),
                &lease_until.as_millis(),
            ],
        )
        .await?;
    match row {
        Some(r) => Ok(Timestamp::from_millis(r.try_get(0)?)),
        None => Err(StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        }),
    }
}

pub(crate) async fn checkpoint(
    db: &PostgresBackend,
    held: &Held,
    state: Value,
    now: Timestamp,
) -> StoreResult<()> {
    let conn = db.conn().await?;
    let stmt = conn
        .prepare_cached(&format!(
            "UPDATE work_items SET checkpoint = $5, updated_at = $4 WHERE {HELD}"
        ))
        .await?;
    let changed = conn
        .execute(
            &stmt,
            &[
                &held.id,
                &held.fence,
                &held.owner,
                &now.as_millis(),
                &Json(&state),
            ],
        )
        .await?;
    if changed == 1 {
        Ok(())
    } else {
        Err(StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        })
    }
}

pub(crate) async fn sweep(db: &PostgresBackend, now: Timestamp) -> StoreResult<u64> {
    let mut conn = db.conn().await?;
    let tx = conn.transaction().await?;
    lock(&tx, db.keys.sweep).await?;
    let back = "CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'available' END";
    let stmt = tx
        .prepare_cached(&ending(
            "state = 'running' AND lease_expires_at <= $1",
            &format!("state = {back}, last_error = 'lease expired', run_at = $1"),
            "$1",
            back,
            "'expired'",
            "'lease expired'",
        ))
        .await?;
    // No wake-up: an item back from an expired lease has already waited a lease; the next
    // poll finds it. (Waking here would also hand it straight back to an idle claimer of the
    // host whose handler may still be running it.)
    let changed: i64 = tx.query_one(&stmt, &[&now.as_millis()]).await?.try_get(0)?;
    tx.commit().await?;
    Ok(u64::try_from(changed).unwrap_or(0))
}
