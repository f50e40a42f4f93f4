//! Operators: named tokens (`scf_op_…`, stored as their SHA-256), signed-in sessions in an
//! HttpOnly, SameSite=Strict cookie (Secure under TLS), and the CSRF token each action
//! carries — derived from the session's secret, so nothing more is stored and it dies with
//! the session. Every state-changing request must also be same-origin where the browser
//! says (`Origin`, `Sec-Fetch-Site`).

use axum::http::{HeaderMap, header};

use crate::coordinator::tokens::{new_token, sha256_hex};
use crate::error::StoreError;
use crate::store::Store;

/// An operator token's prefix (secret scanners know it by this).
pub const OPERATOR_PREFIX: &str = "scf_op_";
/// A dashboard session's prefix.
const SESSION_PREFIX: &str = "scf_dash_";
/// The session cookie's name.
pub(super) const COOKIE: &str = "scaffold_dashboard";
/// The longest token read from a form or a cookie.
const TOKEN_MAX: usize = 128;

/// Adds operator `name` (1 to 64 of `A-Z a-z 0-9 . _ -`) and returns its token, shown once;
/// `Ok(None)` when the name is taken.
pub async fn add_operator(store: &Store, name: &str) -> Result<Option<String>, StoreError> {
    let token = new_token(OPERATOR_PREFIX).map_err(|e| StoreError::Task(e.to_string()))?;
    let added = store
        .dashboard()?
        .add_operator(name.to_owned(), sha256_hex(token.as_bytes()), store.now())
        .await?;
    Ok(added.then_some(token))
}

/// A signed-in operator, as a page knows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Operator {
    pub name: String,
    /// The token every action of this session carries.
    pub csrf: String,
}

/// The CSRF token of the session whose secret is `session`.
fn csrf_of(session: &str) -> String {
    sha256_hex(format!("scaffold-dashboard-csrf-v1\0{session}").as_bytes())
}

/// The session cookie's value, if the request carries one of the right form.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| v.starts_with(SESSION_PREFIX) && v.len() <= TOKEN_MAX)
}

/// The signed-in operator of this request, if any.
pub(super) async fn operator(
    store: &Store,
    headers: &HeaderMap,
) -> Result<Option<Operator>, StoreError> {
    let Some(session) = session_cookie(headers) else {
        return Ok(None);
    };
    let name = store
        .dashboard()?
        .operator_session(sha256_hex(session.as_bytes()), store.now())
        .await?;
    Ok(name.map(|name| Operator {
        name,
        csrf: csrf_of(&session),
    }))
}

/// Signs in with an operator token: the new session's secret and the operator's name, or
/// `None` for a token that names no operator.
pub(super) async fn sign_in(
    store: &Store,
    token: &str,
    ttl: std::time::Duration,
) -> Result<Option<(String, String)>, StoreError> {
    let token = token.trim();
    if !token.starts_with(OPERATOR_PREFIX) || token.len() > TOKEN_MAX {
        return Ok(None);
    }
    let session = new_token(SESSION_PREFIX).map_err(|e| StoreError::Task(e.to_string()))?;
    let now = store.now();
    let name = store
        .dashboard()?
        .open_operator_session(
            sha256_hex(token.as_bytes()),
            sha256_hex(session.as_bytes()),
            now,
            now.plus(ttl),
        )
        .await?;
    Ok(name.map(|name| (session, name)))
}

/// Signs the request's session out.
pub(super) async fn sign_out(store: &Store, headers: &HeaderMap) -> Result<(), StoreError> {
    if let Some(session) = session_cookie(headers) {
        store
            .dashboard()?
            .close_operator_session(sha256_hex(session.as_bytes()))
            .await?;
    }
    Ok(())
}

/// The `Set-Cookie` value of a new session (or, with `None`, of its removal).
pub(super) fn set_cookie(session: Option<&str>, ttl: std::time::Duration, secure: bool) -> String {
    let mut c = cookie::Cookie::build((COOKIE, session.unwrap_or("").to_owned()))
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .path("/")
        .secure(secure);
    c = match session {
        Some(_) => c.max_age(cookie::time::Duration::seconds(
            i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
        )),
        None => c.max_age(cookie::time::Duration::ZERO),
    };
    c.build().to_string()
}

/// Whether `given` is the session's CSRF token (compared in constant time).
pub(super) fn csrf_ok(operator: &Operator, given: &str) -> bool {
    let (a, b) = (operator.csrf.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a state-changing request comes from this dashboard's own pages, as far as the
/// browser says: `Sec-Fetch-Site` (when sent) is `same-origin`, and `Origin` (when sent) is
/// one of `origins`.
pub(super) fn same_origin(headers: &HeaderMap, origins: &[String]) -> bool {
    let site_ok = headers
        .get("sec-fetch-site")
        .is_none_or(|v| v.as_bytes() == b"same-origin");
    let origin_ok = headers.get(header::ORIGIN).is_none_or(|v| {
        v.to_str()
            .is_ok_and(|o| origins.iter().any(|allowed| allowed == o))
    });
    site_ok && origin_ok
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn cookies_and_origins() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; scaffold_dashboard=scf_dash_abc; b=2"),
        );
        assert_eq!(session_cookie(&h).as_deref(), Some("scf_dash_abc"));
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("scaffold_dashboard=other"),
        );
        assert_eq!(session_cookie(&h), None);

        let origins = vec!["http://127.0.0.1:7701".to_owned()];
        let mut h = HeaderMap::new();
        assert!(same_origin(&h, &origins));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h, &origins));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:7701"),
        );
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin(&h, &origins));

        let op = Operator {
            name: "ana".into(),
            csrf: csrf_of("scf_dash_x"),
        };
        assert!(csrf_ok(&op, &csrf_of("scf_dash_x")));
        assert!(!csrf_ok(&op, &csrf_of("scf_dash_y")));
        assert!(!csrf_ok(&op, ""));
        let set = set_cookie(Some("scf_dash_x"), std::time::Duration::from_secs(60), true);
        for part in [
            "HttpOnly",
            "SameSite=Strict",
            "Secure",
            "Path=/",
            "Max-Age=60",
        ] {
            assert!(set.contains(part), "{set}");
        }
    }
}
