//! Direct `enqueue` calls in services' managers.

use rayon::prelude::*;
use syn::visit::{self, Visit};

use super::{is_test_code, loc, peel, type_name};
use crate::check::context::Context;
use crate::check::finding::Location;
use crate::repo::workspace::DepKind;
use crate::source::SourceFile;

/// The store calls that enqueue outside the caller's transaction.
pub const DIRECT: &[&str] = &["enqueue", "enqueue_many"];

/// One direct enqueue in a manager.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EnqueueCall {
    pub path: String,
    pub at: Location,
    /// `enqueue` or `enqueue_many`.
    pub call: String,
    /// `AccountsManager::close`, or the function's name in a `manager.rs`.
    pub owner: String,
}

/// Every direct enqueue in the non-test code of a manager under `services/`.
pub fn manager_enqueues(ctx: &Context<'_>) -> Vec<EnqueueCall> {
    let files: Vec<_> = super::sources_under(ctx, crate::layout::SERVICES_DIR, &["enqueue"])
        .into_iter()
        .filter(|s| s.scope == DepKind::Normal)
        .collect();
    let mut out: Vec<EnqueueCall> = files
        .par_iter()
        .filter_map(|s| {
            ctx.memo.parsed("enqueues", s, 0, |tree| {
                let mut v = Managers {
                    file: s.file(),
                    manager_file: s.path.ends_with("/manager.rs"),
                    impls: Vec::new(),
                    fns: Vec::new(),
                    out: Vec::new(),
                };
                v.visit_file(tree);
                v.out
            })
        })
        .flatten()
        .collect();
    out.sort_by(|a, b| (&a.path, a.at.offset).cmp(&(&b.path, b.at.offset)));
    out
}

struct Managers<'f> {
    file: &'f SourceFile,
    manager_file: bool,
    impls: Vec<String>,
    fns: Vec<String>,
    out: Vec<EnqueueCall>,
}

impl Managers<'_> {
    fn in_manager(&self) -> bool {
        self.manager_file || self.impls.last().is_some_and(|t| t.ends_with("Manager"))
    }

    fn hit(&mut self, ident: &syn::Ident) {
        let name = ident.to_string();
        if !DIRECT.contains(&name.as_str()) || !self.in_manager() || self.fns.is_empty() {
            return;
        }
        let f = self.fns.last().cloned().unwrap_or_default();
        let owner = match self.impls.last() {
            Some(t) => format!("{t}::{f}"),
            None => f,
        };
        self.out.push(EnqueueCall {
            path: self.file.path.clone(),
            at: loc(self.file, ident.span()),
            call: name,
            owner,
        });
    }
}

impl<'ast> Visit<'ast> for Managers<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !is_test_code(crate::check::cfg_test::item_attrs(i)) {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.impls.push(type_name(&i.self_ty).unwrap_or_default());
        visit::visit_item_impl(self, i);
        self.impls.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test_code(&f.attrs) {
            return;
        }
        self.fns.push(f.sig.ident.to_string());
        visit::visit_impl_item_fn(self, f);
        self.fns.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.fns.push(f.sig.ident.to_string());
        visit::visit_item_fn(self, f);
        self.fns.pop();
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        self.hit(&m.method);
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = peel(&c.func)
            && p.path.segments.len() >= 2
            && let Some(last) = p.path.segments.last()
        {
            self.hit(&last.ident);
        }
        visit::visit_expr_call(self, c);
    }
}
