//! # kind-duplicate
//!
//! ## What it finds
//! A kind name registered twice in the root registry: two `WorkKindSpec`s with the same
//! `name` in the namespace slices `om/src/root.rs`'s `KINDS` lists (in one namespace or in
//! two), or one namespace slice listed twice in `KINDS`.
//!
//! Names are read as string literals, consts holding one (anywhere in `om/src/`, also
//! through `pub use` re-exports and `use … as` renames) and `<Ns>Kind::<Variant>.as_str()`.
//! A spec whose name is written some other way is not compared (a blind spot).
//!
//! ## Why
//! The runtime looks a kind up by name: with two specs of one name, which permission, lane
//! and payload an item gets depends on registry order, and a producer of one namespace can
//! start the other namespace's work.
//!
//! ## Example
//! ```rust,ignore
//! // om/src/billing/kinds.rs
//! pub const BILLING_KINDS: &[WorkKindSpec] = &[
//!     WorkKindSpec { name: "NOTIFY_SHIPMENT", permission: "billing.notify", ..WorkKindSpec::DEFAULT },
//! ];  // kind-duplicate: om/src/shipping/kinds.rs registers NOTIFY_SHIPMENT already
//! ```
//!
//! ## Fix
//! Give one of the kinds another name (its enum variant, spec, handler and tests), or
//! delete the duplicate spec; list each namespace slice once in `KINDS`.

use std::collections::HashMap;

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::Model;
use super::super::workqueue::registry::ROOT_PATH;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "kind-duplicate",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "one kind name registered twice",
    severity_note: "",
    finds: "one kind name registered twice, or a namespace slice listed twice in `KINDS`",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let reg = &Model::of(ctx).registry;
    let mut entries_seen: Vec<(&Vec<usize>, &str, usize)> = Vec::new();
    let mut names: HashMap<String, (String, usize)> = HashMap::new();
    for entry in &reg.entries {
        let Some(specs) = &entry.specs else { continue };
        if let Some((_, text, line)) = entries_seen
            .iter()
            .find(|(s, _, _)| *s == specs && !specs.is_empty())
        {
            sink.push(
                Finding::new(ID, ROOT_PATH, entry.at)
                    .message(format!(
                        "`{}` is registered twice in KINDS (first as `{text}` on line {line})",
                        entry.text
                    ))
                    .label("listed again")
                    .help("list each namespace's slice once in KINDS"),
            );
            continue;
        }
        entries_seen.push((specs, &entry.text, entry.at.line));
        for &i in specs {
            let k = reg.resolve(&reg.specs[i]);
            let Some(name) = k.name else { continue };
            let here = format!(
                "{}:{}:{}",
                k.spec.path, k.spec.name_at.line, k.spec.name_at.column
            );
            match names.get(&name) {
                Some((first, _)) => sink.push(
                    Finding::new(ID, k.spec.path.clone(), k.spec.name_at)
                        .message(format!(
                            "kind `{name}` is registered twice: in `{}` and first at {first}",
                            k.spec.slice
                        ))
                        .label("registered again")
                        .help(format!(
                            "kind names are global across namespaces: rename this kind (its enum variant, spec, handler and tests) or delete the spec registered at {first}"
                        )),
                ),
                None => {
                    names.insert(name, (here, i));
                }
            }
        }
    }
}
