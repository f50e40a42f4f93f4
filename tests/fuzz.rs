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
        remote: false,
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

/// One module of a random tree under the maintenance worker, and what a pull request did
/// to it.
#[derive(Debug, Clone)]
struct Module {
    /// The module it is declared in: an earlier one's index, or `None` for `main.rs`.
    parent: Option<usize>,
    /// `name/mod.rs` rather than `name.rs`.
    folder: bool,
    trick: Trick,
}

#[derive(Debug, Clone, Copy)]
enum Trick {
    None,
    /// Its file (or, for a folder module, its folder) is an in-repo symlink.
    Symlink,
    /// A `.gitignore` in its folder names it.
    GitIgnored,
    /// An `.ignore` in its folder names it.
    Ignored,
    /// A `CACHEDIR.TAG` in its own folder.
    CacheDir,
    /// Its file is a FIFO.
    Fifo,
    /// The `.gitignore` of the folder it sits in is a FIFO.
    FifoIgnore,
}

fn module_strategy() -> impl Strategy<Value = Vec<Module>> {
    let trick = prop_oneof![
        3 => Just(Trick::None),
        1 => Just(Trick::Symlink),
        1 => Just(Trick::GitIgnored),
        1 => Just(Trick::Ignored),
        1 => Just(Trick::CacheDir),
        1 => Just(Trick::Fifo),
        1 => Just(Trick::FifoIgnore),
    ];
    prop::collection::vec((any::<prop::sample::Index>(), any::<bool>(), trick), 1..8).prop_map(
        |raw| {
            raw.into_iter()
                .enumerate()
                .map(|(i, (parent, folder, trick))| Module {
                    // Index 0 of i + 1 choices is `main.rs`.
                    parent: match parent.index(i + 1) {
                        0 => None,
                        p => Some(p - 1),
                    },
                    folder,
                    trick,
                })
                .collect()
        },
    )
}

/// Builds the modules under `src` of the maintenance worker in `repo` (each holding a
/// forbidden import, and the `mod` lines of its children); returns each module's path as
/// cargo reaches it, repo-relative, `None` where cargo reaches no file (below a FIFO).
fn build_modules(repo: &Path, modules: &[Module]) -> Vec<Option<String>> {
    use std::os::unix::fs::symlink;
    let src = "workers/maintenance/src";
    // The folder each module's children live in, and its own file, as cargo sees them.
    let mut dirs: Vec<String> = Vec::new();
    let mut files: Vec<Option<String>> = Vec::new();
    let mut decls: Vec<String> = vec![String::new(); modules.len() + 1];
    for (i, m) in modules.iter().enumerate() {
        let (dir, reachable) = match m.parent {
            None => (src.to_owned(), true),
            Some(p) => (
                dirs[p].clone(),
                files[p].is_some() && !matches!(modules[p].trick, Trick::Fifo),
            ),
        };
        let name = format!("m{i}");
        decls[m.parent.map_or(0, |p| p + 1)].push_str(&format!("mod {name};\n"));
        let own = format!("{dir}/{name}");
        let file = if m.folder {
            format!("{own}/mod.rs")
        } else {
            format!("{own}.rs")
        };
        dirs.push(own);
        files.push(reachable.then_some(file));
    }
    let write = |rel: &str, text: &str| {
        let at = repo.join(rel);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::fs::write(at, text).expect("write");
    };
    write(
        &format!("{src}/main.rs"),
        &format!("{}fn main() {{}}\n", decls[0]),
    );
    // Files first, tricks after (a symlinked folder moves its children with it).
    for (i, m) in modules.iter().enumerate() {
        let Some(file) = &files[i] else { continue };
        if let Some(p) = m.parent
            && files[p].is_none()
        {
            continue;
        }
        write(
            file,
            &format!("{}pub fn go() {{ infra::resolve(); }}\n", decls[i + 1]),
        );
    }
    for (i, m) in modules.iter().enumerate().rev() {
        let Some(file) = &files[i] else { continue };
        let own = &dirs[i];
        let dir = own.rsplit_once('/').map_or("", |(d, _)| d);
        let name = format!("m{i}");
        match m.trick {
            Trick::None => {}
            Trick::Symlink => {
                // The real thing moves to `elsewhere/` (inside the repository).
                let moved = if m.folder { own.clone() } else { file.clone() };
                let to = format!("elsewhere/{i}");
                std::fs::create_dir_all(repo.join("elsewhere")).expect("mkdir");
                std::fs::rename(repo.join(&moved), repo.join(&to)).expect("move");
                let up = "../".repeat(moved.matches('/').count());
                symlink(format!("{up}{to}"), repo.join(&moved)).expect("link");
            }
            Trick::GitIgnored | Trick::Ignored => {
                let ignore = if matches!(m.trick, Trick::GitIgnored) {
                    ".gitignore"
                } else {
                    ".ignore"
                };
                let at = repo.join(dir).join(ignore);
                if !std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_file()) {
                    let mut text = std::fs::read_to_string(&at).unwrap_or_default();
                    text.push_str(&format!("{name}*\n"));
                    std::fs::write(at, text).expect("write");
                }
            }
            Trick::CacheDir => {
                let tag = repo.join(own).join("CACHEDIR.TAG");
                if repo.join(own).is_dir() {
                    std::fs::write(tag, "Signature: 8a477f597d28d172789f06886806bc55\n")
                        .expect("write");
                }
            }
            Trick::Fifo => {
                let at = repo.join(file);
                if std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_file()) {
                    std::fs::remove_file(&at).expect("rm");
                    let made = std::process::Command::new("mkfifo").arg(&at).status();
                    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
                }
            }
            Trick::FifoIgnore => {
                let at = repo.join(dir).join(".gitignore");
                let _ = std::fs::remove_file(&at);
                let made = std::process::Command::new("mkfifo").arg(&at).status();
                assert!(made.is_ok_and(|s| s.success()), "mkfifo");
            }
        }
    }
    files
}

/// Random trees of real files, in-repo symlinks (files and folders), ignore files and
/// FIFOs under a crate (issue "Fail closed, part 2"): every file cargo's module tree
/// reaches is read (its forbidden import is found) or reported (a `source-unparsed`
/// finding names it or a module above it), the check fails, ends, and changes no byte of
/// the tree but its own cache.
#[cfg(unix)]
#[test]
fn random_trees_of_links_ignores_and_fifos_are_read_or_reported() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&module_strategy(), |modules| {
            let repo = common::violating_tree();
            std::fs::remove_dir_all(repo.path().join("workers/maintenance/src")).expect("rm src");
            let files = build_modules(repo.path(), &modules);
            let run = common::Test::in_dir(repo.path())
                .args(["check", "--format", "json"])
                .timeout(std::time::Duration::from_secs(60))
                .status(1)
                .tree_unchanged_but_cache()
                .run();
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON findings");
            let findings = doc["findings"].as_array().expect("findings");
            let read = |p: &str| {
                findings
                    .iter()
                    .any(|f| f["rule"] == "import-forbidden" && f["path"] == p)
            };
            let reported = |p: &str| {
                findings.iter().any(|f| {
                    f["rule"] == "source-unparsed"
                        && (f["path"] == p || f["message"].as_str().is_some_and(|m| m.contains(p)))
                })
            };
            // Read itself, or reported itself or at a module above it (what a reported
            // module declares is not read, and the finding already fails the gate).
            let covered = |i: usize| {
                let Some(p) = &files[i] else { return true };
                if read(p) || reported(p) {
                    return true;
                }
                let mut at = modules[i].parent;
                while let Some(a) = at {
                    if files[a].as_deref().is_some_and(reported) {
                        return true;
                    }
                    at = modules[a].parent;
                }
                false
            };
            for (i, file) in files.iter().enumerate() {
                if file.is_some() {
                    prop_assert!(
                        covered(i),
                        "{file:?} was neither read nor reported: {modules:?}\n{}",
                        run.stdout
                    );
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
