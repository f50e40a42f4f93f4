//! The coordinator's tables in memory (see [`crate::store::coordinator`]).

use std::collections::BTreeMap;

use super::MemoryBackend;
use crate::error::StoreError;
use crate::item::{ArtifactRef, Held, ItemId, ItemState, NewItem, WorkerRecord, WorkerState};
use crate::store::coordinator::{
    ArtifactRole, CoordinatorStore, ItemArtifact, NewDevice, NewEnrollment, Redeemed, RemoteWorker,
    SessionRecord,
};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

#[derive(Debug, Default)]
pub(super) struct RemoteState {
    /// Each token's enrollment, when it was used, and whether it was revoked unused.
    enrollments: BTreeMap<String, (NewEnrollment, Option<Timestamp>, bool)>,
    workers: BTreeMap<String, RemoteWorker>,
    nonces: BTreeMap<String, (String, Timestamp)>,
    sessions: BTreeMap<String, SessionRecord>,
    artifacts: BTreeMap<(String, String), (Vec<u8>, Timestamp)>,
    pub(super) item_artifacts: BTreeMap<ItemId, Vec<ItemArtifact>>,
}

impl RemoteState {
    /// Checks that every input of `item` is stored under its account.
    pub(super) fn check_inputs(&self, item: &NewItem) -> StoreResult<()> {
        for input in &item.inputs {
            if !self
                .artifacts
                .contains_key(&(item.account.clone(), input.sha256.clone()))
            {
                return Err(StoreError::ArtifactMissing {
                    account: item.account.clone(),
                    sha256: input.sha256.clone(),
                });
            }
        }
        Ok(())
    }

    /// The unexpired session named by its token's SHA-256, with its worker.
    fn session(
        &self,
        token_sha256: &str,
        now: Timestamp,
    ) -> Option<(&SessionRecord, &RemoteWorker)> {
        let s = self
            .sessions
            .get(token_sha256)
            .filter(|s| s.expires_at > now)?;
        Some((s, self.workers.get(&s.worker_id)?))
    }

    /// Whether the session named by its token's SHA-256 is live and its worker not revoked.
    pub(super) fn session_live(&self, token_sha256: &str, now: Timestamp) -> bool {
        self.session(token_sha256, now)
            .is_some_and(|(_, w)| w.revoked_at.is_none())
    }

    /// Item `id`'s inputs, by name.
    pub(super) fn inputs_of(&self, id: ItemId) -> Vec<ArtifactRef> {
        let mut inputs: Vec<ArtifactRef> = self
            .item_artifacts
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|a| a.role == ArtifactRole::Input)
            .map(|a| a.artifact.clone())
            .collect();
        inputs.sort_by(|a, b| a.name.cmp(&b.name));
        inputs
    }

    /// Attaches `item`'s inputs to item `id`.
    pub(super) fn attach_inputs(&mut self, id: ItemId, item: &NewItem) {
        if item.inputs.is_empty() {
            return;
        }
        let list = self.item_artifacts.entry(id).or_default();
        for input in &item.inputs {
            list.push(ItemArtifact {
                role: ArtifactRole::Input,
                fence: 0,
                artifact: input.clone(),
            });
        }
    }
}

impl CoordinatorStore for MemoryBackend {
    fn create_enrollment(&self, e: NewEnrollment) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        st.remote
            .enrollments
            .insert(e.token_sha256.clone(), (e, None, false));
        drop(st);
        self.ready(Ok(()))
    }

    fn redeem_enrollment(
        &self,
        token_sha256: String,
        device: NewDevice,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Redeemed>> {
        let mut st = self.lock();
        let out = match st.remote.enrollments.get_mut(&token_sha256) {
            None => Redeemed::Unknown,
            Some((_, Some(_), true)) => Redeemed::Revoked,
            Some((_, Some(_), false)) => Redeemed::Spent,
            Some((e, _, _)) if e.expires_at <= now => Redeemed::Expired,
            Some((e, used, _)) => {
                *used = Some(now);
                let worker = RemoteWorker {
                    id: device.id.clone(),
                    name: e.worker_name.clone(),
                    account: e.account.clone(),
                    kinds: e.kinds.clone(),
                    public_key: Some(device.public_key),
                    protocol: device.protocol,
                    enrolled_at: now,
                    revoked_at: None,
                };
                st.remote.workers.insert(device.id.clone(), worker.clone());
                st.workers.insert(
                    device.id.clone(),
                    WorkerRecord {
                        id: device.id,
                        lanes: Vec::new(),
                        state: WorkerState::Registered,
                        started_at: now,
                        last_seen_at: now,
                        lease_ms: 30_000,
                    },
                );
                Redeemed::Enrolled(worker)
            }
        };
        drop(st);
        self.ready(Ok(out))
    }

    fn remote_worker(&self, id: String) -> BoxFuture<'_, StoreResult<Option<RemoteWorker>>> {
        let found = self.lock().remote.workers.get(&id).cloned();
        self.ready(Ok(found))
    }

    fn remote_workers(&self) -> BoxFuture<'_, StoreResult<Vec<RemoteWorker>>> {
        let all = self.lock().remote.workers.values().cloned().collect();
        self.ready(Ok(all))
    }

    fn revoke(&self, who: String, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        let mut st = self.lock();
        let ids: Vec<String> = st
            .remote
            .workers
            .values()
            .filter(|w| w.revoked_at.is_none() && (w.id == who || w.name == who))
            .map(|w| w.id.clone())
            .collect();
        for (e, used, revoked) in st.remote.enrollments.values_mut() {
            if e.worker_name == who && used.is_none() {
                *used = Some(now);
                *revoked = true;
            }
        }
        for id in &ids {
            if let Some(w) = st.remote.workers.get_mut(id) {
                w.public_key = None;
                w.revoked_at = Some(now);
            }
            st.remote.nonces.retain(|_, (w, _)| w != id);
            st.workers.remove(id);
        }
        drop(st);
        self.ready(Ok(ids))
    }

    fn put_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.lock()
            .remote
            .nonces
            .insert(nonce_sha256, (worker_id, expires_at));
        self.ready(Ok(()))
    }

    fn take_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let taken = self.lock().remote.nonces.remove(&nonce_sha256);
        self.ready(Ok(
            taken.is_some_and(|(w, expires)| w == worker_id && expires > now)
        ))
    }

    fn put_session(
        &self,
        token_sha256: String,
        worker_id: String,
        protocol: i64,
        _now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.lock().remote.sessions.insert(
            token_sha256,
            SessionRecord {
                worker_id,
                protocol,
                expires_at,
            },
        );
        self.ready(Ok(()))
    }

    fn session(
        &self,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<(SessionRecord, RemoteWorker)>>> {
        let st = self.lock();
        let found = st
            .remote
            .session(&token_sha256, now)
            .map(|(s, w)| (s.clone(), w.clone()));
        drop(st);
        self.ready(Ok(found))
    }

    fn live_sessions(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        let n = self
            .lock()
            .remote
            .sessions
            .values()
            .filter(|s| s.expires_at > now)
            .count();
        self.ready(Ok(n as u64))
    }

    fn mark_upgrade_required(&self, id: String) -> BoxFuture<'_, StoreResult<()>> {
        if let Some(w) = self.lock().workers.get_mut(&id) {
            w.state = WorkerState::UpgradeRequired;
        }
        self.ready(Ok(()))
    }

    fn put_artifact(
        &self,
        account: String,
        sha256: String,
        bytes: Vec<u8>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.lock()
            .remote
            .artifacts
            .entry((account, sha256))
            .or_insert((bytes, now));
        self.ready(Ok(()))
    }

    fn get_artifact(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>> {
        let found = self
            .lock()
            .remote
            .artifacts
            .get(&(account, sha256))
            .map(|(b, _)| b.clone());
        self.ready(Ok(found))
    }

    fn artifact_size(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        let found = self
            .lock()
            .remote
            .artifacts
            .get(&(account, sha256))
            .map(|(b, _)| b.len() as u64);
        self.ready(Ok(found))
    }

    fn record_outputs(
        &self,
        held: Held,
        account: String,
        outputs: Vec<(String, String)>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let out = (|| {
            st.held(&held, now)?;
            let mut refs = Vec::with_capacity(outputs.len());
            for (name, sha256) in outputs {
                let Some((bytes, _)) = st.remote.artifacts.get(&(account.clone(), sha256.clone()))
                else {
                    return Err(StoreError::ArtifactMissing { account, sha256 });
                };
                refs.push(ItemArtifact {
                    role: ArtifactRole::Output,
                    fence: held.fence,
                    artifact: ArtifactRef {
                        name,
                        sha256,
                        size: bytes.len() as u64,
                    },
                });
            }
            let list = st.remote.item_artifacts.entry(held.id).or_default();
            for r in refs {
                list.retain(|a| {
                    !(a.role == r.role && a.fence == r.fence && a.artifact.name == r.artifact.name)
                });
                list.push(r);
            }
            Ok(())
        })();
        drop(st);
        self.ready(out)
    }

    fn item_artifacts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<ItemArtifact>>> {
        let mut list = self
            .lock()
            .remote
            .item_artifacts
            .get(&id)
            .cloned()
            .unwrap_or_default();
        list.sort_by(|a, b| {
            (a.role, a.fence, &a.artifact.name).cmp(&(b.role, b.fence, &b.artifact.name))
        });
        self.ready(Ok(list))
    }

    fn purge_artifacts(&self, before: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        let named: std::collections::BTreeSet<String> = st
            .remote
            .item_artifacts
            .values()
            .flatten()
            .map(|a| a.artifact.sha256.clone())
            .collect();
        let n = st.remote.artifacts.len();
        st.remote
            .artifacts
            .retain(|(_, sha), (_, at)| *at >= before || named.contains(sha));
        let gone = (n - st.remote.artifacts.len()) as u64;
        drop(st);
        self.ready(Ok(gone))
    }

    fn purge_credentials(
        &self,
        now: Timestamp,
        before: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        let n = st.remote.sessions.len() + st.remote.nonces.len() + st.remote.enrollments.len();
        st.remote.sessions.retain(|_, s| s.expires_at > now);
        st.remote.nonces.retain(|_, (_, e)| *e > now);
        st.remote
            .enrollments
            .retain(|_, (e, _, _)| e.expires_at >= before);
        let left = st.remote.sessions.len() + st.remote.nonces.len() + st.remote.enrollments.len();
        drop(st);
        self.ready(Ok((n - left) as u64))
    }

    fn has_due(
        &self,
        lane: String,
        account: Option<String>,
        kinds: Option<Vec<String>>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let due = self.lock().items.values().any(|r| {
            r.lane == lane
                && matches!(
                    r.state,
                    ItemState::Available | ItemState::Failed | ItemState::Parked
                )
                && r.run_at <= now
                && kinds.as_ref().is_none_or(|k| k.contains(&r.kind))
                && account.as_ref().is_none_or(|a| *a == r.account)
        });
        self.ready(Ok(due))
    }
}
