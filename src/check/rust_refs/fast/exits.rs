//! The scan's node ends: a closed path, use tree or attribute becomes a reference, and
//! the finished scan its facts.

use ra_ap_parser::SyntaxKind as K;

use super::{AttrRec, LineCursor, PathRec, RawRef, Scanner, Tok, TreeRec, is_item, string_value};
use crate::check::cfg_test::{CfgTok, requires_test};
use crate::check::rust_refs::{CrateRef, ModDecl, RefKind, RustFacts};
use crate::repo::workspace::DepKind;

impl<'t> Scanner<'t> {
    pub(super) fn exit(&mut self) {
        let Some(kind) = self.stack.pop() else {
            self.failed = true;
            return;
        };
        let depth = self.stack.len();
        let parent = self.stack.last().copied();
        self.open_scopes.pop_if(|(d, _)| *d == depth);
        match kind {
            K::PATH => {
                if let Some(p) = self.paths.pop_if(|p| p.depth == depth) {
                    self.path_done(p, depth, parent);
                }
            }
            K::USE_TREE => {
                if let Some(t) = self.trees.pop_if(|t| t.depth == depth) {
                    self.tree_done(t);
                }
            }
            K::ATTR => {
                if let Some(a) = self.attrs.pop_if(|a| a.depth == depth) {
                    self.attr_done(a, depth, parent);
                }
            }
            K::TOKEN_TREE => {
                if let Some(a) = self.attrs.last_mut()
                    && a.depth + 2 == depth
                {
                    a.in_cfg = false;
                }
                if let Some(read) = self.tt.take_if(|t| t.depth == depth)
                    && let Some((3, Some(lit))) = read.include
                    && let Some(value) = string_value(lit)
                {
                    self.includes.push(value);
                }
            }
            K::MODULE => {
                if let Some(m) = self.modules.pop_if(|m| m.depth == depth)
                    && !m.inline
                    && let Some(name) = m.name
                {
                    let inline = self.inline_dirs();
                    self.mods.push(ModDecl {
                        name: name.to_owned(),
                        path: m.path,
                        inline,
                        test: self.test_depth > 0,
                    });
                }
            }
            K::USE => self.in_use = self.in_use.saturating_sub(1),
            K::EXTERN_CRATE => {
                self.in_extern_crate = self.in_extern_crate.saturating_sub(1);
                self.extern_target = None;
            }
            _ => {}
        }
        if let Some(item) = self.items.pop_if(|i| i.depth == depth)
            && item.test
        {
            self.test_depth -= 1;
        }
    }

    pub(super) fn path_done(&mut self, p: PathRec<'t>, depth: usize, parent: Option<K>) {
        if parent == Some(K::MACRO_CALL) {
            self.macro_name = p.last.map(|t| t.text);
        }
        if parent == Some(K::USE_TREE) && self.in_use > 0 {
            if let Some(t) = self.trees.last_mut()
                && t.depth + 1 == depth
            {
                t.path = Some((p.segments, p.last));
                if t.top
                    && let Some(first) = p.first
                {
                    self.push_ref(first, RefKind::Use, p.leading_colon);
                }
            }
            return;
        }
        if parent == Some(K::META)
            && let Some(a) = self.attrs.last_mut()
            && a.depth + 2 == depth
            && p.segments == 1
            && !p.leading_colon
        {
            a.name = p.first.map(|t| t.text);
        }
        if parent == Some(K::META)
            && let Some(a) = self.attrs.last_mut()
            && a.depth + 2 == depth
        {
            a.tool = p.segments >= 2 && p.first.is_some_and(|t| super::super::is_tool(t.text));
        }
        // A `use` item's and an `extern crate` item's own attributes are not read.
        if self.in_use > 0 || self.in_extern_crate > 0 {
            return;
        }
        // `#[rustfmt::skip]`, `#[clippy::…]`: a tool's attribute names no crate.
        if parent == Some(K::META)
            && self.attrs.last().is_some_and(|a| a.depth + 2 == depth)
            && p.first.is_some_and(|t| super::super::is_tool(t.text))
        {
            return;
        }
        if (p.segments >= 2 || p.leading_colon)
            && let Some(first) = p.first
        {
            self.push_ref(first, RefKind::Path, p.leading_colon);
        }
    }

    pub(super) fn tree_done(&mut self, t: TreeRec<'t>) {
        if !t.leaf {
            return;
        }
        let scope = self.scope();
        if let Some(rename) = t.rename {
            self.locals.push((rename, scope));
        } else if let Some((segments, Some(last))) = t.path
            && t.prefix + segments >= 2
        {
            if last.text != "self" {
                // `use a::b::c;` binds `c`; `use a;` (a crate as itself) binds nothing new.
                self.locals.push((last.text, scope));
            } else if t.prefix >= 2
                && let Some(owner) = self.trees.last()
                && let Some((_, Some(owner_last))) = owner.path
            {
                // `use a::b::{self, c};` binds `b` (and `use a::{self}`, `a` as itself).
                self.locals.push((owner_last.text, scope));
            }
        }
    }

    pub(super) fn attr_done(&mut self, a: AttrRec<'t>, depth: usize, parent: Option<K>) {
        // The predicate is what the outer parentheses hold.
        let cfg_test = a.cfg.as_deref().is_some_and(|t| {
            t.len() >= 2 && t[0] == CfgTok::Open && requires_test(&t[1..t.len() - 1])
        });
        if cfg_test {
            // An outer attribute belongs to its parent item; an inner one (`#![…]`) to the
            // item whose body holds it, or to the file.
            let owner_depth = match parent {
                Some(k) if k == K::SOURCE_FILE || is_item(k) => depth.checked_sub(1),
                Some(K::ITEM_LIST | K::ASSOC_ITEM_LIST | K::EXTERN_ITEM_LIST) if a.inner => {
                    depth.checked_sub(2)
                }
                Some(K::STMT_LIST) if a.inner && self.up(1) == Some(K::BLOCK_EXPR) => {
                    depth.checked_sub(3)
                }
                _ => None,
            };
            if let Some(item) = self.items.last_mut()
                && Some(item.depth) == owner_depth
                && !item.test
            {
                item.test = true;
                self.test_depth += 1;
                for r in &mut self.refs[item.refs_start..] {
                    r.test = true;
                }
            }
        }
        if a.name == Some("path")
            && parent == Some(K::MODULE)
            && let Some(value) = a.value.and_then(string_value)
            && let Some(m) = self.modules.last_mut()
        {
            m.path = Some(value);
        }
    }

    pub(super) fn push_ref(&mut self, tok: Tok<'t>, kind: RefKind, global: bool) {
        self.refs.push(RawRef {
            tok,
            kind,
            test: self.test_depth > 0,
            scope: self.scope(),
            global,
        });
    }

    /// Whether `name`, written in scope `at`, is a name the file binds there (from `names`).
    fn bound(&self, names: &[(&'t str, usize)], name: &str, at: usize) -> bool {
        let from = names.partition_point(|(n, _)| *n < name);
        names[from..]
            .iter()
            .take_while(|(n, _)| *n == name)
            .any(|(_, scope)| self.sees(at, *scope))
    }

    /// Resolves aliases, drops names the file binds itself and names that are not
    /// candidates, and places each reference by line and column in `text` (which holds
    /// the scanned body after `base` bytes: a byte-order mark).
    pub(super) fn finish(
        mut self,
        text: &str,
        base: usize,
        candidates: &super::super::Candidates,
    ) -> RustFacts {
        self.refs.sort_by_key(|r| r.tok.offset);
        self.locals.sort_unstable();
        self.locals.dedup();
        self.module_names.sort_unstable();
        self.module_names.dedup();
        let mut lines = LineCursor::new(text);
        let mut refs = Vec::new();
        for r in &self.refs {
            let written = r.tok.text;
            // A `::name` path names an extern crate (edition 2018 on); otherwise a name
            // the file binds where the path is written hides the crate of that name.
            if !r.global && r.kind.is_path() && self.bound(&self.locals, written, r.scope) {
                continue;
            }
            if !r.global
                && r.kind == RefKind::Use
                && self.bound(&self.module_names, written, r.scope)
            {
                continue;
            }
            // An `extern crate` line names its own crate, whatever another line's alias says.
            let alias = (r.kind != RefKind::ExternCrate)
                .then(|| {
                    self.aliases
                        .iter()
                        .find(|(a, _, at)| *a == written && *at < r.tok.offset)
                })
                .flatten();
            let name = match alias {
                Some((_, target, _)) => (*target).to_owned(),
                None => {
                    let bare = written.strip_prefix("r#").unwrap_or(written);
                    if !candidates.contains(bare) {
                        continue;
                    }
                    bare.to_owned()
                }
            };
            let offset = base + r.tok.offset;
            let (line, column) = lines.at(offset);
            refs.push(CrateRef {
                name,
                kind: r.kind,
                scope: if r.test {
                    DepKind::Dev
                } else {
                    DepKind::Normal
                },
                line,
                column,
                offset,
                len: written.len(),
            });
        }
        // What a child module's `use super::*` brings in: the names bound at the top of
        // the file (its module's own), not in its inline modules or blocks.
        let mut binds: Vec<String> = self
            .locals
            .iter()
            .filter(|(l, scope)| *scope == 0 && candidates.contains(l))
            .map(|(l, _)| (*l).to_owned())
            .collect();
        binds.dedup();
        RustFacts {
            refs,
            mods: self.mods,
            binds,
            glob_super: self.glob_super,
            includes: self.includes,
        }
    }
}
