//! Work items: what a producer enqueues ([`NewItem`]), what the store holds ([`ItemRecord`]),
//! what a claim hands out ([`Claimed`]) and what a handler sees ([`Item`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::time::Timestamp;

/// An item's id. Items relayed from the outbox carry the outbox row's id.
pub type ItemId = i64;

/// The fencing token: incremented by every claim. Only the holder of the current fence (with
/// an unexpired lease) may heartbeat, checkpoint, complete or fail an item.
pub type Fence = i64;

/// The lane every kind rides unless its spec names another.
pub const DEFAULT_LANE: &str = "default";

/// How many attempts an item gets unless told otherwise.
pub const DEFAULT_MAX_ATTEMPTS: i32 = 25;

/// Where an item is in its life, and who moves it out of each state (River documents its
/// job states the same way). Every move below is one store call, fenced where a worker
/// makes it; an operator's moves are `scaffold queue …` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemState {
    /// Waiting to be claimed once `run_at` has come.
    ///
    /// Out: a claimer of its lane (`Store::claim`) → `Running`; an operator's
    /// `queue cancel` → `Dead`.
    Available,
    /// Claimed: a worker holds the lease (and the fence).
    ///
    /// Out: the holder's completer → `Completed`, `Failed` (transient, attempts left),
    /// `Dead` (permanent, out of attempts, unknown kind, undecodable payload) or `Parked`
    /// (an orchestration waiting); a draining holder → `Available` (released untouched);
    /// the sweeper when the lease has expired (the holder died) → `Available`, or `Dead`
    /// when it was the last attempt; an operator's `queue release <worker>` → `Available`,
    /// `queue cancel` → `Dead`. A write by a holder whose fence is stale is refused.
    Running,
    /// Done. Its dedupe key is free again.
    ///
    /// Out: only the sweep that deletes completed items older than the retention.
    Completed,
    /// Failed with a transient error; claimed again at `run_at` (its backoff).
    ///
    /// Out: a claimer of its lane once `run_at` has come → `Running`; `queue cancel` →
    /// `Dead`.
    Failed,
    /// Out of attempts, permanent error, unknown kind or undecodable payload. Stays until an
    /// operator retries or discards it.
    ///
    /// Out: only an operator: `queue retry` → `Available` (attempts reset; refused while a
    /// live item holds its dedupe key), `queue discard` → deleted with its effects.
    Dead,
    /// An orchestration waiting for a time (`run_at`) or a signal.
    ///
    /// Out: a claimer once `run_at` has come → `Running`; `Store::signal` (`queue signal`)
    /// naming what it waits for → `Available`; `queue cancel` → `Dead`.
    Parked,
}

impl ItemState {
    /// Every state, in the order reports list them.
    pub const ALL: [ItemState; 6] = [
        ItemState::Available,
        ItemState::Running,
        ItemState::Completed,
        ItemState::Failed,
        ItemState::Dead,
        ItemState::Parked,
    ];

    /// The state's name as stored and printed.
    pub const fn as_str(self) -> &'static str {
        match self {
            ItemState::Available => "available",
            ItemState::Running => "running",
            ItemState::Completed => "completed",
            ItemState::Failed => "failed",
            ItemState::Dead => "dead",
            ItemState::Parked => "parked",
        }
    }

    /// Whether the item still holds its dedupe key.
    pub const fn is_live(self) -> bool {
        !matches!(self, ItemState::Completed | ItemState::Dead)
    }
}

impl fmt::Display for ItemState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state name that is not one of [`ItemState::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown item state `{0}` (expected available, running, completed, failed, dead or parked)"
)]
pub struct UnknownState(pub String);

impl FromStr for ItemState {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ItemState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// An item to enqueue. Built with [`NewItem::new`] and the chained setters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewItem {
    /// The work kind (`NOTIFY_SHIPMENT`).
    pub kind: String,
    /// The lane; `default` unless set.
    pub lane: String,
    /// The payload, as JSON.
    pub payload: Value,
    /// Unique among live items: enqueueing a second live item with the same key returns the
    /// first one's id and inserts nothing.
    pub dedupe_key: Option<String>,
    /// Not claimed before this time; now when unset.
    pub run_at: Option<Timestamp>,
    /// Higher is claimed first; 0 unless set.
    pub priority: i32,
    /// Attempts before the item is dead.
    pub max_attempts: i32,
    /// The account the item belongs to: a remote worker claims only its own account's items
    /// (`default` unless set).
    #[serde(default = "default_account")]
    pub account: String,
    /// Artifacts the item's handler reads, already stored under its account
    /// ([`crate::Store::put_artifact`]): a remote worker downloads and checks each before its
    /// handler runs.
    #[serde(default)]
    pub inputs: Vec<ArtifactRef>,
}

/// The account an item belongs to unless its producer names another.
pub const DEFAULT_ACCOUNT: &str = "default";

fn default_account() -> String {
    DEFAULT_ACCOUNT.to_owned()
}

impl NewItem {
    /// The account as the SQL stores keep it: NULL for the default one.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn stored_account(&self) -> Option<&str> {
        (self.account != DEFAULT_ACCOUNT).then_some(self.account.as_str())
    }
}

/// A named artifact of an item: an input attached at enqueue, or an output recorded with a
/// completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    pub name: String,
    /// Lower-case hex SHA-256 of the bytes.
    pub sha256: String,
    pub size: u64,
}

impl NewItem {
    /// An item of `kind` with `payload`, on the default lane, due now.
    pub fn new(kind: impl Into<String>, payload: Value) -> Self {
        NewItem {
            kind: kind.into(),
            lane: DEFAULT_LANE.to_owned(),
            payload,
            dedupe_key: None,
            run_at: None,
            priority: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            account: default_account(),
            inputs: Vec::new(),
        }
    }

    /// Puts the item in `account`.
    #[must_use]
    pub fn account(mut self, account: impl Into<String>) -> Self {
        self.account = account.into();
        self
    }

    /// Attaches `input`, an artifact already stored under the item's account.
    #[must_use]
    pub fn input(mut self, input: ArtifactRef) -> Self {
        self.inputs.push(input);
        self
    }

    /// Puts the item on `lane`.
    #[must_use]
    pub fn lane(mut self, lane: impl Into<String>) -> Self {
        self.lane = lane.into();
        self
    }

    /// Sets the dedupe key.
    #[must_use]
    pub fn dedupe_key(mut self, key: impl Into<String>) -> Self {
        self.dedupe_key = Some(key.into());
        self
    }

    /// Delays the item until `when`.
    #[must_use]
    pub fn run_at(mut self, when: impl Into<Timestamp>) -> Self {
        self.run_at = Some(when.into());
        self
    }

    /// Sets the priority (higher first).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the number of attempts before the item is dead (at least 1).
    #[must_use]
    pub fn max_attempts(mut self, n: i32) -> Self {
        self.max_attempts = n.max(1);
        self
    }
}

/// An item as the store holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemRecord {
    pub id: ItemId,
    pub kind: String,
    pub lane: String,
    pub payload: Value,
    pub state: ItemState,
    pub priority: i32,
    /// Claims so far (a claim counts the attempt; a drain release or a park gives it back).
    pub attempt: i32,
    pub max_attempts: i32,
    pub run_at: Timestamp,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<Timestamp>,
    pub fence: Fence,
    pub dedupe_key: Option<String>,
    /// The last checkpoint written by a handler (orchestration steps live here).
    pub checkpoint: Option<Value>,
    pub last_error: Option<String>,
    /// The signal a parked item waits for.
    pub parked_on: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When the current (or last) attempt was claimed.
    pub claimed_at: Option<Timestamp>,
    /// The account it belongs to.
    pub account: String,
}

/// A claimed item and the fence its holder must present.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub item: ItemRecord,
    pub fence: Fence,
    pub lease_expires_at: Timestamp,
    /// The state the claim took the item from (available, failed or parked), where the
    /// backend says (memory and the SQL stores, whose counters count a running item under it
    /// until it ends).
    pub claimed_from: Option<ItemState>,
    /// Its inputs (by name), where the claim asked for them (the coordinator's, for the
    /// WorkerJobs it hands out; a remote worker's, from them); empty otherwise.
    pub inputs: Vec<ArtifactRef>,
}

impl Claimed {
    /// Its lane, kind and the state it was claimed from, where the backend reported it.
    pub fn origin(&self) -> Option<ClaimOrigin> {
        self.claimed_from.map(|from| ClaimOrigin {
            lane: self.item.lane.clone(),
            kind: self.item.kind.clone(),
            from,
        })
    }

    /// The claim as its holder presents it (the owner the claim was made as).
    pub fn held(&self) -> Held {
        Held {
            id: self.item.id,
            fence: self.fence,
            owner: self.item.lease_owner.clone().unwrap_or_default(),
        }
    }
}

/// What a handler receives: the item with its payload decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Item<P> {
    pub id: ItemId,
    pub kind: String,
    pub lane: String,
    pub payload: P,
    pub attempt: i32,
    pub max_attempts: i32,
    pub fence: Fence,
    pub run_at: Timestamp,
    pub dedupe_key: Option<String>,
}

impl<P> Item<P> {
    /// The item with `record`'s fields and `payload`.
    pub fn from_record(record: &ItemRecord, fence: Fence, payload: P) -> Self {
        Item {
            id: record.id,
            kind: record.kind.clone(),
            lane: record.lane.clone(),
            payload,
            attempt: record.attempt,
            max_attempts: record.max_attempts,
            fence,
            run_at: record.run_at,
            dedupe_key: record.dedupe_key.clone(),
        }
    }
}

/// Filters for [`crate::Store::list`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    pub state: Option<ItemState>,
    pub lane: Option<String>,
    pub kind: Option<String>,
    /// Only items with this dedupe key (of any kind, live or finished).
    pub dedupe_key: Option<String>,
    /// At most this many items; all when unset.
    pub limit: Option<usize>,
    /// Highest id first (the newest) instead of lowest.
    pub newest_first: bool,
    /// The keyset cursor: only items past this id in the list's order (below it newest
    /// first, above it oldest first). A page is the next `limit` items after the last id
    /// of the one before; no offset is counted.
    pub after: Option<ItemId>,
}

/// One claim of an item, as a holder presents it to every fenced write: the item, the
/// fence the claim took, and the holder's name. A write is refused unless the item is
/// running under exactly this fence, with an unexpired lease, held by exactly this owner
/// (a fence is a small number anyone can guess; ownership is not).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Held {
    pub id: ItemId,
    pub fence: Fence,
    pub owner: String,
}

impl Held {
    pub fn new(id: ItemId, fence: Fence, owner: impl Into<String>) -> Self {
        Held {
            id,
            fence,
            owner: owner.into(),
        }
    }
}

/// One attempt of an item that has ended: who held it under which fence, from when to
/// when, and how it ended (`completed`, `failed`, `dead`, `parked`, `released`, `expired`).
/// Written by the store in the transaction that ended it; the current attempt of a running
/// item is its lease (see [`ItemRecord`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub attempt: i32,
    pub fence: Fence,
    pub holder: Option<String>,
    pub claimed_at: Option<Timestamp>,
    pub finished_at: Timestamp,
    pub outcome: String,
    pub error: Option<String>,
}

/// What [`crate::Store::begin_effect`] found: the effect's recorded output, or that it is
/// not recorded and this holder's lease is live (renewed) to run it.
#[derive(Debug, Clone, PartialEq)]
pub enum EffectStart {
    Recorded(Value),
    Run {
        /// The renewed lease's end.
        lease_expires_at: Timestamp,
        /// When the store checked the lease (its clock).
        verified_at: Timestamp,
    },
}

/// One recorded effect of an item ([`crate::WorkContext::once`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRecord {
    pub key: String,
    pub output: Value,
    /// The fence of the attempt that recorded it.
    pub fence: Fence,
    pub recorded_at: Timestamp,
}

/// The outbox's backlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutboxStats {
    /// Rows the relay has yet to turn into items.
    pub pending: u64,
    /// Rows the relay refused (their id is another item's); they stay until an operator
    /// deals with them.
    pub refused: u64,
    /// Milliseconds since the oldest pending row was written; zero when there is none.
    pub oldest_pending_age_ms: u64,
}

/// How a claimed item ends, as the work loop reports it to the store in one batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done.
    Complete,
    /// A transient failure: failed until `retry_at`, or dead when attempts are spent.
    Retry { retry_at: Timestamp, error: String },
    /// Dead at once.
    Dead { error: String },
    /// Parked until `until` or until `signal` arrives (the attempt is given back).
    Park {
        until: Option<Timestamp>,
        signal: Option<String>,
    },
    /// Back to available now, the attempt given back (drain).
    Release,
}

/// The longest signal name an item may park on, in bytes. Every backend indexes the name
/// (`work_items_parked`; a PostgreSQL b-tree entry holds at most about 2,700 bytes, and a
/// longer name would fail the write of the whole batch it came in), and the coordinator has
/// always refused a longer one from a remote worker.
pub const MAX_SIGNAL_LEN: usize = 128;

/// Whether `name` is a signal an item may park on: not empty, at most [`MAX_SIGNAL_LEN`]
/// bytes, and no control character.
pub fn is_signal_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_SIGNAL_LEN && !name.chars().any(char::is_control)
}

impl Outcome {
    /// The length in bytes of the signal this outcome parks on when that is no signal name
    /// ([`is_signal_name`]): a park no store writes.
    pub fn bad_signal(&self) -> Option<usize> {
        match self {
            Outcome::Park {
                signal: Some(name), ..
            } if !is_signal_name(name) => Some(name.len()),
            _ => None,
        }
    }
}

/// One finished item: its id, the fence and owner presented, and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub id: ItemId,
    pub fence: Fence,
    pub owner: String,
    pub outcome: Outcome,
    /// Where the item was when it was claimed, as the claim returned it: lets a backend
    /// count a batch of completions from what the loop already knows instead of reading it
    /// back (the SQL stores; a finish without it is counted from the rows).
    pub origin: Option<ClaimOrigin>,
    /// Whether a completion repeated with the same fence is a success (the default) or
    /// refused as stale like any other write the lease no longer covers: the coordinator
    /// refuses it, then tells a repeat from another body by the attempt on record.
    pub repeat_is_success: bool,
    /// The outputs a completion names (uploaded already): the remote store sends them with
    /// it; a store that owns its database recorded them when they were stored.
    pub outputs: Vec<ArtifactRef>,
}

/// An item's lane and kind and the state its claim took it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOrigin {
    pub lane: String,
    pub kind: String,
    pub from: ItemState,
}

impl Finish {
    /// The finish of `held` with `outcome`.
    pub fn of(held: &Held, outcome: Outcome) -> Self {
        Finish {
            id: held.id,
            fence: held.fence,
            owner: held.owner.clone(),
            outcome,
            origin: None,
            repeat_is_success: true,
            outputs: Vec::new(),
        }
    }

    /// This finish, naming `outputs` (a completion's).
    #[must_use]
    pub fn with_outputs(mut self, outputs: Vec<ArtifactRef>) -> Self {
        self.outputs = outputs;
        self
    }

    /// This finish, refused as stale when it repeats a completion (see
    /// [`Finish::repeat_is_success`]).
    #[must_use]
    pub fn strict(mut self) -> Self {
        self.repeat_is_success = false;
        self
    }

    /// This finish, with the origin of its claim ([`Claimed::origin`]).
    #[must_use]
    pub fn with_origin(mut self, origin: Option<ClaimOrigin>) -> Self {
        self.origin = origin;
        self
    }
}

/// Counts and oldest age of one lane's items in one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StateStats {
    pub count: u64,
    /// Milliseconds since the oldest item of this state was created; for `available`, since
    /// the oldest due item's `run_at` (its lag). Zero when there are none.
    pub oldest_age_ms: u64,
}

/// One lane's items, by state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneStats {
    pub lane: String,
    /// Indexed like [`ItemState::ALL`]. `available` counts only items that are due.
    pub states: [StateStats; 6],
    /// Available items whose `run_at` has not come yet (a periodic kind's next run, a
    /// delayed enqueue): kept apart so an idle queue does not look backed up.
    pub scheduled: u64,
}

impl LaneStats {
    /// An empty lane.
    pub fn new(lane: impl Into<String>) -> Self {
        LaneStats {
            lane: lane.into(),
            states: [StateStats::default(); 6],
            scheduled: 0,
        }
    }

    /// The figures of `state`.
    pub fn get(&self, state: ItemState) -> StateStats {
        self.states[state_index(state)]
    }

    /// The figures of `state`, to fill.
    pub fn get_mut(&mut self, state: ItemState) -> &mut StateStats {
        &mut self.states[state_index(state)]
    }
}

fn state_index(state: ItemState) -> usize {
    ItemState::ALL
        .iter()
        .position(|s| *s == state)
        .unwrap_or_default()
}

/// A worker's place in its life, persisted in `workers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkerState {
    Registered,
    Online,
    Draining,
    Offline,
    /// A remote worker whose protocol version is outside the coordinator's range: it stops
    /// claiming, lets what it holds end and exits until it is upgraded.
    UpgradeRequired,
}

impl WorkerState {
    /// The state's name as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            WorkerState::Registered => "REGISTERED",
            WorkerState::Online => "ONLINE",
            WorkerState::Draining => "DRAINING",
            WorkerState::Offline => "OFFLINE",
            WorkerState::UpgradeRequired => "UPGRADE_REQUIRED",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        [
            WorkerState::Registered,
            WorkerState::Online,
            WorkerState::Draining,
            WorkerState::Offline,
            WorkerState::UpgradeRequired,
        ]
        .into_iter()
        .find(|w| w.as_str() == s)
    }
}

/// A worker row. The worker heartbeats it (`last_seen_at`) every sweep tick; the sweeper of
/// any worker marks it OFFLINE after three of its leases (`lease_ms`) of silence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRecord {
    pub id: String,
    pub lanes: Vec<String>,
    pub state: WorkerState,
    pub started_at: Timestamp,
    pub last_seen_at: Timestamp,
    /// The lease the worker's claims take, in milliseconds.
    pub lease_ms: i64,
}

/// What one enqueue did: the item's id, and whether it was a duplicate (a live item of the
/// same kind held its dedupe key; `id` is then that item's, and nothing was inserted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enqueued {
    pub id: ItemId,
    pub duplicate: bool,
}

impl Enqueued {
    /// A new item.
    pub const fn new(id: ItemId) -> Self {
        Enqueued {
            id,
            duplicate: false,
        }
    }

    /// The live item a duplicate enqueue found.
    pub const fn duplicate_of(id: ItemId) -> Self {
        Enqueued {
            id,
            duplicate: true,
        }
    }
}
