//! Orchestration kinds and their step mappings (seed 001, Procedure 3): every
//! `OrchestrationKindSpec { name: … }` under `om/src/`, and every name a worker's
//! `ORCHESTRATION` handler maps to steps — the string-literal (or same-file const) arms of
//! a `match` on the payload's `orchestration`.
//!
//! A name written another way is unresolved (`None`), and the rule stays silent about the
//! direction it would decide (a blind spot, not a guess). So is a side with a file that
//! does not parse, a handler whose kind is not resolved, or an `ORCHESTRATION` handler with
//! no `match` on the orchestration's name (it maps names some other way): that side is
//! unknown (`None`).

use std::collections::BTreeSet;

use rayon::prelude::*;
use syn::visit::{self, Visit};

use super::registry::{StrExpr, Strings};
use super::{Model, is_test_code, loc, str_lit};
use crate::check::context::{Context, Source};
use crate::check::finding::Location;
use crate::source::SourceFile;

/// The kind whose handler maps orchestrations to their steps.
pub const ORCHESTRATION: &str = "ORCHESTRATION";

/// One orchestration name, where it is written.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Named {
    pub path: String,
    pub at: Location,
    /// `None` when it is not written as a string literal or a const of its file.
    pub name: Option<String>,
}

/// The specs and the mappings of a repository; `None` where they cannot all be known.
#[derive(Debug, Clone, Default)]
pub struct Orchestrations {
    pub specs: Option<Vec<Named>>,
    pub mapped: Option<Vec<Named>>,
}

/// What one file holds: its names, and whether it holds what was looked for at all (for a
/// handler file, a `match` on the orchestration's name).
type Found = (bool, Vec<Named>);

/// Reads the repository's orchestration specs and mappings.
pub fn find(ctx: &Context<'_>) -> Orchestrations {
    let spec_files: Vec<&Source> = ctx
        .sources
        .iter()
        .filter(|s| {
            s.path.starts_with(crate::layout::OM_SRC) && s.mentions("OrchestrationKindSpec")
        })
        .collect();
    let specs = collect(ctx, &spec_files, "orchestration-specs", specs_in);
    let model = Model::of(ctx);
    let mapped = if model.handlers.iter().any(|h| h.kind.is_none()) {
        None
    } else {
        let handler_files: BTreeSet<&str> = model
            .handlers
            .iter()
            .filter(|h| h.kind.as_deref() == Some(ORCHESTRATION))
            .map(|h| h.path.as_str())
            .collect();
        let sources: Vec<&Source> = ctx
            .sources
            .iter()
            .filter(|s| handler_files.contains(s.path.as_str()))
            .collect();
        collect(ctx, &sources, "orchestration-arms", arms_in)
    };
    Orchestrations { specs, mapped }
}

/// Every name in `sources`, sorted; `None` when a file does not parse or does not hold
/// what was looked for.
fn collect(
    ctx: &Context<'_>,
    sources: &[&Source],
    extractor: &str,
    f: fn(&SourceFile, &syn::File) -> Found,
) -> Option<Vec<Named>> {
    let found: Option<Vec<Found>> = sources
        .par_iter()
        .map(|s| {
            if s.facts.is_err() {
                return None;
            }
            ctx.memo.parsed(extractor, s, 0, |tree| f(s.file(), tree))
        })
        .collect();
    let mut out = Vec::new();
    for (holds, names) in found? {
        if !holds {
            return None;
        }
        out.extend(names);
    }
    out.sort_by(|a, b| (&a.path, a.at.offset).cmp(&(&b.path, b.at.offset)));
    Some(out)
}

/// The file's `const X: &str = "…";` items (two that disagree resolve to nothing).
fn file_consts(tree: &syn::File) -> Strings {
    struct Consts(Strings);
    impl<'ast> Visit<'ast> for Consts {
        fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
            if let Some(v) = str_lit(&c.expr) {
                self.0.add_const(c.ident.to_string(), v);
            }
        }
    }
    let mut v = Consts(Strings::default());
    v.visit_file(tree);
    v.0
}

fn specs_in(file: &SourceFile, tree: &syn::File) -> Found {
    struct Specs<'a> {
        file: &'a SourceFile,
        consts: Strings,
        out: Vec<Named>,
    }
    impl<'ast> Visit<'ast> for Specs<'_> {
        fn visit_item(&mut self, i: &'ast syn::Item) {
            if !is_test_code(crate::check::cfg_test::item_attrs(i)) {
                visit::visit_item(self, i);
            }
        }
        fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
            let is_spec = s
                .path
                .segments
                .last()
                .is_some_and(|l| l.ident == "OrchestrationKindSpec");
            if is_spec {
                let name = s
                    .fields
                    .iter()
                    .find(|f| matches!(&f.member, syn::Member::Named(n) if n == "name"));
                if let Some(f) = name {
                    let value = self.consts.resolve(&StrExpr::of(&f.expr), None);
                    // `DEFAULT`'s empty name is the template, not a kind.
                    if value.as_deref() != Some("") {
                        self.out.push(Named {
                            path: self.file.path.clone(),
                            at: loc(self.file, syn::spanned::Spanned::span(&f.expr)),
                            name: value,
                        });
                    }
                }
            }
            visit::visit_expr_struct(self, s);
        }
    }
    let mut v = Specs {
        file,
        consts: file_consts(tree),
        out: Vec::new(),
    };
    v.visit_file(tree);
    (true, v.out)
}

fn arms_in(file: &SourceFile, tree: &syn::File) -> Found {
    struct Arms<'a> {
        file: &'a SourceFile,
        consts: Strings,
        matches: usize,
        out: Vec<Named>,
    }
    impl<'ast> Visit<'ast> for Arms<'_> {
        fn visit_item(&mut self, i: &'ast syn::Item) {
            if !is_test_code(crate::check::cfg_test::item_attrs(i)) {
                visit::visit_item(self, i);
            }
        }
        fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
            if names_orchestration(&m.expr) {
                self.matches += 1;
                for arm in &m.arms {
                    self.pat(&arm.pat);
                }
            }
            visit::visit_expr_match(self, m);
        }
    }
    impl Arms<'_> {
        fn pat(&mut self, p: &syn::Pat) {
            let at = loc(self.file, syn::spanned::Spanned::span(p));
            let name = match p {
                syn::Pat::Or(o) => {
                    for c in &o.cases {
                        self.pat(c);
                    }
                    return;
                }
                syn::Pat::Lit(l) => match &l.lit {
                    syn::Lit::Str(s) => Some(s.value()),
                    _ => None,
                },
                syn::Pat::Path(p) if p.path.segments.len() == 1 => self
                    .consts
                    .resolve(&StrExpr::Const(p.path.segments[0].ident.to_string()), None),
                // A bare identifier is a const when the file has one of that name (syn
                // cannot tell), else a binding: the arm for every name no other arm takes.
                syn::Pat::Ident(i) if i.subpat.is_none() && i.by_ref.is_none() => {
                    let ident = i.ident.to_string();
                    match self.consts.resolve(&StrExpr::Const(ident.clone()), None) {
                        Some(value) => Some(value),
                        None if i.mutability.is_none()
                            && ident.chars().all(|c| {
                                c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'
                            }) =>
                        {
                            None
                        }
                        None => return,
                    }
                }
                syn::Pat::Wild(_) => return,
                _ => None,
            };
            self.out.push(Named {
                path: self.file.path.clone(),
                at,
                name,
            });
        }
    }
    let mut v = Arms {
        file,
        consts: file_consts(tree),
        matches: 0,
        out: Vec::new(),
    };
    v.visit_file(tree);
    (v.matches > 0, v.out)
}

/// Whether a `match` scrutinee reads an `orchestration` field (`item.payload.orchestration`,
/// `….orchestration.as_str()`).
fn names_orchestration(e: &syn::Expr) -> bool {
    match super::peel(e) {
        syn::Expr::Field(f) => {
            matches!(&f.member, syn::Member::Named(n) if n == "orchestration")
                || names_orchestration(&f.base)
        }
        syn::Expr::MethodCall(m) => names_orchestration(&m.receiver),
        syn::Expr::Reference(r) => names_orchestration(&r.expr),
        syn::Expr::Unary(u) => names_orchestration(&u.expr),
        syn::Expr::Index(i) => names_orchestration(&i.expr),
        _ => false,
    }
}
