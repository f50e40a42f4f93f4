//! What the coordinator keeps in the queue's database besides the queue (README.md#remote-workers-scaffold-queue-serve), so
//! that coordinators sharing one PostgreSQL keep no state of their own but sockets:
//! enrollment tokens, enrolled devices, challenge nonces, sessions, and artifacts. Tokens and
//! nonces arrive here as their SHA-256 only.
//!
//! Every backend that owns a database implements [`CoordinatorStore`] (memory, SQLite,
//! PostgreSQL); [`crate::Store::coordinator`] hands it out.

use crate::item::{ArtifactRef, Held, ItemId};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

/// An enrollment token to store (`scaffold queue enroll`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEnrollment {
    pub token_sha256: String,
    pub worker_name: String,
    pub account: String,
    /// The kinds the worker may claim; every kind when `None`.
    pub kinds: Option<Vec<String>>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// A device redeeming a token: the id the coordinator minted, its public key and protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDevice {
    pub id: String,
    pub public_key: String,
    pub protocol: i64,
}

/// An enrolled remote worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteWorker {
    pub id: String,
    pub name: String,
    pub account: String,
    pub kinds: Option<Vec<String>>,
    /// Unpadded base64url Ed25519 public key; `None` once revoked.
    pub public_key: Option<String>,
    pub protocol: i64,
    pub enrolled_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

/// What redeeming an enrollment token found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// The token was live and is spent now: the worker it enrolled.
    Enrolled(RemoteWorker),
    /// No such token.
    Unknown,
    /// Spent already.
    Spent,
    /// Past its expiry.
    Expired,
    /// Revoked before it was used (`scaffold queue revoke` of its worker's name).
    Revoked,
}

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub worker_id: String,
    pub protocol: i64,
    pub expires_at: Timestamp,
}

/// An artifact an item names: an input (fence 0) or an output an attempt recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemArtifact {
    pub role: ArtifactRole,
    pub fence: i64,
    pub artifact: ArtifactRef,
}

/// Which way an artifact goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ArtifactRole {
    Input,
    Output,
}

impl ArtifactRole {
    pub const fn as_str(self) -> &'static str {
        match self {
            ArtifactRole::Input => "input",
            ArtifactRole::Output => "output",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "input" => Some(ArtifactRole::Input),
            "output" => Some(ArtifactRole::Output),
            _ => None,
        }
    }
}

/// The coordinator's tables.
pub trait CoordinatorStore: Send + Sync {
    /// Stores a new enrollment token.
    fn create_enrollment(&self, e: NewEnrollment) -> BoxFuture<'_, StoreResult<()>>;
    /// Spends the token whose SHA-256 is `token_sha256` in one atomic update (live, unused)
    /// and records the device as an enrolled worker (and a REGISTERED `workers` row).
    fn redeem_enrollment(
        &self,
        token_sha256: String,
        device: NewDevice,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Redeemed>>;
    /// One enrolled worker (revoked ones too).
    fn remote_worker(&self, id: String) -> BoxFuture<'_, StoreResult<Option<RemoteWorker>>>;
    /// Every enrolled worker, by id.
    fn remote_workers(&self) -> BoxFuture<'_, StoreResult<Vec<RemoteWorker>>>;
    /// Revokes the workers whose id or name is `who` and the unused enrollment tokens made for
    /// that name: the workers' keys and nonces are deleted and
    /// their `workers` rows removed; their leases run out. Their sessions no longer
    /// authenticate (the key is gone) but stay until they expire, so that their next call is
    /// told it was revoked rather than that it is unknown. Returns the ids revoked.
    fn revoke(&self, who: String, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>>;
    /// Stores a challenge nonce for `worker_id` until `expires_at`.
    fn put_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// Spends the nonce: true when it was live and issued to `worker_id` (it is gone either
    /// way once found).
    fn take_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>>;
    /// Stores a session token.
    fn put_session(
        &self,
        token_sha256: String,
        worker_id: String,
        protocol: i64,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// The live session with this token, if any, and its worker (revoked ones too), in one
    /// look-up: every authenticated call makes it.
    fn session(
        &self,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<(SessionRecord, RemoteWorker)>>>;
    /// How many sessions are live now.
    fn live_sessions(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>>;
    /// Marks worker `id` UPGRADE_REQUIRED (its protocol is outside the coordinator's range).
    fn mark_upgrade_required(&self, id: String) -> BoxFuture<'_, StoreResult<()>>;
    /// Stores `bytes` (whose SHA-256 the caller checked is `sha256`) under `account`;
    /// storing the same digest again changes nothing.
    fn put_artifact(
        &self,
        account: String,
        sha256: String,
        bytes: Vec<u8>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// The bytes of `account`'s artifact `sha256`.
    fn get_artifact(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>>;
    /// The size of `account`'s artifact `sha256`, when stored.
    fn artifact_size(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>>;
    /// Records the outputs of `held`'s attempt (fenced and owner-checked: only the current
    /// holder records), each refused unless stored under `account`.
    fn record_outputs(
        &self,
        held: Held,
        account: String,
        outputs: Vec<(String, String)>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// Every artifact item `id` names, inputs first.
    fn item_artifacts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<ItemArtifact>>>;
    /// Deletes artifacts stored before `before` that no item names; returns how many.
    fn purge_artifacts(&self, before: Timestamp) -> BoxFuture<'_, StoreResult<u64>>;
    /// Deletes expired sessions and nonces, and enrollment tokens expired before `before`.
    fn purge_credentials(
        &self,
        now: Timestamp,
        before: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// Whether `lane` has an item due now (of `account` and `kinds` when given).
    fn has_due(
        &self,
        lane: String,
        account: Option<String>,
        kinds: Option<Vec<String>>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>>;
}
