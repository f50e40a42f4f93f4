//! `scaffold check` on the shapes real workspaces have (issue "check on real workspaces"):
//! members cargo adds through path dependencies, paths in attribute arguments, macro
//! arguments and `macro_rules!` bodies, and the near misses beside each that name no
//! crate (a tool's attribute, a lint tool, `quote!`, `$crate`, a module brought in by
//! `use super::*`, a file outside every module tree). One layer per crate, so every
//! edge found is a finding; the snapshots are the list.

use crate::common;

use crate::common::Test;
use common::copy_fixture;

#[test]
fn every_edge_is_found_and_no_near_miss_is() {
    let repo = copy_fixture("real-workspace");
    let human = Test::in_dir(repo.path())
        .args(["check", "--color", "never"])
        .run();
    insta::assert_snapshot!("edges_human", human.stdout);
    let json = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .status(0)
        .run();
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
        "crates/a/src/extra/named.rs:3",
        "crates/a/src/tests.rs:4",
        "src/main.rs:5",
    ] {
        assert!(at.iter().any(|a| a == found), "{found} missing from {at:?}");
    }
}

/// `--staged` reads a staged file's module chain, not the whole tree: a staged
/// `#[cfg(test)] mod tests;` file keeps its dev scope, a staged `#[path]`-less child of a
/// nested module is still found, and a staged file outside every tree is no code.
#[test]
fn a_staged_file_gets_its_scope_from_its_module_chain() {
    let repo = copy_fixture("real-workspace");
    let dir = repo.path();
    common::git(dir, &["init", "-q"]);
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "fixture"]);
    let append = |rel: &str, text: &str| {
        let path = dir.join(rel);
        let mut body = std::fs::read_to_string(&path).expect("read");
        body.push_str(text);
        std::fs::write(&path, body).expect("write");
    };
    append("crates/a/src/tests.rs", "// touched\n");
    append("crates/a/test_data/broken.rs", "// touched\n");
    // Reached only through `#[path]`: no chain of module files leads to it.
    append("crates/a/src/extra/named.rs", "// touched\n");
    common::git(dir, &["add", "-A"]);
    let run = Test::in_dir(dir)
        .args(["check", "--staged", "--format", "json"])
        .status(0)
        .run();
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let found: Vec<(String, String)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                format!("{}:{}", f["path"].as_str().unwrap_or(""), f["line"]),
                f["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let at: Vec<&str> = found.iter().map(|(a, _)| a.as_str()).collect();
    assert!(at.contains(&"crates/a/src/tests.rs:4"), "{found:?}");
    assert!(
        found
            .iter()
            .any(|(a, m)| a == "crates/a/src/tests.rs:4" && m.contains("dev-dependency scope")),
        "{found:?}"
    );
    assert!(at.contains(&"crates/a/src/extra/named.rs:3"), "{found:?}");
    assert!(!at.iter().any(|a| a.contains("test_data")), "{found:?}");
}
