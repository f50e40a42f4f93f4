//! Hostile input (issue "Fail closed"): what a pull request or another local user can
//! plant must end in a clear finding or error, never a panic, a write outside the root or
//! a binary of someone else's choosing. A finding on a 70,000-column line is shown
//! clipped; names and bytes the terminal would act on are escaped; a toolchain file in
//! `$TMPDIR` does not choose rustfmt; a planted or symlinked `.scaffold/txn` is refused;
//! a held repository lock is waited on, named, and timed out.

use crate::common;

use std::path::PathBuf;

use common::{Test, copy_fixture};

/// Declares a module in the maintenance worker's crate root: only files of a crate's
/// module tree are its code.
fn declare_module(repo: &std::path::Path, decl: &str) {
    let main = repo.join("workers/maintenance/src/main.rs");
    let mut text = std::fs::read_to_string(&main).expect("read main.rs");
    text.push_str(decl);
    text.push('\n');
    std::fs::write(&main, text).expect("write main.rs");
}

#[test]
fn a_finding_on_a_very_long_line_is_shown_clipped() {
    let repo = copy_fixture("clean");
    let long = format!("pub fn f() {{ let x = {} ; }} }}\n", "1 + ".repeat(20_000));
    std::fs::write(repo.path().join("workers/maintenance/src/long.rs"), long).expect("write");
    declare_module(repo.path(), "mod long;");
    for format in ["human", "json", "sarif", "github"] {
        let run = Test::in_dir(repo.path())
            .args(["check", "--format", format])
            .status(1)
            .run();
        assert!(run.stdout.contains("long.rs"), "{format}: {}", run.stdout);
        assert!(!run.stderr.contains("panicked"), "{format}: {}", run.stderr);
    }
    let run = Test::in_dir(repo.path()).args(["check"]).status(1).run();
    assert!(
        run.stdout.contains("(a long line, clipped)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.lines().all(|l| l.chars().count() < 400),
        "a line was printed whole"
    );
}

#[test]
fn a_manifest_problem_on_a_very_long_line_is_shown_clipped() {
    let repo = copy_fixture("clean");
    let codemap = repo.path().join("agent/codemap.yml");
    let mut text = std::fs::read_to_string(&codemap).expect("read");
    text.push_str(&format!("unknown_key_{}: 1\n", "x".repeat(70_000)));
    std::fs::write(&codemap, text).expect("write");
    Test::in_dir(repo.path())
        .args(["check"])
        .status(2)
        .never_prints("panicked")
        .stdout_has("clipped")
        .run();
}

/// A namespace inferred from the one folder of om/src/ is validated like one given on the
/// command line: `café` reached paths and templates before.
#[test]
fn an_inferred_namespace_is_validated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(dir.path(), false);
    let ns = repo.join("om/src/café");
    std::fs::create_dir_all(&ns).expect("mkdir");
    std::fs::write(ns.join("kinds.rs"), "").expect("write");
    std::fs::write(ns.join("README.md"), "# café\n").expect("write");
    Test::in_dir(&repo)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(1)
        .stderr_has("café")
        .tree_unchanged()
        .run();
}

/// Control characters in a file's name or content never reach the terminal raw: an ESC in
/// a name recoloured or moved the cursor, a newline forged a line of output.
#[cfg(unix)]
#[test]
fn control_characters_are_escaped_in_human_output() {
    let repo = copy_fixture("clean");
    let name = "workers/maintenance/src/bad\u{1b}[31m\nname.rs";
    std::fs::write(repo.path().join(name), "fn f( { \u{1b}[2J }\n").expect("write");
    declare_module(
        repo.path(),
        "#[path = \"bad\\u{1b}[31m\\nname.rs\"]\nmod bad;",
    );
    Test::in_dir(repo.path())
        .args(["check"])
        .status(1)
        .never_prints("\u{1b}")
        .stdout_has("\\u{1b}[31m\\nname.rs")
        .run();
    for format in ["json", "sarif", "github"] {
        Test::in_dir(repo.path())
            .args(["check", "--format", format])
            .status(1)
            .never_prints("\u{1b}")
            .run();
    }
}

/// A `.rs` file whose name or content is not UTF-8 is `source-unparsed` (rustc refuses
/// both); it was skipped, or read lossily, and the check said ok.
#[cfg(unix)]
#[test]
fn non_utf8_names_and_contents_are_findings() {
    use std::os::unix::ffi::OsStrExt;
    let repo = copy_fixture("clean");
    let _ = std::fs::remove_dir_all(repo.path().join(".scaffold"));
    let src = repo.path().join("workers/maintenance/src");
    std::fs::write(
        src.join(std::ffi::OsStr::from_bytes(b"bad\xff.rs")),
        "pub fn f() {}\n",
    )
    .expect("write");
    std::fs::write(src.join("latin.rs"), b"// caf\xe9\npub fn g() {}\n").expect("write");
    declare_module(repo.path(), "mod latin;");
    let run = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let findings = doc["findings"].as_array().expect("findings");
    let says = |needle: &str| {
        findings.iter().any(|f| {
            f["rule"] == "source-unparsed"
                && f["message"].as_str().is_some_and(|m| m.contains(needle))
        })
    };
    assert!(says("is not UTF-8: cargo and rustc"), "{}", run.stdout);
    assert!(
        says("latin.rs: the file is not valid UTF-8"),
        "{}",
        run.stdout
    );
    // A warm run (from the cache) says the same.
    let again = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(again.stdout, run.stdout);
}

/// A `.rs` file that is a symlink is reported: cargo builds what it points at, and the
/// walk used to leave it out silently, so its imports went unchecked.
#[cfg(unix)]
#[test]
fn a_symlinked_source_is_a_finding() {
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("evil.rs"), "use infra::Secret;\n").expect("write");
    let repo = copy_fixture("clean");
    let _ = std::fs::remove_dir_all(repo.path().join(".scaffold"));
    std::os::unix::fs::symlink(
        outside.path().join("evil.rs"),
        repo.path().join("workers/maintenance/src/evil.rs"),
    )
    .expect("link");
    let run = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    assert!(
        run.stdout.contains("evil.rs is a symlink"),
        "{}",
        run.stdout
    );
}

/// What another local user could plant in `/tmp`: a `rust-toolchain.toml` in `dir`
/// naming a "toolchain" of their own under `tmp`, whose rustfmt (and rustc, cargo) leaves
/// a mark. Returns the toolchain file and the mark.
#[cfg(unix)]
fn plant_toolchain(tmp: &std::path::Path, dir: &std::path::Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let fake = tmp.join("fake/bin");
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::create_dir_all(&fake).expect("mkdir");
    let mark = tmp.join("planted-rustfmt-ran");
    for tool in ["rustfmt", "rustc", "cargo"] {
        let path = fake.join(tool);
        std::fs::write(
            &path,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", mark.display()),
        )
        .expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let planted = dir.join("rust-toolchain.toml");
    std::fs::write(
        &planted,
        format!("[toolchain]\npath = '{}'\n", tmp.join("fake").display()),
    )
    .expect("write");
    (planted, mark)
}

#[cfg(unix)]
#[test]
fn rustfmt_is_staged_inside_the_repository_never_under_tmpdir() {
    if !std::process::Command::new("rustup")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        common::skipped(
            "rustfmt is not rustup's proxy here; a planted toolchain file cannot pick it",
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    let tmpdir = tmp.path().join("tmpdir");
    let (_, mark) = plant_toolchain(tmp.path(), &tmpdir);
    Test::in_dir(&repo)
        .env("TMPDIR", tmpdir.to_str().expect("a UTF-8 path"))
        .args(["worker", "billing", "CHARGE", "--namespace", "shipping"])
        .run();
    assert!(
        !mark.exists(),
        "a toolchain file under $TMPDIR chose the rustfmt that ran"
    );
    let left: Vec<_> = std::fs::read_dir(&tmpdir)
        .expect("readable")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["rust-toolchain.toml"], "staged under $TMPDIR");
    assert!(
        !repo.join(".scaffold/txn").exists(),
        "staging left in the repo"
    );
}

#[cfg(unix)]
#[test]
fn a_symlinked_transaction_folder_is_refused_and_not_followed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    std::fs::write(outside.join("journal.json"), "{}").expect("write");
    std::fs::create_dir_all(repo.join(".scaffold")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, repo.join(".scaffold/txn")).expect("link");
    Test::in_dir(&repo)
        .args(["check"])
        .status(2)
        .stderr_has("is a symlink")
        .run();
    Test::in_dir(&repo)
        .args(["worker", "maintenance", "REINDEX"])
        .status(2)
        .run();
    assert_eq!(
        std::fs::read_dir(&outside).expect("readable").count(),
        1,
        "wrote outside through the link"
    );
}

#[test]
fn a_journal_naming_a_path_outside_the_repository_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    let txn = repo.join(".scaffold/txn");
    std::fs::create_dir_all(txn.join("new")).expect("mkdir");
    std::fs::write(txn.join("new/0"), "planted\n").expect("write");
    let journal = serde_json::json!({
        "version": 1, "command": "worker x X", "pid": 1, "dirs": [],
        "entries": [{"path": "../escaped.txt", "staged": "new/0", "backup": null,
                     "before": null, "after": "0"}],
    });
    std::fs::write(txn.join("journal.json"), journal.to_string()).expect("write");
    Test::in_dir(&repo)
        .args(["check"])
        .status(2)
        .stderr_has("scaffold recover")
        .tree_unchanged()
        .run();
    Test::in_dir(&repo)
        .args(["recover"])
        .status(2)
        .stderr_has("cannot finish the interrupted `scaffold worker x X`")
        .run();
    assert!(
        !tmp.path().join("escaped.txt").exists(),
        "wrote outside the root"
    );
    assert!(
        txn.join("new/0").exists(),
        "the journal is left for a person to look at"
    );
}

#[test]
fn a_run_waits_for_the_lock_and_names_its_holder_then_times_out() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), true);
    std::fs::create_dir_all(repo.join(".scaffold")).expect("mkdir");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(repo.join(".scaffold/lock"))
        .expect("open");
    fs4::FileExt::lock(&file).expect("locks");
    std::io::Write::write_all(&mut &file, b"pid 4242: scaffold worker maintenance HELD\n")
        .expect("write");
    let before = std::fs::read(repo.join("om/src/shipping/kinds.rs")).expect("read");
    Test::in_dir(&repo)
        .env("SCAFFOLD_LOCK_TIMEOUT", "1")
        .args(["worker", "maintenance", "REINDEX"])
        .status(2)
        .stderr_has(
            "waiting for the repository lock, held by pid 4242: scaffold worker maintenance HELD",
        )
        .stderr_has("another scaffold run holds the repository lock")
        .run();
    assert_eq!(
        std::fs::read(repo.join("om/src/shipping/kinds.rs")).expect("read"),
        before
    );
    drop(file);
}

/// Nesting that mixes constructs passed every per-construct limit and overflowed the stack
/// (exit 134); one budget over all of them makes each a finding, in the checker and in the
/// generator's read-back of a file it edits.
#[test]
fn deep_nesting_of_any_mix_is_a_finding_never_a_stack_overflow() {
    let shapes = [
        format!(
            "pub fn f() -> bool {{ {}true{} }}\n",
            "!!!!!!!!!(".repeat(990),
            ")".repeat(990)
        ),
        format!(
            "pub fn f() {{ let mut x = 0; {}1; }}\n",
            "x = ".repeat(200_000)
        ),
        format!(
            "pub fn f() {{ if true {{}} {} }}\n",
            "else if true {} ".repeat(100_000)
        ),
        format!("pub fn f() {{ let _ = 1{}; }}\n", " as u8".repeat(200_000)),
    ];
    for body in shapes {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = common::init_repo(tmp.path(), true);
        let kinds = repo.join("om/src/shipping/kinds.rs");
        let mut text = std::fs::read_to_string(&kinds).expect("read");
        text.push_str(&body);
        std::fs::write(&kinds, &text).expect("write");
        let check = Test::in_dir(&repo)
            .args(["check", "--format", "json"])
            .status(1)
            .run();
        assert!(
            check.stdout.contains("source-unparsed"),
            "{}",
            &check.stdout[..200]
        );
        assert!(check.stdout.contains("nests deeper than scaffold reads"));
        let worker = Test::in_dir(&repo)
            .args(["worker", "maintenance", "REINDEX"])
            .status(2)
            .run();
        assert!(
            worker.stderr.contains("nests deeper than scaffold reads"),
            "{}",
            worker.stderr
        );
        assert_eq!(std::fs::read_to_string(&kinds).expect("read"), text);
    }
}

/// globset panicked (exit 101) on a glob of 256 nested braces; it is a manifest problem.
#[test]
fn a_glob_of_deeply_nested_braces_is_a_manifest_problem() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), false);
    let codemap = repo.join("agent/codemap.yml");
    let text = std::fs::read_to_string(&codemap).expect("read");
    let glob = format!("infra/{}b{}", "{a,".repeat(256), "}".repeat(256));
    assert!(text.contains("[\"infra/**\"]"));
    std::fs::write(
        &codemap,
        text.replace("[\"infra/**\"]", &format!("[\"{glob}\"]")),
    )
    .expect("write");
    let run = Test::in_dir(&repo)
        .args(["check", "--format", "json"])
        .status(2)
        .run();
    assert!(
        run.stdout.contains("nests `{…}` deeper than 16 levels"),
        "{}",
        run.stdout
    );
}

/// A 56 MB README of 3M headings took 12.6 s and 2.6 GB; a source past 32 MiB was read
/// whole. Both are findings now, read no further than their limit.
#[test]
fn oversized_readmes_and_sources_are_findings_read_no_further_than_their_limit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), false);
    let readme = repo.join("workers/maintenance/README.md");
    let mut text = std::fs::read_to_string(&readme).expect("read");
    text.push_str(&"# heading\n".repeat(200_000));
    std::fs::write(&readme, text).expect("write");
    let big = repo.join("workers/maintenance/src/big.rs");
    let line = format!("// {}\n", "x".repeat(1_000));
    std::fs::write(&big, line.repeat((33 << 20) / line.len())).expect("write");
    let main = repo.join("workers/maintenance/src/main.rs");
    let mut main_text = std::fs::read_to_string(&main).expect("read");
    main_text.push_str("mod big;\n");
    std::fs::write(&main, main_text).expect("write");
    let run = Test::in_dir(&repo)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let findings = v["findings"].as_array().expect("findings");
    let has = |rule: &str, path: &str, words: &str| {
        findings.iter().any(|f| {
            f["rule"] == rule
                && f["path"] == path
                && f["message"].as_str().is_some_and(|m| m.contains(words))
        })
    };
    assert!(
        has(
            "worker-readme-missing",
            "workers/maintenance/Cargo.toml",
            "cannot read"
        ),
        "{findings:?}"
    );
    assert!(
        has(
            "source-unparsed",
            "workers/maintenance/src/big.rs",
            "larger than 32 MiB"
        ),
        "{findings:?}"
    );
}

/// A planted journal must not plant a git hook, or move a file in from outside through a
/// staged symlink, when `scaffold recover` reads it.
#[cfg(unix)]
#[test]
fn a_planted_journal_cannot_write_a_git_hook_or_pull_a_file_in_through_a_link() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(tmp.path(), false);
    let txn = repo.join(".scaffold/txn");
    let outside = tmp.path().join("outside.txt");
    std::fs::write(&outside, "someone else's\n").expect("write");
    let cases = [
        (
            ".git/hooks/pre-commit",
            false,
            "is not a file scaffold generates",
        ),
        ("planted.txt", true, "symlink; scaffold reads"),
    ];
    for (path, staged_link, says) in cases {
        std::fs::create_dir_all(txn.join("new")).expect("mkdir");
        let staged = txn.join("new/0");
        if staged_link {
            std::os::unix::fs::symlink(&outside, &staged).expect("link");
        } else {
            std::fs::write(&staged, "#!/bin/sh\necho pwned\n").expect("write");
        }
        let journal = serde_json::json!({
            "version": 1, "command": "worker x X", "pid": 1, "dirs": [],
            "entries": [{"path": path, "staged": "new/0", "backup": null,
                         "before": null, "after": "0"}],
        });
        std::fs::write(txn.join("journal.json"), journal.to_string()).expect("write");
        Test::in_dir(&repo)
            .args(["recover"])
            .status(2)
            .stderr_has(says)
            .run();
        assert!(!repo.join(path).exists(), "{path} was written");
        assert!(outside.exists(), "the outside file was moved");
        std::fs::remove_dir_all(&txn).expect("clean");
    }
}

/// `init` into a folder under `/tmp`: rustup would take a `rust-toolchain.toml` another
/// user planted above the new repository. scaffold does not run rustfmt then, and says so.
#[cfg(unix)]
#[test]
fn init_does_not_run_a_rustfmt_chosen_by_another_users_toolchain_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let parent = tmp.path().join("shared");
    let (planted, mark) = plant_toolchain(tmp.path(), &parent);
    // Another user's file: only root can make one here.
    if std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).is_err() {
        common::skipped("cannot give the planted file to another user (not root)");
        return;
    }
    let target = parent.join("acme");
    let out = Test::in_dir(tmp.path())
        .args(["init", target.to_str().expect("a UTF-8 temp path")])
        .run();
    let stdout = out.stdout;
    assert!(
        !mark.exists(),
        "the planted toolchain chose the rustfmt that ran"
    );
    assert!(stdout.contains("rustfmt was not run"), "{stdout}");
    assert!(stdout.contains("belongs to another user"), "{stdout}");
}

/// The generator starts one rustfmt per command, over the staged plan (issue 37: a
/// `let path = …` in a settings test sent every file down the one-by-one path, 54
/// processes for `init` and 9 for `worker`). A logging `rustfmt` first on PATH counts
/// them and hands each call to the real one.
#[cfg(unix)]
#[test]
fn one_rustfmt_process_per_generator_command() {
    use std::os::unix::fs::PermissionsExt;
    let Some(real) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("rustfmt"))
            .find(|p| p.is_file())
    }) else {
        common::skipped("no rustfmt on PATH; nothing to count");
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let log = tmp.path().join("rustfmt.log");
    let wrapper = bin.join("rustfmt");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho call >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .expect("write");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let calls = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let path = path.into_string().expect("a UTF-8 PATH");
    let run = |dir: &std::path::Path, args: &[&str]| {
        Test::in_dir(dir).env("PATH", &path).args(args).run();
    };
    run(tmp.path(), &["init", "r", "--name", "acme"]);
    assert_eq!(calls(), 1, "init");
    let repo = tmp.path().join("r");
    run(&repo, &["namespace", "shipping"]);
    assert_eq!(calls(), 2, "namespace");
    run(&repo, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(calls(), 3, "worker");
}
