//! The protocol's JSON (DESIGN §8): every request body is parsed strictly (an unknown field
//! is a typed 400 naming it), every answer typed, every time RFC 3339 UTC.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use crate::item::ArtifactRef;
use crate::time::Timestamp;

/// Parses a request body; an unknown field, a missing one or a wrong type is a typed 400.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let text = e.to_string();
        // serde's wording: "unknown field `name`, expected one of …".
        if let Some(rest) = text.strip_prefix("unknown field `")
            && let Some((field, _)) = rest.split_once('`')
        {
            return ApiError::bad_request("unknown_field").with("field", inert(field));
        }
        if e.is_syntax() || e.is_eof() {
            return ApiError::bad_request("malformed_json");
        }
        // What the body got wrong, without echoing its values (a token may be among them).
        let what = text.split(" at line ").next().unwrap_or("").to_owned();
        let what = match what.split_once(": ") {
            Some((kind, _)) if kind.starts_with("invalid type") => kind.to_owned(),
            _ => what,
        };
        ApiError::bad_request("invalid_body").with("message", inert(&what))
    })
}

/// `s` cut to 128 characters with every control character dropped: what an answer may
/// repeat of what a request said.
pub(crate) fn inert(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(128).collect()
}

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

#[derive(Debug, Deserialize)]
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChallengeRequest {
    pub worker_id: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ChallengeAnswer {
    pub nonce: String,
    pub expires_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRequest {
    pub worker_id: String,
    pub nonce: String,
    pub signature: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SessionAnswer {
    pub token: String,
    pub expires_at: String,
    pub protocol: i64,
    pub capabilities: Vec<String>,
}

#[derive(Debug, Deserialize)]
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

#[derive(Debug, Deserialize)]
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointBody {
    pub fence: i64,
    pub state: Value,
}

#[derive(Debug, Deserialize)]
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    pub fence: i64,
    #[serde(default)]
    pub outputs: Vec<OutputRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailClass {
    Transient,
    Permanent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailBody {
    pub fence: i64,
    pub class: FailClass,
    pub code: String,
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParkBody {
    pub fence: i64,
    /// Parked until this time (RFC 3339); without it, until `signal`.
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    pub signal: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchCompleteItem {
    pub job: String,
    pub fence: i64,
    #[serde(default)]
    pub outputs: Vec<OutputRef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchComplete {
    pub jobs: Vec<BatchCompleteItem>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchHeartbeatItem {
    pub job: String,
    pub fence: i64,
}

#[derive(Debug, Deserialize)]
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
