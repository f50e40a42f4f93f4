//! The one place findings go: severity from the catalogue and `policy:`, suppressions,
//! sorting and dedupe are applied here and nowhere else (cargo-deny's `diag/sink.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::baseline::{self, Baseline, Entry};
use super::finding::{Finding, Severity};
use super::suppress::Suppression;
use crate::repo::codemap::Level;
use crate::repo::yaml::Pos;
use crate::source::SourceFile;

/// What the sink needs to know of the rules, handed in by the caller: the sink imports no
/// rule (the rules push into it, so an import back would tie every rule into one cycle).
/// `check::rules::BOOK` is the one implementation.
pub trait RuleBook: Sync {
    /// Whether `id` names a rule.
    fn known(&self, id: &str) -> bool;
    /// Whether a change set limits `id`'s findings to the files it touched.
    fn is_local(&self, id: &str) -> bool;
    /// The finding for a suppression comment that is wrong in the way `problem` says.
    fn bad_suppression(&self, s: &Suppression, problem: SuppressionProblem) -> Finding;
    /// The finding for a baseline entry (in `file`, at `pos`) that matched no finding.
    fn stale_baseline(&self, file: &str, e: &Entry, pos: Pos) -> Finding;
}

/// What is wrong with a suppression comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuppressionProblem {
    UnknownRule,
    NoReason,
    Unused,
}

/// Collects findings while rules run.
#[derive(Debug, Default)]
pub struct Sink {
    findings: Vec<Finding>,
}

/// Which rules are on and at what severity.
#[derive(Debug, Clone)]
pub struct Severities {
    map: BTreeMap<&'static str, Severity>,
}

impl Severities {
    /// The catalogue's `defaults` (each rule's id and severity), overridden by `policy:`,
    /// limited to `only` when it is not empty.
    pub fn new(
        defaults: impl IntoIterator<Item = (&'static str, Severity)>,
        policy: &BTreeMap<String, Level>,
        only: &[String],
    ) -> Self {
        let map = defaults
            .into_iter()
            .filter(|(id, _)| only.is_empty() || only.iter().any(|o| o == id))
            .filter_map(|(id, severity)| match policy.get(id) {
                Some(Level::Off) => None,
                Some(Level::On(s)) => Some((id, *s)),
                None => Some((id, severity)),
            })
            .collect();
        Severities { map }
    }

    pub fn get(&self, rule: &str) -> Option<Severity> {
        self.map.get(rule).copied()
    }

    /// Turns rules off for this run (e.g. ownership rules without `--as`).
    pub fn disable(&mut self, ids: &[&str]) {
        for id in ids {
            self.map.remove(*id);
        }
    }

    pub fn is_on(&self, rule: &str) -> bool {
        self.map.contains_key(rule)
    }
}

/// What a check run found, ready for a reporter.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    pub suppressed: usize,
    pub baselined: usize,
    pub files_checked: usize,
    /// Every finding of this run before the baseline was applied, as baseline entries
    /// (what `--write-baseline` writes).
    pub current: Vec<Entry>,
    /// The text of each file a rule's finding is on, as this run read it: the reporter
    /// shows its snippets from here, so a file is read once per run.
    pub texts: BTreeMap<String, std::sync::Arc<String>>,
}

impl Outcome {
    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }

    pub fn warnings(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count()
    }
}

impl Sink {
    pub fn push(&mut self, finding: Finding) {
        self.findings.push(finding);
    }

    pub fn extend(&mut self, findings: impl IntoIterator<Item = Finding>) {
        self.findings.extend(findings);
    }

    /// The files the findings so far are on.
    pub fn paths(&self) -> BTreeSet<&str> {
        self.findings.iter().map(|f| f.path.as_str()).collect()
    }

    /// Takes the findings of another sink (one rule's, run on its own thread).
    pub fn absorb(&mut self, other: Sink) {
        self.findings.extend(other.findings);
    }

    /// Applies severities, suppressions, the change-set scope and the baseline; reports bad
    /// or unused suppressions and stale baseline entries; then sorts and dedupes.
    pub fn finish(self, p: &Policy<'_>) -> Outcome {
        let severities = p.severities;
        let suppressions = p.suppressions;
        let book = p.rules;
        let mut used = vec![false; suppressions.len()];
        let valid = |s: &Suppression| s.reason.is_some() && book.known(&s.rule);
        let mut suppressed = 0;
        let mut kept = Vec::new();
        // The valid suppressions of each path, in order: a finding looks at its file's
        // only (a legacy repository can hold thousands of findings and of suppressions).
        let mut by_path: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, s) in suppressions.iter().enumerate() {
            if valid(s) {
                by_path.entry(s.path.as_str()).or_default().push(i);
            }
        }
        for mut f in self.findings {
            let Some(sev) = severities.get(f.rule) else {
                continue;
            };
            f.severity = sev;
            let hit = by_path
                .get(f.path.as_str())
                .into_iter()
                .flatten()
                .map(|&i| (i, &suppressions[i]))
                .find(|(_, s)| s.rule == f.rule && s.covers.contains(&f.line));
            if let Some((i, _)) = hit {
                used[i] = true;
                suppressed += 1;
                continue;
            }
            kept.push(f);
        }
        for (s, was_used) in suppressions.iter().zip(used) {
            let problem = if !book.known(&s.rule) {
                Some(SuppressionProblem::UnknownRule)
            } else if s.reason.is_none() {
                Some(SuppressionProblem::NoReason)
            } else if !was_used && severities.is_on(&s.rule) {
                Some(SuppressionProblem::Unused)
            } else {
                None
            };
            if let Some(problem) = problem {
                let mut f = book.bad_suppression(s, problem);
                if let Some(sev) = severities.get(f.rule) {
                    f.severity = sev;
                    kept.push(f);
                }
            }
        }
        let in_scope = |path: &str| p.scope.is_none_or(|s| s.contains(path));
        // Scope limits the rules whose findings land in the file that causes them; a
        // repo-wide rule's finding may land anywhere a change broke something.
        kept.retain(|f| !book.is_local(f.rule) || in_scope(&f.path));
        kept.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        kept.dedup();

        // Fingerprint what is left; the baseline accepts matching findings (as a multiset).
        // The findings are sorted by path: each file is read once, and only one is held.
        let mut text: Option<(&str, Option<SourceFile>)> = None;
        let mut current = Vec::with_capacity(kept.len());
        for f in &kept {
            if text.as_ref().is_none_or(|(path, _)| *path != f.path) {
                let file = (p.read)(&f.path).map(|t| SourceFile::shared(f.path.clone(), t));
                text = Some((f.path.as_str(), file));
            }
            let file = text.as_ref().and_then(|(_, file)| file.as_ref());
            let line = file.map_or("", |file| file.line(f.line));
            current.push(Entry {
                rule: f.rule.to_owned(),
                path: f.path.clone(),
                fingerprint: baseline::fingerprint(f, line),
            });
        }
        let mut baselined = 0;
        let mut out = Vec::with_capacity(kept.len());
        let mut stale: Vec<Finding> = Vec::new();
        match p.baseline {
            None => out = kept,
            Some(b) => {
                let mut unmatched: Vec<Option<&(Entry, crate::repo::yaml::Pos)>> =
                    b.entries.iter().map(Some).collect();
                // Where each entry stands in the file, earliest last: a finding takes the
                // first entry equal to it that no finding has taken yet, found by lookup
                // rather than by a pass over the whole baseline per finding.
                let mut at: HashMap<&Entry, Vec<usize>> = HashMap::new();
                for (i, (e, _)) in b.entries.iter().enumerate().rev() {
                    at.entry(e).or_default().push(i);
                }
                for (f, entry) in kept.into_iter().zip(&current) {
                    match at.get_mut(entry).and_then(Vec::pop) {
                        Some(i) => {
                            unmatched[i] = None;
                            baselined += 1;
                        }
                        None => out.push(f),
                    }
                }
                for (e, pos) in unmatched.into_iter().flatten() {
                    if severities.is_on(&e.rule) && in_scope(&e.path) {
                        let mut f = book.stale_baseline(&b.file, e, *pos);
                        if let Some(sev) = severities.get(f.rule) {
                            f.severity = if p.ci { Severity::Error } else { sev };
                            stale.push(f);
                        }
                    }
                }
            }
        }
        out.extend(stale);
        out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        Outcome {
            findings: out,
            suppressed,
            baselined,
            files_checked: 0,
            current,
            texts: BTreeMap::new(),
        }
    }
}

/// What `Sink::finish` applies.
pub struct Policy<'a> {
    pub rules: &'a dyn RuleBook,
    pub severities: &'a Severities,
    pub suppressions: &'a [Suppression],
    pub baseline: Option<&'a Baseline>,
    /// With a change set: the paths findings may be reported on.
    pub scope: Option<&'a BTreeSet<String>>,
    /// Reads a repo-relative file (for fingerprints).
    pub read: &'a dyn Fn(&str) -> Option<std::sync::Arc<String>>,
    /// `CI=true`: stale baseline entries are errors.
    pub ci: bool,
}

impl std::fmt::Debug for Policy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("scope", &self.scope)
            .field("ci", &self.ci)
            .finish_non_exhaustive()
    }
}
