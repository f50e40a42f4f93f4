//! What the counters and the attempt history learn from each write, in the write's own
//! transaction (no triggers: a trigger on `work_items` gave every update a statement journal
//! and cost the drain a third of its rate).
//!
//! The counters count a running item under the state its claim took it from
//! (`claimed_from`) until its attempt ends, so a claim changes none; `counts` moves the
//! running ones to `running` as it reads. An attempt that ends other than by completing is
//! one `work_attempts` row; a completed item's row is its last attempt.

use std::collections::BTreeMap;

use rusqlite::{Row, ToSql, Transaction};

use crate::store::StoreResult;
use crate::time::Timestamp;

/// The columns [`Before`] reads.
const BEFORE_COLS: &str = "id, lane, kind, state, claimed_from, attempt, max_attempts, fence, \
     lease_owner, claimed_at";

/// A row as it was before a write that moves it, read inside the write's transaction.
#[derive(Debug)]
pub(super) struct Before {
    pub id: i64,
    pub lane: String,
    pub kind: String,
    pub state: String,
    claimed_from: Option<String>,
    pub attempt: i32,
    pub max_attempts: i32,
    fence: i64,
    lease_owner: Option<String>,
    claimed_at: Option<i64>,
}

impl Before {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Before {
            id: r.get(0)?,
            lane: r.get(1)?,
            kind: r.get(2)?,
            state: r.get(3)?,
            claimed_from: r.get(4)?,
            attempt: r.get(5)?,
            max_attempts: r.get(6)?,
            fence: r.get(7)?,
            lease_owner: r.get(8)?,
            claimed_at: r.get(9)?,
        })
    }

    pub(super) fn running(&self) -> bool {
        self.state == "running"
    }

    /// The state the counters hold it under: a running item's claimed-from state.
    pub(super) fn counted_as(&self) -> &str {
        if self.running() {
            self.claimed_from.as_deref().unwrap_or("available")
        } else {
            &self.state
        }
    }
}

/// The rows `condition` (a `WHERE` over `work_items`) picks, as they are now.
pub(super) fn before(
    tx: &Transaction<'_>,
    condition: &str,
    params: &[&dyn ToSql],
) -> StoreResult<Vec<Before>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {BEFORE_COLS} FROM work_items WHERE {condition}"
    ))?;
    let rows = stmt.query_map(params, Before::read)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Applies items' moves to the counters: (lane, kind, counted before, counted after), `None`
/// for an insert or a delete. One statement for the lot.
pub(super) fn count<'a>(
    tx: &rusqlite::Connection,
    moves: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>, Option<&'a str>)>,
) -> StoreResult<()> {
    let mut net: BTreeMap<(&str, &str, &str), i64> = BTreeMap::new();
    for (lane, kind, from, to) in moves {
        if from == to {
            continue;
        }
        if let Some(from) = from {
            *net.entry((lane, kind, from)).or_default() -= 1;
        }
        if let Some(to) = to {
            *net.entry((lane, kind, to)).or_default() += 1;
        }
    }
    let rows: Vec<(&str, &str, &str, i64)> = net
        .into_iter()
        .filter(|(_, d)| *d != 0)
        .map(|((lane, kind, state), d)| (lane, kind, state, d))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO work_counts (lane, kind, state, n) \
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?1) WHERE true \
         ON CONFLICT (lane, kind, state) DO UPDATE SET n = n + excluded.n",
    )?
    .execute([serde_json::to_string(&rows)?])?;
    Ok(())
}

/// Records the ended attempts of the running ones of `rows`, each as `outcome(row)` with
/// `error`, finished at `now`.
pub(super) fn record_ended(
    tx: &Transaction<'_>,
    rows: &[Before],
    now: Timestamp,
    outcome: impl Fn(&Before) -> &'static str,
    error: Option<&str>,
) -> StoreResult<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO work_attempts \
             (item_id, attempt, fence, holder, claimed_at, finished_at, outcome, error) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for r in rows.iter().filter(|r| r.running()) {
        stmt.execute(rusqlite::params![
            r.id,
            r.attempt,
            r.fence,
            r.lease_owner,
            r.claimed_at,
            now.as_millis(),
            outcome(r),
            error
        ])?;
    }
    Ok(())
}
