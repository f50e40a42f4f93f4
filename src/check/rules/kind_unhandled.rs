//! # kind-unhandled
//!
//! ## What it finds
//! A kind the root registry (`om/src/root.rs` → `KINDS`) registers that no worker handles:
//! no `impl WorkHandler for X` in any worker crate has `KIND` equal to its name.
//!
//! A handler's `KIND` is read as a string literal, a const (in its file or in `om/src/`),
//! or `<Ns>Kind::<Variant>.as_str()`. When some handler's `KIND` is written another way it
//! could be any kind, and this rule says nothing (a blind spot, not a guess).
//!
//! ## Why
//! Items of the kind are enqueued, claimed by nobody, and age on their lane until someone
//! notices the lag; the work loop of the lane refuses to start without a handler for every
//! registered kind on it.
//!
//! ## Example
//! ```rust,ignore
//! // om/src/shipping/kinds.rs
//! WorkKindSpec { name: "NOTIFY_SHIPMENT", permission: "shipping.notify", ..WorkKindSpec::DEFAULT },
//! // ... and no `const KIND: &'static str = "NOTIFY_SHIPMENT";` in any worker
//! ```
//!
//! ## Fix
//! Add the handler where it belongs: `scaffold worker <worker> NOTIFY_SHIPMENT` writes it
//! with its test and registration. If nothing produces the kind any more, delete its spec
//! (and enum variant).

use std::collections::HashSet;

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::Model;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "kind-unhandled",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a registered kind with no handler in any worker",
    severity_note: "",
    finds: "a kind the root registry (`om/src/root.rs` → `<NS>_KINDS`) registers that no worker's `impl WorkHandler` handles",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let m = Model::of(ctx);
    if m.handlers.iter().any(|h| h.kind.is_none()) {
        return;
    }
    let handled: HashSet<&str> = m
        .handlers
        .iter()
        .filter_map(|h| h.kind.as_deref())
        .collect();
    let mut reported = HashSet::new();
    for k in m.registry.kinds() {
        let Some(name) = k.name else { continue };
        if handled.contains(name.as_str()) || !reported.insert(name.clone()) {
            continue;
        }
        sink.push(
            Finding::new(ID, k.spec.path.clone(), k.spec.name_at)
                .message(format!("kind `{name}` is registered but no worker handles it"))
                .label("no handler")
                .help(format!(
                    "add its handler with `scaffold worker <worker> {name}` (handler, test and registration), or delete the spec if nothing produces `{name}` any more"
                )),
        );
    }
}
