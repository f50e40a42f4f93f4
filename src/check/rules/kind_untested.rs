//! # kind-untested
//!
//! ## What it finds
//! A handler without a test that runs it twice on one item: no `#[test]` /
//! `#[tokio::test]` function under its worker's `tests/` that names the handler type and
//! either calls the runtime's `run_twice` helper (which runs the handler twice on the same
//! item, across a lease expiry) or calls `handle` at least twice (a call inside a loop
//! counts as twice). Calls made by the helper functions a test calls (in any file of the
//! worker's `tests/`, such as `tests/common/mod.rs`, matched by name) count for the test;
//! so do calls inside macros such as `assert!`. Test functions are `#[test]`,
//! `#[tokio::test]` (any `#[…::test]`), `#[rstest]` and `#[test_case(…)]`.
//!
//! When a file under the worker's `tests/` does not parse (`source-unparsed`), nothing is
//! known about its tests and this rule says nothing about that worker.
//!
//! ## Why
//! Work is delivered at least once: a retried or re-delivered item runs its handler again.
//! A handler that changes something the second time (a second email, a double charge) is
//! a bug that only this test shows before production does.
//!
//! ## Example
//! ```rust,ignore
//! #[tokio::test]
//! async fn notifies() {
//!     let c = MemoryContainer::new();
//!     NotifyShipmentHandler.handle(&ctx, &item).await.unwrap();   // once: kind-untested
//! }
//! ```
//!
//! ## Fix
//! Add `tests/<kind>.rs` running the handler with `run_twice(&container, &handler, item)`
//! over the in-memory store and asserting the effect happened once (what `scaffold worker`
//! writes).

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::Model;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "kind-untested",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a handler without a test that runs it twice on one item",
    severity_note: "",
    finds: "a handler without a test under its worker's `tests/` that runs it twice on one item (`run_twice`, or `handle` twice)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let m = Model::of(ctx);
    for h in &m.handlers {
        if m.tests.tested(h.krate, &h.ty) != Some(false) {
            continue;
        }
        let dir = &ctx.repo.workspace.crates[h.krate].dir;
        let tests = if dir.is_empty() {
            "tests/".to_owned()
        } else {
            format!("{dir}/tests/")
        };
        let kind = h
            .kind
            .as_ref()
            .map(|k| format!(" (kind `{k}`)"))
            .unwrap_or_default();
        sink.push(
            Finding::new(ID, h.path.clone(), h.ty_at)
                .message(format!(
                    "handler `{}`{kind} has no test under {tests} that runs it twice on one item",
                    h.ty
                ))
                .label("untested handler")
                .help(format!(
                    "add a #[tokio::test] under {tests} that calls `run_twice(&container, &{}, item)` (scaffold_runtime::testing) and asserts the effect happened once",
                    h.ty
                )),
        );
    }
}
