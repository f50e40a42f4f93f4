//! The helpers generated handler tests use: `MemoryContainer`, `item`, `run_twice`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use scaffold_runtime::testing::{MemoryContainer, item, run_twice};
use scaffold_runtime::{Item, ItemState, WorkContext, WorkError, WorkHandler};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct NotifyShipmentPayload {
    shipment_id: String,
}

#[derive(Default)]
struct NotifyShipmentHandler {
    sent: Arc<AtomicUsize>,
}

impl WorkHandler for NotifyShipmentHandler {
    type Payload = NotifyShipmentPayload;
    const KIND: &'static str = "NOTIFY_SHIPMENT";
    const REQUIRES: &'static [&'static str] = &["shipping.notify"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Self::Payload>) -> Result<(), WorkError> {
        let sent = Arc::clone(&self.sent);
        let id = item.payload.shipment_id.clone();
        ctx.once("notify", |_| async move {
            sent.fetch_add(1, Ordering::SeqCst);
            Ok(id)
        })
        .await?;
        Ok(())
    }
}

#[tokio::test]
async fn run_twice_runs_the_handler_twice_and_its_effect_once() {
    let c = MemoryContainer::new();
    let h = NotifyShipmentHandler::default();
    let payload = NotifyShipmentPayload {
        shipment_id: "s-1".into(),
    };
    let done = run_twice(&c, &h, item(NotifyShipmentHandler::KIND, &payload))
        .await
        .expect("both runs succeed");
    assert_eq!(done.state, ItemState::Completed);
    assert_eq!(done.fence, 2, "the second run held a new claim");
    assert_eq!(h.sent.load(Ordering::SeqCst), 1, "the effect happened once");
}

struct NotIdempotent;

impl WorkHandler for NotIdempotent {
    type Payload = serde_json::Value;
    const KIND: &'static str = "BAD";
    const REQUIRES: &'static [&'static str] = &[];
    async fn handle(&self, ctx: &WorkContext, _: &Item<Self::Payload>) -> Result<(), WorkError> {
        if ctx.store().effect(ctx.item_id(), "x").await?.is_some() {
            return Err(WorkError::permanent("ran twice"));
        }
        ctx.once("x", |_| async { Ok(()) }).await
    }
}

#[tokio::test]
async fn run_twice_surfaces_a_handler_that_fails_on_redelivery() {
    let c = MemoryContainer::new();
    let r = run_twice(&c, &NotIdempotent, item("BAD", serde_json::json!({}))).await;
    assert!(matches!(r, Err(WorkError::Permanent(m)) if m == "ran twice"));
}
