//! What a handler runs under: the claim's item id and fence, and the fenced calls it may
//! make (effects recorded once, checkpoints), and the job's files (its verified inputs, the
//! outputs it uploads, its workspace).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::artifacts::{self, Workspaces};
use crate::error::{StoreError, WorkError};
use crate::item::{ArtifactRef, Claimed, EffectStart, Fence, Held, ItemId};
use crate::resources::{ResourceError, Resources};
use crate::store::Store;
use crate::time::Timestamp;

/// The context of one claim. Built by the work loop (or the testing helpers) from the claim;
/// a handler never builds one.
#[derive(Debug, Clone)]
pub struct WorkContext {
    inner: Arc<Inner>,
    /// The loop's resources (shared: cloning them clones a map of `Arc`s).
    resources: Resources,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    held: Held,
    /// The lease the loop takes: what a fenced effect check renews it for.
    lease: Duration,
    checkpoint: Mutex<Option<Value>>,
    /// The account the item is of (whose artifacts it reads and writes).
    account: String,
    /// The inputs the claim carried (a remote worker's); empty when it carried none, and
    /// then looked up when a handler asks for one (a local loop's).
    inputs: Vec<ArtifactRef>,
    files: Mutex<Files>,
}

/// The job's files so far.
#[derive(Debug)]
struct Files {
    /// Where the job's directory goes: the loop's, or (a context built without one) a
    /// private folder under the system's temporary directory, named when first needed.
    workspaces: Option<Arc<Workspaces>>,
    /// The job's directory, once made.
    dir: Option<PathBuf>,
    /// Inputs fetched and verified, by name.
    fetched: BTreeMap<String, PathBuf>,
    /// Outputs stored, in the order first stored (one per name: the last stored).
    outputs: Vec<ArtifactRef>,
}

/// What [`WorkContext::once`] hands the effect's closure: the idempotency key to give the
/// provider (the same on every attempt of this effect of this item, and unique across
/// databases: the store's id, the item's id and the effect's key), and the lease the store
/// confirmed before the closure started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    key: String,
    lease_expires_at: Timestamp,
    verified_at: Timestamp,
}

impl Effect {
    /// The idempotency key: `<store id>-<item id>-<effect key>`. Pass it to the provider
    /// (an `Idempotency-Key` header, a request id) so that a call the queue cannot take back
    /// (one made just before a crash, or by a holder stopped inside the closure) is not made
    /// twice by the provider either.
    pub fn idempotency_key(&self) -> &str {
        &self.key
    }

    /// Until when the store confirmed this holder's lease (renewed by the check).
    pub fn lease_expires_at(&self) -> Timestamp {
        self.lease_expires_at
    }

    /// When the store checked the lease, by its clock.
    pub fn verified_at(&self) -> Timestamp {
        self.verified_at
    }
}

impl WorkContext {
    /// The context of `claimed`, whose loop takes leases of `lease`: fenced writes present
    /// the claim's item, fence and owner.
    pub fn new(store: Store, claimed: &Claimed, lease: Duration) -> Self {
        WorkContext {
            inner: Arc::new(Inner {
                store,
                held: claimed.held(),
                lease,
                checkpoint: Mutex::new(claimed.item.checkpoint.clone()),
                account: claimed.item.account.clone(),
                inputs: claimed.inputs.clone(),
                files: Mutex::new(Files {
                    workspaces: None,
                    dir: None,
                    fetched: BTreeMap::new(),
                    outputs: Vec::new(),
                }),
            }),
            resources: Resources::new(),
        }
    }

    /// This context with its workspace under `workspaces` (the loop's).
    #[must_use]
    pub fn with_workspaces(self, workspaces: Workspaces) -> Self {
        self.with_shared_workspaces(Arc::new(workspaces))
    }

    /// [`with_workspaces`](Self::with_workspaces) without a copy of the loop's.
    pub(crate) fn with_shared_workspaces(self, workspaces: Arc<Workspaces>) -> Self {
        self.lock_files().workspaces = Some(workspaces);
        self
    }

    /// This context with `resources` (the loop's) for [`resource`](Self::resource).
    pub fn with_resources(self, resources: Resources) -> Self {
        WorkContext { resources, ..self }
    }

    /// The resource of type `T` registered on the loop: a provider's client, which a
    /// handler calls instead of the provider itself (so its test runs on the twin). A type
    /// the loop does not hold is `Permanent` (declare it in `WorkHandler::needs` and `build`
    /// refuses the loop instead); one whose setup fails is `Transient`, retried once the
    /// setting is fixed.
    pub fn resource<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, WorkError> {
        self.resources.get::<T>().map_err(|e| match e {
            ResourceError::Missing { .. } => WorkError::Permanent(e.to_string()),
            ResourceError::Failed { .. } => WorkError::Transient(e.to_string()),
        })
    }

    /// The item's id.
    pub fn item_id(&self) -> ItemId {
        self.inner.held.id
    }

    /// The claim's fencing token: pass it to business writes that must refuse a stale holder.
    pub fn fence(&self) -> Fence {
        self.inner.held.fence
    }

    /// The claim as the store checks it: item, fence and holder.
    pub fn held(&self) -> &Held {
        &self.inner.held
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Runs effect `key` of this item at most once: when the store has it recorded, its
    /// recorded output comes back and `f` does not run. Otherwise the store checks, in the
    /// same call, that this claim still holds a live lease (and renews it); a holder whose
    /// lease has passed to another gets [`WorkError::LeaseLost`] and `f` never runs. Then `f`
    /// runs with the effect's [`Effect::idempotency_key`] (and only if, by the store's clock,
    /// the confirmed lease has not run out while the answer travelled), and its output is recorded
    /// (fenced: a holder that lost the lease while `f` ran records nothing).
    ///
    /// What the queue cannot close is the window inside `f`: a holder stopped there (a
    /// pause, a partition) past its lease may finish the call after another holder made it.
    /// Give the provider the idempotency key, and it answers the second call with the
    /// first's result.
    pub async fn once<T, F, Fut>(&self, key: &str, f: F) -> Result<T, WorkError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(Effect) -> Fut,
        Fut: Future<Output = Result<T, WorkError>>,
    {
        let store = &self.inner.store;
        let held = &self.inner.held;
        // Read before the check: nothing may await between the check and `f`.
        let idempotency_key = format!("{}-{}-{key}", store.store_id().await?, held.id);
        let started = store
            .begin_effect(held, key, self.inner.lease)
            .await
            .map_err(lost)?;
        let (lease_expires_at, verified_at) = match started {
            EffectStart::Recorded(done) => {
                return serde_json::from_value(done).map_err(|e| {
                    WorkError::Permanent(format!("recorded effect `{key}` does not decode: {e}"))
                });
            }
            EffectStart::Run {
                lease_expires_at,
                verified_at,
            } => (lease_expires_at, verified_at),
        };
        // The store's answer may have waited (a paused process, a slow socket): run `f`
        // only while the lease it confirmed still runs by this clock, with no await between
        // this look and `f`'s first line.
        if store.now() >= lease_expires_at {
            return Err(WorkError::LeaseLost {
                id: held.id,
                fence: held.fence,
            });
        }
        let effect = Effect {
            key: idempotency_key,
            lease_expires_at,
            verified_at,
        };
        let out = f(effect).await?;
        let value = serde_json::to_value(&out).map_err(StoreError::from)?;
        store.record_effect(held, key, value).await.map_err(lost)?;
        Ok(out)
    }

    /// The item's checkpoint as last written (by this claim or an earlier one).
    pub fn checkpoint_state(&self) -> Option<Value> {
        self.lock_checkpoint().clone()
    }

    /// Stores `state` as the item's checkpoint (fenced).
    pub async fn checkpoint(&self, state: Value) -> Result<(), WorkError> {
        self.inner
            .store
            .checkpoint(&self.inner.held, state.clone())
            .await
            .map_err(lost)?;
        *self.lock_checkpoint() = Some(state);
        Ok(())
    }

    /// An orchestration step: returns the checkpointed result of step `name` when an earlier
    /// run finished it; otherwise runs `f` and checkpoints its result before returning it, so
    /// a restarted worker resumes after the last finished step.
    pub async fn step<T, F, Fut>(&self, name: &str, f: F) -> Result<T, WorkError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, WorkError>>,
    {
        let done = self
            .checkpoint_state()
            .and_then(|c| c.get("steps").and_then(|s| s.get(name)).cloned());
        if let Some(done) = done {
            return serde_json::from_value(done).map_err(|e| {
                WorkError::Permanent(format!("checkpointed step `{name}` does not decode: {e}"))
            });
        }
        let out = f().await?;
        let value = serde_json::to_value(&out).map_err(crate::error::StoreError::from)?;
        let mut state = self
            .checkpoint_state()
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        if !state.get("steps").is_some_and(Value::is_object) {
            state["steps"] = serde_json::json!({});
        }
        state["steps"][name] = value;
        self.checkpoint(state).await?;
        Ok(out)
    }

    /// The names of the steps finished so far.
    pub fn finished_steps(&self) -> Vec<String> {
        self.checkpoint_state()
            .and_then(|c| {
                c.get("steps")
                    .and_then(Value::as_object)
                    .map(|m| m.keys().cloned().collect())
            })
            .unwrap_or_default()
    }

    /// The job's own directory (`<workspaces>/<item>-<fence>`, private to this user),
    /// made when first asked for; kept or removed after the outcome as the loop's
    /// [`Cleanup`](crate::artifacts::Cleanup) says.
    pub fn workspace(&self) -> Result<PathBuf, WorkError> {
        let mut files = self.lock_files();
        if let Some(dir) = &files.dir {
            return Ok(dir.clone());
        }
        let held = &self.inner.held;
        let dir = files
            .workspaces
            .get_or_insert_with(|| Arc::new(Workspaces::in_temp()))
            .root
            .join(format!("{}-{}", held.id, held.fence));
        artifacts::fresh_private_dir(&dir)
            .map_err(|e| WorkError::Transient(format!("cannot make the job's workspace: {e}")))?;
        files.dir = Some(dir.clone());
        Ok(dir)
    }

    /// The file of input `name`, fetched and verified by its SHA-256 and size before this
    /// returns (a remote worker's loop fetches every input before the handler starts). An
    /// input the item does not have, one that is not stored, or one whose bytes do not match
    /// is [`WorkError::Permanent`]: retrying cannot make it right.
    pub async fn input(&self, name: &str) -> Result<PathBuf, WorkError> {
        if let Some(path) = self.lock_files().fetched.get(name) {
            return Ok(path.clone());
        }
        let inputs = if self.inner.inputs.is_empty() {
            self.inner
                .store
                .item_inputs(self.inner.held.id)
                .await
                .map_err(WorkError::Store)?
        } else {
            self.inner.inputs.clone()
        };
        let input = inputs
            .into_iter()
            .find(|i| i.name == name)
            .ok_or_else(|| WorkError::Permanent(format!("the item has no input `{name}`")))?;
        self.fetch(&input).await
    }

    /// Every input the claim carried, fetched and verified (the loop's, before the
    /// handler).
    pub(crate) async fn fetch_inputs(&self) -> Result<(), WorkError> {
        for input in &self.inner.inputs {
            self.fetch(input).await?;
        }
        Ok(())
    }

    async fn fetch(&self, input: &ArtifactRef) -> Result<PathBuf, WorkError> {
        if let Some(problem) = artifacts::name_problem(&input.name) {
            return Err(WorkError::Permanent(format!(
                "an input's name is refused ({problem}); the handler did not run"
            )));
        }
        if !artifacts::is_sha256_hex(&input.sha256) || input.size > artifacts::MAX_ARTIFACT_BYTES {
            return Err(WorkError::Permanent(format!(
                "input `{}` names no valid digest or is over {} bytes",
                input.name,
                artifacts::MAX_ARTIFACT_BYTES
            )));
        }
        let bytes = self
            .inner
            .store
            .fetch_artifact(&self.inner.account, &input.sha256, input.size)
            .await
            .map_err(WorkError::Store)?
            .ok_or_else(|| {
                WorkError::Permanent(format!(
                    "input `{}` ({}) is not stored for this account",
                    input.name, input.sha256
                ))
            })?;
        if let Some(why) = artifacts::mismatch(&bytes, &input.sha256, input.size) {
            return Err(WorkError::Permanent(format!(
                "input `{}` failed its SHA-256 check ({why}); nothing ran on it",
                input.name
            )));
        }
        let dir = self.workspace()?.join("inputs");
        let path = dir.join(&input.name);
        write_private(&dir, &path, &bytes).map_err(|e| {
            WorkError::Transient(format!("cannot keep input `{}`: {e}", input.name))
        })?;
        self.lock_files()
            .fetched
            .insert(input.name.clone(), path.clone());
        Ok(path)
    }

    /// Stores `bytes` as output `name` of this attempt now (a partial result is stored as
    /// soon as it is made), checking the store's answer; a completion names every output
    /// stored. Storing a name again replaces it. `name` is a file name, never a path or a
    /// URI: outputs are found by their digest.
    pub async fn output(
        &self,
        name: &str,
        bytes: impl Into<Vec<u8>>,
    ) -> Result<ArtifactRef, WorkError> {
        if let Some(problem) = artifacts::name_problem(name) {
            return Err(WorkError::Permanent(format!(
                "output name `{}` refused: {problem}",
                name.chars().take(64).collect::<String>()
            )));
        }
        let bytes = bytes.into();
        if bytes.len() as u64 > artifacts::MAX_ARTIFACT_BYTES {
            return Err(WorkError::Permanent(format!(
                "output `{name}` is over {} bytes",
                artifacts::MAX_ARTIFACT_BYTES
            )));
        }
        let output = ArtifactRef {
            name: name.to_owned(),
            sha256: artifacts::sha256_hex(&bytes),
            size: bytes.len() as u64,
        };
        self.inner
            .store
            .put_output(&self.inner.held, &self.inner.account, output.clone(), bytes)
            .await
            .map_err(lost)?;
        let mut files = self.lock_files();
        files.outputs.retain(|o| o.name != name);
        files.outputs.push(output.clone());
        Ok(output)
    }

    /// [`output`](Self::output) with the bytes of the file at `path` (refused past the
    /// largest artifact without reading further).
    pub async fn output_file(
        &self,
        name: &str,
        path: impl AsRef<Path>,
    ) -> Result<ArtifactRef, WorkError> {
        let bytes = artifacts::read_capped(path.as_ref()).map_err(|e| {
            WorkError::Permanent(format!("cannot read the file of output `{name}`: {e}"))
        })?;
        self.output(name, bytes).await
    }

    /// The outputs stored so far (what a completion names).
    pub fn outputs(&self) -> Vec<ArtifactRef> {
        self.lock_files().outputs.clone()
    }

    /// Removes the job's workspace if the cleanup policy allows it for an attempt that
    /// `completed` (or did not); a failed removal is logged, never the attempt's failure.
    pub(crate) fn clean_up(&self, completed: bool) {
        let files = self.lock_files();
        let (Some(dir), Some(workspaces)) = (&files.dir, &files.workspaces) else {
            return;
        };
        if workspaces.cleanup.removes(completed)
            && let Err(e) = std::fs::remove_dir_all(dir)
        {
            tracing::warn!(error = %e, "could not remove the job's workspace");
        }
    }

    fn lock_files(&self) -> std::sync::MutexGuard<'_, Files> {
        self.inner
            .files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_checkpoint(&self) -> std::sync::MutexGuard<'_, Option<Value>> {
        self.inner
            .checkpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A fenced call refused because the lease is gone is [`WorkError::LeaseLost`]; any other
/// store error stays what it is.
fn lost(e: StoreError) -> WorkError {
    match e {
        StoreError::StaleLease { id, fence } => WorkError::LeaseLost { id, fence },
        other => WorkError::Store(other),
    }
}

/// Writes `bytes` as `path` in `dir` (made private first), readable by this user only: a
/// new file under a name of its own, then renamed over `path` (two fetches of one input
/// each land whole).
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    artifacts::private_dir(dir)?;
    let staged = dir.join(format!(".fetch-{:016x}", crate::retry::random_u64()));
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600);
    }
    let written = open.open(&staged).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&staged, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            Err(e)
        }
    }
}
