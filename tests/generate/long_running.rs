//! Long-running kinds: `--orchestration` (an `OrchestrationKindSpec` whose steps the
//! maintenance worker's orchestration handler maps by name) and `--long-held` (a work kind
//! worked in checkpointed chunks under a renewed lease), and what is refused, with the
//! tree byte-identical.

use std::fs;

use super::{assert_same, repo, tree};
use crate::common::Test;

#[test]
fn an_orchestration_kind_is_a_spec_its_steps_and_their_mapping() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "ledger"]).run();
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "SYNC_LEDGER",
            "--orchestration",
            "--format",
            "json",
        ])
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(
        v["created"],
        serde_json::json!([
            "workers/maintenance/src/handlers/sync_ledger.rs",
            "workers/maintenance/tests/sync_ledger.rs"
        ])
    );
    let kinds = fs::read_to_string(dir.join("om/src/ledger/kinds.rs")).expect("kinds");
    assert!(
        kinds.contains("OrchestrationKindSpec {\n        name: \"SYNC_LEDGER\""),
        "{kinds}"
    );
    assert!(
        !kinds.contains("SyncLedger,"),
        "not a work kind's variant: {kinds}"
    );
    let root = fs::read_to_string(dir.join("om/src/root.rs")).expect("root");
    assert!(
        root.contains("crate::ledger::LEDGER_ORCHESTRATIONS,"),
        "{root}"
    );
    let arm = fs::read_to_string(dir.join("workers/maintenance/src/handlers/orchestration.rs"))
        .expect("handler");
    assert!(
        arm.contains("\"SYNC_LEDGER\" => crate::handlers::sync_ledger::run("),
        "{arm}"
    );
    Test::in_dir(&dir).args(["check", "--format", "json"]).run();

    // A second orchestration of the namespace is not registered twice.
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "CLOSE_BOOKS", "--orchestration"])
        .run();
    let root = fs::read_to_string(dir.join("om/src/root.rs")).expect("root");
    assert_eq!(root.matches("LEDGER_ORCHESTRATIONS").count(), 1, "{root}");
    // And its name is taken now.
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "SYNC_LEDGER", "--orchestration"])
        .status(1)
        .run();
}

#[test]
fn an_orchestration_with_a_lane_or_outside_the_maintenance_worker_is_refused() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "ledger"]).run();
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "SYNC_LEDGER",
            "--orchestration",
            "--lane",
            "bulk",
        ])
        .status(1)
        .run();
    assert!(r.stderr.contains("has no lane of its own"), "{}", r.stderr);
    assert!(
        r.stderr.contains("--long-held --lane bulk"),
        "the alternative is named: {}",
        r.stderr
    );
    assert_same(
        &tree(&dir),
        &before,
        "--orchestration --lane changed the tree",
    );

    let r = Test::in_dir(&dir)
        .args(["worker", "billing", "SYNC_LEDGER", "--orchestration"])
        .status(1)
        .run();
    assert!(r.stderr.contains("runs no orchestrations"), "{}", r.stderr);
    assert_same(
        &tree(&dir),
        &before,
        "an orchestration for a new worker changed the tree",
    );

    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "SYNC_LEDGER",
            "--orchestration",
            "--from",
            "LedgerManager::record",
        ])
        .status(2)
        .run();
    assert_same(
        &tree(&dir),
        &before,
        "--orchestration --from changed the tree",
    );
}

#[test]
fn a_long_held_kind_works_in_chunks_and_may_have_a_lane() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "ledger"]).run();
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "REBUILD_LEDGER",
            "--long-held",
            "--lane",
            "bulk",
            "--dry-run",
        ])
        .run();
    assert!(
        r.stdout
            .contains("+++ b/workers/maintenance/src/handlers/rebuild_ledger.rs"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("+pub async fn work_chunk("),
        "{}",
        r.stdout
    );
    assert_same(&tree(&dir), &before, "--dry-run wrote");
    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "REBUILD_LEDGER",
            "--long-held",
            "--lane",
            "bulk",
        ])
        .run();
    let kinds = fs::read_to_string(dir.join("om/src/ledger/kinds.rs")).expect("kinds");
    assert!(kinds.contains("lane: \"bulk\""), "{kinds}");
    Test::in_dir(&dir).args(["check", "--format", "json"]).run();
}
