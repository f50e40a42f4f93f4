//! # worker-role-unknown
//!
//! ## What it finds
//! A worker crate whose `Cargo.toml` has no `[package.metadata.scaffold] role`, or a role
//! that `rules/worker-roles.yml` does not know (`maintenance`, `outbox-relay`,
//! `projector`, `scheduler`, `sync-reconciler`, `workflow-runner`).
//!
//! ## Why
//! The role decides which strategies the worker must declare: a projector must say how it
//! replays and rebuilds, a workflow runner how it compensates and resumes. A worker
//! without a known role would only be held to the base four.
//!
//! ## Example
//! ```toml
//! [package]
//! name = "acme-mailer"
//!
//! [package.metadata.scaffold]
//! role = "mailer"          # not a known role
//! ```
//!
//! ## Fix
//! Set `role = "<role>"` under `[package.metadata.scaffold]` to the role that describes the
//! worker's behaviour; `maintenance` is the base role.

use super::super::catalogue;
use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use crate::repo::manifest::closest;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "worker-role-unknown",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a worker's [package.metadata.scaffold] role is missing or not in worker-roles.yml",
    severity_note: "",
    finds: "`[package.metadata.scaffold] role` missing or not in `rules/worker-roles.yml`",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let roles = catalogue::roles();
    let known: Vec<&str> = roles.roles.keys().map(String::as_str).collect();
    for (_, c) in ctx.workers() {
        match &c.role {
            None => sink.push(
                Finding::new(ID, c.manifest.path.clone(), c.package_loc)
                    .message(format!("worker `{}` declares no role", c.package))
                    .label("no [package.metadata.scaffold] role")
                    .help(format!(
                        "add `[package.metadata.scaffold]` with `role = \"maintenance\"` (or one of: {})",
                        known.join(", ")
                    )),
            ),
            Some((role, loc)) if !roles.roles.contains_key(role) => {
                let hint = closest(role, &known).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
                sink.push(
                    Finding::new(ID, c.manifest.path.clone(), *loc)
                        .message(format!("worker `{}` has unknown role `{role}`", c.package))
                        .label("unknown role")
                        .help(format!("{hint}known roles: {}", known.join(", "))),
                );
            }
            Some(_) => {}
        }
    }
}
