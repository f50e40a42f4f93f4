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
use crate::generate::worker::deploy::{add_member, add_to_lock_like_maintenance};
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
    (worker, service): (&str, &str),
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
    plan_remote_compose(plan, templates, ctx, service)?;
    if plan
        .text(&format!("{COORDINATOR_DIR}/Cargo.toml"))?
        .is_none()
    {
        plan_coordinator(plan, templates, name)?;
    }
    plan_remote_terraform(plan, templates, ctx, service)
}

/// A replica of a remote worker on another lane: in dev.sh, compose (when the worker has a
/// service there) and Terraform. `service` is the replica's service name, in snake case.
pub(super) fn plan_remote_replica(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    (worker, service): (&str, &str),
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
        plan_remote_compose(plan, templates, ctx, service)?;
    }
    plan_remote_terraform(plan, templates, ctx, service)
}

/// A remote worker's (or replica's) Terraform: its instance, with its state on the
/// environment's EFS and its enrollment token's secret, which the execution role may read
/// and the workflows pass on from a repository variable through the account module.
fn plan_remote_terraform(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    service: &str,
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
/// service that enrolls it, with the volume the token passes through; `service` is its
/// service's name in snake case.
fn plan_remote_compose(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    service: &str,
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
            &format!("{}{file}", crate::layout::TF_COORDINATOR_MODULE),
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
    let path = crate::layout::OM_MANIFEST;
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

/// Declares the named `volume` in the compose file's top-level `volumes:`, made when
/// missing.
fn add_compose_volume(plan: &mut Plan, volume: &str) -> Result<(), GenerateError> {
    let Some(text) = plan.text(COMPOSE)? else {
        return Ok(());
    };
    match with_compose_volume(&text, volume) {
        Ok(Some(out)) => plan.edit(COMPOSE, out),
        Ok(None) => Ok(()),
        Err(why) => Err(GenerateError::ComposeVolume {
            path: COMPOSE.to_owned(),
            volume: volume.to_owned(),
            why,
        }),
    }
}

/// `text` (a compose file) with `volume` declared under its top-level `volumes:`, read as
/// YAML: a line `<indent><volume>:` above the first entry, with the entries' indentation
/// and the file's line ending, or a new `volumes:` section at the end; `None` when it is
/// declared already. A `volumes:` written in flow style, or that is not a mapping, is
/// refused (with why) rather than written around; so is an edit whose result does not
/// declare the volume when read back.
fn with_compose_volume(text: &str, volume: &str) -> Result<Option<String>, String> {
    use crate::repo::yaml::{self, Value as Yaml};
    let declared = |text: &str| -> Result<Option<bool>, String> {
        let doc = yaml::parse(text).map_err(|e| format!("it does not parse: {}", e.message))?;
        let Yaml::Map(top) = &doc.value else {
            return Err("it is not a mapping".to_owned());
        };
        Ok(top
            .iter()
            .find(|(k, _)| k.as_str() == Some("volumes"))
            .map(|(_, v)| match &v.value {
                Yaml::Map(entries) => entries.iter().any(|(k, _)| k.as_str() == Some(volume)),
                _ => false,
            }))
    };
    let eol = crate::generate::markers::line_ending(text);
    let line_end = |at: usize| text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
    let doc = yaml::parse(text).map_err(|e| format!("it does not parse: {}", e.message))?;
    let Yaml::Map(top) = &doc.value else {
        return Err("it is not a mapping".to_owned());
    };
    let out = match top.iter().find(|(k, _)| k.as_str() == Some("volumes")) {
        None => {
            let mut out = text.to_owned();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(&format!("{eol}volumes:{eol}  {volume}:{eol}"));
            out
        }
        Some((key, value)) => match &value.value {
            Yaml::Map(entries) => {
                if entries.iter().any(|(k, _)| k.as_str() == Some(volume)) {
                    return Ok(None);
                }
                let first = entries
                    .first()
                    .map(|(k, _)| k)
                    .filter(|_| !text[value.pos.offset..].starts_with('{'))
                    .ok_or("its top-level `volumes:` is written in flow style")?;
                let at = text[..first.pos.offset].rfind('\n').map_or(0, |i| i + 1);
                let indent = " ".repeat(first.pos.column.saturating_sub(1));
                format!("{}{indent}{volume}:{eol}{}", &text[..at], &text[at..])
            }
            // `volumes:` with nothing under it (a comment at most).
            Yaml::Null => {
                let after_key = &text[key.pos.offset + key.pos.len..line_end(key.pos.offset)];
                let rest = after_key
                    .trim_start()
                    .strip_prefix(':')
                    .unwrap_or("")
                    .trim();
                if !(rest.is_empty() || rest.starts_with('#')) {
                    return Err(format!(
                        "its top-level `volumes:` is `{rest}`, not a mapping"
                    ));
                }
                let at = line_end(key.pos.offset);
                let mut out = text[..at].to_owned();
                if !out.ends_with('\n') {
                    out.push_str(eol);
                }
                format!("{out}  {volume}:{eol}{}", &text[at..])
            }
            other => {
                return Err(format!(
                    "its top-level `volumes:` is {}, not a mapping",
                    other.type_name()
                ));
            }
        },
    };
    match declared(&out)? {
        Some(true) => Ok(Some(out)),
        _ => Err("the edited file does not declare it when read back".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_remote, with_compose_volume};

    #[test]
    fn a_volume_is_declared_in_the_files_own_shape() {
        let add = |text: &str| with_compose_volume(text, "w_enroll");
        let added = |text: &str| add(text).expect("accepted").expect("the volume is added");
        assert_eq!(
            added("services: {}\n"),
            "services: {}\n\nvolumes:\n  w_enroll:\n"
        );
        // A trailing comment on `volumes:`, four-space entries, CRLF: all kept.
        let crlf = "services: {}\r\nvolumes:  # named\r\n    data: {}\r\n";
        assert_eq!(
            added(crlf),
            "services: {}\r\nvolumes:  # named\r\n    w_enroll:\r\n    data: {}\r\n"
        );
        assert_eq!(
            added("volumes: # none yet\nservices: {}\n"),
            "volumes: # none yet\n  w_enroll:\nservices: {}\n"
        );
        assert_eq!(
            add("volumes:\n  w_enroll:\n").expect("accepted"),
            None,
            "declared already"
        );
        for refused in [
            "volumes: {data: {}}\n",
            "volumes: [a]\n",
            "volumes: here\n",
            "- a\n",
        ] {
            assert!(add(refused).is_err(), "{refused:?}");
        }
    }

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
