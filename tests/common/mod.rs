#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

mod test;
mod tree;

pub use test::Test;
pub use tree::{Tree, assert_same, files, tree};

/// Says loudly that a test did not run what it is for, and why: written to the process's
/// stderr itself, which the test harness does not capture, so the line shows in CI's log
/// even when the test passes (`eprintln!` would be captured and shown only on failure).
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {why}");
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture's directory, for a test that reads it in place; an overlay fixture (one
/// with an `.overlay` file) is not a whole repository there, so asking for one (or a path
/// in one) fails the test: use [`copy_fixture`].
pub fn fixture(rel: &str) -> PathBuf {
    let root = repo_root().join("fixtures");
    let path = root.join(rel);
    for dir in path.ancestors().take_while(|d| *d != root) {
        assert!(
            !dir.join(OVERLAY).is_file(),
            "fixtures/{rel} is an overlay: materialize it with copy_fixture"
        );
    }
    path
}

/// Every fixture repository under `fixtures/` (those of `fixtures/bases/` are not whole
/// ones), as the `rel` [`copy_fixture`] takes, sorted.
pub fn fixtures() -> Vec<String> {
    let root = repo_root().join("fixtures");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        if dir.join(OVERLAY).is_file() || dir.join("agent/codemap.yml").is_file() {
            let rel = dir.strip_prefix(&root).expect("under fixtures/");
            out.push(rel.to_string_lossy().replace('\\', "/"));
            continue;
        }
        for e in std::fs::read_dir(&dir).expect("fixtures").flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) && e.path() != root.join("bases") {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Names the fixture an overlay is laid over and the base's files it drops.
const OVERLAY: &str = ".overlay";

/// Writes the whole repository of fixture `rel` into `to`. Most fixtures are overlays:
/// `fixtures/<rel>/.overlay` says `base <fixture>` (a directory under `fixtures/`, usually
/// one of `fixtures/bases/`) and `remove <path>` for each of the base's files the fixture
/// does not have; the base is written first, those files removed (and the directories
/// they leave empty), then the fixture's own files copied over it. A fixture without
/// `.overlay` is a whole repository already.
pub fn materialize(rel: &str, to: &Path) {
    materialize_at(rel, to, 0);
}

fn materialize_at(rel: &str, to: &Path, depth: usize) {
    assert!(depth < 8, "fixtures/{rel}: overlays nest more than 8 deep");
    let dir = repo_root().join("fixtures").join(rel);
    assert!(dir.is_dir(), "no fixture at fixtures/{rel}");
    let overlay = dir.join(OVERLAY);
    if overlay.is_file() {
        let text = std::fs::read_to_string(&overlay).expect("read .overlay");
        let mut base = None;
        let mut removes = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once(' ') {
                Some(("base", b)) => base = Some(b.to_owned()),
                Some(("remove", p)) => removes.push(p.to_owned()),
                _ => panic!("fixtures/{rel}/.overlay: `{line}` is neither `base` nor `remove`"),
            }
        }
        let base = base.unwrap_or_else(|| panic!("fixtures/{rel}/.overlay names no base"));
        materialize_at(&base, to, depth + 1);
        for p in removes {
            let gone = to.join(&p);
            std::fs::remove_file(&gone)
                .unwrap_or_else(|e| panic!("fixtures/{rel}: remove {p}: not in {base}: {e}"));
            for parent in gone.ancestors().skip(1).take_while(|d| *d != to) {
                if std::fs::remove_dir(parent).is_err() {
                    break;
                }
            }
        }
    }
    copy_tree(&dir, to, &[OVERLAY]);
}

/// Copies a fixture (materialized, see [`materialize`]) into a temporary directory so a
/// test may run in it or change it.
pub fn copy_fixture(rel: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    materialize(rel, tmp.path());
    tmp
}

pub fn copy_dir(from: &Path, to: &Path) {
    copy_tree(from, to, &[]);
}

/// Copies `from` into `to`, leaving out the entries of `from` itself named in `skip`.
fn copy_tree(from: &Path, to: &Path, skip: &[&str]) {
    std::fs::create_dir_all(to).expect("create dir");
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .expect("read fixture dir")
        .map(|e| e.expect("dir entry"))
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if skip.iter().any(|s| entry.file_name() == *s) {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// The binary with a deterministic environment: no colour, fixed width, not under CI.
pub fn scaffold() -> Command {
    let mut c = Command::cargo_bin("scaffold").expect("the scaffold binary is built");
    c.env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("CI");
    c
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The findings of a `check --format json` run.
    #[track_caller]
    pub fn findings(&self) -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("JSON output: {e}\n{}{}", self.stdout, self.stderr));
        v["findings"].as_array().expect("findings").clone()
    }
}

/// Runs git in `dir` (tests only), failing the test on error.
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=scaffold-test",
            "-c",
            "user.email=test@scaffold.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fixture whose rule needs a change set (`.scaffold-fixture/`): the fixture is copied
/// into a temporary git repository and committed; then `changes/` is copied over it,
/// `deletes` (one path a line) removed, `renames` (`old new` a line) moved with git, and
/// everything staged. Returns the repo and the extra arguments in `args` (one a line).
pub fn scenario(rel: &str) -> Option<(tempfile::TempDir, Vec<String>)> {
    let src = repo_root().join("fixtures").join(rel);
    let meta = src.join(".scaffold-fixture");
    if !meta.is_dir() {
        return None;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    materialize(rel, tmp.path());
    std::fs::remove_dir_all(tmp.path().join(".scaffold-fixture")).expect("drop the scenario");
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-q", "-m", "base"]);
    if meta.join("changes").is_dir() {
        copy_dir(&meta.join("changes"), tmp.path());
    }
    let lines = |name: &str| -> Vec<String> {
        std::fs::read_to_string(meta.join(name))
            .map(|t| {
                t.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    for d in lines("deletes") {
        git(tmp.path(), &["rm", "-q", &d]);
    }
    for r in lines("renames") {
        let (old, new) = r.split_once(' ').expect("renames: `old new`");
        git(tmp.path(), &["mv", old, new]);
    }
    git(tmp.path(), &["add", "-A"]);
    Some((tmp, lines("args")))
}

/// `scaffold init` into `<dir>/acme`, then `scaffold namespace shipping` when
/// `namespace`; returns the repository's path.
pub fn init_repo(dir: &Path, namespace: bool) -> PathBuf {
    let repo = dir.join("acme");
    Test::in_dir(dir)
        .args(["init", repo.to_str().expect("a UTF-8 temp path")])
        .run();
    if namespace {
        Test::in_dir(&repo).args(["namespace", "shipping"]).run();
    }
    repo
}

/// The module a violation sits in ([`violating_tree`]), and what it holds: a forbidden
/// import.
pub const SNEAKY: &str = "pub fn go() {\n    infra::resolve();\n}\n";

/// The import-forbidden fixture reduced to one violation, in `src/sneaky/mod.rs` of the
/// maintenance worker (`mod sneaky;` in its `main.rs`): `check` exits 1 on it, and a trick
/// that hides the module must not make it exit 0.
pub fn violating_tree() -> tempfile::TempDir {
    let repo = copy_fixture("rules/import-forbidden");
    let worker = repo.path().join("workers/maintenance");
    std::fs::remove_dir_all(worker.join("src")).expect("rm src");
    std::fs::remove_dir_all(worker.join("tests")).expect("rm tests");
    std::fs::create_dir_all(worker.join("src/sneaky")).expect("mkdir");
    std::fs::write(
        worker.join("src/main.rs"),
        "mod sneaky;\n\nfn main() {\n    sneaky::go();\n}\n",
    )
    .expect("write main.rs");
    std::fs::write(worker.join("src/sneaky/mod.rs"), SNEAKY).expect("write module");
    repo
}
