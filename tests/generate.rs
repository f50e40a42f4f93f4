//! The generator: `scaffold init`, `scaffold namespace`, `scaffold worker` — what they
//! write, what they refuse, and that every refusal or failure leaves the tree
//! byte-identical. (Building and testing the generated repository is tests/e2e_generated.rs.)

mod common;
#[path = "generate/ecosystem.rs"]
mod ecosystem;
#[path = "generate/integration.rs"]
mod integration;
#[path = "generate/long_running.rs"]
mod long_running;
#[path = "generate/producer.rs"]
mod producer;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{Run, run_in};

/// Every file under `dir` (relative `/` path → content hash and mode), directories as
/// `path/`.
fn tree(dir: &Path) -> Tree {
    Tree(
        files(dir)
            .into_iter()
            .map(|(p, bytes)| {
                let mode = mode(&dir.join(&p));
                (p, (xxhash_rust::xxh3::xxh3_64(&bytes), mode))
            })
            .collect(),
    )
}

/// A tree's files by hash, compared with a diff of the paths that differ.
#[derive(PartialEq, Eq)]
struct Tree(BTreeMap<String, (u64, u32)>);

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} entries", self.0.len())
    }
}

#[track_caller]
fn assert_same(after: &Tree, before: &Tree, what: &str) {
    if after == before {
        return;
    }
    let mut diff = Vec::new();
    for (p, v) in &after.0 {
        match before.0.get(p) {
            None => diff.push(format!("+ {p}")),
            Some(b) if b != v => diff.push(format!("~ {p}")),
            _ => {}
        }
    }
    for p in before.0.keys() {
        if !after.0.contains_key(p) {
            diff.push(format!("- {p}"));
        }
    }
    panic!("{what}:\n{}", diff.join("\n"));
}

fn mode(path: &Path) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::symlink_metadata(path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        0
    }
}

/// Every file under `dir` with its bytes, directories as `path/` → empty.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(dir)
                .expect("inside")
                .to_string_lossy()
                .replace('\\', "/");
            if p.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else {
                out.insert(rel, fs::read(&p).expect("readable"));
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in files(from) {
        let dest = to.join(&rel);
        if rel.ends_with('/') {
            fs::create_dir_all(&dest).expect("mkdir");
        } else {
            fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            fs::write(&dest, bytes).expect("write");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = fs::metadata(from.join(&rel))
                    .expect("meta")
                    .permissions()
                    .mode();
                fs::set_permissions(&dest, fs::Permissions::from_mode(mode)).expect("chmod");
            }
        }
    }
}

/// A repository `scaffold init` made once for this test binary (name `acme`).
fn pristine() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("acme");
        let r = run_in(tmp.path(), &["init", "acme"]);
        assert_eq!(r.code, 0, "init failed:\n{}{}", r.stdout, r.stderr);
        (tmp, path)
    });
    path
}

/// A fresh copy of the pristine repository to change.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("acme");
    copy_tree(pristine(), &path);
    (tmp, path)
}

fn ok(r: &Run) {
    assert_eq!(r.code, 0, "expected success:\n{}{}", r.stdout, r.stderr);
}

/// The tree listing with the vendored runtime's files counted, not listed (they change with
/// the runtime, not the generator).
fn listing(dir: &Path) -> String {
    let files: Vec<String> = files(dir)
        .into_keys()
        .filter(|p| !p.ends_with('/'))
        .collect();
    let runtime = files
        .iter()
        .filter(|p| p.starts_with("platform/runtime/") && *p != "platform/runtime/.scaffold-stamp")
        .count();
    let mut out: Vec<String> = files
        .into_iter()
        .filter(|p| !p.starts_with("platform/runtime/") || p == "platform/runtime/.scaffold-stamp")
        .collect();
    out.push(format!(
        "platform/runtime/ (+{runtime} vendored files: Cargo.toml, src/**, migrations/**)"
    ));
    out.sort();
    out.join("\n") + "\n"
}

#[test]
fn init_writes_the_reference_tree() {
    let dir = pristine();
    insta::assert_snapshot!("init_tree", listing(dir));
    for key in [
        "Cargo.toml",
        "agent/codemap.yml",
        "om/src/root.rs",
        "om/src/lib.rs",
        "scripts/dev.sh",
        "workers/maintenance/src/work_loop.rs",
        "deployment/terraform/modules/environment/main.tf",
    ] {
        let text = fs::read_to_string(dir.join(key)).expect("generated");
        insta::assert_snapshot!(format!("init_{}", key.replace(['/', '.'], "_")), text);
    }
    let stamp = fs::read_to_string(dir.join("platform/runtime/.scaffold-stamp")).expect("stamp");
    assert!(stamp.contains("hash = \"sha256:"), "{stamp}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join("scripts/dev.sh"))
            .expect("dev.sh")
            .permissions()
            .mode();
        assert_ne!(mode & 0o111, 0, "scripts/dev.sh is executable");
    }
}

#[test]
fn every_generated_config_file_parses() {
    let dir = pristine();
    let mut counts = BTreeMap::new();
    for (rel, bytes) in files(dir) {
        let text = String::from_utf8_lossy(&bytes);
        let kind = if rel.ends_with(".tf") {
            hcl_edit::parser::parse_body(&text)
                .unwrap_or_else(|e| panic!("{rel} is not valid HCL: {e}"));
            "tf"
        } else if rel.ends_with(".yml") || rel.ends_with(".yaml") {
            scaffold::repo::yaml::parse(&text)
                .unwrap_or_else(|e| panic!("{rel} is not valid YAML: {}", e.message));
            "yaml"
        } else if rel.ends_with(".Dockerfile") {
            let instructions: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .filter(|l| !l.starts_with(' '))
                .filter_map(|l| l.split_whitespace().next())
                .collect();
            assert_eq!(instructions.first(), Some(&"FROM"), "{rel}");
            let froms = instructions.iter().filter(|i| **i == "FROM").count();
            assert!(froms >= 2, "{rel} is multi-stage");
            let user = text
                .lines()
                .rfind(|l| l.starts_with("USER "))
                .unwrap_or_else(|| panic!("{rel} sets no USER"));
            assert!(!user.contains("root"), "{rel} runs as root: {user}");
            assert!(text.contains("HEALTHCHECK"), "{rel} has no HEALTHCHECK");
            "dockerfile"
        } else if rel.ends_with(".toml") || rel.ends_with("Cargo.lock") {
            text.parse::<toml_edit::DocumentMut>()
                .unwrap_or_else(|e| panic!("{rel} is not valid TOML: {e}"));
            "toml"
        } else if rel.ends_with(".rs") {
            syn::parse_file(&text).unwrap_or_else(|e| panic!("{rel} is not valid Rust: {e}"));
            "rs"
        } else {
            continue;
        };
        *counts.entry(kind).or_insert(0) += 1;
    }
    for kind in ["tf", "yaml", "dockerfile", "toml", "rs"] {
        assert!(
            counts.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} file: {counts:?}"
        );
    }
    for w in ["maintenance", "outbox-relay", "projector"] {
        assert!(
            dir.join(format!("deployment/docker/{w}.Dockerfile"))
                .is_file(),
            "{w}"
        );
    }
}

#[test]
fn init_refuses_bad_names_and_non_empty_directories() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["../x", "Acme", "a/b", "1acme", "acme-", ""] {
        let r = run_in(tmp.path(), &["init", "new", "--name", name]);
        assert_eq!(r.code, 1, "--name {name:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("invalid project name"), "{}", r.stderr);
        assert!(
            !tmp.path().join("new").exists(),
            "--name {name:?} created the directory"
        );
    }
    let r = run_in(tmp.path(), &["init", "Bad_Dir"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--name"), "{}", r.stderr);
    fs::create_dir(tmp.path().join("full")).expect("mkdir");
    fs::write(tmp.path().join("full/README.md"), "mine\n").expect("write");
    let before = tree(tmp.path());
    let r = run_in(tmp.path(), &["init", "full", "--name", "acme"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("is not empty"), "{}", r.stderr);
    assert_same(&tree(tmp.path()), &before, "the tree changed");
}

#[test]
fn init_with_an_override_that_renders_invalid_rust_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let target = tmp.path().join("acme");
    let over = target.join(".scaffold/templates/worker/src");
    fs::create_dir_all(&over).expect("mkdir");
    fs::write(over.join("lib.rs.j2"), "pub fn broken( {\n").expect("write");
    let before = tree(tmp.path());
    let r = run_in(tmp.path(), &["init", "acme"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("workers/maintenance/src/lib.rs"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(".scaffold/templates"), "{}", r.stderr);
    assert_same(&tree(tmp.path()), &before, "the directory is as it was");
}

#[test]
fn init_into_an_unwritable_place_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(tmp.path().join("file"), "x").expect("write");
    let before = tree(tmp.path());
    let r = run_in(tmp.path(), &["init", "file/acme"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("file/acme"), "{}", r.stderr);
    assert_same(&tree(tmp.path()), &before, "the tree changed");
}

#[test]
fn init_dry_run_writes_nothing_and_json_lists_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let r = run_in(tmp.path(), &["init", "acme", "--dry-run"]);
    ok(&r);
    assert!(
        r.stdout.contains("+++ b/om/src/root.rs"),
        "{}",
        &r.stdout[..r.stdout.len().min(400)]
    );
    assert!(r.stdout.contains("dry run: nothing was written"));
    assert!(!tmp.path().join("acme").exists());
    let r = run_in(tmp.path(), &["init", "acme", "--format", "json"]);
    ok(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["command"], "init");
    let created = v["created"].as_array().expect("created");
    assert!(created.iter().any(|p| p == "om/src/root.rs"), "{v}");
    assert!(v["changed"].as_array().expect("changed").is_empty());
}

#[test]
fn namespace_creates_its_files_and_refuses_bad_or_existing_names() {
    let (_tmp, dir) = repo();
    let r = run_in(&dir, &["namespace", "shipping"]);
    ok(&r);
    for f in ["mod.rs", "kinds.rs", "types/work.rs", "README.md"] {
        assert!(dir.join("om/src/shipping").join(f).is_file(), "{f}");
    }
    let lib = fs::read_to_string(dir.join("om/src/lib.rs")).expect("lib.rs");
    assert!(lib.contains("pub mod shipping;"), "{lib}");
    let before = tree(&dir);
    for (ns, code, says) in [
        ("shipping", 1, "exists"),
        ("work", 1, "scaffold uses it"),
        ("fn", 1, "Rust keyword"),
        ("Shipping", 1, "upper-case"),
        ("ship-ping", 1, "not allowed"),
        ("../x", 1, "path"),
    ] {
        let r = run_in(&dir, &["namespace", ns]);
        assert_eq!(r.code, code, "{ns}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{ns}: {}", r.stderr);
        assert_same(&tree(&dir), &before, &format!("{ns} changed the tree"));
    }
    fs::create_dir(dir.join("om/src/billing")).expect("mkdir");
    let before = tree(&dir);
    let r = run_in(&dir, &["namespace", "billing"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("without kinds.rs"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");
}

#[test]
fn namespace_without_its_marker_is_an_error_and_writes_nothing() {
    let (_tmp, dir) = repo();
    let lib = dir.join("om/src/lib.rs");
    let text = fs::read_to_string(&lib).expect("lib.rs");
    fs::write(
        &lib,
        text.replace("// scaffold:namespaces", "// namespaces"),
    )
    .expect("write");
    let before = tree(&dir);
    let r = run_in(&dir, &["namespace", "shipping"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("om/src/lib.rs has no `// scaffold:namespaces` line"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "the tree changed");
}

/// The files `scaffold worker maintenance NOTIFY_SHIPMENT` creates and changes, as a diff.
#[test]
fn worker_adds_a_kind_to_an_existing_worker() {
    let (_tmp, dir) = repo();
    ok(&run_in(&dir, &["namespace", "shipping"]));
    let before = tree(&dir);
    let dry = run_in(
        &dir,
        &["worker", "maintenance", "NOTIFY_SHIPMENT", "--dry-run"],
    );
    ok(&dry);
    assert_same(&tree(&dir), &before, "--dry-run wrote");
    insta::assert_snapshot!("worker_notify_shipment_diff", dry.stdout);
    let r = run_in(
        &dir,
        &[
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--format",
            "json",
        ],
    );
    ok(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let list = |k: &str| -> Vec<String> {
        v[k].as_array()
            .expect("array")
            .iter()
            .map(|p| p.as_str().expect("path").to_owned())
            .collect()
    };
    assert_eq!(
        list("created"),
        [
            "workers/maintenance/src/handlers/notify_shipment.rs",
            "workers/maintenance/tests/notify_shipment.rs",
            "workers/maintenance/tests/notify_shipment_produced.rs",
        ]
    );
    assert_eq!(
        list("changed"),
        [
            "Cargo.lock",
            "om/src/root.rs",
            "om/src/shipping/README.md",
            "om/src/shipping/kinds.rs",
            "om/src/shipping/types/work.rs",
            "services/shipping/src/manager.rs",
            "workers/maintenance/Cargo.toml",
            "workers/maintenance/src/handlers/mod.rs",
            "workers/maintenance/src/work_loop.rs",
        ]
    );
    // Again: refused, naming where the kind is registered, and nothing changes.
    let after = tree(&dir);
    let again = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again.stderr.contains("om/src/shipping/kinds.rs:"),
        "{}",
        again.stderr
    );
    assert_same(&tree(&dir), &after, "a refused re-run changed the tree");
}

#[test]
fn worker_refuses_bad_names_with_nothing_written() {
    let (_tmp, dir) = repo();
    ok(&run_in(&dir, &["namespace", "shipping"]));
    let before = tree(&dir);
    let cases: &[(&[&str], &str)] = &[
        (&["maintenance", "notify_shipment"], "invalid kind"),
        (&["maintenance", "Notify"], "invalid kind"),
        (&["maintenance", "_NOTIFY"], "invalid kind"),
        (&["maintenance", "1NOTIFY"], "invalid kind"),
        (&["maintenance", "NOTIFY__SHIPMENT"], "invalid kind"),
        (&["maintenance", "NOTIFY_"], "invalid kind"),
        (&["maintenance", "NOTIFY-SHIPMENT"], "invalid kind"),
        (&["maintenance", "NOTIFY SHIPMENT"], "invalid kind"),
        (&["maintenance", "../NOTIFY"], "invalid kind"),
        (&["maintenance", "SWEEP"], "registered already"),
        (&["maintenance", "ORCHESTRATION"], "registered already"),
        (&["../x", "NOTIFY"], "invalid worker name"),
        (&["Billing", "NOTIFY"], "invalid worker name"),
        (&["billing_", "NOTIFY"], "invalid worker name"),
        (&["bill--ing", "NOTIFY"], "invalid worker name"),
        (&["9lives", "NOTIFY"], "invalid worker name"),
        (&["", "NOTIFY"], "invalid worker name"),
        (&["a/b", "NOTIFY"], "invalid worker name"),
        (
            &["maintenance", "NOTIFY", "--namespace", "Shipping"],
            "invalid namespace",
        ),
        (
            &["maintenance", "NOTIFY", "--namespace", "billing"],
            "scaffold namespace billing",
        ),
        (
            &["maintenance", "NOTIFY", "--namespace", "work"],
            "the scaffold uses it",
        ),
        (
            &["maintenance", "NOTIFY", "--namespace", "../om"],
            "invalid namespace",
        ),
        (&["maintenance", "NOTIFY", "--lane", "Bulk"], "invalid lane"),
        (
            &["maintenance", "NOTIFY", "--lane", "bulk lane"],
            "invalid lane",
        ),
        (&["maintenance", "NOTIFY", "--lane", "../x"], "invalid lane"),
        (
            &["maintenance", "NOTIFY", "--role", "maintenance"],
            "--role applies to a new worker",
        ),
        (&["billing", "NOTIFY", "--role", "janitor"], "unknown role"),
        (&["maintenance", "MOVE"], "Rust keyword"),
        (&["maintenance", "SELF"], "Rust keyword"),
        (&["om", "NOTIFY"], "invalid worker name `om`"),
        (
            &["verification", "NOTIFY"],
            "invalid worker name `verification`",
        ),
        (&["outbox-relay", "NOTIFY"], "has no work loop"),
        (
            &["maintenance", "NOTIFY", "--container"],
            "--container applies to a new worker",
        ),
        (&["fresh", "HEALTH"], "the new worker's own tests/health.rs"),
    ];
    assert!(cases.len() >= 20);
    for (args, says) in cases {
        let mut full = vec!["worker"];
        full.extend_from_slice(args);
        let r = run_in(&dir, &full);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains(says),
            "{args:?}: expected {says:?} in\n{}",
            r.stderr
        );
        assert_same(&tree(&dir), &before, &format!("{args:?} changed the tree"));
    }
}

#[test]
fn worker_needs_a_namespace_and_asks_when_there_are_several() {
    let (_tmp, dir) = repo();
    let r = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("scaffold namespace"), "{}", r.stderr);
    ok(&run_in(&dir, &["namespace", "shipping"]));
    ok(&run_in(&dir, &["namespace", "billing"]));
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--namespace"), "{}", r.stderr);
    assert!(r.stderr.contains("billing, shipping"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");
}

#[test]
fn worker_failures_leave_the_tree_byte_identical() {
    let (_tmp, dir) = repo();
    ok(&run_in(&dir, &["namespace", "shipping"]));

    // A missing marker.
    let work_loop = dir.join("workers/maintenance/src/work_loop.rs");
    let original = fs::read_to_string(&work_loop).expect("work_loop.rs");
    fs::write(
        &work_loop,
        original.replace("// scaffold:handlers", "// handlers"),
    )
    .expect("write");
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("workers/maintenance/src/work_loop.rs has no `// scaffold:handlers`"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "the tree changed");
    fs::write(&work_loop, &original).expect("restore");

    // A read-only file the command would change.
    let kinds = dir.join("om/src/shipping/kinds.rs");
    let mut perms = fs::metadata(&kinds).expect("meta").permissions();
    perms.set_readonly(true);
    fs::set_permissions(&kinds, perms.clone()).expect("chmod");
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("om/src/shipping/kinds.rs is read-only"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "the tree changed");
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&kinds, perms).expect("chmod");

    // An override template that renders invalid Rust.
    let over = dir.join(".scaffold/templates/kind");
    fs::create_dir_all(&over).expect("mkdir");
    fs::write(over.join("handler.rs.j2"), "impl {{ Kind }}Handler {\n").expect("write");
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("workers/maintenance/src/handlers/notify_shipment.rs"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("override"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");

    // An override that names a variable nobody sets (strict undefined).
    fs::write(over.join("handler.rs.j2"), "// {{ nobody_sets_this }}\n").expect("write");
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("kind/handler.rs.j2"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");
}

fn check_clean(dir: &Path, step: &str) {
    let r = run_in(dir, &["check"]);
    assert_eq!(
        r.code, 0,
        "scaffold check after {step}:\n{}{}",
        r.stdout, r.stderr
    );
}

/// Every generator step leaves a repository `scaffold check` passes (the cargo side of
/// this is tests/e2e_generated.rs).
#[test]
fn every_step_checks_clean() {
    let (_tmp, dir) = repo();
    check_clean(&dir, "init");
    ok(&run_in(&dir, &["namespace", "shipping"]));
    check_clean(&dir, "namespace shipping");
    ok(&run_in(&dir, &["worker", "maintenance", "NOTIFY_SHIPMENT"]));
    check_clean(&dir, "worker maintenance NOTIFY_SHIPMENT");
    ok(&run_in(
        &dir,
        &[
            "worker",
            "maintenance",
            "REINDEX_SHIPMENTS",
            "--lane",
            "bulk",
        ],
    ));
    check_clean(&dir, "worker maintenance REINDEX_SHIPMENTS --lane bulk");
    ok(&run_in(&dir, &["namespace", "billing"]));
    ok(&run_in(
        &dir,
        &[
            "worker",
            "billing",
            "CHARGE_CARD",
            "--namespace",
            "billing",
            "--lane",
            "payments",
            "--container",
            "--role",
            "scheduler",
        ],
    ));
    check_clean(&dir, "worker billing CHARGE_CARD");
    ok(&run_in(
        &dir,
        &[
            "worker",
            "order-sync",
            "SYNC_ORDER",
            "--namespace",
            "shipping",
            "--role",
            "sync-reconciler",
        ],
    ));
    check_clean(&dir, "worker order-sync SYNC_ORDER");
}

/// `--lane` on a worker the tree has: the spec's lane, and a replica of the worker on the
/// lane in dev.sh (its own metrics port), compose and Terraform.
#[test]
fn a_lane_on_an_existing_worker_adds_a_replica_everywhere_it_runs() {
    let (_tmp, dir) = repo();
    ok(&run_in(&dir, &["namespace", "shipping"]));
    let r = run_in(
        &dir,
        &[
            "worker",
            "maintenance",
            "REINDEX_SHIPMENTS",
            "--lane",
            "bulk",
            "--dry-run",
        ],
    );
    ok(&r);
    let deployment: String = r
        .stdout
        .split("--- a/")
        .filter(|d| d.starts_with("scripts/") || d.starts_with("deployment/"))
        .map(|d| format!("--- a/{d}"))
        .collect();
    insta::assert_snapshot!("worker_lane_replica_deployment_diff", deployment);
    assert!(
        r.stdout.contains("+        lane: \"bulk\","),
        "{}",
        r.stdout
    );
}

/// A new worker: its crate, member, processes, settings, image, deployment — and the
/// workspace member inserted with the manifest's layout and comments kept.
#[test]
fn a_new_worker_gets_every_file_it_needs() {
    let (_tmp, dir) = repo();
    ok(&run_in(&dir, &["namespace", "billing"]));
    let original = fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let r = run_in(
        &dir,
        &[
            "worker",
            "billing",
            "CHARGE_CARD",
            "--lane",
            "payments",
            "--container",
            "--role",
            "scheduler",
            "--format",
            "json",
        ],
    );
    ok(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let changed: Vec<&str> = v["changed"]
        .as_array()
        .expect("changed")
        .iter()
        .map(|p| p.as_str().expect("path"))
        .collect();
    insta::assert_snapshot!("worker_new_billing_changed", changed.join("\n"));
    let created: Vec<&str> = v["created"]
        .as_array()
        .expect("created")
        .iter()
        .map(|p| p.as_str().expect("path"))
        .collect();
    insta::assert_snapshot!("worker_new_billing_created", created.join("\n"));
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let expected = original.replace(
        "    \"verification\",\n",
        "    \"verification\",\n    \"workers/billing\",\n",
    );
    assert_eq!(manifest, expected, "only the member line is added");
    let readme = fs::read_to_string(dir.join("workers/billing/README.md")).expect("README");
    assert!(
        readme.contains("## Dedupe"),
        "the scheduler role's section:\n{readme}"
    );
    let role = fs::read_to_string(dir.join("workers/billing/Cargo.toml")).expect("Cargo.toml");
    assert!(role.contains("role = \"scheduler\""), "{role}");
}

/// Names that differ only in case conversion (`A_1` and `A1` are both `A1`) are one kind;
/// a kind added to a worker without `--lane` rides the worker's own lane, not a replica's.
#[test]
fn colliding_names_are_refused_and_lanes_follow_the_worker() {
    let (_tmp, dir) = repo();
    ok(&run_in(&dir, &["namespace", "shipping"]));
    ok(&run_in(&dir, &["worker", "maintenance", "SEND_2FA_CODE"]));
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "maintenance", "SEND2FA_CODE"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("om/src/shipping/kinds.rs:"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "a colliding kind changed the tree");

    ok(&run_in(&dir, &["worker", "billing", "K1"]));
    ok(&run_in(
        &dir,
        &["worker", "billing", "K2", "--lane", "bulk"],
    ));
    ok(&run_in(&dir, &["worker", "billing", "K3"]));
    let kinds = fs::read_to_string(dir.join("om/src/shipping/kinds.rs")).expect("kinds.rs");
    let lane_of = |kind: &str| -> String {
        let at = kinds.find(&format!("name: \"{kind}\"")).expect("the spec");
        let rest = &kinds[at..];
        let lane = rest.find("lane: \"").expect("a lane") + "lane: \"".len();
        rest[lane..].split('"').next().expect("quoted").to_owned()
    };
    assert_eq!(lane_of("K1"), "billing");
    assert_eq!(lane_of("K2"), "bulk");
    assert_eq!(lane_of("K3"), "billing", "{kinds}");
    check_clean(&dir, "billing K1, K2 --lane bulk, K3");

    // A replica of billing on lane `eu` would be `billing-eu`, which is a worker's name.
    ok(&run_in(&dir, &["worker", "billing-eu", "K4"]));
    let before = tree(&dir);
    let r = run_in(&dir, &["worker", "billing", "K5", "--lane", "eu"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("invalid lane `eu`"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "a refused replica changed the tree");
}

#[test]
fn namespace_refuses_a_module_that_exists_as_a_file() {
    let (_tmp, dir) = repo();
    fs::write(dir.join("om/src/ids.rs"), "//! ids\n").expect("write");
    let before = tree(&dir);
    let r = run_in(&dir, &["namespace", "ids"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("om/src/ids.rs"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");
}

/// Runs `tool` with `args` in `dir` when it is installed: `Some(output)`, else a loud
/// SKIPPED line and `None`.
fn tool(test: &str, tool: &str, dir: &Path, args: &[&str]) -> Option<std::process::Output> {
    match std::process::Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
    {
        Ok(out) => Some(out),
        Err(e) => {
            common::skipped(&format!(
                "{test} ({tool}): not installed ({e}); .ci/run installs it"
            ));
            None
        }
    }
}
