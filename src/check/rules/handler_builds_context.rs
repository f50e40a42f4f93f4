//! # handler-builds-context
//!
//! ## What it finds
//! A handler that constructs a `WorkContext` itself — `WorkContext::new(…)` (or another
//! constructor: `default`, `builder`, `from…`, `with…`) or a `WorkContext { … }` literal —
//! inside its `impl WorkHandler for X` or an inherent `impl X` in the same file. Test code
//! is not checked.
//!
//! ## Why
//! The context the work loop passes to `handle` carries the claim: the item's id and the
//! fence of this lease. Effects, checkpoints and steps recorded through it are fenced, so a
//! worker that lost its lease cannot complete or record anything. A context built by hand
//! has some other fence (or none) and lets a stale worker write as if it still held the
//! item.
//!
//! ## Example
//! ```rust,ignore
//! async fn handle(&self, _ctx: &WorkContext, item: &Item<Self::Payload>) -> Result<(), WorkError> {
//!     let ctx = WorkContext::new(self.store.clone(), item.id, Fence(0), None);  // handler-builds-context
//!     ctx.once("email", || send(item)).await
//! }
//! ```
//!
//! ## Fix
//! Use the `ctx` parameter of `handle` (pass it down to helpers that need it).

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::exec;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "handler-builds-context",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a handler constructs its own WorkContext instead of using the one it is given",
    severity_note: "",
    finds: "a handler constructs its own `WorkContext`",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for b in exec::built_contexts(ctx) {
        sink.push(
            Finding::new(ID, b.path.clone(), b.at)
                .message(format!(
                    "`{}` builds its own WorkContext (`{}`) instead of using the one it is given",
                    b.owner, b.how
                ))
                .label("context built here")
                .help("use the `ctx: &WorkContext` that `handle` receives: it carries the claim's fence"),
        );
    }
}
