//! Where a worker runs: a new worker's crate, container, compose service, Terraform instance and dev.sh line, a replica on another lane, and the lanes and ports dev.sh already has.

use minijinja::Value;

use crate::generate::error::GenerateError;
use crate::generate::init::{render_into_worker, render_worker_crate};
use crate::generate::kind_files::insert_snippet;
use crate::generate::plan::Plan;
use crate::generate::render::create_from;
use crate::generate::templates::Templates;
use crate::layout::markers as marker;
use crate::layout::{
    COMPOSE, DEV_SH, ENV_EXAMPLE, PRODUCTION, STAGING, TF_ACCOUNT_VARS, TF_ENVIRONMENT, TF_REGISTRY,
};

/// A new worker: its crate, workspace member, processes, settings, image and deployment.
pub(super) fn plan_new_worker(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    name: &str,
    worker: &str,
    (container, role): (bool, &str),
) -> Result<(), GenerateError> {
    render_worker_crate(plan, templates, worker, ctx)?;
    if role == "scheduler" {
        // What its README's `## Dedupe` promises: the schedule, and its test.
        render_into_worker(plan, templates, "worker-scheduler/", worker, ctx)?;
    }
    // The new crate depends on what the maintenance worker's template depends on, so the
    // lock gains its package and stays `--locked`-buildable.
    add_to_lock_like_maintenance(plan, name, &format!("{name}-{worker}"))?;
    create_from(
        plan,
        templates,
        "worker-docker/Dockerfile.j2",
        &crate::layout::dockerfile(worker),
        ctx,
    )?;
    add_member(plan, &crate::layout::worker_dir(worker))?;
    plan_processes(
        plan,
        templates,
        ctx,
        &[
            (DEV_SH, "deploy/dev-sh.j2"),
            (TF_ENVIRONMENT, "deploy/terraform-module.j2"),
        ],
    )?;
    insert_snippet(
        plan,
        templates,
        ctx,
        ENV_EXAMPLE,
        marker::SETTINGS,
        "the settings of the workers `scaffold worker` adds",
        "new-worker/env.j2",
    )?;
    if container {
        insert_snippet(
            plan,
            templates,
            ctx,
            COMPOSE,
            marker::WORKERS,
            "the list of workers in this file",
            "deploy/compose-service.j2",
        )?;
    }
    Ok(())
}

/// Cargo.lock with `package`, a workspace member depending on what the maintenance
/// worker's template does (a repository without a lock, or an embedded template without
/// one, is left to cargo).
pub(super) fn add_to_lock_like_maintenance(
    plan: &mut Plan,
    name: &str,
    package: &str,
) -> Result<(), GenerateError> {
    use crate::generate::{lockfile, templates};
    let template = templates::embedded_file(lockfile::EMBEDDED_LOCK);
    if let (Some(lock), Some(template)) = (plan.text("Cargo.lock")?, template) {
        let template = lockfile::rename(&String::from_utf8_lossy(template), name)?;
        let like = format!("{name}-maintenance");
        if let Some(lock) = lockfile::add_member_like(&lock, &template, package, &like)? {
            plan.edit("Cargo.lock", lock)?;
        }
    }
    Ok(())
}

/// The root manifest with `dir` among the workspace's members.
pub(super) fn add_member(plan: &mut Plan, dir: &str) -> Result<(), GenerateError> {
    let manifest = plan.text("Cargo.toml")?.unwrap_or_default();
    let manifest = crate::generate::members::add("Cargo.toml", &manifest, dir)?;
    plan.edit("Cargo.toml", manifest)
}

/// Below the workers marker of each `(path, template)` (where a process of it runs), and
/// then of every place its image is named: the images `account` requires, both workflows'
/// matrices, and the registry's repositories (a repository made before the registry
/// module existed, or whose registry is managed elsewhere, has no such file, and that is
/// its choice).
pub(super) fn plan_processes(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    processes: &[(&str, &str)],
) -> Result<(), GenerateError> {
    let place = "the list of workers in this file";
    let images = [
        (TF_ACCOUNT_VARS, "new-worker/images.j2"),
        (STAGING, "new-worker/staging.j2"),
        (PRODUCTION, "new-worker/production.j2"),
    ];
    for (path, template) in processes.iter().chain(images.iter()) {
        insert_snippet(plan, templates, ctx, path, marker::WORKERS, place, template)?;
    }
    if plan.text(TF_REGISTRY)?.is_some() {
        insert_snippet(
            plan,
            templates,
            ctx,
            TF_REGISTRY,
            marker::WORKERS,
            place,
            "new-worker/images.j2",
        )?;
    }
    Ok(())
}

/// A replica of an existing worker on the kind's lane: in dev.sh, compose (when the worker
/// has a service there) and Terraform.
pub(super) fn plan_replica(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    (name, worker): (&str, &str),
) -> Result<(), GenerateError> {
    let place = "the list of workers in this file";
    insert_snippet(
        plan,
        templates,
        ctx,
        DEV_SH,
        marker::WORKERS,
        place,
        "deploy/dev-sh.j2",
    )?;
    let compose = plan.text(COMPOSE)?.unwrap_or_default();
    if compose_has_service(&compose, worker) {
        insert_snippet(
            plan,
            templates,
            ctx,
            COMPOSE,
            marker::WORKERS,
            place,
            "deploy/compose-service.j2",
        )?;
        crate::generate::integration::compose_settings(plan, name, worker)?;
    }
    insert_snippet(
        plan,
        templates,
        ctx,
        TF_ENVIRONMENT,
        marker::WORKERS,
        place,
        "deploy/terraform-module.j2",
    )?;
    // The replica is an instance of the worker: it needs its providers' settings too.
    crate::generate::provider_deploy::plan(plan, name, worker)
}

/// Whether the compose file has a top-level service named `worker`.
pub(super) fn compose_has_service(text: &str, worker: &str) -> bool {
    let Ok(node) = crate::repo::yaml::parse(text) else {
        return false;
    };
    let crate::repo::yaml::Value::Map(entries) = &node.value else {
        return false;
    };
    entries
        .iter()
        .filter(|(k, _)| k.as_str() == Some("services"))
        .any(|(_, v)| match &v.value {
            crate::repo::yaml::Value::Map(svcs) => svcs.iter().any(|(k, v)| {
                crate::layout::compose::service_worker(k.as_str().unwrap_or_default(), v) == worker
            }),
            _ => false,
        })
}

/// The lanes the worker's processes in dev.sh serve, as the checker's `lane-undeployed`
/// reads them: `serve --lane L`, else the worker's own lane variable, else `own` (the lane
/// its loop takes off its first kind's spec; `None` when that is unknown, and such a
/// process is then left out).
pub(super) fn served_lanes(
    dev_sh: &str,
    name: &str,
    worker: &str,
    own: Option<&str>,
) -> Vec<String> {
    let package = format!("{name}-{worker}");
    let manifest = crate::layout::worker_file(worker, "Cargo.toml");
    crate::layout::dev_sh::dev_sh_processes(dev_sh)
        .into_iter()
        .filter(|p| crate::layout::dev_sh::runs_package(&p.words, &package, &manifest))
        .filter_map(|p| p.lane.lane_of(worker).or_else(|| own.map(str::to_owned)))
        .collect()
}

/// The lane an existing worker's own process serves: its oldest process in dev.sh. Lines
/// above the marker are `init`'s, in the order written; every process `scaffold worker`
/// adds (a new worker's own, then each replica on another lane) is inserted right below
/// the marker, so below it the newest comes first. The worker's own line is therefore its
/// first above the marker (the maintenance worker's), else its last below it — never the
/// newest replica's, whatever order lane and non-lane kinds were added in.
pub(super) fn served_lane(
    dev_sh: &str,
    name: &str,
    worker: &str,
    own: Option<&str>,
) -> Option<String> {
    let lanes = served_lanes(dev_sh, name, worker, own);
    let above = dev_sh
        .lines()
        .position(|l| l.trim() == crate::layout::markers::WORKERS)
        .map(|at| dev_sh.lines().take(at).collect::<Vec<_>>().join("\n"));
    match above {
        Some(above) if served_lanes(&above, name, worker, own).is_empty() => {
            lanes.into_iter().next_back()
        }
        _ => lanes.into_iter().next(),
    }
}

/// One past the highest `*_METRICS_PORT=<n>` in dev.sh (9100 when there is none).
pub(super) fn next_metrics_port(dev_sh: &str) -> u16 {
    let mut max = None;
    for (i, _) in dev_sh.match_indices("_METRICS_PORT=") {
        let digits: String = dev_sh[i + "_METRICS_PORT=".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(p) = digits.parse::<u16>() {
            max = Some(max.map_or(p, |m: u16| m.max(p)));
        }
    }
    max.map_or(9100, |m| m.saturating_add(1))
}
