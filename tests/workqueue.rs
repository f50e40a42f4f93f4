//! The work-queue rules (issue 7) beyond their per-rule fixtures: near-misses that must stay
//! silent, the runtime stamp round trip, and each rule's blind spots.

use crate::common;

use std::path::Path;

use common::{Test, copy_dir, copy_fixture, repo_root};
use scaffold::check::workqueue::stamp;
use scaffold::layout::runtime::runtime_stamp;
use scaffold::layout::tree_hash as sha256;

const WORKQUEUE_RULES: [&str; 12] = [
    "kind-unhandled",
    "kind-unregistered-handler",
    "kind-requires-mismatch",
    "kind-untested",
    "kind-duplicate",
    "lane-undeployed",
    "manager-enqueues",
    "handler-builds-context",
    "namespace-bare",
    "settings-undocumented",
    "worker-shell-exec",
    "runtime-drift",
];

fn findings(dir: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(extra);
    Test::in_dir(dir).args(&args).any_status().run().findings()
}

fn rules_of(found: &[serde_json::Value]) -> Vec<String> {
    found
        .iter()
        .map(|f| format!("{} {}:{}", f["rule"], f["path"], f["line"]))
        .collect()
}

/// `enqueue` in a test and in relays, `"sh"` as a plain string, handlers for kinds of
/// another namespace, consts re-exported and renamed, lanes served in all three places,
/// settings documented or skipped: a whole work-queue repo without a finding.
#[test]
fn the_near_miss_repository_has_no_finding() {
    let repo = copy_fixture("near-miss/workqueue");
    let found = findings(repo.path(), &[]);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));
}

/// Each near-miss is silent because the rule understood it, not because it saw nothing:
/// turning the near-miss into the real thing makes exactly that rule fire.
#[test]
fn near_misses_turned_real_fire() {
    let cases: [(&str, &str, &str, &str); 5] = [
        (
            "manager-enqueues",
            "services/shipping/src/relay.rs",
            "pub async fn relay(",
            "pub struct RelayManager;\nimpl RelayManager {\n    pub async fn relay_all(store: &scaffold_runtime::Store) {\n        let _ = store.enqueue(item()).await;\n    }\n}\npub async fn relay(",
        ),
        (
            "worker-shell-exec",
            "workers/maintenance/src/handlers/notify_shipment.rs",
            "let program = \"convert\";",
            "let program = \"sh\"; let _ = Command::new(program).arg(\"-c\");",
        ),
        (
            "kind-requires-mismatch",
            "workers/billing/src/handlers.rs",
            "&[CHARGE_PERMISSION]",
            "&[REINDEX_PERMISSION]",
        ),
        (
            "kind-untested",
            "workers/maintenance/tests/sweep.rs",
            "for _ in 0..2 {",
            "{",
        ),
        (
            "lane-undeployed",
            "scripts/dev.sh",
            "-- serve --lane bulk",
            "-- serve",
        ),
    ];
    for (rule, file, from, to) in cases {
        let tmp = copy_fixture("near-miss/workqueue");
        let path = tmp.path().join(file);
        let text = std::fs::read_to_string(&path).expect("fixture file");
        assert!(text.contains(from), "{rule}: {file} lacks {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
        let found = findings(tmp.path(), &[]);
        let rules: Vec<&str> = found.iter().filter_map(|f| f["rule"].as_str()).collect();
        assert_eq!(rules, [rule], "{rule}: {:#?}", rules_of(&found));
    }
}

/// `orchestration-unmapped` stays silent where it cannot know: a handler that maps names
/// without a `match` on them (a lookup table, a binding matched later), a spec file that
/// does not parse, and a repository made before `OrchestrationKindSpec` existed, whose
/// `retry-dead`-style arms have no spec to be held to.
#[test]
fn orchestration_unmapped_is_silent_where_it_cannot_know() {
    let handler = "workers/maintenance/src/handlers/orchestration.rs";
    let kinds = "om/src/work/kinds.rs";
    let edit = |dir: &Path, file: &str, from: &str, to: &str| {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).expect("fixture file");
        assert!(text.contains(from), "{file} lacks {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
    };
    let rule = ["--rule", "orchestration-unmapped"];

    // The arm's name fixed, the spec still unmapped: a match read through a binding.
    let tmp = copy_fixture("rules/orchestration-unmapped");
    edit(
        tmp.path(),
        handler,
        "match item.payload.orchestration.as_str() {",
        "let name = item.payload.orchestration.as_str();\n        match name {",
    );
    let found = findings(tmp.path(), &rule);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));

    // A spec file that does not parse: its side is unknown, the misspelt arm unreported.
    let tmp = copy_fixture("rules/orchestration-unmapped");
    std::fs::write(
        tmp.path().join("om/src/work/extra_kinds.rs"),
        "use scaffold_runtime::OrchestrationKindSpec;\npub const X: OrchestrationKindSpec = (",
    )
    .expect("write");
    edit(
        tmp.path(),
        "om/src/work/mod.rs",
        "",
        "pub mod extra_kinds;\n",
    );
    let found = findings(tmp.path(), &rule);
    let unmapped: Vec<String> = rules_of(&found)
        .into_iter()
        .filter(|r| r.contains("handlers/orchestration.rs"))
        .collect();
    assert!(unmapped.is_empty(), "{unmapped:#?}");

    // No OrchestrationKindSpec anywhere: a repository made before them.
    let tmp = copy_fixture("near-miss/workqueue");
    let path = tmp.path().join(kinds);
    let text = std::fs::read_to_string(&path).expect("kinds");
    let cut = text.find("/// A const name").expect("the specs");
    std::fs::write(
        &path,
        text[..cut].replace(
            "use scaffold_runtime::{OrchestrationKindSpec, WorkKindSpec};",
            "use scaffold_runtime::WorkKindSpec;",
        ),
    )
    .expect("write");
    let found = findings(tmp.path(), &[]);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));
}

#[test]
fn a_lane_served_only_in_terraform_names_the_missing_places() {
    let repo = copy_fixture("rules/lane-undeployed");
    let found = findings(repo.path(), &[]);
    assert_eq!(found.len(), 1, "{:#?}", rules_of(&found));
    let message = found[0]["message"].as_str().expect("message");
    assert!(message.contains("scripts/dev.sh"), "{message}");
    assert!(message.contains("docker-compose.full.yml"), "{message}");
    assert!(!message.contains("terraform"), "{message}");
}

/// A Terraform file hcl-edit cannot parse is a finding where it breaks, not a place that
/// silently serves nothing (or everything).
#[test]
fn terraform_that_does_not_parse_is_a_finding_at_the_break() {
    let tmp = copy_fixture("near-miss/workqueue");
    let tf = tmp
        .path()
        .join("deployment/terraform/modules/environment/main.tf");
    let text = std::fs::read_to_string(&tf).expect("main.tf");
    std::fs::write(&tf, format!("{text}\nmodule \"broken\" {{\n  lane = \n")).expect("write");
    let found = findings(tmp.path(), &[]);
    assert_eq!(found.len(), 1, "{:#?}", rules_of(&found));
    assert_eq!(found[0]["rule"], "lane-undeployed");
    assert_eq!(
        found[0]["path"],
        "deployment/terraform/modules/environment/main.tf"
    );
    let line = found[0]["line"].as_u64().expect("line");
    assert!(line as usize > text.lines().count(), "{}", found[0]);
    let message = found[0]["message"].as_str().expect("message");
    assert!(message.contains("does not parse as HCL"), "{message}");
}

/// A compose file that is not YAML is a finding where it breaks: which lanes it runs was
/// unknown and the check said nothing about it.
#[test]
fn compose_that_does_not_parse_is_a_finding_at_the_break() {
    let tmp = copy_fixture("near-miss/workqueue");
    let compose = tmp.path().join("deployment/local/docker-compose.full.yml");
    let text = std::fs::read_to_string(&compose).expect("compose");
    std::fs::write(&compose, format!("{text}\nservices: [\n")).expect("write");
    let found = findings(tmp.path(), &[]);
    assert_eq!(found.len(), 1, "{:#?}", rules_of(&found));
    assert_eq!(found[0]["rule"], "lane-undeployed");
    assert_eq!(found[0]["path"], "deployment/local/docker-compose.full.yml");
    let message = found[0]["message"].as_str().expect("message");
    assert!(message.contains("does not parse as YAML"), "{message}");
}

#[test]
fn rules_can_be_selected_and_turned_off() {
    let tmp = copy_fixture("rules/worker-shell-exec");
    let only = findings(tmp.path(), &["--rule", "kind-unhandled"]);
    assert!(only.is_empty(), "{:#?}", rules_of(&only));
    let codemap = tmp.path().join("agent/codemap.yml");
    let text = std::fs::read_to_string(&codemap).expect("codemap");
    std::fs::write(
        &codemap,
        format!("{text}policy:\n  worker-shell-exec: off\n"),
    )
    .expect("write");
    let off = findings(tmp.path(), &[]);
    assert!(off.is_empty(), "{:#?}", rules_of(&off));
}

/// A repository whose `platform/runtime` is exactly the runtime this binary embeds, with
/// the stamp `scaffold init` writes, is not drift: build.rs and the checker hash alike.
#[test]
fn the_embedded_runtime_vendored_with_its_stamp_is_no_drift() {
    let (version, hash) = runtime_stamp();
    assert!(
        !version.is_empty() && hash.starts_with("sha256:"),
        "{version} {hash}"
    );
    let tmp = copy_fixture("near-miss/workqueue");
    let vendored = tmp.path().join("platform/runtime");
    for part in ["src", "migrations"] {
        copy_dir(
            &repo_root().join("runtime").join(part),
            &vendored.join(part),
        );
    }
    // The manifest as init vendors it (without the runtime's dev-dependencies).
    let manifest = scaffold::generate::templates::runtime_files()
        .iter()
        .find(|(p, _)| *p == "Cargo.toml")
        .map(|(_, b)| *b)
        .expect("the embedded manifest");
    assert!(!String::from_utf8_lossy(manifest).contains("[dev-dependencies]"));
    std::fs::write(vendored.join("Cargo.toml"), manifest).expect("write Cargo.toml");
    std::fs::write(
        vendored.join(".scaffold-stamp"),
        stamp::render(version, hash),
    )
    .expect("stamp");
    let found = findings(tmp.path(), &[]);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));

    // Edited by hand after stamping: drift, at the stamp's hash.
    let lib = vendored.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).expect("lib.rs");
    std::fs::write(&lib, format!("{text}\n// a local patch\n")).expect("write");
    let found = findings(tmp.path(), &[]);
    assert_eq!(found.len(), 1, "{:#?}", rules_of(&found));
    assert_eq!(found[0]["rule"], "runtime-drift");
    assert_eq!(found[0]["line"], 3);
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("edited since it was stamped")),
        "{}",
        found[0]["message"]
    );

    // No stamp at all.
    std::fs::remove_file(vendored.join(".scaffold-stamp")).expect("rm stamp");
    let found = findings(tmp.path(), &[]);
    assert_eq!(found.len(), 1, "{:#?}", rules_of(&found));
    assert_eq!(found[0]["path"], "platform/runtime/Cargo.toml");
}

#[test]
fn the_tree_hash_is_the_documented_one() {
    // path, NUL, 8-byte big-endian length, bytes; sorted by path; CRLF as LF.
    let mut files = vec![
        ("src/lib.rs".to_owned(), b"x\r\n".to_vec()),
        ("Cargo.toml".to_owned(), b"[package]\n".to_vec()),
    ];
    use sha2::Digest;
    let mut manual = sha2::Sha256::new();
    for (p, b) in [
        ("Cargo.toml", &b"[package]\n"[..]),
        ("src/lib.rs", &b"x\n"[..]),
    ] {
        manual.update(p.as_bytes());
        manual.update([0]);
        manual.update((b.len() as u64).to_be_bytes());
        manual.update(b);
    }
    let hex: String = manual
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(sha256::tree_hash(&mut files), format!("sha256:{hex}"));
}

/// Shapes the checker does not read stay silent (documented blind spots), never guessed.
#[test]
fn blind_spots_stay_silent() {
    // A KIND computed by a function: the handler could handle any kind, so no kind is
    // called unhandled, and the handler is not called unregistered.
    let tmp = copy_fixture("rules/kind-unhandled");
    let f = tmp.path().join("workers/billing/src/handlers.rs");
    let text = std::fs::read_to_string(&f).expect("handlers.rs");
    std::fs::write(
        &f,
        text.replacen("\"CHARGE_INVOICE\"", "kind_of(\"charge\")", 1),
    )
    .expect("write");
    let found = findings(tmp.path(), &[]);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));

    // A KINDS element the checker cannot resolve: no handler is called unregistered.
    let tmp = copy_fixture("rules/kind-unregistered-handler");
    let root = tmp.path().join("om/src/root.rs");
    let text = std::fs::read_to_string(&root).expect("root.rs");
    std::fs::write(
        &root,
        text.replacen("BILLING_KINDS,", "generated_kinds!(),", 1),
    )
    .expect("write");
    let found = findings(tmp.path(), &["--rule", "kind-unregistered-handler"]);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));

    // A program from a closure argument: origin unknown, not reported.
    let tmp = copy_fixture("near-miss/workqueue");
    let f = tmp.path().join("workers/billing/src/main.rs");
    std::fs::write(
        &f,
        "mod handlers;\nfn main() {\n    let run = |p: String| std::process::Command::new(p).status();\n    let _ = run(String::new());\n}\n",
    )
    .expect("write");
    let found = findings(tmp.path(), &[]);
    assert!(found.is_empty(), "{:#?}", rules_of(&found));
}

#[test]
fn every_workqueue_rule_is_in_the_catalogue() {
    for id in WORKQUEUE_RULES {
        assert!(
            scaffold::check::catalogue::rule(id).is_some(),
            "{id} is not in rules/catalogue.yml"
        );
    }
}

/// A remote worker built as the design says — the runtime with `default-features = false,
/// features = ["remote"]`, off in the workspace entry too, no driver, no database setting —
/// is clean; each way back to a database is found again: a driver added, the runtime's
/// `sqlite` feature turned on, a database setting, a driver two workspace crates away.
#[test]
fn a_remote_worker_without_a_database_is_clean_and_each_way_back_is_found() {
    let tmp = copy_fixture("rules/remote-worker-database");
    let root = tmp.path();
    let write = |path: &str, text: &str| std::fs::write(root.join(path), text).expect("write");
    let manifest = |extra: &str| {
        format!(
            "[package]\nname = \"acme-maintenance\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.scaffold]\nrole = \"maintenance\"\nremote = true\n\n[dependencies]\nacme-om = {{ path = \"../../om\" }}\n{extra}\n[dev-dependencies]\nrusqlite = \"0.37\"\n"
        )
    };
    write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"om\", \"services/*\", \"workers/*\"]\nresolver = \"2\"\n\n[workspace.dependencies]\nscaffold-runtime = { version = \"0.1\", default-features = false }\n",
    );
    write(
        "om/Cargo.toml",
        "[package]\nname = \"acme-om\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        "workers/maintenance/Cargo.toml",
        &manifest("scaffold-runtime = { workspace = true, features = [\"remote\"] }\n"),
    );
    let settings = root.join("workers/maintenance/src/settings.rs");
    let text = std::fs::read_to_string(&settings).expect("settings");
    std::fs::write(&settings, text.replace("database_url", "coordinator_url")).expect("write");
    let clean = findings(root, &["--rule", "remote-worker-database"]);
    assert!(clean.is_empty(), "{:#?}", clean);

    let lines = |found: &[serde_json::Value]| -> Vec<(String, u64)> {
        found
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap_or("").to_owned(),
                    f["line"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    // The runtime's sqlite feature, on the worker's own line.
    write(
        "workers/maintenance/Cargo.toml",
        &manifest("scaffold-runtime = { workspace = true, features = [\"remote\", \"sqlite\"] }\n"),
    );
    let found = findings(root, &["--rule", "remote-worker-database"]);
    assert_eq!(
        lines(&found),
        vec![("workers/maintenance/Cargo.toml".to_owned(), 12)]
    );
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`sqlite`"),
        "{found:#?}"
    );
    // A driver on a target table, and one two workspace crates away.
    write(
        "workers/maintenance/Cargo.toml",
        &format!(
            "{}\n[target.'cfg(unix)'.dependencies]\ntokio-postgres = \"0.7\"\n",
            manifest("scaffold-runtime = { workspace = true, features = [\"remote\"] }\n")
        ),
    );
    write(
        "om/Cargo.toml",
        "[package]\nname = \"acme-om\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nacme-shipping = { path = \"../services/shipping\" }\n",
    );
    write(
        "services/shipping/Cargo.toml",
        "[package]\nname = \"acme-shipping\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nsqlx = \"0.8\"\n",
    );
    let found = findings(root, &["--rule", "remote-worker-database"]);
    let messages: Vec<&str> = found
        .iter()
        .map(|f| f["message"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(found.len(), 2, "{messages:#?}");
    assert!(
        messages.iter().any(|m| m.contains(
            "through `acme-om`, through `acme-shipping`, which depends on the driver `sqlx`"
        )),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("`tokio-postgres`")),
        "{messages:#?}"
    );
}
