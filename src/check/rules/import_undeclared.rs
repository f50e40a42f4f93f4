//! # import-undeclared
//!
//! ## What it finds
//! An edge (a Cargo.toml path dependency, or a `use` / `extern crate` / qualified path in
//! Rust code) from a crate of layer A to a crate of layer B, where B is neither A itself
//! nor in A's `may_import`, and not in its `must_not_import` either (that is
//! `import-forbidden` / `dependency-forbidden`). A warning by default.
//!
//! ## Why
//! `may_import` is the layer's declared surface. An edge nobody declared is how layers
//! erode: each one is harmless, together they make every crate depend on every other.
//!
//! ## Example
//! ```yaml
//! layers:
//!   om:       {paths: ["om/**"], may_import: [runtime]}
//!   packages: {paths: ["packages/**"], may_import: []}
//! ```
//! ```rust,ignore
//! // om/src/lib.rs
//! use acme_money::Cents;     // import-undeclared: om -> packages
//! ```
//!
//! ## Fix
//! If the edge is intended, add the layer to `may_import`; otherwise remove it. Make it an
//! error with `policy: {import-undeclared: error}` once the codemap is complete.

use super::super::context::Context;
use super::super::edges::{EdgeVia, Verdict};
use super::super::finding::Finding;
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "import-undeclared",
    severity: crate::check::finding::Severity::Warning,
    scope: super::Scope::Local,
    summary: "an edge to a layer that is not in may_import",
    severity_note: "",
    finds: "an edge to a layer not in `may_import`",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for e in ctx.edges() {
        if e.verdict() != Verdict::Undeclared {
            continue;
        }
        let from = &e.from_layer.name;
        let to = &e.to_layer.name;
        let what = match e.via {
            EdgeVia::Dependency => "depends on",
            EdgeVia::Reference => "imports",
        };
        sink.push(
            Finding::new(ID, e.path.clone(), e.loc)
                .message(format!(
                    "`{}` (layer `{from}`) {what} `{}` (layer `{to}`){}, but `{to}` is not in `{from}`'s may_import",
                    ctx.repo.workspace.crates[e.from_crate].package,
                    e.name,
                    e.scope_note()
                ))
                .label(format!("undeclared edge to layer `{to}`"))
                .help(format!("add `{to}` to `layers.{from}.may_import` in agent/codemap.yml if this edge is intended, or remove it")),
        );
    }
}
