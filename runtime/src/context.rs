//! What a handler runs under: the claim's item id and fence, and the fenced calls it may
//! make (effects recorded once, checkpoints).

use std::future::Future;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::WorkError;
use crate::item::{Fence, ItemId};
use crate::resources::{ResourceError, Resources};
use crate::store::Store;

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
    id: ItemId,
    fence: Fence,
    checkpoint: Mutex<Option<Value>>,
}

impl WorkContext {
    /// The context of claim (`id`, `fence`) whose stored checkpoint is `checkpoint`.
    pub fn new(store: Store, id: ItemId, fence: Fence, checkpoint: Option<Value>) -> Self {
        WorkContext {
            inner: Arc::new(Inner {
                store,
                id,
                fence,
                checkpoint: Mutex::new(checkpoint),
            }),
            resources: Resources::new(),
        }
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
        self.inner.id
    }

    /// The claim's fencing token: pass it to business writes that must refuse a stale holder.
    pub fn fence(&self) -> Fence {
        self.inner.fence
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Runs `f` unless effect `key` of this item is already recorded, in which case the
    /// recorded output comes back and `f` does not run. The record is fenced: a stale holder
    /// gets `StaleLease` and records nothing.
    pub async fn once<T, F, Fut>(&self, key: &str, f: F) -> Result<T, WorkError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, WorkError>>,
    {
        let store = &self.inner.store;
        if let Some(done) = store.effect(self.inner.id, key).await? {
            return serde_json::from_value(done).map_err(|e| {
                WorkError::Permanent(format!("recorded effect `{key}` does not decode: {e}"))
            });
        }
        let out = f().await?;
        let value = serde_json::to_value(&out).map_err(crate::error::StoreError::from)?;
        store
            .record_effect(self.inner.id, self.inner.fence, key, value)
            .await?;
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
            .checkpoint(self.inner.id, self.inner.fence, state.clone())
            .await?;
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

    fn lock_checkpoint(&self) -> std::sync::MutexGuard<'_, Option<Value>> {
        self.inner
            .checkpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
