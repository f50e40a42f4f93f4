//! Credentials' forms: the protocol's ([`crate::protocol::tokens`]), named here too for
//! the coordinator's callers.

pub use crate::protocol::tokens::*;
