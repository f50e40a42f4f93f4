//! Conformance: the lease and its fence — heartbeats, stale and expired holders failing
//! closed, repeated completion, the sweeper, effects recorded once and fenced checkpoints.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use super::{LEASE, TestBackend, fresh, get, new, ok, stale};
use crate::context::WorkContext;
use crate::error::{StoreError, WorkError};
use crate::item::{Finish, Held, ItemState, Outcome};

pub async fn heartbeat_returns_renewed_lease<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(Duration::from_secs(20));
    let renewed = ok(b.worker().heartbeat(&c.held(), LEASE).await, "heartbeat");
    assert_eq!(renewed, b.store.now().plus(LEASE));
    assert_eq!(get(&b.store, id).await.lease_expires_at, Some(renewed));
    b.clock.advance(Duration::from_secs(20));
    assert_eq!(
        ok(b.store.sweep().await, "sweep"),
        0,
        "the renewed lease holds past the first"
    );
    ok(b.worker().complete(&c.held()).await, "complete");
}

pub async fn stale_fence_fails_closed<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let old = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(LEASE + Duration::from_millis(1));
    ok(b.store.sweep().await, "sweep");
    let cur = ok(b.worker().claim("default", 1, LEASE).await, "reclaim").remove(0);
    let before = get(&b.store, id).await;
    stale(b.worker().heartbeat(&old.held(), LEASE).await, "heartbeat");
    stale(
        b.worker().checkpoint(&old.held(), json!({"x": 1})).await,
        "checkpoint",
    );
    stale(b.worker().complete(&old.held()).await, "complete");
    let retry_at = b.store.now();
    stale(
        b.worker()
            .fail(
                &old.held(),
                Outcome::Retry {
                    retry_at,
                    error: "x".into(),
                },
            )
            .await,
        "fail transient",
    );
    stale(
        b.worker()
            .fail(&old.held(), Outcome::Dead { error: "x".into() })
            .await,
        "fail permanent",
    );
    stale(
        b.worker().record_effect(&old.held(), "e", json!(1)).await,
        "record_effect",
    );
    assert_eq!(
        get(&b.store, id).await,
        before,
        "a stale holder changed nothing"
    );
    assert!(ok(b.store.effect(id, "e").await, "effect").is_none());
    ok(
        b.worker().complete(&cur.held()).await,
        "current holder completes",
    );
}

pub async fn expired_lease_fails_closed<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    b.clock.advance(LEASE);
    let before = get(&b.store, id).await;
    stale(b.worker().heartbeat(&c.held(), LEASE).await, "heartbeat");
    stale(
        b.worker().checkpoint(&c.held(), json!(1)).await,
        "checkpoint",
    );
    stale(b.worker().complete(&c.held()).await, "complete");
    stale(
        b.worker()
            .fail(&c.held(), Outcome::Dead { error: "x".into() })
            .await,
        "fail",
    );
    assert_eq!(get(&b.store, id).await, before, "nothing changed");
}

pub async fn complete_repeated_with_same_fence_succeeds<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    ok(b.worker().complete(&c.held()).await, "complete");
    let done = get(&b.store, id).await;
    ok(b.worker().complete(&c.held()).await, "complete again");
    assert_eq!(get(&b.store, id).await, done);
    stale(
        b.worker()
            .complete(&Held::new(id, c.fence - 1, "anonymous"))
            .await,
        "an older fence is still refused",
    );
    let batch = ok(
        b.worker()
            .finish_many(vec![
                Finish::of(&c.held(), Outcome::Complete),
                Finish::of(&Held::new(id, c.fence + 1, "anonymous"), Outcome::Complete),
            ])
            .await,
        "batch",
    );
    assert!(batch[0].is_ok());
    assert!(
        matches!(batch[1], Err(StoreError::StaleLease { .. })),
        "each row checks its own fence"
    );
    // The same with the claims' origins (a loop's batch, which PostgreSQL counts from them):
    // one fresh completion, one repeated, one stale, from two lanes; every row is answered
    // for itself and the counters still equal the items (checked as the case ends).
    let a = b.enqueue(new("A")).await;
    let other = b.enqueue(new("A").lane("bulk")).await;
    let ca = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    let co = ok(b.worker().claim("bulk", 1, LEASE).await, "claim").remove(0);
    assert_eq!((ca.item.id, co.item.id), (a, other));
    let batch = ok(
        b.worker()
            .finish_many(vec![
                Finish::of(&ca.held(), Outcome::Complete).with_origin(ca.origin()),
                Finish::of(&c.held(), Outcome::Complete).with_origin(ca.origin()),
                Finish::of(
                    &Held::new(other, co.fence + 1, "anonymous"),
                    Outcome::Complete,
                )
                .with_origin(co.origin()),
            ])
            .await,
        "batch with origins",
    );
    assert!(batch[0].is_ok() && batch[1].is_ok(), "{batch:?}");
    assert!(
        matches!(batch[2], Err(StoreError::StaleLease { .. })),
        "a stale member of a counted batch is refused alone: {batch:?}"
    );
    let all_good = ok(
        b.worker()
            .finish_many(vec![
                Finish::of(&co.held(), Outcome::Complete).with_origin(co.origin()),
            ])
            .await,
        "batch",
    );
    assert!(all_good[0].is_ok());
    assert_eq!(get(&b.store, other).await.state, ItemState::Completed);
}

pub async fn sweeper_returns_expired_leases<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let last = b.enqueue(new("A").max_attempts(1)).await;
    ok(b.store.claim("default", 2, LEASE).await, "claim");
    assert_eq!(ok(b.store.sweep().await, "early sweep"), 0);
    b.clock.advance(LEASE);
    assert_eq!(ok(b.store.sweep().await, "sweep"), 2);
    let rec = get(&b.store, id).await;
    assert_eq!(
        (rec.state, rec.lease_owner.clone()),
        (ItemState::Available, None)
    );
    assert_eq!(rec.attempt, 1, "the expired attempt counts");
    assert_eq!(
        get(&b.store, last).await.state,
        ItemState::Dead,
        "out of attempts"
    );
}

pub async fn once_records_effects_once<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let runs = AtomicUsize::new(0);
    let c1 = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    let ctx = WorkContext::new(b.worker().clone(), &c1, LEASE);
    let out: String = ok(
        ctx.once("send", |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("sent-1".to_owned())
        })
        .await,
        "once",
    );
    assert_eq!(out, "sent-1");
    // The worker dies before completing; the item comes back and the handler runs again.
    b.clock.advance(LEASE);
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.worker().claim("default", 1, LEASE).await, "reclaim").remove(0);
    let ctx2 = WorkContext::new(b.worker().clone(), &c2, LEASE);
    let again: String = ok(
        ctx2.once("send", |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("sent-2".to_owned())
        })
        .await,
        "once again",
    );
    assert_eq!(again, "sent-1", "the recorded output comes back");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the effect ran once");
    // A stale holder's effect is not recorded.
    // A stale holder never runs the effect: the store refuses it before the closure.
    let r: Result<u8, WorkError> = ctx
        .once("other", |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(1)
        })
        .await;
    assert!(matches!(r, Err(WorkError::LeaseLost { .. })), "{r:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "a stale holder ran an effect"
    );
    assert!(ok(b.store.effect(id, "other").await, "effect").is_none());
    assert_eq!(
        ok(b.store.effect(id, "send").await, "effect"),
        Some(json!("sent-1"))
    );
}

pub async fn checkpoint_is_fenced<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    ok(
        b.worker()
            .checkpoint(&c.held(), json!({"cursor": 10}))
            .await,
        "checkpoint",
    );
    assert_eq!(
        get(&b.store, id).await.checkpoint,
        Some(json!({"cursor": 10}))
    );
    stale(
        b.worker()
            .checkpoint(
                &Held::new(id, c.fence + 1, "anonymous"),
                json!({"cursor": 99}),
            )
            .await,
        "wrong fence",
    );
    b.clock.advance(LEASE);
    ok(b.store.sweep().await, "sweep");
    let c2 = ok(b.worker().claim("default", 1, LEASE).await, "reclaim").remove(0);
    assert_eq!(
        c2.item.checkpoint,
        Some(json!({"cursor": 10})),
        "the next claim sees the checkpoint"
    );
}
