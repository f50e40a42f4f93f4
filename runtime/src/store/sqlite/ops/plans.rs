//! What SQLite does with the hot statements, read from `EXPLAIN`: each reads the partial
//! index it was written for, and no write to `work_items` builds a table to test a row's
//! state (`migrations/sqlite/0007_state_predicates.sql` says why).

use rusqlite::Connection;

use super::admin::SIGNAL;
use super::enqueue::{INSERT_ITEM, live_id_sql};
use super::finish::complete_sql;
use super::lease::{claim_sql, has_due_sql, kinds_in};
use super::queries::resting_sql;
use super::retention::PICKED;
use super::{CLAIMABLE, LIVE, RESTING};
use crate::item::{ItemState, ListFilter};
use crate::store::sql::list_query;
use crate::store::sqlite::schema;

fn migrated() -> Connection {
    let mut conn = Connection::open_in_memory().expect("in-memory database");
    schema::migrate(&mut conn).expect("migrate");
    conn
}

/// Column `col` of every row `EXPLAIN`ing `sql` gives (its parameters left unbound).
fn explained(conn: &Connection, explain: &str, sql: &str, col: usize) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("{explain} {sql}")).expect("explain");
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().expect("explain row") {
        out.push(row.get(col).expect("explain column"));
    }
    out
}

/// The opcodes of `sql`'s program.
fn opcodes(conn: &Connection, sql: &str) -> Vec<String> {
    explained(conn, "EXPLAIN", sql, 1)
}

/// The lines of `sql`'s query plan.
fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    explained(conn, "EXPLAIN QUERY PLAN", sql, 3)
}

/// How many ephemeral tables `sql`'s program opens, and how many the same statement opens
/// over `plain_items`: a twin of `work_items` with the same columns, rowid and claim order
/// but no CHECK constraint and no partial index. A `RETURNING` clause or an `IN (SELECT …)`
/// opens its own, once per statement; what `work_items` opens beyond the twin is what its
/// constraint and index predicates add for every row written.
fn ephemeral_tables(conn: &Connection, sql: &str) -> (usize, usize) {
    let count = |sql: &str| {
        opcodes(conn, sql)
            .iter()
            .filter(|op| *op == "OpenEphemeral")
            .count()
    };
    (count(sql), count(&sql.replace("work_items", "plain_items")))
}

/// `plain_items` (see [`ephemeral_tables`]).
const PLAIN_TWIN: &str = "CREATE TABLE plain_items (
        id INTEGER PRIMARY KEY, kind TEXT, lane TEXT, payload TEXT, state TEXT,
        priority INTEGER, attempt INTEGER, max_attempts INTEGER, run_at INTEGER,
        lease_owner TEXT, lease_expires_at INTEGER, fence INTEGER, dedupe_key TEXT,
        checkpoint TEXT, last_error TEXT, parked_on TEXT, created_at INTEGER,
        updated_at INTEGER, claimed_at INTEGER, claimed_from TEXT, account TEXT);
    CREATE INDEX plain_items_claim ON plain_items (lane, priority DESC, run_at, id);";

/// `sql` with its whitespace runs made one space, to compare SQL texts.
fn squeezed(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn each_predicate_is_its_index_s_as_written() {
    let conn = migrated();
    for (index, predicate) in [
        ("work_items_claim", CLAIMABLE),
        ("work_items_dedupe", LIVE),
        ("work_items_resting", RESTING),
    ] {
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1",
                [index],
                |r| r.get(0),
            )
            .expect("index");
        assert!(
            squeezed(&sql).contains(predicate),
            "{index} is `{sql}`, which does not hold `{predicate}`"
        );
    }
}

#[test]
fn the_hot_statements_read_their_partial_indexes() {
    let conn = migrated();
    for (sql, index) in [
        (claim_sql(""), "work_items_claim"),
        (
            claim_sql(&format!(" AND {}", kinds_in("?6"))),
            "work_items_claim",
        ),
        (has_due_sql(), "work_items_claim"),
        (live_id_sql(), "work_items_dedupe"),
        (resting_sql(), "work_items_resting"),
        (SIGNAL.to_owned(), "work_items_parked"),
        (PICKED.to_owned(), "work_items_completed"),
        (
            list_query(
                &ListFilter {
                    dedupe_key: Some("k".to_owned()),
                    newest_first: true,
                    ..ListFilter::default()
                },
                '?',
            )
            .0,
            "work_items_by_key",
        ),
    ] {
        let lines = plan(&conn, &sql);
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!(" INDEX {index} "))),
            "`{sql}` does not read {index}: {lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.starts_with("SCAN work_items")),
            "`{sql}` scans work_items: {lines:?}"
        );
    }
}

#[test]
fn no_write_to_an_item_builds_a_table_to_test_its_state() {
    let conn = migrated();
    conn.execute_batch(PLAIN_TWIN).expect("plain twin");
    let columns = |table: &str| -> Vec<String> {
        let mut stmt = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .expect("columns");
        stmt.query_map([], |r| r.get(0))
            .expect("column rows")
            .map(|r| r.expect("column"))
            .collect()
    };
    assert_eq!(columns("plain_items"), columns("work_items"));
    let mut extra = Vec::new();
    for sql in [
        INSERT_ITEM.to_owned(),
        claim_sql(""),
        complete_sql("id, fence"),
        "UPDATE work_items SET state = ?2, run_at = ?3 WHERE id = ?1".to_owned(),
        "DELETE FROM work_items WHERE id = ?1".to_owned(),
    ] {
        let (opened, twin) = ephemeral_tables(&conn, &sql);
        if opened != twin {
            extra.push(format!(
                "`{sql}` opens {opened} ephemeral tables, the same over the twin {twin}"
            ));
        }
    }
    assert!(extra.is_empty(), "{extra:#?}");
}

#[test]
fn an_in_list_would_build_one_per_row() {
    // The check above is only worth something if SQLite still does what version 7 works
    // around: here a partial index with an `IN` list of three states.
    let conn = Connection::open_in_memory().expect("in-memory database");
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, state TEXT NOT NULL);
         CREATE INDEX t_state ON t (id) WHERE state IN ('a', 'b', 'c');",
    )
    .expect("schema");
    let opens = opcodes(&conn, "INSERT INTO t (id, state) VALUES (?1, ?2)");
    assert!(opens.iter().any(|op| op == "OpenEphemeral"), "{opens:?}");
}

#[test]
fn the_rebuilt_table_still_refuses_a_state_it_does_not_know() {
    let conn = migrated();
    let insert = |state: &str| {
        conn.execute(
            "INSERT INTO work_items (kind, lane, payload, state, max_attempts, run_at, \
                 created_at, updated_at) VALUES ('k', 'default', '{}', ?1, 1, 0, 0, 0)",
            [state],
        )
    };
    for state in ItemState::ALL.map(ItemState::as_str) {
        insert(state).unwrap_or_else(|e| panic!("{state}: {e}"));
    }
    let refused = insert("finished").expect_err("an unknown state is refused");
    assert!(refused.to_string().contains("CHECK"), "{refused}");
}
