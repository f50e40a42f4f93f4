//! Helpers for handler tests: the in-memory twin with a hand-moved clock
//! ([`MemoryContainer`]), [`item`] and [`run_twice`]. With the `conformance` feature, the
//! backend conformance suite ([`conformance`]).

#[cfg(feature = "conformance")]
pub mod conformance;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::handler::{WorkHandler, decode};
use crate::item::{ItemRecord, NewItem};
use crate::resources::Resources;
use crate::store::Store;
use crate::store::memory::MemoryBackend;
use crate::time::ManualClock;

/// The in-memory store and its clock, for tests.
#[derive(Debug, Clone)]
pub struct MemoryContainer {
    pub store: Store,
    pub clock: Arc<ManualClock>,
    /// What [`run_twice`]'s contexts give handlers through `WorkContext::resource`: a
    /// provider's twin, registered with [`with_resource`](Self::with_resource).
    pub resources: Resources,
}

impl MemoryContainer {
    /// An empty in-memory store whose clock starts at the current time and moves only when
    /// told.
    pub fn new() -> Self {
        let clock = ManualClock::starting_now();
        let store = Store::from_backend(Arc::new(MemoryBackend::new()), clock.clone());
        MemoryContainer {
            store,
            clock,
            resources: Resources::new(),
        }
    }

    /// This container with `value` as the resource of type `T` (a provider's twin).
    pub fn with_resource<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.resources.insert(value);
        self
    }
}

impl Default for MemoryContainer {
    fn default() -> Self {
        Self::new()
    }
}

/// An item of `kind` whose payload is `payload` serialised (pass it by value or by reference).
pub fn item<P: Serialize>(kind: &str, payload: P) -> NewItem {
    let payload = serde_json::to_value(&payload).expect("a test payload serialises to JSON");
    NewItem::new(kind, payload)
}

const TEST_LEASE: Duration = Duration::from_secs(30);

/// Enqueues `item`, claims it and runs `handler` on it without completing (as if the worker
/// died right after the handler returned), lets the lease expire, claims it again and runs
/// `handler` a second time, then completes it. Returns the completed item. A handler that is
/// not idempotent shows it here: effects made through [`WorkContext::once`] happen once.
pub async fn run_twice<H: WorkHandler>(
    container: &MemoryContainer,
    handler: &H,
    item: NewItem,
) -> Result<ItemRecord, WorkError> {
    let store = &container.store;
    let id = store.enqueue(item).await?;
    for run in 0..2 {
        let claimed = store
            .claim(&lookup(store, id).await?.lane, 1, TEST_LEASE)
            .await?
            .into_iter()
            .find(|c| c.item.id == id)
            .ok_or(StoreError::NotFound(id))?;
        let ctx = WorkContext::new(store.clone(), &claimed, TEST_LEASE)
            .with_resources(container.resources.clone());
        let typed = decode::<H::Payload>(&claimed.item, claimed.fence)?;
        handler.handle(&ctx, &typed).await?;
        if run == 0 {
            container
                .clock
                .advance(TEST_LEASE + Duration::from_millis(1));
            store.sweep().await?;
        } else {
            store.complete(&claimed.held()).await?;
        }
    }
    Ok(lookup(store, id).await?)
}

async fn lookup(store: &Store, id: crate::item::ItemId) -> Result<ItemRecord, StoreError> {
    store.get(id).await?.ok_or(StoreError::NotFound(id))
}
