//! # dependency-forbidden
//!
//! ## What it finds
//! A path dependency in a crate's `Cargo.toml` (under `[dependencies]`,
//! `[dev-dependencies]`, `[build-dependencies]` or a `[target.'…'.*]` table, directly or
//! through `workspace = true`) on a crate of a layer its own layer lists in
//! `must_not_import`. Renamed dependencies (`infra = { package = "acme-infra", … }`) are
//! resolved by their path. Dev- and build-dependencies are reported as such.
//!
//! ## Why
//! The dependency is what makes a forbidden import compile at all; removing it is the
//! fix that keeps the boundary closed for good.
//!
//! ## Example
//! ```toml
//! # workers/maintenance/Cargo.toml (layer workers, must_not_import: [infra])
//! [dependencies]
//! acme-infra = { path = "../../infra/dns" }   # dependency-forbidden
//! ```
//!
//! ## Fix
//! Remove the dependency and reach the capability through a layer the crate may import;
//! or change the layer's `must_not_import` in `agent/codemap.yml` in a reviewed change.

use super::super::context::Context;
use super::super::edges::EdgeVia;
use super::super::finding::Finding;
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "dependency-forbidden",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a Cargo.toml path dependency into a layer listed in must_not_import",
    severity_note: "",
    finds: "a Cargo.toml path dependency into a `must_not_import` layer",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for e in ctx.forbidden_edges(EdgeVia::Dependency) {
        let from = &e.from_layer.name;
        let to = &e.to_layer.name;
        sink.push(
            Finding::new(ID, e.path.clone(), e.loc)
                .message(format!(
                    "`{}` (layer `{from}`) depends on `{}` (layer `{to}`){}, which layer `{from}` must not import",
                    ctx.repo.workspace.crates[e.from_crate].package,
                    e.name,
                    e.scope_note()
                ))
                .label(format!("dependency on layer `{to}`"))
                .help(format!(
                    "remove this dependency and use a layer `{from}` may import ({}), or change `must_not_import` of `{from}` in agent/codemap.yml",
                    e.from_layer.may_import.join(", ")
                )),
        );
    }
}
