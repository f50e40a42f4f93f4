//! The one place findings go: severity from the catalogue and `policy:`, suppressions,
//! sorting and dedupe are applied here and nowhere else (cargo-deny's `diag/sink.rs`).

use std::collections::BTreeMap;

use super::catalogue;
use super::finding::{Finding, Severity};
use super::rules::suppression_invalid;
use super::suppress::Suppression;
use crate::repo::codemap::Level;

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

    /// Applies severities and suppressions, reports bad or unused suppressions, then sorts
    /// and dedupes.
    pub fn finish(self, severities: &Severities, suppressions: &[Suppression]) -> Outcome {
        let mut used = vec![false; suppressions.len()];
        let valid = |s: &Suppression| s.reason.is_some() && catalogue::rule(&s.rule).is_some();
        let mut suppressed = 0;
        let mut out = Vec::new();
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
            out.push(f);
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
                    out.push(f);
                }
            }
        }
        out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        out.dedup();
        Outcome {
            findings: out,
            suppressed,
            baselined: 0,
            files_checked: 0,
        }
    }
}
