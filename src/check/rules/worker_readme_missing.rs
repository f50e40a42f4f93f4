//! # worker-readme-missing
//!
//! ## What it finds
//! A worker crate (a workspace crate in the `workers` layer, or in a layer marked
//! `workers: true` in `agent/codemap.yml`) with no `README.md` beside its `Cargo.toml`, or
//! with one that cannot be read (over 1 MiB, a symlink, not a regular file).
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

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "worker-readme-missing",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a worker crate without README.md",
    severity_note: "",
    finds: "a worker crate without README.md",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for (i, c) in ctx.workers() {
        if ctx.readmes[i].is_some() {
            continue;
        }
        let path = format!("{}/README.md", c.dir);
        // One that is there but cannot be read (too large, a symlink, not a regular file)
        // declares nothing either, and is said to be unreadable, not missing.
        let sections = "the strategy sections its role requires (Idempotency, Retry, Checkpoint or Replay, Recovery)";
        let (message, help) = match ctx.repo.files.binary_search(&path) {
            Ok(_) => (
                format!(
                    "worker `{}` has a README.md scaffold cannot read (larger than {} KiB, a symlink, or not a regular file)",
                    c.package,
                    super::super::context::README_LIMIT >> 10
                ),
                format!("make {path} a regular file under 1 MiB with {sections}"),
            ),
            Err(_) => (
                format!("worker `{}` has no README.md", c.package),
                format!("add {path} with {sections}"),
            ),
        };
        sink.push(
            Finding::new(ID, c.manifest.path.clone(), c.package_loc)
                .message(message)
                .label("worker declared here")
                .help(help),
        );
    }
}
