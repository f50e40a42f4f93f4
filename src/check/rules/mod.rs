//! The rules. One rule = one file, whose `//!` doc comment is what `scaffold explain`
//! prints and whose `RULE` declares it once: id, default severity, scope, summary, and the
//! README row. This table is the only list of rules; `scaffold rules`,
//! `rules/catalogue.yml` and the README's rule table are built from it (tests fail when
//! either file is stale).

use super::context::Context;
use super::sink::Sink;

pub mod baseline_stale;
pub mod crate_unlayered;
pub mod dependency_forbidden;
pub mod file_unowned;
pub mod gate_pattern_dead;
pub mod gate_unknown;
pub mod generated_edited;
pub mod handler_builds_context;
pub mod import_forbidden;
pub mod import_undeclared;
pub mod kind_duplicate;
pub mod kind_requires_mismatch;
pub mod kind_undescribed;
pub mod kind_unhandled;
pub mod kind_unregistered_handler;
pub mod kind_untested;
pub mod lane_undeployed;
pub mod manager_enqueues;
pub mod manifest_invalid;
pub mod namespace_bare;
pub mod orchestration_unmapped;
pub mod ownership_forbidden;
pub mod ownership_outside_writable;
pub mod remote_worker_database;
pub mod runtime_drift;
pub mod setting_undeployed;
pub mod settings_undocumented;
pub mod source_unparsed;
pub mod suppression_invalid;
pub mod worker_readme_missing;
pub mod worker_role_unknown;
pub mod worker_shell_exec;
pub mod worker_strategy_missing;
pub mod worker_strategy_placeholder;

/// Whether a rule's findings are caused by the file they are reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Caused by the file (or crate) it is reported in: with a change set, only its
    /// findings in the changed paths are reported, and a change touching only such files
    /// runs only these rules.
    Local,
    /// Reads across files (a kind and its handler, a lane and the deployment files):
    /// reported wherever it lands.
    RepoWide,
}

/// A rule's declaration, in its file.
#[derive(Debug)]
pub struct Decl {
    pub id: &'static str,
    /// The default severity (`policy:` in the codemap may change it).
    pub severity: crate::check::finding::Severity,
    pub scope: Scope,
    /// One line: `scaffold rules`, the catalogue, SARIF.
    pub summary: &'static str,
    /// Said after the severity in the README's table (` (exit 2)`), or empty.
    pub severity_note: &'static str,
    /// What it finds, as the README's table says it (Markdown).
    pub finds: &'static str,
}

/// A rule's code and documentation.
#[derive(Debug)]
pub struct Rule {
    pub id: &'static str,
    pub decl: &'static Decl,
    /// The rule file's source; its leading `//!` lines are the documentation.
    source: &'static str,
    /// Runs over the repository; `None` for rules the engine itself raises
    /// (manifest problems, suppressions).
    pub run: Option<fn(&Context<'_>, &mut Sink)>,
}

impl Rule {
    /// The rule's documentation as Markdown.
    pub fn doc(&self) -> String {
        let mut out = String::new();
        for line in self.source.lines() {
            let Some(rest) = line.strip_prefix("//!") else {
                break;
            };
            out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            out.push('\n');
        }
        out
    }
}

macro_rules! rule {
    ($module:ident, $run:expr) => {
        Rule {
            id: $module::RULE.id,
            decl: &$module::RULE,
            source: include_str!(concat!(stringify!($module), ".rs")),
            run: $run,
        }
    };
}

pub static RULES: &[Rule] = &[
    rule!(manifest_invalid, None),
    rule!(worker_readme_missing, Some(worker_readme_missing::run)),
    rule!(worker_role_unknown, Some(worker_role_unknown::run)),
    rule!(worker_strategy_missing, Some(worker_strategy_missing::run)),
    rule!(
        worker_strategy_placeholder,
        Some(worker_strategy_placeholder::run)
    ),
    rule!(import_forbidden, Some(import_forbidden::run)),
    rule!(dependency_forbidden, Some(dependency_forbidden::run)),
    rule!(remote_worker_database, Some(remote_worker_database::run)),
    rule!(import_undeclared, Some(import_undeclared::run)),
    rule!(crate_unlayered, Some(crate_unlayered::run)),
    rule!(gate_unknown, Some(gate_unknown::run)),
    rule!(gate_pattern_dead, Some(gate_pattern_dead::run)),
    rule!(kind_unhandled, Some(kind_unhandled::run)),
    rule!(
        kind_unregistered_handler,
        Some(kind_unregistered_handler::run)
    ),
    rule!(kind_requires_mismatch, Some(kind_requires_mismatch::run)),
    rule!(kind_untested, Some(kind_untested::run)),
    rule!(kind_duplicate, Some(kind_duplicate::run)),
    rule!(kind_undescribed, Some(kind_undescribed::run)),
    rule!(lane_undeployed, Some(lane_undeployed::run)),
    rule!(setting_undeployed, Some(setting_undeployed::run)),
    rule!(manager_enqueues, Some(manager_enqueues::run)),
    rule!(orchestration_unmapped, Some(orchestration_unmapped::run)),
    rule!(handler_builds_context, Some(handler_builds_context::run)),
    rule!(namespace_bare, Some(namespace_bare::run)),
    rule!(settings_undocumented, Some(settings_undocumented::run)),
    rule!(worker_shell_exec, Some(worker_shell_exec::run)),
    rule!(runtime_drift, Some(runtime_drift::run)),
    rule!(suppression_invalid, None),
    rule!(source_unparsed, Some(source_unparsed::run)),
    rule!(ownership_forbidden, Some(ownership_forbidden::run)),
    rule!(
        ownership_outside_writable,
        Some(ownership_outside_writable::run)
    ),
    rule!(generated_edited, Some(generated_edited::run)),
    rule!(file_unowned, Some(file_unowned::run)),
    rule!(baseline_stale, None),
];

pub fn get(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Whether rule `id` is [`Scope::Local`].
/// What the sink asks of the rules (it imports none of them).
#[derive(Debug)]
pub struct Book;

/// The rule book the sink is handed.
pub static BOOK: Book = Book;

impl crate::check::sink::RuleBook for Book {
    fn known(&self, id: &str) -> bool {
        get(id).is_some()
    }

    fn is_local(&self, id: &str) -> bool {
        is_local(id)
    }

    fn bad_suppression(
        &self,
        s: &crate::check::suppress::Suppression,
        problem: crate::check::sink::SuppressionProblem,
    ) -> crate::check::finding::Finding {
        use crate::check::sink::SuppressionProblem as P;
        match problem {
            P::UnknownRule => suppression_invalid::unknown_rule(s),
            P::NoReason => suppression_invalid::no_reason(s),
            P::Unused => suppression_invalid::unused(s),
        }
    }

    fn stale_baseline(
        &self,
        file: &str,
        e: &crate::check::baseline::Entry,
        pos: crate::repo::yaml::Pos,
    ) -> crate::check::finding::Finding {
        baseline_stale::finding(file, e, pos)
    }
}

pub fn is_local(id: &str) -> bool {
    get(id).is_some_and(|r| r.decl.scope == Scope::Local)
}

/// `rules/catalogue.yml`, as built from the declarations.
pub fn catalogue_yml() -> String {
    let mut out = String::from(
        "# The rule catalogue: one entry per rule id. Ids are a public contract (docs/rules/<id>.md).\n\
         # Built from each rule's `RULE` declaration in src/check/rules/<id with _>.rs (a test\n\
         # fails when this file is stale); each rule also has a fixture repo under\n\
         # fixtures/rules/<id>/ and snapshots under tests/snapshots/.\n\
         version: 1\n\
         rules:\n",
    );
    for r in RULES {
        out.push_str(&format!(
            "  - id: {}\n    severity: {}\n    summary: {}\n",
            r.decl.id,
            r.decl.severity.as_str(),
            r.decl.summary
        ));
    }
    out
}

/// The README's rule table, as built from the declarations.
pub fn readme_table() -> String {
    let mut out = String::from("| id | default | what it finds |\n| --- | --- | --- |\n");
    for r in RULES {
        out.push_str(&format!(
            "| {} | {}{} | {} |\n",
            r.decl.id,
            r.decl.severity.as_str(),
            r.decl.severity_note,
            r.decl.finds
        ));
    }
    out
}
