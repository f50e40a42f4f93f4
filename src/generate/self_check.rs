//! The generator checks its own plan (docs/reference.md#the-generator): before a command
//! writes anything, the checker's rules run over the planned tree, and a change that would
//! make `scaffold check` fail is refused, naming each finding — so the generator and the
//! checker cannot disagree.
//!
//! The planned tree is a scratch copy outside the repository: the files the checker would
//! read (the same walk, ignore files honoured) copied, checked, the plan applied, checked
//! again. Only the errors the plan adds count: a repository that already has findings can
//! still grow, and a warning does not block (it does not fail `scaffold check` either).

use std::collections::BTreeMap;
use std::path::Path;

use super::error::GenerateError;
use super::plan::Plan;
use crate::check::finding::{Finding, Severity};

/// The largest file copied into the scratch tree: past it the checker reads no file
/// either, so both runs see the same gap.
const COPY_LIMIT: u64 = crate::repo::TEXT_LIMIT;

/// What the checker finds in the planned tree that it does not find in the tree now:
/// `Err(GenerateError::PlanFlagged)` when the plan adds an error.
pub(crate) fn check_plan(plan: &Plan) -> Result<(), GenerateError> {
    let root = plan.root();
    let scratch = tempfile::Builder::new()
        .prefix("scaffold-plan-")
        .tempdir()
        .map_err(|e| scratch_error(&format!("cannot make a scratch directory: {e}")))?;
    let tree = &scratch.path().join("planned");
    copy_tree(root, tree)?;
    seed(root, tree);
    for (path, file) in plan.files() {
        put(tree, path, &file.after)?;
    }
    let after = errors(tree).map_err(|why| GenerateError::PlanFlagged {
        findings: format!("  the planned tree does not load: {why}"),
        count: 1,
    })?;
    if after.is_empty() {
        return Ok(());
    }
    // The tree as it is, checked only when the planned one has errors (most plans have
    // none), to tell the plan's from those it already had.
    let before_tree = scratch.path().join("before");
    copy_tree(root, &before_tree)?;
    seed(root, &before_tree);
    let before = errors(&before_tree).unwrap_or_default();
    let added = added(&before, &after);
    if added.is_empty() {
        return Ok(());
    }
    Err(GenerateError::PlanFlagged {
        count: added.len(),
        findings: added
            .iter()
            .map(|f| format!("  {} {}:{}: {}", f.rule, f.path, f.line, f.message))
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// The checker's caches of `root` copied into the scratch tree `tree`.
fn seed(root: &Path, tree: &Path) {
    for rel in [
        crate::check::cache::FILE_REL,
        crate::check::workqueue::memo::FILE,
    ] {
        crate::check::cache::seed(root, tree, rel);
    }
}

fn scratch_error(why: &str) -> GenerateError {
    GenerateError::PlanFlagged {
        findings: format!("  the plan could not be checked: {why}"),
        count: 1,
    }
}

/// Copies every file the checker's walk finds under `root` into `tree`, read the way the
/// checker reads (inside the root, no symlink followed); a file it could not read is left
/// out of both runs alike.
fn copy_tree(root: &Path, tree: &Path) -> Result<(), GenerateError> {
    let walk = crate::repo::files::walk(root, false);
    for rel in &walk.files {
        let Ok(Some(bytes)) = crate::repo::inside::read_bytes(root, rel, COPY_LIMIT) else {
            continue;
        };
        put(tree, rel, &bytes)?;
    }
    Ok(())
}

/// Writes `bytes` as `rel` (repo-relative, checked when planned or walked) in `tree`.
fn put(tree: &Path, rel: &str, bytes: &[u8]) -> Result<(), GenerateError> {
    let to = tree.join(rel);
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| scratch_error(&format!("cannot make {}: {e}", parent.display())))?;
    }
    std::fs::write(&to, bytes).map_err(|e| scratch_error(&format!("cannot write {rel}: {e}")))
}

/// The errors a full `scaffold check` of `tree` reports (no baseline, no agent).
fn errors(tree: &Path) -> Result<Vec<Finding>, String> {
    let repo = crate::repo::Repo::load(tree).map_err(|e| e.to_string())?;
    let outcome = crate::check::run(&repo, &crate::check::CheckOptions::default());
    Ok(outcome
        .findings
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .collect())
}

/// The findings of `after` that `before` does not have, counted by rule, path and message
/// (lines move when the plan inserts above a finding).
fn added<'a>(before: &[Finding], after: &'a [Finding]) -> Vec<&'a Finding> {
    let mut had: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    for f in before {
        *had.entry((f.rule, f.path.as_str(), f.message.as_str()))
            .or_default() += 1;
    }
    after
        .iter()
        .filter(
            |f| match had.get_mut(&(f.rule, f.path.as_str(), f.message.as_str())) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            },
        )
        .collect()
}
