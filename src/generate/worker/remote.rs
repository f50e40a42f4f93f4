//! `scaffold worker <worker> <KIND> --remote`: a worker whose queue is the coordinator
//! (docs/reference.md#remote-workers) — its crate on the runtime without database backends,
//! its process in dev.sh, compose and Terraform with no database secret, and, with the
//! repository's first remote worker, the coordinator (`platform/coordinator/`) they reach.

use minijinja::Value;

use crate::generate::error::GenerateError;
use crate::generate::init::render_into_worker;
use crate::generate::kind_files::insert_snippet;
use crate::generate::plan::Plan;
use crate::generate::render::{context, create_from};
use crate::generate::templates::Templates;
use crate::layout::markers as marker;
use crate::layout::{
    COMPOSE, COORDINATOR, COORDINATOR_DIR, DEV_SH, ENV_EXAMPLE, PRODUCTION, STAGING, TF_ACCOUNT,
    TF_ACCOUNT_VARS, TF_ENVIRONMENT, TF_ENVIRONMENT_VARS,
};

/// The runtime's layer in the codemap `init` writes, which the coordinator's follows.
const RUNTIME_LAYER: &str = "runtime:      {paths: [\"platform/runtime/**\"], may_import: []}";
/// The port it listens on (`scaffold queue serve`'s default too).
const COORDINATOR_PORT: u16 = 7700;

/// Whether a worker's manifest says `[package.metadata.scaffold] remote = true`; one that
/// does not parse is an error (taking it for a local worker would give its replica a
/// database URL).
pub(super) fn is_remote(path: &str, manifest: &str) -> Result<bool, GenerateError> {
    let doc = crate::generate::members::parse(path, manifest)?;
    Ok(doc
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("scaffold"))
        .and_then(|s| s.get("remote"))
        .and_then(toml_edit::Item::as_bool)
        == Some(true))
}

/// A new remote worker, and the coordinator when the repository has none yet.
pub(super) fn plan_new_remote_worker(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    name: &str,
    worker: &str,
) -> Result<(), GenerateError> {
    render_into_worker(plan, templates, "remote-worker/", worker, ctx)?;
    om_without_database_backends(plan)?;
    // The crate depends on the packages the maintenance worker's does (the runtime's remote
    // feature's are in the lock already: a lock holds every optional dependency).
    add_to_lock_like_maintenance(plan, name, &format!("{name}-{worker}"))?;
    create_from(
        plan,
        templates,
        "worker-docker/Dockerfile.j2",
        &crate::layout::dockerfile(worker),
        ctx,
    )?;
    add_member(plan, &crate::layout::worker_dir(worker))?;
    super::deploy::plan_processes(plan, templates, ctx, &[(DEV_SH, "remote/dev-sh.j2")])?;
    insert_snippet(
        plan,
        templates,
        ctx,
        ENV_EXAMPLE,
        marker::SETTINGS,
        "the settings of the workers `scaffold worker` adds",
        "remote/env.j2",
    )?;
    plan_remote_compose(plan, templates, ctx, worker)?;
    if plan
        .text(&format!("{COORDINATOR_DIR}/Cargo.toml"))?
        .is_none()
    {
        plan_coordinator(plan, templates, name)?;
    }
    plan_remote_terraform(plan, templates, ctx)
}

/// A replica of a remote worker on another lane: in dev.sh, compose (when the worker has a
/// service there) and Terraform.
pub(super) fn plan_remote_replica(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    worker: &str,
) -> Result<(), GenerateError> {
    let place = "the list of workers in this file";
    insert_snippet(
        plan,
        templates,
        ctx,
        DEV_SH,
        marker::WORKERS,
        place,
        "remote/dev-sh.j2",
    )?;
    let compose = plan.text(COMPOSE)?.unwrap_or_default();
    if super::deploy::compose_has_service(&compose, worker) {
        plan_remote_compose(plan, templates, ctx, worker)?;
    }
    plan_remote_terraform(plan, templates, ctx)
}

/// A remote worker's (or replica's) Terraform: its instance, with its state on the
/// environment's EFS and its enrollment token's secret, which the execution role may read
/// and the workflows pass on from a repository variable through the account module.
fn plan_remote_terraform(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
) -> Result<(), GenerateError> {
    use crate::generate::provider_deploy::{read_secret_arn, refused};
    let Some(main) = plan.text(TF_ENVIRONMENT)? else {
        // A repository without Terraform deploys elsewhere: nothing to wire.
        return Ok(());
    };
    if !main.contains("resource \"aws_efs_file_system\" \"projections\"") {
        return Err(refused(
            TF_ENVIRONMENT,
            "the environment's EFS file system (`resource \"aws_efs_file_system\" \"projections\"`), where a remote worker keeps its identity",
        ));
    }
    insert_snippet(
        plan,
        templates,
        ctx,
        TF_ENVIRONMENT,
        marker::WORKERS,
        "the list of workers in this file",
        "remote/terraform-module.j2",
    )?;
    let service = ctx
        .get_attr("service_snake")
        .ok()
        .and_then(|s| s.as_str().map(str::to_owned))
        .unwrap_or_default();
    let variable = format!("{service}_enroll_token_secret_arn");
    let main = plan.text(TF_ENVIRONMENT)?.unwrap_or_default();
    plan.edit(
        TF_ENVIRONMENT,
        read_secret_arn(&main, &format!("var.{variable}"))?,
    )?;
    let declared = templates
        .render("remote/terraform-token-variable.j2", ctx)?
        .text;
    for path in [TF_ENVIRONMENT_VARS, TF_ACCOUNT_VARS] {
        if let Some(text) = plan.text(path)? {
            plan.edit(path, append(&text, &declared))?;
        }
    }
    pass_to_environment(plan, &format!("\n{variable} = var.{variable}\n"))?;
    let up = variable.to_ascii_uppercase();
    for path in [STAGING, PRODUCTION] {
        insert_after_line(
            plan,
            (
                path,
                "      TF_VAR_database_url_secret_arn: ${{ vars.DATABASE_URL_SECRET_ARN }}",
                "the deploy job's Terraform settings, which a remote worker's token follows",
            ),
            &format!("TF_VAR_{variable}: ${{{{ vars.{up} }}}}"),
        )?;
    }
    Ok(())
}

/// The worker's compose service (in the coordinator's network namespace) and the one-shot
/// service that enrolls it, with the volume the token passes through.
fn plan_remote_compose(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    worker: &str,
) -> Result<(), GenerateError> {
    if plan.text(COMPOSE)?.is_none() {
        return Ok(());
    }
    insert_snippet(
        plan,
        templates,
        ctx,
        COMPOSE,
        marker::WORKERS,
        "the list of workers in this file",
        "remote/compose-service.j2",
    )?;
    // `<service>_enroll`: an underscore no worker, lane or service name has, so the enroll
    // service and its volume never share a name with a worker's service.
    let service = ctx
        .get_attr("service_snake")
        .ok()
        .and_then(|s| s.as_str().map(str::to_owned))
        .unwrap_or_else(|| crate::generate::names::snake(worker));
    add_compose_volume(plan, &format!("{service}_enroll"))
}

/// `platform/coordinator/`: its crate, workspace member, lock entry, image, process in
/// dev.sh and compose, settings, Terraform variable and the workflows' matrices.
fn plan_coordinator(
    plan: &mut Plan,
    templates: &Templates,
    name: &str,
) -> Result<(), GenerateError> {
    let project = crate::generate::render::project_vars(name);
    let mut vars = crate::generate::init::worker_vars(
        &project,
        COORDINATOR,
        "coordinator",
        COORDINATOR_PORT,
        false,
    );
    vars.push(("remote", Value::from(true)));
    let ctx = context(&vars);
    for t in Templates::names_under("coordinator/") {
        let rel = t["coordinator/".len()..].trim_end_matches(".j2");
        create_from(
            plan,
            templates,
            t,
            &format!("{COORDINATOR_DIR}/{rel}"),
            &ctx,
        )?;
    }
    create_from(
        plan,
        templates,
        "worker-docker/Dockerfile.j2",
        &crate::layout::dockerfile(COORDINATOR),
        &ctx,
    )?;
    add_member(plan, COORDINATOR_DIR)?;
    let codemap = plan
        .text(crate::repo::codemap::CODEMAP_PATH)?
        .unwrap_or_default();
    if !codemap
        .lines()
        .any(|l| l.trim_start().starts_with("coordinator:"))
    {
        insert_after_line(
            plan,
            (
                crate::repo::codemap::CODEMAP_PATH,
                RUNTIME_LAYER,
                "the runtime's layer, which the coordinator's follows",
            ),
            "# The coordinator the remote workers reach (scaffold worker --remote).\n\
             coordinator:  {paths: [\"platform/coordinator/**\"], may_import: [runtime]}",
        )?;
    }
    if let Some(lock) = plan.text("Cargo.lock")? {
        let deps: Vec<String> = [
            "scaffold-runtime",
            "tempfile",
            "thiserror",
            "tokio",
            "tracing",
        ]
        .iter()
        .map(|d| (*d).to_owned())
        .collect();
        let like = format!("{name}-maintenance");
        let package = format!("{name}-{COORDINATOR}");
        if let Some(lock) = crate::generate::lockfile::add_member(&lock, &package, &like, &deps)? {
            plan.edit("Cargo.lock", lock)?;
        }
    }
    super::deploy::plan_processes(
        plan,
        templates,
        &ctx,
        &[
            (DEV_SH, "remote/coordinator-dev-sh.j2"),
            (TF_ENVIRONMENT, "remote/coordinator-terraform.j2"),
        ],
    )?;
    insert_snippet(
        plan,
        templates,
        &ctx,
        ENV_EXAMPLE,
        marker::SETTINGS,
        "the settings of the workers `scaffold worker` adds",
        "remote/coordinator-env.j2",
    )?;
    if plan.text(COMPOSE)?.is_some() {
        insert_snippet(
            plan,
            templates,
            &ctx,
            COMPOSE,
            marker::WORKERS,
            "the list of workers in this file",
            "remote/coordinator-compose.j2",
        )?;
    }
    plan_coordinator_terraform(plan, templates, &ctx)
}

/// The Terraform the coordinator needs beyond its instance: its module (a TLS ingress in
/// front of its ECS service), and its settings, passed from the workflows' repository
/// variables through the account module to the environment's.
fn plan_coordinator_terraform(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
) -> Result<(), GenerateError> {
    if plan.text(TF_ENVIRONMENT)?.is_none() {
        return Ok(());
    }
    for file in ["main.tf", "variables.tf", "outputs.tf"] {
        create_from(
            plan,
            templates,
            &format!("remote/terraform/{file}.j2"),
            &format!("deployment/terraform/modules/coordinator/{file}"),
            ctx,
        )?;
    }
    let variables = templates.render("remote/terraform-variables.j2", ctx)?.text;
    for path in [TF_ENVIRONMENT_VARS, TF_ACCOUNT_VARS] {
        if let Some(text) = plan.text(path)? {
            plan.edit(path, append(&text, &variables))?;
        }
    }
    let passed = templates.render("remote/terraform-pass.j2", ctx)?.text;
    pass_to_environment(plan, &passed)?;
    let tf_vars = templates.render("remote/workflow-vars.j2", ctx)?.text;
    // `{% raw %}` on a line of its own leaves that line's end.
    let tf_vars = tf_vars.trim_start_matches('\n');
    for path in [STAGING, PRODUCTION] {
        insert_after_line(
            plan,
            (
                path,
                "      TF_VAR_database_url_secret_arn: ${{ vars.DATABASE_URL_SECRET_ARN }}",
                "the deploy job's Terraform settings, which the coordinator's follow",
            ),
            tf_vars,
        )?;
    }
    Ok(())
}

/// The account module's instance of the environment module with `lines` added at its end
/// (after a blank line: `terraform fmt` aligns them apart from the lines above).
fn pass_to_environment(plan: &mut Plan, lines: &str) -> Result<(), GenerateError> {
    use crate::generate::provider_deploy::{blocks, insert_line, parse, refused};
    let Some(text) = plan.text(TF_ACCOUNT)? else {
        return Ok(());
    };
    let body = parse(&text, TF_ACCOUNT)?;
    let block = blocks(&body, "module")
        .find(|b| {
            b.labels
                .first()
                .is_some_and(|l| l.as_str() == "environment")
        })
        .ok_or_else(|| refused(TF_ACCOUNT, "module \"environment\""))?;
    let at = insert_line(&text, block)
        .ok_or_else(|| refused(TF_ACCOUNT, "module \"environment\" (its closing brace)"))?;
    let indented: String = lines
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_owned()
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    let mut out = text.clone();
    out.insert_str(at, &indented);
    plan.edit(TF_ACCOUNT, out)
}

/// `om/Cargo.toml` with the runtime's database backends left off: every worker depends on
/// om, and a remote worker must not link them through it. The line `init` writes is
/// replaced; any other spelling is left for the plan's own check (`remote-worker-database`)
/// to judge.
fn om_without_database_backends(plan: &mut Plan) -> Result<(), GenerateError> {
    let path = "om/Cargo.toml";
    let Some(text) = plan.text(path)? else {
        return Ok(());
    };
    let from = "scaffold-runtime.workspace = true";
    let to = "# The types only: a remote worker depends on om, and must not link a database backend\n\
        # through it (each local worker turns them on through the workspace's entry).\n\
        scaffold-runtime = { path = \"../platform/runtime\", default-features = false }";
    if text.lines().any(|l| l.trim() == from) {
        let edited: Vec<String> = text
            .lines()
            .map(|l| {
                if l.trim() == from {
                    to.to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect();
        plan.edit(path, format!("{}\n", edited.join("\n")))?;
    }
    Ok(())
}

fn add_to_lock_like_maintenance(
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

fn add_member(plan: &mut Plan, dir: &str) -> Result<(), GenerateError> {
    let manifest = plan.text("Cargo.toml")?.unwrap_or_default();
    let manifest = crate::generate::members::add("Cargo.toml", &manifest, dir)?;
    plan.edit("Cargo.toml", manifest)
}

/// `text` with `more` after it, one blank line between.
fn append(text: &str, more: &str) -> String {
    format!("{}\n\n{}", text.trim_end_matches('\n'), more)
}

/// Inserts `lines` below the line of `path` that is exactly `after` (matched literally, as a
/// marker is); a file without it is an error naming the line.
fn insert_after_line(
    plan: &mut Plan,
    (path, after, place): (&str, &str, &'static str),
    lines: &str,
) -> Result<(), GenerateError> {
    let Some(text) = plan.text(path)? else {
        return Ok(());
    };
    let lines: Vec<String> = lines.lines().map(str::to_owned).collect();
    let out = crate::generate::markers::insert_below(path, &text, after.trim(), place, &lines)?;
    plan.edit(path, out)
}

/// The compose file with a named volume declared under its top-level `volumes:` (added at
/// the end when it has none).
fn add_compose_volume(plan: &mut Plan, volume: &str) -> Result<(), GenerateError> {
    let Some(text) = plan.text(COMPOSE)? else {
        return Ok(());
    };
    let entry = format!("  {volume}:");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    match lines.iter().position(|l| l == "volumes:") {
        Some(at) => {
            // The section runs to the next line that is not indented (or the end).
            let section = lines[at + 1..]
                .iter()
                .take_while(|l| l.is_empty() || l.starts_with(' ') || l.starts_with('#'));
            if section.clone().any(|l| *l == entry) {
                return Ok(());
            }
            lines.insert(at + 1, entry);
        }
        None => {
            lines.push(String::new());
            lines.push("volumes:".to_owned());
            lines.push(entry);
        }
    }
    plan.edit(COMPOSE, format!("{}\n", lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::is_remote;

    #[test]
    fn a_remote_manifest_says_so_in_its_scaffold_metadata() {
        let remote = |text: &str| is_remote("workers/a/Cargo.toml", text).ok();
        let scaffold = "[package]\nname = \"a\"\n[package.metadata.scaffold]\n";
        assert_eq!(remote(&format!("{scaffold}remote = true\n")), Some(true));
        assert_eq!(remote(&format!("{scaffold}role = \"x\"\n")), Some(false));
        assert_eq!(
            remote(&format!("{scaffold}remote = \"yes\"\n")),
            Some(false)
        );
        assert_eq!(
            remote("not toml ["),
            None,
            "a manifest that does not parse is an error"
        );
    }
}
