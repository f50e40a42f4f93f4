//! Workers' `Settings` structs: every field and the environment variable it is read from.

use rayon::prelude::*;

use super::{is_test_code, loc};
use crate::check::cfg_test::item_attrs;
use crate::check::context::Context;
use crate::check::finding::Location;

/// One field of a worker's `Settings`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Field {
    pub krate: usize,
    pub path: String,
    /// The field as written.
    pub field: String,
    /// Its key (the field, or its `#[serde(rename = "…")]`).
    pub key: String,
    pub at: Location,
}

/// Fields of every `struct Settings` in a worker's `src/` (outside test code). Fields marked
/// `#[serde(skip)]` or `#[serde(flatten)]` are left out: they are no variable of their own.
pub fn fields(ctx: &Context<'_>) -> Vec<Field> {
    let files = super::worker_sources(ctx, &["struct Settings"]);
    let mut out: Vec<Field> = files
        .par_iter()
        .filter_map(|s| {
            ctx.memo.parsed("settings", s, 0, |tree| {
                let mut out = Vec::new();
                structs(&tree.items, &mut |st| {
                    for f in &st.fields {
                        let Some(ident) = &f.ident else { continue };
                        let serde = serde_words(&f.attrs);
                        if serde.iter().any(|(k, _)| k == "skip" || k == "flatten") {
                            continue;
                        }
                        let name = ident.to_string();
                        let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
                        let key = serde
                            .iter()
                            .find(|(k, _)| k == "rename")
                            .and_then(|(_, v)| v.clone())
                            .unwrap_or_else(|| name.clone());
                        out.push(Field {
                            krate: s.krate,
                            path: s.path.clone(),
                            field: name,
                            key,
                            at: loc(s.file(), ident.span()),
                        });
                    }
                });
                out
            })
        })
        .flatten()
        .collect();
    out.sort_by(|a, b| (&a.path, a.at.offset).cmp(&(&b.path, b.at.offset)));
    out
}

fn structs(list: &[syn::Item], f: &mut dyn FnMut(&syn::ItemStruct)) {
    for item in list {
        if is_test_code(item_attrs(item)) {
            continue;
        }
        match item {
            syn::Item::Struct(s) if s.ident == "Settings" => f(s),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    structs(inner, f);
                }
            }
            _ => {}
        }
    }
}

/// `#[serde(a, b = "v")]` → [("a", None), ("b", Some("v"))].
fn serde_words(attrs: &[syn::Attribute]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            let key = m
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let value = if m.input.peek(syn::Token![=]) {
                m.value()
                    .and_then(|v| v.parse::<syn::LitStr>())
                    .ok()
                    .map(|l| l.value())
            } else {
                if m.input.peek(syn::token::Paren) {
                    let _ = m.parse_nested_meta(|_| Ok(()));
                }
                None
            };
            out.push((key, value));
            Ok(())
        });
    }
    out
}
