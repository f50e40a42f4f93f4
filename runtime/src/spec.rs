//! Work kinds as the registry declares them (`om`'s `KINDS`, DESIGN §7.1).

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
