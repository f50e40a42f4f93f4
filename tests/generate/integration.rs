//! Outside providers: `--integration <provider>` gives the handler a client crate under
//! `integrations/<provider>/` (trait, HTTP client, twin, the setting that picks one), made
//! once and reused by the provider's other kinds; what is refused leaves the tree
//! byte-identical.

use std::fs;

use super::{assert_same, repo, tree};
use crate::common::Test;

const CRATE: &[&str] = &[
    "integrations/mailer/Cargo.toml",
    "integrations/mailer/README.md",
    "integrations/mailer/src/http.rs",
    "integrations/mailer/src/lib.rs",
    "integrations/mailer/src/settings.rs",
    "integrations/mailer/src/twin.rs",
    "integrations/mailer/tests/http.rs",
];

#[test]
fn an_integration_is_a_client_crate_the_handler_takes_from_its_context() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--integration",
            "mailer",
            "--dry-run",
        ])
        .run();
    for path in CRATE {
        assert!(
            r.stdout.contains(&format!("+++ b/{path}")),
            "{path}:\n{}",
            r.stdout
        );
    }
    assert!(
        r.stdout
            .contains("+.resource_with(acme_mailer_integration::MailerClient::from_env)")
            || r.stdout.contains(
                "+        .resource_with(acme_mailer_integration::MailerClient::from_env)"
            ),
        "{}",
        r.stdout
    );
    assert_same(&tree(&dir), &before, "--dry-run wrote");

    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--integration",
            "mailer",
            "--format",
            "json",
        ])
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let created: Vec<&str> = v["created"]
        .as_array()
        .expect("created")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    for path in CRATE {
        assert!(created.contains(path), "{path} in {created:?}");
    }
    let changed = v["changed"].to_string();
    for path in [
        ".cargo/config.toml",
        ".env.example",
        "Cargo.lock",
        "Cargo.toml",
        "workers/maintenance/Cargo.toml",
        "workers/maintenance/src/work_loop.rs",
    ] {
        assert!(
            changed.contains(&format!("\"{path}\"")),
            "{path} in {changed}"
        );
    }

    let handler =
        fs::read_to_string(dir.join("workers/maintenance/src/handlers/notify_shipment.rs"))
            .expect("handler");
    assert!(
        handler.contains("needs.add::<MailerClient>();"),
        "{handler}"
    );
    assert!(
        handler.contains("ctx.resource::<MailerClient>()?"),
        "{handler}"
    );
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
    assert!(manifest.contains("\"integrations/mailer\""), "{manifest}");
    assert!(
        manifest.contains("reqwest = { version = \"0.12\""),
        "{manifest}"
    );
    let lock = fs::read_to_string(dir.join("Cargo.lock")).expect("lock");
    assert!(lock.contains("name = \"acme-mailer-integration\""));
    assert!(lock.contains("name = \"reqwest\""));
    let env = fs::read_to_string(dir.join(".env.example")).expect("env");
    assert!(env.contains("# ACME_MAILER_IMPL=twin"), "{env}");
    let config = fs::read_to_string(dir.join(".cargo/config.toml")).expect("config");
    assert!(
        config.contains("ACME_MAILER_IMPL = { value = \"twin\", force = false }"),
        "{config}"
    );
    Test::in_dir(&dir).args(["check", "--format", "json"]).run();

    // A second kind naming the provider reuses its crate and registration.
    let lib = fs::read(dir.join("integrations/mailer/src/lib.rs")).expect("lib");
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "SEND_RECEIPT",
            "--integration",
            "mailer",
            "--format",
            "json",
        ])
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert!(
        !v["created"].to_string().contains("integrations/"),
        "{}",
        r.stdout
    );
    for path in [
        "Cargo.lock",
        "Cargo.toml",
        ".env.example",
        ".cargo/config.toml",
    ] {
        assert!(
            !v["changed"].to_string().contains(&format!("\"{path}\"")),
            "{path}: {}",
            r.stdout
        );
    }
    assert_eq!(
        fs::read(dir.join("integrations/mailer/src/lib.rs")).expect("lib"),
        lib
    );
    let work_loop =
        fs::read_to_string(dir.join("workers/maintenance/src/work_loop.rs")).expect("loop");
    assert_eq!(
        work_loop.matches("MailerClient::from_env").count(),
        1,
        "{work_loop}"
    );
    let env = fs::read_to_string(dir.join(".env.example")).expect("env");
    assert_eq!(env.matches("ACME_MAILER_IMPL=").count(), 1, "{env}");

    // The local stack runs the worker on the twin, a replica added later included.
    let compose = "deployment/local/docker-compose.full.yml";
    let setting = "      ACME_MAILER_IMPL: ${ACME_MAILER_IMPL:-twin}\n";
    let text = fs::read_to_string(dir.join(compose)).expect("compose");
    assert_eq!(text.matches(setting).count(), 1, "{text}");
    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "REINDEX",
            "--lane",
            "bulk",
            "--from",
            "none",
        ])
        .run();
    let text = fs::read_to_string(dir.join(compose)).expect("compose");
    assert_eq!(text.matches(setting).count(), 2, "the replica too:\n{text}");
    Test::in_dir(&dir).args(["check", "--format", "json"]).run();
}

#[test]
fn a_bad_provider_a_foreign_crate_or_a_moved_lock_is_refused_with_nothing_written() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let before = tree(&dir);
    let attempt = |provider: &str| {
        Test::in_dir(&dir)
            .args([
                "worker",
                "maintenance",
                "NOTIFY_SHIPMENT",
                "--integration",
                provider,
            ])
            .status(1)
            .run()
    };

    let r = attempt("Mailer");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("invalid provider name `Mailer`"),
        "{}",
        r.stderr
    );
    let r = attempt("../mailer");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    Test::in_dir(&dir)
        .args(["worker", "mailer-integration", "NOTIFY_SHIPMENT"])
        .status(1)
        .run();
    let r = attempt("work");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("would clash"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "a bad provider name changed the tree");

    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "SYNC_LEDGER",
            "--orchestration",
            "--integration",
            "mailer",
        ])
        .status(2)
        .run();
    assert_same(
        &tree(&dir),
        &before,
        "--orchestration --integration changed the tree",
    );

    // integrations/mailer/ holding some other crate is not adopted.
    fs::create_dir_all(dir.join("integrations/mailer")).expect("mkdir");
    fs::write(
        dir.join("integrations/mailer/Cargo.toml"),
        "[package]\nname = \"vendor-mailer\"\nversion = \"0.1.0\"\n",
    )
    .expect("write");
    let before = tree(&dir);
    let r = attempt("mailer");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("`vendor-mailer`"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "a foreign crate changed the tree");
    fs::remove_dir_all(dir.join("integrations")).expect("rm");

    // A repository made before integrations had a layer is told how to add it.
    let codemap = fs::read_to_string(dir.join("agent/codemap.yml")).expect("codemap");
    let older: String = codemap
        .lines()
        .filter(|l| !l.contains("integrations: {paths"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .replace("services, integrations, packages", "services, packages");
    assert_ne!(older, codemap);
    fs::write(dir.join("agent/codemap.yml"), &older).expect("write");
    let before = tree(&dir);
    let r = attempt("mailer");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("puts integrations/mailer/ in no layer"),
        "{}",
        r.stderr
    );
    assert_same(
        &tree(&dir),
        &before,
        "an unlayered integration changed the tree",
    );
    fs::write(dir.join("agent/codemap.yml"), &codemap).expect("write");

    // A lock whose entries moved on since init is not merged by guesswork.
    let lock = fs::read_to_string(dir.join("Cargo.lock")).expect("lock");
    let moved = lock.replacen(
        "dependencies = [\n \"bytes\",",
        "dependencies = [\n \"bytes 9.9.9\",",
        1,
    );
    assert_ne!(moved, lock, "the lock has a package depending on bytes");
    fs::write(dir.join("Cargo.lock"), moved).expect("write");
    let before = tree(&dir);
    let r = attempt("mailer");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("Cargo.lock has other entries"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "a moved lock changed the tree");
}
