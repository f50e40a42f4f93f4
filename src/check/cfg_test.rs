//! Whether a `cfg(…)` predicate holds only in test builds, so that what it gates is
//! test-only code (it may use dev-dependencies; a handler in it is not a real handler).
//!
//! `test` does; `all(…)` does when any of its parts does; `any(…)` only when every part
//! does; `not(…)`, a key (`feature = "x"`) and anything else do not. So
//! `#[cfg(any(feature = "alloc", test))]` gates code that is also built without `test`.

/// One token of a cfg predicate, as either parser hands it over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CfgTok {
    Ident(String),
    /// `(`, `[` or `{`.
    Open,
    /// `)`, `]` or `}`.
    Close,
    Comma,
    Other,
}

/// `tokens` are what the parentheses of `cfg(…)` hold, nested delimiters included.
pub fn requires_test(tokens: &[CfgTok]) -> bool {
    let mut pos = 0;
    let holds = predicate(tokens, &mut pos);
    // Anything after the one predicate (`cfg(test, x)`) is not a predicate rustc accepts.
    holds && pos >= tokens.len()
}

/// Reads one predicate from `pos`, leaving `pos` at the `,` or `)` after it.
fn predicate(tokens: &[CfgTok], pos: &mut usize) -> bool {
    let Some(first) = tokens.get(*pos) else {
        return false;
    };
    *pos += 1;
    let holds = match first {
        CfgTok::Ident(name) if tokens.get(*pos) == Some(&CfgTok::Open) => {
            *pos += 1;
            let parts = list(tokens, pos);
            match name.as_str() {
                "all" => parts.iter().any(|p| *p),
                "any" => !parts.is_empty() && parts.iter().all(|p| *p),
                _ => false,
            }
        }
        CfgTok::Ident(name) => {
            name == "test" && matches!(tokens.get(*pos), None | Some(CfgTok::Comma | CfgTok::Close))
        }
        _ => false,
    };
    skip_rest(tokens, pos);
    holds
}

/// The predicates of a list after its `(`, through its `)`.
fn list(tokens: &[CfgTok], pos: &mut usize) -> Vec<bool> {
    let mut parts = Vec::new();
    while let Some(t) = tokens.get(*pos) {
        match t {
            CfgTok::Close => {
                *pos += 1;
                break;
            }
            CfgTok::Comma => *pos += 1,
            _ => parts.push(predicate(tokens, pos)),
        }
    }
    parts
}

/// Skips to the `,` or `)` that ends the current predicate, over whole groups.
fn skip_rest(tokens: &[CfgTok], pos: &mut usize) {
    let mut depth = 0usize;
    while let Some(t) = tokens.get(*pos) {
        match t {
            CfgTok::Open => depth += 1,
            CfgTok::Close if depth == 0 => return,
            CfgTok::Close => depth -= 1,
            CfgTok::Comma if depth == 0 => return,
            _ => {}
        }
        *pos += 1;
    }
}

/// The tokens of a syn attribute's `cfg(…)` list.
pub fn from_token_stream(tokens: proc_macro2::TokenStream, out: &mut Vec<CfgTok>) {
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) => out.push(CfgTok::Ident(i.to_string())),
            proc_macro2::TokenTree::Group(g) => {
                let delimited = g.delimiter() != proc_macro2::Delimiter::None;
                if delimited {
                    out.push(CfgTok::Open);
                }
                from_token_stream(g.stream(), out);
                if delimited {
                    out.push(CfgTok::Close);
                }
            }
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ',' => out.push(CfgTok::Comma),
            proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => {
                out.push(CfgTok::Other);
            }
        }
    }
}

/// Whether a syn attribute is `#[cfg(…)]` with a predicate that requires `test`.
pub fn is_cfg_test_attr(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("cfg")
        && attr.meta.require_list().is_ok_and(|l| {
            let mut tokens = Vec::new();
            from_token_stream(l.tokens.clone(), &mut tokens);
            requires_test(&tokens)
        })
}

/// The attributes of any kind of item.
pub fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(predicate: &str) -> bool {
        let tokens: proc_macro2::TokenStream = predicate.parse().expect("tokens");
        let mut out = Vec::new();
        from_token_stream(tokens, &mut out);
        requires_test(&out)
    }

    #[test]
    fn test_alone_or_required_by_all_holds() {
        for p in [
            "test",
            "all(test)",
            "all(unix, test)",
            "all(test, feature = \"x\")",
            "any(test)",
            "any(test, all(test, unix))",
            "all(any(test), not(windows))",
        ] {
            assert!(holds(p), "{p}");
        }
    }

    #[test]
    fn predicates_that_also_hold_outside_tests_do_not() {
        for p in [
            "not(test)",
            "any(feature = \"alloc\", test)",
            "any(test, unix)",
            "all(not(test))",
            "feature = \"test\"",
            "test = \"x\"",
            "unix",
            "any()",
            "all()",
            "test, unix",
            "",
            "not(any(test))",
        ] {
            assert!(!holds(p), "{p}");
        }
    }
}
