//! # kind-requires-mismatch
//!
//! ## What it finds
//! A handler whose `REQUIRES` does not include the `permission` of its kind's spec.
//!
//! `REQUIRES` is read when it is an array (or a const array in the handler's file) of
//! string literals and consts (the file's own or `om/src/`'s, re-exports and renames
//! included); the spec's permission likewise. When an entry, the permission or the kind is
//! written another way the rule says nothing about that handler.
//!
//! ## Why
//! Nobody may reach through the queue what they could not do directly: a producer needs
//! the spec's permission to enqueue the kind, and the handler declares in `REQUIRES` the
//! permissions its calls take. When the two disagree, one of them is wrong — the handler
//! runs with rights the producer was never checked for, or the spec asks for a permission
//! nothing uses.
//!
//! ## Example
//! ```rust,ignore
//! // spec: WorkKindSpec { name: "NOTIFY_SHIPMENT", permission: "shipping.notify", .. }
//! impl WorkHandler for NotifyShipmentHandler {
//!     const KIND: &'static str = "NOTIFY_SHIPMENT";
//!     const REQUIRES: &'static [&'static str] = &["shipping.read"];  // kind-requires-mismatch
//! }
//! ```
//!
//! ## Fix
//! Add the spec's permission to `REQUIRES` when the handler's calls take it; otherwise
//! change the spec's `permission` to the one a producer really needs.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::Model;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "kind-requires-mismatch",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a handler's REQUIRES does not include its kind spec's permission",
    severity_note: "",
    finds: "a handler's `REQUIRES` lacks its kind spec's `permission`",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let m = Model::of(ctx);
    // Resolved once, first spec of each name first (resolving per handler was quadratic:
    // a tenth of a warm check on a 300-kind registry).
    let mut by_name = std::collections::HashMap::new();
    for k in m.registry.kinds() {
        if let Some(name) = k.name.clone() {
            by_name.entry(name).or_insert(k);
        }
    }
    for h in &m.handlers {
        let (Some(kind), Some(requires)) = (&h.kind, &h.requires) else {
            continue;
        };
        let Some(spec) = by_name.get(kind.as_str()) else {
            continue;
        };
        let Some(permission) = &spec.permission else {
            continue;
        };
        if requires
            .iter()
            .any(|r| r.as_deref() == Some(permission.as_str()))
            || requires.iter().any(Option::is_none)
        {
            continue;
        }
        let listed = requires
            .iter()
            .flatten()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let listed = if listed.is_empty() {
            "nothing".to_owned()
        } else {
            listed
        };
        sink.push(
            Finding::new(ID, h.path.clone(), h.requires_at)
                .message(format!(
                    "handler `{}` of kind `{kind}` requires {listed}, not the spec's permission `{permission}`",
                    h.ty
                ))
                .label(format!("lacks `{permission}`"))
                .help(format!(
                    "add \"{permission}\" to REQUIRES, or change the spec's permission at {}:{}:{}",
                    spec.spec.path, spec.spec.permission_at.line, spec.spec.permission_at.column
                )),
        );
    }
}
