//! # gate-pattern-dead
//!
//! ## What it finds
//! A `when: {paths: [...]}` pattern in `agent/manifests/gate-matrix.yml` that matches no
//! file in the repository (gitignored files do not count).
//!
//! ## Why
//! A pattern that matches nothing never requires its gates: usually a directory was
//! renamed (`verification/replays/**` for `verification/replay/**`) and the gate silently
//! stopped running.
//!
//! ## Example
//! ```yaml
//! rules:
//!   - when: {paths: ["worker/**"]}     # gate-pattern-dead: the folder is `workers/`
//!     require: [worker-test]
//! ```
//!
//! ## Fix
//! Correct the pattern to the paths it should cover, or delete the rule if those files
//! are gone.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use crate::repo::gate_matrix::GATE_MATRIX_PATH;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "gate-pattern-dead",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a gate-matrix path pattern that matches no file",
    severity_note: "",
    finds: "a gate-matrix path pattern that matches no file",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let Some((gm, _)) = &ctx.repo.gate_matrix else {
        return;
    };
    for rule in &gm.rules {
        for g in &rule.paths {
            if ctx.repo.files.iter().any(|f| g.is_match(f)) {
                continue;
            }
            sink.push(
                Finding::new(ID, GATE_MATRIX_PATH, g.pos.into())
                    .message(format!("gate-matrix pattern `{}` matches no file", g.pattern))
                    .label("matches nothing")
                    .help("correct the pattern to the paths it should cover, or remove it; its gates never run as written"),
            );
        }
    }
}
