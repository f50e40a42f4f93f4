//! # generated-edited
//!
//! ## What it finds
//! With a change set (`--since <rev>` or `--staged`): a changed file under a `generated`
//! entry's `paths` in `agent/codemap.yml` while none of that entry's `from` sources
//! changed in the same range.
//!
//! ## Why
//! Generated files are rewritten by their generator; a hand edit is lost on the next
//! run, and the next regeneration silently reverts a fix someone relied on. The edit
//! belongs in the source the files are generated from.
//!
//! ## Example
//! ```yaml
//! generated: [{paths: ["packages/sdk/**"], from: ["contracts/**"]}]
//! ```
//! A commit that changes `packages/sdk/src/client.rs` and nothing under `contracts/`.
//!
//! ## Fix
//! Make the change in the `from` sources and regenerate, committing both together.

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "generated-edited",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a file under `generated` changed without its `from` sources changing",
    severity_note: "",
    finds: "with a change set: a file under `generated` changed while none of its `from` sources did",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let Some(changes) = ctx.changes else { return };
    for entry in &ctx.repo.codemap.generated {
        let sources_changed = changes
            .changes
            .iter()
            .any(|c| entry.from.iter().any(|g| g.is_match(&c.path)));
        if sources_changed {
            continue;
        }
        let from: Vec<&str> = entry.from.iter().map(|g| g.pattern.as_str()).collect();
        for c in &changes.changes {
            let Some(g) = entry.paths.iter().find(|g| g.is_match(&c.path)) else {
                continue;
            };
            sink.push(
                Finding::new(ID, c.path.clone(), Location::START)
                    .message(format!(
                        "`{}` is generated (`{}`) but none of its sources changed",
                        c.path, g.pattern
                    ))
                    .label("hand edit of a generated file")
                    .help(format!(
                        "change the sources ({}) and regenerate instead",
                        from.join(", ")
                    )),
            );
        }
    }
}
