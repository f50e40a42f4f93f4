#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

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

pub fn fixture(rel: &str) -> PathBuf {
    repo_root().join("fixtures").join(rel)
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

pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    let out = scaffold()
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("scaffold runs");
    Run {
        code: out.status.code().expect("exited normally"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// Copies a fixture into a temporary directory so a test may change it.
pub fn copy_fixture(rel: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture(rel), tmp.path());
    tmp
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
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
    let src = fixture(rel);
    let meta = src.join(".scaffold-fixture");
    if !meta.is_dir() {
        return None;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(&src).expect("fixture dir") {
        let entry = entry.expect("entry");
        if entry.file_name() == ".scaffold-fixture" {
            continue;
        }
        let target = tmp.path().join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
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
    let init = scaffold()
        .arg("init")
        .arg(&repo)
        .output()
        .expect("init runs");
    assert!(init.status.success(), "{init:?}");
    if namespace {
        let ns = run_in(&repo, &["namespace", "shipping"]);
        assert_eq!(ns.code, 0, "{}{}", ns.stdout, ns.stderr);
    }
    repo
}
