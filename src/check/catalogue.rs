//! The rule catalogue (built from the rules' declarations; `rules/catalogue.yml` is its
//! rendering); the worker roles it re-exports live in [`crate::layout::roles`].

use std::sync::OnceLock;

use super::finding::Severity;

#[derive(Debug, Clone)]
pub struct RuleInfo {
    pub id: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

/// Every rule, in the order of the rule table, from each rule's declaration.
pub fn rules() -> &'static [RuleInfo] {
    static RULES: OnceLock<Vec<RuleInfo>> = OnceLock::new();
    RULES.get_or_init(|| {
        super::rules::RULES
            .iter()
            .map(|r| RuleInfo {
                id: r.decl.id,
                severity: r.decl.severity,
                summary: r.decl.summary,
            })
            .collect()
    })
}

/// Each rule's id and default severity (what `Severities::new` starts from).
pub fn defaults() -> impl Iterator<Item = (&'static str, Severity)> {
    rules().iter().map(|r| (r.id, r.severity))
}

pub fn rule(id: &str) -> Option<&'static RuleInfo> {
    rules().iter().find(|r| r.id == id)
}

pub use crate::layout::roles::{Requirement, Roles, roles};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_parses_and_ids_are_unique() {
        let mut ids: Vec<_> = rules().iter().map(|r| r.id).collect();
        assert!(ids.len() >= 13);
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "duplicate rule id in src/check/rules/");
    }
}
