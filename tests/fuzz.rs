//! Arbitrary bytes as codemap, gate matrix, README, Cargo.toml or `.rs` file never panic
//! the checker or any reporter. Bounded: PROPTEST_CASES (default 200 per target).

use crate::common;

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
            report::Root {
                path: root,
                display: ".",
                in_git: "",
            },
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

/// A repository's template override is input too (a pull request can commit one): any
/// text in place of the handler template ends in a plan or an error, rendered as `main`
/// renders it, never a panic, a hang or unbounded output (minijinja's fuel and the output
/// cap stop loops).
#[test]
fn arbitrary_template_override_never_panics() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    let template = "kind/handler.rs.j2";
    let original = std::fs::read(common::repo_root().join("templates").join(template))
        .expect("embedded template");
    let path = repo.join(".scaffold/templates").join(template);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    let strategy = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        mutated(original.clone()),
        // Loops and includes: what fuel and the path checks are for.
        Just(
            b"{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
                .to_vec()
        ),
        Just(b"{% include \"../../../../etc/passwd\" %}".to_vec()),
        Just(b"{{ name * 100000000 }}".to_vec()),
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let opts = scaffold::generate::worker::WorkerOptions {
        worker: "maintenance".to_owned(),
        kind: "REINDEX".to_owned(),
        namespace: Some("shipping".to_owned()),
        lane: None,
        container: false,
        role: None,
        from: None,
        orchestration: false,
        long_held: false,
        integration: None,
        dry_run: true,
    };
    runner
        .run(&strategy, |bytes| {
            std::fs::write(&path, &bytes).expect("write");
            match scaffold::generate::worker::worker(&repo, &opts, &mut |_| {}) {
                Ok(done) => {
                    for format in [Format::Human, Format::Json] {
                        let mut out = Vec::new();
                        report::generated(&mut out, format, &done).expect("in memory");
                        assert!(!out.is_empty());
                    }
                }
                Err(e) => {
                    let report = miette::Report::new(e);
                    let handler = miette::GraphicalReportHandler::new_themed(
                        miette::GraphicalTheme::unicode_nocolor(),
                    )
                    .with_width(80);
                    let mut s = String::new();
                    handler
                        .render_report(&mut s, report.as_ref())
                        .expect("renders");
                    assert!(!s.is_empty());
                }
            }
            assert!(
                !repo.join(".scaffold/txn").exists(),
                "a dry run left its transaction"
            );
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{template}: {e}"));
}
