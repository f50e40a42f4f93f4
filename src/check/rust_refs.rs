//! What a Rust source file says about other crates: every `use`, `extern crate` and
//! qualified path whose first segment may name a crate, with its precise position and
//! whether it sits in test-only (`#[cfg(test)]`) code.
//!
//! Every item is visited whatever its `cfg`, so cfg-gated code is checked on every cfg.
//! Macro bodies and `include!` are not expanded (documented blind spots).

use std::collections::HashSet;

use syn::visit::{self, Visit};

use crate::repo::workspace::DepKind;

/// How a file names another crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RefKind {
    Use,
    Path,
    ExternCrate,
}

/// One place a file names a crate.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CrateRef {
    /// The first path segment as written (after resolving `extern crate … as` aliases).
    pub name: String,
    pub kind: RefKind,
    /// Normal, or Dev inside `#[cfg(test)]`; the file's own scope is applied later.
    pub scope: DepKind,
    pub line: usize,
    pub column: usize,
    pub offset: usize,
    pub len: usize,
}

/// What one file contributes.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RustFacts {
    pub refs: Vec<CrateRef>,
    /// `#[path = "…"]` module files, as written, relative to the declaring file's directory.
    pub path_mods: Vec<String>,
}

/// A parse failure with its position.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ParseFailure {
    pub message: String,
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// Deeper delimiter nesting than this is reported unparsed instead of being handed to
/// syn, whose recursive descent would otherwise exhaust the thread's stack.
pub const MAX_NESTING: usize = 1_000;

/// Parses `text` with syn and extracts the references to any name in `candidates`.
pub fn extract(text: &str, candidates: &HashSet<String>) -> Result<RustFacts, ParseFailure> {
    if let Some(offset) = too_deep(text) {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        return Err(ParseFailure {
            message: format!("delimiters nest deeper than {MAX_NESTING} levels"),
            line,
            column,
            offset,
        });
    }
    let result = match syn::parse_file(text) {
        Ok(file) => {
            // Names the file binds itself — modules at any depth and what `use` imports —
            // shadow crate names in paths; collect them first.
            let mut locals = LocalNames::default();
            locals.visit_file(&file);
            let mut v = RefVisitor {
                candidates,
                lines: crate::source::SourceFile::new("", text),
                aliases: Vec::new(),
                local_mods: locals.names,
                test_depth: 0,
                facts: RustFacts::default(),
            };
            v.visit_file(&file);
            Ok(v.facts)
        }
        Err(e) => {
            let start = e.span().start();
            let line = start.line.max(1);
            let column = start.column + 1 + usize::from(line == 1 && text.starts_with('\u{feff}'));
            let offset = crate::source::SourceFile::new("", text).offset_of(line, column);
            Err(ParseFailure {
                message: e.to_string(),
                line,
                column,
                offset,
            })
        }
    };
    // Spans are not kept past this point; free this thread's span table so parsing
    // thousands of files does not grow it without bound.
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}

/// The offset of the first delimiter nested deeper than `MAX_NESTING`, counting `(`, `[`
/// and `{` outside comments and string literals only roughly (a string full of brackets
/// can only make the count higher, never hide real nesting).
fn too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(i);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Names a file binds: every `mod` (inline or not, at any depth) and every name a `use`
/// brings in (`use crate::config;` binds `config`), except a crate imported as itself.
#[derive(Default)]
struct LocalNames {
    names: HashSet<String>,
}

impl LocalNames {
    /// Records the names a use tree binds below its first segment.
    fn walk(&mut self, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => self.walk(&p.tree),
            syn::UseTree::Name(n) if n.ident != "self" => {
                self.names.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) => {
                self.names.insert(r.rename.to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| self.walk(i)),
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for LocalNames {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.names.insert(m.ident.to_string());
        visit::visit_item_mod(self, m);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        match &u.tree {
            // `use a::b::c;` binds `c`; `use a;` (a crate imported as itself) binds nothing new.
            syn::UseTree::Path(p) => self.walk(&p.tree),
            syn::UseTree::Rename(r) => {
                self.names.insert(r.rename.to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| {
                if let syn::UseTree::Path(p) = i {
                    self.walk(&p.tree);
                } else if let syn::UseTree::Rename(r) = i {
                    self.names.insert(r.rename.to_string());
                }
            }),
            _ => {}
        }
    }
}

struct RefVisitor<'a> {
    candidates: &'a HashSet<String>,
    lines: crate::source::SourceFile,
    /// `extern crate x as y`: (y, x).
    aliases: Vec<(String, String)>,
    local_mods: HashSet<String>,
    test_depth: usize,
    facts: RustFacts,
}

impl RefVisitor<'_> {
    fn resolve(&self, ident: &str) -> Option<String> {
        if let Some((_, target)) = self.aliases.iter().find(|(a, _)| a == ident) {
            return Some(target.clone());
        }
        let ident = ident.strip_prefix("r#").unwrap_or(ident);
        self.candidates.contains(ident).then(|| ident.to_owned())
    }

    fn record(&mut self, ident: &syn::Ident, kind: RefKind) {
        let name = ident.to_string();
        if kind == RefKind::Path && self.local_mods.contains(&name) {
            return;
        }
        let Some(name) = self.resolve(&name) else {
            return;
        };
        let span = ident.span();
        let start = span.start();
        let range = span.byte_range();
        // syn strips a BOM and a shebang line, so its byte offsets are not the file's:
        // recompute the offset from line and column, which are.
        // A BOM is one more character on line 1 than syn counted.
        let column = start.column
            + 1
            + usize::from(start.line == 1 && self.lines.text.starts_with('\u{feff}'));
        let offset = self.lines.offset_of(start.line, column);
        self.facts.refs.push(CrateRef {
            name,
            kind,
            scope: if self.test_depth > 0 {
                DepKind::Dev
            } else {
                DepKind::Normal
            },
            line: start.line,
            column,
            offset,
            len: range.end.saturating_sub(range.start),
        });
    }

    fn use_tree(&mut self, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => self.record(&p.ident, RefKind::Use),
            syn::UseTree::Name(n) => self.record(&n.ident, RefKind::Use),
            syn::UseTree::Rename(r) => self.record(&r.ident, RefKind::Use),
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(t);
                }
            }
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| mentions_test(l.tokens.clone()))
    })
}

/// `test` appears as a cfg predicate (`test`, `all(test, …)`), not under `not(…)`.
fn mentions_test(tokens: proc_macro2::TokenStream) -> bool {
    let mut prev_not = false;
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) if i == "test" => return true,
            proc_macro2::TokenTree::Ident(i) => prev_not = i == "not",
            proc_macro2::TokenTree::Group(g) => {
                if !prev_not && mentions_test(g.stream()) {
                    return true;
                }
                prev_not = false;
            }
            proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => {}
        }
    }
    false
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for RefVisitor<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = is_cfg_test(item_attrs(item));
        self.test_depth += usize::from(test);
        visit::visit_item(self, item);
        self.test_depth -= usize::from(test);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let test = is_cfg_test(&f.attrs);
        self.test_depth += usize::from(test);
        visit::visit_impl_item_fn(self, f);
        self.test_depth -= usize::from(test);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree);
    }

    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        let target = e.ident.to_string();
        if let Some((_, alias)) = &e.rename {
            self.aliases.push((alias.to_string(), target.clone()));
        }
        self.record(&e.ident, RefKind::ExternCrate);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        for a in &m.attrs {
            if a.path().is_ident("path")
                && let syn::Meta::NameValue(nv) = &a.meta
                && let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
            {
                self.facts.path_mods.push(s.value());
            }
        }
        visit::visit_item_mod(self, m);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if (p.segments.len() >= 2 || p.leading_colon.is_some())
            && let Some(first) = p.segments.first()
        {
            self.record(&first.ident, RefKind::Path);
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // The macro's own path is a reference; its body is opaque tokens (a blind spot).
        self.visit_path(&m.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<(String, RefKind, DepKind, usize, usize)> {
        let cands: HashSet<String> = ["acme_infra", "acme_apps", "acme_om"]
            .into_iter()
            .map(String::from)
            .collect();
        extract(src, &cands)
            .expect("parses")
            .refs
            .into_iter()
            .map(|r| (r.name, r.kind, r.scope, r.line, r.column))
            .collect()
    }

    #[test]
    fn finds_grouped_nested_renamed_and_qualified_refs() {
        let src = "use {acme_infra::{a, b::c}, std::fmt};\n\
                   pub use acme_om::Kind as K;\n\
                   extern crate acme_apps as apps;\n\
                   fn f() -> ::acme_om::T { apps::run(); let x: acme_infra::X = acme_infra::make(); x }\n\
                   #[cfg(test)]\nmod tests { use acme_infra::testing; }\n\
                   #[cfg(not(test))]\nfn g() { acme_om::go() }\n";
        let got = names(src);
        assert!(
            got.contains(&("acme_infra".into(), RefKind::Use, DepKind::Normal, 1, 6)),
            "{got:?}"
        );
        assert!(got.contains(&("acme_om".into(), RefKind::Use, DepKind::Normal, 2, 9)));
        assert!(got.contains(&(
            "acme_apps".into(),
            RefKind::ExternCrate,
            DepKind::Normal,
            3,
            14
        )));
        assert!(
            got.iter()
                .any(|r| r.0 == "acme_apps" && r.1 == RefKind::Path && r.3 == 4)
        );
        assert!(
            got.iter()
                .any(|r| r.0 == "acme_om" && r.1 == RefKind::Path && r.3 == 4)
        );
        assert_eq!(
            got.iter()
                .filter(|r| r.0 == "acme_infra" && r.3 == 4)
                .count(),
            2
        );
        assert!(got.contains(&("acme_infra".into(), RefKind::Use, DepKind::Dev, 6, 17)));
        assert!(
            got.iter()
                .any(|r| r.0 == "acme_om" && r.3 == 8 && r.2 == DepKind::Normal)
        );
    }

    #[test]
    fn local_modules_shadow_crate_names_and_single_segments_are_ignored() {
        let src =
            "mod acme_om;\nfn f() { acme_om::x(); let acme_infra = 1; let _ = acme_infra; }\n";
        assert!(names(src).is_empty());
    }

    #[test]
    fn reports_parse_failures_with_a_position() {
        let err = extract("fn f( {\n", &HashSet::new()).expect_err("invalid");
        assert_eq!(err.line, 1);
        assert!(err.column >= 1);
    }

    #[test]
    fn refuses_nesting_deeper_than_the_limit_instead_of_overflowing() {
        let deep = format!(
            "fn main() {{ let _x = {}1{}; }}\n",
            "(".repeat(MAX_NESTING + 5),
            ")".repeat(MAX_NESTING + 5)
        );
        let err = extract(&deep, &HashSet::new()).expect_err("too deep");
        assert!(err.message.contains("nest deeper"));
        assert_eq!(err.line, 1);
        let ok = format!(
            "fn main() {{ let _x = {}1{}; }}\n",
            "(".repeat(200),
            ")".repeat(200)
        );
        assert!(extract(&ok, &HashSet::new()).is_ok());
    }

    #[test]
    fn names_the_file_binds_shadow_crate_names_in_paths() {
        let src = "use crate::acme_infra;\nmod outer { mod acme_apps {} fn f() { acme_apps::x(); } }\n\
                   fn g() { acme_infra::y(); }\nuse acme_om;\nfn h() { acme_om::z(); }\n";
        let got = names(src);
        assert!(
            !got.iter()
                .any(|r| r.0 == "acme_infra" || r.0 == "acme_apps"),
            "{got:?}"
        );
        // `use acme_om;` imports the crate as itself: still an edge, at the use and the path.
        assert_eq!(
            got.iter().filter(|r| r.0 == "acme_om").count(),
            2,
            "{got:?}"
        );
    }

    #[test]
    fn offsets_are_the_files_own_with_a_bom_or_a_shebang() {
        let cands: HashSet<String> = ["acme_om"].into_iter().map(String::from).collect();
        for text in [
            "\u{feff}use acme_om::x;\n",
            "#!/usr/bin/env run-cargo-script\nuse acme_om::x;\n",
        ] {
            let facts = extract(text, &cands).expect("parses");
            let r = &facts.refs[0];
            assert_eq!(&text[r.offset..r.offset + r.len], "acme_om", "{text:?}");
        }
    }

    #[test]
    fn collects_path_modules() {
        let facts =
            extract("#[path = \"../shared/x.rs\"]\nmod x;\n", &HashSet::new()).expect("parses");
        assert_eq!(facts.path_mods, ["../shared/x.rs"]);
    }
}
