//! # manager-enqueues
//!
//! ## What it finds
//! A method of a service's manager — any `impl …Manager` block, or any function in a file
//! named `manager.rs`, under `services/` — that calls the store's `enqueue` or
//! `enqueue_many` directly. Test code (`tests/`, `#[cfg(test)]`, `#[test]`) is not checked,
//! and neither is code outside `services/` (the outbox relay enqueues by design).
//!
//! ## Why
//! A direct enqueue is a second write outside the manager's transaction: when the business
//! write commits and the enqueue fails (or the other way round), the work is lost or runs
//! for a change that never happened. The outbox makes them one write: the manager inserts
//! the outbox row in its own transaction and the relay enqueues it under the row's id, so
//! relaying twice is a no-op.
//!
//! ## Example
//! ```rust,ignore
//! impl ShipmentsManager {
//!     pub async fn ship(&self, id: ShipmentId) -> Result<()> {
//!         self.repo.mark_shipped(id).await?;
//!         self.store.enqueue(NewItem::new("NOTIFY_SHIPMENT", json!({ "id": id }))).await?;  // manager-enqueues
//!         Ok(())
//!     }
//! }
//! ```
//!
//! ## Fix
//! Write the item in the same transaction as the business write:
//! `store.transaction(|tx| { …; store.enqueue_in(tx, item) })`, and let the outbox relay
//! deliver it.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::services;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "manager-enqueues",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a service manager calls enqueue directly instead of writing an outbox row",
    severity_note: "",
    finds: "a service manager (`impl …Manager`, `services/**/manager.rs`) calls `enqueue` instead of writing an outbox row",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for c in services::manager_enqueues(ctx) {
        sink.push(
            Finding::new(ID, c.path.clone(), c.at)
                .message(format!(
                    "`{}` calls `{}` directly instead of writing an outbox row in its transaction",
                    c.owner, c.call
                ))
                .label("direct enqueue")
                .help("insert the item with `store.enqueue_in(tx, item)` inside the transaction of the business write; the outbox relay enqueues it"),
        );
    }
}
