//! Conformance: failures — transient errors back off and go dead when out of attempts,
//! permanent ones at once; dead items retry and discard.

use std::future::Future;
use std::time::Duration;

use super::{LEASE, TestBackend, fresh, get, new, ok};
use crate::error::StoreError;
use crate::item::{ItemState, Outcome};
use crate::retry::RetryPolicy;

pub async fn transient_backs_off_then_dead<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let policy = RetryPolicy {
        base: Duration::from_secs(2),
        cap: Duration::from_secs(5),
    };
    let id = b.enqueue(new("A").max_attempts(3)).await;
    for attempt in 1..=3 {
        let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
        assert_eq!(c.item.attempt, attempt);
        let delay = policy.delay(attempt);
        assert!(delay >= policy.step(attempt) / 2 && delay <= policy.step(attempt));
        let retry_at = b.store.now().plus(delay);
        ok(
            b.worker()
                .fail(
                    &c.held(),
                    Outcome::Retry {
                        retry_at,
                        error: format!("boom {attempt}"),
                    },
                )
                .await,
            "fail",
        );
        let rec = get(&b.store, id).await;
        // A remote worker's failure is retried at the coordinator's back-off, and its
        // message is kept after the failure's code.
        let remote = b.worker.is_some();
        if attempt < 3 {
            assert_eq!(rec.state, ItemState::Failed);
            if remote {
                assert!(rec.run_at > b.store.now(), "backed off");
            } else {
                assert_eq!(rec.run_at, retry_at);
            }
            b.clock.advance(rec.run_at.duration_from(b.store.now()));
        } else {
            assert_eq!(rec.state, ItemState::Dead, "out of attempts");
            let error = rec.last_error.as_deref().unwrap_or("");
            if remote {
                assert!(error.ends_with("boom 3"), "{error}");
            } else {
                assert_eq!(error, "boom 3");
            }
        }
    }
    assert_eq!(policy.step(1), Duration::from_secs(2));
    assert_eq!(policy.step(2), Duration::from_secs(4));
    assert_eq!(policy.step(9), Duration::from_secs(5), "capped");
}

pub async fn permanent_is_dead_at_once<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let id = b.enqueue(new("A")).await;
    let c = ok(b.worker().claim("default", 1, LEASE).await, "claim").remove(0);
    ok(
        b.worker()
            .fail(
                &c.held(),
                Outcome::Dead {
                    error: "bad".into(),
                },
            )
            .await,
        "fail",
    );
    let rec = get(&b.store, id).await;
    assert_eq!((rec.state, rec.attempt), (ItemState::Dead, 1));
}

pub async fn retry_and_discard_dead_items<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let ids = ok(
        b.store
            .enqueue_many(vec![new("A"), new("A"), new("A")])
            .await,
        "enqueue",
    );
    for c in ok(b.store.claim("default", 3, LEASE).await, "claim") {
        ok(
            b.store
                .fail(&c.held(), Outcome::Dead { error: "x".into() })
                .await,
            "fail",
        );
    }
    ok(b.store.retry(ids[0]).await, "retry");
    let rec = get(&b.store, ids[0]).await;
    assert_eq!((rec.state, rec.attempt), (ItemState::Available, 0));
    assert!(
        matches!(
            b.store.retry(ids[0]).await,
            Err(StoreError::WrongState { .. })
        ),
        "only dead items retry"
    );
    assert!(matches!(
        b.store.retry(9_999_999).await,
        Err(StoreError::NotFound(_))
    ));
    ok(b.store.discard(ids[1]).await, "discard");
    assert!(ok(b.store.get(ids[1]).await, "get").is_none());
    assert!(
        matches!(
            b.store.discard(ids[0]).await,
            Err(StoreError::WrongState { .. })
        ),
        "only dead items discard"
    );
    assert_eq!(ok(b.store.retry_all_dead(None).await, "retry all"), 1);
    assert_eq!(get(&b.store, ids[2]).await.state, ItemState::Available);
}
