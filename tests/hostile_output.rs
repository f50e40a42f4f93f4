//! Fail closed, part 2, item 7: raw terminal escapes and bidirectional controls never
//! reach the terminal. Gate names and commands from the gate matrix (an OSC title and a
//! screen clear), a dedupe key in `scaffold queue show`, U+202E in a file name: escaped in
//! every human and GitHub line, and written as `\uXXXX` in JSON (the same value).

use crate::common;

use common::{Test, copy_fixture};

/// What must never be printed raw: ESC, BEL, a right-to-left override, a C1 CSI.
const RAW: [&str; 4] = ["\u{1b}", "\u{7}", "\u{202e}", "\u{9b}"];

/// An OSC title, a screen clear and a right-to-left override.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}\u{9b}";

fn never_raw(t: Test) -> common::Run {
    RAW.iter().fold(t, |t, raw| t.never_prints(raw)).run()
}

#[test]
fn gate_names_and_commands_are_escaped() {
    let repo = copy_fixture("clean");
    let name = format!("build{HOSTILE}");
    // The same characters as YAML escapes (the file itself holds none raw).
    let yaml = r"\e]0;pwned\a\e[2J\u202E\x9B";
    std::fs::write(
        repo.path().join("agent/manifests/gate-matrix.yml"),
        format!(
            "version: 1\ngates:\n  \"build{yaml}\": {{run: \"cargo check -p {{package}} {yaml}\", evidence: build}}\nrules:\n  - when: {{paths: [\"workers/**\"]}}\n    require: [\"build{yaml}\"]\n"
        ),
    )
    .expect("write");
    let changed = "workers/maintenance/src/main.rs";
    never_raw(
        Test::in_dir(repo.path())
            .args(["gates", changed])
            .stdout_has("build\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{202e}\\u{9b}"),
    );
    let run = never_raw(Test::in_dir(repo.path()).args(["gates", changed, "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["gates"][0]["gate"], name.as_str(), "{}", run.stdout);
}

#[test]
fn a_dedupe_key_is_escaped_in_queue_show() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = format!("sqlite://{}/q.db", tmp.path().display());
    Test::in_dir(tmp.path())
        .args(["queue", "migrate", "--database", &db])
        .run();
    let key = format!("key{HOSTILE}");
    never_raw(Test::in_dir(tmp.path()).args([
        "queue",
        "enqueue",
        "SWEEP",
        "--database",
        &db,
        "--dedupe-key",
        &key,
        "--payload",
        &serde_json::json!({ "note": HOSTILE }).to_string(),
    ]));
    never_raw(
        Test::in_dir(tmp.path())
            .args(["queue", "show", "1", "--database", &db])
            .stdout_has("key\\u{1b}]0;pwned"),
    );
    for args in [&["show", "1"][..], &["list"]] {
        let mut all = vec!["queue"];
        all.extend_from_slice(args);
        all.extend(["--database", &db, "--format", "json"]);
        let run = never_raw(Test::in_dir(tmp.path()).args(all));
        assert!(run.stdout.contains("\\u202e"), "{}", run.stdout);
        let _: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    }
}

/// A right-to-left override and an escape in a file's name, in every output format of the
/// check, and in a manifest error.
#[test]
fn bidi_and_escapes_in_names_are_escaped_in_every_format() {
    let repo = copy_fixture("clean");
    let src = repo.path().join("workers/maintenance/src");
    for name in ["ev\u{202e}lis.rs", "x\u{1b}[2J.rs"] {
        std::os::unix::fs::symlink("main.rs", src.join(name)).expect("link");
    }
    for format in ["human", "json", "sarif", "github"] {
        let run = never_raw(
            Test::in_dir(repo.path())
                .args(["check", "--format", format])
                .status(1),
        );
        assert!(run.stdout.contains("202e"), "{format}: {}", run.stdout);
    }
    let repo = copy_fixture("clean");
    let codemap = repo.path().join("agent/codemap.yml");
    let text = std::fs::read_to_string(&codemap).expect("read");
    std::fs::write(&codemap, format!("{text}\"key{HOSTILE}\": 1\n")).expect("write");
    for format in ["human", "json"] {
        never_raw(
            Test::in_dir(repo.path())
                .args(["check", "--format", format])
                .status(2),
        );
    }
}
