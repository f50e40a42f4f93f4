//! The generator checks its own plan (docs/reference.md#the-generator): before a command
//! writes anything, the checker's rules run over the planned tree, and a change that would
//! make `scaffold check` fail is refused, naming each finding — so the generator and the
//! checker cannot disagree.
//!
//! The planned tree is the repository read through the plan (`Repo::load_planned`): every
//! planned file read from the plan, every other from the disk, nothing written (no check
//! cache, no memo; both are read, so the files the plan leaves alone cost what they cost a
//! warm `scaffold check`). Only the errors the plan adds count: a repository that already
//! has findings can still grow, and a warning does not block (it does not fail `scaffold
//! check` either).

use std::collections::BTreeMap;

use super::error::GenerateError;
use super::plan::Plan;
use crate::check::finding::{Finding, Severity};
use crate::repo::overlay::Overlay;

/// What the checker finds in the planned tree that it does not find in the tree now:
/// `Err(GenerateError::PlanFlagged)` when the plan adds an error.
pub(crate) fn check_plan(plan: &Plan) -> Result<(), GenerateError> {
    let planned = Overlay::new(plan.files().map(|(p, f)| (p.clone(), f.after.clone())));
    let after = errors(plan, planned).map_err(|why| GenerateError::PlanFlagged {
        findings: format!("  the planned tree does not load: {why}"),
        count: 1,
    })?;
    if after.is_empty() {
        return Ok(());
    }
    // The tree as it is, checked only when the planned one has errors (most plans have
    // none), to tell the plan's from those it already had.
    let before = errors(plan, Overlay::default()).unwrap_or_default();
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

/// The errors a full `scaffold check` of the plan's repository with `overlay` written
/// reports (no baseline, no agent).
fn errors(plan: &Plan, overlay: Overlay) -> Result<Vec<Finding>, String> {
    let repo = crate::repo::Repo::load_planned(plan.root(), overlay).map_err(|e| e.to_string())?;
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
