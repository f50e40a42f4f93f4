//! The authoritative scan: a full `syn` parse and a visitor over its tree.
//!
//! The fast scan (`fast.rs`) hands every file it cannot take cleanly to this one, so a
//! file's facts, and the message and position of a parse failure, are always syn's.

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
            // Names the file binds itself — modules and what `use` imports, each in its
            // scope — shadow crate names in paths there; collect them first.
            let lines = crate::source::SourceFile::new("", text);
            let mut scopes = Scopes::new(&lines);
            scopes.visit_file(&file);
            let binds = scopes.root_binds(candidates);
            let scopes = scopes.done();
            let mut v = RefVisitor {
                candidates,
                lines,
                cursor: OffsetCursor::default(),
                aliases: Vec::new(),
                scopes,
                test_depth: 0,
                inline: Vec::new(),
                global: false,
                facts: RustFacts::default(),
            };
            v.visit_file(&file);
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

/// One name the file binds, where it is seen: the scope it is bound in (a module's body
/// or a block, as byte ranges) and the module that scope is in.
#[derive(Debug, Clone)]
struct Binding {
    name: String,
    scope: std::ops::Range<usize>,
    module: std::ops::Range<usize>,
}

/// Where the file binds names, and its modules.
#[derive(Debug, Default)]
struct Bound {
    /// Modules (`mod`) and names `use` brings in.
    locals: Vec<Binding>,
    /// Modules alone: a `use` of one of these imports from it, not from a crate.
    mods: Vec<Binding>,
    /// Every module's body, the file's first.
    modules: Vec<std::ops::Range<usize>>,
    /// The inline modules that say `use super::*;`: their parent module's names are seen
    /// in them.
    glob_super: Vec<std::ops::Range<usize>>,
}

impl Bound {
    /// The innermost module whose body holds `offset`.
    fn module_at(&self, offset: usize) -> std::ops::Range<usize> {
        self.modules
            .iter()
            .filter(|m| m.contains(&offset))
            .min_by_key(|m| m.end - m.start)
            .cloned()
            .unwrap_or(0..usize::MAX)
    }

    /// Whether `name`, written at `offset`, is one of `bindings` seen there: bound in a
    /// scope around it within its module, or — past the boundary of a module that says
    /// `use super::*;` — at the top of the module around that one.
    fn binds(&self, bindings: &[Binding], name: &str, offset: usize) -> bool {
        let module = self.module_at(offset);
        if bindings
            .iter()
            .any(|b| b.name == name && b.scope.contains(&offset) && b.module == module)
        {
            return true;
        }
        let mut inner = module;
        while self.glob_super.contains(&inner) {
            let Some(outer) = self
                .modules
                .iter()
                .filter(|m| m.start <= inner.start && inner.end <= m.end && **m != inner)
                .min_by_key(|m| m.end - m.start)
                .cloned()
            else {
                return false;
            };
            if bindings
                .iter()
                .any(|b| b.name == name && b.scope == outer && b.module == outer)
            {
                return true;
            }
            inner = outer;
        }
        false
    }
}

/// Collects what a file binds: every `mod` (inline or not) and every name a `use` brings
/// in (`use crate::config;` binds `config`), except a crate imported as itself, each in
/// the module body or block it is written in.
struct Scopes<'l> {
    lines: &'l crate::source::SourceFile,
    bound: Bound,
    /// The open scopes: each one's range and its module's.
    stack: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

impl<'l> Scopes<'l> {
    fn new(lines: &'l crate::source::SourceFile) -> Self {
        let root = 0..usize::MAX;
        Scopes {
            lines,
            bound: Bound {
                modules: vec![root.clone()],
                ..Bound::default()
            },
            stack: vec![(root.clone(), root)],
        }
    }

    fn done(self) -> Bound {
        self.bound
    }

    /// The candidates bound at the top of the file: what a child module's `use super::*`
    /// brings in.
    fn root_binds(&self, candidates: &super::Candidates) -> Vec<String> {
        let mut out: Vec<String> = self
            .bound
            .locals
            .iter()
            .filter(|b| b.scope == (0..usize::MAX) && candidates.contains(&b.name))
            .map(|b| b.name.clone())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The file offset of a span's position (syn strips a BOM; see `record`).
    fn offset(&self, at: proc_macro2::LineColumn) -> usize {
        let column =
            at.column + 1 + usize::from(at.line == 1 && self.lines.text.starts_with('\u{feff}'));
        self.lines.offset_of(at.line, column)
    }

    fn range(&self, span: proc_macro2::Span) -> std::ops::Range<usize> {
        self.offset(span.start())..self.offset(span.end())
    }

    fn bind(&mut self, name: String, module: bool) {
        let (scope, in_module) = self
            .stack
            .last()
            .cloned()
            .unwrap_or((0..usize::MAX, 0..usize::MAX));
        let b = Binding {
            name,
            scope,
            module: in_module,
        };
        if module {
            self.bound.mods.push(b.clone());
        }
        self.bound.locals.push(b);
    }

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
                    self.bind(p.ident.to_string(), false);
                }
                self.walk(&p.tree);
            }
            syn::UseTree::Name(n) if n.ident != "self" => self.bind(n.ident.to_string(), false),
            syn::UseTree::Rename(r) => self.bind(r.rename.to_string(), false),
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| self.walk(i)),
            _ => {}
        }
    }

    /// A tree not below a path: `use a::b::c;` binds `c`; `use a;` (a crate imported as
    /// itself) binds nothing new; a group's items are top-level trees too.
    fn top(&mut self, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => self.walk(&p.tree),
            syn::UseTree::Rename(r) => self.bind(r.rename.to_string(), false),
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| self.top(i)),
            syn::UseTree::Name(_) | syn::UseTree::Glob(_) => {}
        }
    }
}

impl<'ast> Visit<'ast> for Scopes<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.bind(m.ident.to_string(), true);
        match &m.content {
            Some((brace, _)) => {
                let body = self.range(brace.span.join());
                self.bound.modules.push(body.clone());
                self.stack.push((body.clone(), body));
                visit::visit_item_mod(self, m);
                self.stack.pop();
            }
            None => visit::visit_item_mod(self, m),
        }
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        let body = self.range(b.brace_token.span.join());
        let module = self.stack.last().map_or(0..usize::MAX, |(_, m)| m.clone());
        self.stack.push((body, module));
        visit::visit_block(self, b);
        self.stack.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_glob_super(&u.tree)
            && let Some((scope, module)) = self.stack.last()
            && scope == module
            && *module != (0..usize::MAX)
        {
            self.bound.glob_super.push(module.clone());
        }
        self.top(&u.tree);
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
    scopes: Bound,
    test_depth: usize,
    /// Inside a `use` written `use ::…`: its first segments name extern crates.
    global: bool,
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

    fn record(&mut self, ident: &syn::Ident, kind: RefKind, global: bool) {
        let name = ident.to_string();
        let Some(resolved) = self.resolve(&name, kind) else {
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
        // A `::name` path names an extern crate (edition 2018 on); otherwise a name the
        // file binds where the path is written hides the crate of that name.
        if !global && (kind.is_path() || kind == RefKind::Use) {
            let bindings = if kind == RefKind::Use {
                &self.scopes.mods
            } else {
                &self.scopes.locals
            };
            if self.scopes.binds(bindings, &name, offset) {
                return;
            }
        }
        let name = resolved;
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
                self.record(&first, RefKind::Token, false);
            }
        }
    }

    fn use_tree(&mut self, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => self.record(&p.ident, RefKind::Use, self.global),
            syn::UseTree::Name(n) => self.record(&n.ident, RefKind::Use, self.global),
            syn::UseTree::Rename(r) => self.record(&r.ident, RefKind::Use, self.global),
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
        self.global = u.leading_colon.is_some();
        self.use_tree(&u.tree);
        self.global = false;
    }

    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        let target = e.ident.to_string();
        if let Some((_, alias)) = &e.rename {
            self.aliases.push((alias.to_string(), target.clone()));
        }
        self.record(&e.ident, RefKind::ExternCrate, false);
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
            self.record(&first.ident, RefKind::Path, p.leading_colon.is_some());
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
