//! # suppression-invalid
//!
//! ## What it finds
//! A `scaffold:allow(<rule-id>) <reason>` comment that
//! - gives no reason,
//! - names a rule id that does not exist, or
//! - suppresses nothing: no finding of that rule is on its line (or, for a comment on a
//!   line of its own, on the next line that is not a comment).
//!
//! ## Why
//! A suppression is a recorded decision. Without a reason nobody can review it; one that
//! matches nothing is left over from code that moved or was fixed, and would silently
//! hide the next real finding written on that line.
//!
//! ## Example
//! ```rust,ignore
//! // scaffold:allow(import-forbidden)
//! use acme_infra::Client;
//! ```
//!
//! ## Fix
//! Write the reason after the closing parenthesis
//! (`// scaffold:allow(import-forbidden) moved to services in JIRA-123`), correct the rule
//! id (`scaffold rules` lists them), or delete the comment when nothing is left to allow.
//! In Markdown write `<!-- scaffold:allow(<rule-id>) <reason> -->`; in YAML, TOML and
//! shell `# scaffold:allow(<rule-id>) <reason>`.

use super::super::catalogue;
use super::super::finding::Finding;
use super::super::suppress::Suppression;
use crate::repo::manifest::closest;

fn ids() -> Vec<&'static str> {
    catalogue::rules().iter().map(|r| r.id).collect()
}

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "suppression-invalid",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a scaffold:allow comment with no reason, an unknown rule, or that suppresses nothing",
    severity_note: "",
    finds: "an allow comment with no reason, an unknown rule, or suppressing nothing",
};
pub const ID: &str = RULE.id;

pub fn no_reason(s: &Suppression) -> Finding {
    Finding::new(ID, s.path.clone(), s.loc)
        .message(format!("suppression of `{}` gives no reason", s.rule))
        .label("no reason")
        .help(format!(
            "write why after the parenthesis: `scaffold:allow({}) <reason>`",
            s.rule
        ))
}

pub fn unknown_rule(s: &Suppression) -> Finding {
    Finding::new(ID, s.path.clone(), s.loc)
        .message(format!("suppression names unknown rule `{}`", s.rule))
        .label("unknown rule id")
        .help(match closest(&s.rule, &ids()) {
            Some(near) => format!("did you mean `{near}`? `scaffold rules` lists every rule id"),
            None => "run `scaffold rules` for the list of rule ids".to_owned(),
        })
}

pub fn unused(s: &Suppression) -> Finding {
    Finding::new(ID, s.path.clone(), s.loc)
        .message(format!("suppression of `{}` suppresses nothing", s.rule))
        .label("no finding here")
        .help("delete the comment, or move it onto (or directly above) the line it should cover")
}
