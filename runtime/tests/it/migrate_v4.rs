//! A version-4 PostgreSQL queue whose items carry inputs, migrated in place to version 5:
//! the items that have inputs are flagged (`has_inputs`), so a remote worker's claim still
//! hands them out with the item; the others are not; and an input attached later by any
//! writer flags its item.

// The PostgreSQL backend: left out of a build without it.
#![cfg(feature = "postgres")]

use crate::pg_common;

use scaffold_runtime::Store;

const POSTGRES_V4: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_ids_dedupe_workers.sql"),
    include_str!("../../migrations/postgres/0003_attempts_counts_meta.sql"),
    include_str!("../../migrations/postgres/0004_remote_workers.sql"),
];

/// Two available items, the first with an input and an output of an earlier attempt, the
/// second with only an output.
const POPULATE: &str = "
INSERT INTO work_items (id, kind, lane, payload, state, max_attempts, run_at, created_at,
    updated_at, account) VALUES
 (1, 'A', 'default', '{}', 'available', 5, 0, 0, 0, 'acme'),
 (2, 'A', 'default', '{}', 'available', 5, 0, 0, 0, 'acme');
INSERT INTO artifacts (account, sha256, size, bytes, created_at) VALUES
 ('acme', repeat('a', 64), 1, '\\x61', 0);
INSERT INTO item_artifacts (item_id, fence, role, name, sha256, size) VALUES
 (1, 0, 'input', 'in.txt', repeat('a', 64), 1),
 (1, 1, 'output', 'out.txt', repeat('a', 64), 1),
 (2, 1, 'output', 'out.txt', repeat('a', 64), 1);
";

#[tokio::test]
async fn items_with_inputs_are_flagged_by_the_v5_migration() {
    if !pg_common::database_named() {
        return;
    }
    let (url, guard) = pg_common::fresh_url("");
    let client = pg_common::old_schema(&guard, POSTGRES_V4, 0).await;
    client.batch_execute(POPULATE).await.expect("populate");
    let store = Store::open(&url).await.expect("the v4 schema opens");
    assert!(store.require_migrated().await.is_err(), "v4 is not current");
    store.migrate().await.expect("migrates to v5");
    store.require_migrated().await.expect("current");
    let flagged: Vec<(i64, bool)> = client
        .query("SELECT id, has_inputs FROM work_items ORDER BY id", &[])
        .await
        .expect("read")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(flagged, [(1, true), (2, false)]);
    // An input attached by a writer that does not know the flag (a producer of the previous
    // version, still running) flags its item all the same.
    client
        .batch_execute(
            "INSERT INTO item_artifacts (item_id, fence, role, name, sha256, size) \
             VALUES (2, 0, 'input', 'late.txt', repeat('a', 64), 1)",
        )
        .await
        .expect("a late input");
    let late: bool = client
        .query_one("SELECT has_inputs FROM work_items WHERE id = 2", &[])
        .await
        .expect("read")
        .get(0);
    assert!(late, "the trigger flags an item whoever attaches its input");
}
