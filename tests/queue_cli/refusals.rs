//! What `scaffold queue` refuses: a file that is not a database, a newer schema, an
//! unwritable or missing path, bad payloads, kinds and sizes, a symlinked kinds file —
//! each said once, with nothing written and no secret shown.

use super::{json_error, json_out, queue};

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
    ] {
        queue(dir.path())
            .args(["queue", "--database", "sqlite://notes.db"])
            .args(&args)
            .status(2)
            .stderr_has("is not a SQLite database; it was left untouched")
            .run();
        assert_eq!(
            std::fs::read(&file).expect("read"),
            bytes,
            "{args:?} changed the file"
        );
    }
    // A bench never opens the named file: each run gets a fresh one beside it.
    queue(dir.path())
        .args([
            "queue",
            "--database",
            "sqlite://notes.db",
            "bench",
            "--jobs",
            "10",
        ])
        .run();
    assert_eq!(
        std::fs::read(&file).expect("read"),
        bytes,
        "bench changed the file"
    );
    assert!(!dir.path().join("notes.db-wal").exists());
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
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
        queue(dir.path())
            .args(["queue"])
            .args(&args)
            .status(2)
            .stderr_has("schema version 99")
            .stderr_has("upgrade scaffold")
            .run();
    }
    assert_eq!(std::fs::read(&db).expect("read"), before);
}

#[test]
fn an_unwritable_path_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("plain-file"), "x").expect("write");
    queue(dir.path())
        .args([
            "queue",
            "--database",
            "sqlite://plain-file/queue.db",
            "migrate",
        ])
        .status(2)
        .stderr_has("cannot create or write the queue database")
        .run();
    assert_eq!(
        std::fs::read(dir.path().join("plain-file")).expect("read"),
        b"x"
    );
}

#[test]
fn a_missing_database_is_not_created_by_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path())
        .args(["queue", "status"])
        .status(2)
        .stderr_has("scaffold queue migrate")
        .run();
    assert!(!dir.path().join(".scaffold").exists());
}

#[test]
fn a_malformed_payload_is_refused_and_nothing_is_enqueued() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    queue(dir.path())
        .args(["queue", "enqueue", "JOB", "--payload", "{shipment_id: s-1}"])
        .status(2)
        .stderr_has("the payload is not valid JSON")
        .run();
    queue(dir.path())
        .args(["queue", "enqueue", "JOB", "--run-at", "next tuesday"])
        .status(2)
        .stderr_has("is not a time")
        .run();
    let list = json_out(queue(dir.path()).args(["queue", "list", "--format", "json"]));
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0));
}

#[test]
fn an_unknown_kind_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path())
        .args(["queue", "enqueue", "notify_shipment"])
        .status(2)
        .stderr_has("is not a work kind name")
        .run();
    // Inside a repository, the kind must be one its om/ registers.
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(dir.path().join("agent/codemap.yml"), "{}\n").expect("write");
    std::fs::create_dir_all(dir.path().join("om/src/shipping")).expect("mkdir");
    std::fs::write(
        dir.path().join("om/src/root.rs"),
        "use crate::shipping::kinds::SHIPPING_KINDS;\n\npub const KINDS: Registry = &[SHIPPING_KINDS];\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("om/src/shipping/kinds.rs"),
        r#"pub const SHIPPING_KINDS: &[WorkKindSpec] = &[
    WorkKindSpec { name: "NOTIFY_SHIPMENT", permission: "shipping.notify", lane: "notify",
                   ..WorkKindSpec::DEFAULT },
];
"#,
    )
    .expect("write");
    queue(dir.path()).args(["queue", "migrate"]).run();
    queue(dir.path())
        .args(["queue", "enqueue", "NOTIFY_SHIPPMENT"])
        .status(2)
        .stderr_has("unknown kind `NOTIFY_SHIPPMENT`")
        .stderr_has("NOTIFY_SHIPMENT")
        .run();
    queue(dir.path())
        .args(["queue", "enqueue", "NOTIFY_SHIPMENT"])
        .stdout_has("on lane notify")
        .run();
    // A lane the spec does not name is refused, pointing at the spec.
    queue(dir.path()).args(["queue", "enqueue", "NOTIFY_SHIPMENT", "--lane", "other"]).status(2).stderr_has("kind `NOTIFY_SHIPMENT` runs on lane `notify` (om/src/shipping/kinds.rs:2), not `other`",).run();
    queue(dir.path())
        .args(["queue", "enqueue", "NOTIFY_SHIPMENT", "--lane", "notify"])
        .stdout_has("on lane notify")
        .run();
}

#[test]
fn sarif_is_refused_for_queue_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path())
        .args(["queue", "status", "--format", "sarif"])
        .status(2)
        .stderr_has("invalid value 'sarif' for '--format <FORMAT>'")
        .stderr_has("[possible values: human, json]")
        .run();
}

#[test]
fn bad_enqueue_inputs_are_refused_not_clamped() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    for (args, says) in [
        (&["--max-attempts", "0"][..], "0 is not in 1.."),
        (&["--run-at", "253402300800000"][..], "is not a time"),
        (&["--run-at", "10000-01-01T00:00:00Z"][..], "is not a time"),
        (&["--lane", "Bulk"][..], "is not a lane name"),
        (
            &["--payload", "@missing.json"][..],
            "cannot read the payload file",
        ),
    ] {
        queue(dir.path())
            .args(["queue", "enqueue", "A"])
            .args(args)
            .status(2)
            .stderr_has(says)
            .run();
    }
    let list = json_out(queue(dir.path()).args(["queue", "list", "--format", "json"]));
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(0),
        "nothing was enqueued"
    );
}

#[test]
fn a_missing_postgres_database_is_said_once_without_the_password() {
    use std::io::Write;
    let Ok(server) = std::env::var("SCAFFOLD_TEST_DATABASE_URL") else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: SCAFFOLD_TEST_DATABASE_URL is not set; the PostgreSQL error test did not run"
        );
        return;
    };
    // The same server, a database that does not exist, and a password in the URL.
    let (scheme, rest) = server.split_once("://").expect("a URL");
    let rest = rest.split('?').next().unwrap_or(rest);
    let (authority, _db) = rest.rsplit_once('/').expect("a database in the URL");
    let authority = match authority.split_once('@') {
        Some((user, host)) if !user.contains(':') => format!("{user}:hunter2@{host}"),
        _ => authority.to_owned(),
    };
    let url = format!("{scheme}://{authority}/scaffold_no_such_db");
    let dir = tempfile::tempdir().expect("tempdir");
    // JSON, so no line wrapping splits what is counted; the human form says the same.
    let doc = json_error(
        dir.path(),
        &["queue", "status", "--format", "json", "--database", &url],
    );
    let text = doc.to_string();
    let said = "database \\\"scaffold_no_such_db\\\" does not exist";
    assert_eq!(text.matches(said).count(), 1, "{text}");
    assert!(text.contains("cannot connect to PostgreSQL at"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    queue(dir.path())
        .args(["queue", "status", "--database", &url])
        .status(2)
        .never_prints("hunter2")
        .run();
}

#[test]
fn bench_sizes_are_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        ["--jobs", "4294967296"],
        ["--jobs", "0"],
        ["--concurrency", "0"],
        ["--concurrency", "100000"],
    ] {
        queue(dir.path())
            .args(["queue", "bench", "--database", "memory://"])
            .args(args)
            .status(2)
            .stderr_has("is not in")
            .run();
    }
}

/// The kinds lookup reads only regular files inside the repository: a symlinked kinds file
/// is an error naming it, and what it points at is never read or listed.
#[cfg(unix)]
#[test]
fn a_symlinked_kinds_file_is_refused_unread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        outside.path().join("secret.rs"),
        r#"WorkKindSpec { name: "SECRET_TOKEN_VALUE", ..WorkKindSpec::DEFAULT }"#,
    )
    .expect("write");
    std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
    std::fs::write(dir.path().join("agent/codemap.yml"), "{}\n").expect("write");
    std::fs::create_dir_all(dir.path().join("om/src")).expect("mkdir");
    std::os::unix::fs::symlink(
        outside.path().join("secret.rs"),
        dir.path().join("om/src/kinds.rs"),
    )
    .expect("link");
    queue(dir.path()).args(["queue", "migrate"]).run();
    queue(dir.path())
        .args(["queue", "enqueue", "OTHER"])
        .status(2)
        .stderr_has("cannot read the kinds the repository registers")
        .stderr_has("om/src/kinds.rs")
        .never_prints("SECRET_TOKEN_VALUE")
        .run();
}
