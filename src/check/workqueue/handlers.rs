//! Handlers (`impl WorkHandler for X` in a worker's `src/`) and the tests under each
//! worker's `tests/` that run them.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use syn::visit::{self, Visit};

use super::registry::{StrExpr, Strings, renames};
use super::{is_test_code, loc, peel, str_lit, type_name};
use crate::check::context::Context;
use crate::check::finding::Location;
use crate::source::SourceFile;

/// One `impl WorkHandler for X`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Handler {
    /// Its worker: the index of its crate in the workspace (a check run), or of its folder
    /// among `workers/`'s (read from text, [`from_texts`]).
    pub krate: usize,
    pub path: String,
    /// `X`.
    pub ty: String,
    /// Where `X` is written in the impl header.
    pub ty_at: Location,
    /// The resolved `KIND`; `None` when it is missing or not understood.
    pub kind: Option<String>,
    pub kind_at: Location,
    /// The `REQUIRES` entries (`None` for one that is not understood); `None` when
    /// `REQUIRES` is missing or not an array.
    pub requires: Option<Vec<Option<String>>>,
    pub requires_at: Location,
}

/// Every handler in every worker.
pub fn find(ctx: &Context<'_>, om: &Strings, om_inputs: u128) -> Vec<Handler> {
    let files = super::worker_sources(ctx, &["WorkHandler"]);
    let mut out: Vec<Handler> = files
        .par_iter()
        .filter_map(|s| {
            ctx.memo.parsed("handlers", s, om_inputs, |tree| {
                in_file(s.file(), s.krate, tree, om)
            })
        })
        .flatten()
        .collect();
    out.sort_by(|a, b| (&a.path, a.ty_at.offset).cmp(&(&b.path, b.ty_at.offset)));
    out
}

/// The handlers in the text of worker sources (`(worker, repo-relative path, text)`, the
/// worker being [`Handler::krate`]), for a caller without a check run (the repository
/// model: the generator's "is this kind taken"): the same reader as [`find`], without the
/// cache. Only files that mention `WorkHandler` are parsed, as in [`find`]. Returns the
/// handlers, sorted, and the files that do not parse with why (sorted): a handler in one
/// of those is not known.
pub fn from_texts(
    files: Vec<(usize, String, String)>,
    om: &Strings,
) -> (Vec<Handler>, Vec<super::Unparsed>) {
    let files = files
        .into_iter()
        .filter(|(_, _, text)| text.contains("WorkHandler"))
        .collect();
    let (read, unparsed) =
        super::parse_texts(files, |krate, file, tree| in_file(file, krate, tree, om));
    let mut out: Vec<Handler> = read.into_iter().flatten().collect();
    out.sort_by(|a, b| (&a.path, a.ty_at.offset).cmp(&(&b.path, b.ty_at.offset)));
    (out, unparsed)
}

#[derive(Default)]
struct FileConsts {
    strings: Strings,
    arrays: HashMap<String, Vec<StrExpr>>,
}

fn collect_consts(list: &[syn::Item], c: &mut FileConsts) {
    for item in list {
        match item {
            syn::Item::Const(k) => konst(&k.ident, &k.expr, c),
            syn::Item::Static(k) => konst(&k.ident, &k.expr, c),
            syn::Item::Use(u) => {
                let mut r = Vec::new();
                renames(&u.tree, &mut r);
                for (a, o) in r {
                    c.strings.add_rename(a, o);
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect_consts(inner, c);
                }
            }
            _ => {}
        }
    }
}

fn konst(ident: &syn::Ident, expr: &syn::Expr, c: &mut FileConsts) {
    if let Some(s) = str_lit(expr) {
        c.strings.add_const(ident.to_string(), s);
    } else if let syn::Expr::Array(a) = peel(expr) {
        c.arrays
            .insert(ident.to_string(), a.elems.iter().map(StrExpr::of).collect());
    }
}

fn in_file(file: &SourceFile, krate: usize, tree: &syn::File, om: &Strings) -> Vec<Handler> {
    let mut consts = FileConsts::default();
    collect_consts(&tree.items, &mut consts);
    let mut out = Vec::new();
    impls(file, krate, &tree.items, &consts, om, &mut out);
    out
}

/// Whether an impl is `impl WorkHandler for X`.
pub(crate) fn handler_impl(i: &syn::ItemImpl) -> Option<&syn::Type> {
    let (_, trait_path, _) = i.trait_.as_ref()?;
    trait_path
        .segments
        .last()
        .is_some_and(|s| s.ident == "WorkHandler")
        .then_some(&*i.self_ty)
}

fn impls(
    file: &SourceFile,
    krate: usize,
    list: &[syn::Item],
    consts: &FileConsts,
    om: &Strings,
    out: &mut Vec<Handler>,
) {
    for item in list {
        match item {
            syn::Item::Impl(i) if !is_test_code(&i.attrs) => {
                let Some(self_ty) = handler_impl(i) else {
                    continue;
                };
                let Some(ty) = type_name(self_ty) else {
                    continue;
                };
                let ty_at = loc(file, syn::spanned::Spanned::span(self_ty));
                let konst = |n: &str| {
                    i.items.iter().find_map(|it| match it {
                        syn::ImplItem::Const(c) if c.ident == n => Some(c),
                        _ => None,
                    })
                };
                let kind_c = konst("KIND");
                let kind =
                    kind_c.and_then(|c| consts.strings.resolve(&StrExpr::of(&c.expr), Some(om)));
                let kind_at =
                    kind_c.map_or(ty_at, |c| loc(file, syn::spanned::Spanned::span(&c.expr)));
                let req_c = konst("REQUIRES");
                let requires = req_c.and_then(|c| {
                    let elems: Vec<StrExpr> = match peel(&c.expr) {
                        syn::Expr::Array(a) => a.elems.iter().map(StrExpr::of).collect(),
                        syn::Expr::Path(p) => {
                            let n = p.path.segments.last()?.ident.to_string();
                            let n = consts.strings.original(&n)?.to_owned();
                            consts.arrays.get(&n)?.clone()
                        }
                        _ => return None,
                    };
                    Some(
                        elems
                            .iter()
                            .map(|e| consts.strings.resolve(e, Some(om)))
                            .collect(),
                    )
                });
                let requires_at =
                    req_c.map_or(ty_at, |c| loc(file, syn::spanned::Spanned::span(&c.expr)));
                out.push(Handler {
                    krate,
                    path: file.path.clone(),
                    ty,
                    ty_at,
                    kind,
                    kind_at,
                    requires,
                    requires_at,
                });
            }
            syn::Item::Mod(m) if !is_test_code(&m.attrs) => {
                if let Some((_, inner)) = &m.content {
                    impls(file, krate, inner, consts, om, out);
                }
            }
            _ => {}
        }
    }
}

/// What one test (or helper) function does.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TestFn {
    /// Every identifier it names (with `use … as` aliases resolved).
    pub names: HashSet<String>,
    /// Calls of `handle` (one inside a loop counts as two).
    pub handle_calls: usize,
    /// Calls of `run_twice`.
    pub run_twice_calls: usize,
}

impl TestFn {
    /// Whether it names `handler` and runs a handler twice.
    pub fn runs_twice(&self, handler: &str) -> bool {
        self.names.contains(handler) && (self.run_twice_calls >= 1 || self.handle_calls >= 2)
    }
}

/// The tests of each worker crate.
#[derive(Debug, Clone, Default)]
pub struct HandlerTests {
    /// By crate index: its test functions, and whether a file of its tests/ did not parse
    /// (then nothing is known about its tests).
    pub by_crate: HashMap<usize, (Vec<TestFn>, bool)>,
}

impl HandlerTests {
    /// `Some(true)` when a test of `krate` runs `handler` twice, `None` when unknowable.
    pub fn tested(&self, krate: usize, handler: &str) -> Option<bool> {
        match self.by_crate.get(&krate) {
            None => Some(false),
            Some((_, true)) => None,
            Some((tests, false)) => Some(tests.iter().any(|t| t.runs_twice(handler))),
        }
    }
}

pub fn tests(ctx: &Context<'_>) -> HandlerTests {
    let mut by_crate: HashMap<usize, Vec<&crate::check::context::Source>> = HashMap::new();
    for s in &ctx.sources {
        by_crate.entry(s.krate).or_default().push(s);
    }
    // Every worker's test files, parsed in one parallel pass (one pass per worker would
    // hand each small batch to the thread pool and wait for it, hundreds of times).
    let mut files: Vec<(usize, &crate::check::context::Source)> = Vec::new();
    let mut broken: HashMap<usize, bool> = HashMap::new();
    for (k, c) in ctx.workers() {
        let prefix = if c.dir.is_empty() {
            "tests/".to_owned()
        } else {
            format!("{}/tests/", c.dir)
        };
        let mine = by_crate
            .get(&k)
            .into_iter()
            .flatten()
            .filter(|s| s.path.starts_with(&prefix));
        let b = broken.entry(k).or_default();
        for s in mine {
            *b |= s.facts.is_err();
            files.push((k, s));
        }
    }
    let parsed: Vec<(usize, Vec<FnInfo>)> = files
        .par_iter()
        .filter(|(_, s)| s.facts.is_ok())
        .filter_map(|(k, s)| ctx.memo.parsed("tests", s, 0, file_fns).map(|f| (*k, f)))
        .collect();
    let mut fns: HashMap<usize, Vec<FnInfo>> = HashMap::new();
    for (k, f) in parsed {
        fns.entry(k).or_default().extend(f);
    }
    let mut out = HandlerTests::default();
    for (k, broken) in broken {
        let mine = fns.remove(&k).unwrap_or_default();
        out.by_crate.insert(k, (test_fns(&mine), broken));
    }
    out
}

#[derive(serde::Serialize, serde::Deserialize)]
struct FnInfo {
    name: String,
    is_test: bool,
    stats: TestFn,
    /// Functions it calls by a bare name, and whether the call is inside a loop.
    calls: Vec<(String, bool)>,
}

/// The functions of one test file, with `use … as` aliases resolved in the names they use.
fn file_fns(tree: &syn::File) -> Vec<FnInfo> {
    let mut aliases = Vec::new();
    let mut fns = Vec::new();
    gather(&tree.items, &mut aliases, &mut fns);
    let alias: HashMap<String, String> = aliases.into_iter().collect();
    for f in &mut fns {
        let extra: Vec<String> = f
            .stats
            .names
            .iter()
            .filter_map(|n| alias.get(n).cloned())
            .collect();
        f.stats.names.extend(extra);
    }
    fns
}

/// Each test function of a crate's tests/, with the calls of the helpers it calls (by
/// name, in any file of tests/, transitively) added to its own. A helper called inside a
/// loop runs (at least) twice.
fn test_fns(fns: &[FnInfo]) -> Vec<TestFn> {
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in fns.iter().enumerate() {
        by_name.entry(f.name.as_str()).or_default().push(i);
    }
    fns.iter()
        .enumerate()
        .filter(|(_, f)| f.is_test)
        .map(|(start, _)| {
            let mut total = TestFn::default();
            let mut seen = HashSet::new();
            let mut stack = vec![(start, 1)];
            while let Some((g, times)) = stack.pop() {
                if !seen.insert(g) {
                    continue;
                }
                let g = &fns[g];
                total.names.extend(g.stats.names.iter().cloned());
                total.handle_calls += g.stats.handle_calls * times;
                total.run_twice_calls += g.stats.run_twice_calls * times;
                for (c, looped) in &g.calls {
                    for &i in by_name.get(c.as_str()).into_iter().flatten() {
                        stack.push((i, if *looped { 2 } else { times }));
                    }
                }
            }
            total
        })
        .collect()
}

fn gather(list: &[syn::Item], aliases: &mut Vec<(String, String)>, fns: &mut Vec<FnInfo>) {
    for item in list {
        match item {
            syn::Item::Use(u) => renames(&u.tree, aliases),
            syn::Item::Fn(f) => {
                let mut v = Calls::default();
                v.visit_block(&f.block);
                fns.push(FnInfo {
                    name: f.sig.ident.to_string(),
                    is_test: is_test_fn(&f.attrs),
                    stats: v.stats,
                    calls: v.calls,
                });
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    gather(inner, aliases, fns);
                }
            }
            _ => {}
        }
    }
}

/// `#[test]`, `#[tokio::test]`, any `#[…::test]`, `#[rstest]`, `#[test_case(…)]`.
fn is_test_fn(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "test" || s.ident == "rstest" || s.ident == "test_case")
    })
}

#[derive(Default)]
struct Calls {
    stats: TestFn,
    calls: Vec<(String, bool)>,
    loops: usize,
}

impl Calls {
    fn handle_once(&mut self) {
        self.stats.handle_calls += if self.loops > 0 { 2 } else { 1 };
    }

    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        let tts: Vec<proc_macro2::TokenTree> = ts.into_iter().collect();
        for (i, tt) in tts.iter().enumerate() {
            match tt {
                proc_macro2::TokenTree::Ident(id) => {
                    let s = id.to_string();
                    let called = matches!(tts.get(i + 1), Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                    let after_dot = i > 0
                        && matches!(&tts[i - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
                    if called && s == "handle" && after_dot {
                        self.handle_once();
                    } else if called && s == "run_twice" {
                        self.stats.run_twice_calls += 1;
                    } else if called && !after_dot {
                        self.calls.push((s.clone(), self.loops > 0));
                    }
                    self.stats.names.insert(s);
                }
                proc_macro2::TokenTree::Group(g) => self.tokens(g.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Calls {
    fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
        self.stats.names.insert(i.to_string());
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == "handle" {
            self.handle_once();
        } else if m.method == "run_twice" {
            self.stats.run_twice_calls += 1;
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = peel(&c.func)
            && let Some(last) = p.path.segments.last()
        {
            if last.ident == "run_twice" {
                self.stats.run_twice_calls += 1;
            } else if last.ident == "handle" && p.path.segments.len() >= 2 {
                self.handle_once();
            } else {
                // A helper, maybe of another file of tests/ (`common::run_both(…)`).
                self.calls.push((last.ident.to_string(), self.loops > 0));
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
        self.loops += 1;
        visit::visit_expr_for_loop(self, e);
        self.loops -= 1;
    }

    fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
        self.loops += 1;
        visit::visit_expr_while(self, e);
        self.loops -= 1;
    }

    fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
        self.loops += 1;
        visit::visit_expr_loop(self, e);
        self.loops -= 1;
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }
}
