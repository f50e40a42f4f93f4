//! The authoritative scan: a full `syn` parse and a visitor over its tree.
//!
//! The fast scan (`fast.rs`) hands every file it cannot take cleanly to this one, so a
//! file's facts, and the message and position of a parse failure, are always syn's.

use std::collections::HashSet;

use syn::visit::{self, Visit};

use super::{CrateRef, ModDecl, ParseFailure, RefKind, RustFacts};
use crate::repo::workspace::DepKind;

/// Parses `text` with syn and extracts the references to any name in `candidates`.
/// The caller has already refused a file past the depth budget ([`super::depth`]).
pub(super) fn extract(
    text: &str,
    candidates: &super::Candidates,
) -> Result<RustFacts, ParseFailure> {
    let result = match syn::parse_file(text) {
        Ok(file) => {
            // Names the file binds itself — modules at any depth and what `use` imports —
            // shadow crate names in paths; collect them first.
            let mut locals = LocalNames::default();
            locals.visit_file(&file);
            let mut v = RefVisitor {
                candidates,
                lines: crate::source::SourceFile::new("", text),
                cursor: OffsetCursor::default(),
                aliases: Vec::new(),
                local_mods: locals.names,
                mod_names: locals.mods,
                test_depth: 0,
                inline: Vec::new(),
                facts: RustFacts::default(),
            };
            v.visit_file(&file);
            let mut binds: Vec<String> = v
                .local_mods
                .iter()
                .filter(|l| candidates.contains(l))
                .cloned()
                .collect();
            binds.sort_unstable();
            v.facts.binds = binds;
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

/// Names a file binds: every `mod` (inline or not, at any depth) and every name a `use`
/// brings in (`use crate::config;` binds `config`), except a crate imported as itself.
#[derive(Default)]
struct LocalNames {
    names: HashSet<String>,
    /// The modules alone: a `use` of one of these imports from it, not from a crate.
    mods: HashSet<String>,
}

impl LocalNames {
    /// Records the names a use tree binds below its first segment.
    fn walk(&mut self, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => {
                // `use a::b::{self, c};` binds `b` too.
                if let syn::UseTree::Group(g) = &*p.tree
                    && g.items
                        .iter()
                        .any(|i| matches!(i, syn::UseTree::Name(n) if n.ident == "self"))
                {
                    self.names.insert(p.ident.to_string());
                }
                self.walk(&p.tree);
            }
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
        self.mods.insert(m.ident.to_string());
        visit::visit_item_mod(self, m);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.top(&u.tree);
    }
}

impl LocalNames {
    /// A tree not below a path: `use a::b::c;` binds `c`; `use a;` (a crate imported as
    /// itself) binds nothing new; a group's items are top-level trees too.
    fn top(&mut self, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => self.walk(&p.tree),
            syn::UseTree::Rename(r) => {
                self.names.insert(r.rename.to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| self.top(i)),
            syn::UseTree::Name(_) | syn::UseTree::Glob(_) => {}
        }
    }
}

/// Byte offsets of 1-based (line, character column) positions, asked for mostly in
/// source order: a position later on the same line is walked to from the one before, not
/// from the line's start, so a long line with many references costs its length once.
#[derive(Debug, Default)]
struct OffsetCursor {
    /// The last position asked for (line 0: none yet) and its offset.
    line: usize,
    column: usize,
    offset: usize,
}

impl OffsetCursor {
    /// `file.offset_of(line, column)`.
    fn offset(&mut self, file: &crate::source::SourceFile, line: usize, column: usize) -> usize {
        let offset = match file.text.get(self.offset..) {
            Some(rest) if self.line != 0 && line == self.line && column >= self.column => {
                let step: usize = rest
                    .chars()
                    .take_while(|c| *c != '\n')
                    .take(column - self.column)
                    .map(char::len_utf8)
                    .sum();
                self.offset + step
            }
            _ => file.offset_of(line, column),
        };
        *self = OffsetCursor {
            line,
            column,
            offset,
        };
        offset
    }
}

struct RefVisitor<'a> {
    candidates: &'a super::Candidates,
    lines: crate::source::SourceFile,
    cursor: OffsetCursor,
    /// `extern crate x as y`: (y, x).
    aliases: Vec<(String, String)>,
    local_mods: HashSet<String>,
    mod_names: HashSet<String>,
    test_depth: usize,
    /// The inline modules around the current item: each one's `#[path]` or name.
    inline: Vec<String>,
    facts: RustFacts,
}

/// `use super::*`, at the top of a use tree or in a group there.
fn is_glob_super(t: &syn::UseTree) -> bool {
    match t {
        syn::UseTree::Path(p) => p.ident == "super" && matches!(*p.tree, syn::UseTree::Glob(_)),
        syn::UseTree::Group(g) => g.items.iter().any(is_glob_super),
        _ => false,
    }
}

impl RefVisitor<'_> {
    fn resolve(&self, ident: &str, kind: RefKind) -> Option<String> {
        // An `extern crate` line names its own crate, whatever another line's alias says.
        if kind != RefKind::ExternCrate
            && let Some((_, target)) = self.aliases.iter().find(|(a, _)| a == ident)
        {
            return Some(target.clone());
        }
        let ident = ident.strip_prefix("r#").unwrap_or(ident);
        self.candidates.contains(ident).then(|| ident.to_owned())
    }

    fn record(&mut self, ident: &syn::Ident, kind: RefKind) {
        let name = ident.to_string();
        if kind.is_path() && self.local_mods.contains(&name) {
            return;
        }
        if kind == RefKind::Use && self.mod_names.contains(&name) {
            return;
        }
        let Some(name) = self.resolve(&name, kind) else {
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
        let offset = self.cursor.offset(&self.lines, start.line, column);
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

    /// The paths of a token stream ([`super::tt`]), read without recursion.
    fn token_stream(&mut self, tokens: &proc_macro2::TokenStream) {
        use super::tt::{Class, Reader};
        use proc_macro2::{Spacing, TokenTree};
        let mut reader: Reader<Option<syn::Ident>> = Reader::new();
        let mut mods = super::tt::ModReader::default();
        let mut stack = vec![tokens.clone().into_iter()];
        let mut prev_joint = false;
        while let Some(top) = stack.last_mut() {
            let Some(tree) = top.next() else {
                stack.pop();
                if !stack.is_empty() {
                    reader.feed(Class::Other, false, None);
                    mods.feed(super::tt::ModTok::Other);
                }
                prev_joint = false;
                continue;
            };
            let ident_text = match &tree {
                TokenTree::Ident(i) => i.to_string(),
                _ => String::new(),
            };
            let mod_tok = match &tree {
                TokenTree::Ident(_) if ident_text == "mod" => super::tt::ModTok::Mod,
                TokenTree::Ident(_) => super::tt::ModTok::Ident(&ident_text),
                TokenTree::Punct(p) if p.as_char() == ';' => super::tt::ModTok::Semi,
                TokenTree::Punct(p) if p.as_char() == '=' => super::tt::ModTok::Eq,
                TokenTree::Literal(l) if mods.wants_str() => {
                    let value = syn::parse_str::<syn::LitStr>(&l.to_string()).ok();
                    value.map_or(super::tt::ModTok::Other, |v| {
                        super::tt::ModTok::Str(v.value())
                    })
                }
                _ => super::tt::ModTok::Other,
            };
            if let Some((name, path)) = mods.feed(mod_tok) {
                self.facts.mods.push(ModDecl {
                    name,
                    path,
                    inline: self.inline.clone(),
                    test: self.test_depth > 0,
                });
            }
            let found = match tree {
                TokenTree::Group(g) => {
                    let found = reader.feed(Class::Other, false, None);
                    stack.push(g.stream().into_iter());
                    prev_joint = false;
                    found
                }
                TokenTree::Ident(i) => {
                    let text = i.to_string();
                    let class = match text.as_str() {
                        "self" | "super" | "crate" | "Self" => Class::PathKeyword,
                        _ if ra_ap_parser::SyntaxKind::from_keyword(
                            &text,
                            super::fast::EDITION,
                        )
                        .is_some() =>
                        {
                            Class::Keyword
                        }
                        _ => Class::Ident,
                    };
                    prev_joint = false;
                    reader.feed(class, false, Some(i))
                }
                TokenTree::Punct(p) => {
                    let found = reader.feed(Class::Punct(p.as_char()), prev_joint, None);
                    prev_joint = p.spacing() == Spacing::Joint;
                    found
                }
                TokenTree::Literal(_) => {
                    prev_joint = false;
                    reader.feed(Class::Other, false, None)
                }
            };
            if let Some(Some(first)) = found
                && !super::tt::is_lint_tool(&first.to_string())
            {
                self.record(&first, RefKind::Token);
            }
        }
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
    attrs.iter().any(crate::check::cfg_test::is_cfg_test_attr)
}

impl RefVisitor<'_> {
    /// A path under a `qself`: the type's references, and the path's own only when a trait
    /// (`as a::Tr`) precedes the item's name.
    fn qualified(&mut self, qself: Option<&syn::QSelf>, path: &syn::Path) {
        match qself {
            Some(q) if q.position == 0 => {
                self.visit_qself(q);
                for segment in &path.segments {
                    visit::visit_path_segment(self, segment);
                }
            }
            Some(q) => {
                self.visit_qself(q);
                self.visit_path(path);
            }
            None => self.visit_path(path),
        }
    }
}

impl<'ast> Visit<'ast> for RefVisitor<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = is_cfg_test(crate::check::cfg_test::item_attrs(item));
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
        // Inside an inline module `super` is this file, whose names are its own.
        self.facts.glob_super |= self.inline.is_empty() && is_glob_super(&u.tree);
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
        let mut path = None;
        for a in &m.attrs {
            if a.path().is_ident("path")
                && let syn::Meta::NameValue(nv) = &a.meta
                && let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
            {
                path = Some(s.value());
            }
        }
        if m.content.is_none() {
            self.facts.mods.push(ModDecl {
                name: m.ident.to_string(),
                path,
                inline: self.inline.clone(),
                test: self.test_depth > 0,
            });
            visit::visit_item_mod(self, m);
        } else {
            self.inline
                .push(path.unwrap_or_else(|| m.ident.to_string()));
            visit::visit_item_mod(self, m);
            self.inline.pop();
        }
    }

    // `<T>::name` comes from syn as the `::`-rooted path `::name` beside its `qself`: that
    // `name` is an item of `T`, no crate. (`<T as a::Tr>::name` keeps `a::Tr::name`, whose
    // `a` is one.)
    fn visit_expr_path(&mut self, e: &'ast syn::ExprPath) {
        for a in &e.attrs {
            self.visit_attribute(a);
        }
        self.qualified(e.qself.as_ref(), &e.path);
    }

    fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
        self.qualified(t.qself.as_ref(), &t.path);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if (p.segments.len() >= 2 || p.leading_colon.is_some())
            && let Some(first) = p.segments.first()
        {
            self.record(&first.ident, RefKind::Path);
        }
        visit::visit_path(self, p);
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        // `#[rustfmt::skip]`, `#[clippy::…]`: a tool's attribute names no crate, whatever
        // the workspace calls its crates.
        if let Some(first) = a.path().segments.first()
            && a.path().segments.len() >= 2
            && super::is_tool(&first.ident.to_string())
        {
            return;
        }
        visit::visit_attribute(self, a);
        // An attribute's arguments: `#[derive(b::D)]`, `#[cfg_attr(x, derive(b::R))]`.
        if let syn::Meta::List(list) = &a.meta
            && !list.path.is_ident("cfg")
        {
            self.token_stream(&list.tokens);
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // The macro's own path is a reference, and so is every path its tokens hold
        // (except a `quote!`'s, which is code for another crate).
        self.visit_path(&m.path);
        let quote = m
            .path
            .segments
            .last()
            .is_some_and(|s| super::tt::is_quote(&s.ident.to_string()));
        if !quote {
            self.token_stream(&m.tokens);
        }
        if m.path.segments.last().is_some_and(|s| s.ident == "include")
            && let Ok(lit) = syn::parse2::<syn::LitStr>(m.tokens.clone())
        {
            self.facts.includes.push(lit.value());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OffsetCursor;
    use crate::source::SourceFile;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever order positions come in, past line ends or not, the cursor answers
        /// what `offset_of` answers.
        #[test]
        fn the_offset_cursor_agrees_with_offset_of(
            text in "[a\u{e9}\u{1f600} \r\n]{0,80}",
            asks in proptest::collection::vec((1usize..8, 1usize..30), 0..40),
        ) {
            let file = SourceFile::new("", text);
            let mut cursor = OffsetCursor::default();
            for (line, column) in asks {
                proptest::prop_assert_eq!(
                    cursor.offset(&file, line, column),
                    file.offset_of(line, column)
                );
            }
        }
    }
}
