//! A version-2 queue, populated the way a running v2 deployment leaves it (items in every
//! state, one of them held, effects, outbox rows pending and relayed, a worker), migrated in
//! place to the current version on SQLite and on PostgreSQL: nothing is lost, the counters equal the
//! items, the held item's holder can still finish it, and its attempt is recorded.

// The SQLite and PostgreSQL backends: left out of a build without them.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

use crate::pg_common;

use std::collections::BTreeMap;

use scaffold_runtime::store::SCHEMA_VERSION;
use scaffold_runtime::{Held, ItemState, ListFilter, NewItem, Store};

const SQLITE_V2: &[&str] = &[
    include_str!("../../migrations/sqlite/0001_init.sql"),
    include_str!("../../migrations/sqlite/0002_ids_dedupe_workers.sql"),
];
const POSTGRES_V2: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_ids_dedupe_workers.sql"),
];

/// Rows as v2 wrote them, valid SQL on both stores: `$NOW` is a time in ms, `$LEASE` the
/// running item's lease end (an hour after it).
const POPULATE: &str = "
INSERT INTO work_items (id, kind, lane, payload, state, priority, attempt, max_attempts, run_at,
    lease_owner, lease_expires_at, fence, dedupe_key, checkpoint, last_error, parked_on,
    created_at, updated_at) VALUES
 (1, 'SHIP', 'default', '{\"n\":1}', 'available', 0, 0, 5, $NOW, NULL, NULL, 0, 'ship-1', NULL, NULL, NULL, $NOW, $NOW),
 (2, 'SHIP', 'default', '{\"n\":2}', 'running', 0, 1, 5, $NOW, 'w-old', $LEASE, 1, NULL, '{\"step\":3}', NULL, NULL, $NOW, $NOW),
 (3, 'SHIP', 'bulk', '{\"n\":3}', 'completed', 0, 1, 5, $NOW, NULL, NULL, 1, NULL, NULL, NULL, NULL, $NOW, $NOW),
 (4, 'BILL', 'bulk', '{\"n\":4}', 'dead', 0, 3, 3, $NOW, NULL, NULL, 3, NULL, NULL, 'card declined', NULL, $NOW, $NOW),
 (5, 'BILL', 'default', '{\"n\":5}', 'parked', 0, 1, 5, $NOW, NULL, NULL, 1, NULL, NULL, NULL, 'paid', $NOW, $NOW),
 (6, 'SHIP', 'default', '{\"n\":6}', 'failed', 0, 1, 5, $NOW, NULL, NULL, 1, NULL, NULL, 'timeout', NULL, $NOW, $NOW);
INSERT INTO work_effects (item_id, effect_key, output, fence, recorded_at) VALUES
 (3, 'label', '{\"label\":\"L-3\"}', 1, $NOW),
 (2, 'reserve', '\"r-2\"', 1, $NOW);
INSERT INTO outbox (id, kind, lane, payload, dedupe_key, run_at, priority, max_attempts, created_at, relayed_at) VALUES
 (7, 'SHIP', 'default', '{\"n\":7}', NULL, NULL, 0, 5, $NOW, NULL),
 (8, 'SHIP', 'default', '{\"n\":8}', NULL, NULL, 0, 5, $NOW, $NOW);
INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) VALUES
 ('w-old', 'default,bulk', 'ONLINE', $NOW, $NOW, 30000);
";

fn populate_sql(now: i64) -> String {
    POPULATE
        .replace("$NOW", &now.to_string())
        .replace("$LEASE", &(now + 3_600_000).to_string())
}

/// An item's id, kind, lane, state, payload, attempt, fence and last error.
type ItemRow = (
    i64,
    String,
    String,
    ItemState,
    serde_json::Value,
    i32,
    i64,
    Option<String>,
);

/// What must survive: every item's fields, every effect, the outbox and the worker.
#[derive(Debug, PartialEq)]
struct Snapshot {
    items: Vec<ItemRow>,
    effects: BTreeMap<i64, Vec<(String, serde_json::Value)>>,
    pending_outbox: u64,
    workers: Vec<(String, Vec<String>)>,
}

async fn snapshot(store: &Store) -> Snapshot {
    let items = store.list(ListFilter::default()).await.expect("list");
    let mut effects = BTreeMap::new();
    for i in &items {
        let e = store.effects(i.id).await.expect("effects");
        if !e.is_empty() {
            effects.insert(i.id, e.into_iter().map(|e| (e.key, e.output)).collect());
        }
    }
    Snapshot {
        items: items
            .into_iter()
            .map(|i| {
                (
                    i.id,
                    i.kind,
                    i.lane,
                    i.state,
                    i.payload,
                    i.attempt,
                    i.fence,
                    i.last_error,
                )
            })
            .collect(),
        effects,
        pending_outbox: store.outbox_stats().await.expect("outbox").pending,
        workers: store
            .workers()
            .await
            .expect("workers")
            .into_iter()
            .map(|w| (w.id, w.lanes))
            .collect(),
    }
}

fn expected() -> Snapshot {
    let item = |id: i64, kind: &str, lane: &str, state, attempt, fence, err: Option<&str>| {
        (
            id,
            kind.to_owned(),
            lane.to_owned(),
            state,
            serde_json::json!({ "n": id }),
            attempt,
            fence,
            err.map(str::to_owned),
        )
    };
    Snapshot {
        items: vec![
            item(1, "SHIP", "default", ItemState::Available, 0, 0, None),
            item(2, "SHIP", "default", ItemState::Running, 1, 1, None),
            item(3, "SHIP", "bulk", ItemState::Completed, 1, 1, None),
            item(
                4,
                "BILL",
                "bulk",
                ItemState::Dead,
                3,
                3,
                Some("card declined"),
            ),
            item(5, "BILL", "default", ItemState::Parked, 1, 1, None),
            item(
                6,
                "SHIP",
                "default",
                ItemState::Failed,
                1,
                1,
                Some("timeout"),
            ),
        ],
        effects: BTreeMap::from([
            (2, vec![("reserve".to_owned(), serde_json::json!("r-2"))]),
            (
                3,
                vec![("label".to_owned(), serde_json::json!({ "label": "L-3" }))],
            ),
        ]),
        pending_outbox: 1,
        workers: vec![(
            "w-old".to_owned(),
            vec!["default".to_owned(), "bulk".to_owned()],
        )],
    }
}

/// After the migration: the data, the counters, the store's id, the held item's holder
/// finishing it, the next ids, and a second migrate changing nothing.
async fn check_migrated(store: &Store) {
    assert_eq!(store.migrate().await.expect("migrate"), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 7);
    assert_eq!(snapshot(store).await, expected(), "nothing lost");
    let running = store.get(2).await.expect("get").expect("item 2");
    assert_eq!(running.checkpoint, Some(serde_json::json!({ "step": 3 })));
    assert_eq!(
        running.claimed_at, None,
        "claimed before v3 recorded claims"
    );
    counters_equal_items(store).await;
    let id = store.store_id().await.expect("the store's id");
    assert!(id.len() >= 16, "a minted id: {id}");

    // The v2 holder still holds its item and finishes it; its attempt is on record.
    let held = Held {
        id: 2,
        fence: 1,
        owner: "w-old".to_owned(),
    };
    store
        .complete(&held)
        .await
        .expect("the v2 holder completes");
    let attempts = store.attempts(2).await.expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        (
            attempts[0].fence,
            attempts[0].holder.as_deref(),
            attempts[0].outcome.as_str()
        ),
        (1, Some("w-old"), "completed")
    );
    // The outbox row relays under its own id; a new item's id is past every old one.
    assert_eq!(store.relay_outbox(10).await.expect("relay"), 1);
    assert_eq!(
        store.get(7).await.expect("get").map(|i| i.kind),
        Some("SHIP".to_owned())
    );
    let next = store
        .enqueue(NewItem::new("SHIP", serde_json::json!({})))
        .await
        .expect("enqueue");
    assert!(next > 8, "ids continue past the v2 ones: {next}");
    // A dedupe key held before the migration still holds.
    let dup = store
        .enqueue_reporting(NewItem::new("SHIP", serde_json::json!({})).dedupe_key("ship-1"))
        .await
        .expect("enqueue");
    assert!(dup.duplicate && dup.id == 1, "{dup:?}");
    counters_equal_items(store).await;
    assert_eq!(
        store.migrate().await.expect("migrate again"),
        SCHEMA_VERSION
    );
    assert_eq!(store.store_id().await.expect("id"), id, "minted once");
}

async fn counters_equal_items(store: &Store) {
    scaffold_runtime::testing::conformance::counters_agree(store).await;
}

#[tokio::test]
async fn a_populated_v2_sqlite_file_migrates_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("queue.db");
    let now = 1_790_000_000_000_i64;
    {
        let conn = scaffold_runtime::rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
        )
        .expect("schema_version");
        for (v, sql) in SQLITE_V2.iter().enumerate() {
            conn.execute_batch(sql).expect("a v2 migration");
            conn.execute(
                "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
                (v as i64 + 1, now),
            )
            .expect("version");
        }
        conn.execute_batch(&populate_sql(now)).expect("populate");
        conn.execute("UPDATE id_counter SET next_id = 9", [])
            .expect("ids");
    }
    let clock = scaffold_runtime::ManualClock::new(scaffold_runtime::Timestamp::from_millis(now));
    let url = format!("sqlite://{}", path.display());
    let store = Store::open_with_clock(&url, clock.clone())
        .await
        .expect("the v2 file opens");
    assert!(store.require_migrated().await.is_err(), "v2 is not current");
    check_migrated(&store).await;
}

#[tokio::test]
async fn a_populated_v2_postgres_schema_migrates_in_place() {
    if !pg_common::database_named() {
        return;
    }
    let (url, guard) = pg_common::fresh_url("");
    let now = 1_790_000_000_000_i64;
    {
        let client = pg_common::old_schema(&guard, POSTGRES_V2, now).await;
        client
            .batch_execute(&populate_sql(now))
            .await
            .expect("populate");
        client
            .batch_execute("SELECT setval('scaffold_ids', 8)")
            .await
            .expect("ids");
    }
    let clock = scaffold_runtime::ManualClock::new(scaffold_runtime::Timestamp::from_millis(now));
    let store = Store::open_with_clock(&url, clock)
        .await
        .expect("the v2 schema opens");
    assert!(store.require_migrated().await.is_err(), "v2 is not current");
    check_migrated(&store).await;
}
