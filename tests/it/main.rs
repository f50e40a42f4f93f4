//! Every integration test of scaffold in one test binary: one link of the library and its
//! dependencies instead of one per file (the files stay where they are; `autotests = false`
//! in Cargo.toml and a `#[path]` per module). Each module is one area of the contract;
//! snapshots are named `it__<module>__<name>`.

// A test binary prints what it skipped and what it measured, and its shared modules
// are `pub` for the files that use them.
#![allow(clippy::print_stdout, clippy::print_stderr, unreachable_pub)]

#[path = "../cache.rs"]
mod cache;
#[path = "../changes.rs"]
mod changes;
#[path = "../cli.rs"]
mod cli;
#[path = "../common/mod.rs"]
mod common;
#[path = "../e2e_generated.rs"]
mod e2e_generated;
#[path = "../e2e_remote.rs"]
mod e2e_remote;
#[path = "../fuzz.rs"]
mod fuzz;
#[path = "../generate.rs"]
mod generate;
#[path = "../generate_faults.rs"]
mod generate_faults;
#[path = "../hostile.rs"]
mod hostile;
#[cfg(unix)]
#[path = "../hostile_inputs.rs"]
mod hostile_inputs;
#[cfg(unix)]
#[path = "../hostile_output.rs"]
mod hostile_output;
#[cfg(unix)]
#[path = "../hostile_tree.rs"]
mod hostile_tree;
#[cfg(unix)]
#[path = "../hostile_writes.rs"]
mod hostile_writes;
#[path = "../queue_cli.rs"]
mod queue_cli;
#[path = "../real_workspace.rs"]
mod real_workspace;
#[path = "../references.rs"]
mod references;
#[path = "../rules.rs"]
mod rules;
#[cfg(unix)]
#[path = "../symlinks.rs"]
mod symlinks;
#[path = "../workqueue.rs"]
mod workqueue;
