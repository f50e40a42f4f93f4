//! Every outcome other than success leaves one `tracing` event (a dead letter was silent
//! before), and none of them carries the payload. A subscriber of this test's own records
//! every event of its thread, on which the loop runs.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scaffold_runtime::testing::MemoryContainer;
use scaffold_runtime::{
    Item, ItemState, NewItem, RetryPolicy, WorkContext, WorkError, WorkHandler, WorkKindSpec,
    WorkLoop,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Each event as `LEVEL message key=value …`.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    next_span: AtomicU64,
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(event.metadata().level().to_string());
        event.record(&mut line);
        if let Ok(mut events) = self.events.lock() {
            events.push(line.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

struct Shared(Arc<Recorder>);

impl Subscriber for Shared {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.0.enabled(m)
    }
    fn new_span(&self, a: &Attributes<'_>) -> Id {
        self.0.new_span(a)
    }
    fn record(&self, s: &Id, r: &Record<'_>) {
        self.0.record(s, r);
    }
    fn record_follows_from(&self, s: &Id, f: &Id) {
        self.0.record_follows_from(s, f);
    }
    fn event(&self, e: &Event<'_>) {
        self.0.event(e);
    }
    fn enter(&self, s: &Id) {
        self.0.enter(s);
    }
    fn exit(&self, s: &Id) {
        self.0.exit(s);
    }
}

static KINDS: &[&[WorkKindSpec]] = &[&[
    WorkKindSpec {
        name: "CARD",
        permission: "cards.charge",
        ..WorkKindSpec::DEFAULT
    },
    WorkKindSpec {
        name: "FLAKY",
        permission: "cards.charge",
        max_attempts: 2,
        ..WorkKindSpec::DEFAULT
    },
]];

#[derive(serde::Deserialize)]
struct Card {
    #[allow(dead_code)]
    number: u64,
    refuse: bool,
}

struct CardHandler;

impl WorkHandler for CardHandler {
    type Payload = Card;
    const KIND: &'static str = "CARD";
    const REQUIRES: &'static [&'static str] = &["cards.charge"];
    async fn handle(&self, _: &WorkContext, item: &Item<Card>) -> Result<(), WorkError> {
        if item.payload.refuse {
            Err(WorkError::permanent("the card was refused"))
        } else {
            Ok(())
        }
    }
}

struct Flaky;

impl WorkHandler for Flaky {
    type Payload = serde_json::Value;
    const KIND: &'static str = "FLAKY";
    const REQUIRES: &'static [&'static str] = &["cards.charge"];
    async fn handle(&self, _: &WorkContext, _: &Item<serde_json::Value>) -> Result<(), WorkError> {
        Err(WorkError::transient("the gateway timed out"))
    }
}

// One thread, whose default subscriber is this test's: every task of the loop runs on it,
// and tests beside it in the binary (under `cargo test`, in one process) log elsewhere.
#[tokio::test(flavor = "current_thread")]
async fn every_outcome_but_success_is_logged_without_the_payload() {
    let recorder = Arc::new(Recorder::default());
    let _scope = tracing::subscriber::set_default(Shared(Arc::clone(&recorder)));
    let c = MemoryContainer::new();
    let secret = "4111111111111111";
    let items = vec![
        NewItem::new("CARD", serde_json::json!({"number": 1, "refuse": false})),
        NewItem::new("CARD", serde_json::json!({"number": 2, "refuse": true})),
        // Undecodable: the number is a string, and must not reach a log.
        NewItem::new(
            "CARD",
            serde_json::json!({"number": secret, "refuse": false}),
        ),
        NewItem::new("NOBODY", serde_json::json!({"number": secret})),
        NewItem::new("FLAKY", serde_json::json!({"number": secret})).max_attempts(2),
    ];
    c.store.enqueue_many(items).await.expect("enqueue");
    let lp = WorkLoop::builder(c.store.clone(), KINDS)
        .handler(CardHandler)
        .handler(Flaky)
        .poll_interval(Duration::from_millis(5))
        .retry_policy(RetryPolicy {
            base: Duration::ZERO,
            cap: Duration::ZERO,
        })
        .build()
        .expect("build");
    let store = c.store.clone();
    lp.run(async move {
        loop {
            let stats = store.stats().await.expect("stats");
            let (done, dead): (u64, u64) = stats.iter().fold((0, 0), |(d, x), l| {
                (
                    d + l.get(ItemState::Completed).count,
                    x + l.get(ItemState::Dead).count,
                )
            });
            if done == 1 && dead == 4 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("run");

    let events = recorder.events.lock().expect("events").clone();
    let dead: Vec<&String> = events
        .iter()
        .filter(|e| e.contains("item dead-lettered"))
        .collect();
    assert_eq!(dead.len(), 4, "one event per dead letter: {events:#?}");
    for needle in [
        "the card was refused",
        "unknown kind `NOBODY`",
        "undecodable payload: invalid type, expected u64",
        "the gateway timed out",
    ] {
        assert!(
            dead.iter().any(|e| e.contains(needle)),
            "no dead-letter event says {needle:?}: {dead:#?}"
        );
    }
    assert_eq!(
        events
            .iter()
            .filter(|e| e.contains("retry scheduled"))
            .count(),
        1,
        "the flaky item's first failure (its second is its dead letter): {events:#?}"
    );
    assert!(
        events.iter().all(|e| !e.contains(secret)),
        "a payload value reached a log line: {events:#?}"
    );
}
