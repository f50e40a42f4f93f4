//! The coordinator's protocol, tried against the real server on `127.0.0.1:0` with an
//! independent client (reqwest, tokio-tungstenite, ed25519-dalek): enrollment, sessions,
//! versions, every job call fenced and owner-checked, artifacts, the socket, the limits,
//! malformed requests by the thousand, and two coordinators sharing one PostgreSQL.

mod common;
mod enrollment;
mod fuzz;
mod jobs;
mod limits;
#[cfg(feature = "postgres")]
mod postgres;
mod socket;
