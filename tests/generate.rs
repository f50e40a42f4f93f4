//! The generator: `scaffold init`, `scaffold namespace`, `scaffold worker` — what they
//! write, what they refuse, and that every refusal or failure leaves the tree
//! byte-identical. (Building and testing the generated repository is tests/e2e_generated.rs.)

use crate::common;
#[path = "generate/ecosystem.rs"]
mod ecosystem;
#[path = "generate/integration.rs"]
mod integration;
#[path = "generate/long_running.rs"]
mod long_running;
#[path = "generate/producer.rs"]
mod producer;
#[path = "generate/refusals.rs"]
mod refusals;
#[path = "generate/remote.rs"]
mod remote;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::Test;
use common::{assert_same, files, tree};

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
        Test::in_dir(tmp.path()).args(["init", "acme"]).run();
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
        let r = Test::in_dir(tmp.path())
            .args(["init", "new", "--name", name])
            .status(1)
            .run();
        assert!(r.stderr.contains("invalid project name"), "{}", r.stderr);
        assert!(
            !tmp.path().join("new").exists(),
            "--name {name:?} created the directory"
        );
    }
    let r = Test::in_dir(tmp.path())
        .args(["init", "Bad_Dir"])
        .status(1)
        .run();
    assert!(r.stderr.contains("--name"), "{}", r.stderr);
    fs::create_dir(tmp.path().join("full")).expect("mkdir");
    fs::write(tmp.path().join("full/README.md"), "mine\n").expect("write");
    let before = tree(tmp.path());
    let r = Test::in_dir(tmp.path())
        .args(["init", "full", "--name", "acme"])
        .status(1)
        .run();
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
    let r = Test::in_dir(tmp.path())
        .args(["init", "acme"])
        .status(2)
        .run();
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
    let r = Test::in_dir(tmp.path())
        .args(["init", "file/acme"])
        .status(2)
        .run();
    assert!(r.stderr.contains("file/acme"), "{}", r.stderr);
    assert_same(&tree(tmp.path()), &before, "the tree changed");
}

#[test]
fn init_dry_run_writes_nothing_and_json_lists_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let r = Test::in_dir(tmp.path())
        .args(["init", "acme", "--dry-run"])
        .run();
    assert!(
        r.stdout.contains("+++ b/om/src/root.rs"),
        "{}",
        &r.stdout[..r.stdout.len().min(400)]
    );
    assert!(r.stdout.contains("dry run: nothing was written"));
    assert!(!tmp.path().join("acme").exists());
    let r = Test::in_dir(tmp.path())
        .args(["init", "acme", "--format", "json"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["command"], "init");
    let created = v["created"].as_array().expect("created");
    assert!(created.iter().any(|p| p == "om/src/root.rs"), "{v}");
    assert!(v["changed"].as_array().expect("changed").is_empty());
}

/// The files `scaffold worker maintenance NOTIFY_SHIPMENT` creates and changes, as a diff.
#[test]
fn worker_adds_a_kind_to_an_existing_worker() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let before = tree(&dir);
    let dry = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT", "--dry-run"])
        .run();
    assert_same(&tree(&dir), &before, "--dry-run wrote");
    insta::assert_snapshot!("worker_notify_shipment_diff", dry.stdout);
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--format",
            "json",
        ])
        .run();
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
    let again = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(1)
        .run();
    assert!(
        again.stderr.contains("om/src/shipping/kinds.rs:"),
        "{}",
        again.stderr
    );
    assert_same(&tree(&dir), &after, "a refused re-run changed the tree");
}

fn check_clean(dir: &Path, step: &str) {
    let r = Test::in_dir(dir).args(["check"]).any_status().run();
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
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    check_clean(&dir, "namespace shipping");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .run();
    check_clean(&dir, "worker maintenance NOTIFY_SHIPMENT");
    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "REINDEX_SHIPMENTS",
            "--lane",
            "bulk",
        ])
        .run();
    check_clean(&dir, "worker maintenance REINDEX_SHIPMENTS --lane bulk");
    Test::in_dir(&dir).args(["namespace", "billing"]).run();
    Test::in_dir(&dir)
        .args([
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
        ])
        .run();
    check_clean(&dir, "worker billing CHARGE_CARD");
    Test::in_dir(&dir)
        .args([
            "worker",
            "order-sync",
            "SYNC_ORDER",
            "--namespace",
            "shipping",
            "--role",
            "sync-reconciler",
        ])
        .run();
    check_clean(&dir, "worker order-sync SYNC_ORDER");
}

/// `--lane` on a worker the tree has: the spec's lane, and a replica of the worker on the
/// lane in dev.sh (its own metrics port), compose and Terraform.
#[test]
fn a_lane_on_an_existing_worker_adds_a_replica_everywhere_it_runs() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "REINDEX_SHIPMENTS",
            "--lane",
            "bulk",
            "--dry-run",
        ])
        .run();
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

/// The lane each kind's spec names, by kind, read from every spec under om/src/.
fn spec_lanes(dir: &Path) -> BTreeMap<String, String> {
    let mut lanes = BTreeMap::new();
    for (path, bytes) in files(&dir.join("om/src")) {
        if !path.ends_with(".rs") {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut kind = None;
        for line in text.lines().map(str::trim) {
            if let Some(k) = line.strip_prefix("name: \"") {
                kind = Some(k.trim_end_matches("\",").to_owned());
            } else if let Some(lane) = line.strip_prefix("lane: \"")
                && let Some(k) = kind.take()
            {
                lanes.insert(k, lane.trim_end_matches("\",").to_owned());
            }
        }
    }
    lanes
}

/// A kind added without `--lane` is on its worker's own lane (the maintenance worker's:
/// `default`; a new worker's: the lane it was made on), whatever replicas on other lanes
/// were added before or after it: every order of lane and non-lane kinds.
#[test]
fn a_kind_without_a_lane_is_on_its_workers_own_lane_in_every_order() {
    let orders: [&[(&str, Option<&str>)]; 4] = [
        &[("REINDEX_SHIPMENTS", Some("bulk")), ("BOOK_PICKUP", None)],
        &[("BOOK_PICKUP", None), ("REINDEX_SHIPMENTS", Some("bulk"))],
        &[
            ("REINDEX_SHIPMENTS", Some("bulk")),
            ("BOOK_PICKUP", None),
            ("ARCHIVE_LABELS", Some("cold")),
            ("CANCEL_PICKUP", None),
        ],
        &[
            ("BOOK_PICKUP", None),
            ("ARCHIVE_LABELS", Some("cold")),
            ("REINDEX_SHIPMENTS", Some("bulk")),
            ("CANCEL_PICKUP", None),
        ],
    ];
    for (worker, own) in [("maintenance", "default"), ("billing", "payments")] {
        for order in orders {
            let (_tmp, dir) = repo();
            Test::in_dir(&dir).args(["namespace", "shipping"]).run();
            if worker == "billing" {
                Test::in_dir(&dir)
                    .args(["worker", "billing", "CHARGE_CARD", "--lane", "payments"])
                    .run();
            }
            for (kind, lane) in order {
                let mut args = vec!["worker", worker, kind];
                if let Some(lane) = lane {
                    args.extend(["--lane", lane]);
                }
                Test::in_dir(&dir).args(&args).run();
            }
            let lanes = spec_lanes(&dir);
            for (kind, lane) in order {
                assert_eq!(
                    lanes.get(*kind).map(String::as_str),
                    Some(lane.unwrap_or(own)),
                    "{worker}, order {order:?}: {lanes:?}"
                );
            }
        }
    }
}

/// A new worker: its crate, member, processes, settings, image, deployment — and the
/// workspace member inserted with the manifest's layout and comments kept.
#[test]
fn a_new_worker_gets_every_file_it_needs() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "billing"]).run();
    let original = fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let r = Test::in_dir(&dir)
        .args([
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
        ])
        .run();
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

/// Seed 001 §5: a new worker reads its lane off its kind's spec, never a copy of the name.
/// Its process in dev.sh, its compose service and its Terraform instance are told no lane
/// (its `<NAME>_<WORKER>_LANE` stays unset); the checker counts that plain `serve` as
/// serving the spec's lane (not `default`, though dev.sh exports the maintenance worker's
/// variable), finds the lane missing where the process is taken away, and a kind added later
/// without `--lane` joins the spec's lane while a `--lane` one gets a replica told its lane.
#[test]
fn a_new_workers_deployments_take_its_lane_off_the_spec() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "billing"]).run();
    Test::in_dir(&dir)
        .args([
            "worker",
            "billing",
            "CHARGE_CARD",
            "--lane",
            "payments",
            "--container",
        ])
        .run();
    let read = |p: &str| fs::read_to_string(dir.join(p)).expect(p);
    let dev = read("scripts/dev.sh");
    let compose = read("deployment/local/docker-compose.full.yml");
    let tf = read("deployment/terraform/modules/environment/main.tf");
    for (place, text) in [("dev.sh", &dev), ("compose", &compose), ("terraform", &tf)] {
        assert!(
            !text.contains("payments") && !text.contains("ACME_BILLING_LANE"),
            "{place} copies the lane:\n{text}"
        );
    }
    assert!(
        dev.contains("cargo run -p acme-billing -- serve &"),
        "{dev}"
    );
    assert!(compose.contains("command: [\"serve\"]"), "{compose}");
    let env = read(".env.example");
    assert!(env.contains("# ACME_BILLING_LANE="), "{env}");
    assert!(!env.contains("\nACME_BILLING_LANE"), "{env}");
    Test::in_dir(&dir).args(["check"]).run();

    // Without the worker's process, dev.sh has nobody on `payments`.
    let without: String = dev
        .lines()
        .filter(|l| !l.contains("acme-billing"))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(dir.join("scripts/dev.sh"), &without).expect("write");
    let r = Test::in_dir(&dir)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let found: Vec<serde_json::Value> = r
        .findings()
        .into_iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(found.len(), 1, "{}", r.stdout);
    assert_eq!(found[0]["rule"], "lane-undeployed");
    let message = found[0]["message"].as_str().expect("message");
    assert!(
        message.contains("`payments`") && message.contains("scripts/dev.sh"),
        "{message}"
    );
    fs::write(dir.join("scripts/dev.sh"), &dev).expect("write");

    Test::in_dir(&dir)
        .args(["worker", "billing", "REFUND_CARD"])
        .run();
    Test::in_dir(&dir)
        .args(["worker", "billing", "REINDEX_CHARGES", "--lane", "bulk"])
        .run();
    let lanes = spec_lanes(&dir);
    assert_eq!(
        lanes.get("REFUND_CARD").map(String::as_str),
        Some("payments")
    );
    assert_eq!(
        lanes.get("REINDEX_CHARGES").map(String::as_str),
        Some("bulk")
    );
    let dev = read("scripts/dev.sh");
    assert!(dev.contains("acme-billing -- serve --lane bulk &"), "{dev}");
    let tf = read("deployment/terraform/modules/environment/main.tf");
    assert!(tf.contains("ACME_BILLING_LANE = \"bulk\""), "{tf}");
    Test::in_dir(&dir).args(["check"]).run();
}

/// Item 3 of issue 37: a provider added to a worker is wired into every place the worker is
/// deployed — each Terraform instance (its own and a lane replica added before or after)
/// gets the provider's settings, the token as a secret the tasks may read, passed from the
/// account and the deploy workflows — and `setting-undeployed` finds an instance or a
/// compose service that lacks the setting the binary cannot start without.
#[test]
fn an_integrations_settings_reach_every_deployment_of_its_worker() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "REINDEX", "--lane", "bulk"])
        .run();
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "BOOK_PICKUP",
            "--integration",
            "carrier",
        ])
        .run();
    // What the operator must set before the next deploy, with its real names.
    assert!(
        r.stdout
            .contains("CARRIER_BASE_URL and CARRIER_TOKEN_SECRET_ARN")
            && r.stdout.contains("ACME_CARRIER_IMPL=http"),
        "{}",
        r.stdout
    );
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "ARCHIVE", "--lane", "cold"])
        .run();
    let read = |p: &str| fs::read_to_string(dir.join(p)).expect(p);
    let main = read("deployment/terraform/modules/environment/main.tf");
    for module in ["maintenance", "maintenance_bulk", "maintenance_cold"] {
        let block = main
            .split(&format!("module \"{module}\" {{"))
            .nth(1)
            .and_then(|rest| rest.split("\n}").next())
            .unwrap_or_else(|| panic!("module {module}:\n{main}"));
        assert!(block.contains("local.carrier)"), "{module}: {block}");
        assert!(
            block.contains("local.carrier_secrets)"),
            "{module}: {block}"
        );
    }
    assert!(
        main.contains("resources = [var.database_url_secret_arn, var.carrier_token_secret_arn]"),
        "{main}"
    );
    for (path, needle) in [
        (
            "deployment/terraform/modules/environment/variables.tf",
            "variable \"carrier_token_secret_arn\"",
        ),
        (
            "deployment/terraform/modules/account/variables.tf",
            "variable \"carrier_base_url\"",
        ),
        (
            "deployment/terraform/modules/account/main.tf",
            "carrier_token_secret_arn = var.carrier_token_secret_arn",
        ),
        (
            ".github/workflows/deploy-staging.yml",
            "TF_VAR_carrier_base_url: ${{ vars.CARRIER_BASE_URL }}",
        ),
        (
            ".github/workflows/deploy-production.yml",
            "TF_VAR_carrier_token_secret_arn: ${{ vars.CARRIER_TOKEN_SECRET_ARN }}",
        ),
    ] {
        assert!(read(path).contains(needle), "{path} lacks {needle}");
    }
    Test::in_dir(&dir).args(["check"]).run();

    // Taken out of the replica's instance, and out of the compose service: both found.
    let broken = main.replacen(
        "merge({ ACME_WORKER_LANE = \"bulk\" }, local.carrier)",
        "{ ACME_WORKER_LANE = \"bulk\" }",
        1,
    );
    assert_ne!(broken, main);
    fs::write(
        dir.join("deployment/terraform/modules/environment/main.tf"),
        broken,
    )
    .expect("write");
    let compose = read("deployment/local/docker-compose.full.yml");
    let without: String = compose
        .lines()
        .filter(|l| !l.contains("ACME_CARRIER_IMPL"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, compose);
    fs::write(
        dir.join("deployment/local/docker-compose.full.yml"),
        without,
    )
    .expect("write");
    let r = Test::in_dir(&dir)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let found: Vec<String> = r
        .findings()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| format!("{} {} {}", f["rule"], f["path"], f["message"]))
        .collect();
    assert!(
        found
            .iter()
            .all(|f| f.starts_with("\"setting-undeployed\"")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("main.tf") && f.contains("module \\\"maintenance_bulk\\\"")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("docker-compose.full.yml") && f.contains("`maintenance`")),
        "{found:#?}"
    );
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

/// The `next:` line that says how to start a kind by hand is a command that works, with the
/// kind's real name: run as printed (after the repository's migrate), it enqueues the item —
/// for a product kind and for an orchestration.
#[test]
fn the_printed_way_to_start_work_by_hand_works() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir).args(["queue", "migrate"]).run();
    for (args, kind) in [
        (
            &[
                "worker",
                "maintenance",
                "NOTIFY_SHIPMENT",
                "--format",
                "json",
            ][..],
            "NOTIFY_SHIPMENT",
        ),
        (
            &[
                "worker",
                "maintenance",
                "SYNC_LEDGER",
                "--orchestration",
                "--format",
                "json",
            ],
            "ORCHESTRATION",
        ),
    ] {
        let r = Test::in_dir(&dir).args(args).run();
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
        let line = v["next"]
            .as_array()
            .expect("next")
            .iter()
            .filter_map(|l| l.as_str())
            .find_map(|l| l.strip_prefix("start one by hand: "))
            .unwrap_or_else(|| panic!("no way to start it by hand: {}", r.stdout));
        let command = line.split(" (then").next().expect("the command");
        let words = shlex::split(command).expect("shell words");
        assert_eq!(words[..3], ["scaffold", "queue", "enqueue"], "{command}");
        assert_eq!(words[3], kind, "{command}");
        let words: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        Test::in_dir(&dir).args(&words).run();
    }
    let r = Test::in_dir(&dir)
        .args(["queue", "list", "--format", "json"])
        .run();
    assert!(r.stdout.contains("NOTIFY_SHIPMENT"), "{}", r.stdout);
    assert!(r.stdout.contains("\"ORCHESTRATION\""), "{}", r.stdout);
}
