//! `scaffold check`: runs the rules over a repository and returns what they found.

pub mod catalogue;
pub mod context;
pub mod edges;
pub mod finding;
pub mod markdown;
pub mod rules;
pub mod rust_refs;
pub mod sink;
pub mod suppress;
pub mod workqueue;

use miette::Diagnostic;
use thiserror::Error;

use crate::repo::Repo;
use context::Context;
use sink::{Outcome, Severities, Sink};

/// What the user asked of this run.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// `--rule`: run only these rules (all when empty).
    pub only: Vec<String>,
}

#[derive(Debug, Error, Diagnostic)]
pub enum CheckError {
    #[error("unknown rule `{id}`")]
    #[diagnostic(
        code(scaffold::unknown_rule),
        help("{hint}run `scaffold rules` for the list of rule ids")
    )]
    UnknownRule { id: String, hint: String },
}

/// Validates `--rule` ids, collecting every unknown one.
pub fn validate_rule_ids(ids: &[String]) -> Result<(), Vec<CheckError>> {
    let known: Vec<&str> = catalogue::rules().iter().map(|r| r.id).collect();
    let errors: Vec<CheckError> = ids
        .iter()
        .filter(|id| !known.contains(&id.as_str()))
        .map(|id| CheckError::UnknownRule {
            id: id.clone(),
            hint: crate::repo::manifest::closest(id, &known)
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default(),
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Runs every enabled rule over `repo`.
pub fn run(repo: &Repo, opts: &CheckOptions) -> Outcome {
    let severities = Severities::new(&repo.codemap.policy, &opts.only);
    let ctx = Context::build(repo);
    let mut sink = Sink::default();
    for rule in rules::RULES {
        if let Some(run) = rule.run {
            if severities.is_on(rule.id) {
                run(&ctx, &mut sink);
            }
        }
    }
    let mut files: Vec<&crate::source::SourceFile> = Vec::new();
    files.push(&repo.codemap_file);
    files.extend(repo.gate_matrix.as_ref().map(|(_, f)| f));
    files.extend(repo.workspace.crates.iter().map(|c| &c.manifest));
    files.extend(ctx.readmes.iter().flatten());
    files.extend(ctx.sources.iter().map(|s| &s.file));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    let suppressions: Vec<suppress::Suppression> =
        files.iter().flat_map(|f| suppress::scan(f)).collect();
    let mut outcome = sink.finish(&severities, &suppressions);
    outcome.files_checked = files.len();
    outcome
}
