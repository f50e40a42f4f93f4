//! Building a work loop, and what it refuses at build.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::error::BuildError;
use crate::handler::{DynHandler, Erased, WorkHandler};
use crate::item::DEFAULT_LANE;
use crate::resources::Resources;
use crate::retry::RetryPolicy;
use crate::spec::WorkKindSpec;
use crate::store::Store;
use crate::work_loop::{Config, Observer, WorkLoop};

/// Builds a [`WorkLoop`]: `WorkLoop::builder(store, KINDS).handler(H).lane("default")
/// .concurrency(8).lease(Duration::from_secs(30)).build()?`.
pub struct WorkLoopBuilder {
    store: Store,
    registry: Vec<WorkKindSpec>,
    handlers: Vec<Arc<dyn DynHandler>>,
    lanes: Vec<String>,
    config: Config,
    observer: Option<Observer>,
    resources: Resources,
}

impl std::fmt::Debug for WorkLoopBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkLoopBuilder")
            .field("lanes", &self.lanes)
            .field(
                "handlers",
                &self.handlers.iter().map(|h| h.kind()).collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .field("resources", &self.resources)
            .finish_non_exhaustive()
    }
}

impl WorkLoopBuilder {
    pub(crate) fn new(store: Store, registry: &[&[WorkKindSpec]]) -> Self {
        WorkLoopBuilder {
            store,
            registry: registry.iter().flat_map(|ns| ns.iter().copied()).collect(),
            handlers: Vec::new(),
            lanes: Vec::new(),
            config: Config::default(),
            observer: None,
            resources: Resources::new(),
        }
    }

    /// Adds the handler of one kind.
    #[must_use]
    pub fn handler<H: WorkHandler>(mut self, handler: H) -> Self {
        self.handlers.push(Arc::new(Erased(handler)));
        self
    }

    /// Serves `lane` (call once per lane). When never called, the loop serves the lanes its
    /// handlers' specs name (`default` when it has no handler), so the spec stays the one
    /// place a kind's lane is spelled.
    #[must_use]
    pub fn lane(mut self, lane: impl Into<String>) -> Self {
        self.lanes.push(lane.into());
        self
    }

    /// How many handlers run at once (default 8).
    #[must_use]
    pub fn concurrency(mut self, n: usize) -> Self {
        self.config.concurrency = n;
        self
    }

    /// How many items the loop holds claimed at most, running or waiting to run; claims
    /// take up to this many at once (default: the concurrency, and never less). Items whose
    /// handlers finished and whose outcomes are still being written count apart, up to
    /// twice as many again, so the next claim overlaps the last batches' write-back. A larger
    /// prefetch saves round trips on short items; the cost is what a killed worker strands
    /// until its leases expire, and items held back from idle workers beside it. Items
    /// prefetched and not started are released at once on drain.
    #[must_use]
    pub fn prefetch(mut self, n: usize) -> Self {
        self.config.prefetch = Some(n);
        self
    }

    /// The most items one claim asks for (default: as many as the prefetch has room for).
    /// A remote store's coordinator allows 100 a claim whatever this says; a direct store
    /// given the same bound claims as a remote worker does (`scaffold queue bench --remote`
    /// compares the two so).
    #[must_use]
    pub fn claim_batch(mut self, n: usize) -> Self {
        self.config.claim_batch = Some(n.max(1));
        self
    }

    /// The lease each claim takes and each heartbeat renews (default 30 s).
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.config.lease = lease;
        self
    }

    /// The backoff of transient failures.
    #[must_use]
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.config.retry = policy;
        self
    }

    /// How long a drain lets in-flight handlers finish before cancelling and releasing them
    /// (default 30 s).
    #[must_use]
    pub fn drain_timeout(mut self, d: Duration) -> Self {
        self.config.drain_timeout = d;
        self
    }

    /// How long an idle lane waits before claiming again (default 200 ms).
    #[must_use]
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.config.poll_interval = d;
        self
    }

    /// How often the loop sweeps expired leases and touches its worker row (default 1 s).
    #[must_use]
    pub fn sweep_interval(mut self, d: Duration) -> Self {
        self.config.sweep_interval = d;
        self
    }

    /// Whether each sweep tick also relays outbox rows into items (default true; turn it
    /// off where a dedicated [`crate::Relay`] runs).
    #[must_use]
    pub fn relay_outbox(mut self, on: bool) -> Self {
        self.config.relay = on;
        self
    }

    /// Retention: each sweep tick deletes items completed more than `keep` ago, with their
    /// effects, outbox rows relayed more than `keep` ago, and OFFLINE workers last seen
    /// more than `keep` ago, so no table grows without bound (default: keep everything).
    /// `Duration::ZERO` deletes them at the next tick.
    #[must_use]
    pub fn retain_completed(mut self, keep: Duration) -> Self {
        self.config.retain_completed = Some(keep);
        self
    }

    /// Claims only items of these kinds (default: every kind on the loop's lanes); a
    /// claim of another kind's items is never made, so a loop of a worker enrolled for some
    /// kinds of a lane leaves the others to their workers.
    #[must_use]
    pub fn claim_only(mut self, kinds: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.config.kinds = Some(kinds.into_iter().map(Into::into).collect());
        self
    }

    /// The worker's id in `workers` (default: `worker-<pid>-<random>`).
    #[must_use]
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.config.worker_id = Some(id.into());
        self
    }

    /// Called on every item outcome the store answered (completions, stale rejections, …).
    #[must_use]
    pub fn observer(
        mut self,
        observer: impl Fn(&crate::work_loop::LoopEvent) + Send + Sync + 'static,
    ) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Registers `value` as the resource of type `T` that handlers reach with
    /// [`WorkContext::resource`](crate::WorkContext::resource).
    pub fn resource<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.resources.insert(value);
        self
    }

    /// Registers `init` as what builds the resource of type `T` on first use (or at
    /// [`WorkLoop::init_resources`]), so building the loop reads no setting.
    pub fn resource_with<T, F>(mut self, init: F) -> Self
    where
        T: Send + Sync + 'static,
        F: Fn() -> Result<T, String> + Send + Sync + 'static,
    {
        self.resources.insert_with(init);
        self
    }

    /// Keeps jobs' workspaces (their fetched inputs and scratch files) under `root`,
    /// removed after the outcome as `cleanup` says.
    pub fn workspaces(
        mut self,
        root: impl Into<std::path::PathBuf>,
        cleanup: crate::artifacts::Cleanup,
    ) -> Self {
        self.config.workspaces = Some(crate::artifacts::Workspaces::new(root, cleanup));
        self
    }

    /// Checks the handlers against the registry and builds the loop. Refuses a handler for a
    /// kind the registry does not hold, a kind registered on a lane this loop serves with no
    /// handler, a handler whose `REQUIRES` lacks its spec's permission, and a handler that
    /// needs a resource not registered.
    pub fn build(self) -> Result<WorkLoop, BuildError> {
        if self.config.concurrency == 0 {
            return Err(BuildError::ZeroConcurrency);
        }
        let mut specs: BTreeMap<&'static str, WorkKindSpec> = BTreeMap::new();
        for spec in &self.registry {
            if specs.insert(spec.name, *spec).is_some() {
                return Err(BuildError::DuplicateKind {
                    kind: spec.name.to_owned(),
                });
            }
        }
        let mut handlers: BTreeMap<&'static str, Arc<dyn DynHandler>> = BTreeMap::new();
        for h in self.handlers {
            let kind = h.kind();
            let spec = specs.get(kind).ok_or_else(|| BuildError::UnknownKind {
                kind: kind.to_owned(),
            })?;
            if !h.requires().contains(&spec.permission) {
                return Err(BuildError::PermissionNotGranted {
                    kind: kind.to_owned(),
                    permission: spec.permission.to_owned(),
                    requires: h.requires().iter().map(|s| (*s).to_owned()).collect(),
                });
            }
            if let Some(resource) = h.needs().first_missing(&self.resources) {
                return Err(BuildError::MissingResource {
                    kind: kind.to_owned(),
                    resource,
                });
            }
            if handlers.insert(kind, h).is_some() {
                return Err(BuildError::DuplicateHandler {
                    kind: kind.to_owned(),
                });
            }
        }
        let mut lanes: BTreeSet<String> = self.lanes.into_iter().collect();
        if lanes.is_empty() {
            lanes.extend(
                handlers
                    .keys()
                    .filter_map(|k| specs.get(k))
                    .map(|s| s.lane.to_owned()),
            );
        }
        if lanes.is_empty() {
            lanes.insert(DEFAULT_LANE.to_owned());
        }
        if let Some(spec) = specs
            .values()
            .find(|s| lanes.contains(s.lane) && !handlers.contains_key(s.name))
        {
            return Err(BuildError::MissingHandler {
                kind: spec.name.to_owned(),
                lane: spec.lane.to_owned(),
            });
        }
        Ok(WorkLoop::from_parts(
            self.store,
            handlers,
            lanes.into_iter().collect(),
            self.config,
            self.observer,
            self.resources,
        ))
    }
}
