//! Fail closed, part 2, items 1–3: the Rust files `check` reads are the module tree cargo
//! compiles, whatever ignore files say. Each test starts from a tree whose one violation
//! (a forbidden import) sits in a module of the maintenance worker, hides it the way a
//! pull request could, and sees `check` still fail, the tree unchanged after.

use crate::common;

use std::os::unix::fs::symlink;
use std::path::Path;

use common::{SNEAKY, Test, violating_tree};

/// `check` on `repo` exits `status`, says `says` (in JSON: human output wraps lines),
/// and leaves the tree as it was (its own cache aside), in both formats.
fn fails(repo: &Path, status: i32, says: &str) {
    Test::in_dir(repo)
        .args(["check", "--format", "json"])
        .status(status)
        .stdout_has(says)
        .tree_unchanged_but_cache()
        .run();
    Test::in_dir(repo)
        .args(["check"])
        .status(status)
        .tree_unchanged_but_cache()
        .run();
}

#[test]
fn the_violating_tree_fails_as_it_is() {
    let repo = violating_tree();
    fails(repo.path(), 1, "workers/maintenance/src/sneaky/mod.rs");
}

/// Item 1: a module folder that is a symlink inside the repository is built by cargo; the
/// check said "ok".
#[test]
fn a_symlinked_module_folder_is_a_finding_at_the_mod_line() {
    let repo = violating_tree();
    let src = repo.path().join("workers/maintenance/src");
    std::fs::create_dir_all(repo.path().join("x")).expect("mkdir");
    std::fs::rename(src.join("sneaky"), repo.path().join("x/sneaky")).expect("move");
    symlink("../../../x/sneaky", src.join("sneaky")).expect("link");
    fails(
        repo.path(),
        1,
        "through the symlink `workers/maintenance/src/sneaky`",
    );
    let run = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    assert!(
        run.stdout
            .contains(r#""path":"workers/maintenance/src/main.rs","line":1,"column":1"#),
        "not at the mod line: {}",
        run.stdout
    );
}

/// Item 2: an ignore file naming a module's folder, or a `CACHEDIR.TAG` inside it, hid
/// files cargo builds (tracked or not).
#[test]
fn ignore_files_do_not_hide_compiled_code() {
    let tricks: [(&str, &str, &str); 4] = [
        (".gitignore", "sneaky/\n", "gitignore naming the folder"),
        (".ignore", "workers/maintenance/src/sneaky\n", ".ignore"),
        (
            "workers/maintenance/src/sneaky/CACHEDIR.TAG",
            "Signature: 8a477f597d28d172789f06886806bc55\n",
            "CACHEDIR.TAG",
        ),
        (
            "workers/maintenance/.gitignore",
            "*.rs\n",
            "gitignore of every .rs",
        ),
    ];
    for (file, text, what) in tricks {
        let repo = violating_tree();
        std::fs::write(repo.path().join(file), text).expect("write");
        // Tracked as well: git keeps tracking what .gitignore names.
        common::git(repo.path(), &["init", "-q"]);
        common::git(repo.path(), &["add", "-A", "-f"]);
        common::git(repo.path(), &["commit", "-q", "-m", what]);
        fails(repo.path(), 1, "workers/maintenance/src/sneaky/mod.rs");
    }
}

/// A crate whose whole folder an ignore file hides, and a test target in an ignored
/// `tests/`: cargo builds both.
#[test]
fn ignored_crates_and_targets_are_still_checked() {
    let repo = violating_tree();
    std::fs::write(repo.path().join(".gitignore"), "workers/\n").expect("write");
    fails(repo.path(), 1, "workers/maintenance/src/sneaky/mod.rs");

    let repo = violating_tree();
    let worker = repo.path().join("workers/maintenance");
    std::fs::write(worker.join("src/sneaky/mod.rs"), "pub fn go() {}\n").expect("write");
    std::fs::create_dir_all(worker.join("tests")).expect("mkdir");
    std::fs::write(
        worker.join("tests/hidden.rs"),
        format!("#[test]\nfn t() {{ {SNEAKY} }}\n"),
    )
    .expect("write");
    std::fs::write(worker.join(".gitignore"), "tests/\n").expect("write");
    fails(repo.path(), 1, "workers/maintenance/tests/hidden.rs");
}

/// Item 3: a root manifest that cannot be read is exit 2 ("no findings in 2 files" before).
#[test]
fn a_root_manifest_that_cannot_be_read_is_an_error() {
    let outside = tempfile::tempdir().expect("tempdir");
    for how in ["symlink", "fifo", "folder", "missing", "too large"] {
        let repo = violating_tree();
        let manifest = repo.path().join("Cargo.toml");
        let text = std::fs::read(&manifest).expect("read");
        std::fs::remove_file(&manifest).expect("rm");
        match how {
            "symlink" => {
                std::fs::write(outside.path().join("Cargo.toml"), &text).expect("write");
                symlink(outside.path().join("Cargo.toml"), &manifest).expect("link");
            }
            "fifo" => assert!(
                std::process::Command::new("mkfifo")
                    .arg(&manifest)
                    .status()
                    .expect("mkfifo")
                    .success()
            ),
            "folder" => std::fs::create_dir(&manifest).expect("mkdir"),
            "missing" => {}
            _ => {
                let mut big = text.clone();
                big.extend(std::iter::repeat_n(b'#', 17 << 20));
                std::fs::write(&manifest, big).expect("write");
            }
        }
        for format in ["human", "json"] {
            Test::in_dir(repo.path())
                .args(["check", "--format", format])
                .status(2)
                .stderr_has("Cargo.toml")
                .tree_unchanged_but_cache()
                .run();
        }
    }
}

/// Item 3: a crate folder that is a symlink inside the repository, which cargo lists as a
/// member through `workers/*`, was skipped.
#[test]
fn a_symlinked_crate_folder_is_a_finding() {
    let repo = violating_tree();
    std::fs::rename(
        repo.path().join("workers/maintenance"),
        repo.path().join("elsewhere"),
    )
    .expect("move");
    symlink("../elsewhere", repo.path().join("workers/maintenance")).expect("link");
    fails(
        repo.path(),
        1,
        "`workers/maintenance` matches the workspace member",
    );
}

/// A `#[path]` out of the repository, or through a link, and a FIFO where a module file
/// is: cargo would build (or block on) it; each is a finding at the `mod` line.
#[test]
fn a_module_file_that_cannot_be_read_is_a_finding_at_the_mod_line() {
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("far.rs"), SNEAKY).expect("write");
    let repo = violating_tree();
    let src = repo.path().join("workers/maintenance/src");
    let far = outside.path().join("far.rs");
    let climb = "../".repeat(12) + far.to_str().expect("UTF-8").trim_start_matches('/');
    std::fs::write(
        src.join("main.rs"),
        format!("#[path = \"{climb}\"]\nmod far;\nmod sneaky;\nfn main() {{}}\n"),
    )
    .expect("write");
    std::fs::remove_file(src.join("sneaky/mod.rs")).expect("rm");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(src.join("sneaky/mod.rs"))
            .status()
            .expect("mkfifo")
            .success()
    );
    fails(repo.path(), 1, "outside the repository");
    fails(repo.path(), 1, "which is not a regular file");
}
