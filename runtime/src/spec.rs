//! Work kinds as the registry declares them (`om`'s `KINDS`, docs/reference.md#the-work-queue-scaffold-runtime).

use crate::item::{DEFAULT_LANE, DEFAULT_MAX_ATTEMPTS, NewItem};

/// One registered kind. Generated code writes
/// `WorkKindSpec { name: "X", permission: "p", lane: "default", ..WorkKindSpec::DEFAULT }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkKindSpec {
    /// The kind (`NOTIFY_SHIPMENT`).
    pub name: &'static str,
    /// The permission a producer needs to ask for the kind; its handler's `REQUIRES` holds it.
    pub permission: &'static str,
    /// The lane its items ride.
    pub lane: &'static str,
    /// The payload type's name (documentation for readers and the checker).
    pub payload: &'static str,
    /// Attempts before an item of the kind is dead.
    pub max_attempts: i32,
}

impl WorkKindSpec {
    /// The defaults the `..WorkKindSpec::DEFAULT` tail fills in.
    pub const DEFAULT: WorkKindSpec = WorkKindSpec {
        name: "",
        permission: "",
        lane: DEFAULT_LANE,
        payload: "",
        max_attempts: DEFAULT_MAX_ATTEMPTS,
    };
}

impl WorkKindSpec {
    /// An item of this kind with `payload`, on the spec's lane and with its `max_attempts`:
    /// how a producer or the relay lands an item where the spec says.
    pub fn item(&self, payload: serde_json::Value) -> NewItem {
        NewItem::new(self.name, payload)
            .lane(self.lane)
            .max_attempts(self.max_attempts)
    }
}

/// One long-running kind (docs/reference.md#the-work-queue-scaffold-runtime): a sequence of named steps, each
/// result checkpointed (`WorkContext::step`), parked on a time or a signal between them.
/// Its items are `ORCHESTRATION` work items naming it (payload `{orchestration, input}`),
/// so every orchestration kind rides that kind's lane: none has a lane of its own.
/// Generated code writes
/// `OrchestrationKindSpec { name: "X", permission: "p", steps: &["a", "b"], ..OrchestrationKindSpec::DEFAULT }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrchestrationKindSpec {
    /// The orchestration (`SYNC_LEDGER`): what an item's payload names.
    pub name: &'static str,
    /// The permission a producer needs to start it.
    pub permission: &'static str,
    /// The input type's name (documentation for readers and the checker).
    pub input: &'static str,
    /// Its steps, in order, by the names the worker checkpoints them under.
    pub steps: &'static [&'static str],
}

impl OrchestrationKindSpec {
    /// The defaults the `..OrchestrationKindSpec::DEFAULT` tail fills in.
    pub const DEFAULT: OrchestrationKindSpec = OrchestrationKindSpec {
        name: "",
        permission: "",
        input: "",
        steps: &[],
    };
}

/// Every namespace's slice of orchestration specs (`om::ORCHESTRATION_KINDS`).
pub type OrchestrationRegistry = &'static [&'static [OrchestrationKindSpec]];

/// The spec of orchestration `name` in `registry`.
pub fn find_orchestration(
    registry: &[&[OrchestrationKindSpec]],
    name: &str,
) -> Option<OrchestrationKindSpec> {
    registry
        .iter()
        .flat_map(|ns| ns.iter())
        .find(|s| s.name == name)
        .copied()
}

/// The registry: every namespace's slice of specs (`om::KINDS`).
pub type Registry = &'static [&'static [WorkKindSpec]];

/// The spec of `kind` in `registry`.
pub fn find_kind(registry: &[&[WorkKindSpec]], kind: &str) -> Option<WorkKindSpec> {
    registry
        .iter()
        .flat_map(|ns| ns.iter())
        .find(|s| s.name == kind)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEDGER: &[OrchestrationKindSpec] = &[OrchestrationKindSpec {
        name: "SYNC_LEDGER",
        steps: &["fetch", "apply"],
        ..OrchestrationKindSpec::DEFAULT
    }];

    #[test]
    fn an_orchestration_is_found_by_name_in_its_namespace_slice() {
        let registry: OrchestrationRegistry = &[&[], LEDGER];
        let spec = find_orchestration(registry, "SYNC_LEDGER").expect("found");
        assert_eq!(spec.steps, ["fetch", "apply"]);
        assert!(find_orchestration(registry, "SYNC").is_none());
    }
}
