//! The coordinator protocol (README.md#remote-workers-scaffold-queue-serve) as both ends speak it: the JSON of every call and
//! answer ([`types`]), and the credentials' forms ([`tokens`]: token prefixes, base64url,
//! SHA-256, the signed session message).

pub mod tokens;
mod types;

pub use types::*;

/// The request header every call but `/health` and `/metrics` carries.
pub const PROTOCOL_HEADER: &str = "scaffold-protocol";

/// The protocol versions this build speaks (the coordinator's range, and a remote worker's
/// by default).
pub const PROTOCOL: (i64, i64) = (1, 1);

/// The origin of `url` (`scheme://host[:port]`, lower case, no path): what a session
/// signature is bound to. Both sides compute it with this function.
pub fn origin_of(url: &str) -> Result<String, &'static str> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or("it has no scheme (https://…)")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return Err("its scheme is not http or https");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') {
        return Err("it has no host, or carries credentials");
    }
    if authority
        .chars()
        .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err("its host has spaces or control characters");
    }
    Ok(format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// `s` cut to 128 characters with every control character dropped: what an answer or a log
/// line may repeat of what the other side said.
pub fn inert(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(128).collect()
}
