//! The remote backend (README.md#the-workers-side-the-remote-backend, the runtime's `remote` feature): a
//! worker's store that speaks the coordinator's protocol instead of holding a database. It
//! implements the worker's calls — claim, heartbeat, checkpoint, effects, finish, presence —
//! in batches where the protocol has them; every producer or operator call answers
//! [`StoreError::Unsupported`] naming the coordinator.
//!
//! Times: every lease the coordinator hands out is read as what is left of it (`lease_ms`)
//! and placed on this store's clock from when the call was sent, so a worker whose wall
//! clock is hours off schedules its heartbeats right.

mod batch;
mod client;
mod config;
mod identity;
mod socket;

pub use config::RemoteConfig;
pub use identity::Identity;

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use self::client::{Client, Reply};
use self::socket::{Notices, Standing};
use super::backend::{Backend, BoxFuture, ClaimRequest, Counts, RelayReport, TxBody};
use super::{LaneAges, StoreResult};
use crate::error::StoreError;
use crate::item::{
    AttemptRecord, Claimed, EffectRecord, EffectStart, Enqueued, Finish, Held, ItemId, ItemRecord,
    ItemState, ListFilter, NewItem, OutboxStats, Outcome, WorkerRecord, WorkerState,
};
use crate::protocol::{
    BatchAnswer, BatchComplete, BatchCompleteItem, ClaimAnswer, ClaimBody, EffectAnswer,
    EnrollAnswer, EnrollRequest, FailClass, Job, ProtocolRange, job_name, parse_job, rfc3339,
    tokens,
};
use crate::time::Timestamp;

/// The most jobs one claim asks for, and one batch call carries (the coordinator's limit).
const CLAIM_MAX: usize = 100;

/// A worker's store over the coordinator.
pub struct RemoteBackend {
    client: Client,
    notices: Arc<Notices>,
    beats: batch::Heartbeats,
    /// Whether this is the lease keeper's twin (its own connections; no socket of its own).
    keeper: bool,
}

impl std::fmt::Debug for RemoteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteBackend")
            .field("coordinator", &self.client.shared.config.origin())
            .field("worker_id", &self.client.shared.identity.worker_id)
            .finish_non_exhaustive()
    }
}

/// Whether `origin`'s host is a loopback address (where plain HTTP is allowed).
fn loopback(origin: &str) -> bool {
    let host = origin
        .trim_start_matches("http://")
        .rsplit_once(':')
        .map_or(origin.trim_start_matches("http://"), |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl RemoteBackend {
    /// Opens the worker's state directory, enrolls with the token file when it holds no
    /// identity yet (deleting the spent token), opens a session and the socket.
    pub async fn open(config: RemoteConfig) -> StoreResult<RemoteBackend> {
        let origin = crate::protocol::origin_of(&config.url).map_err(|reason| {
            StoreError::InvalidCoordinatorUrl {
                url: config.url.clone(),
                reason: reason.to_owned(),
            }
        })?;
        if origin.starts_with("http://") && !loopback(&origin) {
            return Err(StoreError::InvalidCoordinatorUrl {
                url: config.url.clone(),
                reason: "plain http is for a loopback address only; use https".to_owned(),
            });
        }
        let mut config = config;
        config.url = origin;
        identity::state_dir(&config.state_dir)?;
        let key = identity::device_key(&config.state_dir)?;
        let tls = Arc::new(client::tls_config(&config)?);
        let known = identity::load(&config.state_dir)?.filter(|i| i.coordinator == config.origin());
        let identity = match known {
            Some(i) => i,
            None => enroll(&config, &tls, &key).await?,
        };
        let shared = Arc::new(client::Shared {
            config,
            tls,
            key,
            identity,
            session: tokio::sync::Mutex::new(None),
            refused: Default::default(),
            retried: Default::default(),
        });
        let client = Client::new(Arc::clone(&shared))?;
        // The session now, so a worker that cannot have one fails at start.
        client.session().await?;
        let notices = Arc::new(Notices::default());
        tokio::spawn(socket::run(client.clone(), Arc::downgrade(&notices)));
        Ok(RemoteBackend {
            beats: batch::Heartbeats::default(),
            client,
            notices,
            keeper: false,
        })
    }

    /// The identity the coordinator gave this worker.
    pub fn identity(&self) -> &Identity {
        &self.client.shared.identity
    }

    /// Calls the coordinator refused as this worker's bug, and transient failures retried.
    pub fn refusals(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.client.shared.refused.load(Relaxed),
            self.client.shared.retried.load(Relaxed),
        )
    }

    fn unsupported<T>(&self, what: &str) -> BoxFuture<'_, StoreResult<T>>
    where
        T: Send + 'static,
    {
        let msg = format!(
            "`{what}` is the coordinator's: a remote worker's store only works the items it is handed; ask the coordinator at {} (scaffold queue … --database on its host)",
            self.client.shared.config.origin()
        );
        Box::pin(async move { Err(StoreError::Unsupported(msg)) })
    }

    fn job_path(held: &Held, tail: &str) -> String {
        format!("/v1/jobs/{}/{tail}", job_name(held.id, held.fence))
    }

    /// The answer to a job call: 2xx is `Ok`, 409 is a stale lease, anything else a refusal.
    fn job_answer(&self, path: &str, held: &Held, reply: &Reply) -> StoreResult<()> {
        if reply.status.is_success() {
            Ok(())
        } else if reply.status == StatusCode::CONFLICT {
            if reply.code() == "artifact_missing" {
                return Err(StoreError::ArtifactMissing {
                    account: self.client.shared.identity.account.clone(),
                    sha256: reply
                        .body
                        .get("sha256")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                });
            }
            Err(StoreError::StaleLease {
                id: held.id,
                fence: held.fence,
            })
        } else {
            Err(self.client.refused(path, reply))
        }
    }

    fn claimed(&self, job: Job, sent: Timestamp) -> StoreResult<Claimed> {
        let (id, fence) = parse_job(&job.job).ok_or_else(|| StoreError::Refused {
            call: "/v1/jobs/claim".to_owned(),
            status: 200,
            code: "a job name this worker cannot read".to_owned(),
        })?;
        let expires = sent.plus(Duration::from_millis(job.lease_ms));
        let item = ItemRecord {
            id,
            kind: job.kind,
            lane: job.lane,
            payload: job.payload,
            state: ItemState::Running,
            priority: 0,
            attempt: job.attempt,
            max_attempts: job.max_attempts.unwrap_or(i32::MAX),
            run_at: sent,
            lease_owner: Some(self.client.shared.identity.worker_id.clone()),
            lease_expires_at: Some(expires),
            fence,
            dedupe_key: None,
            checkpoint: job.checkpoint,
            last_error: None,
            parked_on: None,
            created_at: sent,
            updated_at: sent,
            claimed_at: Some(sent),
            account: self.client.shared.identity.account.clone(),
        };
        Ok(Claimed {
            item,
            fence,
            lease_expires_at: expires,
            claimed_from: None,
            inputs: job.inputs,
        })
    }

    async fn finish_one(&self, f: Finish) -> StoreResult<()> {
        let held = Held::new(f.id, f.fence, f.owner.clone());
        // The loop sanitized the message with the payload in hand; once more here, for a
        // finish made some other way.
        let clean = |e: &str| crate::sanitize::failure_message(e, &Value::Null);
        let (tail, body) = match &f.outcome {
            Outcome::Complete => (
                "complete",
                json!({"fence": f.fence, "outputs": outputs(&f.outputs)}),
            ),
            Outcome::Retry { error, .. } => (
                "fail",
                json!({"fence": f.fence, "class": FailClass::Transient, "code": "transient", "message": clean(error)}),
            ),
            Outcome::Dead { error } => (
                "fail",
                json!({"fence": f.fence, "class": FailClass::Permanent, "code": "permanent", "message": clean(error)}),
            ),
            Outcome::Park { until, signal } => (
                "park",
                json!({"fence": f.fence, "until": until.map(rfc3339), "signal": signal}),
            ),
            Outcome::Release => ("release", json!({"fence": f.fence})),
        };
        let path = Self::job_path(&held, tail);
        let reply = self
            .client
            .call(Method::POST, &path, &body, Duration::ZERO)
            .await?;
        self.job_answer(&path, &held, &reply)
    }

    async fn complete_batch(&self, batch: Vec<Finish>) -> StoreResult<Vec<StoreResult<()>>> {
        let body = BatchComplete {
            jobs: batch
                .iter()
                .map(|f| BatchCompleteItem {
                    job: job_name(f.id, f.fence),
                    fence: f.fence,
                    outputs: outputs(&f.outputs),
                })
                .collect(),
        };
        let path = "/v1/jobs/complete";
        let reply = self
            .client
            .call(Method::POST, path, &body, Duration::ZERO)
            .await?;
        if !reply.status.is_success() {
            return Err(self.client.refused(path, &reply));
        }
        let answer: BatchAnswer = reply.parse(path)?;
        let mut by_job: std::collections::HashMap<String, (u16, Option<Value>)> = answer
            .results
            .into_iter()
            .map(|r| (r.job, (r.status, r.error)))
            .collect();
        Ok(batch
            .iter()
            .map(|f| {
                let held = Held::new(f.id, f.fence, f.owner.clone());
                match by_job.remove(&job_name(f.id, f.fence)) {
                    Some((status, error)) => {
                        let reply = Reply {
                            status: StatusCode::from_u16(status)
                                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                            body: error.unwrap_or(Value::Null),
                        };
                        self.job_answer(path, &held, &reply)
                    }
                    None => Err(StoreError::Refused {
                        call: path.to_owned(),
                        status: 200,
                        code: "the batch answer left this job out".to_owned(),
                    }),
                }
            })
            .collect())
    }
}

/// A completion's outputs as the protocol names them (digests; never a path or URI).
fn outputs(outputs: &[crate::item::ArtifactRef]) -> Vec<crate::protocol::OutputRef> {
    outputs
        .iter()
        .map(|o| crate::protocol::OutputRef {
            name: o.name.clone(),
            sha256: o.sha256.clone(),
        })
        .collect()
}

/// Enrolls with the token file; keeps the identity and deletes the spent token.
async fn enroll(
    config: &RemoteConfig,
    tls: &Arc<rustls::ClientConfig>,
    key: &ed25519_dalek::SigningKey,
) -> StoreResult<Identity> {
    let token_file = config
        .token_file
        .clone()
        .ok_or_else(|| StoreError::RemoteState {
            path: config.state_dir.clone(),
            reason: "it holds no enrolled identity and no token file is set; make one with `scaffold queue enroll --worker NAME --out FILE` and set the token file".to_owned(),
        })?;
    let token = identity::read_token(&token_file)?;
    let shared = Arc::new(client::Shared {
        config: config.clone(),
        tls: Arc::clone(tls),
        key: key.clone(),
        identity: Identity {
            worker_id: String::new(),
            account: String::new(),
            kinds: None,
            coordinator: config.origin().to_owned(),
        },
        session: tokio::sync::Mutex::new(None),
        refused: Default::default(),
        retried: Default::default(),
    });
    let client = Client::new(shared)?;
    let body = serde_json::to_value(EnrollRequest {
        token,
        worker_name: config.worker_name.clone(),
        public_key: tokens::b64(key.verifying_key().as_bytes()),
        protocol: ProtocolRange {
            min: config.protocol.0,
            max: config.protocol.1,
        },
    })?;
    let reply = client
        .request_unauthenticated(Method::POST, "/v1/enroll", Some(&body))
        .await?;
    if !reply.status.is_success() {
        // A refused token (spent, expired, another worker's) is spent or useless: say why.
        return Err(StoreError::Refused {
            call: "/v1/enroll".to_owned(),
            status: reply.status.as_u16(),
            code: reply.code(),
        });
    }
    let answer: EnrollAnswer = reply.parse("/v1/enroll")?;
    let id = Identity {
        worker_id: answer.worker_id,
        account: answer.account,
        kinds: answer.kinds,
        coordinator: config.origin().to_owned(),
    };
    identity::save(&config.state_dir, &id)?;
    identity::spend_token(&token_file);
    tracing::info!(worker = %id.worker_id, account = %id.account, "enrolled with the coordinator");
    Ok(id)
}

impl Backend for RemoteBackend {
    fn name(&self) -> &'static str {
        "remote"
    }

    fn migrate(&self) -> BoxFuture<'_, StoreResult<i64>> {
        self.unsupported("migrate")
    }

    fn schema_version(&self) -> BoxFuture<'_, StoreResult<i64>> {
        self.unsupported("schema_version")
    }

    fn enqueue_many(
        &self,
        _items: Vec<NewItem>,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Enqueued>>> {
        self.unsupported("enqueue")
    }

    fn claim(&self, req: ClaimRequest, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<Claimed>>> {
        Box::pin(async move {
            let body = ClaimBody {
                lane: req.lane,
                max: u32::try_from(req.n.clamp(1, CLAIM_MAX)).unwrap_or(1),
                wait_ms: 0,
            };
            let path = "/v1/jobs/claim";
            let reply = self
                .client
                .call(Method::POST, path, &body, Duration::ZERO)
                .await?;
            if !reply.status.is_success() {
                return Err(self.client.refused(path, &reply));
            }
            let answer: ClaimAnswer = reply.parse(path)?;
            answer
                .jobs
                .into_iter()
                .map(|j| self.claimed(j, now))
                .collect()
        })
    }

    fn heartbeat(
        &self,
        held: Held,
        _lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Timestamp>> {
        Box::pin(self.beats.beat(&self.client, held, now))
    }

    fn checkpoint(
        &self,
        held: Held,
        state: Value,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let path = Self::job_path(&held, "checkpoint");
            let reply = self
                .client
                .call(
                    Method::POST,
                    &path,
                    &json!({"fence": held.fence, "state": state}),
                    Duration::ZERO,
                )
                .await?;
            self.job_answer(&path, &held, &reply)
        })
    }

    fn finish_many(
        &self,
        batch: std::sync::Arc<[Finish]>,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<StoreResult<()>>>> {
        Box::pin(async move {
            let (done, other): (Vec<_>, Vec<_>) = batch
                .iter()
                .cloned()
                .enumerate()
                .partition(|(_, f)| matches!(f.outcome, Outcome::Complete));
            let mut results: Vec<Option<StoreResult<()>>> = batch.iter().map(|_| None).collect();
            let others = futures_util::future::join_all(
                other
                    .into_iter()
                    .map(|(i, f)| async move { (i, self.finish_one(f).await) }),
            );
            // In calls of at most the coordinator's batch limit, made at once.
            let completes = async {
                let calls = done.chunks(CLAIM_MAX).map(|chunk| async move {
                    let (idx, fs): (Vec<usize>, Vec<Finish>) = chunk.iter().cloned().unzip();
                    let answers = self.complete_batch(fs).await?;
                    Ok::<_, StoreError>(idx.into_iter().zip(answers).collect::<Vec<_>>())
                });
                let mut out = Vec::with_capacity(done.len());
                for answers in futures_util::future::join_all(calls).await {
                    out.extend(answers?);
                }
                Ok::<_, StoreError>(out)
            };
            let (others, completes) = tokio::join!(others, completes);
            for (i, r) in completes?.into_iter().chain(others) {
                results[i] = Some(r);
            }
            Ok(results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Err(StoreError::Task("no answer".to_owned()))))
                .collect())
        })
    }

    fn sweep(&self, _now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.unsupported("sweep")
    }

    fn retry(&self, _id: ItemId, _now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.unsupported("retry")
    }

    fn retry_all_dead(
        &self,
        _kind: Option<String>,
        _limit: Option<u64>,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.unsupported("retry")
    }

    fn discard(&self, _id: ItemId) -> BoxFuture<'_, StoreResult<()>> {
        self.unsupported("discard")
    }

    fn signal(
        &self,
        _signal: String,
        _limit: Option<u64>,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.unsupported("signal")
    }

    fn get(&self, _id: ItemId) -> BoxFuture<'_, StoreResult<Option<ItemRecord>>> {
        self.unsupported("get")
    }

    fn list(&self, _filter: ListFilter) -> BoxFuture<'_, StoreResult<Vec<ItemRecord>>> {
        self.unsupported("list")
    }

    fn effect(&self, _id: ItemId, _key: String) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        self.unsupported("effect")
    }

    fn begin_effect(
        &self,
        held: Held,
        key: String,
        _lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<EffectStart>> {
        Box::pin(async move {
            let path = format!(
                "{}?fence={}",
                self.client.effect_path(&held, &key),
                held.fence
            );
            let reply = self
                .client
                .request(Method::GET, &path, None, Duration::ZERO)
                .await?;
            self.job_answer(&path, &held, &reply)?;
            match reply.parse::<EffectAnswer>(&path)? {
                EffectAnswer::Recorded(v) => Ok(EffectStart::Recorded(v)),
                EffectAnswer::Run { lease_ms, .. } => Ok(EffectStart::Run {
                    lease_expires_at: now.plus(Duration::from_millis(lease_ms)),
                    verified_at: now,
                }),
            }
        })
    }

    fn record_effect(
        &self,
        held: Held,
        key: String,
        output: Value,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let path = self.client.effect_path(&held, &key);
            let reply = self
                .client
                .call(
                    Method::POST,
                    &path,
                    &json!({"fence": held.fence, "output": output}),
                    Duration::ZERO,
                )
                .await?;
            self.job_answer(&path, &held, &reply)
        })
    }

    fn attempts(&self, _id: ItemId) -> BoxFuture<'_, StoreResult<Vec<AttemptRecord>>> {
        self.unsupported("attempts")
    }

    fn fetch_artifact(
        &self,
        _account: String,
        sha256: String,
        limit: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>> {
        Box::pin(async move {
            if !crate::artifacts::is_sha256_hex(&sha256) {
                return Ok(None);
            }
            self.client
                .download(&format!("/v1/artifacts/{sha256}"), limit)
                .await
        })
    }

    fn put_output(
        &self,
        _held: Held,
        _account: String,
        output: crate::item::ArtifactRef,
        bytes: Vec<u8>,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let path = format!("/v1/artifacts/{}", output.sha256);
            // An older coordinator answers an upload with no receipt: what it stored could
            // not be checked, so nothing is uploaded to it.
            let session = self.client.session().await?;
            if !session
                .capabilities
                .iter()
                .any(|c| c == crate::protocol::ARTIFACT_RECEIPT)
            {
                return Err(StoreError::Refused {
                    call: path,
                    status: 0,
                    code: format!(
                        "the coordinator does not say `{}`: it cannot confirm what an upload stored (upgrade the coordinator)",
                        crate::protocol::ARTIFACT_RECEIPT
                    ),
                });
            }
            let reply = self.client.upload(&path, bytes).await?;
            if !reply.status.is_success() {
                return Err(self.client.refused(&path, &reply));
            }
            // The coordinator's word on what it stored: the digest and size sent, or the
            // completion does not name it.
            let said = (
                reply.body.get("sha256").and_then(Value::as_str),
                reply.body.get("size").and_then(Value::as_u64),
            );
            if said != (Some(output.sha256.as_str()), Some(output.size)) {
                return Err(StoreError::Refused {
                    call: path,
                    status: reply.status.as_u16(),
                    code: "the coordinator's answer does not name the digest and size uploaded"
                        .to_owned(),
                });
            }
            Ok(())
        })
    }

    fn store_id(&self) -> BoxFuture<'_, StoreResult<String>> {
        Box::pin(async move {
            self.client
                .session()
                .await?
                .store_id
                .ok_or_else(|| StoreError::Refused {
                    call: "/v1/session".to_owned(),
                    status: 200,
                    code: "the coordinator did not say its store id (an older coordinator)"
                        .to_owned(),
                })
        })
    }

    fn transaction(&self, _body: TxBody, _now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.unsupported("transaction")
    }

    fn relay_outbox(
        &self,
        _limit: usize,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<RelayReport>> {
        self.unsupported("relay_outbox")
    }

    fn mark_silent_workers(&self, _now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.unsupported("mark_silent_workers")
    }

    fn purge_retained(
        &self,
        _before: Timestamp,
        _limit: usize,
    ) -> BoxFuture<'_, StoreResult<(u64, u64)>> {
        self.unsupported("purge")
    }

    fn put_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            match worker.state {
                WorkerState::Draining | WorkerState::Offline => {
                    // Said on the socket, and waited for (briefly) so a process that exits
                    // next has been heard; a silent worker goes OFFLINE after three leases
                    // anyway.
                    let left = self.notices.left.notified();
                    tokio::pin!(left);
                    left.as_mut().enable();
                    let state = if worker.state == WorkerState::Offline {
                        "offline"
                    } else {
                        "draining"
                    };
                    let frame = json!({"type": "leaving", "state": state});
                    if self.notices.send(frame) {
                        let _ = tokio::time::timeout(Duration::from_secs(2), left).await;
                    }
                }
                _ => self.notices.present(&worker.lanes),
            }
            Ok(())
        })
    }

    fn touch_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<WorkerState>> {
        Box::pin(async move {
            self.notices.present(&worker.lanes);
            self.standing()
        })
    }

    fn drain_worker(&self, _id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.unsupported("drain")
    }

    fn workers(&self) -> BoxFuture<'_, StoreResult<Vec<WorkerRecord>>> {
        self.unsupported("workers")
    }

    fn purge_completed(
        &self,
        _before: Timestamp,
        _limit: usize,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.unsupported("purge")
    }

    fn effects(&self, _id: ItemId) -> BoxFuture<'_, StoreResult<Vec<EffectRecord>>> {
        self.unsupported("effects")
    }

    fn cancel(&self, _id: ItemId, _now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.unsupported("cancel")
    }

    fn release_worker(&self, _owner: String, _now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.unsupported("release")
    }

    fn outbox_stats(&self, _now: Timestamp) -> BoxFuture<'_, StoreResult<OutboxStats>> {
        self.unsupported("outbox_stats")
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        self.unsupported("counts")
    }

    fn ages(
        &self,
        _lanes: Vec<String>,
        _now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<LaneAges>>> {
        self.unsupported("ages")
    }

    fn lease_backend(&self) -> Option<Arc<dyn Backend>> {
        if self.keeper {
            return None;
        }
        // Its own HTTP connections, made on the keeper's runtime when it first calls; the
        // same session and identity.
        let client = Client::new(Arc::clone(&self.client.shared)).ok()?;
        Some(Arc::new(RemoteBackend {
            client,
            notices: Arc::clone(&self.notices),
            beats: batch::Heartbeats::default(),
            keeper: true,
        }))
    }

    fn wait_for_work(&self, lane: String, max: Duration) -> BoxFuture<'_, ()> {
        let notify = self.notices.lane(&lane);
        Box::pin(async move {
            let _ = tokio::time::timeout(max, notify.notified()).await;
        })
    }

    fn remote(&self) -> Option<&dyn super::backend::RemoteSide> {
        Some(self)
    }
}

impl RemoteBackend {
    fn standing(&self) -> StoreResult<WorkerState> {
        match self.notices.standing() {
            Standing::Working => Ok(WorkerState::Online),
            Standing::Drain => Ok(WorkerState::Draining),
            Standing::UpgradeRequired => Err(StoreError::UpgradeRequired {
                min: 0,
                max: 0,
                speaks: self.client.shared.config.protocol,
            }),
            Standing::Revoked => Err(StoreError::Revoked),
        }
    }
}

impl super::backend::RemoteSide for RemoteBackend {
    fn worker_id(&self) -> &str {
        &self.client.shared.identity.worker_id
    }

    fn state_dir(&self) -> &std::path::Path {
        &self.client.shared.config.state_dir
    }

    fn notice(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.notices.changed.notified())
    }

    fn standing(&self) -> StoreResult<WorkerState> {
        RemoteBackend::standing(self)
    }
}
