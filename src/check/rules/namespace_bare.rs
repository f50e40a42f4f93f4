//! # namespace-bare
//!
//! ## What it finds
//! A folder directly under `om/src/` (a namespace of the object model; `src/bin/`, Cargo's
//! binary targets, excepted) that lacks `kinds.rs` or `README.md`. The finding points at the folder's `mod` declaration in
//! `om/src/lib.rs` (or `root.rs`), else at the folder's first file.
//!
//! ## Why
//! A namespace is made by `scaffold namespace <ns>`, which writes its kinds (`<Ns>Kind` and
//! `<NS>_KINDS`), payload types and README together. A folder made by hand has none of
//! that: `scaffold worker` cannot add kinds to it, its kinds (if any) are not where the
//! registry and the checker look for them, and nobody can read what its work means in the
//! product's language.
//!
//! ## Example
//! ```text
//! om/src/shipping/types/work.rs     # no om/src/shipping/kinds.rs, no README.md
//! ```
//!
//! ## Fix
//! Run `scaffold namespace shipping` (it refuses a bare folder, so move the folder's files
//! aside first and merge them back), or write `kinds.rs` with `<Ns>Kind` and
//! `<NS>_KINDS: &[WorkKindSpec]` and a `README.md` describing the namespace's kinds.

use std::collections::BTreeMap;

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;
use super::super::workqueue::{loc, with_parsed};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "namespace-bare",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a folder under om/src without kinds.rs or README.md (made by hand)",
    severity_note: "",
    finds: "a folder under `om/src/` without `kinds.rs` or `README.md`",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let mut folders: BTreeMap<&str, (bool, bool, &str)> = BTreeMap::new();
    for f in &ctx.repo.files {
        let Some(rest) = f.strip_prefix(crate::layout::OM_SRC) else {
            continue;
        };
        let Some((dir, inner)) = rest.split_once('/') else {
            continue;
        };
        if dir == "bin" {
            // Cargo's binary targets, not a namespace.
            continue;
        }
        let e = folders.entry(dir).or_insert((false, false, f.as_str()));
        e.0 |= inner == "kinds.rs";
        e.1 |= inner == "README.md";
    }
    let bare: Vec<(&str, Vec<&str>, &str)> = folders
        .into_iter()
        .filter_map(|(dir, (kinds, readme, first))| {
            let mut missing = Vec::new();
            if !kinds {
                missing.push("kinds.rs");
            }
            if !readme {
                missing.push("README.md");
            }
            (!missing.is_empty()).then_some((dir, missing, first))
        })
        .collect();
    if bare.is_empty() {
        return;
    }
    let decls = mod_decls(ctx);
    for (dir, missing, first) in bare {
        let (path, at) = decls
            .iter()
            .find(|(name, _, _)| name == dir)
            .map_or((first.to_owned(), Location::START), |(_, p, l)| {
                (p.clone(), *l)
            });
        sink.push(
            Finding::new(ID, path, at)
                .message(format!(
                    "namespace folder om/src/{dir}/ has no {}",
                    missing.join(" and no ")
                ))
                .label(format!("bare namespace `{dir}`"))
                .help(format!(
                    "create the namespace with `scaffold namespace {dir}` (kinds.rs with the `<Ns>Kind` enum and `<NS>_KINDS`, types/work.rs, README.md), or write the missing {}",
                    missing.join(" and ")
                )),
        );
    }
}

/// `mod x;` declarations of om/src/lib.rs and om/src/root.rs: (name, file, where).
fn mod_decls(ctx: &Context<'_>) -> Vec<(String, String, Location)> {
    let mut out = Vec::new();
    for s in &ctx.sources {
        if s.path != crate::layout::OM_LIB && s.path != crate::layout::ROOT_RS {
            continue;
        }
        if s.facts.is_err() {
            continue;
        }
        let found = with_parsed(s.file(), |tree| {
            tree.items
                .iter()
                .filter_map(|i| match i {
                    syn::Item::Mod(m) => Some((
                        m.ident.to_string(),
                        s.path.clone(),
                        loc(s.file(), m.ident.span()),
                    )),
                    _ => None,
                })
                .collect::<Vec<_>>()
        });
        out.extend(found.unwrap_or_default());
    }
    out
}
