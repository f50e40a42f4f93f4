//! # gate-unknown
//!
//! ## What it finds
//! A rule in `agent/manifests/gate-matrix.yml` whose `require:` names a gate that the
//! file's `gates:` does not define.
//!
//! ## Why
//! `scaffold gates` would have nothing to run for it, so a change that must be verified
//! would pass without the verification anyone intended.
//!
//! ## Example
//! ```yaml
//! gates:
//!   worker-test: {run: "cargo test -p {package}", evidence: test}
//! rules:
//!   - when: {paths: ["workers/**"]}
//!     require: [worker-tests]        # gate-unknown: no gate `worker-tests`
//! ```
//!
//! ## Fix
//! Correct the name, or define the gate under `gates:` with the command it runs.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use crate::repo::gate_matrix::GATE_MATRIX_PATH;
use crate::repo::manifest::closest;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "gate-unknown",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "the gate matrix requires a gate it does not define",
    severity_note: "",
    finds: "the gate matrix requires a gate it does not define",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let Some((gm, _)) = &ctx.repo.gate_matrix else {
        return;
    };
    let names: Vec<&str> = gm.gates.iter().map(|g| g.name.as_str()).collect();
    for rule in &gm.rules {
        for (name, pos) in &rule.require {
            if gm.gate(name).is_some() {
                continue;
            }
            let hint = closest(name, &names)
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            sink.push(
                Finding::new(ID, GATE_MATRIX_PATH, (*pos).into())
                    .message(format!(
                        "the gate matrix requires gate `{name}`, which it does not define"
                    ))
                    .label("unknown gate")
                    .help(format!("{hint}defined gates: {}", names.join(", "))),
            );
        }
    }
}
