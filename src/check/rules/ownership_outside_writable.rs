//! # ownership-outside-writable
//!
//! ## What it finds
//! With `--as <agent>` and a change set (`--since <rev>` or `--staged`): a changed path
//! (added, modified, deleted, or either side of a rename) that matches none of the
//! agent's `writable` globs in `agent/codemap.yml`. A path that is also `forbidden` is
//! reported by `ownership-forbidden` instead.
//!
//! ## Why
//! `writable` is the agent's whole area. A change outside it is work the agent was not
//! asked to do, or a sign the task belongs to another owner.
//!
//! ## Example
//! ```yaml
//! agents:
//!   worker-agent:
//!     writable: ["workers/**", "verification/replay/**"]
//! ```
//! `scaffold check --since origin/main --as worker-agent` with `om/src/root.rs` changed.
//!
//! ## Fix
//! Move the change into the agent's area, split it into a change by the owning agent, or
//! widen `agents.<agent>.writable` in a reviewed change.

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "ownership-outside-writable",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "with --as, a changed path outside the agent's writable list",
    severity_note: "",
    finds: "with `--as` and a change set: a changed path outside the agent's `writable` list",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let (Some(changes), Some((name, agent))) = (ctx.changes, ctx.agent()) else {
        return;
    };
    for c in &changes.changes {
        if agent.writable.iter().any(|g| g.is_match(&c.path))
            || agent.forbidden.iter().any(|g| g.is_match(&c.path))
        {
            continue;
        }
        let areas: Vec<&str> = agent.writable.iter().map(|g| g.pattern.as_str()).collect();
        sink.push(
            Finding::new(ID, c.path.clone(), Location::START)
                .path_only()
                .message(format!("agent `{name}` changed `{}`, outside its writable paths", c.path))
                .label("outside the agent's area")
                .help(format!("agent `{name}` may write: {}; hand this change to the owning agent or widen `writable`", areas.join(", "))),
        );
    }
}
