//! How every generator command ends: the plan formatted, parsed back, its owners found,
//! then written (or shown as a diff), and what was done, for the reporter.

use std::path::PathBuf;

use super::error::GenerateError;
use super::plan::Plan;
use super::{owners, rustfmt, self_check, txn, validate, write};

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
    // Nothing is written (or shown as to be written) that `scaffold check` would fail on.
    self_check::check_plan(&plan)?;
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
