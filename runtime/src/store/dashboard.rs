//! What the dashboard keeps beside the queue (README.md#the-dashboard): named operators and
//! their signed-in sessions (tokens stored as their SHA-256 only), the record of every action
//! they took, and each lane's completions and failures over a span of time.

use serde::Serialize;

use crate::item::ItemId;
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

/// A named operator (`scaffold queue operator add NAME`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operator {
    pub name: String,
    pub created_at: Timestamp,
}

/// One action an operator took from the dashboard, and what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorAction {
    pub at: Timestamp,
    pub operator: String,
    /// `retry`, `retry-dead`, `discard`, `cancel`, `signal` or `drain`.
    pub action: String,
    /// The item it was taken on, when it was one item's.
    pub item_id: Option<ItemId>,
    /// The kind, signal or worker it named, when it named one.
    pub target: Option<String>,
    /// How many items (or workers) it changed.
    pub changed: u64,
    /// What changed, in words.
    pub detail: String,
}

/// A lane's completions and failed attempts (failed, dead or expired) over a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Activity {
    pub completed: u64,
    pub failed: u64,
}

/// The dashboard's tables (every database backend; the remote backend has none).
pub trait DashboardStore: Send + Sync {
    /// Adds an operator; `Ok(false)` when the name is taken (nothing changed).
    fn add_operator(
        &self,
        name: String,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>>;
    /// Removes an operator and ends its sessions; whether it existed.
    fn remove_operator(&self, name: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// Every operator, by name.
    fn operators(&self) -> BoxFuture<'_, StoreResult<Vec<Operator>>>;
    /// Signs in: a session for the operator whose token has this SHA-256, ending at
    /// `expires_at`; the operator's name, or `None` (no session made) for an unknown token.
    fn open_operator_session(
        &self,
        token_sha256: String,
        session_sha256: String,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>>;
    /// The operator of the unexpired session whose token has this SHA-256.
    fn operator_session(
        &self,
        session_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>>;
    /// Signs out (the session is deleted).
    fn close_operator_session(&self, session_sha256: String) -> BoxFuture<'_, StoreResult<()>>;
    /// Records an action.
    fn record_action(&self, action: OperatorAction) -> BoxFuture<'_, StoreResult<()>>;
    /// The actions taken on item `id`, oldest first.
    fn item_actions(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>>;
    /// The latest `limit` actions, newest first.
    fn recent_actions(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>>;
    /// Each lane's completions and failed attempts in `[from, to)`, by lane, read through
    /// the completed items' and the attempts' time indexes (a range, never the table).
    fn activity(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<(String, Activity)>>>;
}

/// The attempt outcomes counted as failures.
pub const FAILED_OUTCOMES: [&str; 3] = ["failed", "dead", "expired"];
