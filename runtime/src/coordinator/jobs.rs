//! WorkerJobs (README.md#remote-workers-scaffold-queue-serve): the claim, and every call on a held job. Each job call names
//! (item, fence) and is checked by the store for the fence, a live lease *and* the session's
//! worker as the holder — a fence is guessable, ownership is not. `complete`, `fail`, `park`
//! and `release` repeated with an identical body answer 204 again (the attempt on record is
//! compared with the body); any other body gets 409. Every time comes from the store's clock.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::Shared;
use super::auth::{Authed, supported};
use super::error::ApiError;
use super::tokens::is_sha256_hex;
use super::wire::{
    BatchAnswer, BatchComplete, BatchHeartbeat, BatchResult, CheckpointBody, ClaimAnswer,
    ClaimBody, CompleteBody, EffectAnswer, EffectBody, FailBody, FailClass, FenceBody, Job,
    LeaseAnswer, OutputRef, ParkBody, inert, job_name, parse, parse_job, parse_rfc3339, rfc3339,
};
use crate::error::StoreError;
use crate::item::{EffectStart, Finish, Held, Outcome};
use crate::store::coordinator::ArtifactRole;
use crate::time::Timestamp;

/// How long a claim with nothing to hand out waits between looks (PostgreSQL wakes it at
/// once on an enqueue's notification; the other stores are polled at this pace).
const CLAIM_POLL: Duration = Duration::from_millis(250);

/// The longest failure message kept (a worker's text, cut).
const MESSAGE_MAX: usize = 2000;

/// Answers with no body.
pub(crate) type Answer = (StatusCode, Value);

fn no_content() -> Answer {
    (StatusCode::NO_CONTENT, Value::Null)
}

impl Shared {
    /// The (item, fence) of `job` held by this session's worker, with the body's fence
    /// matching the job's.
    fn held(&self, a: &Authed, job: &str, fence: i64) -> Result<Held, ApiError> {
        let (item, job_fence) = parse_job(job).ok_or_else(ApiError::not_found)?;
        if fence != job_fence {
            return Err(ApiError::stale_lease());
        }
        Ok(Held::new(item, fence, a.worker.id.clone()))
    }

    /// The finish of `held`, with its claim's origin where this process handed it out.
    fn finish_of(&self, held: &Held, outcome: Outcome) -> Finish {
        Finish::of(held, outcome).with_origin(self.origins.take(held.id, held.fence))
    }

    fn lease_ms(&self, expires: Timestamp) -> u64 {
        expires.millis_since(self.store.now())
    }

    /// `POST /v1/jobs/claim`: long-polls up to `wait_ms` (at most the limit) for jobs of the
    /// worker's account and kinds on `lane`; the version is checked before anything is
    /// claimed. Every claim is made under the session, which the store checks in the claim
    /// itself (so a worker revoked while it long-polls takes nothing more); a session only
    /// `known` (not looked up for this request) is looked up in full once a claim takes
    /// nothing, so a revoked or ended one is answered 401.
    pub(crate) async fn claim(
        &self,
        a: &Authed,
        known: bool,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<ClaimAnswer, ApiError> {
        if let Err(e) = supported(headers) {
            if e.status == StatusCode::UPGRADE_REQUIRED {
                if known {
                    // Nothing is written of a worker whose session was only known.
                    self.authenticate(headers).await?;
                }
                self.store
                    .coordinator()?
                    .mark_upgrade_required(a.worker.id.clone())
                    .await?;
            }
            return Err(e);
        }
        let req: ClaimBody = parse(body)?;
        if req.lane.is_empty() || req.lane.len() > 128 || req.lane.chars().any(char::is_control) {
            return Err(ApiError::bad_request("bad_lane"));
        }
        if req.max == 0 {
            return Err(ApiError::bad_request("bad_max"));
        }
        if req.max > self.config.limits.claim_max {
            return Err(ApiError::too_large(
                "claim_too_large",
                u64::from(self.config.limits.claim_max),
            ));
        }
        let _open = self.limits.claim(&a.session_key, &req.lane)?;
        // Presence is written only for a session shown live: looked up for this request, or
        // (when only known) by a claim that took work or by the look-up after one that did
        // not — a revoked worker's call must not mark its row ONLINE again.
        if !known {
            self.seen(&a.worker.id, &req.lane).await?;
        }
        let wait = Duration::from_millis(req.wait_ms).min(self.config.limits.claim_wait);
        let deadline = tokio::time::Instant::now() + wait;
        let mut shutdown = self.shutdown.clone();
        let mut unchecked = known;
        let claimed = loop {
            let claimed = self
                .store
                .claim_for(
                    &a.worker.id,
                    &req.lane,
                    &a.worker.account,
                    a.worker.kinds.as_deref(),
                    req.max as usize,
                    self.config.lease,
                    Some(&a.session_key),
                )
                .await?;
            if claimed.is_empty() && unchecked {
                // Nothing taken: perhaps no work, perhaps a session that ended or a worker
                // revoked; the look-up says which.
                self.authenticate(headers).await?;
                unchecked = false;
                self.seen(&a.worker.id, &req.lane).await?;
            }
            let now = tokio::time::Instant::now();
            if !claimed.is_empty() || now >= deadline || *shutdown.borrow() {
                break claimed;
            }
            let step = (deadline - now).min(CLAIM_POLL);
            tokio::select! {
                () = self.store.wait_for_work(&req.lane, step) => {}
                _ = shutdown.changed() => {}
            }
        };
        if unchecked {
            // Known only, and the claim statement found the session live: it took work.
            self.seen(&a.worker.id, &req.lane).await?;
        }
        let mut jobs = Vec::with_capacity(claimed.len());
        for c in claimed {
            self.origins
                .remember(c.item.id, c.fence, c.origin(), self.config.lease);
            jobs.push(Job {
                job: job_name(c.item.id, c.fence),
                kind: c.item.kind,
                lane: c.item.lane,
                payload: c.item.payload,
                attempt: c.item.attempt,
                max_attempts: Some(c.item.max_attempts),
                fence: c.fence,
                lease_expires_at: rfc3339(c.lease_expires_at),
                lease_ms: self.lease_ms(c.lease_expires_at),
                checkpoint: c.item.checkpoint,
                inputs: c.inputs,
            });
        }
        self.metrics
            .claimed
            .fetch_add(jobs.len() as u64, std::sync::atomic::Ordering::Relaxed);
        // Serialized straight to the body by the caller, not through a JSON value tree:
        // a claim of 100 is the coordinator's largest answer and its most frequent.
        Ok(ClaimAnswer { jobs })
    }

    /// Marks the worker seen on `lane` (throttled: at most once a sweep interval).
    async fn seen(&self, worker: &str, lane: &str) -> Result<(), ApiError> {
        if let Some(lanes) = self.notify.seen(worker, lane, self.config.sweep_interval) {
            self.presence(worker, lanes).await?;
        }
        Ok(())
    }

    /// `POST /v1/jobs/{job}/heartbeat`.
    pub(crate) async fn heartbeat(
        &self,
        a: &Authed,
        job: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: FenceBody = parse(body)?;
        let lease = self.renew(a, job, req.fence).await?;
        Ok((
            StatusCode::OK,
            serde_json::to_value(lease).unwrap_or_default(),
        ))
    }

    async fn renew(&self, a: &Authed, job: &str, fence: i64) -> Result<LeaseAnswer, ApiError> {
        let held = self.held(a, job, fence)?;
        let expires = self.store.heartbeat(&held, self.config.lease).await?;
        Ok(LeaseAnswer {
            lease_expires_at: rfc3339(expires),
            lease_ms: self.lease_ms(expires),
        })
    }

    /// `POST /v1/jobs/{job}/checkpoint`.
    pub(crate) async fn checkpoint(
        &self,
        a: &Authed,
        job: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: CheckpointBody = parse(body)?;
        let held = self.held(a, job, req.fence)?;
        self.store.checkpoint(&held, req.state).await?;
        Ok(no_content())
    }

    /// `GET /v1/jobs/{job}/effects/{key}?fence=`: `ctx.once` over the wire — the recorded
    /// output, or (fenced, owner-checked, the lease renewed) leave to run the effect with its
    /// idempotency key.
    pub(crate) async fn begin_effect(
        &self,
        a: &Authed,
        job: &str,
        key: &str,
        fence: i64,
    ) -> Result<Answer, ApiError> {
        check_key(key)?;
        let held = self.held(a, job, fence)?;
        let answer = match self
            .store
            .begin_effect(&held, key, self.config.lease)
            .await?
        {
            EffectStart::Recorded(v) => EffectAnswer::Recorded(v),
            EffectStart::Run {
                lease_expires_at, ..
            } => EffectAnswer::Run {
                lease_expires_at: rfc3339(lease_expires_at),
                lease_ms: self.lease_ms(lease_expires_at),
                idempotency_key: format!("{}-{}-{key}", self.store_id, held.id),
            },
        };
        Ok((
            StatusCode::OK,
            serde_json::to_value(answer).unwrap_or_default(),
        ))
    }

    /// `POST /v1/jobs/{job}/effects/{key}`: records the effect (fenced).
    pub(crate) async fn record_effect(
        &self,
        a: &Authed,
        job: &str,
        key: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        check_key(key)?;
        let req: EffectBody = parse(body)?;
        let held = self.held(a, job, req.fence)?;
        self.store.record_effect(&held, key, req.output).await?;
        Ok(no_content())
    }

    /// `POST /v1/jobs/{job}/complete`.
    pub(crate) async fn complete(
        &self,
        a: &Authed,
        job: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: CompleteBody = parse(body)?;
        self.complete_one(a, job, req.fence, req.outputs).await?;
        Ok(no_content())
    }

    async fn complete_one(
        &self,
        a: &Authed,
        job: &str,
        fence: i64,
        outputs: Vec<OutputRef>,
    ) -> Result<(), ApiError> {
        let held = self.held(a, job, fence)?;
        check_outputs(&outputs)?;
        let pairs: Vec<(String, String)> = outputs
            .iter()
            .map(|o| (o.name.clone(), o.sha256.clone()))
            .collect();
        // The outputs first, under this attempt's fence: a completion never names an output
        // that is not stored.
        if !pairs.is_empty() {
            match self
                .store
                .coordinator()?
                .record_outputs(
                    held.clone(),
                    a.worker.account.clone(),
                    pairs.clone(),
                    self.store.now(),
                )
                .await
            {
                Ok(()) => {}
                Err(StoreError::StaleLease { .. }) => {
                    return self.repeated(&held, Repeat::Complete(&pairs)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Strict: a completion repeated is refused by the store, and told apart from another
        // body here, by the attempt on record.
        match self
            .store
            .finish(self.finish_of(&held, Outcome::Complete).strict())
            .await
        {
            Ok(()) => Ok(()),
            Err(StoreError::StaleLease { .. }) => {
                self.repeated(&held, Repeat::Complete(&pairs)).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `POST /v1/jobs/{job}/fail`: transient failures retry at the coordinator's backoff.
    pub(crate) async fn fail(
        &self,
        a: &Authed,
        job: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: FailBody = parse(body)?;
        let held = self.held(a, job, req.fence)?;
        let code = inert(&req.code);
        let message: String = req
            .message
            .chars()
            .filter(|c| !c.is_control() || *c == '\n')
            .take(MESSAGE_MAX)
            .collect();
        let error = format!("{code}: {message}");
        let outcome = match req.class {
            FailClass::Permanent => Outcome::Dead {
                error: error.clone(),
            },
            FailClass::Transient => {
                let attempt = self.store.get(held.id).await?.map_or(1, |i| i.attempt);
                Outcome::Retry {
                    retry_at: self.store.now().plus(self.config.retry.delay(attempt)),
                    error: error.clone(),
                }
            }
        };
        self.finish(&held, outcome, Repeat::Fail(req.class, &error))
            .await
    }

    /// `POST /v1/jobs/{job}/park`.
    pub(crate) async fn park(
        &self,
        a: &Authed,
        job: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: ParkBody = parse(body)?;
        let held = self.held(a, job, req.fence)?;
        let until = match &req.until {
            Some(t) => Some(parse_rfc3339(t).ok_or_else(|| ApiError::bad_request("bad_time"))?),
            None => None,
        };
        if until.is_none() && req.signal.is_none() {
            return Err(ApiError::bad_request("park_needs_until_or_signal"));
        }
        if let Some(s) = &req.signal
            && !crate::item::is_signal_name(s)
        {
            return Err(ApiError::bad_request("bad_signal"));
        }
        let outcome = Outcome::Park {
            until,
            signal: req.signal,
        };
        self.finish(&held, outcome, Repeat::Park).await
    }

    /// `POST /v1/jobs/{job}/release`: back to available now, the attempt given back.
    pub(crate) async fn release(
        &self,
        a: &Authed,
        job: &str,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: FenceBody = parse(body)?;
        let held = self.held(a, job, req.fence)?;
        self.finish(&held, Outcome::Release, Repeat::Release).await
    }

    async fn finish(
        &self,
        held: &Held,
        outcome: Outcome,
        repeat: Repeat<'_>,
    ) -> Result<Answer, ApiError> {
        match self.store.finish(self.finish_of(held, outcome)).await {
            Ok(()) => Ok(no_content()),
            Err(StoreError::StaleLease { .. }) => {
                self.repeated(held, repeat).await?;
                Ok(no_content())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A finishing call the store refused: 204 when this holder already ended this attempt
    /// the way the body says (a retry of a call whose answer was lost), else 409.
    async fn repeated(&self, held: &Held, repeat: Repeat<'_>) -> Result<(), ApiError> {
        let attempts = self.store.attempts(held.id).await?;
        let Some(a) = attempts
            .iter()
            .find(|a| a.fence == held.fence && a.holder.as_deref() == Some(held.owner.as_str()))
        else {
            return Err(ApiError::stale_lease());
        };
        let same = match repeat {
            Repeat::Complete(outputs) => {
                a.outcome == "completed" && {
                    let recorded: BTreeSet<(String, String)> = self
                        .store
                        .coordinator()?
                        .item_artifacts(held.id)
                        .await?
                        .into_iter()
                        .filter(|x| x.role == ArtifactRole::Output && x.fence == held.fence)
                        .map(|x| (x.artifact.name, x.artifact.sha256))
                        .collect();
                    recorded == outputs.iter().cloned().collect()
                }
            }
            Repeat::Fail(class, error) => {
                let outcome_fits = match class {
                    FailClass::Permanent => a.outcome == "dead",
                    FailClass::Transient => a.outcome == "failed" || a.outcome == "dead",
                };
                outcome_fits && a.error.as_deref() == Some(error)
            }
            Repeat::Park => a.outcome == "parked",
            Repeat::Release => a.outcome == "released",
        };
        if same {
            Ok(())
        } else {
            Err(ApiError::stale_lease())
        }
    }

    /// `POST /v1/jobs/complete`: many completions, one answer each.
    pub(crate) async fn complete_batch(&self, a: &Authed, body: &[u8]) -> Result<Answer, ApiError> {
        let req: BatchComplete = parse(body)?;
        if req.jobs.len() > self.config.limits.claim_max as usize {
            return Err(ApiError::too_large(
                "batch_too_large",
                u64::from(self.config.limits.claim_max),
            ));
        }
        // Completions without outputs go to the store in one write; one with outputs, or one
        // the write refused (a repeat among them), is answered by itself.
        let mut answers: Vec<Option<Result<(), ApiError>>> = vec![None; req.jobs.len()];
        let mut plain: Vec<(usize, Held)> = Vec::new();
        for (n, j) in req.jobs.iter().enumerate() {
            if !j.outputs.is_empty() {
                continue;
            }
            match self.held(a, &j.job, j.fence) {
                Ok(held) => plain.push((n, held)),
                Err(e) => answers[n] = Some(Err(e)),
            }
        }
        if !plain.is_empty() {
            let results = self
                .store
                .finish_many(
                    plain
                        .iter()
                        .map(|(_, h)| self.finish_of(h, Outcome::Complete).strict())
                        .collect(),
                )
                .await?;
            for ((n, held), r) in plain.iter().zip(results) {
                answers[*n] = Some(match r {
                    Ok(()) => Ok(()),
                    Err(StoreError::StaleLease { .. }) => {
                        self.repeated(held, Repeat::Complete(&[])).await
                    }
                    Err(e) => Err(e.into()),
                });
            }
        }
        let mut results = Vec::with_capacity(req.jobs.len());
        for (j, answer) in req.jobs.into_iter().zip(answers) {
            let r = match answer {
                Some(r) => r,
                None => self.complete_one(a, &j.job, j.fence, j.outputs).await,
            };
            if let Err(e) = &r {
                self.metrics.refused(e.code);
            }
            results.push(batch_result(j.job, r.map(|()| None)));
        }
        Ok((
            StatusCode::OK,
            serde_json::to_value(BatchAnswer { results }).unwrap_or_default(),
        ))
    }

    /// `POST /v1/jobs/heartbeat`: many renewals, one answer each.
    pub(crate) async fn heartbeat_batch(
        &self,
        a: &Authed,
        body: &[u8],
    ) -> Result<Answer, ApiError> {
        let req: BatchHeartbeat = parse(body)?;
        if req.jobs.len() > self.config.limits.claim_max as usize {
            return Err(ApiError::too_large(
                "batch_too_large",
                u64::from(self.config.limits.claim_max),
            ));
        }
        let mut results = Vec::with_capacity(req.jobs.len());
        for j in req.jobs {
            let r = self.renew(a, &j.job, j.fence).await;
            if let Err(e) = &r {
                self.metrics.refused(e.code);
            }
            results.push(batch_result(j.job, r.map(Some)));
        }
        Ok((
            StatusCode::OK,
            serde_json::to_value(BatchAnswer { results }).unwrap_or_default(),
        ))
    }
}

/// What a finishing call's body said, to tell a repeat from another call.
enum Repeat<'a> {
    Complete(&'a [(String, String)]),
    Fail(FailClass, &'a str),
    Park,
    Release,
}

fn batch_result(job: String, r: Result<Option<LeaseAnswer>, ApiError>) -> BatchResult {
    match r {
        Ok(lease) => BatchResult {
            job,
            status: if lease.is_some() { 200 } else { 204 },
            lease,
            error: None,
        },
        Err(e) => BatchResult {
            job,
            status: e.status.as_u16(),
            lease: None,
            error: Some(e.body()),
        },
    }
}

/// An effect key: 1 to 200 characters, none a control character.
fn check_key(key: &str) -> Result<(), ApiError> {
    if key.is_empty() || key.len() > 200 || key.chars().any(char::is_control) {
        return Err(ApiError::bad_request("bad_effect_key"));
    }
    Ok(())
}

/// Outputs: at most 100, each a file name (`artifacts::name_problem`) and a hex SHA-256,
/// names unique.
fn check_outputs(outputs: &[OutputRef]) -> Result<(), ApiError> {
    if outputs.len() > 100 {
        return Err(ApiError::too_large("too_many_outputs", 100));
    }
    let mut names = BTreeSet::new();
    for o in outputs {
        // A file name, never a path or a URI (`file://`, `worker://`): results are found by
        // their digest.
        if crate::artifacts::name_problem(&o.name).is_some() {
            return Err(ApiError::bad_request("bad_output_name"));
        }
        if !is_sha256_hex(&o.sha256) {
            return Err(ApiError::bad_request("bad_digest").with("sha256", inert(&o.sha256)));
        }
        if !names.insert(&o.name) {
            return Err(ApiError::bad_request("duplicate_output").with("name", inert(&o.name)));
        }
    }
    Ok(())
}

/// The effect look-up's fence, from its query `fence=N` (the one parameter it takes).
pub(crate) fn effect_fence(query: Option<&str>) -> Result<i64, ApiError> {
    let mut fence = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k != "fence" {
            return Err(ApiError::bad_request("unknown_field").with("field", inert(k)));
        }
        if fence.is_some() {
            return Err(ApiError::bad_request("bad_fence"));
        }
        fence = Some(
            v.parse::<i64>()
                .map_err(|_| ApiError::bad_request("bad_fence"))?,
        );
    }
    fence.ok_or_else(|| ApiError::bad_request("bad_fence").with("missing", json!("fence")))
}
