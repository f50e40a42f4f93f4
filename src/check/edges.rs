//! Import edges between layers: Cargo.toml path dependencies and Rust references.

use super::context::Context;
use super::finding::Location;
use crate::repo::codemap::Layer;
use crate::repo::workspace::DepKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeVia {
    /// A path dependency in Cargo.toml.
    Dependency,
    /// A `use`, `extern crate` or qualified path in a `.rs` file.
    Reference,
}

/// One crate reaching into another layer.
#[derive(Debug, Clone)]
pub struct Edge<'c> {
    pub via: EdgeVia,
    pub from_crate: usize,
    pub from_layer: &'c Layer,
    pub to_layer: &'c Layer,
    /// What the edge names: a crate name in code, or the dependency key.
    pub name: String,
    pub scope: DepKind,
    pub path: String,
    pub loc: Location,
}

/// How an edge stands against the codemap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Forbidden,
    Undeclared,
}

impl Edge<'_> {
    pub fn verdict(&self) -> Verdict {
        verdict(self.from_layer, self.to_layer)
    }

    /// " (dev-dependency)" and the like, for messages.
    pub fn scope_note(&self) -> &'static str {
        match (self.via, self.scope) {
            (_, DepKind::Normal) => "",
            (EdgeVia::Dependency, DepKind::Dev) => " (dev-dependency)",
            (EdgeVia::Dependency, DepKind::Build) => " (build-dependency)",
            (EdgeVia::Reference, DepKind::Dev) => " (in test code: dev-dependency scope)",
            (EdgeVia::Reference, DepKind::Build) => " (in build.rs: build-dependency scope)",
        }
    }
}

/// How an edge from layer `from` to layer `to` stands against the codemap.
fn verdict(from: &Layer, to: &Layer) -> Verdict {
    let to = &to.name;
    if from.must_not_import.contains(to) {
        Verdict::Forbidden
    } else if from.name == *to || from.may_import.contains(to) {
        Verdict::Allowed
    } else {
        Verdict::Undeclared
    }
}

/// Every edge of the repository whose two ends both sit in a layer and that the codemap
/// does not allow (forbidden or undeclared: the edges a rule reports); rules read them
/// through `Context::edges`, which computes this once. An allowed edge is dropped before
/// it is built: a clean repository has tens of thousands of them, and none is reported.
pub(super) fn all<'r>(ctx: &Context<'r>) -> Vec<Edge<'r>> {
    let repo: &'r crate::repo::Repo = ctx.repo;
    let codemap = &repo.codemap;
    let crates = &repo.workspace.crates;
    let mut edges = Vec::new();
    for (i, c) in crates.iter().enumerate() {
        let Some(from_layer) = ctx.layer(i) else {
            continue;
        };
        for d in &c.deps {
            let Some(dir) = &d.path else { continue };
            let target = ctx.repo.workspace.by_dir(dir);
            if target == Some(i) {
                continue;
            }
            let to_layer = match target {
                Some(t) => ctx.layer(t),
                None => codemap
                    .layer_of(&format!("{dir}/Cargo.toml"))
                    .or_else(|| codemap.layer_of(dir)),
            };
            let Some(to_layer) = to_layer else { continue };
            if verdict(from_layer, to_layer) == Verdict::Allowed {
                continue;
            }
            edges.push(Edge {
                via: EdgeVia::Dependency,
                from_crate: i,
                from_layer,
                to_layer,
                name: d.key.clone(),
                scope: d.kind,
                path: c.manifest.path.clone(),
                loc: d.loc,
            });
        }
    }
    for s in &ctx.sources {
        let Ok(facts) = &s.facts else { continue };
        let Some(from_layer) = ctx.layer(s.krate) else {
            continue;
        };
        for r in &facts.refs {
            // A name `use super::*` brought in from the parent module, not a crate.
            if r.kind.is_path() && s.hidden.contains(&r.name) {
                continue;
            }
            let target = if r.kind == crate::check::rust_refs::RefKind::Token {
                ctx.crate_names.resolve_declared(s.krate, &r.name)
            } else {
                ctx.crate_names.resolve(s.krate, &r.name)
            };
            let Some(target) = target else {
                continue;
            };
            let Some(to_layer) = ctx.layer(target) else {
                continue;
            };
            if verdict(from_layer, to_layer) == Verdict::Allowed {
                continue;
            }
            let scope = if s.scope == DepKind::Normal {
                r.scope
            } else {
                s.scope
            };
            edges.push(Edge {
                via: EdgeVia::Reference,
                from_crate: s.krate,
                from_layer,
                to_layer,
                name: r.name.clone(),
                scope,
                path: s.path.clone(),
                loc: Location {
                    line: r.line,
                    column: r.column,
                    offset: r.offset,
                    len: r.len,
                },
            });
        }
    }
    edges
}
