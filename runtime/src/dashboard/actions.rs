//! What a signed-in operator may do (POST only): retry a dead item or every dead item of a
//! kind, discard, cancel, signal, drain a worker. Each one is refused unless the request is
//! same-origin, carries a live session and that session's CSRF token; it changes at most
//! [`ACTION_CAP`] items, answers with what changed, and is recorded with the operator's name.

use axum::Form;
use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::{Deserialize, Serialize};

use super::ACTION_CAP;
use super::auth::{self, Operator};
use super::pages::{Base, error, local_path, page, store_error};
use super::serve::{Shared, State};
use crate::error::StoreError;
use crate::item::{ItemId, ItemState, ListFilter};
use crate::store::dashboard::OperatorAction;

/// A form that carries only the CSRF token.
#[derive(Debug, Deserialize)]
pub(super) struct Csrf {
    #[serde(default)]
    csrf: String,
}

type FormOf<T> = Result<Form<T>, axum::extract::rejection::FormRejection>;

/// The operator allowed to act, or the refusal.
async fn guard(s: &Shared, headers: &HeaderMap, csrf: &str) -> Result<Operator, Response> {
    if !auth::same_origin(headers, &s.origins) {
        return Err(error(
            s,
            StatusCode::FORBIDDEN,
            "Refused: this request did not come from this dashboard's own page.",
        ));
    }
    let operator = auth::operator(&s.store, headers)
        .await
        .map_err(|e| store_error(s, &e))?;
    let Some(operator) = operator else {
        return Err(error(
            s,
            StatusCode::UNAUTHORIZED,
            "Refused: sign in as an operator first (`scaffold queue operator add NAME` makes a token).",
        ));
    };
    if !auth::csrf_ok(&operator, csrf) {
        return Err(error(
            s,
            StatusCode::FORBIDDEN,
            "Refused: the form's CSRF token is missing or not this session's; reload the page and try again.",
        ));
    }
    Ok(operator)
}

/// Records the action and answers with what changed.
async fn done(s: &Shared, operator: Operator, action: OperatorAction, back: String) -> Response {
    let detail = action.detail.clone();
    let recorded = match s.store.dashboard() {
        Ok(d) => d.record_action(action).await,
        Err(e) => Err(e),
    };
    if let Err(e) = recorded {
        // The change stands (it was made before); say so, and keep it in the log at least.
        tracing::error!(operator = %operator.name, %detail, error = %e, "a dashboard action was made but could not be recorded");
        return error(
            s,
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Done, but NOT recorded (the store refused the record: {e}): {detail}"),
        );
    }
    // The record is written before the answer: an action is never shown done unrecorded.
    #[derive(Serialize)]
    struct Done {
        detail: String,
        back: String,
    }
    page(
        s,
        "done.html",
        Base::new(s, "Done", "", Some(operator)),
        Done { detail, back },
    )
}

fn record(operator: &Operator, s: &Shared, action: &str, detail: String) -> OperatorAction {
    OperatorAction {
        at: s.store.now(),
        operator: operator.name.clone(),
        action: action.to_owned(),
        item_id: None,
        target: None,
        changed: 1,
        detail,
    }
}

/// A refused store call, said plainly (409 for a state the action does not apply to).
fn refused(s: &Shared, e: &StoreError) -> Response {
    match e {
        StoreError::WrongState { .. } | StoreError::NotFound(_) => {
            error(s, StatusCode::CONFLICT, &format!("Nothing changed: {e}."))
        }
        _ => store_error(s, e),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

/// `POST /login`: an operator token in, a session cookie out.
pub(super) async fn login(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<LoginForm>,
) -> Response {
    if !auth::same_origin(&headers, &s.origins) {
        return error(
            &s,
            StatusCode::FORBIDDEN,
            "Refused: this request did not come from this dashboard's own page.",
        );
    }
    let Ok(Form(form)) = form else {
        return error(&s, StatusCode::BAD_REQUEST, "The form could not be read.");
    };
    let next = local_path(&form.next);
    match auth::sign_in(&s.store, &form.token, s.config.session_ttl).await {
        Ok(Some((session, name))) => {
            tracing::info!(operator = %name, "an operator signed in to the dashboard");
            let mut r = Redirect::to(&next).into_response();
            if let Ok(v) = HeaderValue::from_str(&auth::set_cookie(
                Some(&session),
                s.config.session_ttl,
                s.secure,
            )) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Ok(None) => {
            tracing::warn!("a dashboard sign-in with an unknown token was refused");
            let mut target = String::from("/login?failed=true&next=");
            target.extend(form_urlencoded::byte_serialize(next.as_bytes()));
            Redirect::to(&target).into_response()
        }
        Err(e) => store_error(&s, &e),
    }
}

/// `POST /logout`.
pub(super) async fn logout(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<Csrf>,
) -> Response {
    let csrf = form.map(|f| f.0.csrf).unwrap_or_default();
    if let Err(r) = guard(&s, &headers, &csrf).await {
        return r;
    }
    if let Err(e) = auth::sign_out(&s.store, &headers).await {
        return store_error(&s, &e);
    }
    let mut r = Redirect::to("/").into_response();
    if let Ok(v) = HeaderValue::from_str(&auth::set_cookie(None, s.config.session_ttl, s.secure)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// `POST /items/{id}/{retry|discard|cancel}`.
pub(super) async fn item(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    path: Result<Path<(ItemId, String)>, axum::extract::rejection::PathRejection>,
    form: FormOf<Csrf>,
) -> Response {
    let Ok(Path((id, action))) = path else {
        return error(&s, StatusCode::NOT_FOUND, "There is no such action.");
    };
    if !matches!(action.as_str(), "retry" | "discard" | "cancel") {
        return error(&s, StatusCode::NOT_FOUND, "There is no such action.");
    }
    let csrf = form.map(|f| f.0.csrf).unwrap_or_default();
    let operator = match guard(&s, &headers, &csrf).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let before = match s.store.get(id).await {
        Ok(Some(r)) => r,
        Ok(None) => return refused(&s, &StoreError::NotFound(id)),
        Err(e) => return store_error(&s, &e),
    };
    if action == "retry"
        && before.state == ItemState::Dead
        && let Some(key) = &before.dedupe_key
    {
        let holders = match s
            .store
            .list(ListFilter {
                kind: Some(before.kind.clone()),
                dedupe_key: Some(key.clone()),
                ..ListFilter::default()
            })
            .await
        {
            Ok(h) => h,
            Err(e) => return store_error(&s, &e),
        };
        if let Some(live) = holders.iter().find(|h| h.state.is_live()) {
            return error(
                &s,
                StatusCode::CONFLICT,
                &format!(
                    "Nothing changed: item {} ({}) holds the dedupe key `{key}` while it is {}; retry this one once it has finished.",
                    live.id, live.kind, live.state
                ),
            );
        }
    }
    let (result, detail) = match action.as_str() {
        "retry" => (
            s.store.retry(id).await,
            format!(
                "item {id} ({}): {} → available, with fresh attempts",
                before.kind, before.state
            ),
        ),
        "discard" => (
            s.store.discard(id).await,
            format!(
                "item {id} ({}): {} → deleted, with its effects",
                before.kind, before.state
            ),
        ),
        _ => (
            s.store.cancel(id).await,
            format!(
                "item {id} ({}): {} → dead (cancelled){}",
                before.kind,
                before.state,
                if before.state == ItemState::Running {
                    format!(
                        "; its holder {}'s writes under fence {} are refused from now on",
                        before.lease_owner.as_deref().unwrap_or("?"),
                        before.fence
                    )
                } else {
                    String::new()
                }
            ),
        ),
    };
    if let Err(e) = result {
        return refused(&s, &e);
    }
    tracing::info!(operator = %operator.name, %action, item = id, "dashboard action");
    let mut rec = record(&operator, &s, &action, detail);
    rec.item_id = Some(id);
    let back = if action == "discard" {
        "/items".to_owned()
    } else {
        format!("/items/{id}")
    };
    done(&s, operator, rec, back).await
}

/// A form that names one thing (a kind, a signal) beside the CSRF token.
#[derive(Debug, Deserialize)]
pub(super) struct Named {
    #[serde(default)]
    csrf: String,
    #[serde(default, alias = "kind", alias = "signal", alias = "worker")]
    name: String,
}

/// The operator allowed to act and the name the form carries (trimmed, 1 to 200 bytes),
/// or the refusal.
async fn named(
    s: &Shared,
    headers: &HeaderMap,
    form: FormOf<Named>,
    missing: &str,
) -> Result<(Operator, String), Response> {
    let Ok(Form(form)) = form else {
        return Err(error(
            s,
            StatusCode::BAD_REQUEST,
            "The form could not be read.",
        ));
    };
    let operator = guard(s, headers, &form.csrf).await?;
    let name = form.name.trim().to_owned();
    if name.is_empty() || name.len() > 200 {
        return Err(error(s, StatusCode::BAD_REQUEST, missing));
    }
    Ok((operator, name))
}

/// `POST /kinds/retry-dead`: every dead item of a kind, at most [`ACTION_CAP`] a call.
pub(super) async fn retry_dead(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<Named>,
) -> Response {
    let (operator, kind) = match named(
        &s,
        &headers,
        form,
        "Name the kind whose dead items to retry.",
    )
    .await
    {
        Ok(named) => named,
        Err(r) => return r,
    };
    let retried = match s
        .store
        .retry_dead_at_most(Some(&kind), ACTION_CAP as u64)
        .await
    {
        Ok(n) => n,
        Err(e) => return store_error(&s, &e),
    };
    // What is left dead of the kind, from the counters: the cap, or a live item holding
    // a dead one's dedupe key (those stay dead, as `scaffold queue retry --kind` leaves them).
    let left: u64 = match s.store.kind_counts().await {
        Ok(counts) => counts
            .iter()
            .filter(|(k, state, _)| *k == kind && *state == ItemState::Dead)
            .map(|(_, _, n)| n)
            .sum(),
        Err(e) => return store_error(&s, &e),
    };
    let mut detail = format!("{retried} dead item(s) of {kind} → available, with fresh attempts");
    if left > 0 {
        detail.push_str(&format!(
            "; {left} still dead (at most {ACTION_CAP} are taken a call, and one whose dedupe key a live item holds stays dead)"
        ));
    }
    tracing::info!(operator = %operator.name, %kind, retried, "dashboard retry of dead items");
    let mut rec = record(&operator, &s, "retry-dead", detail);
    rec.target = Some(kind);
    rec.changed = retried;
    done(&s, operator, rec, "/".to_owned()).await
}

/// `POST /signal`: resumes the items parked on a signal.
pub(super) async fn signal(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<Named>,
) -> Response {
    let (operator, signal) = match named(&s, &headers, form, "Name the signal to send.").await {
        Ok(named) => named,
        Err(r) => return r,
    };
    let cap = ACTION_CAP as u64;
    let n = match s.store.signal_at_most(&signal, cap).await {
        Ok(n) => n,
        Err(e) => return refused(&s, &e),
    };
    let mut detail = format!("signal {signal}: {n} parked item(s) → available");
    if n == cap {
        detail.push_str(&format!(
            "; capped at {ACTION_CAP} a call: more may wait on it, send it again"
        ));
    }
    let mut rec = record(&operator, &s, "signal", detail);
    rec.target = Some(signal);
    rec.changed = n;
    done(&s, operator, rec, "/".to_owned()).await
}

/// `POST /workers/drain` (the worker's id in the form: an id is any text, a path segment
/// is not).
pub(super) async fn drain(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<Named>,
) -> Response {
    let (operator, worker) = match named(&s, &headers, form, "Name the worker to drain.").await {
        Ok(named) => named,
        Err(r) => return r,
    };
    match s.store.drain_worker(&worker).await {
        Ok(true) => {}
        Ok(false) => {
            return error(
                &s,
                StatusCode::CONFLICT,
                &format!("Nothing changed: no online worker `{worker}`."),
            );
        }
        Err(e) => return store_error(&s, &e),
    }
    let mut rec = record(
        &operator,
        &s,
        "drain",
        format!(
            "worker {worker} → draining: it stops claiming, finishes or releases what it holds, and exits"
        ),
    );
    rec.target = Some(worker);
    done(&s, operator, rec, "/workers".to_owned()).await
}
