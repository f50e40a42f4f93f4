//! The generator: `scaffold init`, `scaffold namespace`, `scaffold worker`. Each command
//! plans into memory ([`plan::Plan`]), renders templates ([`templates`]), formats Rust
//! ([`rustfmt`]), parses back every file ([`validate`]) and only then writes, all or nothing
//! ([`write`]). `--dry-run` stops before writing and shows the plan as unified diffs. Each
//! command runs as one transaction ([`txn`]) holding the repository lock ([`lock`]) from
//! before it reads the tree, so two runs never plan from the same tree and a killed run is
//! finished or undone by the next.

mod error;
mod finish;
pub mod init;
pub mod integration;
mod kind_files;
pub mod lock;
pub mod lockfile;
pub mod markers;
pub mod members;
pub mod names;
pub mod namespace;
pub mod orchestration;
pub mod owners;
pub mod plan;
pub mod producer;
pub mod provider_deploy;
mod render;
pub mod rustfmt;
mod self_check;
pub mod templates;
pub mod txn;
pub mod validate;
pub mod worker;
pub mod write;

pub use error::GenerateError;
pub use finish::{Generated, unified_diff};
