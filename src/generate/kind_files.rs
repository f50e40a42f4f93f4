//! A kind's files that work kinds and orchestrations share: its entry in the namespace
//! (payload or input type, README line, the root's registration of the namespace's slice),
//! its handler module, test and registration in the worker, and the marker insertion each
//! of them goes through. The `worker` and `orchestration` commands both plan with these;
//! neither imports the other.

use minijinja::Value;

use super::error::GenerateError;
use super::markers;
use super::names::{self, mentions_ident};
use super::plan::Plan;
use super::render::create_from;
use super::templates::Templates;
use crate::layout::ROOT_RS;
use crate::layout::markers as marker;

/// Renders snippet `template` and inserts its lines below `marker` in `path`.
pub(crate) fn insert_snippet(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    path: &str,
    marker: &str,
    place: &'static str,
    template: &str,
) -> Result<(), GenerateError> {
    let text = plan
        .text(path)?
        .ok_or_else(|| GenerateError::MarkerMissing {
            path: path.to_owned(),
            marker: marker.to_owned(),
            place,
        })?;
    let snippet = templates.render(template, ctx)?.text;
    let lines: Vec<String> = snippet.lines().map(str::to_owned).collect();
    let out = markers::insert_below(path, &text, marker, place, &lines)?;
    plan.edit(path, out)
}

/// What a kind adds to its namespace besides its spec: its payload (or input) type, its
/// README line and, with the namespace's first kind of its sort, the root's registration
/// of the namespace's slice.
pub(crate) struct NamespaceEntry<'a> {
    pub(crate) payload: &'a str,
    pub(crate) readme: &'a str,
    pub(crate) slice: String,
    pub(crate) root_marker: &'a str,
    pub(crate) root_place: &'static str,
    pub(crate) root_template: &'a str,
}

pub(crate) fn plan_namespace_entry(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    ns: &str,
    entry: &NamespaceEntry<'_>,
) -> Result<(), GenerateError> {
    insert_snippet(
        plan,
        templates,
        ctx,
        &crate::layout::namespace_file(ns, "types/work.rs"),
        marker::PAYLOADS,
        "the namespace's types/work.rs",
        entry.payload,
    )?;
    insert_snippet(
        plan,
        templates,
        ctx,
        &crate::layout::namespace_file(ns, "README.md"),
        "<!-- scaffold:kinds -->",
        "the namespace README's list of kinds",
        entry.readme,
    )?;
    let root_rs = plan.text(ROOT_RS)?.unwrap_or_default();
    if !mentions_ident(&root_rs, &entry.slice) {
        insert_snippet(
            plan,
            templates,
            ctx,
            ROOT_RS,
            entry.root_marker,
            entry.root_place,
            entry.root_template,
        )?;
    }
    Ok(())
}

/// A kind's code in its worker: the module under `src/handlers/` (from template `module`),
/// its test (from `test`), and the snippet that registers it below `marker` in `register_in`.
pub(crate) struct HandlerFiles<'a> {
    pub(crate) module: &'a str,
    pub(crate) test: &'a str,
    pub(crate) register_in: String,
    pub(crate) marker: &'a str,
    pub(crate) place: &'static str,
    pub(crate) register: &'a str,
}

/// The kind's module and its line in `handlers/mod.rs`, its test, and its registration.
pub(crate) fn plan_handler(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    worker: &str,
    kind: &str,
    files: &HandlerFiles<'_>,
) -> Result<(), GenerateError> {
    let snake = names::snake(kind);
    let dir = crate::layout::worker_dir(worker);
    create_from(
        plan,
        templates,
        files.module,
        &format!("{dir}/src/handlers/{snake}.rs"),
        ctx,
    )?;
    create_from(
        plan,
        templates,
        files.test,
        &format!("{dir}/tests/{snake}.rs"),
        ctx,
    )?;
    insert_snippet(
        plan,
        templates,
        ctx,
        &format!("{dir}/src/handlers/mod.rs"),
        marker::HANDLERS,
        "the worker's list of handler modules",
        "kind/handler-mod.j2",
    )?;
    insert_snippet(
        plan,
        templates,
        ctx,
        &files.register_in,
        files.marker,
        files.place,
        files.register,
    )
}
