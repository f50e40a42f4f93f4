//! `scaffold check`'s policy, between the CLI and the engine: which tree to load (the
//! pre-commit fast path reads git's file list and parses the staged files only), what the
//! arguments may combine, which baseline applies, and `--write-baseline` (which only
//! shrinks under CI). A manifest that does not load becomes `manifest-invalid` findings
//! through the same sink as every rule's. `app.rs` resolves the arguments, calls
//! [`Run::execute`], prints what it returns and maps it to an exit code.

use std::path::Path;

use miette::Diagnostic;
use thiserror::Error;

use super::baseline::{self, Baseline};
use super::sink::{Outcome, Policy, Severities, Sink};
use super::{CheckOptions, changes_are_local, rules};
use crate::changes::{self, ChangeSet, GitError};
use crate::repo::{Repo, RepoError};

/// One `scaffold check`, its arguments resolved.
#[derive(Debug, Default)]
pub struct Run {
    /// `--rule`: only these rules (all when empty).
    pub rules: Vec<String>,
    /// The change set (`--since`, `--staged`, or the paths named), if any.
    pub changes: Option<ChangeSet>,
    /// `--staged`: the change set is the index (the pre-commit hook).
    pub staged: bool,
    /// Whether the run covers only part of the repository (`--rule`, `--since`,
    /// `--staged` or paths): it may not write the baseline.
    pub partial: bool,
    /// `--as <agent>`.
    pub agent: Option<String>,
    /// `--baseline <file>` (repository-relative), when named; else the default.
    pub baseline: Option<String>,
    /// `--write-baseline`.
    pub write_baseline: bool,
    /// `CI=true`: stale baseline entries are errors and the baseline may not grow.
    pub ci: bool,
}

/// What a run came to.
#[derive(Debug)]
pub enum Done {
    /// The rules ran: a finding of severity error fails the run.
    Checked(Outcome),
    /// A manifest did not load: its problems as `manifest-invalid` findings. The run is a
    /// configuration error.
    ManifestInvalid(Outcome),
    /// `--write-baseline` wrote `path` with `entries` entries (it held `previous`).
    BaselineWritten {
        path: String,
        entries: usize,
        previous: usize,
    },
}

#[derive(Debug, Error, Diagnostic)]
pub enum RunError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Repo(#[from] RepoError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Git(#[from] GitError),
    #[error("unknown agent `{name}`")]
    #[diagnostic(
        code(scaffold::unknown_agent),
        help("agents in agent/codemap.yml: {known}")
    )]
    UnknownAgent { name: String, known: String },
    #[error("--write-baseline records every finding of a full run")]
    #[diagnostic(
        code(scaffold::usage),
        help(
            "run `scaffold check --write-baseline` without --rule, --since or --staged; a partial run would drop the other entries"
        )
    )]
    PartialBaseline,
    #[error("--as needs a change set")]
    #[diagnostic(
        code(scaffold::usage),
        help("add --since <rev> or --staged: ownership is checked on what changed")
    )]
    AgentWithoutChanges,
    #[error("no baseline at {file}")]
    #[diagnostic(
        code(scaffold::baseline_missing),
        help(
            "check the path given to --baseline, or create the file with `scaffold check --write-baseline --baseline {file}`"
        )
    )]
    BaselineMissing { file: String },
    #[error("refusing to add {count} entries to {file} under CI=true")]
    #[diagnostic(
        code(scaffold::baseline_grows),
        help(
            "the baseline only shrinks in CI: fix the new findings ({first}), or write the baseline locally in a reviewed change"
        )
    )]
    BaselineGrows {
        count: usize,
        file: String,
        first: String,
    },
    #[error("cannot write {}", root.join(path).display())]
    #[diagnostic(code(scaffold::io), help("check the permissions of the directory"))]
    WriteBaseline {
        root: std::path::PathBuf,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Run {
    /// Checks the repository at `root`.
    pub fn execute(self, root: &Path) -> Result<Done, RunError> {
        let loaded = match self.load(root) {
            Ok(loaded) => loaded,
            Err(RunError::Repo(RepoError::Manifest { problems, .. })) => {
                return Ok(Done::ManifestInvalid(manifest_invalid(&problems)));
            }
            Err(e) => return Err(e),
        };
        let (loaded, restricted) = loaded;
        if let Some(agent) = &self.agent
            && !loaded.codemap.agents.contains_key(agent)
        {
            let known: Vec<&str> = loaded.codemap.agents.keys().map(String::as_str).collect();
            return Err(RunError::UnknownAgent {
                name: agent.clone(),
                known: if known.is_empty() {
                    "(none)".into()
                } else {
                    known.join(", ")
                },
            });
        }
        if self.write_baseline && self.partial {
            return Err(RunError::PartialBaseline);
        }
        if self.agent.is_some() && self.changes.is_none() {
            return Err(RunError::AgentWithoutChanges);
        }
        let baseline_rel = self
            .baseline
            .clone()
            .unwrap_or_else(|| baseline::BASELINE_PATH.to_owned());
        // A baseline named on the command line must be there (unless it is being written):
        // a typo would otherwise check against an empty baseline and report everything as
        // new, or, worse, pass a gate that meant to compare.
        if self.baseline.is_some()
            && !self.write_baseline
            && std::fs::symlink_metadata(root.join(&baseline_rel)).is_err()
        {
            return Err(RunError::BaselineMissing { file: baseline_rel });
        }
        let baseline = match Baseline::load(root, &baseline_rel) {
            Ok(b) => b,
            Err(problems) => return Ok(Done::ManifestInvalid(manifest_invalid(&problems))),
        };
        let opts = CheckOptions {
            only: self.rules,
            changes: self.changes,
            agent: self.agent,
            baseline: (!self.write_baseline).then_some(baseline.clone()),
            ci: self.ci,
            restricted,
        };
        let outcome = super::run(&loaded, &opts);
        if !self.write_baseline {
            return Ok(Done::Checked(outcome));
        }
        let old: Vec<_> = baseline.entries.iter().map(|(e, _)| e.clone()).collect();
        let mut current = outcome.current;
        current.sort();
        if self.ci {
            let added = baseline::added(&old, &current);
            if let Some(first) = added.first() {
                return Err(RunError::BaselineGrows {
                    count: added.len(),
                    file: baseline_rel,
                    first: format!("{} in {}", first.rule, first.path),
                });
            }
        }
        let bytes = Baseline::render(&current);
        crate::repo::inside::replace_file(root, &baseline_rel, bytes.as_bytes()).map_err(
            |source| RunError::WriteBaseline {
                root: root.to_path_buf(),
                path: baseline_rel.clone(),
                source,
            },
        )?;
        Ok(Done::BaselineWritten {
            path: baseline_rel,
            entries: current.len(),
            previous: old.len(),
        })
    }

    /// The repository, and whether only the per-file rules run: a pre-commit run whose
    /// staged files only they can see reads git's file list instead of walking the tree,
    /// and parses the staged files only.
    fn load(&self, root: &Path) -> Result<(Repo, bool), RunError> {
        let restricted = self.staged
            && self.rules.is_empty()
            && self
                .changes
                .as_ref()
                .is_some_and(|c| changes_are_local(root, c));
        // The walk takes the sources' metadata only where a cache can use it.
        let load_all = |root: &Path| {
            if super::cache::exists(root) {
                Repo::load_with_stats(root)
            } else {
                Repo::load(root)
            }
        };
        if !restricted {
            return Ok((load_all(root)?, false));
        }
        let listed = Repo::load_listed(root, changes::tracked_files(root)?)?;
        // Every staged file must belong to a member crate for the per-file view to be whole.
        let whole = self.changes.as_ref().is_none_or(|c| {
            c.changes
                .iter()
                .all(|ch| listed.workspace.crate_of(&ch.path).is_some())
        });
        Ok(if whole {
            (listed, true)
        } else {
            (load_all(root)?, false)
        })
    }
}

/// Manifest problems as `manifest-invalid` findings, through the sink like every rule's
/// (severity, sorting and dedupe applied there); the files checked are the manifests the
/// problems are in (the run stopped there).
pub fn manifest_invalid(problems: &[crate::repo::manifest::Problem]) -> Outcome {
    let mut sink = Sink::default();
    sink.extend(problems.iter().map(rules::manifest_invalid::finding));
    let severities = Severities::new(super::catalogue::defaults(), &Default::default(), &[]);
    let read = |_: &str| None;
    let mut outcome = sink.finish(&Policy {
        rules: &rules::BOOK,
        severities: &severities,
        suppressions: &[],
        baseline: None,
        scope: None,
        read: &read,
        ci: false,
    });
    outcome.files_checked = problems
        .iter()
        .map(|p| p.file.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    outcome
}
