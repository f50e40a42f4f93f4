//! Typed answers to refused requests (every one a JSON `{"error": code, …}` with its HTTP
//! status; a 429 and a 413 carry `Retry-After` where waiting helps), and the errors that stop
//! a coordinator from starting.

use std::path::PathBuf;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::error::StoreError;

/// A refused request.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    /// The machine-readable reason (`stale_lease`, `unknown_field`, …): also the `reason`
    /// label of the refusals counter.
    pub code: &'static str,
    fields: Map<String, Value>,
    retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str) -> Self {
        ApiError {
            status,
            code,
            fields: Map::new(),
            retry_after: None,
        }
    }

    pub fn bad_request(code: &'static str) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code)
    }

    pub fn unauthorized(code: &'static str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code)
    }

    pub fn conflict(code: &'static str) -> Self {
        Self::new(StatusCode::CONFLICT, code)
    }

    pub fn too_large(code: &'static str, limit: u64) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, code).with("limit", limit)
    }

    pub fn too_many(code: &'static str, retry_after: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, code);
        e.retry_after = Some(retry_after.max(1));
        e
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found")
    }

    /// The version is outside the coordinator's range.
    pub fn upgrade_required(min: i64, max: i64) -> Self {
        Self::new(StatusCode::UPGRADE_REQUIRED, "upgrade_required")
            .with("supported", json!({ "min": min, "max": max }))
    }

    pub fn stale_lease() -> Self {
        Self::conflict("stale_lease")
    }

    /// A store failure: the caller may retry; its cause is logged (never a request's body).
    pub fn unavailable(e: &StoreError) -> Self {
        tracing::error!(error = %e, "the coordinator's store failed a request");
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable");
        e.retry_after = Some(1);
        e
    }

    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }

    /// The body: `{"error": code, …fields}`.
    pub fn body(&self) -> Value {
        let mut m = Map::new();
        m.insert("error".to_owned(), Value::String(self.code.to_owned()));
        for (k, v) in &self.fields {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        r.extensions_mut().insert(Refusal(self.code));
        r
    }
}

/// Marks a response as a refusal, for the metrics layer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Refusal(pub &'static str);

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::StaleLease { .. } => ApiError::stale_lease(),
            StoreError::NotFound(_) => ApiError::stale_lease(),
            StoreError::ArtifactMissing { sha256, .. } => {
                ApiError::conflict("artifact_missing").with("sha256", sha256)
            }
            other => ApiError::unavailable(&other),
        }
    }
}

/// Why a coordinator cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "plain HTTP is served only on a loopback address, and {addr} is not one: give --tls-cert, --tls-key and --public-url"
    )]
    NotLoopback { addr: std::net::SocketAddr },
    #[error("cannot read the TLS {what} {}: {message}", path.display())]
    TlsFile {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("the TLS certificate and key do not make a server configuration: {0}")]
    Tls(String),
    #[error("the certificate the health probe pins holds no usable certificate: {0}")]
    PinnedCertificate(String),
    #[error("`{url}` is not a usable public URL: {reason}")]
    PublicUrl { url: String, reason: &'static str },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the operating system's random source failed: {0}")]
    Random(String),
    #[error("the coordinator on {addr} is not healthy: {why}")]
    Unhealthy {
        addr: std::net::SocketAddr,
        why: String,
    },
}
