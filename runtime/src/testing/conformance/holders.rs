//! Conformance: a claim's holder — every fenced write checks the owner as well as the
//! fence, an effect runs only after the store confirmed the lease, every ended attempt is a
//! row, and the store's id stays the same.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok, stale};
use crate::context::WorkContext;
use crate::error::WorkError;
use crate::item::{EffectStart, Finish, Held, ItemState, Outcome};

/// Fences are small numbers anyone can guess; a write that presents the right fence under
/// another owner's name changes nothing.
pub async fn fenced_writes_check_the_holder<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(
        b.store.claim_as("host-a", "default", 1, LEASE).await,
        "claim",
    )
    .remove(0);
    let intruder = Held::new(id, c.fence, "host-b");
    stale(b.store.heartbeat(&intruder, LEASE).await, "heartbeat");
    stale(
        b.store.checkpoint(&intruder, json!({"x": 1})).await,
        "checkpoint",
    );
    stale(
        b.store.record_effect(&intruder, "e", json!(1)).await,
        "record effect",
    );
    stale(
        b.store.begin_effect(&intruder, "e", LEASE).await,
        "begin effect",
    );
    stale(b.store.complete(&intruder).await, "complete");
    let batch = ok(
        b.store
            .finish_many(vec![
                Finish::of(&intruder, Outcome::Complete),
                Finish::of(&intruder, Outcome::Release),
            ])
            .await,
        "batch",
    );
    assert!(batch.iter().all(Result::is_err), "{batch:?}");
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.checkpoint, rec.lease_owner.as_deref()),
        (ItemState::Running, None, Some("host-a"))
    );
    ok(b.store.complete(&c.held()).await, "the holder completes");
    ok(b.store.complete(&c.held()).await, "the holder's repeat");
    stale(
        b.store.complete(&intruder).await,
        "a repeat under another's name",
    );
}

/// One batch of completions may hold items of several holders (a backend writes them by
/// holder): each row completes for its own holder only; one presented under another's name
/// is refused while the rest go through, and so is a strict one presented under another's
/// name beside the real holder's completion of the same claim (a lenient one is a repeat of
/// a completed claim, which changes nothing).
pub async fn a_batch_completes_each_row_for_its_own_holder<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let ids = [
        b.enqueue(new("A")).await,
        b.enqueue(new("A")).await,
        b.enqueue(new("A")).await,
    ];
    let mut held = Vec::new();
    for owner in ["host-a", "host-b", "host-a"] {
        let c = ok(b.store.claim_as(owner, "default", 1, LEASE).await, "claim").remove(0);
        held.push(c.held());
    }
    let intruder = Held::new(held[2].id, held[2].fence, "host-b");
    let batch = ok(
        b.store
            .finish_many(vec![
                Finish::of(&held[0], Outcome::Complete),
                Finish::of(&held[1], Outcome::Complete),
                Finish::of(&intruder, Outcome::Complete),
            ])
            .await,
        "batch",
    );
    assert!(
        batch[0].is_ok() && batch[1].is_ok() && batch[2].is_err(),
        "{batch:?}"
    );
    let mut states = Vec::new();
    for id in ids {
        states.push(get(&b.store, id).await.state);
    }
    assert_eq!(
        states,
        [
            ItemState::Completed,
            ItemState::Completed,
            ItemState::Running
        ]
    );
    assert_eq!(
        get(&b.store, ids[2]).await.lease_owner.as_deref(),
        Some("host-a")
    );
    ok(b.store.complete(&held[2]).await, "the holder completes");

    // The real holder's completion and an impostor's of the same claim, in one batch (as
    // the coordinator writes them, strict: a repeat is not taken for a success).
    let id = b.enqueue(new("A")).await;
    let c = ok(
        b.store.claim_as("host-a", "default", 1, LEASE).await,
        "claim",
    )
    .remove(0);
    let impostor = Held::new(id, c.fence, "host-b");
    let batch = ok(
        b.store
            .finish_many(vec![
                Finish::of(&c.held(), Outcome::Complete).strict(),
                Finish::of(&impostor, Outcome::Complete).strict(),
            ])
            .await,
        "batch",
    );
    assert!(batch[0].is_ok() && batch[1].is_err(), "{batch:?}");
    assert_eq!(get(&b.store, id).await.state, ItemState::Completed);
}

/// The check before an effect: recorded output comes back without a lease; otherwise the
/// lease must be live and this holder's, and is renewed.
pub async fn begin_effect_checks_and_renews_the_lease<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(Duration::from_secs(10));
    let start = ok(
        b.worker().begin_effect(&c.held(), "e", LEASE).await,
        "begin effect",
    );
    let renewed = b.store.now().plus(LEASE);
    assert_eq!(
        start,
        EffectStart::Run {
            lease_expires_at: renewed,
            verified_at: b.store.now(),
        }
    );
    assert_eq!(get(&b.store, id).await.lease_expires_at, Some(renewed));
    ok(
        b.worker()
            .record_effect(&c.held(), "e", json!("done"))
            .await,
        "record",
    );
    assert_eq!(
        ok(
            b.worker().begin_effect(&c.held(), "e", LEASE).await,
            "again"
        ),
        EffectStart::Recorded(json!("done"))
    );
    // Past the lease: refused, the effect must not run.
    b.clock.advance(LEASE * 2);
    stale(
        b.worker().begin_effect(&c.held(), "f", LEASE).await,
        "an expired lease",
    );
    // A recorded effect still reads back to a later holder.
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.worker().claim("default", 1, LEASE).await, "reclaim").remove(0);
    assert_eq!(
        ok(
            b.worker().begin_effect(&c2.held(), "e", LEASE).await,
            "recorded"
        ),
        EffectStart::Recorded(json!("done"))
    );
}

/// A holder whose lease passed to another never runs the effect's closure; the closure of
/// the current holder gets an idempotency key that is the same on every attempt of the
/// effect and names the store and the item.
pub async fn once_runs_only_under_a_live_lease<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let runs = AtomicUsize::new(0);
    let c1 = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    let stale_ctx = WorkContext::new(b.worker().clone(), &c1, LEASE);
    b.clock.advance(LEASE + Duration::from_millis(1));
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(
        b.worker().claim("default", 1, LEASE).await,
        "another holder",
    )
    .remove(0);
    let r: Result<String, WorkError> = stale_ctx
        .once("send", |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("from the stale holder".to_owned())
        })
        .await;
    assert!(matches!(r, Err(WorkError::LeaseLost { .. })), "{r:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a stale holder ran the effect"
    );
    let ctx = WorkContext::new(b.worker().clone(), &c2, LEASE);
    let key: String = ok(
        ctx.once("send", |effect| async move {
            Ok(effect.idempotency_key().to_owned())
        })
        .await,
        "once",
    );
    let store_id = ok(b.store.store_id().await, "store id");
    assert_eq!(key, format!("{store_id}-{id}-send"));
    assert!(
        store_id.len() >= 16,
        "a store id of {} characters",
        store_id.len()
    );
    assert_eq!(
        ok(b.store.store_id().await, "store id again"),
        store_id,
        "the store's id is stable"
    );
}

/// Each ended attempt is one row (holder, fence, claimed and finished times, outcome,
/// error), written with the transition; they go with their item.
pub async fn attempts_are_recorded<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A").max_attempts(5)).await;
    let claimed_at = b.store.now();
    let c1 = ok(b.store.claim_as("w1", "default", 1, LEASE).await, "claim").remove(0);
    ok(
        b.store
            .fail(
                &c1.held(),
                Outcome::Retry {
                    retry_at: b.store.now(),
                    error: "flaky".into(),
                },
            )
            .await,
        "fail",
    );
    let c2 = ok(b.store.claim_as("w2", "default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(LEASE + Duration::from_millis(1));
    ok(b.store.sweep().await, "sweep");
    let c3 = ok(b.store.claim_as("w3", "default", 1, LEASE).await, "claim").remove(0);
    let live = get(&b.store, id).await;
    assert_eq!(
        (live.lease_owner.as_deref(), live.claimed_at),
        (Some("w3"), Some(b.store.now())),
        "the running attempt is the item's lease"
    );
    ok(b.store.complete(&c3.held()).await, "complete");
    let attempts = ok(b.store.attempts(id).await, "attempts");
    type Row<'a> = (i32, i64, Option<&'a str>, &'a str, Option<&'a str>);
    let got: Vec<Row<'_>> = attempts
        .iter()
        .map(|a| {
            (
                a.attempt,
                a.fence,
                a.holder.as_deref(),
                a.outcome.as_str(),
                a.error.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, c1.fence, Some("w1"), "failed", Some("flaky")),
            (2, c2.fence, Some("w2"), "expired", Some("lease expired")),
            (3, c3.fence, Some("w3"), "completed", None),
        ]
    );
    assert_eq!(attempts[0].claimed_at, Some(claimed_at));
    assert!(attempts.iter().all(|a| a.claimed_at <= Some(a.finished_at)));
    // Cancelled while running: the attempt ends as dead with the operator's reason.
    let other = b.enqueue(new("A")).await;
    ok(b.store.claim_as("w4", "default", 1, LEASE).await, "claim");
    ok(b.store.cancel(other).await, "cancel");
    let cancelled = ok(b.store.attempts(other).await, "attempts");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(
        (
            cancelled[0].outcome.as_str(),
            cancelled[0].holder.as_deref()
        ),
        ("dead", Some("w4"))
    );
    // Retried by an operator, released by one, then claimed and completed: every ended
    // attempt is kept, in order, whatever the item went through between them.
    ok(b.store.retry(other).await, "retry the cancelled item");
    ok(b.store.claim_as("w5", "default", 1, LEASE).await, "claim");
    ok(b.store.release_worker("w5").await, "release w5's items");
    let c6 = ok(b.store.claim_as("w6", "default", 1, LEASE).await, "claim").remove(0);
    ok(b.store.complete(&c6.held()).await, "complete");
    let history: Vec<(String, Option<String>)> = ok(b.store.attempts(other).await, "attempts")
        .into_iter()
        .map(|a| (a.outcome, a.holder))
        .collect();
    assert_eq!(
        history,
        [
            ("dead".to_owned(), Some("w4".to_owned())),
            ("released".to_owned(), Some("w5".to_owned())),
            ("completed".to_owned(), Some("w6".to_owned())),
        ]
    );
    // Purged with the item.
    b.clock.advance(Duration::from_secs(1));
    ok(b.store.purge_completed(Duration::ZERO, 100).await, "purge");
    assert!(ok(b.store.attempts(id).await, "attempts after purge").is_empty());
    assert!(ok(b.store.attempts(other).await, "attempts after purge").is_empty());
}
