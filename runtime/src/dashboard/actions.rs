//! What a signed-in operator may do (POST only): retry a dead item or every dead item of a
//! kind, discard, cancel, signal, drain a worker. Each one is refused unless the request is
//! same-origin, carries a live session and that session's CSRF token; it changes at most
//! [`ACTION_CAP`] items, answers with what changed, and is recorded with the operator's name.

use axum::Form;
use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::{Deserialize, Serialize};

use super::ACTION_CAP;
use super::auth::{self, Operator};
use super::pages::{error, local_path, store_error};
use super::serve::{Shared, State};
use super::view;
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
        return store_error(s, &e);
    }
    // The record is written before the answer: an action is never shown done unrecorded.
    #[derive(Serialize)]
    struct Ctx {
        title: &'static str,
        nav: &'static str,
        operator: Option<Operator>,
        as_of: String,
        detail: String,
        back: String,
    }
    let ctx = Ctx {
        title: "Done",
        nav: "",
        as_of: view::utc(s.store.now()),
        operator: Some(operator),
        detail,
        back,
    };
    match view::render(&s.env, "done.html", ctx) {
        Ok(html) => Html(html).into_response(),
        Err(_) => error(
            s,
            StatusCode::INTERNAL_SERVER_ERROR,
            "This page could not be drawn.",
        ),
    }
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

#[derive(Debug, Deserialize)]
pub(super) struct KindForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    kind: String,
}

/// `POST /kinds/retry-dead`: every dead item of a kind, at most [`ACTION_CAP`] a call.
pub(super) async fn retry_dead(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<KindForm>,
) -> Response {
    let Ok(Form(form)) = form else {
        return error(&s, StatusCode::BAD_REQUEST, "The form could not be read.");
    };
    let operator = match guard(&s, &headers, &form.csrf).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let kind = form.kind.trim().to_owned();
    if kind.is_empty() || kind.len() > 200 {
        return error(
            &s,
            StatusCode::BAD_REQUEST,
            "Name the kind whose dead items to retry.",
        );
    }
    let dead = match s
        .store
        .list(ListFilter {
            state: Some(ItemState::Dead),
            kind: Some(kind.clone()),
            limit: Some(ACTION_CAP + 1),
            ..ListFilter::default()
        })
        .await
    {
        Ok(d) => d,
        Err(e) => return store_error(&s, &e),
    };
    let more = dead.len() > ACTION_CAP;
    let (mut retried, mut refused_ids) = (0u64, Vec::new());
    for item in dead.iter().take(ACTION_CAP) {
        match s.store.retry(item.id).await {
            Ok(()) => retried += 1,
            Err(StoreError::WrongState { .. } | StoreError::NotFound(_)) => {
                refused_ids.push(item.id)
            }
            Err(e) => return store_error(&s, &e),
        }
    }
    let mut detail = format!("{retried} dead item(s) of {kind} → available, with fresh attempts");
    if !refused_ids.is_empty() {
        detail.push_str(&format!(
            "; {} refused (moved meanwhile, or a live item holds its dedupe key): {}",
            refused_ids.len(),
            refused_ids
                .iter()
                .take(20)
                .map(ItemId::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if more {
        detail.push_str(&format!(
            "; capped at {ACTION_CAP} a call: more remain, act again"
        ));
    }
    tracing::info!(operator = %operator.name, %kind, retried, "dashboard retry of dead items");
    let mut rec = record(&operator, &s, "retry-dead", detail);
    rec.target = Some(kind);
    rec.changed = retried;
    done(&s, operator, rec, "/".to_owned()).await
}

#[derive(Debug, Deserialize)]
pub(super) struct SignalForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    signal: String,
}

/// `POST /signal`: resumes the items parked on a signal.
pub(super) async fn signal(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    form: FormOf<SignalForm>,
) -> Response {
    let Ok(Form(form)) = form else {
        return error(&s, StatusCode::BAD_REQUEST, "The form could not be read.");
    };
    let operator = match guard(&s, &headers, &form.csrf).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let signal = form.signal.trim().to_owned();
    if signal.is_empty() || signal.len() > 200 {
        return error(&s, StatusCode::BAD_REQUEST, "Name the signal to send.");
    }
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

/// `POST /workers/{id}/drain`.
pub(super) async fn drain(
    AxState(s): AxState<State>,
    headers: HeaderMap,
    path: Result<Path<String>, axum::extract::rejection::PathRejection>,
    form: FormOf<Csrf>,
) -> Response {
    let Ok(Path(worker)) = path else {
        return error(&s, StatusCode::NOT_FOUND, "There is no such worker.");
    };
    let csrf = form.map(|f| f.0.csrf).unwrap_or_default();
    let operator = match guard(&s, &headers, &csrf).await {
        Ok(o) => o,
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
