//! End to end: the repository `scaffold init` writes is green from its first minute, and
//! stays green as the generator grows it — `cargo fmt --check`, `cargo test --workspace
//! --locked` and `scaffold check` after init, after `scaffold namespace shipping`, after
//! `scaffold worker maintenance NOTIFY_SHIPMENT` (whose test drives the namespace service's
//! write, the outbox relay and the worker's loop), after a kind with a lane of its own (a
//! replica of the maintenance worker), an orchestration kind (resumed after a kill between
//! its steps), a long-held kind, a kind calling an outside provider (its client crate, the
//! handler's test on the twin), and a new worker with its own lane, container and role
//! whose kind reuses that provider's crate, and a remote worker with the coordinator (a copy
//! of whose manifest linking a database driver fails `remote-worker-database`), whose
//! binaries then run as processes (tests/e2e_remote.rs).
//! The generated workspace builds into one shared target directory
//! (`target/e2e-generated`) to keep the time down.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Test;

fn target_dir() -> PathBuf {
    let base = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo_root().join("target"));
    base.join("e2e-generated")
}

fn cargo(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        // No debug info and no incremental state: the generated workspace's test binaries
        // took 11 GB with them, and CI once ran out of disk in this test.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "`cargo {}` failed in the generated repository:\n{}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The generated repository's CI denies warnings (clippy `-D warnings`): code that builds
    // with a compiler warning here (a function nothing calls any more) would fail it there.
    // Cargo's summary of a crate's warnings is matched, not its own notes (a retried
    // download, a dependency's future-incompatibility report).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.starts_with("warning: `") && l.contains(" generated ") && l.contains(" warning")
        })
        .collect();
    assert!(
        warnings.is_empty(),
        "`cargo {}` warned in the generated repository:\n{stderr}",
        args.join(" ")
    );
}

/// Describes each kind the step added in its namespace's README, as its author would:
/// until then `kind-undescribed` warns of each (and only of those).
fn describe_kinds(dir: &Path, step: &str) {
    let r = Test::in_dir(dir)
        .args(["check", "--format", "json"])
        .any_status()
        .run();
    let undescribed = r
        .findings()
        .iter()
        .filter(|f| f["rule"] == "kind-undescribed")
        .count();
    let om = dir.join("om/src");
    let mut placeholders = 0;
    for entry in std::fs::read_dir(&om).expect("om/src") {
        let readme = entry.expect("entry").path().join("README.md");
        let Ok(text) = std::fs::read_to_string(&readme) else {
            continue;
        };
        placeholders += text.matches(scaffold::layout::KIND_PLACEHOLDER).count();
        let described = text.replace(
            scaffold::layout::KIND_PLACEHOLDER,
            "The customer sees it done within a minute of asking.",
        );
        std::fs::write(&readme, described).expect("write the README");
    }
    assert_eq!(
        undescribed, placeholders,
        "kind-undescribed after {step}: {}",
        r.stdout
    );
}

/// The generated repository's CI lint, once over the grown repository (every template's
/// code is in it by then): `cargo clippy --workspace --all-targets -- -D warnings`.
fn lint(dir: &Path) {
    let clippy = Command::new(env!("CARGO"))
        .args(["clippy", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !clippy {
        common::skipped("clippy is not installed: the generated code's lints are not run");
        return;
    }
    cargo(
        dir,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ],
    );
}

/// Formatting, tests and the checker all pass; returns the test run's output.
fn green(dir: &Path, step: &str) {
    describe_kinds(dir, step);
    cargo(dir, &["fmt", "--all", "--check"]);
    cargo(dir, &["test", "--workspace", "--locked", "--quiet"]);
    let r = Test::in_dir(dir).args(["check", "--format", "json"]).run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(
        v["findings"].as_array().map(Vec::len),
        Some(0),
        "findings after {step}: {v:#}"
    );
    commit_rest(dir, step);
}

/// Runs a generator step (JSON output) in `dir`, then checks its owners: every file it
/// wrote has one, and each owner's part, staged alone, passes `scaffold check --as` that
/// owner (issue 37, item 6: 5–14 `ownership-outside-writable` findings a step, and the root
/// manifests writable by nobody). Each part is committed, so the next step's change set is
/// its own. `repo` is the repository (for `init`, the one it creates).
fn run_ok(dir: &Path, args: &[&str], repo: &Path) {
    let mut with_json = args.to_vec();
    with_json.extend(["--format", "json"]);
    let r = Test::in_dir(dir).args(&with_json).run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    if !repo.join(".git").exists() {
        common::git(repo, &["init", "-q"]);
    }
    let owners = &v["owners"];
    assert_eq!(
        owners["unowned"],
        serde_json::json!([]),
        "{args:?} wrote files no agent may write: {owners:#}"
    );
    let written: BTreeSet<&str> = ["created", "changed"]
        .iter()
        .flat_map(|k| v[k].as_array().expect("a list"))
        .filter_map(serde_json::Value::as_str)
        .collect();
    let mut owned = BTreeSet::new();
    let agents = owners["agents"].as_object().expect("owners by agent");
    for (agent, paths) in agents {
        let paths: Vec<&str> = paths
            .as_array()
            .expect("paths")
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect();
        owned.extend(paths.iter().copied());
        let mut add = vec!["add", "--"];
        add.extend(&paths);
        common::git(repo, &add);
        let check = Test::in_dir(repo)
            .args([
                "check",
                "--staged",
                "--as",
                agent,
                "--rule",
                "ownership-outside-writable",
                "--rule",
                "ownership-forbidden",
                "--rule",
                "file-unowned",
                "--format",
                "json",
            ])
            .any_status()
            .run();
        assert_eq!(
            (check.code, check.findings().len()),
            (0, 0),
            "{args:?}: {agent}'s part {paths:?}:\n{}{}",
            check.stdout,
            check.stderr
        );
        common::git(
            repo,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("{agent}'s part"),
            ],
        );
    }
    let generated: BTreeSet<&str> = owners["generated"]
        .as_array()
        .expect("generated")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let unlisted: Vec<&&str> = written
        .iter()
        .filter(|p| !owned.contains(*p) && !generated.contains(*p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "{args:?}: no owner listed for {unlisted:?}"
    );
}

/// Commits what the step's checks left (the kinds described in the READMEs), so the next
/// step's change set is its own.
fn commit_rest(dir: &Path, step: &str) {
    common::git(dir, &["add", "-A"]);
    common::git(
        dir,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            &format!("after {step}"),
        ],
    );
}

#[test]
fn the_generated_repository_stays_green_as_it_grows() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("acme");
    run_ok(tmp.path(), &["init", "acme"], &dir);
    green(&dir, "init");

    run_ok(&dir, &["namespace", "shipping"], &dir);
    green(&dir, "namespace shipping");

    run_ok(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"], &dir);
    assert!(
        dir.join("workers/maintenance/tests/notify_shipment.rs")
            .is_file()
    );
    green(&dir, "worker maintenance NOTIFY_SHIPMENT");

    assert!(
        dir.join("workers/maintenance/tests/notify_shipment_produced.rs")
            .is_file(),
        "the producer path: ShippingManager::record → outbox → relay → the handler, once"
    );

    // The write outside the tests, as the README says (issue 37, item 5): it creates the
    // records table itself, and its work row waits in the outbox for the relay.
    cargo(
        &dir,
        &[
            "run",
            "--quiet",
            "--locked",
            "-p",
            "acme-shipping-service",
            "--example",
            "record",
            "--",
            "r-1",
        ],
    );
    let status = Test::in_dir(&dir)
        .args(["queue", "status", "--format", "json"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&status.stdout).expect("JSON");
    assert_eq!(v["outbox"]["pending"], 1, "the write's work row: {v:#}");

    run_ok(
        &dir,
        &[
            "worker",
            "maintenance",
            "REINDEX_SHIPMENTS",
            "--lane",
            "bulk",
        ],
        &dir,
    );
    green(&dir, "worker maintenance REINDEX_SHIPMENTS --lane bulk");

    // A long-running kind as named steps, killed between them and resumed by its test.
    run_ok(
        &dir,
        &[
            "worker",
            "maintenance",
            "RECONCILE_SHIPMENTS",
            "--orchestration",
        ],
        &dir,
    );
    assert!(
        dir.join("workers/maintenance/tests/reconcile_shipments.rs")
            .is_file()
    );
    green(
        &dir,
        "worker maintenance RECONCILE_SHIPMENTS --orchestration",
    );

    // A long-held work kind on the bulk lane: chunks under a renewed lease.
    run_ok(
        &dir,
        &[
            "worker",
            "maintenance",
            "REBUILD_SHIPMENTS",
            "--long-held",
            "--lane",
            "bulk",
        ],
        &dir,
    );
    green(
        &dir,
        "worker maintenance REBUILD_SHIPMENTS --long-held --lane bulk",
    );

    // A kind calling an outside provider: the client crate under integrations/carrier/
    // (trait, HTTP client tested against a local server, twin), the handler's tests on
    // the twin, the worker starting only with ACME_CARRIER_IMPL set.
    run_ok(
        &dir,
        &[
            "worker",
            "maintenance",
            "BOOK_PICKUP",
            "--integration",
            "carrier",
        ],
        &dir,
    );
    for f in [
        "integrations/carrier/src/lib.rs",
        "integrations/carrier/src/http.rs",
        "integrations/carrier/src/twin.rs",
        "integrations/carrier/tests/http.rs",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    green(&dir, "worker maintenance BOOK_PICKUP --integration carrier");
    let carrier = std::fs::read(dir.join("integrations/carrier/src/lib.rs")).expect("lib.rs");

    run_ok(
        &dir,
        &[
            "worker",
            "billing",
            "CHARGE_CARD",
            "--lane",
            "payments",
            "--container",
            "--role",
            "scheduler",
            "--integration",
            "carrier",
        ],
        &dir,
    );
    assert_eq!(
        std::fs::read(dir.join("integrations/carrier/src/lib.rs")).expect("lib.rs"),
        carrier,
        "the second kind reuses the provider's crate"
    );
    for f in [
        "workers/billing/Cargo.toml",
        "workers/billing/README.md",
        "workers/billing/src/handlers/charge_card.rs",
        "workers/billing/tests/charge_card.rs",
        "deployment/docker/billing.Dockerfile",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    green(
        &dir,
        "worker billing CHARGE_CARD --lane payments --container --role scheduler --integration carrier",
    );

    // A remote worker, and with it the coordinator: its tests start a coordinator over
    // SQLite and work a kind through it (and refuse a payload with an unknown field); the
    // worker links no database driver, which the checker holds it to.
    run_ok(
        &dir,
        &["worker", "render", "RENDER_LABEL", "--remote"],
        &dir,
    );
    for f in [
        "workers/render/src/container.rs",
        "workers/render/tests/serve.rs",
        "platform/coordinator/src/main.rs",
        "deployment/docker/coordinator.Dockerfile",
        "deployment/terraform/modules/coordinator/main.tf",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    green(&dir, "worker render RENDER_LABEL --remote");
    lint(&dir);
    let manifest = dir.join("workers/render/Cargo.toml");
    let original = std::fs::read_to_string(&manifest).expect("the remote worker's manifest");
    for (how, edited) in [
        (
            "a driver",
            original.replace(
                "serde.workspace = true\n",
                "serde.workspace = true\nrusqlite = \"0.37\"\n",
            ),
        ),
        (
            "the runtime's sqlite feature",
            original.replace(
                "features = [\"remote\"]",
                "features = [\"remote\", \"sqlite\"]",
            ),
        ),
    ] {
        assert_ne!(edited, original, "{how}: the edit applies");
        std::fs::write(&manifest, edited).expect("edit the manifest");
        let r = Test::in_dir(&dir)
            .args(["check", "--format", "json"])
            .any_status()
            .run();
        let found = r
            .findings()
            .iter()
            .filter(|f| f["rule"] == "remote-worker-database")
            .count();
        assert_eq!(r.code, 1, "{how}: {}", r.stdout);
        assert_eq!(found, 1, "{how}: {}", r.stdout);
    }
    std::fs::write(&manifest, original).expect("restore the manifest");

    crate::e2e_remote::run(&dir, &target_dir(), |args| cargo(&dir, args));
}
