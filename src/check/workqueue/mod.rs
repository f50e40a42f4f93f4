//! The work-queue model the `kind-*`, `lane-*` and work-queue architecture rules read
//! (docs/reference.md#the-work-queue-scaffold-runtime): the root registry (`om/src/root.rs` → each namespace's `<NS>_KINDS`),
//! every `impl WorkHandler for X` in a worker, the workers' handler tests, and where lanes
//! are deployed.
//!
//! The engine's parse pipeline keeps no syn AST, so the few files this model needs are
//! parsed again here — only those whose text can hold what the rules look for (a cheap
//! substring test on the text the engine already read), in parallel, once per run
//! ([`Model::of`]).

pub mod exec;
pub mod handlers;
pub mod lanes;
pub mod memo;
pub mod orchestrations;
pub mod registry;
pub mod services;
pub mod settings;
pub mod stamp;

use std::sync::OnceLock;

use super::context::{Context, Source};
use super::finding::Location;
use crate::repo::workspace::DepKind;
use crate::source::SourceFile;

pub use crate::layout::runtime::runtime_stamp;
pub use handlers::{Handler, HandlerTests};
pub use registry::Registry;

/// Everything the kind rules share, built on first use.
#[derive(Debug)]
pub struct Model {
    pub registry: Registry,
    pub handlers: Vec<Handler>,
    pub tests: HandlerTests,
}

/// The per-run slot for the model (a field of [`Context`]).
pub type Slot = OnceLock<Model>;

impl Model {
    /// The model of `ctx`'s repository, built once per run.
    pub fn of<'c>(ctx: &'c Context<'_>) -> &'c Model {
        ctx.workqueue.get_or_init(|| Model::build(ctx))
    }

    fn build(ctx: &Context<'_>) -> Model {
        let registry = registry::build(ctx);
        let handlers = handlers::find(ctx, &registry.strings, registry.inputs);
        let tests = handlers::tests(ctx);
        Model {
            registry,
            handlers,
            tests,
        }
    }
}

/// Parses `file` with syn and runs `f` on the tree, then frees this thread's span table
/// (as the engine's own parse does). `None` when the file does not parse, or nests past the
/// depth budget (never handed to syn): the engine reports both as `source-unparsed`, and
/// the rules stay silent about the file.
pub(crate) fn with_parsed<T>(file: &SourceFile, f: impl FnOnce(&syn::File) -> T) -> Option<T> {
    if crate::check::rust_refs::depth::past_budget_of(&file.text).is_some() {
        return None;
    }
    let out = syn::parse_file(&file.text).ok().map(|tree| f(&tree));
    proc_macro2::extra::invalidate_current_thread_spans();
    out
}

/// A file a text reader could not parse: its repo-relative path and why.
pub type Unparsed = (String, String);

/// Reads each `(key, path, text)` with `f` over its syn tree, in parallel, for a caller
/// without a check run (the repository model): what each file gave, in the order given,
/// and the files that do not parse, sorted, with why ([`with_parsed`]'s refusals).
pub(crate) fn parse_texts<K: Send, T: Send>(
    files: Vec<(K, String, String)>,
    f: impl Fn(K, &SourceFile, &syn::File) -> T + Sync,
) -> (Vec<T>, Vec<Unparsed>) {
    use rayon::prelude::*;
    let read: Vec<Result<T, Unparsed>> = files
        .into_par_iter()
        .map(|(key, path, text)| {
            let file = SourceFile::new(path, text);
            with_parsed(&file, |tree| f(key, &file, tree))
                .ok_or_else(|| (file.path.clone(), unparsed_why(&file.text)))
        })
        .collect();
    let mut out = Vec::with_capacity(read.len());
    let mut unparsed = Vec::new();
    for r in read {
        match r {
            Ok(t) => out.push(t),
            Err(u) => unparsed.push(u),
        }
    }
    unparsed.sort();
    (out, unparsed)
}

/// Why [`with_parsed`] gave nothing for `text`: nested past the depth budget, or not Rust.
fn unparsed_why(text: &str) -> String {
    if crate::check::rust_refs::depth::past_budget_of(text).is_some() {
        crate::check::rust_refs::depth::message()
    } else {
        "does not parse as Rust".to_owned()
    }
}

/// Where a syn span is in `file`.
pub(crate) fn loc(file: &SourceFile, span: proc_macro2::Span) -> Location {
    let r = span.byte_range();
    let start = r.start.min(file.text.len());
    let end = r.end.clamp(start, file.text.len());
    Location::in_file(file, start, end - start)
}

/// The parsed (or parseable) sources under `prefix` whose text contains one of `needles`.
pub(crate) fn sources_under<'c>(
    ctx: &'c Context<'_>,
    prefix: &str,
    needles: &[&str],
) -> Vec<&'c Source> {
    ctx.sources
        .iter()
        .filter(|s| s.path.starts_with(prefix) && s.facts.is_ok())
        .filter(|s| needles.is_empty() || needles.iter().any(|n| s.mentions(n)))
        .collect()
}

/// Sources of worker crates, in their `src/` (scope normal, not tests/benches/examples).
pub(crate) fn worker_sources<'c>(ctx: &'c Context<'_>, needles: &[&str]) -> Vec<&'c Source> {
    let workers: std::collections::HashSet<usize> = ctx.workers().map(|(i, _)| i).collect();
    ctx.sources
        .iter()
        .filter(|s| workers.contains(&s.krate) && s.scope == DepKind::Normal && s.facts.is_ok())
        .filter(|s| needles.iter().any(|n| s.mentions(n)))
        .collect()
}

/// `NotifyShipment` → `NOTIFY_SHIPMENT` (docs/reference.md#the-work-queue-scaffold-runtime).
pub fn upper_snake(camel: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = camel.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push('_');
            }
        }
        if *c == '-' {
            out.push('_');
        } else {
            out.extend(c.to_uppercase());
        }
    }
    out
}

/// Whether attributes mark test-only code: `#[cfg(test)]`, `#[test]`, `#[tokio::test]`.
pub(crate) fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let last = a.path().segments.last().map(|s| s.ident.to_string());
        if last.as_deref() == Some("test") {
            return true;
        }
        crate::check::cfg_test::is_cfg_test_attr(a)
    })
}

/// The last identifier of a type path (`crate::a::Foo<T>` → `Foo`).
pub(crate) fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        _ => None,
    }
}

/// Strips `&`, parentheses and groups from an expression.
pub(crate) fn peel(mut e: &syn::Expr) -> &syn::Expr {
    loop {
        e = match e {
            syn::Expr::Reference(r) => &r.expr,
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Group(g) => &g.expr,
            _ => return e,
        };
    }
}

/// A string literal expression's value.
pub(crate) fn str_lit(e: &syn::Expr) -> Option<String> {
    match peel(e) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::upper_snake;

    #[test]
    fn camel_case_variants_become_upper_snake() {
        assert_eq!(upper_snake("NotifyShipment"), "NOTIFY_SHIPMENT");
        assert_eq!(upper_snake("Sweep"), "SWEEP");
        assert_eq!(upper_snake("SendHTTPRequest"), "SEND_HTTP_REQUEST");
        assert_eq!(upper_snake("Retry2Fast"), "RETRY2_FAST");
        assert_eq!(upper_snake("acme-shop"), "ACME_SHOP");
    }
}
