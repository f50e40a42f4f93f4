//! Every rule has documentation, a fixture repo and snapshots of both renderings, fires on
//! its fixture, and fires nowhere else there.

use crate::common;

use std::collections::BTreeSet;

use crate::common::Test;
use common::repo_root;
use scaffold::check::{catalogue, rules};

const SECTIONS: [&str; 4] = ["## What it finds", "## Why", "## Example", "## Fix"];

#[test]
fn catalogue_and_rule_table_agree_and_ids_are_unique() {
    let catalogue_ids: Vec<&str> = catalogue::rules().iter().map(|r| r.id).collect();
    let table_ids: Vec<&str> = rules::RULES.iter().map(|r| r.id).collect();
    let unique: BTreeSet<&str> = table_ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        table_ids.len(),
        "two rules share an id: {table_ids:?}"
    );
    let unique_cat: BTreeSet<&str> = catalogue_ids.iter().copied().collect();
    assert_eq!(
        unique_cat.len(),
        catalogue_ids.len(),
        "rules/catalogue.yml repeats an id"
    );
    assert_eq!(
        unique, unique_cat,
        "rules/catalogue.yml and src/check/rules/mod.rs list different rules"
    );
}

#[test]
fn local_rules_are_catalogue_rules() {
    let local: Vec<&str> = scaffold::check::local_rules().collect();
    assert!(local.contains(&"import-forbidden"), "{local:?}");
    for id in local {
        assert!(catalogue::rule(id).is_some(), "local rule {id} is unknown");
    }
}

/// `rules/catalogue.yml` and the README's rule table are renderings of the rules'
/// declarations; `SCAFFOLD_UPDATE_RULES=1` rewrites them.
#[test]
fn the_catalogue_and_the_readme_table_are_built_from_the_declarations() {
    let root = repo_root();
    let catalogue_path = root.join("rules/catalogue.yml");
    let readme_path = root.join("README.md");
    let catalogue = std::fs::read_to_string(&catalogue_path).expect("catalogue");
    let readme = std::fs::read_to_string(&readme_path).expect("README");
    let start = readme
        .find("| id | default | what it finds |\n")
        .expect("the table");
    let end = start
        + readme[start..]
            .find("\n\n")
            .map_or(readme.len() - start, |i| i + 1);
    let table = rules::readme_table();
    let update = std::env::var_os("SCAFFOLD_UPDATE_RULES").is_some();
    if update {
        std::fs::write(&catalogue_path, rules::catalogue_yml()).expect("write catalogue");
        let fresh = format!("{}{table}{}", &readme[..start], &readme[end..]);
        std::fs::write(&readme_path, fresh).expect("write README");
        return;
    }
    assert_eq!(
        catalogue,
        rules::catalogue_yml(),
        "rules/catalogue.yml is stale: run with SCAFFOLD_UPDATE_RULES=1"
    );
    assert_eq!(
        &readme[start..end],
        table,
        "the README's rule table is stale: run with SCAFFOLD_UPDATE_RULES=1"
    );
}

/// `docs/rules/<id>.md` is each rule's page (what SARIF's `helpUri` links to, at the
/// version's tag): the documentation `scaffold explain` prints, and no page of a rule that
/// is gone. `SCAFFOLD_UPDATE_RULES=1` rewrites them.
#[test]
fn each_rule_has_its_docs_page_and_no_page_is_orphaned() {
    let dir = repo_root().join("docs/rules");
    let update = std::env::var_os("SCAFFOLD_UPDATE_RULES").is_some();
    if update {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("docs/rules");
    }
    let mut expected = BTreeSet::new();
    for rule in rules::RULES {
        let name = format!("{}.md", rule.id);
        let path = dir.join(&name);
        if update {
            std::fs::write(&path, rule.doc()).expect("write the page");
        }
        let page = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (run with SCAFFOLD_UPDATE_RULES=1)", path.display())
        });
        assert_eq!(
            page,
            rule.doc(),
            "{name} is stale: run with SCAFFOLD_UPDATE_RULES=1"
        );
        expected.insert(name);
    }
    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("docs/rules")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert_eq!(present, expected, "pages of no rule in docs/rules/");
}

#[test]
fn every_rule_has_docs_fixture_and_snapshots() {
    let mut missing = Vec::new();
    for info in catalogue::rules() {
        let id = info.id;
        let Some(rule) = rules::get(id) else {
            missing.push(format!("{id}: no entry in src/check/rules/mod.rs"));
            continue;
        };
        let doc = rule.doc();
        if !doc.starts_with(&format!("# {id}\n")) {
            missing.push(format!("{id}: doc comment does not start with `# {id}`"));
        }
        for s in SECTIONS {
            if !doc.contains(&format!("{s}\n")) {
                missing.push(format!("{id}: doc comment has no `{s}` section"));
            }
        }
        if !repo_root().join(format!("fixtures/rules/{id}")).is_dir() {
            missing.push(format!("{id}: no fixture repo at fixtures/rules/{id}/"));
        }
        for kind in ["human", "json"] {
            let snap = repo_root().join(format!("tests/snapshots/it__rules__{id}_{kind}.snap"));
            if !snap.is_file() {
                missing.push(format!("{id}: no snapshot {}", snap.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "rules without docs, fixture or snapshot:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_snapshot_is_orphaned() {
    let mut expected: BTreeSet<String> = catalogue::rules()
        .iter()
        .flat_map(|r| {
            [
                format!("it__rules__{}_human.snap", r.id),
                format!("it__rules__{}_json.snap", r.id),
            ]
        })
        .collect();
    expected.insert("it__rules__rules_list.snap".to_owned());
    let dir = repo_root().join("tests/snapshots");
    let orphans: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/snapshots exists")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| name.starts_with("it__rules__") && !expected.contains(name))
        .collect();
    assert!(
        orphans.is_empty(),
        "snapshots no test writes any more: {orphans:?}"
    );
}

#[test]
fn each_rule_fires_on_its_fixture_and_nowhere_else() {
    for info in catalogue::rules() {
        let id = info.id;
        let (repo, extra) = common::scenario(&format!("rules/{id}"))
            .unwrap_or_else(|| (common::copy_fixture(&format!("rules/{id}")), Vec::new()));
        let dir = repo.path().to_path_buf();
        let with = |base: &[&str]| -> Vec<String> {
            base.iter()
                .map(|s| (*s).to_owned())
                .chain(extra.iter().cloned())
                .collect()
        };
        let json_args = with(&["check", "--format", "json"]);
        let json = Test::in_dir(&dir).args(&json_args).any_status().run();
        let value: serde_json::Value = serde_json::from_str(&json.stdout)
            .unwrap_or_else(|e| panic!("{id}: JSON output does not parse: {e}\n{}", json.stdout));
        let findings = value["findings"].as_array().expect("findings is an array");
        assert!(!findings.is_empty(), "{id}: no finding on its own fixture");
        for f in findings {
            assert_eq!(f["rule"], id, "{id}: fixture also raises {f}");
        }
        let expected_code = match (id, info.severity) {
            ("manifest-invalid", _) => 2,
            (_, scaffold::check::finding::Severity::Warning) => 0,
            _ => 1,
        };
        assert_eq!(json.code, expected_code, "{id}: exit code");
        insta::assert_snapshot!(format!("{id}_json"), json.stdout);
        let human_args = with(&["check"]);
        let human = Test::in_dir(&dir)
            .args(human_args.iter().map(String::as_str).collect::<Vec<_>>())
            .status(expected_code)
            .run();
        insta::assert_snapshot!(format!("{id}_human"), human.stdout);
    }
}

#[test]
fn explain_prints_every_rule_and_rules_lists_them_all() {
    let listed = Test::in_dir(&repo_root()).args(["rules"]).run();
    for info in catalogue::rules() {
        assert!(
            listed
                .stdout
                .lines()
                .any(|l| l.starts_with(&format!("{} ", info.id))),
            "{} not listed",
            info.id
        );
        let ex = Test::in_dir(&repo_root()).args(["explain", info.id]).run();
        for s in SECTIONS {
            assert!(ex.stdout.contains(s), "{}: explain lacks {s}", info.id);
        }
    }
    insta::assert_snapshot!("rules_list", listed.stdout);
}
