//! Scenarios in temporary git repositories: change sets, ownership, gates, baseline, hook.

use crate::common;

use std::path::Path;

use crate::common::Test;
use common::{copy_fixture, git};

fn commit_all(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn rules_of(v: &serde_json::Value) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().expect("rule").to_owned(),
                f["path"].as_str().expect("path").to_owned(),
            )
        })
        .collect()
}

#[test]
fn staged_reports_only_findings_in_what_changed() {
    let repo = copy_fixture("rules/import-forbidden");
    commit_all(repo.path());
    Test::in_dir(repo.path())
        .args(["check", "--staged", "--format", "json"])
        .run();
    let test_file = repo.path().join("workers/maintenance/tests/dns.rs");
    std::fs::write(
        &test_file,
        "#[test]\nfn resolves() {\n    infra::resolve();\n    infra::resolve();\n}\n",
    )
    .expect("write");
    git(repo.path(), &["add", "-A"]);
    let r = Test::in_dir(repo.path())
        .args(["check", "--staged", "--format", "json"])
        .status(1)
        .run();
    let found = rules_of(&json(&r.stdout));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(
        |(rule, path)| rule == "import-forbidden" && path == "workers/maintenance/tests/dns.rs"
    ));
    // --since sees the same change unstaged.
    git(repo.path(), &["reset", "-q"]);
    let since = Test::in_dir(repo.path())
        .args(["check", "--since", "HEAD", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(rules_of(&json(&since.stdout)), found);
    // A change to the codemap may change any finding: everything is reported.
    let codemap = repo.path().join("agent/codemap.yml");
    let text = std::fs::read_to_string(&codemap).expect("codemap") + "# touched\n";
    std::fs::write(&codemap, text).expect("write");
    let all = Test::in_dir(repo.path())
        .args(["check", "--since", "HEAD", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(rules_of(&json(&all.stdout)).len(), 9);
}

#[test]
fn ownership_needs_a_known_agent_and_a_change_set() {
    let repo = copy_fixture("rules/ownership-forbidden");
    commit_all(repo.path());
    let r = Test::in_dir(repo.path())
        .args(["check", "--staged", "--as", "ops-agent"])
        .status(2)
        .run();
    assert!(
        r.stderr.contains("unknown agent `ops-agent`") && r.stderr.contains("worker-agent"),
        "{}",
        r.stderr
    );
    let r = Test::in_dir(repo.path())
        .args(["check", "--as", "worker-agent"])
        .status(2)
        .run();
    assert!(r.stderr.contains("--as needs a change set"), "{}", r.stderr);
    Test::in_dir(repo.path())
        .args(["check", "--since", "no-such-rev"])
        .status(2)
        .run();
    let plain = tempfile::tempdir().expect("tmp");
    common::copy_dir(&common::fixture("clean"), plain.path());
    Test::in_dir(plain.path())
        .args(["check", "--staged"])
        .status(2)
        .run();
}

#[test]
fn renames_count_on_both_sides_and_deletions_count() {
    let repo = copy_fixture("rules/ownership-forbidden");
    commit_all(repo.path());
    git(
        repo.path(),
        &[
            "mv",
            "infra/dns/src/extra.rs",
            "workers/maintenance/src/extra.rs",
        ],
    );
    git(repo.path(), &["rm", "-q", "om/src/lib.rs"]);
    let r = Test::in_dir(repo.path())
        .args([
            "check",
            "--staged",
            "--as",
            "worker-agent",
            "--format",
            "json",
        ])
        .status(1)
        .run();
    let found = rules_of(&json(&r.stdout));
    assert!(
        found.contains(&(
            "ownership-forbidden".into(),
            "infra/dns/src/extra.rs".into()
        )),
        "{found:?}"
    );
    assert!(
        found.contains(&("ownership-outside-writable".into(), "om/src/lib.rs".into())),
        "{found:?}"
    );
    assert!(
        !found
            .iter()
            .any(|(_, p)| p == "workers/maintenance/src/extra.rs"),
        "{found:?}"
    );
}

#[test]
fn gates_resolve_package_and_dedupe() {
    let r = Test::in_dir(&common::fixture("clean"))
        .args([
            "gates",
            "workers/maintenance/README.md",
            "workers/maintenance/src/main.rs",
            "services/billing/src/lib.rs",
            "--format",
            "json",
        ])
        .run();
    let expected = r#"{"gates":[{"gate":"worker-build","command":["cargo","check","-p","acme-maintenance"],"triggered_by":["workers/maintenance/README.md","workers/maintenance/src/main.rs"]},{"gate":"worker-test","command":["cargo","test","-p","acme-maintenance"],"triggered_by":["workers/maintenance/README.md","workers/maintenance/src/main.rs"]},{"gate":"boundary","command":["scaffold","check"],"triggered_by":["workers/maintenance/README.md","workers/maintenance/src/main.rs"]}]}"#;
    assert_eq!(r.stdout.trim(), expected);
    let none = Test::in_dir(&common::fixture("clean"))
        .args(["gates", "services/billing/src/lib.rs"])
        .status(0)
        .run();
    assert_eq!(none.stdout, "no gates required for these changes\n");
}

#[test]
fn gates_from_a_change_set_and_run_stops_at_the_first_failure() {
    let repo = copy_fixture("clean");
    std::fs::write(
        repo.path().join("agent/manifests/gate-matrix.yml"),
        "version: 1\ngates:\n  first: {run: \"true\"}\n  broken: {run: \"false\"}\n  never: {run: \"touch never-ran\"}\nrules:\n  - when: {paths: [\"workers/**\"]}\n    require: [first, broken, never]\n",
    )
    .expect("write");
    commit_all(repo.path());
    std::fs::write(
        repo.path().join("workers/maintenance/README.md"),
        "# changed\n",
    )
    .expect("write");
    git(repo.path(), &["add", "-A"]);
    let listed = Test::in_dir(repo.path())
        .args(["gates", "--staged", "--format", "json"])
        .status(0)
        .run();
    let v = json(&listed.stdout);
    let names: Vec<&str> = v["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .map(|g| g["gate"].as_str().expect("gate"))
        .collect();
    assert_eq!(names, ["first", "broken", "never"]);
    let r = Test::in_dir(repo.path())
        .args(["gates", "--staged", "--run"])
        .status(1)
        .run();
    assert!(
        r.stdout.contains("==> gate first: true") && r.stdout.contains("==> gate broken: false"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("gate `broken` failed"), "{}", r.stderr);
    assert!(
        !repo.path().join("never-ran").exists(),
        "a gate after the failure ran"
    );
}

#[test]
fn baseline_adopt_then_new_finding_fails_then_fixed_finding_is_stale() {
    let repo = copy_fixture("rules/import-forbidden");
    let w = Test::in_dir(repo.path())
        .args(["check", "--write-baseline"])
        .run();
    assert!(w.stdout.contains("8 entries"), "{}", w.stdout);
    let adopted = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .run();
    assert_eq!(json(&adopted.stdout)["summary"]["baselined"], 8);

    // Moving code down a line keeps it baselined: fingerprints carry no line numbers.
    let main = repo.path().join("workers/maintenance/src/main.rs");
    let text = std::fs::read_to_string(&main).expect("main.rs");
    std::fs::write(&main, format!("// a new first line\n{text}")).expect("write");
    Test::in_dir(repo.path()).args(["check"]).run();

    // A new finding fails.
    let lib = repo.path().join("workers/maintenance/src/platform/dns.rs");
    let dns = std::fs::read_to_string(&lib).expect("dns.rs");
    std::fs::write(
        &lib,
        format!("{dns}\npub fn again() {{\n    resolver::resolve();\n    infra::resolve();\n}}\n"),
    )
    .expect("write");
    let new = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(json(&new.stdout)["summary"]["errors"], 2);
    // Under CI the baseline may not grow.
    Test::in_dir(repo.path())
        .args(["check", "--write-baseline"])
        .env("CI", "true")
        .status(2)
        .stderr_has("refusing to add 2 entries")
        .run();
    std::fs::write(&lib, &dns).expect("restore");

    // A fixed finding leaves a stale entry: a warning, an error under CI.
    std::fs::remove_file(repo.path().join("workers/maintenance/tests/dns.rs")).expect("rm");
    let stale = Test::in_dir(repo.path())
        .args(["check", "--format", "json"])
        .run();
    assert_eq!(
        rules_of(&json(&stale.stdout)),
        [("baseline-stale".to_owned(), "agent/baseline.yml".to_owned())]
    );
    Test::in_dir(repo.path())
        .args(["check"])
        .env("CI", "true")
        .status(1)
        .run();
    // Shrinking is allowed under CI.
    Test::in_dir(repo.path())
        .args(["check", "--write-baseline"])
        .env("CI", "true")
        .run();
    Test::in_dir(repo.path()).args(["check"]).run();
}

#[test]
fn hook_install_writes_ours_and_refuses_a_foreign_hook() {
    let repo = copy_fixture("clean");
    commit_all(repo.path());
    Test::in_dir(repo.path()).args(["hook", "install"]).run();
    let hook = repo.path().join(".git/hooks/pre-commit");
    let text = std::fs::read_to_string(&hook).expect("hook written");
    assert!(
        text.starts_with("#!/bin/sh\n") && text.contains("exec scaffold check --staged"),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&hook).expect("meta").permissions().mode() & 0o111,
            0o111
        );
    }
    // Replacing our own hook is fine.
    Test::in_dir(repo.path()).args(["hook", "install"]).run();
    std::fs::write(&hook, "#!/bin/sh\nmake lint\n").expect("write");
    let refused = Test::in_dir(repo.path())
        .args(["hook", "install"])
        .status(2)
        .run();
    assert!(
        refused.stderr.contains("was not written by scaffold"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&hook).expect("hook"),
        "#!/bin/sh\nmake lint\n"
    );
    Test::in_dir(repo.path())
        .args(["hook", "install", "--force"])
        .run();
    assert!(
        std::fs::read_to_string(&hook)
            .expect("hook")
            .contains("scaffold check --staged")
    );
}

#[test]
fn hook_in_a_subdirectory_changes_into_it() {
    let outer = tempfile::tempdir().expect("tmp");
    common::copy_dir(&common::fixture("clean"), &outer.path().join("platform"));
    commit_all(outer.path());
    Test::in_dir(&outer.path().join("platform"))
        .args(["hook", "install"])
        .run();
    let text = std::fs::read_to_string(outer.path().join(".git/hooks/pre-commit")).expect("hook");
    assert!(
        text.contains("exec scaffold -C 'platform' check --staged"),
        "{text}"
    );
}

/// A file no agent may write is a finding wherever the check runs, and only in the change
/// set with `--staged`; an ownership finding names the path and never shows the file
/// (it may be a `.env` nobody ignored).
#[test]
fn a_file_no_agent_may_write_is_found_and_its_content_never_shown() {
    let repo = copy_fixture("rules/file-unowned");
    commit_all(repo.path());
    let whole = json(
        &Test::in_dir(repo.path())
            .args(["check", "--format", "json"])
            .status(1)
            .run()
            .stdout,
    );
    assert_eq!(
        rules_of(&whole),
        [
            ("file-unowned".to_owned(), ".env.example".to_owned()),
            (
                "file-unowned".to_owned(),
                "services/billing/domain/generated/tables.json".to_owned()
            )
        ]
    );
    std::fs::write(repo.path().join(".env"), "ACME_TOKEN=hunter2-secret\n").expect("write");
    std::fs::write(repo.path().join("workers/maintenance/notes.txt"), "fine\n").expect("write");
    git(repo.path(), &["add", "-A"]);
    let staged = Test::in_dir(repo.path())
        .args(["check", "--staged", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(
        rules_of(&json(&staged.stdout)),
        [("file-unowned".to_owned(), ".env".to_owned())],
        "only the staged file no agent may write"
    );
    for args in [
        &["check", "--staged"][..],
        &["check", "--staged", "--as", "worker-agent"],
        &["check", "--staged", "--format", "sarif"],
        &["check", "--staged", "--format", "github"],
    ] {
        let r = Test::in_dir(repo.path()).args(args).status(1).run();
        assert!(r.stdout.contains(".env"), "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("hunter2"), "{args:?}: {}", r.stdout);
    }
    let owned = Test::in_dir(repo.path())
        .args([
            "check",
            "--staged",
            "--as",
            "worker-agent",
            "--format",
            "json",
        ])
        .status(1)
        .run();
    assert_eq!(
        rules_of(&json(&owned.stdout)),
        [
            ("file-unowned".to_owned(), ".env".to_owned()),
            ("ownership-outside-writable".to_owned(), ".env".to_owned())
        ]
    );
}

#[test]
fn schemas_and_completions() {
    for kind in ["codemap", "gate-matrix"] {
        let r = Test::in_dir(&common::fixture("clean"))
            .args(["schema", kind])
            .run();
        let v = json(&r.stdout);
        assert_eq!(v["type"], "object");
        assert_eq!(v["properties"]["version"]["const"], 1);
        assert_eq!(v["additionalProperties"], false);
    }
    let c = Test::in_dir(&common::fixture("clean"))
        .args(["completions", "bash"])
        .run();
    assert!(c.stdout.contains("scaffold") && c.stdout.contains("--staged"));
}

#[test]
fn staged_per_file_changes_take_the_fast_path_with_the_same_findings() {
    let repo = copy_fixture("rules/import-forbidden");
    commit_all(repo.path());
    let dns = repo.path().join("workers/maintenance/src/platform/dns.rs");
    let text = std::fs::read_to_string(&dns).expect("dns.rs");
    std::fs::write(
        &dns,
        format!("{text}\npub fn more() {{\n    infra::resolve();\n}}\n"),
    )
    .expect("write");
    git(repo.path(), &["add", "-A"]);
    let fast = Test::in_dir(repo.path())
        .args(["check", "--staged", "--format", "json"])
        .status(1)
        .run();
    let full = Test::in_dir(repo.path())
        .args(["check", "--since", "HEAD", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(fast.code, 1);
    let (fast, full) = (json(&fast.stdout), json(&full.stdout));
    assert_eq!(fast["findings"], full["findings"]);
    assert_eq!(rules_of(&fast).len(), 3, "{fast}");
    // Only the staged file and the manifests were read, not the whole tree.
    assert!(
        fast["summary"]["files_checked"].as_u64() < full["summary"]["files_checked"].as_u64(),
        "{fast} vs {full}"
    );

    // A staged file that could hold a handler is not per-file: the whole check runs.
    std::fs::write(
        &dns,
        format!("{text}\n// implements WorkHandler elsewhere\n"),
    )
    .expect("write");
    git(repo.path(), &["add", "-A"]);
    let whole = json(
        &Test::in_dir(repo.path())
            .args(["check", "--staged", "--format", "json"])
            .status(1)
            .run()
            .stdout,
    );
    assert_eq!(
        whole["summary"]["files_checked"],
        full["summary"]["files_checked"]
    );
}

/// The files git tracks in `dir`, as `pre-commit run --all-files` lists them.
fn tracked(dir: &Path) -> Vec<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "-z"])
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The pre-commit framework's calling convention, scripted: the hook this repository's
/// `.pre-commit-hooks.yaml` declares, its entry split as argv, then the files pre-commit
/// passes (`pass_filenames`). Under `--all-files` that is every tracked file, and a
/// repository with a finding fails; `check --staged`, the old entry, saw nothing staged
/// and passed.
#[test]
fn pre_commit_all_files_fails_on_a_finding() {
    #[derive(serde::Deserialize)]
    struct Hook {
        id: String,
        entry: String,
        pass_filenames: bool,
        always_run: bool,
    }
    let manifest = std::fs::read_to_string(common::repo_root().join(".pre-commit-hooks.yaml"))
        .expect("manifest");
    let hooks: Vec<Hook> = serde_saphyr::from_str(&manifest).expect("manifest parses");
    let hook = hooks
        .iter()
        .find(|h| h.id == "scaffold-check")
        .expect("the hook");
    assert!(hook.pass_filenames && hook.always_run);
    let entry = shlex::split(&hook.entry).expect("entry splits");
    assert_eq!(entry[0], "scaffold");
    let repo = copy_fixture("rules/import-forbidden");
    commit_all(repo.path());
    let call = |files: &[String]| {
        let mut args: Vec<&str> = entry[1..].iter().map(String::as_str).collect();
        args.extend(["--format", "json"]);
        args.extend(files.iter().map(String::as_str));
        Test::in_dir(repo.path()).args(&args).any_status().run()
    };
    // The old entry passes vacuously.
    Test::in_dir(repo.path()).args(["check", "--staged"]).run();

    // `pre-commit run --all-files`.
    let all = call(&tracked(repo.path()));
    assert_eq!(all.code, 1, "{}", all.stdout);
    let found = rules_of(&json(&all.stdout));
    assert!(found.contains(&(
        "import-forbidden".to_owned(),
        "workers/maintenance/src/main.rs".to_owned()
    )));

    // A commit of one clean file: per-file findings elsewhere are not its business.
    let clean = "workers/maintenance/Cargo.toml".to_owned();
    let one = call(std::slice::from_ref(&clean));
    assert_eq!(one.code, 0, "{}", one.stdout);
    // A commit of the file with the finding.
    let dirty = call(&["workers/maintenance/src/main.rs".to_owned()]);
    assert_eq!(dirty.code, 1, "{}", dirty.stdout);
    assert!(
        rules_of(&json(&dirty.stdout))
            .iter()
            .all(|(_, p)| p == "workers/maintenance/src/main.rs")
    );
    // `always_run` with no file: the whole check.
    assert_eq!(call(&[]).code, 1);
}

/// The real `pre-commit` (PyPI; `.ci/run` installs it) on a generated repository, with the
/// hook its `.pre-commit-config.yaml` declares: `pre-commit run --all-files` fails on a
/// committed finding, where the old `check --staged` entry passed with nothing staged.
#[test]
fn the_generated_pre_commit_config_fails_all_files_on_a_finding() {
    let found = std::process::Command::new("pre-commit")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::skipped(
            "the_generated_pre_commit_config_fails_all_files_on_a_finding: \
             pre-commit is not installed (pip install pre-commit)",
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = common::init_repo(tmp.path(), false);
    commit_all(&repo);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_scaffold"));
    let bin_dir = bin.parent().expect("the binary's folder");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let all_files = || {
        let out = std::process::Command::new("pre-commit")
            .args(["run", "--all-files"])
            .current_dir(&repo)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", tmp.path().join("pre-commit-home"))
            .env("NO_COLOR", "1")
            .env_remove("CI")
            .output()
            .expect("pre-commit runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = all_files();
    assert_eq!(code, Some(0), "a clean repository passes: {out}");
    git(&repo, &["rm", "-q", "workers/maintenance/README.md"]);
    git(&repo, &["commit", "-q", "-m", "a finding"]);
    let (code, out) = all_files();
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("workers/maintenance"), "{out}");
}
