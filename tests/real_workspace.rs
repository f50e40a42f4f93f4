//! `scaffold check` on the shapes real workspaces have (issue "check on real workspaces"):
//! members cargo adds through path dependencies, paths in attribute arguments, macro
//! arguments and `macro_rules!` bodies, and the near misses beside each that name no
//! crate (a tool's attribute, a lint tool, `quote!`, `$crate`, a module brought in by
//! `use super::*`, a file outside every module tree). One layer per crate, so every
//! edge found is a finding; the snapshots are the list.

mod common;

use common::{copy_fixture, run_in};

#[test]
fn every_edge_is_found_and_no_near_miss_is() {
    let repo = copy_fixture("real-workspace");
    let human = run_in(repo.path(), &["check", "--color", "never"]);
    assert_eq!(
        human.code, 0,
        "warnings only: {}{}",
        human.stdout, human.stderr
    );
    insta::assert_snapshot!("edges_human", human.stdout);
    let json = run_in(repo.path(), &["check", "--format", "json"]);
    insta::assert_snapshot!("edges_json", json.stdout);
    // The near misses, by file: nothing there.
    for silent in [
        "crates/a/src/child.rs",
        "crates/a/test_data/broken.rs",
        "src/main.rs:7",
    ] {
        assert!(!human.stdout.contains(silent), "{silent}: {}", human.stdout);
    }
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let at: Vec<String> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| format!("{}:{}", f["path"].as_str().unwrap_or(""), f["line"]))
        .collect();
    for found in [
        "crates/a/src/lib.rs:4",
        "crates/a/src/lib.rs:8",
        "crates/a/src/lib.rs:16",
        "crates/a/src/lib.rs:24",
        "crates/a/src/tests.rs:4",
        "src/main.rs:5",
    ] {
        assert!(at.iter().any(|a| a == found), "{found} missing from {at:?}");
    }
}
