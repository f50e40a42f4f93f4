//! # crate-unlayered
//!
//! ## What it finds
//! A workspace crate whose directory (or `Cargo.toml`) matches no layer's `paths` in
//! `agent/codemap.yml`.
//!
//! ## Why
//! A crate in no layer has no import rules: its edges are not checked in either
//! direction, so a forbidden dependency can hide behind it. The checker fails closed and
//! says so instead of skipping the crate.
//!
//! ## Example
//! ```yaml
//! layers:
//!   workers: {paths: ["workers/**"]}
//! ```
//! with a crate at `tools/migrate/Cargo.toml` (no layer matches `tools/**`).
//!
//! ## Fix
//! Add a layer whose `paths` cover the crate (`tools: {paths: ["tools/**"], may_import:
//! [om]}`), or extend an existing layer's `paths`.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "crate-unlayered",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a workspace crate whose path matches no layer in agent/codemap.yml",
    severity_note: "",
    finds: "a workspace crate in no layer (its edges could not be checked)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let layers: Vec<&str> = ctx
        .repo
        .codemap
        .layers
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    for (i, c) in ctx.repo.workspace.crates.iter().enumerate() {
        if ctx.crate_layer[i].is_some() {
            continue;
        }
        let dir = if c.dir.is_empty() {
            "."
        } else {
            c.dir.as_str()
        };
        sink.push(
            Finding::new(ID, c.manifest.path.clone(), c.package_loc)
                .message(format!("crate `{}` at `{dir}` is in no layer", c.package))
                .label("matches no layer's paths")
                .help(format!(
                    "add `{dir}/**` to the `paths` of a layer in agent/codemap.yml (layers: {}), or declare a new layer for it",
                    layers.join(", ")
                )),
        );
    }
}
