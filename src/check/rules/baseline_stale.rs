//! # baseline-stale
//!
//! ## What it finds
//! An entry of `agent/baseline.yml` (or the file given to `--baseline`) that matches no
//! current finding: the finding it accepted was fixed, or its line changed. A warning; an
//! error when `CI=true`. Only entries of rules that ran, and — with `--since`/`--staged` —
//! of paths in the change, are considered.
//!
//! ## Why
//! A baseline only ever shrinks. A stale entry would otherwise wait silently and accept
//! the next finding that happens to produce the same fingerprint.
//!
//! ## Example
//! ```yaml
//! entries:
//!   - {rule: import-forbidden, path: "workers/a/src/main.rs", fingerprint: "9c1d…"}
//! ```
//! after the import in `workers/a/src/main.rs` was removed.
//!
//! ## Fix
//! Run `scaffold check --write-baseline` to rewrite the file without the stale entries
//! (allowed under `CI=true`, since it only removes entries), and commit it.

use super::super::baseline::Entry;
use super::super::finding::{Finding, Location};
use crate::repo::yaml::Pos;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "baseline-stale",
    severity: crate::check::finding::Severity::Warning,
    scope: super::Scope::RepoWide,
    summary: "a baseline entry that no longer matches any finding (an error under CI=true)",
    severity_note: " (error under `CI=true`)",
    finds: "a baseline entry that matches no current finding",
};
pub const ID: &str = RULE.id;

pub fn finding(file: &str, e: &Entry, pos: Pos) -> Finding {
    Finding::new(
        ID,
        file,
        Location {
            len: 0,
            ..pos.into()
        },
    )
    .message(format!(
        "baseline entry for `{}` in `{}` matches no finding",
        e.rule, e.path
    ))
    .label("stale entry")
    .help("run `scaffold check --write-baseline` to drop stale entries, and commit the file")
}
