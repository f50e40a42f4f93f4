//! Identity: enrollment (a single-use token spent by one atomic update, bound to a device's
//! Ed25519 key), challenge nonces (single use, 60 s), sessions (256-bit bearer tokens stored
//! hashed, 15 minutes), and the check every later call goes through.

use std::net::IpAddr;

use axum::http::{HeaderMap, StatusCode, header};
use ed25519_dalek::{Signature, VerifyingKey};

use super::error::ApiError;
use super::tokens;
use super::wire::{
    ChallengeAnswer, ChallengeRequest, EnrollAnswer, EnrollRequest, SessionAnswer, SessionRequest,
    parse, rfc3339,
};
use super::{PROTOCOL, PROTOCOL_HEADER, Shared, valid_name};
use crate::item::{WorkerRecord, WorkerState};
use crate::store::coordinator::{NewDevice, Redeemed, RemoteWorker, SessionRecord};

/// The protocol version a request says it speaks (`Scaffold-Protocol`).
pub(crate) fn protocol(headers: &HeaderMap) -> Result<i64, ApiError> {
    headers
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .ok_or_else(|| ApiError::bad_request("protocol_missing"))
}

/// The version `headers` carries, refused with 426 unless this coordinator speaks it.
pub(crate) fn supported(headers: &HeaderMap) -> Result<i64, ApiError> {
    let v = protocol(headers)?;
    if (PROTOCOL.0..=PROTOCOL.1).contains(&v) {
        Ok(v)
    } else {
        Err(ApiError::upgrade_required(PROTOCOL.0, PROTOCOL.1))
    }
}

/// A request made under a live session.
#[derive(Debug, Clone)]
pub(crate) struct Authed {
    pub worker: RemoteWorker,
    pub session: SessionRecord,
    /// The session token's SHA-256: the session's name in this process's gates.
    pub session_key: String,
}

impl Shared {
    /// `POST /v1/enroll`.
    pub(crate) async fn enroll(
        &self,
        ip: IpAddr,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(StatusCode, serde_json::Value), ApiError> {
        self.limits.rate(ip)?;
        let header = protocol(headers)?;
        let req: EnrollRequest = parse(body)?;
        // The version both speak: the highest in both ranges, and the header's among them.
        let version = req.protocol.max.min(PROTOCOL.1);
        if version < req.protocol.min.max(PROTOCOL.0)
            || !(PROTOCOL.0..=PROTOCOL.1).contains(&header)
        {
            return Err(ApiError::upgrade_required(PROTOCOL.0, PROTOCOL.1));
        }
        if !valid_name(&req.worker_name) {
            return Err(ApiError::bad_request("bad_worker_name"));
        }
        let key = device_key(&req.public_key)?;
        if !req.token.starts_with(tokens::ENROLL_PREFIX) || req.token.len() > 128 {
            return Err(ApiError::unauthorized("token_unknown"));
        }
        let id = tokens::new_worker_id(&req.worker_name)
            .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "random_unavailable"))?;
        let now = self.store.now();
        let redeemed = self
            .store
            .coordinator()?
            .redeem_enrollment(
                tokens::sha256_hex(req.token.as_bytes()),
                NewDevice {
                    id,
                    public_key: tokens::b64(key.as_bytes()),
                    protocol: version,
                },
                now,
            )
            .await?;
        let worker = match redeemed {
            Redeemed::Enrolled(w) => w,
            Redeemed::Unknown => return Err(ApiError::unauthorized("token_unknown")),
            Redeemed::Spent => return Err(ApiError::unauthorized("token_spent")),
            Redeemed::Expired => return Err(ApiError::unauthorized("token_expired")),
            Redeemed::Revoked => return Err(ApiError::unauthorized("token_revoked")),
        };
        if worker.name != req.worker_name {
            // Spent all the same: a token is for one name, and a mismatch is not retried.
            self.store
                .coordinator()?
                .revoke(worker.id.clone(), now)
                .await?;
            return Err(ApiError::unauthorized("worker_name_mismatch"));
        }
        tracing::info!(worker = %worker.id, account = %worker.account, "a remote worker enrolled");
        let answer = EnrollAnswer {
            worker_id: worker.id,
            account: worker.account,
            kinds: worker.kinds,
            protocol: version,
        };
        Ok((
            StatusCode::OK,
            serde_json::to_value(answer).unwrap_or_default(),
        ))
    }

    /// `POST /v1/session/challenge`.
    pub(crate) async fn challenge(
        &self,
        ip: IpAddr,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(StatusCode, serde_json::Value), ApiError> {
        self.limits.rate(ip)?;
        protocol(headers)?;
        let req: ChallengeRequest = parse(body)?;
        self.live_worker(&req.worker_id).await?;
        let nonce = tokens::random_32()
            .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "random_unavailable"))?;
        let expires_at = self.store.now().plus(self.config.nonce_ttl);
        self.store
            .coordinator()?
            .put_nonce(tokens::sha256_hex(&nonce), req.worker_id, expires_at)
            .await?;
        let answer = ChallengeAnswer {
            nonce: tokens::b64(&nonce),
            expires_at: rfc3339(expires_at),
        };
        Ok((
            StatusCode::OK,
            serde_json::to_value(answer).unwrap_or_default(),
        ))
    }

    /// `POST /v1/session`: the signed nonce for a session token.
    pub(crate) async fn session(
        &self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(StatusCode, serde_json::Value), ApiError> {
        let req: SessionRequest = parse(body)?;
        let worker = self.live_worker(&req.worker_id).await?;
        let version = match supported(headers) {
            Ok(v) => v,
            Err(e) => {
                if e.status == StatusCode::UPGRADE_REQUIRED {
                    self.store
                        .coordinator()?
                        .mark_upgrade_required(worker.id.clone())
                        .await?;
                }
                return Err(e);
            }
        };
        let nonce = tokens::unb64(&req.nonce)
            .filter(|n| n.len() == 32)
            .ok_or_else(|| ApiError::unauthorized("nonce_invalid"))?;
        let signature = tokens::unb64(&req.signature)
            .and_then(|s| <[u8; 64]>::try_from(s.as_slice()).ok())
            .map(|s| Signature::from_bytes(&s))
            .ok_or_else(|| ApiError::unauthorized("bad_signature"))?;
        let now = self.store.now();
        // Spent whatever follows: a nonce is tried once.
        if !self
            .store
            .coordinator()?
            .take_nonce(tokens::sha256_hex(&nonce), worker.id.clone(), now)
            .await?
        {
            return Err(ApiError::unauthorized("nonce_invalid"));
        }
        let key = worker
            .public_key
            .as_deref()
            .and_then(|k| device_key(k).ok())
            .ok_or_else(|| ApiError::unauthorized("revoked"))?;
        let message = tokens::session_message(&worker.id, &nonce, &self.origin);
        key.verify_strict(&message, &signature)
            .map_err(|_| ApiError::unauthorized("bad_signature"))?;
        let token = tokens::new_token(tokens::SESSION_PREFIX)
            .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "random_unavailable"))?;
        let expires_at = now.plus(self.config.session_ttl);
        self.store
            .coordinator()?
            .put_session(
                tokens::sha256_hex(token.as_bytes()),
                worker.id.clone(),
                version,
                now,
                expires_at,
            )
            .await?;
        self.presence(&worker.id, Vec::new()).await?;
        let answer = SessionAnswer {
            token,
            expires_at: rfc3339(expires_at),
            protocol: version,
            capabilities: vec![crate::protocol::ARTIFACT_RECEIPT.to_owned()],
            store_id: Some(self.store_id.clone()),
        };
        Ok((
            StatusCode::OK,
            serde_json::to_value(answer).unwrap_or_default(),
        ))
    }

    /// The worker `id`, when it is enrolled and not revoked.
    async fn live_worker(&self, id: &str) -> Result<RemoteWorker, ApiError> {
        if id.is_empty() || id.len() > 128 {
            return Err(ApiError::unauthorized("unknown_worker"));
        }
        match self
            .store
            .coordinator()?
            .remote_worker(id.to_owned())
            .await?
        {
            None => Err(ApiError::unauthorized("unknown_worker")),
            Some(w) if w.revoked_at.is_some() => Err(ApiError::unauthorized("revoked")),
            Some(w) => Ok(w),
        }
    }

    /// The session a request's bearer token names; 401 for none, an expired or a revoked one.
    pub(crate) async fn authenticate(&self, headers: &HeaderMap) -> Result<Authed, ApiError> {
        let key = bearer_key(headers)?;
        let found = self
            .store
            .coordinator()?
            .session(key.clone(), self.store.now())
            .await?;
        let Some((session, worker)) = found else {
            self.sessions.forget(&key);
            return Err(ApiError::unauthorized("unauthenticated"));
        };
        if worker.revoked_at.is_some() {
            self.sessions.forget(&key);
            return Err(ApiError::unauthorized("revoked"));
        }
        Ok(Authed {
            worker,
            session,
            session_key: key,
        })
    }

    /// What a claim knows of the session a request's bearer token names: from an earlier
    /// look-up while the session has not ended (`true`: to be checked by the claim itself,
    /// see [`Sessions`]), else from [`Shared::authenticate`] (`false`).
    pub(crate) async fn known_session(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Authed, bool), ApiError> {
        let key = bearer_key(headers)?;
        if let Some(known) = self.sessions.known(&key, self.store.now()) {
            return Ok((known, true));
        }
        // Learned here, by the one call that reads it, not on every authenticated call
        // (each heartbeat and completion batch would take the lock and clone it).
        let authed = self.authenticate(headers).await?;
        self.sessions.learn(&authed, self.store.now());
        Ok((authed, false))
    }

    /// The worker's presence: ONLINE (never over an operator's DRAINING) on `lanes`, seen
    /// now; returns the row's state.
    pub(crate) async fn presence(
        &self,
        id: &str,
        lanes: Vec<String>,
    ) -> Result<WorkerState, ApiError> {
        let now = self.store.now();
        Ok(self
            .store
            .touch_worker(WorkerRecord {
                id: id.to_owned(),
                lanes,
                state: WorkerState::Online,
                started_at: now,
                last_seen_at: now,
                lease_ms: i64::try_from(self.config.lease.as_millis()).unwrap_or(i64::MAX),
            })
            .await?)
    }
}

/// An Ed25519 public key from its unpadded base64url; weak keys refused.
fn device_key(b64: &str) -> Result<VerifyingKey, ApiError> {
    let bad = || ApiError::bad_request("bad_public_key");
    let bytes = tokens::unb64(b64).ok_or_else(bad)?;
    let bytes: [u8; 32] = bytes.as_slice().try_into().map_err(|_| bad())?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| bad())?;
    if key.is_weak() {
        return Err(bad());
    }
    Ok(key)
}

/// The SHA-256 of a request's bearer session token; 401 when there is none.
fn bearer_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| t.starts_with(tokens::SESSION_PREFIX) && t.len() <= 128)
        .ok_or_else(|| ApiError::unauthorized("unauthenticated"))?;
    Ok(tokens::sha256_hex(token.as_bytes()))
}

/// Sessions this process looked up, until they end: what a claim may know without a
/// look-up of its own (the worker, its account and kinds, fixed at enrollment). Nothing
/// is granted on this knowledge alone: a claim made on it hands the token's hash to the
/// store, whose claim statement takes nothing unless the session is live and its worker
/// not revoked, and a claim that took nothing looks the session up in full, so a revoked
/// worker hears `401 revoked` on its next claim as on any other call. It saves the claim,
/// the call a draining queue makes most, a round trip to the database.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    known: std::sync::Mutex<std::collections::HashMap<String, Authed>>,
}

/// The most sessions remembered; past it, ended ones are dropped, then all.
const SESSIONS_KNOWN: usize = 4096;

impl Sessions {
    fn known(&self, key: &str, now: crate::time::Timestamp) -> Option<Authed> {
        let mut known = self.known.lock().ok()?;
        match known.get(key) {
            Some(a) if a.session.expires_at > now => Some(a.clone()),
            Some(_) => {
                known.remove(key);
                None
            }
            None => None,
        }
    }

    fn learn(&self, authed: &Authed, now: crate::time::Timestamp) {
        let Ok(mut known) = self.known.lock() else {
            return;
        };
        if known.len() >= SESSIONS_KNOWN {
            known.retain(|_, a| a.session.expires_at > now);
            if known.len() >= SESSIONS_KNOWN {
                known.clear();
            }
        }
        known.insert(authed.session_key.clone(), authed.clone());
    }

    fn forget(&self, key: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.remove(key);
        }
    }
}
