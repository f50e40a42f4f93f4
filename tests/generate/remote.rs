//! `scaffold worker … --remote`: the remote worker's crate and deployment, the coordinator
//! made once with the first one, a kind joining a remote worker staying remote, and what
//! it refuses with the tree byte-identical. (Building it and running it as processes is
//! tests/e2e_generated.rs.)

use super::*;
use crate::common::Test;

fn read(dir: &Path, rel: &str) -> String {
    fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn findings_of(dir: &Path, rule: &str) -> Vec<serde_json::Value> {
    Test::in_dir(dir)
        .args(["check", "--format", "json"])
        .any_status()
        .run()
        .findings()
        .into_iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

#[test]
fn a_remote_worker_comes_with_the_coordinator_once_and_holds_no_database() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir)
        .args(["worker", "render", "RENDER_LABEL", "--remote"])
        .run();

    let manifest = read(&dir, "workers/render/Cargo.toml");
    assert!(manifest.contains("remote = true"), "{manifest}");
    assert!(
        manifest.contains(
            "scaffold-runtime = { path = \"../../platform/runtime\", default-features = false, features = [\"remote\"] }"
        ),
        "{manifest}"
    );
    let om = read(&dir, "om/Cargo.toml");
    assert!(
        om.contains(
            "scaffold-runtime = { path = \"../platform/runtime\", default-features = false }"
        ),
        "om no longer turns the database backends on: {om}"
    );
    let payload = read(&dir, "om/src/shipping/types/work.rs");
    assert!(
        payload.contains("#[serde(deny_unknown_fields)]"),
        "{payload}"
    );
    let settings = read(&dir, "workers/render/src/settings.rs");
    for var in [
        "ACME_RENDER_COORDINATOR_URL",
        "ACME_RENDER_TOKEN_FILE",
        "ACME_RENDER_STATE_DIR",
        "ACME_RENDER_CA_FILE",
    ] {
        assert!(settings.contains(var), "{var}");
    }
    assert!(!settings.contains("DATABASE"), "{settings}");
    let compose = read(&dir, "deployment/local/docker-compose.full.yml");
    let value: serde_json::Value = serde_saphyr::from_str(&compose).expect("compose is YAML");
    let render = &value["services"]["render"];
    assert_eq!(render["network_mode"], "service:coordinator");
    let env = render["environment"].as_object().expect("its environment");
    assert!(
        env.keys().all(|k| !k.contains("DATABASE")),
        "no database URL for the remote worker: {env:?}"
    );
    assert!(value["services"]["coordinator"].is_object());
    assert!(value["services"]["render_enroll"].is_object());
    let volumes = value["volumes"].as_object().expect("volumes");
    assert!(volumes.contains_key("render_enroll"), "{volumes:?}");
    let terraform = read(&dir, "deployment/terraform/modules/environment/main.tf");
    let instance = terraform
        .split("module \"render\"")
        .nth(1)
        .and_then(|rest| rest.split("\n}\n").next())
        .expect("the remote worker's instance");
    assert!(
        !instance.contains("local.queue") && !instance.contains("DATABASE"),
        "no database secret: {instance}"
    );
    assert!(
        instance.contains("ACME_RENDER_TOKEN = var.render_enroll_token_secret_arn"),
        "its enrollment token from a secret: {instance}"
    );
    assert!(terraform.contains("module \"coordinator\""), "{terraform}");
    assert_eq!(
        findings_of(&dir, "remote-worker-database"),
        Vec::<serde_json::Value>::new()
    );

    // A second remote worker reuses the coordinator; a kind joining a remote worker keeps
    // it remote (its payload refuses unknown fields too).
    let coordinator = files(&dir.join("platform/coordinator"));
    Test::in_dir(&dir)
        .args(["worker", "scan", "SCAN_PARCEL", "--remote"])
        .run();
    Test::in_dir(&dir)
        .args(["worker", "render", "RENDER_MANIFEST"])
        .run();
    assert_eq!(files(&dir.join("platform/coordinator")), coordinator);
    let dev = read(&dir, "scripts/dev.sh");
    let serving = dev
        .matches("cargo run -p acme-coordinator -- serve")
        .count();
    assert_eq!(serving, 1, "{dev}");
    // Each enrollment writes under .scaffold/remote/, made on the line before it, whatever
    // order the workers' lines are in.
    let lines: Vec<&str> = dev.lines().collect();
    for (i, line) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("-- enroll"))
    {
        assert_eq!(lines[i - 1], "mkdir -p .scaffold/remote", "{dev}");
        assert!(line.starts_with("[[ -f .scaffold/remote/"), "{line}");
    }
    let payloads = read(&dir, "om/src/shipping/types/work.rs");
    let refusing = payloads.matches("#[serde(deny_unknown_fields)]").count();
    assert_eq!(refusing, 3, "{payloads}");
    let compose = read(&dir, "deployment/local/docker-compose.full.yml");
    assert_eq!(
        compose.matches("\n  coordinator:\n").count(),
        1,
        "{compose}"
    );

    // A replica on another lane is another identity: its own state directory, token,
    // enroll service and Terraform instance with its own token's secret.
    Test::in_dir(&dir)
        .args(["worker", "render", "RENDER_BULK", "--lane", "bulk"])
        .run();
    let dev = read(&dir, "scripts/dev.sh");
    let own = "ACME_RENDER_STATE_DIR=.scaffold/remote/render-bulk \
               ACME_RENDER_TOKEN_FILE=.scaffold/remote/render-bulk.token";
    assert!(dev.contains(own), "{dev}");
    let compose = read(&dir, "deployment/local/docker-compose.full.yml");
    let value: serde_json::Value = serde_saphyr::from_str(&compose).expect("compose is YAML");
    let bulk = &value["services"]["render-bulk"];
    assert_eq!(bulk["network_mode"], "service:coordinator");
    assert!(value["services"]["render_bulk_enroll"].is_object());
    let terraform = read(&dir, "deployment/terraform/modules/environment/main.tf");
    assert!(
        terraform.contains("var.render_bulk_enroll_token_secret_arn"),
        "{terraform}"
    );
    assert_eq!(
        findings_of(&dir, "lane-undeployed"),
        Vec::<serde_json::Value>::new()
    );
}

#[test]
fn the_coordinators_process_serves_no_lane() {
    // dev.sh and compose run the coordinator with `serve`: it is not a worker, so a lane
    // nobody serves is still found.
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir)
        .args(["worker", "render", "RENDER_LABEL", "--remote"])
        .run();
    assert_eq!(
        findings_of(&dir, "lane-undeployed"),
        Vec::<serde_json::Value>::new()
    );
    let unserved_in = |place: &str| {
        let found = findings_of(&dir, "lane-undeployed");
        assert!(
            !found.is_empty(),
            "the default lane's kinds are found unserved"
        );
        for f in &found {
            let message = f["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("lane `default`") && message.ends_with(place),
                "{found:?}"
            );
        }
    };
    let dev = dir.join("scripts/dev.sh");
    let text = read(&dir, "scripts/dev.sh");
    let maintenance = "ACME_METRICS_PORT=9100 cargo run -p acme-maintenance -- serve &\n";
    fs::write(&dev, text.replace(maintenance, "")).expect("write dev.sh");
    unserved_in("scripts/dev.sh");
    fs::write(&dev, text).expect("restore dev.sh");

    // The maintenance worker's compose service moved to another lane: the coordinator's
    // service (building coordinator.Dockerfile) does not stand in for it.
    let compose = dir.join("deployment/local/docker-compose.full.yml");
    let text = read(&dir, "deployment/local/docker-compose.full.yml");
    let moved = text.replace("ACME_WORKER_LANE: default", "ACME_WORKER_LANE: elsewhere");
    assert_ne!(moved, text);
    fs::write(&compose, moved).expect("write compose");
    unserved_in("deployment/local/docker-compose.full.yml");
}

#[test]
fn remote_refuses_what_needs_the_database_with_nothing_written() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    for (args, says) in [
        (
            &["worker", "maintenance", "RENDER_LABEL", "--remote"][..],
            "is not a remote worker",
        ),
        (
            &[
                "worker",
                "render",
                "RENDER_LABEL",
                "--remote",
                "--role",
                "scheduler",
            ][..],
            "--role scheduler",
        ),
        (
            &[
                "worker",
                "render",
                "RENDER_LABEL",
                "--remote",
                "--orchestration",
            ][..],
            "cannot be used with",
        ),
    ] {
        Test::in_dir(&dir)
            .args(args.iter().copied())
            .status(if says == "cannot be used with" { 2 } else { 1 })
            .stderr_has(says)
            .tree_unchanged()
            .run();
    }
}

#[test]
fn a_local_worker_reads_nothing_of_the_coordinator() {
    // Whether the coordinator is there is asked only for a remote worker: a link at its
    // manifest (refused when read) does not stop a run that never needs it.
    let (tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let outside = tmp.path().join("outside.toml");
    fs::write(&outside, "[package]\n").expect("write");
    let coordinator = dir.join("platform/coordinator");
    fs::create_dir_all(&coordinator).expect("mkdir");
    std::os::unix::fs::symlink(&outside, coordinator.join("Cargo.toml")).expect("a link");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .run();
    let remote = Test::in_dir(&dir)
        .args(["worker", "render", "RENDER_LABEL", "--remote"])
        .status(2)
        .run();
    assert!(
        remote.stderr.contains("platform/coordinator/Cargo.toml"),
        "{}",
        remote.stderr
    );
}
