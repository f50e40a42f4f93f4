//! Conformance: work across transactions and time — outbox rows that commit with the
//! producer's transaction, orchestration steps resumed after a crash, and items parked until
//! a time or a signal.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok};
use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::handler::WorkHandler;
use crate::item::{Finish, Item, ItemState, ListFilter, NewItem, Outcome};

pub async fn outbox_commits_with_the_producer_transaction<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let direct = b.enqueue(new("A")).await;
    let store = b.store.clone();
    let rolled_back: Result<i64, StoreError> = b
        .store
        .transaction(move |tx| {
            store.enqueue_in(tx, new("OUT"))?;
            Err(StoreError::Task("producer aborted".into()))
        })
        .await;
    assert!(rolled_back.is_err());
    assert_eq!(
        ok(b.store.relay_outbox(100).await, "relay"),
        0,
        "a rolled-back row was never written"
    );
    let store = b.store.clone();
    let row = ok(
        b.store
            .transaction(move |tx| {
                #[cfg(feature = "sqlite")]
                if let Some(conn) = tx.connection() {
                    conn.execute_batch(
                        "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)",
                    )?;
                    conn.execute("INSERT INTO orders (id) VALUES (1)", [])?;
                }
                store.enqueue_in(tx, new("OUT").dedupe_key("order-1"))
            })
            .await,
        "commit",
    );
    assert_ne!(row, direct, "outbox ids never collide with item ids");
    assert!(
        ok(b.store.get(row).await, "get").is_none(),
        "not an item before the relay"
    );
    assert_eq!(ok(b.store.relay_outbox(100).await, "relay"), 1);
    let item = get(&b.store, row).await;
    assert_eq!((item.id, item.kind.as_str()), (row, "OUT"));
    assert_eq!(ok(b.store.relay_outbox(100).await, "relay again"), 0);
    assert_eq!(
        ok(b.store.list(ListFilter::default()).await, "list").len(),
        2,
        "relaying twice is a no-op"
    );
    let next = ok(b.store.enqueue(new("A")).await, "enqueue after relay");
    assert!(next > row);
}

#[derive(Debug, Serialize, Deserialize)]
struct Steps {
    n: u32,
}

struct StepHandler {
    ran: Arc<std::sync::Mutex<Vec<String>>>,
    fail_at_b: Arc<AtomicBool>,
}

impl WorkHandler for StepHandler {
    type Payload = Steps;
    const KIND: &'static str = "ORCH";
    const REQUIRES: &'static [&'static str] = &["orch.run"];
    async fn handle(&self, ctx: &WorkContext, item: &Item<Steps>) -> Result<(), WorkError> {
        let ran = Arc::clone(&self.ran);
        let a: u32 = ctx
            .step("a", || async move {
                ran.lock()
                    .map_err(|_| WorkError::permanent("poisoned"))?
                    .push("a".into());
                Ok(item.payload.n + 1)
            })
            .await?;
        if self.fail_at_b.swap(false, Ordering::SeqCst) {
            return Err(WorkError::transient("crash before b"));
        }
        let ran = Arc::clone(&self.ran);
        let b: u32 = ctx
            .step("b", || async move {
                ran.lock()
                    .map_err(|_| WorkError::permanent("poisoned"))?
                    .push("b".into());
                Ok(a * 10)
            })
            .await?;
        assert_eq!(b, (item.payload.n + 1) * 10);
        Ok(())
    }
}

pub async fn orchestration_resumes_at_last_checkpoint<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let h = StepHandler {
        ran: Arc::default(),
        fail_at_b: Arc::new(AtomicBool::new(true)),
    };
    let id = b.enqueue(NewItem::new("ORCH", json!({"n": 4}))).await;
    let c = ok(b.store.claim("default", 1, LEASE).await, "claim").remove(0);
    let ctx = WorkContext::new(b.store.clone(), &c, LEASE);
    let item = Item::from_record(&c.item, c.fence, Steps { n: 4 });
    assert!(matches!(
        h.handle(&ctx, &item).await,
        Err(WorkError::Transient(_))
    ));
    // The worker restarts: the lease expires and another claim resumes after step a.
    b.clock.advance(LEASE);
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.store.claim("default", 1, LEASE).await, "reclaim").remove(0);
    let ctx2 = WorkContext::new(b.store.clone(), &c2, LEASE);
    assert_eq!(ctx2.finished_steps(), vec!["a".to_owned()]);
    ok(
        h.handle(
            &ctx2,
            &Item::from_record(&c2.item, c2.fence, Steps { n: 4 }),
        )
        .await,
        "resume",
    );
    ok(b.store.complete(&c2.held()).await, "complete");
    let ran = h.ran.lock().map(|r| r.clone()).unwrap_or_default();
    assert_eq!(
        ran,
        vec!["a".to_owned(), "b".to_owned()],
        "no step ran twice"
    );
    assert_eq!(
        get(&b.store, id).await.checkpoint,
        Some(json!({"steps": {"a": 5, "b": 50}}))
    );
}

pub async fn park_until_time_and_signal<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let timed = b.enqueue(new("A")).await;
    let signalled = b.enqueue(new("A")).await;
    let claimed = ok(b.worker().claim("default", 2, LEASE).await, "claim");
    let until = b.store.now().plus(Duration::from_secs(600));
    for c in &claimed {
        let outcome = if c.item.id == timed {
            Outcome::Park {
                until: Some(until),
                signal: None,
            }
        } else {
            Outcome::Park {
                until: None,
                signal: Some("approved".into()),
            }
        };
        ok(b.worker().fail(&c.held(), outcome).await, "park");
    }
    let rec = get(&b.store, timed).await;
    assert_eq!(
        (rec.state, rec.attempt),
        (ItemState::Parked, 0),
        "parking gives the attempt back"
    );
    assert!(ok(b.worker().claim("default", 5, LEASE).await, "claim").is_empty());
    assert_eq!(ok(b.store.signal("other").await, "signal"), 0);
    assert_eq!(ok(b.store.signal("approved").await, "signal"), 1);
    let woke = ok(b.worker().claim("default", 5, LEASE).await, "claim");
    assert_eq!(
        woke.iter().map(|c| c.item.id).collect::<Vec<_>>(),
        vec![signalled]
    );
    b.clock.advance(Duration::from_secs(600));
    let due = ok(b.worker().claim("default", 5, LEASE).await, "claim");
    assert_eq!(
        due.iter().map(|c| c.item.id).collect::<Vec<_>>(),
        vec![timed]
    );
}

/// A park on a signal name no store writes (empty, longer than `MAX_SIGNAL_LEN` bytes, or
/// with a control character) is refused on its own, before any backend sees it: the rest
/// of its batch is written, and the refused item is still held, so its holder can end it.
pub async fn a_park_on_a_signal_no_store_holds_is_refused<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    for _ in 0..4 {
        b.enqueue(new("A")).await;
    }
    let claimed = ok(b.worker().claim("default", 4, LEASE).await, "claim");
    let park = |signal: String| Outcome::Park {
        until: None,
        signal: Some(signal),
    };
    let outcomes = [
        park("s".repeat(crate::item::MAX_SIGNAL_LEN + 1)),
        park(String::new()),
        park("line\nbreak".to_owned()),
        park("s".repeat(crate::item::MAX_SIGNAL_LEN)),
    ];
    let batch: Vec<Finish> = claimed
        .iter()
        .zip(outcomes)
        .map(|(c, outcome)| Finish::of(&c.held(), outcome))
        .collect();
    let results = ok(b.worker().finish_many(batch).await, "finish");
    let lens: Vec<Option<usize>> = results
        .iter()
        .map(|r| match r {
            Err(StoreError::InvalidSignal { len }) => Some(*len),
            Ok(()) => None,
            Err(e) => panic!("unexpected {e}"),
        })
        .collect();
    assert_eq!(
        lens,
        [
            Some(crate::item::MAX_SIGNAL_LEN + 1),
            Some(0),
            Some(10),
            None
        ]
    );
    for c in &claimed[..3] {
        assert_eq!(get(&b.store, c.item.id).await.state, ItemState::Running);
        ok(b.worker().complete(&c.held()).await, "the holder ends it");
    }
    let parked = get(&b.store, claimed[3].item.id).await;
    assert_eq!(parked.state, ItemState::Parked);
}
