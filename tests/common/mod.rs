#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

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
