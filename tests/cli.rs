//! The binary's contract: exit codes, repo discovery, determinism, formats, broken pipes.

use crate::common;

use std::io::Read;
use std::process::Stdio;

use crate::common::Test;
use common::{copy_fixture, fixture};

#[test]
fn clean_fixture_exits_0_and_a_violating_one_exits_1() {
    let clean = Test::in_dir(&fixture("clean")).args(["check"]).run();
    assert!(
        clean.stdout.starts_with("ok: no findings in"),
        "{}",
        clean.stdout
    );
    Test::in_dir(&fixture("rules/import-forbidden"))
        .args(["check"])
        .status(1)
        .run();
}

#[test]
fn json_is_byte_identical_across_runs_with_repo_relative_slash_paths() {
    let dir = fixture("rules/import-forbidden");
    let a = Test::in_dir(&dir)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let b = Test::in_dir(&dir)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_str(&a.stdout).expect("valid JSON");
    assert_eq!(v["version"], 1);
    assert_eq!(v["root"], ".");
    for f in v["findings"].as_array().expect("findings") {
        let path = f["path"].as_str().expect("path");
        assert!(
            !path.starts_with('/') && !path.contains('\\') && !path.contains(".."),
            "{path}"
        );
        assert!(
            f["line"].as_u64().expect("line") >= 1 && f["column"].as_u64().expect("column") >= 1
        );
    }
    assert_eq!(v["summary"]["suppressed"], 1);
}

#[test]
fn run_from_a_subdirectory_finds_the_root_and_names_it_relatively() {
    let dir = fixture("rules/import-forbidden/workers/maintenance/src");
    let r = Test::in_dir(&dir)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["root"], "../../..");
}

#[test]
fn unknown_codemap_key_exits_2_naming_file_line_col() {
    let tmp = copy_fixture("clean");
    let codemap = tmp.path().join("agent/codemap.yml");
    let text = std::fs::read_to_string(&codemap).expect("codemap");
    std::fs::write(&codemap, text.replace("agents:", "agentz:")).expect("write");
    let r = Test::in_dir(tmp.path()).args(["check"]).status(2).run();
    assert!(r.stdout.contains("unknown key `agentz`"), "{}", r.stdout);
    assert!(
        r.stdout.contains("[agent/codemap.yml:10:1]"),
        "{}",
        r.stdout
    );
    let j = Test::in_dir(tmp.path())
        .args(["check", "--format", "json"])
        .status(2)
        .run();
    let v: serde_json::Value = serde_json::from_str(&j.stdout).expect("valid JSON");
    assert_eq!(v["findings"][0]["rule"], "manifest-invalid");
    assert_eq!(
        (
            v["findings"][0]["line"].as_u64(),
            v["findings"][0]["column"].as_u64()
        ),
        (Some(10), Some(1))
    );
}

#[test]
fn missing_codemap_exits_2_saying_where_it_looked() {
    let tmp = tempfile::tempdir().expect("tmp");
    let r = Test::in_dir(tmp.path()).args(["check"]).status(2).run();
    assert!(r.stderr.contains("no agent/codemap.yml in"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&tmp.path().join("agent/codemap.yml").display().to_string()),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"));
}

#[test]
fn bad_working_directory_and_unknown_rule_exit_2() {
    Test::in_dir(std::path::Path::new("/nonexistent/scaffold"))
        .args(["check"])
        .status(2)
        .run();
    let r = Test::in_dir(&fixture("clean"))
        .args(["check", "--rule", "import-forbiden"])
        .status(2)
        .run();
    assert!(
        r.stderr.contains("did you mean `import-forbidden`"),
        "{}",
        r.stderr
    );
    Test::in_dir(&fixture("clean"))
        .args(["explain", "nope"])
        .status(2)
        .run();
    Test::in_dir(&fixture("clean"))
        .args(["rules", "--format", "sarif"])
        .status(2)
        .run();
    Test::in_dir(&fixture("clean"))
        .args(["check", "--no-such-flag"])
        .status(2)
        .run();
}

#[test]
fn rule_filter_runs_only_the_named_rules() {
    let r = Test::in_dir(&fixture("rules/import-forbidden"))
        .args(["check", "--rule", "gate-unknown", "--format", "json"])
        .run();
    // The suppression of dependency-forbidden is not reported as unused: that rule did not run.
    assert!(!r.stdout.contains("suppression-invalid"), "{}", r.stdout);
}

#[test]
fn policy_changes_severity_and_turns_rules_off() {
    let tmp = copy_fixture("rules/import-forbidden");
    let codemap = tmp.path().join("agent/codemap.yml");
    let mut text = std::fs::read_to_string(&codemap).expect("codemap");
    text.push_str("policy:\n  import-forbidden: warning\n  dependency-forbidden: off\n");
    std::fs::write(&codemap, text).expect("write");
    let r = Test::in_dir(tmp.path())
        .args(["check", "--format", "json"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["summary"]["errors"], 0);
    assert_eq!(v["summary"]["warnings"], 8);
}

#[test]
fn sarif_has_a_location_on_every_result_and_rules_with_help() {
    let repo = copy_fixture("rules/worker-role-unknown");
    let r = Test::in_dir(repo.path())
        .args(["check", "--format", "sarif"])
        .status(1)
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid SARIF JSON");
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert!(rules.iter().all(|r| {
        r["help"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("## Fix"))
    }));
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for res in results {
        let region = &res["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().expect("startLine") >= 1);
        let idx = res["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[idx]["id"], res["ruleId"]);
        // Relative to git's work tree: the fixture's folder in this repository comes first.
        let at = &res["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(at["uriBaseId"], "%SRCROOT%");
        let uri = at["uri"].as_str().expect("uri");
        assert!(uri.ends_with("/Cargo.toml"), "{uri}");
        assert!(res["partialFingerprints"]["scaffold/v1"].is_string());
        // What GitHub code scanning keys alerts on, and a region with its end.
        assert!(res["partialFingerprints"]["primaryLocationLineHash"].is_string());
        assert!(region["endLine"].as_u64() >= region["startLine"].as_u64());
        assert!(region["endColumn"].as_u64() > region["startColumn"].as_u64());
    }
    for rule in rules {
        let (id, name) = (rule["id"].as_str(), rule["name"].as_str());
        assert_ne!(id, name, "a name distinct from the id");
        assert!(
            name.is_some_and(|n| n.chars().next().is_some_and(char::is_uppercase)
                && n.chars().all(char::is_alphanumeric)),
            "PascalCase: {name:?}"
        );
        let short = rule["shortDescription"]["text"].as_str().expect("short");
        let full = rule["fullDescription"]["text"].as_str().expect("full");
        assert!(full.len() > short.len(), "{id:?}: {short:?} / {full:?}");
        let props = &rule["properties"];
        assert!(props["tags"].as_array().is_some_and(|t| !t.is_empty()));
        assert!(props["precision"].is_string());
        assert!(props["problem.severity"].is_string());
    }
    assert_eq!(run["automationDetails"]["id"], "scaffold/check/");
    assert!(run["originalUriBaseIds"]["%SRCROOT%"].is_object());
    assert!(
        !r.stdout.contains("scaffold.invalid"),
        "no placeholder links"
    );
}

#[test]
fn github_format_prints_annotations_and_a_summary() {
    let repo = copy_fixture("rules/import-undeclared");
    let r = Test::in_dir(repo.path())
        .args(["check", "--format", "github"])
        .run();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3);
    // Named from the checkout's root: this repository's fixture folder first (when the
    // tests run from a git work tree).
    let rest = lines[0]
        .strip_prefix("::warning file=fixtures/rules/import-undeclared/")
        .or_else(|| lines[0].strip_prefix("::warning file="))
        .unwrap_or_default();
    assert!(
        rest.starts_with("om/Cargo.toml,line=7,col=1,title=import-undeclared::"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[2], "scaffold check: 0 errors, 2 warnings in 9 files");
}

#[test]
fn colour_is_off_when_not_a_terminal_and_on_when_forced() {
    let repo = copy_fixture("rules/worker-readme-missing");
    let plain = Test::in_dir(repo.path())
        .args(["check"])
        .env_remove("NO_COLOR")
        .any_status()
        .run();
    assert!(!plain.stdout.contains('\u{1b}'));
    let forced = Test::in_dir(repo.path())
        .args(["check", "--color", "always"])
        .env_remove("NO_COLOR")
        .any_status()
        .run();
    assert!(forced.stdout.contains('\u{1b}'));
}

#[test]
fn a_closed_pipe_exits_quietly() {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("scaffold"))
        .arg("-C")
        .arg(fixture("rules/import-forbidden"))
        .arg("check")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// Regressions from review: an outside crate named like a workspace crate, a nested
/// package that is not a member, and a rename in `[workspace.dependencies]`.
#[test]
fn edges_follow_each_crates_own_dependencies() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    write(
        root,
        "agent/codemap.yml",
        "version: 1\nlayers:\n  workers: {paths: [\"workers/**\"], may_import: [], must_not_import: [infra]}\n  infra: {paths: [\"infra/**\"], may_import: []}\n",
    );
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"infra/*\", \"workers/*\"]\n[workspace.dependencies]\ncfgsvc = { package = \"config\", path = \"infra/config\" }\n",
    );
    write(
        root,
        "infra/config/Cargo.toml",
        "[package]\nname = \"config\"\nversion = \"0.1.0\"\n",
    );
    write(root, "infra/config/src/lib.rs", "pub fn x() {}\n");
    let readme = "# w\n\n## Idempotency\nEvery effect runs once per item.\n\n## Retry\nTransient errors retry with backoff.\n\n## Checkpoint\nProgress is checkpointed under the fence.\n\n## Recovery\nExpired leases return items to the queue.\n";
    // `config` from crates.io: not the workspace crate of that name.
    write(
        root,
        "workers/a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\n[package.metadata.scaffold]\nrole = \"maintenance\"\n[dependencies]\nconfig = \"0.14\"\n",
    );
    write(root, "workers/a/README.md", readme);
    write(
        root,
        "workers/a/src/main.rs",
        "use config::Config;\nfn main() {}\n",
    );
    // A cargo-fuzz package inside the worker is not a member: its files are not the worker's.
    write(
        root,
        "workers/a/fuzz/Cargo.toml",
        "[package]\nname = \"a-fuzz\"\nversion = \"0.0.0\"\n",
    );
    write(root, "workers/a/fuzz/fuzz_targets/t.rs", "fn broken( {\n");
    // The workspace-level rename is inherited.
    write(
        root,
        "workers/b/Cargo.toml",
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\n[package.metadata.scaffold]\nrole = \"maintenance\"\n[dependencies]\ncfgsvc = { workspace = true }\n",
    );
    write(root, "workers/b/README.md", readme);
    write(
        root,
        "workers/b/src/main.rs",
        "use cfgsvc::x;\nfn main() { x() }\n",
    );
    let r = Test::in_dir(root)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    let found: Vec<(String, String)> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().expect("rule").to_owned(),
                f["path"].as_str().expect("path").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "dependency-forbidden".to_owned(),
                "workers/b/Cargo.toml".to_owned()
            ),
            (
                "import-forbidden".to_owned(),
                "workers/b/src/main.rs".to_owned()
            ),
        ],
        "{}",
        r.stdout
    );
}

#[test]
fn write_baseline_refuses_a_partial_run() {
    let tmp = copy_fixture("rules/import-forbidden");
    let r = Test::in_dir(tmp.path())
        .args(["check", "--write-baseline", "--rule", "import-forbidden"])
        .status(2)
        .run();
    assert!(
        r.stderr.contains("records every finding of a full run"),
        "{}",
        r.stderr
    );
    assert!(!tmp.path().join("agent/baseline.yml").exists());
}

/// The SARIF of every fixture, and of a tree whose paths hold `#`, `%`, a space and
/// non-ASCII, validates against the official SARIF 2.1.0 schema (tests/sarif/) with its
/// formats checked (`uri-reference`), by Python's jsonschema (`.ci/run` installs it; the
/// test says SKIPPED without it).
/// `scaffold check --format sarif` of every fixture, and of a tree whose paths hold `#`,
/// `%`, a space and non-ASCII, written into `tmp`: the files.
fn sarif_of_every_fixture(tmp: &std::path::Path) -> Vec<std::path::PathBuf> {
    let fixtures: Vec<tempfile::TempDir> = common::fixtures()
        .iter()
        .map(|rel| copy_fixture(rel))
        .collect();
    assert!(fixtures.len() > 20, "{:?}", common::fixtures());
    let mut roots: Vec<std::path::PathBuf> =
        fixtures.iter().map(|t| t.path().to_path_buf()).collect();
    // Paths a URI must encode.
    let odd = common::copy_fixture("rules/import-forbidden");
    let src = odd.path().join("workers/maintenance/src");
    std::fs::write(
        src.join("we#ird 100% ü.rs"),
        "pub fn f() { infra::resolve(); }\n",
    )
    .expect("write");
    let main = std::fs::read_to_string(src.join("main.rs")).expect("main.rs");
    std::fs::write(
        src.join("main.rs"),
        format!("#[path = \"we#ird 100% ü.rs\"]\nmod weird;\n{main}"),
    )
    .expect("write");
    roots.push(odd.path().to_path_buf());
    let mut files = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let r = Test::in_dir(root)
            .args(["check", "--format", "sarif"])
            .any_status()
            .run();
        // 2: a manifest problem, reported as findings too.
        assert!(
            matches!(r.code, 0..=2) && !r.stdout.is_empty(),
            "{}: {}",
            root.display(),
            r.stderr
        );
        let file = tmp.join(format!("{i}.sarif"));
        std::fs::write(&file, &r.stdout).expect("write");
        files.push(file);
    }
    let odd_out = std::fs::read_to_string(files.last().expect("one")).expect("read");
    assert!(
        odd_out.contains("we%23ird%20100%25%20%C3%BC.rs"),
        "the odd path, percent-encoded: {odd_out}"
    );
    files
}

#[test]
fn sarif_of_every_fixture_validates_against_the_official_schema() {
    let tmp = tempfile::tempdir().expect("tmp");
    let files = sarif_of_every_fixture(tmp.path());
    let v = std::process::Command::new("python3")
        .arg(common::repo_root().join("tests/sarif/validate.py"))
        .arg(common::repo_root().join("tests/sarif/sarif-schema-2.1.0.json"))
        .args(&files)
        .output();
    let v = match v {
        Ok(v) if v.status.code() != Some(3) => v,
        other => {
            common::skipped(&format!(
                "sarif_of_every_fixture_validates_against_the_official_schema: \
                 python3 with jsonschema and rfc3986-validator is not available ({:?})",
                other.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            ));
            return;
        }
    };
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// The same SARIF passes Microsoft's SARIF multitool with GitHub's ingestion rules
/// (`validate --rule-kind=Gh;Sarif`): no error and no warning. The one warning allowed is
/// SARIF2005 (no `informationUri`), and only in a build whose Cargo.toml names no
/// `repository` to link to. `.ci/run` installs the multitool from npm and names it in
/// `SCAFFOLD_SARIF_MULTITOOL`; without it the test says SKIPPED.
#[test]
fn sarif_of_every_fixture_passes_githubs_ingestion_rules() {
    let Some(tool) = std::env::var_os("SCAFFOLD_SARIF_MULTITOOL")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_file())
    else {
        common::skipped(
            "sarif_of_every_fixture_passes_githubs_ingestion_rules: \
             SCAFFOLD_SARIF_MULTITOOL names no SARIF multitool (.ci/run installs it from npm)",
        );
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let files = sarif_of_every_fixture(tmp.path());
    // What the multitool says of some SARIF files: each (level, rule) it reports.
    let validate = |name: &str, files: &[std::path::PathBuf]| -> Vec<(String, String)> {
        let log = tmp.path().join(name);
        let run = std::process::Command::new(&tool)
            .args(["validate", "--rule-kind=Gh;Sarif", "-o"])
            .arg(&log)
            .args(files)
            .output()
            .expect("the multitool runs");
        let said = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{said}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&log).expect("its log")).expect("JSON");
        v["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .flat_map(|run| run["results"].as_array().into_iter().flatten())
            .map(|r| {
                (
                    r["level"].as_str().unwrap_or("warning").to_owned(),
                    r["ruleId"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    // A control: a result without a location is what GitHub refuses (GH1015), so the
    // GitHub rules ran.
    let broken = tmp.path().join("broken.sarif");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).expect("read")).expect("JSON");
    if v["runs"][0]["results"].as_array().is_none_or(Vec::is_empty) {
        v = serde_json::from_str(
            &std::fs::read_to_string(files.last().expect("one")).expect("read"),
        )
        .expect("JSON");
    }
    v["runs"][0]["results"][0]["locations"] = serde_json::json!([]);
    std::fs::write(&broken, v.to_string()).expect("write");
    let control = validate("control.sarif", &[broken]);
    assert!(
        control
            .iter()
            .any(|(l, r)| l == "error" && r.starts_with("GH")),
        "GitHub's rules did not run: {control:?}"
    );
    let allowed = |rule: &str| rule == "SARIF2005" && env!("CARGO_PKG_REPOSITORY").is_empty();
    let problems: Vec<(String, String)> = validate("validation.sarif", &files)
        .into_iter()
        .filter(|(level, rule)| matches!(level.as_str(), "error" | "warning") && !allowed(rule))
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
}

/// The root help's line for `queue` names every queue subcommand (it named 7 of 12), and
/// `namespace`'s says it creates the service too.
#[test]
fn the_root_help_names_every_queue_subcommand_and_the_namespace_service() {
    let root = <scaffold::cli::Cli as clap::CommandFactory>::command();
    let queue = root
        .get_subcommands()
        .find(|c| c.get_name() == "queue")
        .expect("queue");
    let about = queue.get_about().expect("queue's about").to_string();
    let listed: Vec<&str> = about
        .split_once(':')
        .expect("a list after the colon")
        .1
        .split([',', '.'])
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    let mut subcommands: Vec<&str> = queue
        .get_subcommands()
        .map(clap::Command::get_name)
        .filter(|n| *n != "help")
        .collect();
    subcommands.sort_unstable();
    let mut named = listed.clone();
    named.sort_unstable();
    assert_eq!(named, subcommands, "{about}");
    let namespace = root
        .get_subcommands()
        .find(|c| c.get_name() == "namespace")
        .expect("namespace");
    let about = namespace.get_about().expect("about").to_string();
    assert!(about.contains("services/<ns>/"), "{about}");
}

/// Each command offers the formats it has, in its help as in its parser: `check` four,
/// `schema` and `completions` none, every other command human and json. (One global
/// `--format human|json|sarif|github` was offered by all of them, and `completions
/// --format sarif` exited 0 with a shell script.)
#[test]
fn each_command_offers_the_formats_it_has() {
    fn formats(cmd: &clap::Command) -> Vec<String> {
        cmd.get_arguments()
            .find(|a| a.get_id() == "format")
            .map(|a| {
                a.get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
    fn walk(cmd: &mut clap::Command, path: &str, seen: &mut Vec<(String, Vec<String>)>) {
        cmd.build();
        let leaves: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .filter(|n| n != "help")
            .collect();
        if leaves.is_empty() {
            seen.push((path.trim().to_owned(), formats(cmd)));
        }
        for name in leaves {
            let sub = cmd.find_subcommand_mut(&name).expect("subcommand");
            walk(sub, &format!("{path} {name}"), seen);
        }
    }
    let mut root = <scaffold::cli::Cli as clap::CommandFactory>::command();
    assert!(formats(&root).is_empty(), "no format at the root");
    let mut seen = Vec::new();
    walk(&mut root, "", &mut seen);
    assert!(seen.len() > 25, "{seen:?}");
    for (path, offered) in &seen {
        let expected: &[&str] = match path.as_str() {
            "check" => &["human", "json", "sarif", "github"],
            p if p.starts_with("schema") || p.starts_with("completions") => &[],
            _ => &["human", "json"],
        };
        assert_eq!(offered, expected, "{path}");
    }
    for args in [
        &["completions", "bash", "--format", "sarif"][..],
        &["completions", "bash", "--format", "human"],
        &["schema", "codemap", "--format", "github"],
        &["rules", "--format", "sarif"],
        &["queue", "status", "--format", "github"],
    ] {
        let r = Test::in_dir(&fixture("clean")).args(args).status(2).run();
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains("--format"), "{args:?}: {}", r.stderr);
    }
    Test::in_dir(&fixture("clean"))
        .args(["completions", "bash"])
        .run();
    let help = Test::in_dir(&fixture("clean"))
        .args(["completions", "--help"])
        .status(0)
        .run();
    assert!(!help.stdout.contains("--format"), "{}", help.stdout);
    let help = Test::in_dir(&fixture("clean"))
        .args(["rules", "--help"])
        .status(0)
        .run();
    assert!(
        help.stdout.contains("[possible values: human, json]"),
        "{}",
        help.stdout
    );
}
