//! # worker-readme-missing
//!
//! ## What it finds
//! A worker crate (a workspace crate in the `workers` layer, or in a layer marked
//! `workers: true` in `agent/codemap.yml`) with no `README.md` beside its `Cargo.toml`.
//!
//! ## Why
//! The README is where a worker declares how it behaves under at-least-once delivery:
//! idempotency, retry, checkpoint/replay and recovery. Without it the strategy rules have
//! nothing to check and an operator paged at night has nothing to read.
//!
//! ## Example
//! ```text
//! workers/mailer/Cargo.toml
//! workers/mailer/src/main.rs      # no workers/mailer/README.md
//! ```
//!
//! ## Fix
//! Add `workers/<name>/README.md` with a level-2 heading per strategy its role requires
//! (`scaffold explain worker-strategy-missing`); `scaffold worker` writes one for new
//! workers.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;

pub const ID: &str = "worker-readme-missing";

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for (i, c) in ctx.workers() {
        if ctx.readmes[i].is_some() {
            continue;
        }
        sink.push(
            Finding::new(ID, c.manifest.path.clone(), c.package_loc)
                .message(format!("worker `{}` has no README.md", c.package))
                .label("worker declared here")
                .help(format!(
                    "add {}/README.md with the strategy sections its role requires (Idempotency, Retry, Checkpoint or Replay, Recovery)",
                    c.dir
                )),
        );
    }
}
