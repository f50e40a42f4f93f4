//! `scaffold check`: runs the rules over a repository and returns what they found.

pub mod baseline;
pub mod cache;
pub mod catalogue;
pub mod cfg_test;
pub mod context;
pub mod crate_names;
pub mod edges;
pub mod finding;
pub mod markdown;
pub mod mentions;
pub mod modtree;
pub mod rules;
pub mod run;
pub mod rust_refs;
pub mod sink;
pub mod suppress;
pub mod workqueue;

use miette::Diagnostic;
use thiserror::Error;

use std::collections::{BTreeMap, BTreeSet};

use crate::changes::ChangeSet;
use crate::repo::Repo;
use baseline::Baseline;
use context::{Context, PendingSave};
use sink::{Outcome, Policy, Severities, Sink};

/// The rules whose findings are caused by the file (or crate) they are reported in
/// ([`rules::Scope::Local`]): with a change set, only their findings in the changed paths
/// are reported; every other rule reads across files and is reported wherever it lands.
pub fn local_rules() -> impl Iterator<Item = &'static str> {
    rules::RULES
        .iter()
        .filter(|r| r.decl.scope == rules::Scope::Local)
        .map(|r| r.id)
}

/// What the user asked of this run.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// `--rule`: run only these rules (all when empty).
    pub only: Vec<String>,
    /// `--since` / `--staged`: report on these changes only.
    pub changes: Option<ChangeSet>,
    /// `--as <agent>`.
    pub agent: Option<String>,
    /// The baseline to apply, if any.
    pub baseline: Option<Baseline>,
    /// `CI=true`.
    pub ci: bool,
    /// Run only the per-file rules ([`local_rules`]) on the changed files: the change set
    /// was found to touch nothing a repo-wide rule reads (see `changes_are_local`).
    pub restricted: bool,
}

/// Whether a change set can only affect per-file rules: every change adds or modifies a
/// `.rs` file or a README.md (no deletion or rename), outside `om/`, `platform/runtime/`
/// and any `tests/` folder, whose text holds nothing a repo-wide rule reads. Manifests,
/// Cargo.toml, deployment files and `.env.example` never qualify.
pub fn changes_are_local(root: &std::path::Path, changes: &ChangeSet) -> bool {
    use crate::changes::ChangeKind;
    !changes.changes.is_empty()
        && changes.changes.iter().all(|c| {
            let p = c.path.as_str();
            matches!(c.kind, ChangeKind::Added | ChangeKind::Modified)
                && (p.ends_with(".rs") || p.ends_with("/README.md"))
                && !p.starts_with(crate::layout::OM_DIR)
                && !p
                    .strip_prefix(crate::layout::runtime::RUNTIME_DIR)
                    .is_some_and(|rest| rest.starts_with('/'))
                && !p.split('/').any(|seg| seg == "tests")
                && crate::repo::read_in_within(root, p, None, crate::repo::TEXT_LIMIT)
                    .is_ok_and(|t| !mentions::Mentions::scan(&t).repo_wide())
        })
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
    let mut severities = Severities::new(catalogue::defaults(), &repo.codemap.policy, &opts.only);
    if opts.restricted {
        let others: Vec<&str> = catalogue::rules()
            .iter()
            .map(|r| r.id)
            .filter(|id| !rules::is_local(id))
            .collect();
        severities.disable(&others);
    }
    if opts.agent.is_none() {
        severities.disable(&[
            rules::ownership_forbidden::ID,
            rules::ownership_outside_writable::ID,
        ]);
    }
    let only: Option<BTreeSet<String>> = opts
        .restricted
        .then(|| {
            opts.changes
                .as_ref()
                .map(|c| c.changes.iter().map(|c| c.path.clone()).collect())
        })
        .flatten();
    let (mut ctx, pending) = Context::build(
        repo,
        opts.changes.as_ref(),
        opts.agent.as_deref(),
        only.as_ref(),
    );
    let sink = run_rules(&ctx, &severities, pending);
    // A run of some rules or some files keeps the results it did not use.
    ctx.memo.save(only.is_some() || !opts.only.is_empty());
    let mut files: Vec<&crate::source::SourceFile> = Vec::new();
    files.push(&repo.codemap_file);
    files.extend(repo.gate_matrix.as_ref().map(|(_, f)| f));
    files.extend(repo.workspace.crates.iter().map(|c| &c.manifest));
    files.extend(ctx.readmes.iter().flatten());
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    let mut suppressions: Vec<suppress::Suppression> =
        files.iter().flat_map(|f| suppress::scan(f)).collect();
    // The sources are sorted by path: a file two crates share is adjacent to itself.
    let mut seen = 0;
    let mut last: Option<&str> = None;
    for s in &ctx.sources {
        if last != Some(s.path.as_str()) {
            last = Some(&s.path);
            seen += 1;
            suppressions.extend(s.suppressions.iter().cloned());
        }
    }
    let files_checked = files.len() + seen;
    let texts = finding_texts(repo, &ctx.sources, &files, &sink);
    // Freed on a pool thread while this one applies the policy and reports: tens of
    // thousands of sources' allocations are a tenth of a warm check.
    let sources = std::mem::take(&mut ctx.sources);
    rayon::spawn(move || drop(sources));
    let scope = opts.changes.as_ref().and_then(|c| scope(repo, c));
    // Fingerprints read what the rules read; a finding the policy adds (a suppression's,
    // the baseline's) is on a file read here.
    let read = |path: &str| {
        texts
            .get(path)
            .cloned()
            .or_else(|| repo.read(path).map(std::sync::Arc::new))
    };
    let policy = Policy {
        rules: &rules::BOOK,
        severities: &severities,
        suppressions: &suppressions,
        baseline: opts.baseline.as_ref(),
        scope: scope.as_ref(),
        read: &read,
        ci: opts.ci,
    };
    let mut outcome = sink.finish(&policy);
    outcome.files_checked = files_checked;
    outcome.texts = texts;
    outcome
}

/// The text of each file a finding is on that this run already holds: a source's (read on
/// first use, and kept; only while it has one name: a hard-linked file is read for its
/// imports but never shown) or a manifest's. Any other file is left to its reader: the
/// sink's fingerprints read it as before, and the reporter only through
/// `inside::read_text`, which refuses a path reached through a symlinked folder (a change
/// set can name one) and a hard-linked file.
fn finding_texts(
    repo: &Repo,
    sources: &[context::Source],
    manifests: &[&crate::source::SourceFile],
    sink: &Sink,
) -> BTreeMap<String, std::sync::Arc<String>> {
    let mut texts = BTreeMap::new();
    for path in sink.paths() {
        let text = match sources.binary_search_by(|s| s.path.as_str().cmp(path)) {
            Ok(i) if repo.showable(path) => Some(sources[i].file().text.clone()),
            Ok(_) => None,
            Err(_) => manifests
                .binary_search_by(|f| f.path.as_str().cmp(path))
                .ok()
                .map(|i| manifests[i].text.clone()),
        };
        if let Some(text) = text {
            texts.insert(path.to_owned(), text);
        }
    }
    texts
}

/// Runs every rule that is on, side by side on plain threads, while this thread writes
/// the check cache. Each rule fills its own sink; they merge in catalogue order (the
/// final sink sorts anyway).
///
/// Plain threads, not rayon's: a rule may block on a value another rule is computing
/// with rayon (the work-queue model), and a rayon thread that blocks there can be
/// handed the blocked rule's own work and wait on itself.
fn run_rules(ctx: &Context<'_>, severities: &Severities, pending: PendingSave<'_>) -> Sink {
    use std::sync::atomic::{AtomicUsize, Ordering};
    type Run = fn(&Context<'_>, &mut Sink);
    let enabled: Vec<Run> = rules::RULES
        .iter()
        .filter(|rule| severities.is_on(rule.id))
        .filter_map(|rule| rule.run)
        .collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, enabled.len().max(1));
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(run) = enabled.get(i) else {
                return done;
            };
            let mut sink = Sink::default();
            run(ctx, &mut sink);
            done.push((i, sink));
        }
    };
    let mut done: Vec<(usize, Sink)> = std::thread::scope(|scope| {
        // The parsers recurse, and the rules parse: the same stack as rayon's threads.
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                std::thread::Builder::new()
                    .stack_size(RULE_STACK)
                    .spawn_scoped(scope, work)
            })
            .collect();
        // This thread writes the cache meanwhile (the rules only read the sources).
        pending.save(&ctx.sources);
        let mut done = Vec::new();
        for handle in workers {
            match handle {
                Ok(h) => done.extend(join_or_resume(h)),
                // No thread to be had: this one does the rest.
                Err(_) => done.extend(work()),
            }
        }
        done
    });
    done.sort_by_key(|(i, _)| *i);
    let mut sink = Sink::default();
    for (_, s) in done {
        sink.absorb(s);
    }
    sink
}

/// Stack for the threads that run rules (as for rayon's, set in `main`).
const RULE_STACK: usize = 64 << 20;

/// A scoped thread's result; its panic, if it panicked, goes on here.
fn join_or_resume<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The paths a change set reports on: the changed paths plus the Cargo.toml and README.md
/// of every crate they fall in. `None` (everything) when a manifest or the workspace root
/// changed, since then any finding may be new.
fn scope(repo: &Repo, changes: &ChangeSet) -> Option<BTreeSet<String>> {
    let repo_wide = [
        crate::repo::codemap::CODEMAP_PATH,
        crate::repo::gate_matrix::GATE_MATRIX_PATH,
        "Cargo.toml",
    ];
    if changes
        .changes
        .iter()
        .any(|c| repo_wide.contains(&c.path.as_str()))
    {
        return None;
    }
    let mut set: BTreeSet<String> = changes.changes.iter().map(|c| c.path.clone()).collect();
    for c in &changes.changes {
        if let Some(k) = repo.workspace.crate_of(&c.path) {
            let krate = &repo.workspace.crates[k];
            set.insert(krate.manifest.path.clone());
            let readme = if krate.dir.is_empty() {
                "README.md".to_owned()
            } else {
                format!("{}/README.md", krate.dir)
            };
            set.insert(readme);
        }
    }
    Some(set)
}
