//! Fail closed, part 2, items 8–11: nothing is opened that can block, nothing is read
//! without a bound, nothing grows faster than its input, and a hard-linked file is never
//! shown. Every run here has a deadline: a FIFO that hung a command fails the test
//! instead of hanging it.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Test, copy_dir, git, init_repo};

/// Far above what any of these runs takes: what it catches is a run that blocks.
const DEADLINE: Duration = Duration::from_secs(60);

/// A generated repository (with a namespace), committed to git, copied to `to`.
fn repo_at(template: &Path, to: &Path) {
    copy_dir(template, to);
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Item 8: a FIFO at `.gitignore`, `.ignore`, `.git/info/exclude`, `rust-toolchain.toml`,
/// `rustfmt.toml`, `.git/hooks/pre-commit`, `.git/HEAD` or `.git/index` hung `check`,
/// `gates`, the generator, `hook install` or `--since`/`--staged`. Each now ends, with
/// what it could not read named.
#[test]
fn fifos_where_files_are_read_never_hang_a_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let template = init_repo(tmp.path(), true);
    git(&template, &["init", "-q"]);
    git(&template, &["add", "-A"]);
    git(&template, &["commit", "-q", "-m", "base"]);
    let blocks = "git would block reading it";
    let cases: &[(&str, &[&str], i32, &str)] = &[
        (
            ".gitignore",
            &["check"],
            1,
            "cannot read the ignore file .gitignore",
        ),
        (".gitignore", &["worker", "maintenance", "REINDEX"], 0, ""),
        (
            ".gitignore",
            &["check", "--since", "HEAD"],
            2,
            "did not finish",
        ),
        (
            ".ignore",
            &["check", "--format", "json"],
            1,
            "cannot read the ignore file .ignore",
        ),
        (".ignore", &["gates", "om/src/lib.rs"], 0, ""),
        (
            ".git/info/exclude",
            &["check"],
            1,
            "cannot read the ignore file .git/info/exclude",
        ),
        (".git/info/exclude", &["check", "--staged"], 2, blocks),
        (
            "rust-toolchain.toml",
            &["worker", "maintenance", "REINDEX"],
            2,
            "not a regular file",
        ),
        (
            "rustfmt.toml",
            &["worker", "maintenance", "REINDEX"],
            2,
            "not a regular file",
        ),
        (
            "rust-toolchain.toml",
            &["gates", "--run", "workers/maintenance/src/main.rs"],
            2,
            "would block",
        ),
        (
            ".git/hooks/pre-commit",
            &["hook", "install"],
            2,
            "was not written by scaffold",
        ),
        (
            ".git/hooks/pre-commit",
            &["hook", "install", "--force"],
            0,
            "installed",
        ),
        (".git/HEAD", &["check", "--staged"], 2, blocks),
        (".git/HEAD", &["check", "--since", "HEAD"], 2, blocks),
        (".git/HEAD", &["hook", "install"], 2, blocks),
        (".git/index", &["check", "--staged"], 2, blocks),
        (".git/index", &["gates"], 2, blocks),
    ];
    for (n, (fifo, args, status, says)) in cases.iter().enumerate() {
        let repo = tmp.path().join(format!("case{n}"));
        repo_at(&template, &repo);
        mkfifo(&repo.join(fifo));
        let run = Test::in_dir(&repo)
            .args(*args)
            .env("SCAFFOLD_GIT_TIMEOUT", "3")
            .timeout(DEADLINE)
            .status(*status)
            .never_prints("panicked")
            .run();
        assert!(
            run.stdout.contains(says) || run.stderr.contains(says),
            "{fifo} / {args:?}: {}{}",
            run.stdout,
            run.stderr
        );
    }
}

/// Item 9: `--payload @/dev/zero` read until memory ran out.
#[test]
fn a_payload_is_read_to_a_bound() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for source in ["@/dev/zero", "@big.json"] {
        std::fs::write(
            tmp.path().join("big.json"),
            format!("\"{}\"", "x".repeat(2 << 20)),
        )
        .expect("write");
        Test::in_dir(tmp.path())
            .args(["queue", "enqueue", "SWEEP", "--database", "memory://"])
            .args(["--payload", source])
            .timeout(DEADLINE)
            .status(2)
            .stderr_has("larger than 1 MiB")
            .run();
    }
}

/// Item 10: 100,000 literal workspace members that do not exist took 77 s (10,000: 1.2 s):
/// each was searched for in the root manifest's text. Each is one lookup now; the
/// deadline only catches the quadratic run (this takes well under a second released).
#[test]
fn missing_literal_members_cost_one_lookup_each() {
    let repo = common::copy_fixture("clean");
    let n = 100_000;
    let mut manifest =
        String::from("[workspace]\nmembers = [\"om\", \"services/*\", \"workers/*\",\n");
    for i in 0..n {
        manifest.push_str(&format!("  \"gone/m{i}\",\n"));
    }
    manifest.push_str("]\nresolver = \"2\"\n");
    std::fs::write(repo.path().join("Cargo.toml"), manifest).expect("write");
    let run = Test::in_dir(repo.path())
        .args(["check", "--format", "json", "--rule", "source-unparsed"])
        .timeout(DEADLINE)
        .status(1)
        .run();
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(
        doc["summary"]["errors"], n,
        "one finding per missing member"
    );
    assert_eq!(
        doc["findings"][n - 1]["line"],
        n + 2,
        "each at its own line"
    );
}

/// Item 11: a hard-linked codemap, source or template override printed an outside file's
/// content. Git cannot carry a hard link, so this is a local attack; such a file is
/// refused where it is read for display (a source is still checked, its snippet not shown).
#[test]
fn a_hard_linked_file_is_never_shown() {
    const SECRET: &str = "hunter2-do-not-print";
    let outside = tempfile::tempdir().expect("tempdir");
    let linked = |repo: &Path, rel: &str, text: &str| -> bool {
        let target = outside.path().join(rel.replace('/', "_"));
        std::fs::write(&target, text).expect("write");
        let at = repo.join(rel);
        let _ = std::fs::remove_file(&at);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::fs::hard_link(&target, &at).is_ok()
    };
    let repo = common::copy_fixture("clean");
    if !linked(
        repo.path(),
        "agent/codemap.yml",
        &format!("version: 1\nname: acme\n{SECRET}: [\n"),
    ) {
        common::skipped("cannot hard-link across these folders here");
        return;
    }
    Test::in_dir(repo.path())
        .args(["check"])
        .timeout(DEADLINE)
        .status(2)
        .stderr_has("more than one name")
        .never_prints(SECRET)
        .run();

    let repo = common::violating_tree();
    let module = format!("pub fn go() {{\n    infra::resolve(); // {SECRET}\n}}\n");
    assert!(linked(
        repo.path(),
        "workers/maintenance/src/sneaky/mod.rs",
        &module
    ));
    for format in ["human", "github", "json"] {
        Test::in_dir(repo.path())
            .args(["check", "--format", format])
            .timeout(DEADLINE)
            .status(1)
            .stdout_has("sneaky/mod.rs")
            .never_prints(SECRET)
            .run();
    }

    // Checked all the same: bytes that are not UTF-8 (in a comment, where the lossy text
    // would parse) are found in a hard-linked source too, as rustc would refuse it.
    let repo = common::violating_tree();
    let module = "workers/maintenance/src/sneaky/mod.rs";
    let target = outside.path().join("not-utf8.rs");
    std::fs::write(&target, b"// caf\xe9\npub fn go() {}\n").expect("write");
    std::fs::remove_file(repo.path().join(module)).expect("remove");
    std::fs::hard_link(&target, repo.path().join(module)).expect("link");
    let found = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .timeout(DEADLINE)
        .status(1)
        .run()
        .findings();
    assert!(
        found
            .iter()
            .any(|f| f["rule"] == "source-unparsed" && f["path"] == module),
        "{found:?}"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = init_repo(tmp.path(), true);
    assert!(linked(
        &repo,
        ".scaffold/templates/kind/handler.rs.j2",
        &format!("fn broken( {{ {SECRET}\n"),
    ));
    Test::in_dir(&repo)
        .args(["worker", "maintenance", "REINDEX"])
        .timeout(DEADLINE)
        .status(2)
        .stderr_has("more than one name")
        .never_prints(SECRET)
        .tree_unchanged()
        .run();
}
