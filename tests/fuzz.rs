//! Arbitrary bytes as codemap, gate matrix, README, Cargo.toml or `.rs` file never panic
//! the checker or any reporter. Bounded: PROPTEST_CASES (default 200 per target).

mod common;

use std::path::Path;

use proptest::prelude::*;
use scaffold::check::{self, CheckOptions, rules};
use scaffold::cli::Format;
use scaffold::repo::{Repo, RepoError};
use scaffold::report::{self, Style};

const TARGETS: [&str; 5] = [
    "agent/codemap.yml",
    "agent/manifests/gate-matrix.yml",
    "workers/maintenance/README.md",
    "workers/maintenance/src/main.rs",
    "workers/maintenance/Cargo.toml",
];

fn check_everything(root: &Path) {
    let outcome = match Repo::load(root) {
        Ok(repo) => check::run(&repo, &CheckOptions::default()),
        Err(RepoError::Manifest { problems, .. }) => {
            assert!(!problems.is_empty());
            check::sink::Outcome {
                findings: problems
                    .iter()
                    .map(rules::manifest_invalid::finding)
                    .collect(),
                ..Default::default()
            }
        }
        Err(e) => panic!("unexpected error: {e}"),
    };
    for format in [Format::Human, Format::Json, Format::Sarif, Format::Github] {
        let mut out = Vec::new();
        report::outcome(
            &mut out,
            format,
            Style {
                color: false,
                width: 80,
            },
            root,
            ".",
            &outcome,
        )
        .expect("writing to memory succeeds");
        assert!(!out.is_empty());
    }
}

/// Mutations of the real file reach deeper than random bytes alone.
fn mutated(original: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = original.len();
    prop::collection::vec((0..=len, any::<u8>(), 0u8..3), 1..8).prop_map(move |edits| {
        let mut bytes = original.clone();
        for (at, byte, op) in edits {
            let at = at.min(bytes.len());
            match op {
                0 => bytes.insert(at, byte),
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ if at < bytes.len() => bytes[at] = byte,
                _ => bytes.push(byte),
            }
        }
        bytes
    })
}

fn fuzz_target(target: &'static str) {
    let repo = common::copy_fixture("clean");
    let path = repo.path().join(target);
    let original = std::fs::read(&path).expect("fixture file");
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(200);
    let strategy = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        mutated(original.clone())
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&strategy, |bytes| {
            std::fs::write(&path, &bytes).expect("write");
            check_everything(repo.path());
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{target}: {e}"));
    std::fs::write(&path, original).expect("restore");
}

#[test]
fn arbitrary_codemap_never_panics() {
    fuzz_target(TARGETS[0]);
}

#[test]
fn arbitrary_gate_matrix_never_panics() {
    fuzz_target(TARGETS[1]);
}

#[test]
fn arbitrary_readme_never_panics() {
    fuzz_target(TARGETS[2]);
}

#[test]
fn arbitrary_rust_source_never_panics() {
    fuzz_target(TARGETS[3]);
}

#[test]
fn arbitrary_cargo_manifest_never_panics() {
    fuzz_target(TARGETS[4]);
}
