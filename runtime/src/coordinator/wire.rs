//! The protocol's JSON as the coordinator reads it (README.md#remote-workers-scaffold-queue-serve): every request body parsed
//! strictly (an unknown field is a typed 400 naming it). The types are the protocol's
//! ([`crate::protocol`]), shared with the remote backend.

pub use crate::protocol::*;

use super::error::ApiError;
use serde::de::DeserializeOwned;

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
