//! The generator: `scaffold init`, `scaffold namespace`, `scaffold worker`. Each command
//! plans into memory ([`plan::Plan`]), renders templates ([`templates`]), formats Rust
//! ([`rustfmt`]), parses back every file ([`validate`]) and only then writes, all or nothing
//! ([`write`]). `--dry-run` stops before writing and shows the plan as unified diffs. Each
//! command runs as one transaction ([`txn`]) holding the repository lock ([`lock`]) from
//! before it reads the tree, so two runs never plan from the same tree and a killed run is
//! finished or undone by the next.

mod error;
pub mod init;
pub mod integration;
pub mod lock;
pub mod lockfile;
pub mod markers;
pub mod members;
pub mod names;
pub mod namespace;
pub mod orchestration;
pub mod owners;
pub mod plan;
pub mod producer;
pub mod provider_deploy;
pub mod rustfmt;
pub mod templates;
pub mod txn;
pub mod validate;
pub mod worker;
pub mod write;

use std::path::PathBuf;

pub use error::GenerateError;
use minijinja::Value;
use plan::Plan;

/// What a generator command did (or, with `--dry-run`, would do).
#[derive(Debug)]
pub struct Generated {
    /// `init`, `namespace` or `worker`.
    pub command: &'static str,
    /// The repository root.
    pub root: PathBuf,
    /// Repo-relative paths created, sorted.
    pub created: Vec<String>,
    /// Repo-relative paths changed, sorted.
    pub changed: Vec<String>,
    pub dry_run: bool,
    /// The plan as unified diffs (only with `--dry-run`).
    pub diff: Option<String>,
    /// Commands to run next.
    pub next: Vec<String>,
    /// Whether rustfmt formatted the Rust files.
    pub formatted: rustfmt::Formatted,
    /// What the command finished or undid of a killed run before it began.
    pub recovered: Option<txn::Recovered>,
    /// The agents of agent/codemap.yml that own the files created and changed.
    pub owners: owners::Owners,
}

/// Formats, validates and (unless `dry_run`) writes `plan`, ending `txn`.
pub(crate) fn finish(
    command: &'static str,
    txn: txn::Txn,
    mut plan: Plan,
    dry_run: bool,
    next: Vec<String>,
) -> Result<Generated, GenerateError> {
    let formatted = rustfmt::format(&mut plan, "2024", &txn)?;
    validate::validate(&plan)?;
    let owners = owners::of(&plan);
    let recovered = txn.recovered.clone();
    let diff = if dry_run {
        // Dropping the transaction unplanned removes its folder and releases the lock.
        drop(txn);
        Some(unified_diff(&plan))
    } else {
        write::commit(txn, &plan)?;
        None
    };
    Ok(Generated {
        command,
        root: plan.root().to_path_buf(),
        created: plan.created(),
        changed: plan.changed(),
        dry_run,
        diff,
        next,
        formatted,
        recovered,
        owners,
    })
}

/// The plan as unified diffs, file by file in path order (`/dev/null` for created files).
pub fn unified_diff(plan: &Plan) -> String {
    let mut out = String::new();
    for (path, file) in plan.files() {
        let before = file
            .before
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let after = String::from_utf8_lossy(&file.after);
        if file.before.is_some() && before == after {
            continue;
        }
        let old = if file.before.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let diff = similar::TextDiff::from_lines(before.as_ref(), after.as_ref());
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&old, &format!("b/{path}"))
                .to_string(),
        );
    }
    out
}

/// The template variables every command has: the project's name in its three spellings.
pub(crate) fn project_vars(name: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("name", Value::from(name)),
        ("name_snake", Value::from(names::snake(name))),
        ("NAME", Value::from(names::shouty(name))),
    ]
}

/// A template context from `(key, value)` pairs.
pub(crate) fn context(vars: &[(&'static str, Value)]) -> Value {
    Value::from_iter(vars.iter().map(|(k, v)| (*k, v.clone())))
}

/// Renders `template` and plans it as a new file at `path`.
pub(crate) fn create_from(
    plan: &mut Plan,
    templates: &templates::Templates,
    template: &str,
    path: &str,
    ctx: &Value,
) -> Result<(), GenerateError> {
    let r = templates.render(template, ctx)?;
    plan.create(path, r.text.into_bytes(), Some((r.template, r.overridden)))
}

/// The project name a repository declares in agent/codemap.yml.
pub(crate) fn project_name(root: &std::path::Path) -> Result<String, GenerateError> {
    let rel = crate::repo::codemap::CODEMAP_PATH;
    let text = crate::repo::inside::read_text(root, rel, crate::repo::MANIFEST_LIMIT)
        .map_err(|reason| GenerateError::Refused {
            path: rel.to_owned(),
            reason,
        })?
        .ok_or(GenerateError::NoCodemapName)?;
    let codemap =
        crate::repo::codemap::Codemap::parse(&text).map_err(|_| GenerateError::NoCodemapName)?;
    codemap.name.ok_or(GenerateError::NoCodemapName)
}

/// Every `.rs` file under `root/rel` (repo-relative, sorted; `target/` and hidden folders
/// skipped).
pub(crate) fn rust_files(root: &std::path::Path, rel: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        match e.file_type() {
            Ok(t) if t.is_dir() && name != "target" && !name.starts_with('.') => {
                rust_files(root, &child, out);
            }
            Ok(t) if t.is_file() && name.ends_with(".rs") => out.push(child),
            _ => {}
        }
    }
}
