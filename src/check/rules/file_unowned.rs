//! # file-unowned
//!
//! ## What it finds
//! A file of the repository (one the walk sees: not ignored by `.gitignore`) that no agent
//! of `agent/codemap.yml` may write: none of the agents' `writable` globs matches it, or
//! every one that does is undone by that agent's `forbidden`. A file under a `generated`
//! entry's `paths` is its generator's and is not reported. The rule runs when the codemap
//! names at least one agent.
//!
//! ## Why
//! Ownership is only a gate when it is whole. A file no agent owns can be changed by none
//! of them without an `ownership-outside-writable` finding — so in practice by whoever
//! widens their own `writable` in the same change, or by nobody, and its edits are
//! reviewed by no owner. The root manifests (`Cargo.toml`, `Cargo.lock`), `.env.example`
//! and `.cargo/config.toml` are the files this happens to first.
//!
//! ## Example
//! ```yaml
//! agents:
//!   worker-agent:
//!     writable: ["workers/**"]
//!   service-agent:
//!     writable: ["services/**"]
//! ```
//! with `Cargo.lock` at the root: no agent may write it.
//!
//! ## Fix
//! Give the file an owner: add a glob for it to the `writable` list of the agent whose work
//! changes it (a repository's architecture owner usually takes `om/**` and the root
//! manifests, platform-ops `deployment/**`), or list it under `generated` when a tool
//! writes it from sources.

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "file-unowned",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a file of the repository that no agent of the codemap may write",
    severity_note: "",
    finds: "a file (not ignored, not `generated`) that no agent's `writable` list reaches, when the codemap names agents",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let codemap = &ctx.repo.codemap;
    if codemap.agents.is_empty() {
        return;
    }
    let agents: Vec<&str> = codemap.agents.keys().map(String::as_str).collect();
    for path in ctx.repo.files.iter().chain(&ctx.repo.links) {
        if !codemap.writers(path).is_empty() || codemap.is_generated(path) {
            continue;
        }
        sink.push(
            Finding::new(ID, path.clone(), Location::START)
                .path_only()
                .message(format!("no agent of agent/codemap.yml may write `{path}`"))
                .label("writable by no agent")
                .help(format!(
                    "add a glob for it to the `writable` list of the agent that owns it ({}), or list it under `generated`",
                    agents.join(", ")
                )),
        );
    }
}
