//! Fail closed, part 2, items 4–6: the gate changes nothing. `check`, `gates` and `hook
//! install` never write the tree (the checker's own cache aside): a journal a generator
//! run left stops them, naming `scaffold recover`; a journal git tracks is refused by every
//! command; a refused journal creates nothing; the lock file and the hook's temp file are
//! never written through a link.

use crate::common;

use std::os::unix::fs::symlink;
use std::path::Path;

use common::{SNEAKY, Test, git, violating_tree};

/// What the journal records of a file's bytes (`generate::txn::hash`).
fn hash(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// Plants in `repo` a journal that would make the violating tree clean: it replaces the
/// violating module, creates `build.rs` and a workflow, and makes two folders.
fn plant_cleaning_journal(repo: &Path) {
    let txn = repo.join(".scaffold/txn");
    std::fs::create_dir_all(txn.join("new")).expect("mkdir");
    std::fs::create_dir_all(txn.join("old")).expect("mkdir");
    let module = "workers/maintenance/src/sneaky/mod.rs";
    let clean = b"pub fn go() {}\n";
    let build = b"fn main() { /* runs on every cargo build */ }\n";
    let workflow = b"on: push\njobs: {}\n";
    std::fs::write(txn.join("new/0"), clean).expect("write");
    std::fs::write(txn.join("old/0"), SNEAKY).expect("write");
    std::fs::write(txn.join("new/1"), build).expect("write");
    std::fs::write(txn.join("new/2"), workflow).expect("write");
    let journal = serde_json::json!({
        "version": 1, "command": "worker maintenance CLEANUP", "pid": 1,
        "dirs": [".github", ".github/workflows"],
        "entries": [
            {"path": module, "staged": "new/0", "backup": "old/0",
             "before": hash(SNEAKY.as_bytes()), "after": hash(clean)},
            {"path": "workers/maintenance/build.rs", "staged": "new/1", "backup": null,
             "before": null, "after": hash(build)},
            {"path": ".github/workflows/pwn.yml", "staged": "new/2", "backup": null,
             "before": null, "after": hash(workflow)},
        ],
    });
    std::fs::write(txn.join("journal.json"), journal.to_string()).expect("write");
}

/// Item 4: a journal committed in a pull request. In a fresh clone, `check` applied it —
/// replacing the violating module, creating `build.rs` and a workflow — and passed. Now
/// every command refuses it and nothing changes.
#[test]
fn a_committed_journal_is_refused_by_every_command_and_nothing_changes() {
    let repo = violating_tree();
    plant_cleaning_journal(repo.path());
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "-A", "-f"]);
    git(repo.path(), &["commit", "-q", "-m", "a pull request"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &["clone", "-q", repo.path().to_str().expect("UTF-8"), "clone"],
    );
    for args in [
        &["check"][..],
        &["check", "--format", "json"],
        &["gates"],
        &["hook", "install"],
        &["recover"],
        &["worker", "maintenance", "REINDEX"],
    ] {
        Test::in_dir(&clone)
            .args(args)
            .status(2)
            .stderr_has("tracked by git")
            .tree_unchanged()
            .run();
    }
}

/// Item 4: a journal a killed run left here stops `check` (exit 2, naming `scaffold
/// recover`) without writing anything; `scaffold recover` finishes it.
#[test]
fn a_pending_journal_stops_check_until_recover_finishes_it() {
    let repo = violating_tree();
    plant_cleaning_journal(repo.path());
    for args in [
        &["check"][..],
        &["gates", "x"],
        &["check", "--format", "json"],
    ] {
        Test::in_dir(repo.path())
            .args(args)
            .status(2)
            .stderr_has("scaffold recover")
            .stderr_has("worker maintenance CLEANUP")
            .tree_unchanged()
            .run();
    }
    Test::in_dir(repo.path())
        .args(["recover"])
        .stdout_has("finished writing its 3 file(s)")
        .run();
    assert!(repo.path().join(".github/workflows/pwn.yml").exists());
    for left in [".scaffold/txn", ".scaffold/lock"] {
        assert!(!repo.path().join(left).exists(), "recovery left {left}");
    }
    Test::in_dir(repo.path())
        .args(["recover", "--format", "json"])
        .stdout("{\"recovered\":null}\n")
        .run();
}

/// Item 4: a journal refused part way created the folders it names first.
#[test]
fn a_refused_journal_creates_nothing() {
    let repo = violating_tree();
    plant_cleaning_journal(repo.path());
    // The module no longer holds what the journal says it held.
    std::fs::write(
        repo.path().join("workers/maintenance/src/sneaky/mod.rs"),
        "pub fn go() { /* edited by hand */ }\n",
    )
    .expect("write");
    let outside_txn = |t: common::Tree| t.without(".scaffold/");
    let before = outside_txn(common::tree(repo.path()));
    Test::in_dir(repo.path())
        .args(["recover"])
        .status(2)
        .stderr_has("changed since the run planned it")
        .run();
    common::assert_same(
        &outside_txn(common::tree(repo.path())),
        &before,
        "a refused journal changed the tree",
    );
    assert!(!repo.path().join(".github").exists(), "made its folders");
}

/// Item 5: `.scaffold/lock` hard-linked to a file outside the repository was truncated
/// and written through by `check` and the generator.
#[test]
fn a_hard_linked_lock_file_is_never_written() {
    let outside = tempfile::tempdir().expect("tempdir");
    let precious = outside.path().join("precious");
    std::fs::write(&precious, "someone else's data\n").expect("write");
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    std::fs::create_dir_all(repo.join(".scaffold")).expect("mkdir");
    if std::fs::hard_link(&precious, repo.join(".scaffold/lock")).is_err() {
        common::skipped("cannot hard-link across these folders here");
        return;
    }
    Test::in_dir(&repo).args(["check"]).run();
    Test::in_dir(&repo)
        .args(["worker", "maintenance", "REINDEX"])
        .status(2)
        .stderr_has("hard link")
        .run();
    assert_eq!(
        std::fs::read_to_string(&precious).expect("read"),
        "someone else's data\n",
        "written through the hard link"
    );
}

/// Item 5: a lock file a killed run left behind is replaced, never truncated in place.
#[test]
fn a_stale_lock_file_is_replaced_not_rewritten() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    std::fs::create_dir_all(repo.join(".scaffold")).expect("mkdir");
    let stale = "pid 1: scaffold worker x X\n";
    std::fs::write(repo.join(".scaffold/lock"), stale).expect("write");
    // Held open here: a run that truncated the file in place would change what this
    // descriptor reads; one that replaces the name leaves it as it was.
    let mut held = std::fs::File::open(repo.join(".scaffold/lock")).expect("open");
    Test::in_dir(&repo)
        .args(["worker", "maintenance", "REINDEX"])
        .run();
    let mut now = String::new();
    std::io::Read::read_to_string(&mut held, &mut now).expect("read");
    assert_eq!(now, stale, "the stale lock file was rewritten in place");
    assert!(!repo.join(".scaffold").exists(), "the run left .scaffold");
}

/// Item 6: `hook install` wrote through a symlink planted at its temp file's name.
#[test]
fn hook_install_never_writes_through_a_planted_link() {
    let outside = tempfile::tempdir().expect("tempdir");
    let precious = outside.path().join("precious");
    std::fs::write(&precious, "someone else's data\n").expect("write");
    let repo = violating_tree();
    git(repo.path(), &["init", "-q"]);
    let hooks = repo.path().join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    symlink(&precious, hooks.join(".pre-commit.scaffold-tmp")).expect("link");
    Test::in_dir(repo.path())
        .args(["hook", "install"])
        .stdout_has("installed")
        .run();
    assert_eq!(
        std::fs::read_to_string(&precious).expect("read"),
        "someone else's data\n",
        "written through the link"
    );
    let hook = std::fs::read_to_string(hooks.join("pre-commit")).expect("hook");
    assert!(hook.contains("scaffold:hook"), "{hook}");
    // A hook that is itself a link to a file elsewhere is not scaffold's: not replaced
    // without --force, and never read through.
    std::fs::remove_file(hooks.join("pre-commit")).expect("rm");
    symlink(&precious, hooks.join("pre-commit")).expect("link");
    Test::in_dir(repo.path())
        .args(["hook", "install"])
        .status(2)
        .stderr_has("was not written by scaffold")
        .run();
    Test::in_dir(repo.path())
        .args(["hook", "install", "--force"])
        .run();
    assert_eq!(
        std::fs::read_to_string(&precious).expect("read"),
        "someone else's data\n"
    );
}
