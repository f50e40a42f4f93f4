//! Conformance: the dashboard's tables — operators and their sessions (by token SHA-256
//! only), the record of their actions, and each lane's completions and failures over a
//! span of time.

use std::future::Future;
use std::time::Duration;

use super::{LEASE, TestBackend, fresh, new, ok};
use crate::item::ItemState::{Available, Dead};
use crate::item::{NewItem, Outcome};
use crate::store::dashboard::{Activity, OperatorAction};
use crate::time::Timestamp;

pub async fn dashboard_operators_and_sessions<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(
    make: F,
) {
    let b = fresh(make).await;
    let d = ok(b.store.dashboard(), "dashboard tables");
    let now = b.store.now();
    assert!(ok(
        d.add_operator("ana".into(), "t-ana".into(), now).await,
        "add ana"
    ));
    assert!(!ok(
        d.add_operator("ana".into(), "t-other".into(), now).await,
        "ana again"
    ));
    assert!(ok(
        d.add_operator("bo".into(), "t-bo".into(), now).await,
        "add bo"
    ));
    let names: Vec<String> = ok(d.operators().await, "operators")
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert_eq!(names, ["ana", "bo"]);

    let end = now.plus(Duration::from_secs(60));
    let opened = ok(
        d.open_operator_session("t-ana".into(), "s-1".into(), now, end)
            .await,
        "sign in",
    );
    assert_eq!(opened.as_deref(), Some("ana"));
    let unknown = ok(
        d.open_operator_session("t-nobody".into(), "s-2".into(), now, end)
            .await,
        "unknown token",
    );
    assert_eq!(unknown, None);
    assert_eq!(
        ok(d.operator_session("s-2".into(), now).await, "no session").as_deref(),
        None
    );
    assert_eq!(
        ok(d.operator_session("s-1".into(), now).await, "session").as_deref(),
        Some("ana")
    );
    // A session ends at its end, when it is closed, and when its operator is removed.
    assert_eq!(
        ok(d.operator_session("s-1".into(), end).await, "expired"),
        None
    );
    ok(
        d.open_operator_session("t-ana".into(), "s-3".into(), now, end)
            .await,
        "sign in again",
    );
    ok(d.close_operator_session("s-3".into()).await, "sign out");
    assert_eq!(
        ok(d.operator_session("s-3".into(), now).await, "closed"),
        None
    );
    ok(
        d.open_operator_session("t-bo".into(), "s-4".into(), now, end)
            .await,
        "bo signs in",
    );
    assert!(ok(d.remove_operator("bo".into()).await, "remove bo"));
    assert!(!ok(d.remove_operator("bo".into()).await, "remove bo again"));
    assert_eq!(
        ok(d.operator_session("s-4".into(), now).await, "removed"),
        None
    );
    assert_eq!(
        ok(d.operator_session("s-1".into(), now).await, "ana's stays").as_deref(),
        Some("ana")
    );

    for (i, item) in [Some(7), None, Some(7)].into_iter().enumerate() {
        ok(
            d.record_action(OperatorAction {
                at: now,
                operator: "ana".into(),
                action: format!("a{i}"),
                item_id: item,
                target: item.is_none().then(|| "NOTIFY".to_owned()),
                changed: i as u64,
                detail: format!("did {i}"),
            })
            .await,
            "record",
        );
    }
    let on_7: Vec<String> = ok(d.item_actions(7).await, "item 7")
        .into_iter()
        .map(|a| a.action)
        .collect();
    assert_eq!(on_7, ["a0", "a2"]);
    let recent = ok(d.recent_actions(2).await, "recent");
    assert_eq!(
        recent.iter().map(|a| a.action.as_str()).collect::<Vec<_>>(),
        ["a2", "a1"]
    );
    assert_eq!(recent[1].target.as_deref(), Some("NOTIFY"));
    assert_eq!(recent[1].item_id, None);
}

pub async fn dashboard_activity_by_lane_and_time<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let start = b.store.now();
    for lane in ["default", "default", "mail", "mail"] {
        let mut item = new("A");
        item.lane = lane.to_owned();
        b.enqueue(item).await;
    }
    let mut failing = NewItem::new("B", serde_json::json!({}));
    failing.lane = "mail".to_owned();
    b.enqueue(failing).await;
    b.clock.advance(Duration::from_secs(10));
    for lane in ["default", "mail"] {
        for c in ok(b.store.claim(lane, 10, LEASE).await, "claim") {
            let outcome = if c.item.kind == "B" {
                Outcome::Retry {
                    retry_at: b.store.now().plus(Duration::from_secs(600)),
                    error: "carrier down".into(),
                }
            } else {
                Outcome::Complete
            };
            let done = match outcome {
                Outcome::Complete => b.store.complete(&c.held()).await,
                o => b.store.fail(&c.held(), o).await,
            };
            ok(done, "finish");
        }
    }
    let d = ok(b.store.dashboard(), "dashboard tables");
    let mid = b.store.now();
    b.clock.advance(Duration::from_secs(10));
    let all = ok(d.activity(start, b.store.now()).await, "activity");
    assert_eq!(
        all,
        [
            (
                "default".to_owned(),
                Activity {
                    completed: 2,
                    failed: 0
                }
            ),
            (
                "mail".to_owned(),
                Activity {
                    completed: 2,
                    failed: 1
                }
            ),
        ]
    );
    // The span is half-open: nothing finished before `start` or at and after `mid + 1 ms`.
    let before = ok(d.activity(Timestamp::from_millis(0), start).await, "before");
    assert!(before.is_empty(), "{before:?}");
    let after = ok(
        d.activity(mid.plus(Duration::from_millis(1)), b.store.now())
            .await,
        "after",
    );
    assert!(after.is_empty(), "{after:?}");
}

pub async fn signal_at_most_wakes_at_most_that_many<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(b.enqueue(new("A")).await);
    }
    for c in ok(b.store.claim("default", 5, LEASE).await, "claim") {
        ok(
            b.store
                .fail(
                    &c.held(),
                    Outcome::Park {
                        until: None,
                        signal: Some("approved".into()),
                    },
                )
                .await,
            "park",
        );
    }
    assert_eq!(ok(b.store.signal_at_most("approved", 2).await, "two"), 2);
    let woken: Vec<i64> = ok(
        b.store
            .list(crate::item::ListFilter {
                state: Some(Available),
                ..Default::default()
            })
            .await,
        "available",
    )
    .into_iter()
    .map(|r| r.id)
    .collect();
    assert_eq!(woken, ids[..2], "the lowest ids first");
    assert_eq!(ok(b.store.signal_at_most("approved", 0).await, "none"), 0);
    assert_eq!(ok(b.store.signal("approved").await, "the rest"), 3);
    assert_eq!(ok(b.store.signal("approved").await, "nothing left"), 0);
}

pub async fn retry_dead_at_most_takes_at_most_that_many<
    F: Fn() -> Fut,
    Fut: Future<Output = TestBackend>,
>(
    make: F,
) {
    let b = fresh(make).await;
    let mut ids = Vec::new();
    for key in ["a", "b", "c", "held"] {
        ids.push(b.enqueue(new("A").dedupe_key(key)).await);
    }
    b.enqueue(new("B")).await;
    for c in ok(b.store.claim("default", 5, LEASE).await, "claim") {
        ok(
            b.store
                .fail(&c.held(), Outcome::Dead { error: "x".into() })
                .await,
            "dead",
        );
    }
    // A live item holds the last one's key: it stays dead whatever the cap.
    b.enqueue(new("A").dedupe_key("held")).await;
    assert_eq!(ok(b.store.retry_dead_at_most(Some("A"), 2).await, "two"), 2);
    assert_eq!(super::get(&b.store, ids[0]).await.state, Available);
    assert_eq!(super::get(&b.store, ids[1]).await.state, Available);
    assert_eq!(super::get(&b.store, ids[2]).await.state, Dead);
    assert_eq!(
        ok(b.store.retry_dead_at_most(Some("A"), 10).await, "the rest"),
        1
    );
    assert_eq!(
        super::get(&b.store, ids[3]).await.state,
        Dead,
        "its key is held"
    );
    assert_eq!(ok(b.store.retry_dead_at_most(None, 10).await, "B"), 1);
}
