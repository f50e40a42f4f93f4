//! Credentials: 256-bit tokens with a type prefix (`scf_enr_`, `scf_ses_`) so secret
//! scanners find them, challenge nonces, their SHA-256 (the only form the store keeps), the
//! unpadded base64url the wire uses, and the Ed25519 session signature's message.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// An enrollment token's prefix.
pub const ENROLL_PREFIX: &str = "scf_enr_";
/// A session token's prefix.
pub const SESSION_PREFIX: &str = "scf_ses_";
/// The domain separation at the start of every signed session challenge.
pub const SESSION_LABEL: &[u8] = b"scaffold-session-v1\0";

/// 32 bytes from the operating system's CSPRNG.
pub fn random_32() -> Result<[u8; 32], getrandom::Error> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b)?;
    Ok(b)
}

/// A fresh token: `prefix` then 256 random bits in unpadded base64url.
pub fn new_token(prefix: &str) -> Result<String, getrandom::Error> {
    Ok(format!("{prefix}{}", b64(&random_32()?)))
}

pub use crate::artifacts::{hex, is_sha256_hex, sha256_hex};

/// Unpadded base64url.
pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes unpadded base64url; `None` for anything else.
pub fn unb64(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s).ok()
}

/// What a worker signs to open a session:
/// `"scaffold-session-v1\0" ‖ worker_id ‖ "\0" ‖ nonce ‖ "\0" ‖ origin`.
pub fn session_message(worker_id: &str, nonce: &[u8], origin: &str) -> Vec<u8> {
    let mut m =
        Vec::with_capacity(SESSION_LABEL.len() + worker_id.len() + nonce.len() + origin.len() + 2);
    m.extend_from_slice(SESSION_LABEL);
    m.extend_from_slice(worker_id.as_bytes());
    m.push(0);
    m.extend_from_slice(nonce);
    m.push(0);
    m.extend_from_slice(origin.as_bytes());
    m
}

/// A worker id: its name and 64 random bits, so two devices enrolled under one name are
/// told apart; never the host or the pid.
pub fn new_worker_id(name: &str) -> Result<String, getrandom::Error> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b)?;
    Ok(format!("{name}-{}", hex(&b)))
}
