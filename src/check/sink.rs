//! The one place findings go: severity from the catalogue and `policy:`, suppressions,
//! sorting and dedupe are applied here and nowhere else (cargo-deny's `diag/sink.rs`).

use std::collections::{BTreeMap, BTreeSet};

use super::baseline::{self, Baseline, Entry};
use super::catalogue;
use super::finding::{Finding, Severity};
use super::rules::{baseline_stale, suppression_invalid};
use super::suppress::Suppression;
use crate::repo::codemap::Level;
use crate::source::SourceFile;

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
    /// Catalogue defaults, overridden by `policy:`, limited to `only` when it is not empty.
    pub fn new(policy: &BTreeMap<String, Level>, only: &[String]) -> Self {
        let map = catalogue::rules()
            .iter()
            .filter(|r| only.is_empty() || only.iter().any(|o| o == r.id))
            .filter_map(|r| match policy.get(r.id) {
                Some(Level::Off) => None,
                Some(Level::On(s)) => Some((r.id, *s)),
                None => Some((r.id, r.severity)),
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

    /// Takes the findings of another sink (one rule's, run on its own thread).
    pub fn absorb(&mut self, other: Sink) {
        self.findings.extend(other.findings);
    }

    /// Applies severities, suppressions, the change-set scope and the baseline; reports bad
    /// or unused suppressions and stale baseline entries; then sorts and dedupes.
    pub fn finish(self, p: &Policy<'_>) -> Outcome {
        let severities = p.severities;
        let suppressions = p.suppressions;
        let mut used = vec![false; suppressions.len()];
        let valid = |s: &Suppression| s.reason.is_some() && catalogue::rule(&s.rule).is_some();
        let mut suppressed = 0;
        let mut kept = Vec::new();
        for mut f in self.findings {
            let Some(sev) = severities.get(f.rule) else {
                continue;
            };
            f.severity = sev;
            let hit = suppressions.iter().enumerate().find(|(_, s)| {
                valid(s) && s.rule == f.rule && s.path == f.path && s.covers.contains(&f.line)
            });
            if let Some((i, _)) = hit {
                used[i] = true;
                suppressed += 1;
                continue;
            }
            kept.push(f);
        }
        if let Some(sev) = severities.get(suppression_invalid::ID) {
            for (s, was_used) in suppressions.iter().zip(used) {
                let problem = if catalogue::rule(&s.rule).is_none() {
                    Some(suppression_invalid::unknown_rule(s))
                } else if s.reason.is_none() {
                    Some(suppression_invalid::no_reason(s))
                } else if !was_used && severities.is_on(&s.rule) {
                    Some(suppression_invalid::unused(s))
                } else {
                    None
                };
                if let Some(mut f) = problem {
                    f.severity = sev;
                    kept.push(f);
                }
            }
        }
        let in_scope = |path: &str| p.scope.is_none_or(|s| s.contains(path));
        // Scope limits the rules whose findings land in the file that causes them; a
        // repo-wide rule's finding may land anywhere a change broke something.
        kept.retain(|f| !super::LOCAL_RULES.contains(&f.rule) || in_scope(&f.path));
        kept.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        kept.dedup();

        // Fingerprint what is left; the baseline accepts matching findings (as a multiset).
        let mut texts: BTreeMap<String, Option<SourceFile>> = BTreeMap::new();
        let mut current = Vec::with_capacity(kept.len());
        for f in &kept {
            let file = texts
                .entry(f.path.clone())
                .or_insert_with(|| (p.read)(&f.path).map(|t| SourceFile::new(f.path.clone(), t)));
            let line = file.as_ref().map_or("", |file| file.line(f.line));
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
                for (f, entry) in kept.into_iter().zip(&current) {
                    let slot = unmatched
                        .iter_mut()
                        .find(|e| e.is_some_and(|(be, _)| be == entry));
                    match slot {
                        Some(slot) => {
                            *slot = None;
                            baselined += 1;
                        }
                        None => out.push(f),
                    }
                }
                if severities.is_on(baseline_stale::ID) {
                    for (e, pos) in unmatched.into_iter().flatten() {
                        if severities.is_on(&e.rule) && in_scope(&e.path) {
                            let mut f = baseline_stale::finding(&b.file, e, *pos);
                            f.severity = if p.ci {
                                Severity::Error
                            } else {
                                severities
                                    .get(baseline_stale::ID)
                                    .unwrap_or(Severity::Warning)
                            };
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
        }
    }
}

/// What `Sink::finish` applies.
pub struct Policy<'a> {
    pub severities: &'a Severities,
    pub suppressions: &'a [Suppression],
    pub baseline: Option<&'a Baseline>,
    /// With a change set: the paths findings may be reported on.
    pub scope: Option<&'a BTreeSet<String>>,
    /// Reads a repo-relative file (for fingerprints).
    pub read: &'a dyn Fn(&str) -> Option<String>,
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
