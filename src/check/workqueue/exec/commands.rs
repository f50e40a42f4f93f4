//! Processes workers start with `Command::new`: a shell with `-c`, or a program the worker
//! did not build from literals.

use std::collections::{HashMap, HashSet};

use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::worker_code;
use crate::check::cfg_test::item_attrs;
use crate::check::context::Context;
use crate::check::finding::Location;
use crate::check::workqueue::{is_test_code, loc, peel, str_lit, type_name};
use crate::source::SourceFile;

/// A process a worker starts that it should not.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Exec {
    pub path: String,
    /// The program argument of `Command::new`.
    pub at: Location,
    /// The function it is in.
    pub owner: String,
    pub what: ExecKind,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExecKind {
    /// A shell (`sh`) with its command flag (`-c`).
    Shell { shell: String, flag: String },
    /// A program taken from a value the worker received (the text as written).
    Received(String),
}

/// Every process a worker starts that it should not.
pub fn execs<'c>(ctx: &'c Context<'_>) -> &'c [Exec] {
    &worker_code(ctx).execs
}

pub(super) fn execs_in(file: &SourceFile, tree: &syn::File) -> Vec<Exec> {
    let mut v = Fns {
        file,
        impls: Vec::new(),
        out: Vec::new(),
    };
    v.visit_file(tree);
    v.out
}

/// Walks to functions outside test code and analyses each body on its own.
struct Fns<'f> {
    file: &'f SourceFile,
    impls: Vec<String>,
    out: Vec<Exec>,
}

impl Fns<'_> {
    fn body(&mut self, name: String, sig: &syn::Signature, block: &syn::Block) {
        let mut params = HashSet::new();
        let mut lets = HashMap::new();
        for input in &sig.inputs {
            if let syn::FnArg::Typed(t) = input {
                if static_str(&t.ty) {
                    // A `&'static str` parameter is a literal at every call site.
                    let mut names = HashSet::new();
                    pat_idents(&t.pat, &mut names);
                    lets.extend(names.into_iter().map(|n| (n, Class::Literal(None))));
                } else {
                    pat_idents(&t.pat, &mut params);
                }
            }
        }
        let mut b = Body {
            file: self.file,
            params,
            lets,
            commands: Vec::new(),
            named: HashMap::new(),
            seen: HashSet::new(),
        };
        b.visit_block(block);
        let owner = match self.impls.last() {
            Some(t) => format!("{t}::{name}"),
            None => name,
        };
        for c in b.commands {
            let what = match (&c.program, c.shell()) {
                (Class::Received, _) => Some(ExecKind::Received(c.text.clone())),
                (_, Some((shell, args))) => {
                    args.iter()
                        .find(|a| command_flag(&shell, a))
                        .map(|flag| ExecKind::Shell {
                            shell,
                            flag: flag.clone(),
                        })
                }
                _ => None,
            };
            if let Some(what) = what {
                self.out.push(Exec {
                    path: self.file.path.clone(),
                    at: c.at,
                    owner: owner.clone(),
                    what,
                });
            }
        }
    }
}

impl<'ast> Visit<'ast> for Fns<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !is_test_code(item_attrs(i)) {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.impls.push(type_name(&i.self_ty).unwrap_or_default());
        visit::visit_item_impl(self, i);
        self.impls.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.body(f.sig.ident.to_string(), &f.sig, &f.block);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_code(&f.attrs) {
            self.body(f.sig.ident.to_string(), &f.sig, &f.block);
        }
    }
}

fn static_str(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => {
            r.lifetime.as_ref().is_some_and(|l| l.ident == "static")
                && matches!(&*r.elem, syn::Type::Path(p) if p.path.is_ident("str"))
        }
        _ => false,
    }
}

fn pat_idents(p: &syn::Pat, out: &mut HashSet<String>) {
    match p {
        syn::Pat::Ident(i) => {
            out.insert(i.ident.to_string());
        }
        syn::Pat::Reference(r) => pat_idents(&r.pat, out),
        syn::Pat::Type(t) => pat_idents(&t.pat, out),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| pat_idents(e, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|e| pat_idents(e, out)),
        syn::Pat::Struct(s) => s.fields.iter().for_each(|f| pat_idents(&f.pat, out)),
        _ => {}
    }
}

/// Where a program name comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class {
    /// Built from literals (the value when it is one literal).
    Literal(Option<String>),
    /// From a parameter, a field or something computed from one.
    Received,
    /// Not understood: rules stay silent.
    Unknown,
}

fn combine(classes: impl IntoIterator<Item = Class>) -> Class {
    let mut all_lit = true;
    for c in classes {
        match c {
            Class::Received => return Class::Received,
            Class::Unknown => all_lit = false,
            Class::Literal(_) => {}
        }
    }
    if all_lit {
        Class::Literal(None)
    } else {
        Class::Unknown
    }
}

fn all_caps(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[derive(Debug)]
struct Cmd {
    at: Location,
    text: String,
    program: Class,
    /// The literal string arguments given to it.
    args: Vec<String>,
}

impl Cmd {
    /// The shell it runs and the shell's arguments, when it runs one (`env bash …` too).
    fn shell(&self) -> Option<(String, &[String])> {
        let Class::Literal(Some(p)) = &self.program else {
            return None;
        };
        if p.rsplit('/').next() == Some("env") {
            let first = self.args.first()?;
            return shell_name(first).map(|s| (s, &self.args[1..]));
        }
        shell_name(p).map(|s| (s, &self.args[..]))
    }
}

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "ash",
    "cmd",
    "powershell",
    "pwsh",
];

fn shell_name(program: &str) -> Option<String> {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let base = base.to_ascii_lowercase();
    let base = base.strip_suffix(".exe").unwrap_or(&base);
    SHELLS.contains(&base).then(|| base.to_owned())
}

fn command_flag(shell: &str, arg: &str) -> bool {
    match shell {
        "cmd" => matches!(arg.to_ascii_lowercase().as_str(), "/c" | "/k"),
        "powershell" | "pwsh" => matches!(
            arg.to_ascii_lowercase().as_str(),
            "-c" | "-command" | "-encodedcommand" | "-ec"
        ),
        _ => arg.strip_prefix('-').is_some_and(|f| {
            !f.is_empty()
                && !f.starts_with('-')
                && f.chars().all(|c| c.is_ascii_alphabetic())
                && f.contains('c')
        }),
    }
}

struct Body<'f> {
    file: &'f SourceFile,
    params: HashSet<String>,
    lets: HashMap<String, Class>,
    commands: Vec<Cmd>,
    /// Variables holding a command: name → index in `commands`.
    named: HashMap<String, usize>,
    /// Offsets of `Command::new` calls already analysed.
    seen: HashSet<usize>,
}

/// `Command::new(program)`'s program argument.
fn command_new(e: &syn::Expr) -> Option<&syn::Expr> {
    let syn::Expr::Call(c) = peel(e) else {
        return None;
    };
    let syn::Expr::Path(p) = peel(&c.func) else {
        return None;
    };
    let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
    match segs.as_slice() {
        [.., ty, f] if ty.ident == "Command" && f.ident == "new" && c.args.len() == 1 => {
            c.args.first()
        }
        _ => None,
    }
}

/// The root of a method chain and its calls, outermost last.
fn chain(e: &syn::Expr) -> (&syn::Expr, Vec<&syn::ExprMethodCall>) {
    match peel(e) {
        syn::Expr::MethodCall(m) => chain_of(m),
        other => (other, Vec::new()),
    }
}

fn chain_of(m: &syn::ExprMethodCall) -> (&syn::Expr, Vec<&syn::ExprMethodCall>) {
    let mut calls = vec![m];
    let mut cur = &*m.receiver;
    while let syn::Expr::MethodCall(inner) = peel(cur) {
        calls.push(inner);
        cur = &inner.receiver;
    }
    calls.reverse();
    (peel(cur), calls)
}

fn literal_strings(e: &syn::Expr, out: &mut Vec<String>) {
    match peel(e) {
        syn::Expr::Array(a) => a.elems.iter().for_each(|x| literal_strings(x, out)),
        syn::Expr::Macro(m) => {
            if let Ok(list) = m
                .mac
                .parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
            {
                list.iter().for_each(|x| literal_strings(x, out));
            }
        }
        other => out.extend(str_lit(other)),
    }
}

fn chain_args(calls: &[&syn::ExprMethodCall]) -> Vec<String> {
    let mut out = Vec::new();
    for m in calls {
        match m.method.to_string().as_str() {
            "arg" => m.args.iter().for_each(|a| literal_strings(a, &mut out)),
            "args" => m.args.iter().for_each(|a| literal_strings(a, &mut out)),
            _ => {}
        }
    }
    out
}

impl Body<'_> {
    fn class(&self, e: &syn::Expr) -> Class {
        if let Some(s) = str_lit(e) {
            return Class::Literal(Some(s));
        }
        match peel(e) {
            syn::Expr::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return Class::Unknown;
                };
                let name = last.ident.to_string();
                if p.path.segments.len() == 1 {
                    if let Some(c) = self.lets.get(&name) {
                        return c.clone();
                    }
                    if self.params.contains(&name) {
                        return Class::Received;
                    }
                }
                if all_caps(&name) {
                    Class::Literal(None)
                } else {
                    Class::Unknown
                }
            }
            syn::Expr::Field(_) => Class::Received,
            syn::Expr::Index(i) => match self.class(&i.expr) {
                Class::Received => Class::Received,
                _ => Class::Unknown,
            },
            syn::Expr::MethodCall(m) => {
                let inner = self.class(&m.receiver);
                let same = matches!(
                    m.method.to_string().as_str(),
                    "to_string"
                        | "to_owned"
                        | "into"
                        | "as_str"
                        | "as_ref"
                        | "clone"
                        | "as_os_str"
                        | "as_path"
                        | "to_path_buf"
                        | "trim"
                );
                match inner {
                    Class::Received => Class::Received,
                    lit @ Class::Literal(_) if same => lit,
                    _ => Class::Unknown,
                }
            }
            syn::Expr::Call(c) => {
                let conv = matches!(peel(&c.func), syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "from" || s.ident == "new"));
                if conv && c.args.len() == 1 {
                    c.args.first().map_or(Class::Unknown, |a| self.class(a))
                } else {
                    Class::Unknown
                }
            }
            syn::Expr::Macro(m) => {
                let name = m
                    .mac
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                match name.as_str() {
                    "concat" | "env" | "stringify" | "include_str" => Class::Literal(None),
                    "format" => match m
                        .mac
                        .parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
                    {
                        Ok(list) => combine(list.iter().map(|x| self.class(x))),
                        Err(_) => Class::Unknown,
                    },
                    _ => Class::Unknown,
                }
            }
            syn::Expr::If(i) => {
                let then = i
                    .then_branch
                    .stmts
                    .last()
                    .and_then(|s| match s {
                        syn::Stmt::Expr(e, None) => Some(self.class(e)),
                        _ => None,
                    })
                    .unwrap_or(Class::Unknown);
                let other = i
                    .else_branch
                    .as_ref()
                    .map_or(Class::Unknown, |(_, e)| self.class(e));
                combine([then, other])
            }
            syn::Expr::Block(b) => match b.block.stmts.last() {
                Some(syn::Stmt::Expr(e, None)) => self.class(e),
                _ => Class::Unknown,
            },
            syn::Expr::Match(m) => combine(m.arms.iter().map(|a| self.class(&a.body))),
            _ => Class::Unknown,
        }
    }

    /// Records the command a `Command::new(…)` chain starts; returns its index.
    fn command(&mut self, e: &syn::Expr) -> Option<usize> {
        let (root, calls) = chain(e);
        self.command_of(root, &calls)
    }

    fn command_of(&mut self, root: &syn::Expr, calls: &[&syn::ExprMethodCall]) -> Option<usize> {
        let program = command_new(root)?;
        let key = root.span().byte_range().start;
        if !self.seen.insert(key) {
            return None;
        }
        let class = self.class(program);
        let args = chain_args(calls);
        let r = program.span().byte_range();
        let text = self
            .file
            .text
            .get(r.start..r.end)
            .unwrap_or_default()
            .to_owned();
        self.commands.push(Cmd {
            at: loc(self.file, program.span()),
            text,
            program: class,
            args,
        });
        Some(self.commands.len() - 1)
    }
}

impl<'ast> Visit<'ast> for Body<'_> {
    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            let name = match &l.pat {
                syn::Pat::Ident(i) => Some(i.ident.to_string()),
                syn::Pat::Type(t) => match &*t.pat {
                    syn::Pat::Ident(i) => Some(i.ident.to_string()),
                    _ => None,
                },
                _ => None,
            };
            if let Some(name) = name {
                if let Some(i) = self.command(&init.expr) {
                    self.named.insert(name.clone(), i);
                } else {
                    let c = self.class(&init.expr);
                    self.lets.insert(name, c);
                }
            }
        }
        visit::visit_local(self, l);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let (root, calls) = chain_of(m);
        if command_new(root).is_some() {
            self.command_of(root, &calls);
        } else if let syn::Expr::Path(p) = root
            && let Some(i) = p
                .path
                .get_ident()
                .and_then(|id| self.named.get(&id.to_string()))
        {
            let i = *i;
            let key = m.method.span().byte_range().start;
            if self.seen.insert(key) {
                let more = chain_args(&calls);
                self.commands[i].args.extend(more);
            }
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        if let syn::Expr::Call(_) = e
            && command_new(e).is_some()
        {
            self.command_of(e, &[]);
        }
        visit::visit_expr(self, e);
    }

    fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {
        // A fn nested in a body is not analysed (a documented blind spot).
    }
}

#[cfg(test)]
mod tests;
