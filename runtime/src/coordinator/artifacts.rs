//! Artifacts (README.md#remote-workers-scaffold-queue-serve): content-addressed by SHA-256, per account, stored in the queue's
//! database. An upload is hashed while it streams in, refused past the cap (413) and when
//! its bytes do not hash to its name (422); an account reads what it uploaded and the
//! inputs of its jobs (both stored under it).

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use super::Shared;
use super::auth::Authed;
use super::error::ApiError;
use super::tokens::{hex, is_sha256_hex};

impl Shared {
    /// `PUT /v1/artifacts/{sha256}`.
    pub(crate) async fn put_artifact(
        &self,
        a: &Authed,
        sha256: &str,
        body: Body,
    ) -> Result<Response, ApiError> {
        if !is_sha256_hex(sha256) {
            return Err(ApiError::bad_request("bad_digest"));
        }
        let limit = self.config.limits.artifact;
        // Bytes held in memory are bounded by the cap times the uploads let in at once.
        let _slot = self
            .limits
            .uploads
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::too_many("uploads_busy", 1))?;
        let mut hasher = Sha256::new();
        let mut bytes: Vec<u8> = Vec::new();
        let mut stream = body.into_data_stream();
        while let Some(chunk) = stream.next().await {
            let chunk: Bytes = chunk.map_err(|_| ApiError::bad_request("body_unreadable"))?;
            if bytes.len() + chunk.len() > limit {
                return Err(ApiError::too_large("artifact_too_large", limit as u64));
            }
            hasher.update(&chunk);
            bytes.extend_from_slice(&chunk);
        }
        let got = hex(&hasher.finalize());
        if got != sha256 {
            return Err(
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "digest_mismatch")
                    .with("sha256", got),
            );
        }
        let size = bytes.len() as u64;
        self.store
            .coordinator()?
            .put_artifact(
                a.worker.account.clone(),
                sha256.to_owned(),
                bytes,
                self.store.now(),
            )
            .await?;
        // What was stored, so the worker checks it before a completion names it.
        Ok((
            StatusCode::OK,
            axum::Json(serde_json::json!({"sha256": sha256, "size": size})),
        )
            .into_response())
    }

    /// `GET /v1/artifacts/{sha256}`.
    pub(crate) async fn get_artifact(
        &self,
        a: &Authed,
        sha256: &str,
    ) -> Result<Response, ApiError> {
        if !is_sha256_hex(sha256) {
            return Err(ApiError::bad_request("bad_digest"));
        }
        let bytes = self
            .store
            .coordinator()?
            .get_artifact(a.worker.account.clone(), sha256.to_owned())
            .await?
            .ok_or_else(ApiError::not_found)?;
        Ok((
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, "application/octet-stream")],
            bytes,
        )
            .into_response())
    }
}
