//! The protocol's JSON (README.md#remote-workers-scaffold-queue-serve), shared by the coordinator (which parses requests
//! strictly: an unknown field is a typed 400 naming it) and the remote backend (which reads
//! answers leniently: a newer coordinator may add fields). Every time is RFC 3339 UTC.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::item::ArtifactRef;
use crate::time::Timestamp;

/// RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: Timestamp) -> String {
    let ms = u64::try_from(t.as_millis()).unwrap_or(0);
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

/// Parses an RFC 3339 time.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    let ms = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    Some(Timestamp::from_millis(i64::try_from(ms).ok()?))
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolRange {
    pub min: i64,
    pub max: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollRequest {
    pub token: String,
    pub worker_name: String,
    pub public_key: String,
    pub protocol: ProtocolRange,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct EnrollAnswer {
    pub worker_id: String,
    pub account: String,
    pub kinds: Option<Vec<String>>,
    pub protocol: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChallengeRequest {
    pub worker_id: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ChallengeAnswer {
    pub nonce: String,
    pub expires_at: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRequest {
    pub worker_id: String,
    pub nonce: String,
    pub signature: String,
}

/// The capability of a coordinator whose `PUT /v1/artifacts/{sha256}` answers `200
/// {"sha256", "size"}` (what it stored), which a worker checks before a completion names the
/// output; a coordinator without it cannot be told an upload landed whole.
pub const ARTIFACT_RECEIPT: &str = "artifact_receipt";

#[derive(Debug, Serialize, Deserialize)]
pub struct SessionAnswer {
    pub token: String,
    pub expires_at: String,
    pub protocol: i64,
    pub capabilities: Vec<String>,
    /// The queue's store id, the first part of every effect's idempotency key, so a remote
    /// worker hands its effects the key a direct worker would (an addition to protocol 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimBody {
    pub lane: String,
    pub max: u32,
    #[serde(default)]
    pub wait_ms: u64,
}

/// One WorkerJob: what a worker runs, never the item itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub job: String,
    pub kind: String,
    pub lane: String,
    pub payload: Value,
    pub attempt: i32,
    /// The item's attempts in all: a failure of the last one leaves it dead (an addition to
    /// protocol 1 an older coordinator leaves out; absent, the worker cannot tell).
    #[serde(default)]
    pub max_attempts: Option<i32>,
    pub fence: i64,
    pub lease_expires_at: String,
    pub lease_ms: u64,
    pub checkpoint: Option<Value>,
    pub inputs: Vec<ArtifactRef>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ClaimAnswer {
    pub jobs: Vec<Job>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FenceBody {
    pub fence: i64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct LeaseAnswer {
    pub lease_expires_at: String,
    /// What is left of the lease: the worker schedules its next heartbeat at a third of it,
    /// on its own monotonic clock, never comparing wall clocks.
    pub lease_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointBody {
    pub fence: i64,
    pub state: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectBody {
    pub fence: i64,
    pub output: Value,
}

/// `GET /v1/jobs/{job}/effects/{key}`: the recorded output, or leave to run it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectAnswer {
    Recorded(Value),
    Run {
        lease_expires_at: String,
        lease_ms: u64,
        idempotency_key: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputRef {
    pub name: String,
    pub sha256: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    pub fence: i64,
    #[serde(default)]
    pub outputs: Vec<OutputRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailClass {
    Transient,
    Permanent,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailBody {
    pub fence: i64,
    pub class: FailClass,
    pub code: String,
    pub message: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParkBody {
    pub fence: i64,
    /// Parked until this time (RFC 3339); without it, until `signal`.
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    pub signal: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchCompleteItem {
    pub job: String,
    pub fence: i64,
    #[serde(default)]
    pub outputs: Vec<OutputRef>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchComplete {
    pub jobs: Vec<BatchCompleteItem>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchHeartbeatItem {
    pub job: String,
    pub fence: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchHeartbeat {
    pub jobs: Vec<BatchHeartbeatItem>,
}

/// One job's answer in a batch: its HTTP status and, for 200, the lease; else the error.
#[derive(Debug, Serialize, Deserialize)]
pub struct BatchResult {
    pub job: String,
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseAnswer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BatchAnswer {
    pub results: Vec<BatchResult>,
}

/// A job's name on the wire: `<item>.<fence>`, opaque to the worker.
pub fn job_name(item: i64, fence: i64) -> String {
    format!("{item}.{fence}")
}

/// The (item, fence) a job names; `None` for anything malformed.
pub fn parse_job(job: &str) -> Option<(i64, i64)> {
    let (item, fence) = job.split_once('.')?;
    let ok = |s: &str| !s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(item) || !ok(fence) {
        return None;
    }
    Some((item.parse().ok()?, fence.parse().ok()?))
}
