//! # ownership-forbidden
//!
//! ## What it finds
//! With `--as <agent>` and a change set (`--since <rev>` or `--staged`): a changed path
//! (added, modified, deleted, or either side of a rename) that matches one of the agent's
//! `forbidden` globs in `agent/codemap.yml`.
//!
//! ## Why
//! Agents own parts of the tree. `forbidden` marks what an agent must never touch —
//! generated SDKs, infrastructure, another team's domain code — however small the edit.
//! Checking the change, not the tree, keeps the rule about who changed what.
//!
//! ## Example
//! ```yaml
//! agents:
//!   worker-agent:
//!     writable:  ["workers/**"]
//!     forbidden: ["infra/**"]
//! ```
//! `scaffold check --staged --as worker-agent` with `infra/dns/src/lib.rs` staged.
//!
//! ## Fix
//! Take the change to `infra/**` out of this commit and hand it to the agent that owns
//! it, or change the ownership in `agent/codemap.yml` in a reviewed change.

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "ownership-forbidden",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "with --as, a changed path in the agent's forbidden list",
    severity_note: "",
    finds: "with `--as` and a change set: a changed path in the agent's `forbidden` list",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let (Some(changes), Some((name, agent))) = (ctx.changes, ctx.agent()) else {
        return;
    };
    for c in &changes.changes {
        let Some(g) = agent.forbidden.iter().find(|g| g.is_match(&c.path)) else {
            continue;
        };
        sink.push(
            Finding::new(ID, c.path.clone(), Location::START)
                .path_only()
                .message(format!("agent `{name}` changed `{}`, which matches its forbidden `{}`", c.path, g.pattern))
                .label("forbidden for this agent")
                .help(format!("leave `{}` to the agent that owns it, or change `agents.{name}.forbidden` in agent/codemap.yml", c.path)),
        );
    }
}
