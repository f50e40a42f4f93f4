//! The runtime's tests, one binary (one link, not nineteen). Each module is what was a test
//! binary of its own; a module whose features are off compiles to nothing. The chaos and
//! signal tests re-execute this binary on an ignored test of their module, named with it
//! (`chaos::chaos_worker_process`).

// A test binary prints what it skipped and what it measured, and its shared modules
// are `pub` for the files that use them.
#![allow(clippy::print_stdout, clippy::print_stderr, unreachable_pub)]

#[cfg(feature = "postgres")]
mod pg_common;
#[cfg(all(feature = "sqlite", feature = "postgres"))]
mod worker_process;

mod chaos;
mod chaos_remote;
mod chaos_stop;
mod conformance;
mod conformance_postgres;
mod conformance_remote;
mod coordinator;
mod dashboard;
mod metrics;
mod migrate_v2;
mod migrate_v4;
mod outbox_sqlite;
mod outcome_logs;
mod postgres;
mod postgres_hosts;
mod postgres_tls;
mod remote_artifacts;
mod remote_worker;
mod resources;
mod signals;
mod testing_helpers;
