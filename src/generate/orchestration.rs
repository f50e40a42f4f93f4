//! `scaffold worker <worker> <KIND> --orchestration` (seed 001, Procedure 3): a long-running
//! kind as an `OrchestrationKindSpec` in the namespace's `kinds.rs` (registered in
//! `om::root::ORCHESTRATION_KINDS` with the namespace's first one), its input type, its
//! steps in a module of the worker, mapped by name in the worker's orchestration handler,
//! and a test that kills it between steps and resumes it. Not a handler that loops.

use crate::layout::markers as marker;
use minijinja::Value;

use super::error::GenerateError;
use super::kind_files::{
    HandlerFiles, NamespaceEntry, insert_snippet, plan_handler, plan_namespace_entry,
};
use super::names;
use super::plan::Plan;
use super::templates::Templates;

/// The worker file that maps orchestrations by name; a worker without it runs none.
pub fn handler_path(worker: &str) -> String {
    crate::layout::worker_file(worker, "src/handlers/orchestration.rs")
}

/// Plans the orchestration kind `ctx` describes in namespace `ns`, run by `worker`.
pub fn plan(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    ns: &str,
    worker: &str,
    kind: &str,
) -> Result<(), GenerateError> {
    insert_snippet(
        plan,
        templates,
        ctx,
        &crate::layout::namespace_file(ns, "kinds.rs"),
        marker::ORCHESTRATIONS,
        "the namespace's orchestration specs (scaffold namespace writes them)",
        "orchestration/spec.j2",
    )?;
    plan_namespace_entry(
        plan,
        templates,
        ctx,
        ns,
        &NamespaceEntry {
            payload: "orchestration/input.j2",
            readme: "orchestration/readme.j2",
            slice: format!("{}_ORCHESTRATIONS", names::shouty(ns)),
            root_marker: marker::ORCHESTRATION_KINDS,
            root_place: "the ORCHESTRATION_KINDS registry of om/src/root.rs",
            root_template: "orchestration/root.j2",
        },
    )?;
    plan_handler(
        plan,
        templates,
        ctx,
        worker,
        kind,
        &HandlerFiles {
            module: "orchestration/steps.rs.j2",
            test: "orchestration/test.rs.j2",
            register_in: handler_path(worker),
            marker: marker::ORCHESTRATIONS,
            place: "the orchestration handler's mapping of names to steps",
            register: "orchestration/arm.j2",
        },
    )
}
