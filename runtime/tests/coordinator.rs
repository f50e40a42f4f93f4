//! The coordinator's protocol, tried against the real server on `127.0.0.1:0` with an
//! independent client (reqwest, tokio-tungstenite, ed25519-dalek): enrollment, sessions,
//! versions, every job call fenced and owner-checked, artifacts, the socket, the limits,
//! malformed requests by the thousand, and two coordinators sharing one PostgreSQL.

// A test binary prints what it skipped and what it measured, and its shared modules
// are `pub` for the files that use them.
#![allow(clippy::print_stdout, clippy::print_stderr, unreachable_pub)]

#[path = "coordinator/common.rs"]
mod common;
#[path = "coordinator/enrollment.rs"]
mod enrollment;
#[path = "coordinator/fuzz.rs"]
mod fuzz;
#[path = "coordinator/jobs.rs"]
mod jobs;
#[path = "coordinator/limits.rs"]
mod limits;
#[cfg(feature = "postgres")]
#[path = "pg_common/mod.rs"]
mod pg_common;
#[cfg(feature = "postgres")]
#[path = "coordinator/postgres.rs"]
mod postgres;
#[path = "coordinator/socket.rs"]
mod socket;
