//! The scan's tokens: what each non-trivia token adds to the paths, use trees and
//! attributes open around it.

use ra_ap_parser::SyntaxKind as K;

use super::{EDITION, Scanner, Tok, string_value};
use crate::check::cfg_test::CfgTok;
use crate::check::rust_refs::{ModDecl, RefKind, tt};

impl<'t> Scanner<'t> {
    /// A non-trivia token at `start..end` of the body.
    pub(super) fn token(&mut self, kind: K, start: usize, end: usize) {
        if self.tt.is_some() && self.stack.last() == Some(&K::TOKEN_TREE) {
            self.tree_token(kind, start, end);
            return;
        }
        // Most tokens sit where nothing is read (keywords, operators, expressions'
        // literals): only a token under one of these nodes, or inside a `cfg(…)` being
        // read, is looked at below.
        let read = matches!(
            self.stack.last(),
            Some(
                K::NAME_REF
                    | K::PATH_SEGMENT
                    | K::NAME
                    | K::RENAME
                    | K::USE_TREE
                    | K::ATTR
                    | K::LITERAL
            )
        ) || self.attrs.last().is_some_and(|a| a.in_cfg);
        if !read {
            return;
        }
        let Some(text) = self.body.get(start..end) else {
            self.failed = true;
            return;
        };
        let tok = Tok {
            text,
            offset: start,
        };
        let (top, parent, grand) = (self.up(0), self.up(1), self.up(2));

        // Paths: the first and last segment names, and a leading `::`.
        if top == Some(K::NAME_REF) && parent == Some(K::PATH_SEGMENT) && grand == Some(K::PATH) {
            if let Some(p) = self.paths.last_mut() {
                if p.segments == 1 && p.first.is_none() {
                    p.first = Some(tok);
                }
                p.last = Some(tok);
            }
        } else if top == Some(K::PATH_SEGMENT)
            && kind == K::COLON2
            && let Some(p) = self.paths.last_mut()
            && p.segments == 1
            && p.first.is_none()
        {
            p.leading_colon = true;
        }

        match (top, parent) {
            (Some(K::NAME), Some(K::MODULE)) => {
                let scope = self.scope();
                self.locals.push((text, scope));
                self.module_names.push((text, scope));
                if let Some(m) = self.modules.last_mut() {
                    m.name = Some(text);
                }
            }
            (Some(K::NAME_REF), Some(K::EXTERN_CRATE)) => {
                self.extern_target = Some(text);
                self.push_ref(tok, RefKind::ExternCrate, false);
            }
            (Some(K::NAME), Some(K::RENAME)) => self.rename(grand, tok),
            (Some(K::RENAME), _) if kind == K::UNDERSCORE => self.rename(parent, tok),
            (Some(K::USE_TREE), _) if kind == K::STAR => {
                if let Some(t) = self.trees.last_mut() {
                    t.leaf = false;
                    // `use super::super::*;` of the file's own module (inside an inline module
                    // `super` is this file).
                    let super_glob = t.top
                        && t.prefix == 0
                        && matches!(t.path, Some((1, Some(last))) if last.text == "super");
                    if super_glob && !self.modules.iter().any(|m| m.inline) {
                        self.glob_super = true;
                    }
                    // In an inline module, its parent's names come in with it.
                    let scope = self.scope();
                    if super_glob
                        && scope != 0
                        && let Some(rec) = self.scopes.get_mut(scope)
                        && rec.module
                    {
                        rec.glob_super = true;
                    }
                }
            }
            (Some(K::ATTR), _) if kind == K::BANG => {
                if let Some(a) = self.attrs.last_mut() {
                    a.inner = true;
                }
            }
            (Some(K::LITERAL), Some(K::META)) if kind == K::STRING && grand == Some(K::ATTR) => {
                if let Some(a) = self.attrs.last_mut() {
                    a.value = Some(text);
                }
            }
            _ => {}
        }

        if let Some(a) = self.attrs.last_mut()
            && a.in_cfg
            && let Some(tokens) = &mut a.cfg
        {
            tokens.push(match kind {
                K::L_PAREN | K::L_BRACK | K::L_CURLY => CfgTok::Open,
                K::R_PAREN | K::R_BRACK | K::R_CURLY => CfgTok::Close,
                K::COMMA => CfgTok::Comma,
                K::IDENT => CfgTok::Ident(text.to_owned()),
                _ => CfgTok::Other,
            });
        }
    }

    /// A token of a token tree read for paths.
    pub(super) fn tree_token(&mut self, kind: K, start: usize, end: usize) {
        let Some(text) = self.body.get(start..end) else {
            self.failed = true;
            return;
        };
        let class = match kind {
            K::IDENT => tt::Class::Ident,
            K::SELF_KW | K::SUPER_KW | K::CRATE_KW | K::SELF_TYPE_KW => tt::Class::PathKeyword,
            K::L_PAREN | K::R_PAREN | K::L_BRACK | K::R_BRACK | K::L_CURLY | K::R_CURLY => {
                tt::Class::Other
            }
            k if k.is_punct() => text
                .chars()
                .next()
                .map_or(tt::Class::Other, tt::Class::Punct),
            k if k.is_keyword(EDITION) => tt::Class::Keyword,
            _ => tt::Class::Other,
        };
        let Some(read) = &mut self.tt else { return };
        let joined = read.prev_end == start;
        read.prev_end = end;
        if let Some((count, lit)) = &mut read.include {
            *count += 1;
            if kind == K::STRING {
                *lit = Some(text);
            }
        }
        let tok = Tok {
            text,
            offset: start,
        };
        let declared =
            if read.mods.idle() && kind != K::MOD_KW && !(kind == K::IDENT && text == "path") {
                None
            } else {
                let mod_tok = match kind {
                    K::MOD_KW => tt::ModTok::Mod,
                    K::IDENT => tt::ModTok::Ident(text),
                    K::SEMICOLON => tt::ModTok::Semi,
                    K::EQ => tt::ModTok::Eq,
                    K::STRING if read.mods.wants_str() => {
                        string_value(text).map_or(tt::ModTok::Other, tt::ModTok::Str)
                    }
                    _ => tt::ModTok::Other,
                };
                read.mods.feed(mod_tok)
            };
        let first = read.reader.feed(class, joined, tok);
        if let Some((name, path)) = declared {
            let inline = self.inline_dirs();
            self.mods.push(ModDecl {
                name,
                path,
                inline,
                test: self.test_depth > 0,
            });
        }
        if let Some(first) = first
            && !tt::is_lint_tool(first.text)
        {
            self.push_ref(first, RefKind::Token, false);
        }
    }
}
