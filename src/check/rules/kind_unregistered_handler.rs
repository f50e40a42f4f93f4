//! # kind-unregistered-handler
//!
//! ## What it finds
//! A handler (`impl WorkHandler for X` in a worker) whose `KIND` the root registry does
//! not hold: no spec in any namespace slice listed in `om/src/root.rs`'s `KINDS` has that
//! name. The kind may be registered in any namespace — a handler of the billing worker for a
//! shipping kind is fine.
//!
//! A `KIND` written other than as a string literal, a const (its file's or `om/src/`'s) or
//! `<Ns>Kind::<Variant>.as_str()` is not checked; neither is any handler while an element of
//! `KINDS`, or the name of a spec it lists, is written in a shape the checker does not read
//! (then a missing kind might be there after all).
//!
//! ## Why
//! Nothing can enqueue an item of an unregistered kind, so the handler never runs — and the
//! work loop refuses to start with a handler for a kind the registry does not hold. Usually
//! the kind was renamed on one side only, or its namespace slice is missing from `KINDS`.
//!
//! ## Example
//! ```rust,ignore
//! impl WorkHandler for NotifyShipmentHandler {
//!     const KIND: &'static str = "NOTIFY_SHIPMNET";   // kind-unregistered-handler
//!     ...
//! }
//! ```
//!
//! ## Fix
//! Correct the `KIND` (prefer `ShippingKind::NotifyShipment.as_str()`, which the compiler
//! checks), or register the kind: its spec in the namespace's `<NS>_KINDS` and the slice in
//! `KINDS` below the `// scaffold:kinds` marker.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::Model;
use super::super::workqueue::registry::ROOT_PATH;
use crate::repo::manifest::closest;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "kind-unregistered-handler",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a handler for a kind the root registry does not hold",
    severity_note: "",
    finds: "a handler whose `KIND` the root registry does not hold (in any namespace)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let m = Model::of(ctx);
    let reg = &m.registry;
    if reg.root_exists && !reg.complete() {
        return;
    }
    let kinds = reg.kinds();
    let names: Vec<&str> = kinds.iter().filter_map(|k| k.name.as_deref()).collect();
    for h in &m.handlers {
        let Some(kind) = &h.kind else { continue };
        if names.contains(&kind.as_str()) {
            continue;
        }
        let help = if reg.root_exists {
            let hint = closest(kind, &names)
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            format!(
                "{hint}register `{kind}` in its namespace's `<NS>_KINDS` (and that slice in KINDS of {ROOT_PATH}, below `// scaffold:kinds`), or correct the handler's KIND"
            )
        } else {
            format!(
                "{ROOT_PATH} does not exist: the registry's KINDS must list every kind a worker handles"
            )
        };
        sink.push(
            Finding::new(ID, h.path.clone(), h.kind_at)
                .message(format!(
                    "handler `{}` handles kind `{kind}`, which the root registry does not hold",
                    h.ty
                ))
                .label("unregistered kind")
                .help(help),
        );
    }
}
