//! A producer with its own SQLite connection writes its business row and the outbox row in
//! one transaction; the store's relay turns the row into an item with the row's id.

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
