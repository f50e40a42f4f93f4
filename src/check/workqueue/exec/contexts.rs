//! `WorkContext`s a handler builds itself (`WorkContext::new(…)`, `WorkContext { … }`).

use std::collections::HashSet;

use syn::visit::{self, Visit};

use super::{BuiltContext, all_impls};
use crate::check::workqueue::handlers::handler_impl;
use crate::check::workqueue::{is_test_code, loc, peel, type_name};
use crate::source::SourceFile;

pub(super) fn contexts_in(file: &SourceFile, tree: &syn::File) -> Vec<BuiltContext> {
    let mut impls = Vec::new();
    all_impls(&tree.items, &mut impls);
    let handlers: HashSet<String> = impls
        .iter()
        .filter_map(|i| handler_impl(i).and_then(type_name))
        .collect();
    let mut v = Contexts {
        file,
        owner: String::new(),
        out: Vec::new(),
    };
    for i in impls {
        let Some(ty) = type_name(&i.self_ty) else {
            continue;
        };
        if !handlers.contains(&ty) {
            continue;
        }
        for item in &i.items {
            if let syn::ImplItem::Fn(f) = item {
                if is_test_code(&f.attrs) {
                    continue;
                }
                v.owner = format!("{ty}::{}", f.sig.ident);
                v.visit_block(&f.block);
            }
        }
    }
    v.out
}

struct Contexts<'f> {
    file: &'f SourceFile,
    owner: String,
    out: Vec<BuiltContext>,
}

impl Contexts<'_> {
    fn push(&mut self, seg: &syn::PathSegment, how: String) {
        self.out.push(BuiltContext {
            path: self.file.path.clone(),
            at: loc(self.file, seg.ident.span()),
            owner: self.owner.clone(),
            how,
        });
    }
}

/// The associated functions that make a new `WorkContext`.
fn constructor(name: &str) -> bool {
    matches!(name, "new" | "default" | "builder")
        || name.starts_with("from")
        || name.starts_with("with")
        || name.starts_with("for_")
}

impl<'ast> Visit<'ast> for Contexts<'_> {
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = peel(&c.func) {
            let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
            if let [.., ty, f] = segs.as_slice()
                && ty.ident == "WorkContext"
                && constructor(&f.ident.to_string())
            {
                self.push(ty, format!("WorkContext::{}(…)", f.ident));
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        if let Some(last) = s.path.segments.last()
            && last.ident == "WorkContext"
        {
            self.push(last, "WorkContext { … }".to_owned());
        }
        visit::visit_expr_struct(self, s);
    }
}
