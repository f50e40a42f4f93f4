//! Hostile input the reporter must survive (issue "Fail closed", item 8): a finding on a
//! 70,000-column line made miette's renderer panic (exit 101). It is now shown as a
//! clipped excerpt, in every output format, and the run exits with its findings' code.

mod common;

use common::{copy_fixture, run_in};

#[test]
fn a_finding_on_a_very_long_line_is_shown_clipped() {
    let repo = copy_fixture("clean");
    let long = format!("pub fn f() {{ let x = {} ; }} }}\n", "1 + ".repeat(20_000));
    std::fs::write(repo.path().join("workers/maintenance/src/long.rs"), long).expect("write");
    for format in ["human", "json", "sarif", "github"] {
        let run = run_in(repo.path(), &["check", "--format", format]);
        assert_eq!(run.code, 1, "{format}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("long.rs"), "{format}: {}", run.stdout);
        assert!(!run.stderr.contains("panicked"), "{format}: {}", run.stderr);
    }
    let run = run_in(repo.path(), &["check"]);
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
    let run = run_in(repo.path(), &["check"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(run.stdout.contains("clipped"), "{}", run.stdout);
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
    let before = std::fs::read_to_string(repo.join("om/src/root.rs")).expect("read");
    let run = run_in(&repo, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("café"), "{}", run.stderr);
    let after = std::fs::read_to_string(repo.join("om/src/root.rs")).expect("read");
    assert_eq!(before, after, "something was written");
}

/// Control characters in a file's name or content never reach the terminal raw: an ESC in
/// a name recoloured or moved the cursor, a newline forged a line of output.
#[cfg(unix)]
#[test]
fn control_characters_are_escaped_in_human_output() {
    let repo = copy_fixture("clean");
    let name = "workers/maintenance/src/bad\u{1b}[31m\nname.rs";
    std::fs::write(repo.path().join(name), "fn f( { \u{1b}[2J }\n").expect("write");
    let run = run_in(repo.path(), &["check"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        !run.stdout.contains('\u{1b}'),
        "a raw ESC was printed: {:?}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\\u{1b}[31m\\nname.rs"),
        "{}",
        run.stdout
    );
    for format in ["json", "sarif", "github"] {
        let run = run_in(repo.path(), &["check", "--format", format]);
        assert!(!run.stdout.contains('\u{1b}'), "{format}: {:?}", run.stdout);
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
    let run = run_in(repo.path(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
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
    let again = run_in(repo.path(), &["check", "--format", "json"]);
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
    let run = run_in(repo.path(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("evil.rs is a symlink"),
        "{}",
        run.stdout
    );
}
