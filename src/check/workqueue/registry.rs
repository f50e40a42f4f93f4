//! The root registry: `om/src/root.rs`'s `KINDS: &[&[WorkKindSpec]]`, each element
//! resolved to the namespace slice `<NS>_KINDS: &[WorkKindSpec]` that defines it (wherever
//! in `om/src/` it is defined and however it is re-exported), and each spec's
//! `name`, `permission` and `lane`.
//!
//! Values are resolved when written as string literals, as consts holding a string literal
//! (found by name anywhere in `om/src/`, through `use … as …` renames), or as
//! `<Ns>Kind::<Variant>.as_str()` (the variant in UPPER_SNAKE). Anything else is
//! *unresolved*, and rules stay silent about what depends on it.

use std::collections::HashMap;

use rayon::prelude::*;

use super::{loc, peel, str_lit, upper_snake};
use crate::check::context::Context;
use crate::check::finding::Location;
use crate::source::SourceFile;

pub use crate::layout::{DEFAULT_LANE, ROOT_RS as ROOT_PATH};

/// How a string value is written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StrExpr {
    Lit(String),
    /// A path whose last segment names a const.
    Const(String),
    /// `<Ns>Kind::<Variant>.as_str()`, already in UPPER_SNAKE.
    Variant(String),
    Unknown,
}

impl StrExpr {
    pub fn of(e: &syn::Expr) -> StrExpr {
        if let Some(s) = str_lit(e) {
            return StrExpr::Lit(s);
        }
        match peel(e) {
            syn::Expr::Path(p) if p.qself.is_none() => p
                .path
                .segments
                .last()
                .map_or(StrExpr::Unknown, |s| StrExpr::Const(s.ident.to_string())),
            syn::Expr::MethodCall(m) if m.method == "as_str" && m.args.is_empty() => {
                match peel(&m.receiver) {
                    syn::Expr::Path(p) if p.path.segments.len() >= 2 => {
                        let segs = segments(&p.path);
                        let enum_name = &segs[segs.len() - 2];
                        if enum_name.ends_with("Kind") {
                            StrExpr::Variant(upper_snake(&segs[segs.len() - 1]))
                        } else {
                            StrExpr::Unknown
                        }
                    }
                    _ => StrExpr::Unknown,
                }
            }
            _ => StrExpr::Unknown,
        }
    }
}

/// String consts by name, and `use … as …` renames, across a set of files.
#[derive(Debug, Clone, Default)]
pub struct Strings {
    /// `None` when two consts of that name hold different values.
    consts: HashMap<String, Option<String>>,
    /// alias → original name; `None` when one alias renames different names.
    renames: HashMap<String, Option<String>>,
}

impl Strings {
    pub fn add_const(&mut self, name: String, value: String) {
        agree(&mut self.consts, name, value);
    }

    pub fn add_rename(&mut self, alias: String, original: String) {
        agree(&mut self.renames, alias, original);
    }

    /// The name `alias` stands for (itself when it is no alias).
    pub fn original<'a>(&'a self, alias: &'a str) -> Option<&'a str> {
        match self.renames.get(alias) {
            Some(Some(o)) => Some(o),
            Some(None) => None,
            None => Some(alias),
        }
    }

    /// The value `name` has here: the const of that name, or the const it renames. `None`
    /// when neither exists, or when the two disagree (a rename elsewhere shadowing a const).
    fn value(&self, name: &str) -> Option<Option<&str>> {
        let direct = self.consts.get(name).map(|v| v.as_deref());
        let renamed = match self.renames.get(name) {
            Some(Some(o)) => self.consts.get(o).map(|v| v.as_deref()),
            Some(None) => Some(None),
            None => None,
        };
        match (direct, renamed) {
            (Some(a), Some(b)) if a == b => Some(a),
            (Some(_), Some(_)) => Some(None),
            (Some(a), None) | (None, Some(a)) => Some(a),
            (None, None) => None,
        }
    }

    /// The value of `e`, looking in `self` first and then in `outer`.
    pub fn resolve(&self, e: &StrExpr, outer: Option<&Strings>) -> Option<String> {
        match e {
            StrExpr::Lit(s) | StrExpr::Variant(s) => Some(s.clone()),
            StrExpr::Unknown => None,
            StrExpr::Const(name) => match self.value(name) {
                Some(v) => v.map(str::to_owned),
                None => {
                    // Not defined here: the name, or what it renames here, in `outer`.
                    let outer = outer?;
                    let n = self.original(name)?;
                    outer.value(n).flatten().map(str::to_owned)
                }
            },
        }
    }
}

/// Records `key = value`; two definitions that disagree resolve to nothing.
fn agree(map: &mut HashMap<String, Option<String>>, key: String, value: String) {
    map.entry(key)
        .and_modify(|v| {
            if v.as_deref() != Some(value.as_str()) {
                *v = None;
            }
        })
        .or_insert(Some(value));
}

/// One `WorkKindSpec { … }`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Spec {
    /// The file that writes it.
    pub path: String,
    /// The const whose slice holds it.
    pub slice: String,
    pub name: StrExpr,
    pub name_at: Location,
    pub permission: Option<StrExpr>,
    pub permission_at: Location,
    /// `None` when the lane is not written and the spec's tail is not `WorkKindSpec::DEFAULT`.
    pub lane: Option<StrExpr>,
    /// The lane value, or the spec's name when the lane is the default's.
    pub lane_at: Location,
}

/// A spec with its values resolved.
#[derive(Debug, Clone)]
pub struct Kind<'m> {
    pub spec: &'m Spec,
    pub name: Option<String>,
    pub permission: Option<String>,
    pub lane: Option<String>,
}

/// One element of `KINDS`.
#[derive(Debug, Clone)]
pub struct Entry {
    pub at: Location,
    /// As written (`SHIPPING_KINDS`).
    pub text: String,
    /// Indexes into `Registry::specs`; `None` when the element could not be resolved.
    pub specs: Option<Vec<usize>>,
}

#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// Whether `om/src/root.rs` exists, parses and defines `KINDS`.
    pub found: bool,
    /// Whether `om/src/root.rs` exists at all.
    pub root_exists: bool,
    pub entries: Vec<Entry>,
    /// Every spec written anywhere in `om/src/`, registered or not.
    pub specs: Vec<Spec>,
    /// String consts and renames of `om/src/`.
    pub strings: Strings,
    /// Every `const X: &[WorkKindSpec]`: (file, name, whether every element was read).
    pub slices: Vec<(String, String, bool)>,
    /// A hash of the om files read: what results that depend on the registry key by.
    pub inputs: u128,
    /// The files [`from_texts`] could not parse, with why (sorted): they contribute
    /// nothing, so a caller that must see every spec refuses to answer. (A check run
    /// reports them through its own parse findings instead.)
    pub unparsed: Vec<super::Unparsed>,
}

impl Registry {
    /// Why this registry may lack kinds: the first file it could not parse, as
    /// "`path` `why`, so the kinds it may define cannot be read" (`None` when every file
    /// was read). A caller that must see every spec refuses with it.
    pub fn incomplete(&self) -> Option<String> {
        self.unparsed
            .first()
            .map(|(path, why)| format!("{path} {why}, so the kinds it may define cannot be read"))
    }

    /// Every registered spec, in registry order (a slice listed twice appears twice).
    pub fn kinds(&self) -> Vec<Kind<'_>> {
        self.entries
            .iter()
            .filter_map(|e| e.specs.as_ref())
            .flatten()
            .map(|&i| self.resolve(&self.specs[i]))
            .collect()
    }

    pub fn resolve<'m>(&'m self, spec: &'m Spec) -> Kind<'m> {
        Kind {
            spec,
            name: self.strings.resolve(&spec.name, None),
            permission: spec
                .permission
                .as_ref()
                .and_then(|p| self.strings.resolve(p, None)),
            lane: spec
                .lane
                .as_ref()
                .and_then(|l| self.strings.resolve(l, None)),
        }
    }

    /// The first spec written anywhere in `om/src/` (registered or not) whose name
    /// resolves to `kind`.
    pub fn spec_named(&self, kind: &str) -> Option<Kind<'_>> {
        self.specs
            .iter()
            .map(|s| self.resolve(s))
            .find(|k| k.name.as_deref() == Some(kind))
    }

    /// Whether every element of `KINDS` and every registered name was understood, so a
    /// kind missing from the registry is really missing.
    pub fn complete(&self) -> bool {
        self.found
            && self.entries.iter().all(|e| e.specs.is_some())
            && self.kinds().iter().all(|k| k.name.is_some())
    }
}

/// A `KINDS` element as written: position, text, path segments, inline specs.
type RawEntry = (Location, String, Vec<String>, Option<Vec<Spec>>);

/// What one om file contributes.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct OmFacts {
    strings: Vec<(String, String)>,
    renames: Vec<(String, String)>,
    specs: Vec<Spec>,
    slices: Vec<(String, bool)>,
    /// `KINDS` elements: position, text, path segments.
    kinds: Option<Vec<RawEntry>>,
}

/// A hash of every om file the registry reads (path and content), for results that
/// depend on the registry.
fn inputs(files: &[&crate::check::context::Source]) -> u128 {
    let mut data = Vec::new();
    for s in files {
        data.extend_from_slice(s.path.as_bytes());
        data.push(0);
        data.extend_from_slice(&s.hash.to_le_bytes());
    }
    xxhash_rust::xxh3::xxh3_128(&data)
}

pub fn build(ctx: &Context<'_>) -> Registry {
    let files = super::sources_under(ctx, crate::layout::OM_SRC, &[]);
    let root_exists = ctx.repo.files.binary_search(&ROOT_PATH.to_owned()).is_ok();
    let facts: Vec<(String, OmFacts)> = files
        .par_iter()
        .filter(|s| {
            s.path == ROOT_PATH
                || ["WorkKindSpec", "const ", " as "]
                    .iter()
                    .any(|n| s.mentions(n))
        })
        .filter_map(|s| {
            let is_root = s.path == ROOT_PATH;
            ctx.memo
                .parsed("om", s, 0, |tree| om_facts(s.file(), tree, is_root))
                .map(|f| (s.path.clone(), f))
        })
        .collect();
    assemble(facts, root_exists, inputs(&files))
}

/// The registry read from the text of the files under `om/src/` (repo-relative path, text),
/// for a caller without a check run (`scaffold queue enqueue`, the generator): the same
/// reader, without the cache. A file that does not parse contributes nothing, as in
/// [`build`], and is listed in `unparsed`.
pub fn from_texts(files: Vec<(String, String)>) -> Registry {
    let root_exists = files.iter().any(|(p, _)| p == ROOT_PATH);
    let files = files.into_iter().map(|(p, t)| ((), p, t)).collect();
    let (facts, unparsed) = super::parse_texts(files, |(), file, tree| {
        (
            file.path.clone(),
            om_facts(file, tree, file.path == ROOT_PATH),
        )
    });
    let mut reg = assemble(facts, root_exists, 0);
    reg.unparsed = unparsed;
    reg
}

/// The registry from what each om file contributes.
fn assemble(facts: Vec<(String, OmFacts)>, root_exists: bool, inputs: u128) -> Registry {
    let mut reg = Registry {
        root_exists,
        inputs,
        ..Registry::default()
    };
    let mut root_kinds = None;
    let mut root_renames = Strings::default();
    for (path, f) in facts {
        let path = path.as_str();
        for (n, v) in f.strings {
            reg.strings.add_const(n, v);
        }
        for (a, o) in &f.renames {
            reg.strings.add_rename(a.clone(), o.clone());
            if path == ROOT_PATH {
                root_renames.add_rename(a.clone(), o.clone());
            }
        }
        reg.specs.extend(f.specs);
        reg.slices
            .extend(f.slices.into_iter().map(|(n, ok)| (path.to_owned(), n, ok)));
        if f.kinds.is_some() {
            root_kinds = f.kinds;
        }
    }
    let Some(elements) = root_kinds else {
        return reg;
    };
    reg.found = true;
    for (at, text, segs, inline) in elements {
        let specs = match inline {
            Some(inline) => {
                let first = reg.specs.len();
                reg.specs.extend(inline);
                Some((first..reg.specs.len()).collect())
            }
            None => resolve_slice(&reg, &root_renames, &segs),
        };
        reg.entries.push(Entry { at, text, specs });
    }
    reg
}

/// The specs of the slice a `KINDS` element names.
fn resolve_slice(reg: &Registry, root: &Strings, segs: &[String]) -> Option<Vec<usize>> {
    let last = segs.last()?;
    let name = root.original(last)?;
    let name = reg.strings.original(name).unwrap_or(name);
    let files: Vec<&str> = reg
        .slices
        .iter()
        .filter(|(_, n, _)| n == name)
        .map(|(p, _, _)| p.as_str())
        .collect();
    let file = match files.as_slice() {
        [] => return None,
        [one] => *one,
        many => {
            // Several namespaces define a slice of that name: the element's path picks one.
            let dirs: Vec<&String> = segs[..segs.len() - 1]
                .iter()
                .filter(|s| !matches!(s.as_str(), "crate" | "self" | "super"))
                .collect();
            let fits: Vec<&&str> = many
                .iter()
                .filter(|p| {
                    let parts: Vec<&str> = p.split('/').collect();
                    !dirs.is_empty() && dirs.iter().all(|d| parts.contains(&d.as_str()))
                })
                .collect();
            match fits.as_slice() {
                [one] => **one,
                _ => return None,
            }
        }
    };
    // A slice with an element that is not a `WorkKindSpec { … }` literal is not understood.
    if reg
        .slices
        .iter()
        .any(|(p, n, ok)| p == file && n == name && !ok)
    {
        return None;
    }
    Some(
        reg.specs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.slice == name && s.path == file)
            .map(|(i, _)| i)
            .collect(),
    )
}

fn om_facts(file: &SourceFile, tree: &syn::File, is_root: bool) -> OmFacts {
    let mut out = OmFacts::default();
    items(file, &tree.items, is_root, &mut out);
    out
}

fn items(file: &SourceFile, list: &[syn::Item], is_root: bool, out: &mut OmFacts) {
    for item in list {
        match item {
            syn::Item::Const(c) => konst(file, &c.ident, &c.ty, &c.expr, is_root, out),
            syn::Item::Static(s) => konst(file, &s.ident, &s.ty, &s.expr, is_root, out),
            syn::Item::Use(u) => renames(&u.tree, &mut out.renames),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    items(file, inner, is_root, out);
                }
            }
            _ => {}
        }
    }
}

/// `use a::B as C` (anywhere in a use tree) → (C, B).
pub(crate) fn renames(tree: &syn::UseTree, out: &mut Vec<(String, String)>) {
    match tree {
        syn::UseTree::Path(p) => renames(&p.tree, out),
        syn::UseTree::Rename(r) => out.push((r.rename.to_string(), r.ident.to_string())),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| renames(t, out)),
        syn::UseTree::Name(_) | syn::UseTree::Glob(_) => {}
    }
}

/// How many `&[…]` levels wrap `WorkKindSpec` in a type (`&[WorkKindSpec]` → 1).
fn spec_depth(ty: &syn::Type) -> Option<usize> {
    match ty {
        syn::Type::Reference(r) => spec_depth(&r.elem),
        syn::Type::Slice(s) => spec_depth(&s.elem).map(|d| d + 1),
        syn::Type::Array(a) => spec_depth(&a.elem).map(|d| d + 1),
        syn::Type::Paren(p) => spec_depth(&p.elem),
        syn::Type::Group(g) => spec_depth(&g.elem),
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "WorkKindSpec")
            .then_some(0),
        _ => None,
    }
}

fn array_elems(e: &syn::Expr) -> Option<Vec<&syn::Expr>> {
    match peel(e) {
        syn::Expr::Array(a) => Some(a.elems.iter().collect()),
        _ => None,
    }
}

fn konst(
    file: &SourceFile,
    ident: &syn::Ident,
    ty: &syn::Type,
    expr: &syn::Expr,
    is_root: bool,
    out: &mut OmFacts,
) {
    let name = ident.to_string();
    if let Some(s) = str_lit(expr) {
        out.strings.push((name, s));
        return;
    }
    match spec_depth(ty) {
        Some(1) => {
            let Some(elems) = array_elems(expr) else {
                out.slices.push((name, false));
                return;
            };
            let mut ok = true;
            for e in elems {
                match spec(file, &name, e) {
                    Some(spec) => out.specs.push(spec),
                    None => ok = false,
                }
            }
            out.slices.push((name, ok));
        }
        // The registry, also when its type is spelled through an alias (`Registry`).
        Some(2) | None if is_root && name == "KINDS" => {
            let Some(elems) = array_elems(expr) else {
                out.kinds = Some(Vec::new());
                return;
            };
            let mut list = Vec::new();
            for e in elems {
                let text = quote_text(file, e);
                match peel(e) {
                    syn::Expr::Path(p) => {
                        list.push((loc(file, span_of(e)), text, segments(&p.path), None));
                    }
                    syn::Expr::Array(a) => {
                        let specs: Vec<Spec> = a
                            .elems
                            .iter()
                            .filter_map(|x| spec(file, "KINDS", x))
                            .collect();
                        let whole = specs.len() == a.elems.len();
                        list.push((
                            loc(file, span_of(e)),
                            text,
                            Vec::new(),
                            whole.then_some(specs),
                        ));
                    }
                    _ => list.push((loc(file, span_of(e)), text, Vec::new(), None)),
                }
            }
            out.kinds = Some(list);
        }
        _ => {}
    }
}

fn span_of(e: &syn::Expr) -> proc_macro2::Span {
    syn::spanned::Spanned::span(e)
}

fn quote_text(file: &SourceFile, e: &syn::Expr) -> String {
    let r = span_of(e).byte_range();
    file.text.get(r.start..r.end).unwrap_or_default().to_owned()
}

fn spec(file: &SourceFile, slice: &str, e: &syn::Expr) -> Option<Spec> {
    let syn::Expr::Struct(s) = peel(e) else {
        return None;
    };
    if s.path
        .segments
        .last()
        .is_none_or(|l| l.ident != "WorkKindSpec")
    {
        return None;
    }
    let field = |n: &str| {
        s.fields.iter().find(|f| match &f.member {
            syn::Member::Named(i) => i == n,
            syn::Member::Unnamed(_) => false,
        })
    };
    let name_f = field("name")?;
    let name_at = loc(file, span_of(&name_f.expr));
    let perm = field("permission");
    let lane_f = field("lane");
    let default_tail = s.rest.as_deref().is_some_and(|r| match peel(r) {
        syn::Expr::Path(p) => {
            let segs = segments(&p.path);
            segs.ends_with(&["WorkKindSpec".to_owned(), "DEFAULT".to_owned()])
        }
        _ => false,
    });
    let (lane, lane_at) = match lane_f {
        Some(f) => (Some(StrExpr::of(&f.expr)), loc(file, span_of(&f.expr))),
        None if default_tail => (Some(StrExpr::Lit(DEFAULT_LANE.to_owned())), name_at),
        None => (None, name_at),
    };
    Some(Spec {
        path: file.path.clone(),
        slice: slice.to_owned(),
        name: StrExpr::of(&name_f.expr),
        name_at,
        permission: perm.map(|f| StrExpr::of(&f.expr)),
        permission_at: perm.map_or(name_at, |f| loc(file, span_of(&f.expr))),
        lane,
        lane_at,
    })
}

/// A path's segments as written (`a::b::C` → `["a", "b", "C"]`).
fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

#[cfg(test)]
mod tests;
