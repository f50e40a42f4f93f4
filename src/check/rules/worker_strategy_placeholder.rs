//! # worker-strategy-placeholder
//!
//! ## What it finds
//! A strategy heading in a worker `README.md` whose section says nothing: it is empty,
//! starts with TODO / TBD / FIXME, is a bare `N/A`, or has fewer than three words of prose.
//! Code blocks count as text; HTML comments do not.
//!
//! ## Why
//! A heading with nothing under it passes a grep but tells nobody how the worker behaves.
//! The placeholder is usually the exact spot where the decision was deferred.
//!
//! ## Example
//! ```markdown
//! ## Recovery
//! TODO
//! ```
//!
//! ## Fix
//! Write what the code does: "A killed worker's items return to the queue when their
//! 30 s lease expires; the handler resumes from its last checkpoint." When the strategy
//! does not apply, give the reason: `N/A: the worker keeps no state between items.`

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::markdown;
use super::super::sink::Sink;
use super::worker_strategy_missing::{heading_declares, required};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "worker-strategy-placeholder",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a worker README strategy heading whose body is empty, TODO, TBD or a bare N/A",
    severity_note: "",
    finds: "a strategy heading whose body is empty, TODO, TBD or a bare N/A",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for (i, c) in ctx.workers() {
        let Some(readme) = &ctx.readmes[i] else {
            continue;
        };
        let names: Vec<&String> = required(c.role.as_ref().map(|r| r.0.as_str()))
            .into_iter()
            .flat_map(|r| r.0.iter())
            .collect();
        for s in markdown::sections(&readme.text) {
            if s.level != 2 || !names.iter().any(|n| heading_declares(&s.title, n)) {
                continue;
            }
            if !markdown::is_placeholder(&s.body) {
                continue;
            }
            sink.push(
                Finding::new(ID, readme.path.clone(), Location::in_file(readme, s.offset, s.len))
                    .message(format!("the `{}` section of worker `{}` is a placeholder", s.title, c.package))
                    .label("no real sentence under this heading")
                    .help("describe what the worker really does here; if it does not apply, write `N/A:` followed by the reason"),
            );
        }
    }
}
