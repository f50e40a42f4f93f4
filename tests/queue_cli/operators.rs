//! What an operator reaches for at night: an item's attempt history, a drain asked of a live
//! worker, the dead of one kind retried, a list by dedupe key and page by page; and what a
//! deploy log or a script reads: no password on success, JSON for every error under
//! `--format json`, URL parameters named with what they take, a fresh queue per bench run.

use std::time::Duration;

use scaffold_runtime::{ItemState, NewItem, Outcome, Store, WorkerRecord, WorkerState};
use serde_json::Value;

use super::{PgSchema, json_error, json_out, queue, raw_out};

fn migrated() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    let url = format!(
        "sqlite://{}",
        dir.path().join(".scaffold/queue.db").display()
    );
    (dir, url)
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Runtime::new().expect("runtime").block_on(f)
}

#[test]
fn show_lists_every_attempt_of_an_item() {
    let (dir, url) = migrated();
    let id = block_on(async {
        let store = Store::open(&url).await.expect("open");
        let id = store
            .enqueue(NewItem::new("A", serde_json::json!({})).max_attempts(3))
            .await
            .expect("enqueue");
        let lease = Duration::from_secs(60);
        let first = store
            .claim_as("w-1", "default", 1, lease)
            .await
            .expect("claim");
        let outcome = Outcome::Retry {
            error: "carrier timed out".to_owned(),
            retry_at: store.now(),
        };
        store.fail(&first[0].held(), outcome).await.expect("fail");
        let second = store
            .claim_as("w-2", "default", 1, lease)
            .await
            .expect("claim");
        store.complete(&second[0].held()).await.expect("complete");
        id
    });
    let raw =
        raw_out(queue(dir.path()).args(["queue", "show", &id.to_string(), "--format", "json"]));
    let shown: Value = serde_json::from_str(&raw).expect("JSON");
    let attempts = shown["attempts"].as_array().expect("attempts");
    let row = |a: &Value| {
        (
            a["attempt"].as_i64(),
            a["fence"].as_i64(),
            a["holder"].as_str().map(str::to_owned),
            a["outcome"].as_str().map(str::to_owned),
            a["error"].as_str().map(str::to_owned),
        )
    };
    assert_eq!(
        attempts.iter().map(row).collect::<Vec<_>>(),
        [
            (
                Some(1),
                Some(1),
                Some("w-1".to_owned()),
                Some("failed".to_owned()),
                Some("carrier timed out".to_owned())
            ),
            (
                Some(2),
                Some(2),
                Some("w-2".to_owned()),
                Some("completed".to_owned()),
                None
            ),
        ]
    );
    assert!(
        attempts
            .iter()
            .all(|a| a["claimed_at"].is_string() && a["finished_at"].is_string())
    );
    queue(dir.path())
        .args(["queue", "show", &id.to_string()])
        .stdout_has("    #1 fence 1 by w-1: claimed ")
        .stdout_has(" (carrier timed out)")
        .stdout_has("    #2 fence 2 by w-2: claimed ")
        .run();
}

#[test]
fn drain_asks_a_live_worker_and_refuses_an_unknown_or_offline_one() {
    let (dir, url) = migrated();
    block_on(async {
        let store = Store::open(&url).await.expect("open");
        for (id, state) in [
            ("w-live", WorkerState::Online),
            ("w-gone", WorkerState::Offline),
        ] {
            store
                .put_worker(WorkerRecord {
                    id: id.to_owned(),
                    lanes: vec!["default".to_owned()],
                    state,
                    started_at: store.now(),
                    last_seen_at: store.now(),
                    lease_ms: 60_000,
                })
                .await
                .expect("worker");
        }
    });
    let done = json_out(queue(dir.path()).args(["queue", "drain", "w-live", "--format", "json"]));
    assert_eq!(done["draining"], "w-live");
    let workers = block_on(async {
        Store::open(&url)
            .await
            .expect("open")
            .workers()
            .await
            .expect("workers")
    });
    let live = workers
        .iter()
        .find(|w| w.id == "w-live")
        .expect("the worker");
    assert_eq!(
        live.state,
        WorkerState::Draining,
        "the loop reads this at its next sweep tick"
    );
    let err = json_error(
        dir.path(),
        &["queue", "drain", "w-gone", "--format", "json"],
    );
    assert_eq!(err["error"]["code"], "scaffold::queue::worker_offline");
    let err = json_error(
        dir.path(),
        &["queue", "drain", "w-none", "--format", "json"],
    );
    assert_eq!(err["error"]["code"], "scaffold::queue::unknown_worker");
}

#[test]
fn retry_kind_retries_the_dead_of_that_kind_only() {
    let (dir, url) = migrated();
    let (a, b) = block_on(async {
        let store = Store::open(&url).await.expect("open");
        let mut ids = Vec::new();
        for kind in ["A", "B"] {
            ids.push(
                store
                    .enqueue(NewItem::new(kind, serde_json::json!({})))
                    .await
                    .expect("enqueue"),
            );
            let claimed = store
                .claim("default", 1, Duration::from_secs(60))
                .await
                .expect("claim");
            let dead = Outcome::Dead {
                error: "no".to_owned(),
            };
            store.fail(&claimed[0].held(), dead).await.expect("dead");
        }
        (ids[0], ids[1])
    });
    let done =
        json_out(queue(dir.path()).args(["queue", "retry", "--kind", "A", "--format", "json"]));
    assert_eq!(done["retried"], 1);
    let state = |id: i64| {
        block_on(async {
            let store = Store::open(&url).await.expect("open");
            store.get(id).await.expect("get").expect("the item").state
        })
    };
    assert_eq!(
        (state(a), state(b)),
        (ItemState::Available, ItemState::Dead)
    );
    queue(dir.path())
        .args(["queue", "retry", "1", "--kind", "A"])
        .status(2)
        .run();
    let err = json_error(
        dir.path(),
        &["queue", "retry", "--kind", "not a kind", "--format", "json"],
    );
    assert_eq!(err["error"]["code"], "scaffold::queue::kind_syntax");
}

#[test]
fn list_filters_by_dedupe_key_and_pages_by_keyset() {
    let (dir, _) = migrated();
    for key in ["k-1", "k-2", "k-1-other"] {
        queue(dir.path())
            .args(["queue", "enqueue", "A", "--dedupe-key", key])
            .run();
    }
    for _ in 0..3 {
        queue(dir.path()).args(["queue", "enqueue", "B"]).run();
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
    assert_eq!(ids(&["--dedupe-key", "k-1"]), [1], "the key matches whole");
    assert_eq!(ids(&["--limit", "2"]), [6, 5]);
    assert_eq!(ids(&["--limit", "2", "--after", "5"]), [4, 3]);
    assert_eq!(ids(&["--limit", "2", "--after", "3"]), [2, 1]);
    assert_eq!(ids(&["--limit", "2", "--after", "1"]), Vec::<i64>::new());
}

#[test]
fn usage_and_working_directory_errors_are_json_under_format_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["queue", "list", "--limit", "many", "--format", "json"][..],
        &["queue", "frobnicate", "--format=json"],
        &["--format", "json", "queue", "retry"],
    ] {
        let err = json_error(dir.path(), args);
        assert_eq!(err["error"]["code"], "scaffold::usage", "{args:?}: {err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{err}"
        );
    }
    // `-C` to a folder that does not exist.
    let err = json_error(
        &dir.path().join("no-such-dir"),
        &["queue", "status", "--format", "json"],
    );
    assert_eq!(err["error"]["code"], "scaffold::queue::chdir");
    // Without --format json a usage error stays clap's, on stderr.
    queue(dir.path())
        .args(["queue", "list", "--limit", "many"])
        .status(2)
        .stdout("")
        .stderr_has("invalid value 'many'")
        .run();
}

#[test]
fn url_errors_name_the_parameter_and_what_it_takes_without_the_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = "postgres://ops:hunter2@127.0.0.1:1/queue";
    let long = format!("schema={}", "q".repeat(55));
    for (query, parameter, takes) in [
        ("sslmode=sometimes", "sslmode", "verify-full"),
        ("pool_size=0", "pool_size", "at least 1"),
        ("schema=1-bad", "schema", "plain identifier"),
        // Folded to lower case by the search path, kept by CREATE SCHEMA: two schemas.
        ("schema=Queue", "schema", "lower-case"),
        // Its wake-up channel, scaffold_<schema>, would not fit in 63 bytes.
        (long.as_str(), "schema", "at most 54 bytes"),
        ("connect_timeout=soon", "connect_timeout", "libpq"),
        ("colour=blue", "colour", "not a parameter"),
    ] {
        let url = format!("{base}?{query}");
        let err = json_error(
            dir.path(),
            &["queue", "status", "--database", &url, "--format", "json"],
        );
        let text = err.to_string();
        assert_eq!(
            err["error"]["code"], "scaffold::queue::url_parameter",
            "{text}"
        );
        assert!(text.contains(&format!("`{parameter}`")), "{text}");
        assert!(text.contains(takes), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}

#[test]
fn bench_runs_each_get_a_fresh_queue_and_the_headline_is_their_median() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("mine.db");
    let url = format!("sqlite://{}", db.display());
    let report = json_out(queue(dir.path()).args([
        "queue",
        "bench",
        "--jobs",
        "200",
        "--concurrency",
        "4",
        "--runs",
        "4",
        "--database",
        &url,
        "--format",
        "json",
    ]));
    let mut each: Vec<u64> = report["jobs_per_sec_each"]
        .as_array()
        .expect("each run")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(each.len(), 4);
    each.sort_unstable();
    assert_eq!(
        report["jobs_per_sec"],
        (each[1] + each[2]) / 2,
        "the headline is the median"
    );
    assert_eq!(report["jobs_per_sec_median"], report["jobs_per_sec"]);
    assert_eq!(
        report["completed"], 200,
        "each run drained its own 200, none left behind"
    );
    assert!(!db.exists(), "the named file is not the bench's");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read the folder")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "every run's file is removed: {left:?}");
}

#[test]
fn postgres_bench_runs_get_fresh_schemas_and_migrate_prints_no_password() {
    use std::io::Write;
    let Ok(server) = std::env::var("SCAFFOLD_TEST_DATABASE_URL") else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: SCAFFOLD_TEST_DATABASE_URL is not set; the PostgreSQL bench and password test did not run"
        );
        return;
    };
    // The same server with a password in the URL (trust auth ignores it).
    let (scheme, rest) = server.split_once("://").expect("a URL");
    let rest = match rest.split_once('@') {
        Some((user, host)) if !user.contains(':') => format!("{user}:hunter2@{host}"),
        _ => rest.to_owned(),
    };
    let schema = format!("scaffold_cli_secret_{}", std::process::id());
    let sep = if rest.contains('?') { '&' } else { '?' };
    let url = format!("{scheme}://{rest}{sep}schema={schema}");
    let _guard = PgSchema {
        server: server.clone(),
        schema: schema.clone(),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for format in ["human", "json"] {
        let out = raw_out(queue(dir.path()).args([
            "queue",
            "migrate",
            "--database",
            &url,
            "--format",
            format,
        ]));
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.contains("***"), "the password's place is shown: {out}");
    }
    let report = json_out(queue(dir.path()).args([
        "queue",
        "bench",
        "--jobs",
        "200",
        "--concurrency",
        "4",
        "--runs",
        "2",
        "--database",
        &url,
        "--format",
        "json",
    ]));
    assert_eq!(report["completed"], 200);
    let left = block_on(async {
        let (client, conn) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1 || '_bench_%'",
                &[&schema],
            )
            .await
            .expect("count schemas");
        let n: i64 = row.get(0);
        let items: i64 = client
            .query_one(
                &format!("SELECT count(*) FROM \"{schema}\".work_items"),
                &[],
            )
            .await
            .expect("count items")
            .get(0);
        (n, items)
    });
    assert_eq!(
        left,
        (0, 0),
        "each run's schema is dropped and the named one is untouched"
    );
}
