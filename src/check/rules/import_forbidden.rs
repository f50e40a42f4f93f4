//! # import-forbidden
//!
//! ## What it finds
//! Rust code in a crate of layer A that names a crate of layer B, where B is in A's
//! `must_not_import` in `agent/codemap.yml`. An edge is a `use` (grouped and nested
//! `use a::{b, c::d}` and `pub use` re-exports included), an `extern crate … as …`, or a
//! qualified path in an expression, type, pattern, attribute or macro path
//! (`::acme_infra::Client::new()`), including paths in attribute arguments
//! (`#[derive(acme_infra::D)]`), macro arguments (`println!("{}", acme_infra::f())`) and
//! `macro_rules!` bodies. Renamed dependencies (`infra = { package = "acme-infra", … }`)
//! and a `[lib] name` different from the package name are resolved. A crate's code is its
//! module tree from its targets' roots (`mod` declarations, `#[path]` and plain
//! `include!` files included); cfg-gated items are checked on every cfg. Code of tests,
//! benches, examples or under `#[cfg(test)]` (a `#[cfg(test)] mod tests;` file too) is
//! reported as dev-dependency scope, `build.rs` as build scope.
//!
//! Blind spots: `quote!` bodies (code generated for another crate), paths inside string
//! literals (`#[serde(with = "acme_infra::x")]`), what a macro generates, and a glob
//! re-export seen through a third crate is attributed to that crate.
//!
//! ## Why
//! Layers keep a worker from reaching into code it must not depend on (apps, infra).
//! The Cargo.toml edge is caught by `dependency-forbidden`; this rule shows every line
//! that uses it, so the fix is visible in review.
//!
//! ## Example
//! ```rust,ignore
//! // workers/maintenance/src/lib.rs, layer `workers`, must_not_import: [apps, infra]
//! use acme_infra::dns::Resolver;      // import-forbidden
//! ```
//!
//! ## Fix
//! Depend on the capability through a layer you may import (a service, a package or the
//! runtime), or, if the boundary is wrong, change `must_not_import` in
//! `agent/codemap.yml` in a reviewed change.

use super::super::context::Context;
use super::super::edges::EdgeVia;
use super::super::finding::Finding;
use super::super::sink::Sink;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "import-forbidden",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a use/path edge into a layer listed in must_not_import",
    severity_note: "",
    finds: "a `use` / `extern crate` / qualified path into a `must_not_import` layer",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for e in ctx.forbidden_edges(EdgeVia::Reference) {
        let from = &e.from_layer.name;
        let to = &e.to_layer.name;
        sink.push(
            Finding::new(ID, e.path.clone(), e.loc)
                .message(format!(
                    "`{}` (layer `{from}`) imports `{}` (layer `{to}`), which layer `{from}` must not import{}",
                    ctx.repo.workspace.crates[e.from_crate].package,
                    e.name,
                    e.scope_note()
                ))
                .label(format!("import of layer `{to}`"))
                .help(format!(
                    "reach it through a layer `{from}` may import ({}), or change `must_not_import` of `{from}` in agent/codemap.yml",
                    e.from_layer.may_import.join(", ")
                )),
        );
    }
}
