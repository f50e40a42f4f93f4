//! A producer with its own SQLite connection writes its business row and the outbox row in
//! one transaction; the store's relay turns the row into an item with the row's id.

// The SQLite backend: left out of a build without it.
#![cfg(feature = "sqlite")]

use scaffold_runtime::rusqlite;
use scaffold_runtime::{Clock, NewItem, Store, SystemClock, Tx};

#[tokio::test]
async fn a_producer_connection_writes_outbox_rows_in_its_own_transaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let store = Store::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("open");
    store.migrate().await.expect("migrate");

    let mut conn = rusqlite::Connection::open(&path).expect("producer connection");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT NOT NULL)")
        .expect("business table");

    // Rolled back: neither the order nor the outbox row exists.
    {
        let tx = conn.transaction().expect("begin");
        tx.execute("INSERT INTO orders (id, state) VALUES (1, 'placed')", [])
            .expect("order");
        let mut handle = Tx::sqlite(&tx, SystemClock.now());
        store
            .enqueue_in(
                &mut handle,
                NewItem::new("SHIP", serde_json::json!({"order": 1})),
            )
            .expect("outbox row");
        tx.rollback().expect("rollback");
    }
    assert_eq!(store.relay_outbox(10).await.expect("relay"), 0);

    let row = {
        let tx = conn.transaction().expect("begin");
        tx.execute("INSERT INTO orders (id, state) VALUES (1, 'placed')", [])
            .expect("order");
        let mut handle = Tx::sqlite(&tx, SystemClock.now());
        let row = store
            .enqueue_in(
                &mut handle,
                NewItem::new("SHIP", serde_json::json!({"order": 1})),
            )
            .expect("outbox row");
        tx.commit().expect("commit");
        row
    };
    assert_eq!(store.relay_outbox(10).await.expect("relay"), 1);
    assert_eq!(store.relay_outbox(10).await.expect("relay again"), 0);
    let item = store
        .get(row)
        .await
        .expect("get")
        .expect("the relayed item");
    assert_eq!(item.kind, "SHIP");
    assert_eq!(item.payload, serde_json::json!({"order": 1}));
}

/// A foreign writer inserts an outbox row whose id an item already has: the relay keeps it
/// unrelayed with its reason (it was marked relayed and lost before), and relays the rest.
#[tokio::test]
async fn an_outbox_row_with_a_taken_id_is_kept_unrelayed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let store = Store::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let taken = store
        .enqueue(NewItem::new("SHIP", serde_json::json!({"n": 1})))
        .await
        .expect("enqueue");
    let conn = rusqlite::Connection::open(&path).expect("foreign connection");
    conn.execute(
        "INSERT INTO outbox (id, kind, lane, payload, max_attempts, created_at) \
         VALUES (?1, 'OTHER', 'default', '{}', 3, 0)",
        [taken],
    )
    .expect("foreign insert");
    let producer = store.clone();
    let good = store
        .transaction(move |tx| {
            producer.enqueue_in(tx, NewItem::new("SHIP", serde_json::json!({"n": 2})))
        })
        .await
        .expect("outbox row");
    let report = store.relay_outbox_report(10).await.expect("relay");
    assert_eq!(report.relayed, 1);
    assert_eq!(
        report.refused.iter().map(|r| r.0).collect::<Vec<_>>(),
        [taken]
    );
    assert_eq!(
        store.get(taken).await.expect("get").expect("item").kind,
        "SHIP"
    );
    assert_eq!(
        store.get(good).await.expect("get").expect("relayed").kind,
        "SHIP"
    );
    let (unrelayed, reason): (bool, Option<String>) = conn
        .query_row(
            "SELECT relayed_at IS NULL, relay_error FROM outbox WHERE id = ?1",
            [taken],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the row is still there");
    assert!(unrelayed && reason.is_some());
    let again = store.relay_outbox_report(10).await.expect("relay again");
    assert_eq!((again.relayed, again.refused.len()), (0, 0));
    // The good row relayed again after losing its stamp is its own item: a no-op, not a
    // collision.
    conn.execute("UPDATE outbox SET relayed_at = NULL WHERE id = ?1", [good])
        .expect("forget the stamp");
    let third = store
        .relay_outbox_report(10)
        .await
        .expect("relay a third time");
    assert_eq!((third.relayed, third.refused.len()), (1, 0));
}

/// A SQLite URL whose folder does not exist is refused, and nothing is created; the
/// default's `.scaffold/` is the one folder created.
#[tokio::test]
async fn a_missing_folder_is_refused_except_the_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nonexistent").join("x.db");
    let err = Store::open(&format!("sqlite://{}", missing.display()))
        .await
        .expect_err("a missing folder is refused");
    assert!(
        matches!(err, scaffold_runtime::StoreError::MissingDirectory { .. }),
        "{err:?}"
    );
    assert!(
        !dir.path().join("nonexistent").exists(),
        "a folder was created"
    );
    let default = dir.path().join(".scaffold").join("queue.db");
    Store::open(&format!("sqlite://{}", default.display()))
        .await
        .expect("the default's .scaffold/ is created");
    assert!(dir.path().join(".scaffold").is_dir());
    let deeper = dir.path().join("a").join(".scaffold").join("queue.db");
    assert!(
        Store::open(&format!("sqlite://{}", deeper.display()))
            .await
            .is_err()
    );
}

/// A row another writer put in under the next id (an older runtime on the same file, a
/// producer choosing ids) does not wedge enqueues: the id mark catches up past it.
#[tokio::test]
async fn a_foreign_row_on_the_next_id_does_not_wedge_enqueues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let store = Store::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let first = store
        .enqueue(NewItem::new("SHIP", serde_json::json!({})))
        .await
        .expect("enqueue");
    let conn = rusqlite::Connection::open(&path).expect("foreign connection");
    conn.execute(
        "INSERT INTO work_items (id, kind, lane, payload, state, max_attempts, run_at, \
         created_at, updated_at) VALUES (?1, 'OTHER', 'default', '{}', 'available', 3, 0, 0, 0)",
        [first + 1],
    )
    .expect("foreign insert");
    for _ in 0..2 {
        let id = store
            .enqueue(NewItem::new("SHIP", serde_json::json!({})))
            .await
            .expect("enqueue past the foreign row");
        assert!(id > first + 1, "{id} is not past the foreign row");
    }
    let row = store
        .transaction({
            let store = store.clone();
            move |tx| store.enqueue_in(tx, NewItem::new("SHIP", serde_json::json!({})))
        })
        .await
        .expect("outbox row");
    assert_eq!(store.relay_outbox(10).await.expect("relay"), 1);
    assert_eq!(
        store.get(row).await.expect("get").expect("relayed").kind,
        "SHIP"
    );
}

/// A device or a folder is not a database, and nothing is written beside it
/// (`sqlite:///dev/null` left `/dev/null-journal`).
#[cfg(unix)]
#[tokio::test]
async fn a_device_or_a_folder_is_not_a_database() {
    let journal = std::path::Path::new("/dev/null-journal");
    let existed = journal.exists();
    let err = Store::open("sqlite:///dev/null")
        .await
        .expect_err("/dev/null is refused");
    assert!(
        matches!(err, scaffold_runtime::StoreError::NotADatabase { .. }),
        "{err:?}"
    );
    assert_eq!(
        journal.exists(),
        existed,
        "a journal was written beside /dev/null"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let err = Store::open(&format!("sqlite://{}", dir.path().display()))
        .await
        .expect_err("a folder is refused");
    assert!(
        matches!(err, scaffold_runtime::StoreError::NotADatabase { .. }),
        "{err:?}"
    );
}
