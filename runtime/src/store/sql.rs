//! What the SQL backends (SQLite and PostgreSQL) share beyond their dialects: the item
//! columns every query reads, the states an operator may act on, the claim order, worker
//! rows and the too-new-schema refusal.

use std::collections::BTreeMap;

use super::{ClaimRequest, Claimed, SCHEMA_VERSION, StoreResult};
use crate::error::StoreError;
use crate::item::{
    Finish, ItemState, ListFilter, Outcome, UnknownState, WorkerRecord, WorkerState,
};
use crate::time::Timestamp;

/// A claim filter whose parameter a backend binds, in the order [`claim_filters`] numbered
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimFilter {
    /// `req.kinds`, in the backend's form for a list.
    Kinds,
    /// `req.account`.
    Account,
    /// `req.session`.
    Session,
}

/// The filters `req` has, as `AND …` terms over `work_items`, and the parameters they take.
/// Only those it has are in the statement (one prepared statement per combination): neither
/// backend folds `$6 IS NULL OR …` away, and both tested it per row scanned, on the claim a
/// local loop makes most (the drain's). Parameters are numbered from `first`, written with
/// `mark` (`$` or `?`); `kinds_in` is the backend's test of `kind` against a list parameter
/// (given its placeholder); the time is parameter 3 of every claim.
pub(crate) fn claim_filters(
    req: &ClaimRequest,
    first: usize,
    mark: char,
    kinds_in: fn(&str) -> String,
) -> (String, Vec<ClaimFilter>) {
    let mut sql = String::new();
    let mut params = Vec::new();
    let next = |params: &mut Vec<ClaimFilter>, which| {
        params.push(which);
        format!("{mark}{}", first + params.len() - 1)
    };
    if req.kinds.is_some() {
        let p = next(&mut params, ClaimFilter::Kinds);
        sql.push_str(&format!(" AND {}", kinds_in(&p)));
    }
    if req.account.is_some() {
        let p = next(&mut params, ClaimFilter::Account);
        sql.push_str(&format!(" AND coalesce(account, 'default') = {p}"));
    }
    if req.session.is_some() {
        let p = next(&mut params, ClaimFilter::Session);
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM remote_sessions AS s \
                 JOIN remote_workers AS rw ON rw.id = s.worker_id \
                 WHERE s.token_sha256 = {p} AND s.expires_at > {mark}3 \
                 AND rw.revoked_at IS NULL)"
        ));
    }
    (sql, params)
}

/// A `list` parameter, in the order [`list_query`] numbered them: every one is text or an
/// integer, which each backend binds as its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListValue<'a> {
    Text(&'a str),
    Int(i64),
}

/// `list`'s statement: the items `filter` asks for, by id in its order, with only the terms
/// it has (one prepared statement per combination), and the parameters they take, written
/// with `mark` (`$` or `?`) from 1. `dedupe_key = ?` alone lets a backend read its index
/// by key; `(? IS NULL OR dedupe_key = ?)` made every look-up by key scan the table.
pub(crate) fn list_query<'a>(filter: &'a ListFilter, mark: char) -> (String, Vec<ListValue<'a>>) {
    let mut values = Vec::new();
    let mut terms = Vec::new();
    let mut term = |values: &mut Vec<ListValue<'a>>, value: ListValue<'a>, test: &str| {
        values.push(value);
        terms.push(format!("{test} {mark}{}", values.len()));
    };
    if let Some(state) = filter.state {
        term(&mut values, ListValue::Text(state.as_str()), "state =");
    }
    if let Some(lane) = &filter.lane {
        term(&mut values, ListValue::Text(lane), "lane =");
    }
    if let Some(kind) = &filter.kind {
        term(&mut values, ListValue::Text(kind), "kind =");
    }
    if let Some(key) = &filter.dedupe_key {
        term(&mut values, ListValue::Text(key), "dedupe_key =");
    }
    let (order, past) = if filter.newest_first {
        ("DESC", "id <")
    } else {
        ("ASC", "id >")
    };
    if let Some(after) = filter.after {
        term(&mut values, ListValue::Int(after), past);
    }
    let mut sql = format!("SELECT {COLS} FROM work_items");
    if !terms.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&terms.join(" AND "));
    }
    sql.push_str(&format!(" ORDER BY id {order}"));
    if let Some(limit) = filter.limit {
        values.push(ListValue::Int(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.push_str(&format!(" LIMIT {mark}{}", values.len()));
    }
    (sql, values)
}

/// The completions of `batch`, grouped by holder (by name): what each backend completes in
/// one statement per group, the holder compared once. One group, without a map, in the usual
/// case: a loop's batch, and a remote worker's, has one holder.
pub(crate) fn completions_by_holder(batch: &[Finish]) -> Vec<(&str, Vec<&Finish>)> {
    let completions: Vec<&Finish> = batch
        .iter()
        .filter(|f| matches!(f.outcome, Outcome::Complete))
        .collect();
    let Some(&first) = completions.first() else {
        return Vec::new();
    };
    if completions.iter().all(|f| f.owner == first.owner) {
        return vec![(first.owner.as_str(), completions)];
    }
    let mut by_holder: BTreeMap<&str, Vec<&Finish>> = BTreeMap::new();
    for f in completions {
        by_holder.entry(&f.owner).or_default().push(f);
    }
    by_holder.into_iter().collect()
}

/// A stored item state; one the runtime does not know is the store's error, not a panic.
pub(crate) fn parse_state(raw: &str) -> StoreResult<ItemState> {
    raw.parse()
        .map_err(|e: UnknownState| StoreError::Task(e.to_string()))
}

/// The `work_items` columns a row is decoded from, in the order both backends decode them.
pub(crate) const COLS: &str = "id, kind, lane, payload, state, priority, attempt, max_attempts, run_at, \
    lease_owner, lease_expires_at, fence, dedupe_key, checkpoint, last_error, parked_on, \
    created_at, updated_at, claimed_at, account";

/// Sorts claimed items the way a claim hands them out: highest priority first, then the
/// earliest due, then the oldest id (the SQL `ORDER BY` of both claim queries, which a
/// multi-row `UPDATE … RETURNING` does not keep).
pub(crate) fn claim_order(claimed: &mut [Claimed]) {
    claimed.sort_by(|a, b| {
        (b.item.priority, a.item.run_at, a.item.id).cmp(&(
            a.item.priority,
            b.item.run_at,
            b.item.id,
        ))
    });
}

/// A `workers` row (`id, lanes, state, started_at, last_seen_at, lease_ms`) as a record;
/// `Err` names the state the row holds when it is not one this runtime knows.
pub(crate) fn worker_record(
    id: String,
    lanes: &str,
    state: &str,
    (started_at, last_seen_at, lease_ms): (i64, i64, i64),
) -> Result<WorkerRecord, String> {
    Ok(WorkerRecord {
        id,
        lanes: lanes
            .split(',')
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        state: WorkerState::parse(state)
            .ok_or_else(|| format!("unknown worker state `{state}`"))?,
        started_at: Timestamp::from_millis(started_at),
        last_seen_at: Timestamp::from_millis(last_seen_at),
        lease_ms,
    })
}

/// Refuses a database a newer runtime has migrated (its schema past [`SCHEMA_VERSION`]):
/// this runtime would misread its rows.
pub(crate) fn refuse_newer(found: i64) -> StoreResult<()> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{COLS, ClaimFilter, ListValue, claim_filters, list_query};
    use crate::item::{ItemState, ListFilter};
    use crate::store::ClaimRequest;
    use crate::time::Timestamp;

    fn request() -> ClaimRequest {
        ClaimRequest {
            lane: "default".to_owned(),
            n: 10,
            owner: "w".to_owned(),
            lease_until: Timestamp::from_millis(0),
            kinds: None,
            account: None,
            with_inputs: false,
            session: None,
        }
    }

    #[test]
    fn a_claim_without_filters_has_none() {
        let (sql, params) = claim_filters(&request(), 6, '$', |p| format!("kind = ANY({p})"));
        assert_eq!((sql.as_str(), params.len()), ("", 0));
    }

    #[test]
    fn filters_are_numbered_in_the_order_their_parameters_are_bound() {
        let req = ClaimRequest {
            kinds: Some(vec!["A".to_owned()]),
            account: Some("acme".to_owned()),
            session: Some("ab12".to_owned()),
            ..request()
        };
        let (sql, params) = claim_filters(&req, 6, '?', |p| format!("kind IN ({p})"));
        assert_eq!(
            params,
            [
                ClaimFilter::Kinds,
                ClaimFilter::Account,
                ClaimFilter::Session
            ]
        );
        assert!(sql.starts_with(" AND kind IN (?6) AND coalesce(account, 'default') = ?7"));
        assert!(
            sql.contains("s.token_sha256 = ?8 AND s.expires_at > ?3"),
            "{sql}"
        );
        let only_session = ClaimRequest {
            session: Some("ab12".to_owned()),
            ..request()
        };
        let (sql, params) = claim_filters(&only_session, 6, '$', |p| p.to_owned());
        assert_eq!(params, [ClaimFilter::Session]);
        assert!(
            sql.contains("s.token_sha256 = $6 AND s.expires_at > $3"),
            "{sql}"
        );
    }

    #[test]
    fn a_list_without_filters_reads_every_item_in_id_order() {
        let everything = ListFilter::default();
        let (sql, values) = list_query(&everything, '?');
        assert_eq!(
            sql,
            format!("SELECT {COLS} FROM work_items ORDER BY id ASC")
        );
        assert!(values.is_empty());
    }

    #[test]
    fn a_list_holds_only_its_filters_numbered_as_bound() {
        let filter = ListFilter {
            state: Some(ItemState::Dead),
            kind: Some("A".to_owned()),
            dedupe_key: Some("k".to_owned()),
            after: Some(9),
            limit: Some(4),
            newest_first: true,
            ..ListFilter::default()
        };
        let (sql, values) = list_query(&filter, '$');
        assert_eq!(
            values,
            [
                ListValue::Text("dead"),
                ListValue::Text("A"),
                ListValue::Text("k"),
                ListValue::Int(9),
                ListValue::Int(4)
            ]
        );
        assert!(
            sql.ends_with(
                " FROM work_items WHERE state = $1 AND kind = $2 AND dedupe_key = $3 \
                 AND id < $4 ORDER BY id DESC LIMIT $5"
            ),
            "{sql}"
        );
        let oldest_first = ListFilter {
            lane: Some("bulk".to_owned()),
            after: Some(9),
            ..ListFilter::default()
        };
        let (sql, values) = list_query(&oldest_first, '?');
        assert_eq!(values, [ListValue::Text("bulk"), ListValue::Int(9)]);
        assert!(
            sql.ends_with(" WHERE lane = ?1 AND id > ?2 ORDER BY id ASC"),
            "{sql}"
        );
    }
}
