//! `scaffold queue`: the happy path, the documented JSON shapes, and every bad input the
//! issue names (a clear error, exit 2, and no file overwritten or truncated).

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn scaffold(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("scaffold").expect("the scaffold binary");
    cmd.current_dir(dir)
        .env_remove("SCAFFOLD_QUEUE_DATABASE")
        .env("NO_COLOR", "1");
    cmd
}

fn json_out(cmd: &mut Command) -> Value {
    serde_json::from_str(&raw_out(cmd)).expect("stdout is one JSON document")
}

fn raw_out(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).expect("UTF-8 output")
}

/// Asserts `keys` appear in `raw` JSON in this order (the documented shape).
fn assert_key_order(raw: &str, keys: &[&str]) {
    let at: Vec<usize> = keys
        .iter()
        .map(|k| {
            raw.find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("no key {k} in {raw}"))
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "keys out of order in {raw}"
    );
}

#[test]
fn migrate_enqueue_status_list_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let migrated = json_out(scaffold(dir.path()).args(["queue", "migrate", "--format", "json"]));
    assert_eq!(migrated["schema_version"], 1);
    assert!(
        dir.path().join(".scaffold/queue.db").is_file(),
        "the default database lives under .scaffold/"
    );
    scaffold(dir.path())
        .args(["queue", "migrate"])
        .assert()
        .success();

    let first = json_out(scaffold(dir.path()).args([
        "queue",
        "enqueue",
        "NOTIFY_SHIPMENT",
        "--payload",
        r#"{"shipment_id":"s-1"}"#,
        "--dedupe-key",
        "s-1",
        "--format",
        "json",
    ]));
    let again = json_out(scaffold(dir.path()).args([
        "queue",
        "enqueue",
        "NOTIFY_SHIPMENT",
        "--payload",
        r#"{"shipment_id":"s-1"}"#,
        "--dedupe-key",
        "s-1",
        "--format",
        "json",
    ]));
    assert_eq!(
        first["id"], again["id"],
        "a live dedupe key returns the live item"
    );
    scaffold(dir.path())
        .args([
            "queue",
            "enqueue",
            "REINDEX",
            "--lane",
            "bulk",
            "--run-at",
            "2999-01-01T00:00:00Z",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("REINDEX on lane bulk"));

    let raw = raw_out(scaffold(dir.path()).args(["queue", "status", "--format", "json"]));
    assert_key_order(
        &raw,
        &[
            "lanes",
            "lane",
            "available",
            "running",
            "completed",
            "failed",
            "dead",
            "parked",
            "oldest_available_age_ms",
        ],
    );
    let status: Value = serde_json::from_str(&raw).expect("JSON");
    let lanes = status["lanes"].as_array().expect("lanes");
    let names: Vec<&str> = lanes.iter().filter_map(|l| l["lane"].as_str()).collect();
    assert_eq!(names, vec!["bulk", "default"], "lanes by name");
    let default = &lanes[1];
    assert_eq!(default["available"], 1);
    assert_eq!(lanes[0]["available"], 1);
    assert_eq!(
        lanes[0]["oldest_available_age_ms"], 0,
        "not due yet, so no lag"
    );

    let list = json_out(
        scaffold(dir.path()).args(["queue", "list", "--lane", "default", "--format", "json"]),
    );
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["payload"]["shipment_id"], "s-1");
    assert_eq!(items[0]["state"], "available");
    scaffold(dir.path())
        .args(["queue", "list", "--state", "dead"])
        .assert()
        .success()
        .stdout("no items\n");
}

#[test]
fn retry_and_discard_refuse_items_that_are_not_dead() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path())
        .args(["queue", "migrate"])
        .assert()
        .success();
    scaffold(dir.path())
        .args(["queue", "enqueue", "JOB"])
        .assert()
        .success();
    scaffold(dir.path())
        .args(["queue", "retry", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only dead items can be retried"));
    scaffold(dir.path())
        .args(["queue", "discard", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only dead items can be discarded"));
    scaffold(dir.path())
        .args(["queue", "discard", "999"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no work item with id 999"));
    let none =
        json_out(scaffold(dir.path()).args(["queue", "retry", "--all-dead", "--format", "json"]));
    assert_eq!(none["retried"], 0);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.db");
    let bytes = b"these are my notes, not a database\n".repeat(20);
    std::fs::write(&file, &bytes).expect("write");
    for args in [
        vec!["migrate"],
        vec!["status"],
        vec!["enqueue", "JOB"],
        vec!["list"],
        vec!["bench", "--jobs", "10"],
    ] {
        scaffold(dir.path())
            .args(["queue", "--database", "sqlite://notes.db"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "is not a SQLite database; it was left untouched",
            ));
        assert_eq!(
            std::fs::read(&file).expect("read"),
            bytes,
            "{args:?} changed the file"
        );
    }
    assert!(!dir.path().join("notes.db-wal").exists());
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path())
        .args(["queue", "migrate"])
        .assert()
        .success();
    let db = dir.path().join(".scaffold/queue.db");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = scaffold_runtime::Store::open(&format!("sqlite://{}", db.display()))
            .await
            .expect("open");
        store
            .transaction(|tx| {
                let conn = tx.connection().expect("a SQLite transaction");
                conn.execute(
                    "INSERT INTO schema_version (version, applied_at) VALUES (99, 0)",
                    [],
                )?;
                Ok(())
            })
            .await
            .expect("bump the schema version");
    });
    let before = std::fs::read(&db).expect("read");
    for args in [vec!["migrate"], vec!["status"], vec!["enqueue", "JOB"]] {
        scaffold(dir.path())
            .arg("queue")
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("schema version 99"))
            .stderr(predicate::str::contains("upgrade scaffold"));
    }
    assert_eq!(std::fs::read(&db).expect("read"), before);
}

#[test]
fn an_unwritable_path_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("plain-file"), "x").expect("write");
    scaffold(dir.path())
        .args([
            "queue",
            "--database",
            "sqlite://plain-file/queue.db",
            "migrate",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot create or write the queue database",
        ));
    assert_eq!(
        std::fs::read(dir.path().join("plain-file")).expect("read"),
        b"x"
    );
}

#[test]
fn a_missing_database_is_not_created_by_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path())
        .args(["queue", "status"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("scaffold queue migrate"));
    assert!(!dir.path().join(".scaffold").exists());
}

#[test]
fn a_malformed_payload_is_refused_and_nothing_is_enqueued() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path())
        .args(["queue", "migrate"])
        .assert()
        .success();
    scaffold(dir.path())
        .args(["queue", "enqueue", "JOB", "--payload", "{shipment_id: s-1}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the payload is not valid JSON"));
    scaffold(dir.path())
        .args(["queue", "enqueue", "JOB", "--run-at", "next tuesday"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a time"));
    let list = json_out(scaffold(dir.path()).args(["queue", "list", "--format", "json"]));
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0));
}

#[test]
fn an_unknown_kind_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path())
        .args(["queue", "enqueue", "notify_shipment"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a work kind name"));
    // Inside a repository, the kind must be one its om/ registers.
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(dir.path().join("agent/codemap.yml"), "{}\n").expect("write");
    std::fs::create_dir_all(dir.path().join("om/src/shipping")).expect("mkdir");
    std::fs::write(
        dir.path().join("om/src/shipping/kinds.rs"),
        r#"pub const SHIPPING_KINDS: &[WorkKindSpec] = &[
    WorkKindSpec { name: "NOTIFY_SHIPMENT", permission: "shipping.notify", lane: "notify",
                   ..WorkKindSpec::DEFAULT },
];
"#,
    )
    .expect("write");
    scaffold(dir.path())
        .args(["queue", "migrate"])
        .assert()
        .success();
    scaffold(dir.path())
        .args(["queue", "enqueue", "NOTIFY_SHIPPMENT"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown kind `NOTIFY_SHIPPMENT`"))
        .stderr(predicate::str::contains("NOTIFY_SHIPMENT"));
    scaffold(dir.path())
        .args(["queue", "enqueue", "NOTIFY_SHIPMENT"])
        .assert()
        .success()
        .stdout(predicate::str::contains("on lane notify"));
    scaffold(dir.path())
        .args(["queue", "enqueue", "NOTIFY_SHIPMENT", "--lane", "other"])
        .assert()
        .success()
        .stdout(predicate::str::contains("on lane other"));
}

#[test]
fn bench_drains_every_job_and_reports_the_documented_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = raw_out(scaffold(dir.path()).args([
        "queue",
        "bench",
        "--jobs",
        "500",
        "--concurrency",
        "4",
        "--format",
        "json",
    ]));
    assert_key_order(
        &raw,
        &[
            "backend",
            "jobs",
            "concurrency",
            "enqueue_ms",
            "drain_ms",
            "jobs_per_sec",
            "completed",
        ],
    );
    let report: Value = serde_json::from_str(&raw).expect("JSON");
    assert_eq!(report["backend"], "sqlite");
    assert_eq!(report["jobs"], 500);
    assert_eq!(report["completed"], 500);
    assert!(
        !dir.path().join(".scaffold").exists(),
        "bench uses a scratch database"
    );
}

#[test]
fn sarif_is_refused_for_queue_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path())
        .args(["queue", "status", "--format", "sarif"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "not available for `scaffold queue`",
        ));
}

#[test]
fn the_default_database_is_relative_to_the_working_directory_after_dash_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("svc")).expect("mkdir");
    scaffold(dir.path())
        .args(["-C", "svc", "queue", "migrate"])
        .assert()
        .success();
    assert!(dir.path().join("svc/.scaffold/queue.db").is_file());
    assert!(!dir.path().join(".scaffold").exists());
}

/// Drops a test schema on the PostgreSQL server when the test ends.
struct PgSchema {
    server: String,
    schema: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            if let Ok((client, conn)) =
                tokio_postgres::connect(&self.server, tokio_postgres::NoTls).await
            {
                tokio::spawn(conn);
                let _ = client
                    .batch_execute(&format!(
                        "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                        self.schema
                    ))
                    .await;
            }
        });
    }
}

#[test]
fn queue_commands_take_a_postgres_database() {
    use std::io::Write;
    let Ok(server) = std::env::var("SCAFFOLD_TEST_DATABASE_URL") else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: SCAFFOLD_TEST_DATABASE_URL is not set; the PostgreSQL CLI test did not run"
        );
        return;
    };
    let schema = format!("scaffold_cli_{}", std::process::id());
    let sep = if server.contains('?') { '&' } else { '?' };
    let url = format!("{server}{sep}schema={schema}");
    let _guard = PgSchema {
        server: server.clone(),
        schema,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = ["--database", url.as_str()];
    let migrated = json_out(
        scaffold(dir.path())
            .args(["queue", "migrate", "--format", "json"])
            .args(db),
    );
    assert_eq!(migrated["schema_version"], 1);
    let enqueue = |key: &str| {
        json_out(
            scaffold(dir.path())
                .args([
                    "queue",
                    "enqueue",
                    "NOTIFY_SHIPMENT",
                    "--payload",
                    r#"{"shipment_id":"s-1"}"#,
                    "--dedupe-key",
                    key,
                    "--format",
                    "json",
                ])
                .args(db),
        )
    };
    let first = enqueue("s-1");
    assert_eq!(
        first["id"],
        enqueue("s-1")["id"],
        "dedupe holds on PostgreSQL"
    );
    assert_ne!(first["id"], enqueue("s-2")["id"]);
    let listed = json_out(
        scaffold(dir.path())
            .args(["queue", "list", "--format", "json"])
            .args(db),
    );
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(2));
    let bench = json_out(
        scaffold(dir.path())
            .args([
                "queue",
                "bench",
                "--jobs",
                "300",
                "--concurrency",
                "4",
                "--format",
                "json",
            ])
            .args(db),
    );
    assert_eq!(bench["backend"], "postgres");
    assert_eq!(bench["completed"], 300);
    assert!(
        !dir.path().join(".scaffold").exists(),
        "nothing was written to the default SQLite file"
    );
}
