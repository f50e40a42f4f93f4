//! The pages (GET only: reading never changes the queue). Each reads the store through
//! the same calls as the CLI (`status`, `list`, `get`, `attempts`, …) and renders one
//! template.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State as AxState};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::{Deserialize, Serialize};

use super::auth::{self, Operator};
use super::live::MINUTES;
use super::serve::{Shared, State};
use super::view::{self, Shown, When, shown, span, when};
use super::why::why;
use crate::error::StoreError;
use crate::item::{ItemId, ItemState, ListFilter};
use crate::store::dashboard::{Activity, OperatorAction};
use crate::store::status::LaneStatus;
use crate::time::Timestamp;

/// Items on one page of the list.
const PAGE: usize = 50;
/// The longest lane, kind or search text taken from a query.
const FIELD_MAX: usize = 200;

/// What every page has.
#[derive(Serialize)]
pub(super) struct Base<'a> {
    title: &'a str,
    nav: &'a str,
    operator: Option<Operator>,
    as_of: String,
}

impl<'a> Base<'a> {
    pub(super) fn new(
        s: &Shared,
        title: &'a str,
        nav: &'a str,
        operator: Option<Operator>,
    ) -> Self {
        Base {
            title,
            nav,
            operator,
            as_of: view::utc(s.store.now()),
        }
    }
}

/// `template` rendered with the base fields and `page`'s.
fn render(
    s: &Shared,
    template: &str,
    base: Base<'_>,
    page: impl Serialize,
) -> Result<String, super::DashboardError> {
    #[derive(Serialize)]
    struct Ctx<'a, P> {
        #[serde(flatten)]
        base: Base<'a>,
        #[serde(flatten)]
        page: P,
    }
    view::render(&s.env, template, Ctx { base, page })
}

/// Renders `template` with the base fields and `page`'s, or an error page.
pub(super) fn page(s: &Shared, template: &str, base: Base<'_>, page: impl Serialize) -> Response {
    match render(s, template, base, page) {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a dashboard page did not render");
            error(
                s,
                StatusCode::INTERNAL_SERVER_ERROR,
                "This page could not be drawn.",
            )
        }
    }
}

/// An error page (never the store's credentials: its errors redact them).
pub(super) fn error(s: &Shared, status: StatusCode, message: &str) -> Response {
    #[derive(Serialize)]
    struct Page<'a> {
        message: &'a str,
        status: u16,
    }
    let page = Page {
        message,
        status: status.as_u16(),
    };
    match render(s, "error.html", Base::new(s, "Error", "", None), page) {
        Ok(html) => (status, Html(html)).into_response(),
        Err(_) => (status, message.to_owned()).into_response(),
    }
}

/// The store did not answer.
pub(super) fn store_error(s: &Shared, e: &StoreError) -> Response {
    tracing::warn!(error = %e, "the dashboard's store call failed");
    error(
        s,
        StatusCode::SERVICE_UNAVAILABLE,
        &format!("The queue's store did not answer: {e}"),
    )
}

async fn base<'a>(
    s: &Shared,
    headers: &HeaderMap,
    title: &'a str,
    nav: &'a str,
) -> Result<Base<'a>, Response> {
    let operator = auth::operator(&s.store, headers)
        .await
        .map_err(|e| store_error(s, &e))?;
    Ok(Base::new(s, title, nav, operator))
}

macro_rules! tri {
    ($s:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return store_error($s, &e),
        }
    };
}

macro_rules! base_or_return {
    ($s:expr, $headers:expr, $title:expr, $nav:expr) => {
        match base($s, $headers, $title, $nav).await {
            Ok(b) => b,
            Err(r) => return r,
        }
    };
}

/// One bar of a lane's chart (SVG coordinates, 40 high).
#[derive(Serialize)]
struct Bar {
    x: usize,
    ok_y: u64,
    ok_h: u64,
    fail_y: u64,
    fail_h: u64,
    title: String,
}

#[derive(Serialize)]
struct LaneRow {
    #[serde(flatten)]
    counts: LaneStatus,
    oldest: String,
    bars: Vec<Bar>,
    hour_completed: u64,
    hour_failed: u64,
}

#[derive(Serialize)]
struct KindRow {
    kind: String,
    counts: BTreeMap<&'static str, u64>,
}

const CHART_H: u64 = 40;

fn bars(minutes: &[Activity], now: Timestamp) -> Vec<Bar> {
    let max = minutes
        .iter()
        .map(|a| a.completed + a.failed)
        .max()
        .unwrap_or(0)
        .max(1);
    minutes
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let scale = |n: u64| (n * CHART_H).div_ceil(max).min(CHART_H);
            let (ok_h, fail_h) = (scale(a.completed), scale(a.failed));
            let ago = (MINUTES - 1 - i) as u64;
            Bar {
                x: i * 4,
                ok_y: CHART_H - ok_h,
                ok_h,
                fail_y: CHART_H - ok_h - fail_h.min(CHART_H - ok_h),
                fail_h: fail_h.min(CHART_H - ok_h),
                title: format!(
                    "{} completed, {} failed, {}",
                    a.completed,
                    a.failed,
                    if ago == 0 {
                        "this minute".to_owned()
                    } else {
                        format!("{ago} min before {}", view::utc(now))
                    }
                ),
            }
        })
        .collect()
}

/// `/`: every lane's counts, oldest due item's age and last hour; counts per kind.
pub(super) async fn lanes(AxState(s): AxState<State>, headers: HeaderMap) -> Response {
    let base = base_or_return!(&s, &headers, "Lanes", "lanes");
    let (status, kinds) = tri!(&s, s.store.status_and_kinds().await);
    let now = s.store.now();
    let (mut hour, filled) = s.live.hour(now);
    let lanes: Vec<LaneRow> = status
        .lanes
        .into_iter()
        .map(|counts| {
            let minutes = hour
                .remove(&counts.lane)
                .unwrap_or_else(|| vec![Activity::default(); MINUTES]);
            LaneRow {
                oldest: if counts.available > 0 {
                    span(counts.oldest_available_age_ms)
                } else {
                    "—".to_owned()
                },
                hour_completed: minutes.iter().map(|a| a.completed).sum(),
                hour_failed: minutes.iter().map(|a| a.failed).sum(),
                bars: bars(&minutes, now),
                counts,
            }
        })
        .collect();
    let mut by_kind: BTreeMap<String, BTreeMap<&'static str, u64>> = BTreeMap::new();
    for (kind, state, n) in kinds {
        let row = by_kind
            .entry(kind)
            .or_insert_with(|| ItemState::ALL.iter().map(|s| (s.as_str(), 0)).collect());
        *row.entry(state.as_str()).or_default() += n;
    }
    #[derive(Serialize)]
    struct Page {
        lanes: Vec<LaneRow>,
        kinds: Vec<KindRow>,
        states: Vec<&'static str>,
        outbox: crate::item::OutboxStats,
        outbox_oldest: String,
        history_filled: bool,
    }
    let outbox_oldest = span(status.outbox.oldest_pending_age_ms);
    page(
        &s,
        "lanes.html",
        base,
        Page {
            lanes,
            kinds: by_kind
                .into_iter()
                .map(|(kind, counts)| KindRow { kind, counts })
                .collect(),
            states: ItemState::ALL.iter().map(|s| s.as_str()).collect(),
            outbox: status.outbox,
            outbox_oldest,
            history_filled: filled,
        },
    )
}

/// The items list's query.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct ItemsQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    lane: String,
    #[serde(default)]
    kind: String,
    /// An id (`42` or `#42`) or a dedupe key.
    #[serde(default)]
    q: String,
    /// The keyset cursor: items older than this id.
    after: Option<ItemId>,
}

#[derive(Serialize)]
struct ItemRow {
    id: ItemId,
    kind: String,
    lane: String,
    state: &'static str,
    attempt: i32,
    max_attempts: i32,
    dedupe_key: Option<String>,
    run_at: When,
    updated_at: When,
}

/// `/items`: newest first, by state, lane and kind; an id jumps to its item, anything else
/// is looked up as a dedupe key.
pub(super) async fn items(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    query: Result<Query<ItemsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(mut q)) = query else {
        return error(&s, StatusCode::BAD_REQUEST, "The filter could not be read.");
    };
    for field in [&mut q.lane, &mut q.kind, &mut q.q] {
        *field = field.trim().to_owned();
        if field.len() > FIELD_MAX {
            return error(
                &s,
                StatusCode::BAD_REQUEST,
                &format!("A filter is at most {FIELD_MAX} bytes."),
            );
        }
    }
    let state = match q.state.as_str() {
        "" => None,
        st => match st.parse::<ItemState>() {
            Ok(st) => Some(st),
            Err(e) => return error(&s, StatusCode::BAD_REQUEST, &e.to_string()),
        },
    };
    let mut missing_id = None;
    let mut dedupe_key = None;
    if !q.q.is_empty() {
        match q.q.trim_start_matches('#').parse::<ItemId>() {
            Ok(id) => {
                if tri!(&s, s.store.get(id).await).is_some() {
                    return Redirect::to(&format!("/items/{id}")).into_response();
                }
                missing_id = Some(id);
            }
            Err(_) => dedupe_key = Some(q.q.clone()),
        }
    }
    let base = base_or_return!(&s, &headers, "Items", "items");
    let rows = if missing_id.is_some() {
        Vec::new()
    } else {
        tri!(
            &s,
            s.store
                .list(ListFilter {
                    state,
                    lane: (!q.lane.is_empty()).then(|| q.lane.clone()),
                    kind: (!q.kind.is_empty()).then(|| q.kind.clone()),
                    dedupe_key,
                    limit: Some(PAGE + 1),
                    newest_first: true,
                    after: q.after,
                })
                .await
        )
    };
    let now = s.store.now();
    let more = rows.len() > PAGE;
    let items: Vec<ItemRow> = rows
        .into_iter()
        .take(PAGE)
        .map(|r| ItemRow {
            id: r.id,
            kind: r.kind,
            lane: r.lane,
            state: r.state.as_str(),
            attempt: r.attempt,
            max_attempts: r.max_attempts,
            dedupe_key: r.dedupe_key,
            run_at: when(r.run_at, now),
            updated_at: when(r.updated_at, now),
        })
        .collect();
    #[derive(Serialize)]
    struct Page {
        items: Vec<ItemRow>,
        next: Option<ItemId>,
        filter: ItemsQuery,
        states: Vec<&'static str>,
        missing_id: Option<ItemId>,
    }
    page(
        &s,
        "items.html",
        base,
        Page {
            next: if more {
                items.last().map(|i| i.id)
            } else {
                None
            },
            items,
            filter: q,
            states: ItemState::ALL.iter().map(|s| s.as_str()).collect(),
            missing_id,
        },
    )
}

#[derive(Serialize)]
struct AttemptRow {
    attempt: i32,
    fence: i64,
    holder: Option<String>,
    claimed_at: Option<When>,
    finished_at: Option<When>,
    outcome: String,
    error: Option<String>,
}

#[derive(Serialize)]
struct EffectRow {
    key: String,
    fence: i64,
    recorded_at: When,
    output: Shown,
}

#[derive(Serialize)]
struct ArtifactRow {
    role: &'static str,
    fence: i64,
    name: String,
    sha256: String,
    size: u64,
}

#[derive(Serialize)]
struct ActionRow {
    at: When,
    operator: String,
    action: String,
    changed: u64,
    detail: String,
}

fn action_row(a: OperatorAction, now: Timestamp) -> ActionRow {
    ActionRow {
        at: when(a.at, now),
        operator: a.operator,
        action: a.action,
        changed: a.changed,
        detail: a.detail,
    }
}

/// `/items/{id}`: everything about one item, and why it is not running.
pub(super) async fn item(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    id: Result<Path<ItemId>, axum::extract::rejection::PathRejection>,
) -> Response {
    let Ok(Path(id)) = id else {
        return error(&s, StatusCode::NOT_FOUND, "An item's id is a number.");
    };
    let Some(r) = tri!(&s, s.store.get(id).await) else {
        return error(
            &s,
            StatusCode::NOT_FOUND,
            &format!(
                "There is no item {id} (a completed item is deleted after the retention, a discarded one at once)."
            ),
        );
    };
    let base = base_or_return!(&s, &headers, "Item", "items");
    let attempts = tri!(&s, s.store.attempts(id).await);
    let effects = tri!(&s, s.store.effects(id).await);
    let workers = tri!(&s, s.store.workers().await);
    let artifacts = match s.store.coordinator() {
        Ok(c) => tri!(&s, c.item_artifacts(id).await),
        Err(_) => Vec::new(),
    };
    let actions = tri!(&s, tri!(&s, s.store.dashboard()).item_actions(id).await);
    let now = s.store.now();
    let whole = s.config.show_payloads;
    let mut attempt_rows: Vec<AttemptRow> = attempts
        .into_iter()
        .map(|a| AttemptRow {
            attempt: a.attempt,
            fence: a.fence,
            holder: a.holder,
            claimed_at: a.claimed_at.map(|t| when(t, now)),
            finished_at: Some(when(a.finished_at, now)),
            outcome: a.outcome,
            error: a.error,
        })
        .collect();
    // The attempt under way, or the one that completed (its row is the item itself).
    if matches!(r.state, ItemState::Running | ItemState::Completed) {
        attempt_rows.push(AttemptRow {
            attempt: r.attempt,
            fence: r.fence,
            holder: r.lease_owner.clone(),
            claimed_at: r.claimed_at.map(|t| when(t, now)),
            finished_at: (r.state == ItemState::Completed).then(|| when(r.updated_at, now)),
            outcome: if r.state == ItemState::Running {
                "running".to_owned()
            } else {
                "completed".to_owned()
            },
            error: None,
        });
    }
    #[derive(Serialize)]
    struct Lease {
        holder: String,
        fence: i64,
        expires: When,
        live: bool,
    }
    #[derive(Serialize)]
    struct Page {
        id: ItemId,
        kind: String,
        lane: String,
        state: &'static str,
        account: String,
        priority: i32,
        attempt: i32,
        max_attempts: i32,
        fence: i64,
        dedupe_key: Option<String>,
        parked_on: Option<String>,
        last_error: Option<String>,
        run_at: When,
        created_at: When,
        updated_at: When,
        why: String,
        lease: Option<Lease>,
        payload: Shown,
        checkpoint: Option<Shown>,
        attempts: Vec<AttemptRow>,
        effects: Vec<EffectRow>,
        artifacts: Vec<ArtifactRow>,
        actions: Vec<ActionRow>,
        can_retry: bool,
        can_cancel: bool,
    }
    let lease = match (&r.lease_owner, r.lease_expires_at, r.state) {
        (Some(holder), Some(end), ItemState::Running) => Some(Lease {
            holder: holder.clone(),
            fence: r.fence,
            expires: when(end, now),
            live: end > now,
        }),
        _ => None,
    };
    page(
        &s,
        "item.html",
        base,
        Page {
            why: why(&r, &workers, now),
            lease,
            payload: shown(&r.payload, whole),
            checkpoint: r.checkpoint.as_ref().map(|c| shown(c, whole)),
            attempts: attempt_rows,
            effects: effects
                .into_iter()
                .map(|e| EffectRow {
                    key: e.key,
                    fence: e.fence,
                    recorded_at: when(e.recorded_at, now),
                    output: shown(&e.output, whole),
                })
                .collect(),
            artifacts: artifacts
                .into_iter()
                .map(|a| ArtifactRow {
                    role: a.role.as_str(),
                    fence: a.fence,
                    name: a.artifact.name,
                    sha256: a.artifact.sha256,
                    size: a.artifact.size,
                })
                .collect(),
            actions: actions.into_iter().map(|a| action_row(a, now)).collect(),
            can_retry: r.state == ItemState::Dead,
            can_cancel: r.state.is_live(),
            id: r.id,
            kind: r.kind,
            lane: r.lane,
            state: r.state.as_str(),
            account: r.account,
            priority: r.priority,
            attempt: r.attempt,
            max_attempts: r.max_attempts,
            fence: r.fence,
            dedupe_key: r.dedupe_key,
            parked_on: r.parked_on,
            last_error: r.last_error,
            run_at: when(r.run_at, now),
            created_at: when(r.created_at, now),
            updated_at: when(r.updated_at, now),
        },
    )
}

/// `/workers`: every worker (local and remote alike) with what it holds; the enrolled
/// remote devices.
pub(super) async fn workers(AxState(s): AxState<State>, headers: HeaderMap) -> Response {
    let base = base_or_return!(&s, &headers, "Workers", "workers");
    let workers = tri!(&s, s.store.worker_status().await);
    let remote = match s.store.coordinator() {
        Ok(c) => tri!(&s, c.remote_workers().await),
        Err(_) => Vec::new(),
    };
    let now = s.store.now();
    #[derive(Serialize)]
    struct WorkerRow {
        id: String,
        state: &'static str,
        lanes: Vec<String>,
        started_at: When,
        last_seen_at: When,
        lease: String,
        held: Vec<ItemId>,
        can_drain: bool,
    }
    #[derive(Serialize)]
    struct DeviceRow {
        id: String,
        name: String,
        account: String,
        kinds: Option<Vec<String>>,
        protocol: i64,
        enrolled_at: When,
        revoked_at: Option<When>,
    }
    #[derive(Serialize)]
    struct Page {
        workers: Vec<WorkerRow>,
        devices: Vec<DeviceRow>,
    }
    page(
        &s,
        "workers.html",
        base,
        Page {
            workers: workers
                .into_iter()
                .map(|w| WorkerRow {
                    can_drain: matches!(
                        w.worker.state,
                        crate::item::WorkerState::Online | crate::item::WorkerState::Registered
                    ),
                    id: w.worker.id,
                    state: w.worker.state.as_str(),
                    lanes: w.worker.lanes,
                    started_at: when(w.worker.started_at, now),
                    last_seen_at: when(w.worker.last_seen_at, now),
                    lease: span(u64::try_from(w.worker.lease_ms).unwrap_or(0)),
                    held: w.held,
                })
                .collect(),
            devices: remote
                .into_iter()
                .map(|d| DeviceRow {
                    id: d.id,
                    name: d.name,
                    account: d.account,
                    kinds: d.kinds,
                    protocol: d.protocol,
                    enrolled_at: when(d.enrolled_at, now),
                    revoked_at: d.revoked_at.map(|t| when(t, now)),
                })
                .collect(),
        },
    )
}

/// `/outbox`: the relay's backlog, and the latest operators' actions.
pub(super) async fn outbox(AxState(s): AxState<State>, headers: HeaderMap) -> Response {
    let base = base_or_return!(&s, &headers, "Outbox", "outbox");
    let stats = tri!(&s, s.store.outbox_stats().await);
    let actions = tri!(&s, tri!(&s, s.store.dashboard()).recent_actions(50).await);
    let now = s.store.now();
    #[derive(Serialize)]
    struct Page {
        outbox: crate::item::OutboxStats,
        oldest: String,
        actions: Vec<ActionRow>,
    }
    page(
        &s,
        "outbox.html",
        base,
        Page {
            oldest: span(stats.oldest_pending_age_ms),
            outbox: stats,
            actions: actions.into_iter().map(|a| action_row(a, now)).collect(),
        },
    )
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct LoginQuery {
    #[serde(default)]
    next: String,
    #[serde(default)]
    failed: bool,
}

/// A path on this dashboard to go back to after signing in (never another site's).
pub(super) fn local_path(next: &str) -> String {
    let ok = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && next.len() <= 512
        && next.bytes().all(|b| b.is_ascii_graphic());
    if ok { next.to_owned() } else { "/".to_owned() }
}

/// `/login`: the sign-in form.
pub(super) async fn login(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    query: Result<Query<LoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = query.map(|q| q.0).unwrap_or_default();
    let base = base_or_return!(&s, &headers, "Sign in", "login");
    #[derive(Serialize)]
    struct Page {
        next: String,
        failed: bool,
    }
    let mut r = page(
        &s,
        "login.html",
        base,
        Page {
            next: local_path(&q.next),
            failed: q.failed,
        },
    );
    if q.failed {
        *r.status_mut() = StatusCode::UNAUTHORIZED;
    }
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_returned_to() {
        assert_eq!(local_path("/items/4"), "/items/4");
        assert_eq!(local_path("//evil.example/x"), "/");
        assert_eq!(local_path("https://evil.example"), "/");
        assert_eq!(local_path("/\\evil.example"), "/");
        assert_eq!(local_path(""), "/");
    }

    #[test]
    fn bars_scale_to_the_busiest_minute() {
        let mut minutes = vec![Activity::default(); MINUTES];
        minutes[59] = Activity {
            completed: 10,
            failed: 10,
        };
        minutes[0] = Activity {
            completed: 5,
            failed: 0,
        };
        let b = bars(&minutes, Timestamp::from_millis(0));
        assert_eq!(b.len(), MINUTES);
        assert_eq!((b[59].ok_h, b[59].fail_h), (20, 20));
        assert_eq!(b[59].fail_y, 0);
        assert_eq!(b[0].ok_h, 10);
        assert_eq!(b[1].ok_h + b[1].fail_h, 0);
    }
}
