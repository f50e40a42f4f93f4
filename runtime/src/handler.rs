//! The handler trait generated handlers implement (docs/reference.md#the-work-queue-scaffold-runtime), and its type-erased form
//! the work loop keeps in a map by kind.

use std::future::Future;

use serde::de::DeserializeOwned;

use crate::context::WorkContext;
use crate::error::WorkError;
use crate::item::{Fence, Item, ItemRecord};
use crate::resources::Needs;
use crate::store::BoxFuture;

/// Handles the items of one kind. Implement it with `async fn handle`:
///
/// ```
/// use scaffold_runtime::{Item, WorkContext, WorkError, WorkHandler};
/// # #[derive(serde::Deserialize)] pub struct NotifyShipmentPayload { shipment_id: String }
/// pub struct NotifyShipmentHandler;
/// impl WorkHandler for NotifyShipmentHandler {
///     type Payload = NotifyShipmentPayload;
///     const KIND: &'static str = "NOTIFY_SHIPMENT";
///     const REQUIRES: &'static [&'static str] = &["shipping.notify"];
///     async fn handle(&self, ctx: &WorkContext, item: &Item<Self::Payload>) -> Result<(), WorkError> {
///         ctx.once("notify", |_| async { Ok(item.payload.shipment_id.clone()) }).await?;
///         Ok(())
///     }
/// }
/// ```
pub trait WorkHandler: Send + Sync + 'static {
    /// The payload, decoded from the item's JSON; an item that does not decode is dead.
    type Payload: DeserializeOwned + Send + Sync + 'static;
    /// The kind this handler serves.
    const KIND: &'static str;
    /// The permissions the handler's calls take; must include its spec's permission.
    const REQUIRES: &'static [&'static str];

    /// Declares the resources ([`WorkContext::resource`]) the handler takes, so the loop
    /// refuses to build without them: `needs.add::<MailerClient>();`. None by default.
    fn needs(needs: &mut Needs) {
        let _ = needs;
    }

    /// Handles one item. Runs under the context of the claim; handling an item twice must
    /// change nothing (use [`WorkContext::once`] for effects).
    fn handle(
        &self,
        ctx: &WorkContext,
        item: &Item<Self::Payload>,
    ) -> impl Future<Output = Result<(), WorkError>> + Send;
}

/// A handler with its payload type erased.
pub(crate) trait DynHandler: Send + Sync {
    fn kind(&self) -> &'static str;
    fn requires(&self) -> &'static [&'static str];
    fn needs(&self) -> Needs;
    fn call<'a>(
        &'a self,
        ctx: &'a WorkContext,
        record: &'a ItemRecord,
        fence: Fence,
    ) -> BoxFuture<'a, Result<(), WorkError>>;
}

pub(crate) struct Erased<H>(pub H);

impl<H: WorkHandler> DynHandler for Erased<H> {
    fn kind(&self) -> &'static str {
        H::KIND
    }

    fn requires(&self) -> &'static [&'static str] {
        H::REQUIRES
    }

    fn needs(&self) -> Needs {
        let mut needs = Needs::default();
        H::needs(&mut needs);
        needs
    }

    fn call<'a>(
        &'a self,
        ctx: &'a WorkContext,
        record: &'a ItemRecord,
        fence: Fence,
    ) -> BoxFuture<'a, Result<(), WorkError>> {
        Box::pin(async move {
            let item = decode::<H::Payload>(record, fence)?;
            self.0.handle(ctx, &item).await
        })
    }
}

/// Decodes `record`'s payload; failure is a permanent error.
pub(crate) fn decode<P: DeserializeOwned>(
    record: &ItemRecord,
    fence: Fence,
) -> Result<Item<P>, WorkError> {
    let payload = P::deserialize(&record.payload).map_err(|e| {
        WorkError::Permanent(format!(
            "undecodable payload: {}",
            redacted_decode_error(&e.to_string())
        ))
    })?;
    Ok(Item::from_record(record, fence, payload))
}

/// serde's message for a payload that does not decode, without the payload's contents: the
/// error lands in `last_error`, in logs and on the operator's screen, and serde quotes the
/// offending value (`invalid type: string "4111…", expected u64`). What is kept comes from
/// the payload type (field names, what was expected), never from the value.
fn redacted_decode_error(msg: &str) -> String {
    const FROM_THE_TYPE: [&str; 2] = ["missing field", "duplicate field"];
    const KINDS: [&str; 5] = [
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown field",
        "unknown variant",
    ];
    if FROM_THE_TYPE.iter().any(|p| msg.starts_with(p)) {
        return msg.to_owned();
    }
    let Some(kind) = KINDS.iter().find(|k| msg.starts_with(*k)) else {
        return "the payload does not match its type".to_owned();
    };
    match msg.split_once(", expected ") {
        Some((_, expected)) => format!("{kind}, expected {expected}"),
        None => (*kind).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redacted_decode_error;

    #[test]
    fn decode_errors_keep_the_type_and_drop_the_value() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct P {
            card: u64,
        }
        let cases = [
            (
                serde_json::json!({"card": "4111-secret"}),
                "invalid type, expected u64",
            ),
            (serde_json::json!({}), "missing field `card`"),
            (
                serde_json::json!({"card": 1, "secret-key": 2}),
                "unknown field, expected `card`",
            ),
        ];
        for (value, want) in cases {
            let Err(e) = serde_json::from_value::<P>(value) else {
                panic!("decodes");
            };
            let got = redacted_decode_error(&e.to_string());
            assert_eq!(got, want);
            assert!(!got.contains("secret"), "{got}");
        }
        assert_eq!(
            redacted_decode_error("my custom error about 4111"),
            "the payload does not match its type"
        );
    }
}
