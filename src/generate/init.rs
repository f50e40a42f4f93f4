//! `scaffold init <dir> [--name acme]`: the reference repository (docs/reference.md#the-generator), green from
//! its first minute (it builds, passes its tests, is rustfmt-clean and passes
//! `scaffold check`).

use std::path::{Path, PathBuf};

use minijinja::Value;

use super::error::GenerateError;
use super::finish::{Generated, finish};
use super::lockfile;
use super::names::{self, NameKind};
use super::plan::Plan;
use super::render::{context, create_from, project_vars};
use super::templates::{self, Templates};
use crate::layout::runtime::{self as stamp, runtime_stamp};

/// The workers `init` creates: name, role, metrics port, and whether it is the
/// maintenance worker (the sweep and the work namespace's handlers).
pub const INIT_WORKERS: &[(&str, &str, u16, bool)] = &[
    ("maintenance", "maintenance", 9100, true),
    ("outbox-relay", "outbox-relay", 9101, false),
    ("projector", "projector", 9102, false),
];

/// Workers whose crate comes from the generic `templates/worker/` shape (the others have
/// their own templates under `templates/init/`).
const GENERIC_WORKERS: &[&str] = &["maintenance"];

#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The directory to create the repository in (created when missing).
    pub dir: PathBuf,
    /// The project name; by default the directory's name.
    pub name: Option<String>,
    pub dry_run: bool,
}

/// Plans and (unless dry-run) writes the reference repository.
pub fn init(
    cwd: &Path,
    opts: &InitOptions,
    waiting: &mut dyn FnMut(&str),
) -> Result<Generated, GenerateError> {
    let dir = cwd.join(&opts.dir);
    let name = match &opts.name {
        Some(n) => {
            names::validate(NameKind::Project, n)?;
            n.clone()
        }
        None => {
            let base = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            names::validate(NameKind::Project, &base).map_err(|cause| {
                GenerateError::NoProjectName {
                    dir: opts.dir.clone(),
                    cause: cause.to_string(),
                }
            })?;
            base
        }
    };
    // A killed `init` here is finished or undone first (no other command can: the
    // repository it was making may not have its codemap yet).
    let early = if dir.symlink_metadata().is_ok() {
        super::txn::recover(&dir, "init", waiting)?
    } else {
        None
    };
    let exists = dir.symlink_metadata().is_ok();
    if exists && !may_init_into(&dir) {
        return Err(GenerateError::TargetNotEmpty {
            dir: opts.dir.clone(),
        });
    }
    let mut txn = super::txn::Txn::begin(&dir, "init", !exists, waiting)?;
    if txn.recovered.is_none() {
        txn.recovered = early;
    }
    let templates = Templates::new(exists.then_some(dir.as_path()));
    let mut plan = Plan::new(&dir);
    let vars = project_vars(&name);
    let ctx = context(&vars);
    for t in Templates::names_under("init/") {
        let path = t["init/".len()..].trim_end_matches(".j2");
        create_from(&mut plan, &templates, t, path, &ctx)?;
    }
    for &(worker, role, port, maintenance) in INIT_WORKERS {
        let wctx = context(&worker_vars(&vars, worker, role, port, maintenance));
        if GENERIC_WORKERS.contains(&worker) {
            render_worker_crate(&mut plan, &templates, worker, &wctx)?;
        }
        create_from(
            &mut plan,
            &templates,
            "worker-docker/Dockerfile.j2",
            &crate::layout::dockerfile(worker),
            &wctx,
        )?;
    }
    vendor_runtime(&mut plan)?;
    // The lock resolved for `acme` (templates/Cargo.lock.acme), renamed for this project.
    if let Some(lock) = templates::embedded_file(lockfile::EMBEDDED_LOCK) {
        let lock = lockfile::rename(&String::from_utf8_lossy(lock), &name)?;
        plan.create("Cargo.lock", lock.into_bytes(), None)?;
    }
    let shown = shell_word(&opts.dir.display().to_string());
    let mut next = vec![format!("cd {shown}")];
    // `scaffold gates --since main` and `hook install` need a repository with a commit.
    if !inside_git(&opts.dir) {
        next.extend([
            "git init -b main".to_owned(),
            "git add -A".to_owned(),
            "git commit -m 'scaffold init'".to_owned(),
        ]);
    }
    next.extend([
        "cargo test --workspace".to_owned(),
        "scaffold check".to_owned(),
        "scaffold namespace <ns>".to_owned(),
        "scaffold worker maintenance <KIND> --namespace <ns>".to_owned(),
    ]);
    finish("init", txn, plan, opts.dry_run, next)
}

/// Whether `dir` or a folder above it holds `.git` (a work tree the new repository joins).
fn inside_git(dir: &std::path::Path) -> bool {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .any(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
}

/// `s` as one shell word (single-quoted unless it is plainly safe), for the hints printed.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A directory `init` may fill: empty, or holding only `.git/` (a fresh clone) and
/// `.scaffold/` (template overrides).
fn may_init_into(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().all(|e| {
            (e.file_name() == ".scaffold" || e.file_name() == ".git") && e.path().is_dir()
        }),
        Err(_) => false,
    }
}

/// The variables of the worker templates, on top of the project's.
pub(crate) fn worker_vars(
    project: &[(&'static str, Value)],
    worker: &str,
    role: &str,
    metrics_port: u16,
    maintenance: bool,
) -> Vec<(&'static str, Value)> {
    let mut vars = project.to_vec();
    vars.extend([
        ("worker", Value::from(worker)),
        ("worker_snake", Value::from(names::snake(worker))),
        ("WORKER", Value::from(names::shouty(worker))),
        ("Worker", Value::from(names::camel(worker))),
        ("role", Value::from(role)),
        ("metrics_port", Value::from(metrics_port)),
        ("maintenance", Value::from(maintenance)),
        // A worker whose queue is the coordinator (`scaffold worker --remote`).
        ("remote", Value::from(false)),
    ]);
    vars
}

/// Plans a worker crate from `templates/worker/` into `workers/<worker>/`.
pub(crate) fn render_worker_crate(
    plan: &mut Plan,
    templates: &Templates,
    worker: &str,
    ctx: &Value,
) -> Result<(), GenerateError> {
    render_into_worker(plan, templates, "worker/", worker, ctx)
}

/// Renders every template under `folder` (`worker/`, `worker-scheduler/`) into worker
/// `worker`'s crate, at the same relative path without `.j2`.
pub(crate) fn render_into_worker(
    plan: &mut Plan,
    templates: &Templates,
    folder: &str,
    worker: &str,
    ctx: &Value,
) -> Result<(), GenerateError> {
    for t in Templates::names_under(folder) {
        let rel = t[folder.len()..].trim_end_matches(".j2");
        create_from(
            plan,
            templates,
            t,
            &crate::layout::worker_file(worker, rel),
            ctx,
        )?;
    }
    Ok(())
}

/// Copies this binary's runtime into `platform/runtime/` with its stamp.
fn vendor_runtime(plan: &mut Plan) -> Result<(), GenerateError> {
    for (rel, bytes) in templates::runtime_files() {
        plan.create(
            &format!("{}/{rel}", stamp::RUNTIME_DIR),
            bytes.to_vec(),
            None,
        )?;
    }
    let (version, hash) = runtime_stamp();
    plan.create(
        stamp::STAMP_PATH,
        stamp::render(version, hash).into_bytes(),
        None,
    )
}
