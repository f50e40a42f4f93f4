//! `scaffold queue`: the happy path, the documented JSON shapes, and every bad input the
//! issue names (a clear error, exit 2, and no file overwritten or truncated).

#[path = "queue_cli/browser.rs"]
mod browser;
#[path = "queue_cli/operators.rs"]
mod operators;
#[path = "queue_cli/refusals.rs"]
mod refusals;
#[path = "queue_cli/remote.rs"]
mod remote;

use std::path::Path;

use serde_json::Value;

use crate::common::Test;

/// `scaffold -C <dir>` with no queue database named by the environment (each test names
/// its own), expected to exit 0 unless the test says otherwise.
fn queue(dir: &Path) -> Test {
    Test::in_dir(dir).env_remove("SCAFFOLD_QUEUE_DATABASE")
}

/// The JSON error a refused command printed on stdout (exit 2).
fn json_error(dir: &Path, args: &[&str]) -> Value {
    let out = queue(dir).args(args).status(2).run().stdout;
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON document ({e}): {out}"))
}

/// What a command that succeeded printed, as one JSON document.
fn json_out(test: Test) -> Value {
    serde_json::from_str(&raw_out(test)).expect("stdout is one JSON document")
}

/// What a command that succeeded printed.
fn raw_out(test: Test) -> String {
    test.run().stdout
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
    let migrated = json_out(queue(dir.path()).args(["queue", "migrate", "--format", "json"]));
    assert_eq!(
        migrated["schema_version"],
        scaffold_runtime::store::SCHEMA_VERSION
    );
    assert!(
        dir.path().join(".scaffold/queue.db").is_file(),
        "the default database lives under .scaffold/"
    );
    queue(dir.path()).args(["queue", "migrate"]).run();

    let first = json_out(queue(dir.path()).args([
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
    let again = json_out(queue(dir.path()).args([
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
    queue(dir.path())
        .args([
            "queue",
            "enqueue",
            "REINDEX",
            "--lane",
            "bulk",
            "--run-at",
            "2999-01-01T00:00:00Z",
        ])
        .stdout_has("REINDEX on lane bulk")
        .run();

    let raw = raw_out(queue(dir.path()).args(["queue", "status", "--format", "json"]));
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
            "scheduled",
            "oldest_available_age_ms",
            "outbox",
            "pending",
            "refused",
            "oldest_pending_age_ms",
        ],
    );
    let status: Value = serde_json::from_str(&raw).expect("JSON");
    let lanes = status["lanes"].as_array().expect("lanes");
    let names: Vec<&str> = lanes.iter().filter_map(|l| l["lane"].as_str()).collect();
    assert_eq!(names, vec!["bulk", "default"], "lanes by name");
    let default = &lanes[1];
    assert_eq!(default["available"], 1);
    assert_eq!(
        (&lanes[0]["available"], &lanes[0]["scheduled"]),
        (&Value::from(0), &Value::from(1)),
        "an item not due yet is scheduled, not available"
    );
    assert_eq!(
        lanes[0]["oldest_available_age_ms"], 0,
        "not due yet, so no lag"
    );
    assert_eq!(status["outbox"]["pending"], 0);

    let list = json_out(
        queue(dir.path()).args(["queue", "list", "--lane", "default", "--format", "json"]),
    );
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["payload"]["shipment_id"], "s-1");
    assert_eq!(items[0]["state"], "available");
    queue(dir.path())
        .args(["queue", "list", "--state", "dead"])
        .stdout("no items\n")
        .run();
}

#[test]
fn retry_and_discard_refuse_items_that_are_not_dead() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    queue(dir.path()).args(["queue", "enqueue", "JOB"]).run();
    queue(dir.path())
        .args(["queue", "retry", "1"])
        .status(2)
        .stderr_has("only dead items can be retried")
        .run();
    queue(dir.path())
        .args(["queue", "discard", "1"])
        .status(2)
        .stderr_has("only dead items can be discarded")
        .run();
    queue(dir.path())
        .args(["queue", "discard", "999"])
        .status(2)
        .stderr_has("no work item with id 999")
        .run();
    let none =
        json_out(queue(dir.path()).args(["queue", "retry", "--all-dead", "--format", "json"]));
    assert_eq!(none["retried"], 0);
}

#[test]
fn bench_drains_every_job_and_reports_the_documented_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = raw_out(queue(dir.path()).args([
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
fn the_default_database_is_relative_to_the_working_directory_after_dash_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("svc")).expect("mkdir");
    // Built by hand: what is under test is `-C` relative to the process's own directory.
    crate::common::scaffold()
        .current_dir(dir.path())
        .env_remove("SCAFFOLD_QUEUE_DATABASE")
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
        queue(dir.path())
            .args(["queue", "migrate", "--format", "json"])
            .args(db),
    );
    assert_eq!(
        migrated["schema_version"],
        scaffold_runtime::store::SCHEMA_VERSION
    );
    let enqueue = |key: &str| {
        json_out(
            queue(dir.path())
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
        queue(dir.path())
            .args(["queue", "list", "--format", "json"])
            .args(db),
    );
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(2));
    let bench = json_out(
        queue(dir.path())
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

#[test]
fn a_duplicate_is_said_and_dedupe_is_per_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    let enqueue = |kind: &str| {
        json_out(queue(dir.path()).args([
            "queue",
            "enqueue",
            kind,
            "--dedupe-key",
            "s-1",
            "--format",
            "json",
        ]))
    };
    let first = enqueue("NOTIFY_SHIPMENT");
    assert_eq!(first["duplicate"], false);
    let again = enqueue("NOTIFY_SHIPMENT");
    assert_eq!(
        (&again["id"], &again["duplicate"]),
        (&first["id"], &Value::from(true))
    );
    let other = enqueue("FOO");
    assert_eq!(other["duplicate"], false, "another kind's key is its own");
    assert_ne!(other["id"], first["id"]);
    assert_eq!(other["kind"], "FOO");
    let said = raw_out(queue(dir.path()).args(["queue", "enqueue", "FOO", "--dedupe-key", "s-1"]));
    let expected = format!(
        "duplicate: live item {} (FOO, available) already holds dedupe key `s-1`",
        other["id"]
    );
    assert!(said.starts_with(&expected), "{said}");
}

#[test]
fn operator_commands_show_cancel_signal_and_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    std::fs::write(dir.path().join("payload.json"), r#"{"id": "s-9"}"#).expect("write");
    let item = json_out(queue(dir.path()).args([
        "queue",
        "enqueue",
        "NOTIFY_SHIPMENT",
        "--payload",
        "@payload.json",
        "--format",
        "json",
    ]));
    assert_eq!(item["payload"]["id"], "s-9");
    let id = item["id"].to_string();
    let raw = raw_out(queue(dir.path()).args(["queue", "show", &id, "--format", "json"]));
    assert_key_order(
        &raw,
        &["id", "state", "attempt", "fence", "lease_owner", "effects"],
    );
    let shown: Value = serde_json::from_str(&raw).expect("JSON");
    for key in [
        "lease_owner",
        "lease_expires_at",
        "checkpoint",
        "effects",
        "last_error",
    ] {
        assert!(shown.get(key).is_some(), "show has no {key}: {shown}");
    }
    queue(dir.path())
        .args(["queue", "show", &id])
        .stdout_has("lease owner   -")
        .stdout_has(r#"payload       {"id":"s-9"}"#)
        .run();
    queue(dir.path())
        .args(["queue", "cancel", &id])
        .stdout(&format!("cancelled item {id} (now dead)\n"))
        .run();
    // A second cancel is refused; with --format json the error is JSON on stdout.
    let err = json_error(dir.path(), &["queue", "cancel", &id, "--format", "json"]);
    assert_eq!(err["error"]["code"], "scaffold::queue::not_live");
    queue(dir.path())
        .args(["queue", "signal", "payment-received"])
        .stdout("signal `payment-received` woke 0 parked item(s)\n")
        .run();
    queue(dir.path())
        .args(["queue", "workers"])
        .stdout("no workers\n")
        .run();
    queue(dir.path())
        .args(["queue", "release", "worker-1"])
        .status(2)
        .stderr_has("no worker `worker-1`")
        .run();
}

#[test]
fn list_is_newest_first_limited_and_filtered_by_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    for kind in ["A", "B", "A"] {
        queue(dir.path()).args(["queue", "enqueue", kind]).run();
    }
    let ids = |extra: &[&str]| -> Vec<i64> {
        let list = json_out(
            queue(dir.path())
                .args(["queue", "list", "--format", "json"])
                .args(extra),
        );
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["id"].as_i64())
            .collect()
    };
    assert_eq!(ids(&[]), [3, 2, 1]);
    assert_eq!(ids(&["--limit", "2"]), [3, 2]);
    assert_eq!(ids(&["--kind", "A"]), [3, 1]);
}

#[test]
fn bench_runs_report_the_median_and_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = json_out(queue(dir.path()).args([
        "queue",
        "bench",
        "--jobs",
        "300",
        "--concurrency",
        "4",
        "--runs",
        "3",
        "--format",
        "json",
    ]));
    assert_eq!(report["runs"], 3);
    let each: Vec<u64> = report["jobs_per_sec_each"]
        .as_array()
        .expect("each run")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(each.len(), 3);
    let mut sorted = each.clone();
    sorted.sort_unstable();
    assert_eq!(report["jobs_per_sec_median"], sorted[1]);
    assert_eq!(report["jobs_per_sec_min"], sorted[0]);
    assert_eq!(report["jobs_per_sec_max"], sorted[2]);
    assert_eq!(report["completed"], 300);
}

#[test]
fn release_refuses_a_worker_that_heartbeated_within_its_lease() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    let url = format!(
        "sqlite://{}",
        dir.path().join(".scaffold/queue.db").display()
    );
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let store = scaffold_runtime::Store::open(&url).await.expect("open");
        store
            .enqueue(scaffold_runtime::NewItem::new("A", serde_json::json!({})))
            .await
            .expect("enqueue");
        store
            .claim_as("w-live", "default", 1, std::time::Duration::from_secs(60))
            .await
            .expect("claim");
        store
            .put_worker(scaffold_runtime::WorkerRecord {
                id: "w-live".to_owned(),
                lanes: vec!["default".to_owned()],
                state: scaffold_runtime::WorkerState::Online,
                started_at: store.now(),
                last_seen_at: store.now(),
                lease_ms: 60_000,
            })
            .await
            .expect("worker");
    });
    queue(dir.path())
        .args(["queue", "workers"])
        .stdout_has("w-live")
        .stdout_has("1 (1)")
        .run();
    queue(dir.path())
        .args(["queue", "release", "w-live"])
        .status(2)
        .stderr_has("within its lease")
        .run();
    queue(dir.path())
        .args(["queue", "release", "w-live", "--force"])
        .stdout("released 1 item(s) held by w-live; w-live is OFFLINE\n")
        .run();
}
