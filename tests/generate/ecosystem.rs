//! The grown repository (a namespace, a kind, a lane, a provider, a new worker with
//! `--container` and the provider)
//! passes the tools its users' CI would run on it, with 0 findings: hadolint, shellcheck,
//! actionlint, the Compose Specification's schema, `terraform fmt`, `terraform init
//! -backend=false && terraform validate` per module, and a `terraform test` with a mock
//! provider that every service's health check runs a binary its image has. Each tool that
//! cannot be had is a loud SKIPPED line, never a silent pass.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{files, repo, tool};
use crate::common::Test;

/// The repository every test here grows.
fn grown() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "billing"]).run();
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "REINDEX", "--lane", "bulk"])
        .run();
    // A provider for the maintenance worker, whose bulk replica exists already.
    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "BOOK_PICKUP",
            "--integration",
            "carrier",
        ])
        .run();
    Test::in_dir(&dir)
        .args([
            "worker",
            "billing",
            "CHARGE_CARD",
            "--container",
            "--role",
            "scheduler",
            "--integration",
            "carrier",
        ])
        .run();
    // A remote worker: the coordinator's crate, image, compose services and Terraform
    // module come with it.
    Test::in_dir(&dir)
        .args(["worker", "render", "RENDER_LABEL", "--remote"])
        .run();
    (tmp, dir)
}

/// The settings worker `worker`'s binary does not start without: for each provider whose
/// client its loop builds, the provider's `…_IMPL` and (the deployment calls the provider,
/// `http`) its `…_BASE_URL`, read off the integration's own list of the variables it reads.
fn required_settings(dir: &Path, worker: &str) -> Vec<String> {
    let path = dir.join(format!("workers/{worker}/src/work_loop.rs"));
    if !path.is_file() {
        // No work loop (the outbox relay, the projector): no provider's client.
        return Vec::new();
    }
    let work_loop = fs::read_to_string(path).expect("the worker's loop");
    let mut out = Vec::new();
    for line in work_loop.lines().filter(|l| l.contains("Client::from_env")) {
        let Some(provider) = line
            .split("acme_")
            .nth(1)
            .and_then(|rest| rest.split("_integration::").next())
        else {
            continue;
        };
        let settings = fs::read_to_string(dir.join(format!(
            "integrations/{}/src/settings.rs",
            provider.replace('_', "-")
        )))
        .expect("the integration's settings");
        let listed: Vec<String> = settings
            .lines()
            .map(str::trim)
            .filter_map(|l| l.strip_prefix('"')?.strip_suffix("\","))
            .map(str::to_owned)
            .collect();
        let required: Vec<String> = listed
            .into_iter()
            .filter(|v| v.ends_with("_IMPL") || v.ends_with("_BASE_URL"))
            .collect();
        assert_eq!(required.len(), 2, "{provider}: {settings}");
        out.extend(required);
    }
    out
}

fn paths_ending(dir: &Path, suffix: &str) -> Vec<String> {
    let mut paths: Vec<String> = files(dir)
        .into_keys()
        .filter(|p| p.ends_with(suffix))
        .collect();
    paths.sort();
    paths
}

#[track_caller]
fn clean(name: &str, out: Option<Output>) {
    if let Some(out) = out {
        assert!(
            out.status.success(),
            "{name} found something:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_grown_repository_passes_hadolint_shellcheck_and_actionlint() {
    const TEST: &str = "the_grown_repository_passes_hadolint_shellcheck_and_actionlint";
    let (_tmp, dir) = grown();
    let dockerfiles = paths_ending(&dir, ".Dockerfile");
    assert!(dockerfiles.len() >= 4, "{dockerfiles:?}");
    let scripts = paths_ending(&dir, ".sh");
    assert!(!scripts.is_empty());
    let workflows: Vec<String> = paths_ending(&dir, ".yml")
        .into_iter()
        .filter(|p| p.starts_with(".github/workflows/"))
        .collect();
    assert!(workflows.len() >= 2, "{workflows:?}");
    let args = |v: &[String]| v.iter().map(String::clone).collect::<Vec<_>>();
    let call = |name: &str, a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        clean(name, tool(TEST, name, &dir, &a));
    };
    call("hadolint", args(&dockerfiles));
    call("shellcheck", args(&scripts));
    // actionlint runs shellcheck on every `run:` too, when it finds it.
    let mut a = vec!["-no-color".to_owned()];
    a.extend(args(&workflows));
    call("actionlint", a);
}

/// `docker compose config` needs an engine this machine does not have; the schema it
/// validates with (vendored under tests/compose/) and the references it resolves — every
/// `depends_on` a service, every Dockerfile present, every named volume declared, every
/// published port once — are checked here instead.
#[test]
fn the_grown_repositorys_compose_file_is_valid_compose() {
    const TEST: &str = "the_grown_repositorys_compose_file_is_valid_compose";
    let (tmp, dir) = grown();
    let compose = "deployment/local/docker-compose.full.yml";
    let text = fs::read_to_string(dir.join(compose)).expect("compose file");
    let value: serde_json::Value = serde_saphyr::from_str(&text).expect("compose is YAML");
    let services = value["services"].as_object().expect("services");
    assert!(services.contains_key("billing"), "the --container worker");
    let mut ports = BTreeMap::new();
    for (name, service) in services {
        match &service["depends_on"] {
            serde_json::Value::Object(m) => {
                for dep in m.keys() {
                    assert!(services.contains_key(dep), "{name} depends on {dep}");
                }
            }
            serde_json::Value::Array(v) => {
                for dep in v {
                    let dep = dep.as_str().expect("a service name");
                    assert!(services.contains_key(dep), "{name} depends on {dep}");
                }
            }
            _ => {}
        }
        if let Some(build) = service["build"].as_object() {
            let context = build["context"].as_str().expect("build context");
            let file = build["dockerfile"].as_str().unwrap_or("Dockerfile");
            let path = dir.join("deployment/local").join(context).join(file);
            assert!(path.is_file(), "{name}: {} is missing", path.display());
        }
        // A named volume (not a path) is declared at the top level, as `docker compose
        // config` requires.
        for mount in service["volumes"].as_array().into_iter().flatten() {
            let source = mount
                .as_str()
                .and_then(|m| m.split(':').next())
                .unwrap_or("");
            if !source.is_empty() && !source.starts_with(['.', '/', '~']) {
                assert!(
                    value["volumes"].get(source).is_some(),
                    "{name} mounts the undeclared volume {source}"
                );
            }
        }
        for port in service["ports"].as_array().into_iter().flatten() {
            let port = port.as_str().expect("a port mapping");
            let host = port.split(':').next().unwrap_or(port).to_owned();
            if let Some(other) = ports.insert(host, name.clone()) {
                panic!("{name} and {other} both publish {port}");
            }
        }
    }
    let json = tmp.path().join("compose.json");
    fs::write(&json, serde_json::to_vec(&value).expect("json")).expect("write");
    let root = crate::common::repo_root();
    let v = Command::new("python3")
        .arg(root.join("tests/compose/validate.py"))
        .arg(root.join("tests/compose/compose-spec.json"))
        .arg(&json)
        .output();
    match v {
        Ok(v) if v.status.code() != Some(3) => {
            assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
        }
        other => crate::common::skipped(&format!(
            "{TEST} (the Compose schema): python3 with jsonschema is not available ({:?})",
            other.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        )),
    }
}

/// Where the provider mirror is (`SCAFFOLD_TEST_TF_PLUGINS`, else `/opt/tf-plugins`): the
/// only place `terraform init` may take the AWS provider from, with no network.
fn terraform_config(tmp: &Path) -> Option<PathBuf> {
    let mirror = std::env::var_os("SCAFFOLD_TEST_TF_PLUGINS")
        .map_or_else(|| PathBuf::from("/opt/tf-plugins"), PathBuf::from);
    if !mirror.join("registry.terraform.io").is_dir() {
        return None;
    }
    let config = tmp.join("terraformrc");
    let text = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path = {:?}\n  }}\n}}\n",
        mirror.display().to_string()
    );
    fs::write(&config, text).expect("write terraformrc");
    Some(config)
}

fn terraform(config: &Path, dir: &Path, args: &[&str]) -> Option<Output> {
    let out = Command::new("terraform")
        .args(args)
        .current_dir(dir)
        .env("TF_CLI_CONFIG_FILE", config)
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .env_remove("TF_PLUGIN_CACHE_DIR")
        .output();
    match out {
        Ok(out) => Some(out),
        Err(e) => {
            crate::common::skipped(&format!(
                "terraform {}: not installed ({e})",
                args.join(" ")
            ));
            None
        }
    }
}

/// What each worker's image has in `/usr/local/bin`, read off its Dockerfile's last stage.
fn image_binaries(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for path in paths_ending(dir, ".Dockerfile") {
        let worker = Path::new(&path)
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".Dockerfile"))
            .expect("<worker>.Dockerfile")
            .to_owned();
        let text = fs::read_to_string(dir.join(&path)).expect("Dockerfile");
        let last = text.rsplit("\nFROM ").next().unwrap_or(&text);
        let bins: Vec<String> = last
            .lines()
            .filter_map(|l| l.strip_prefix("COPY --from="))
            .filter_map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                let (src, dst) = (words.get(1)?, words.last()?);
                Some(if dst.ends_with('/') {
                    format!("{dst}{}", src.rsplit('/').next().unwrap_or(src))
                } else {
                    (*dst).to_owned()
                })
            })
            .filter(|p| p.starts_with("/usr/local/bin/"))
            .collect();
        assert!(!bins.is_empty(), "{path}: no binary in the last stage");
        out.insert(worker, bins);
    }
    out
}

/// The AWS provider, mocked: the policy documents and the region the modules read need
/// values of their real shape.
const MOCK: &str = r#"mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}" }
  }
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
}
"#;

/// The `terraform test` file: with the AWS provider mocked, a plan of the environment
/// module, asserting that each service's health command is a binary of its image.
fn health_test(dir: &Path) -> String {
    let binaries = image_binaries(dir);
    let image = |worker: &str| {
        format!(
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme-{worker}@sha256:{}",
            "0".repeat(64)
        )
    };
    let main = fs::read_to_string(dir.join("deployment/terraform/modules/environment/main.tf"))
        .expect("environment main.tf");
    let body = hcl_edit::parser::parse_body(&main).expect("environment main.tf parses");
    let services: Vec<String> = body
        .get_blocks("module")
        .filter(|b| {
            b.body
                .get_attribute("source")
                .is_some_and(|a| a.value.to_string().trim() == "\"../service\"")
        })
        .filter_map(|b| b.labels.first().map(|l| l.as_str().to_owned()))
        .collect();
    assert!(
        services.iter().any(|s| s == "maintenance_bulk"),
        "the lane replica is a service: {services:?}"
    );
    let images: Vec<String> = binaries
        .keys()
        .map(|w| format!("    {w:?} = {:?}", image(w)))
        .collect();
    let by_image: Vec<String> = binaries
        .iter()
        .map(|(w, bins)| format!("{:?} = {bins:?}", image(w)))
        .collect();
    let mut test = format!(
        "{MOCK}\n\
         variables {{\n  environment = \"staging\"\n  images = {{\n{}\n  }}\n  \
         subnet_ids = [\"subnet-0a\"]\n  security_group_ids = [\"sg-0a\"]\n  \
         database_url_secret_arn = \"arn:aws:secretsmanager:eu-west-1:123456789012:secret:db\"\n  \
         carrier_base_url = \"https://carrier.example\"\n  \
         carrier_token_secret_arn = \"arn:aws:secretsmanager:eu-west-1:123456789012:secret:carrier\"\n  \
         coordinator_public_url = \"https://queue.example.com\"\n  \
         coordinator_public_subnet_ids = [\"subnet-0b\"]\n  \
         coordinator_tls_cert_secret_arn = \"arn:aws:secretsmanager:eu-west-1:123456789012:secret:cert\"\n  \
         coordinator_tls_key_secret_arn = \"arn:aws:secretsmanager:eu-west-1:123456789012:secret:key\"\n  \
         render_enroll_token_secret_arn = \"arn:aws:secretsmanager:eu-west-1:123456789012:secret:render\"\n}}\n\n\
         run \"health_checks_run_a_binary_of_the_image\" {{\n  command = plan\n",
        images.join("\n")
    );
    // Every setting each service's binary requires is in the environment or the secrets
    // its container gets.
    let mut required_checked = 0;
    for block in body.get_blocks("module") {
        let Some(label) = block.labels.first().map(|l| l.as_str().to_owned()) else {
            continue;
        };
        if !services.contains(&label) {
            continue;
        }
        let worker = scaffold::layout::terraform::block_worker(block).expect("a worker");
        for setting in required_settings(dir, &worker) {
            required_checked += 1;
            test.push_str(&format!(
                "  assert {{\n    condition = contains(module.{label}.settings, {setting:?})\n    \
                 error_message = \"module.{label} ({worker}) does not set {setting}, which its binary requires\"\n  }}\n"
            ));
        }
    }
    assert!(
        required_checked >= 6,
        "the maintenance worker, its replica and billing each need the carrier's settings: {required_checked}"
    );
    for s in &services {
        test.push_str(&format!(
            "  assert {{\n    condition = contains(lookup({{ {} }}, module.{s}.image, []), module.{s}.health_command[0])\n    \
             error_message = \"module.{s}: its health check runs ${{module.{s}.health_command[0]}}, which its image ${{module.{s}.image}} does not have\"\n  }}\n",
            by_image.join(", ")
        ));
    }
    test.push_str("}\n");
    test
}

#[test]
fn the_grown_repositorys_terraform_is_formatted_valid_and_health_checks_its_images() {
    const TEST: &str =
        "the_grown_repositorys_terraform_is_formatted_valid_and_health_checks_its_images";
    let (tmp, dir) = grown();
    let Some(out) = terraform(
        Path::new("/dev/null"),
        &dir,
        &[
            "fmt",
            "-check",
            "-recursive",
            "-diff",
            "deployment/terraform",
        ],
    ) else {
        return;
    };
    clean("terraform fmt", Some(out));
    let Some(config) = terraform_config(tmp.path()) else {
        crate::common::skipped(&format!(
            "{TEST} (terraform init/validate/test): no provider mirror at \
             $SCAFFOLD_TEST_TF_PLUGINS or /opt/tf-plugins, and no network to fetch the AWS provider"
        ));
        return;
    };
    let modules = dir.join("deployment/terraform/modules");
    let mut names: Vec<String> = fs::read_dir(&modules)
        .expect("modules")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "account",
            "coordinator",
            "environment",
            "registry",
            "service"
        ]
    );
    for name in &names {
        let module = modules.join(name);
        clean(
            &format!("terraform init ({name})"),
            terraform(
                &config,
                &module,
                &["init", "-backend=false", "-input=false", "-no-color"],
            ),
        );
        clean(
            &format!("terraform validate ({name})"),
            terraform(&config, &module, &["validate", "-no-color"]),
        );
    }
    let environment = modules.join("environment");
    fs::create_dir_all(environment.join("tests")).expect("tests dir");
    fs::write(
        environment.join("tests/health.tftest.hcl"),
        health_test(&dir),
    )
    .expect("write the test");
    let out = terraform(&config, &environment, &["test", "-no-color"]).expect("terraform");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed, 0 failed"),
        "terraform test:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
