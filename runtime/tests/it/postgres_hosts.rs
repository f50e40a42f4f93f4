//! PostgreSQL with many hosts: every host reads the database's clock, however far its own
//! clock is off; and the relay never drops a row a foreign writer gave a taken id. Each
//! test uses a fresh schema of `SCAFFOLD_TEST_DATABASE_URL`; without it each test prints
//! that it was skipped.

// The PostgreSQL backend: left out of a build without it.
#![cfg(feature = "postgres")]

use crate::pg_common;

use std::sync::Arc;
use std::time::Duration;

use pg_common::{database_named, fresh_url};
use scaffold_runtime::{Clock, ItemState, ManualClock, NewItem, Store, SystemClock};
use serde_json::json;

const LEASE: Duration = Duration::from_secs(30);

/// Host B's clock runs three leases ahead of host A's. Host A holds an item; host B's
/// sweeper must not take it back early, and A's heartbeat and completion must stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_whose_clocks_disagree_read_one_clock() {
    if !database_named() {
        return;
    }
    let (url, _guard) = fresh_url("");
    let behind = ManualClock::starting_now();
    let ahead = ManualClock::new(SystemClock.now().plus(LEASE * 3));
    let host_a = Store::open_with_host_clock(&url, behind.clone() as Arc<dyn Clock>)
        .await
        .expect("open on host A");
    host_a.migrate().await.expect("migrate");
    let host_b = Store::open_with_host_clock(&url, ahead.clone() as Arc<dyn Clock>)
        .await
        .expect("open on host B");
    let skew = host_a.now().as_millis() - host_b.now().as_millis();
    assert!(
        skew.abs() < 2_000,
        "the two hosts' stores disagree by {skew} ms"
    );

    let id = host_a
        .enqueue(NewItem::new("PG", json!({"n": 1})))
        .await
        .expect("enqueue");
    let held = host_a
        .claim_as("host-a", "default", 1, LEASE)
        .await
        .expect("claim")
        .remove(0);
    assert_eq!(
        host_b.sweep().await.expect("sweep"),
        0,
        "host B swept a held lease"
    );
    host_a
        .heartbeat(&held.held(), LEASE)
        .await
        .expect("the lease is still held");
    host_a.complete(&held.held()).await.expect("complete");
    let rec = host_b.get(id).await.expect("get").expect("item");
    assert_eq!((rec.state, rec.attempt), (ItemState::Completed, 1));

    // The same two hosts on their own clocks (what every backend did before): B's sweep
    // takes A's lease. This is what the database's clock prevents.
    let own_a = Store::open_with_clock(&url, behind as Arc<dyn Clock>)
        .await
        .expect("open");
    let own_b = Store::open_with_clock(&url, ahead as Arc<dyn Clock>)
        .await
        .expect("open");
    let second = own_a
        .enqueue(NewItem::new("PG", json!({"n": 2})))
        .await
        .expect("enqueue");
    own_a
        .claim_as("host-a", "default", 1, LEASE)
        .await
        .expect("claim");
    assert_eq!(own_b.sweep().await.expect("sweep"), 1);
    let rec = own_a.get(second).await.expect("get").expect("item");
    assert_eq!(rec.state, ItemState::Available);
}

/// A foreign writer inserts an outbox row whose id an item already has. The relay must
/// neither drop it nor touch the item: the row stays unrelayed with its reason, later
/// passes skip it, and the other rows relay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbox_row_with_a_taken_id_is_kept_unrelayed() {
    if !database_named() {
        return;
    }
    let (url, guard) = fresh_url("");
    let store = Store::open(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    let taken = store
        .enqueue(NewItem::new("PG", json!({"n": 1})))
        .await
        .expect("enqueue");
    let base = std::env::var(pg_common::ENV).expect("checked");
    let (client, conn) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .expect("a raw connection");
    tokio::spawn(conn);
    client
        .execute(
            &format!(
                "INSERT INTO \"{}\".outbox (id, kind, lane, payload, max_attempts, created_at) \
                 VALUES ($1, 'OTHER', 'default', '{{}}', 3, 0)",
                guard.schema
            ),
            &[&taken],
        )
        .await
        .expect("foreign insert");
    let producer = store.clone();
    let good = store
        .transaction(move |tx| producer.enqueue_in(tx, NewItem::new("PG", json!({"n": 2}))))
        .await
        .expect("outbox row");

    let report = store.relay_outbox_report(10).await.expect("relay");
    assert_eq!(report.relayed, 1);
    assert_eq!(report.refused.len(), 1);
    assert_eq!(report.refused[0].0, taken);
    let item = store.get(taken).await.expect("get").expect("item");
    assert_eq!(item.kind, "PG", "the relay overwrote the item");
    assert_eq!(
        store.get(good).await.expect("get").expect("relayed").kind,
        "PG"
    );
    let row = client
        .query_one(
            &format!(
                "SELECT relayed_at IS NULL, relay_error FROM \"{}\".outbox WHERE id = $1",
                guard.schema
            ),
            &[&taken],
        )
        .await
        .expect("the row is still there");
    assert!(
        row.get::<_, bool>(0),
        "the colliding row was marked relayed"
    );
    assert!(row.get::<_, Option<String>>(1).is_some());
    let again = store.relay_outbox_report(10).await.expect("relay again");
    assert_eq!((again.relayed, again.refused.len()), (0, 0));
    // The good row relayed again after losing its stamp is its own item: a no-op.
    client
        .execute(
            &format!(
                "UPDATE \"{}\".outbox SET relayed_at = NULL WHERE id = $1",
                guard.schema
            ),
            &[&good],
        )
        .await
        .expect("forget the stamp");
    let third = store
        .relay_outbox_report(10)
        .await
        .expect("relay a third time");
    assert_eq!((third.relayed, third.refused.len()), (1, 0));
}
