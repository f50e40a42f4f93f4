//! # worker-strategy-missing
//!
//! ## What it finds
//! A worker `README.md` without a level-2 heading for a strategy it must declare. Every
//! worker declares **Idempotency**, **Retry**, **Checkpoint** or **Replay**, and
//! **Recovery**; its role adds more (`rules/worker-roles.yml`):
//!
//! | role | must also declare |
//! | --- | --- |
//! | outbox-relay | Retry policy, Checkpoint |
//! | projector | Replay strategy, Rebuildability, Lag semantics |
//! | scheduler | Dedupe |
//! | sync-reconciler | Conflict strategy, Checkpoint |
//! | workflow-runner | Compensation strategy, Resume strategy |
//!
//! A heading matches when it is the strategy's name or starts with it followed by more
//! words (`## Retry policy` also declares `Retry`), case-insensitively.
//!
//! ## Why
//! Work is delivered at least once: a worker that never said what happens on a duplicate,
//! a crash mid-item or a replay has usually not decided. The README is the contract the
//! reviewer and the on-call operator read.
//!
//! ## Example
//! ```markdown
//! # projector
//! ## Idempotency
//! Upserts keyed by event id.
//! ## Retry
//! ...
//! ```
//! (no `## Replay strategy`, `## Rebuildability`, `## Lag semantics`)
//!
//! ## Fix
//! Add the missing `## <Strategy>` section with at least one real sentence describing
//! what the code does. When a strategy truly does not apply, say why under the heading
//! (`N/A: this worker keeps no state between items`).

use super::super::catalogue::{self, Requirement};
use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::markdown;
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "worker-strategy-missing",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a worker README lacks a strategy heading its role requires",
    severity_note: "",
    finds: "a strategy heading the worker's role requires is absent",
};
pub const ID: &str = RULE.id;

/// Whether a heading title declares a strategy name.
pub fn heading_declares(title: &str, strategy: &str) -> bool {
    let t = normalize(title);
    let s = normalize(strategy);
    t == s || t.strip_prefix(&s).is_some_and(|rest| rest.starts_with(' '))
}

fn normalize(s: &str) -> String {
    // Inline emphasis and code marks, and a leading section number (`1.`, `2)`), are
    // decoration: `## **1. Retry**` declares Retry.
    let plain: String = s
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .collect();
    let plain = plain.trim_start();
    let digits = plain.len() - plain.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let plain = if digits > 0 && plain[digits..].starts_with(['.', ')']) {
        &plain[digits + 1..]
    } else {
        plain
    };
    plain
        .trim()
        .trim_end_matches([':', '.'])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The strategies a role requires: the base four, then the role's own.
pub fn required(role: Option<&str>) -> Vec<&'static Requirement> {
    let roles = catalogue::roles();
    let mut out: Vec<&Requirement> = roles.base.iter().collect();
    if let Some(extra) = role.and_then(|r| roles.roles.get(r)) {
        out.extend(extra.iter());
    }
    out
}

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for (i, c) in ctx.workers() {
        let Some(readme) = &ctx.readmes[i] else {
            continue;
        };
        let sections = markdown::sections(&readme.text);
        let role = c.role.as_ref().map(|r| r.0.as_str());
        let missing: Vec<&Requirement> = required(role)
            .into_iter()
            .filter(|req| {
                !sections.iter().any(|s| {
                    s.level == 2 && req.0.iter().any(|name| heading_declares(&s.title, name))
                })
            })
            .collect();
        for req in &missing {
            // `Checkpoint or Replay` is implied by a missing role requirement `Checkpoint`:
            // report the more specific one only.
            let subsumed = missing.iter().any(|other| {
                other.0.len() < req.0.len() && other.0.iter().all(|n| req.0.contains(n))
            });
            if subsumed {
                continue;
            }
            let role_note = role.map(|r| format!(" (role `{r}`)")).unwrap_or_default();
            let names = req
                .0
                .iter()
                .map(|n| format!("`## {n}`"))
                .collect::<Vec<_>>()
                .join(" or ");
            let first = &req.0[0];
            sink.push(
                Finding::new(ID, readme.path.clone(), Location::START)
                    .message(format!("worker `{}`{role_note} does not declare {names}", c.package))
                    .label(format!("no `## {first}` section"))
                    .help(format!(
                        "add a `## {first}` section to {} that says, in at least one sentence, what the worker does",
                        readme.path
                    )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::heading_declares;

    #[test]
    fn headings_match_by_words() {
        assert!(heading_declares("Retry policy", "Retry"));
        assert!(heading_declares("  retry:", "Retry"));
        assert!(heading_declares("Lag  semantics", "Lag semantics"));
        assert!(!heading_declares("Retrying", "Retry"));
        assert!(heading_declares("**1. Retry**", "Retry"));
        assert!(heading_declares("`Idempotency`", "Idempotency"));
        assert!(heading_declares("2) Lag semantics", "Lag semantics"));
        assert!(!heading_declares("Checkpoint", "Checkpoint strategy"));
    }
}
