//! # manifest-invalid
//!
//! ## What it finds
//! `agent/codemap.yml` or `agent/manifests/gate-matrix.yml` that does not parse or does not
//! validate: invalid YAML, an unknown key, a value of the wrong type, an unsupported
//! `version`, a duplicate layer or gate, a layer name in `may_import` / `must_not_import`
//! that no layer declares, an invalid glob, an unknown rule or level in `policy:`. Every
//! problem is reported, each at its own `file:line:col`; the run then exits with 2 (a
//! configuration error), because no other rule can be trusted on a manifest it misreads.
//!
//! ## Why
//! A checker that silently ignores a misspelt key (`may_imports:`) enforces a policy
//! nobody wrote. Failing closed on the manifest is what makes every other finding (and
//! every absent finding) mean something.
//!
//! ## Example
//! ```yaml
//! version: 1
//! layers:
//!   workers: {paths: ["workers/**"], may_imports: [om]}   # unknown key `may_imports`
//!   om: {paths: ["om/**"], must_not_import: [aps]}        # unknown layer `aps`
//! ```
//!
//! ## Fix
//! Correct each reported place; the help line names the allowed keys or the closest
//! declared layer. This rule cannot be suppressed or turned off.

use super::super::finding::Finding;
use crate::repo::manifest::Problem;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "manifest-invalid",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "agent/codemap.yml or agent/manifests/gate-matrix.yml fails to parse or validate",
    severity_note: " (exit 2)",
    finds: "codemap / gate matrix does not parse or validate: unknown keys, wrong types, unknown layers, bad globs, duplicates, unsupported version",
};
pub const ID: &str = RULE.id;

/// The finding for one manifest problem.
pub fn finding(p: &Problem) -> Finding {
    Finding::new(ID, p.file.clone(), p.pos.into())
        .message(p.message.clone())
        .label(p.label.clone())
        .help(p.help.clone())
}
