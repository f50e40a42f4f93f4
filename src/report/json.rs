use std::io::{self, Write};

use serde::Serialize;

use crate::check::catalogue::RuleInfo;
use crate::check::sink::Outcome;

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    root: &'a str,
    findings: Vec<JsonFinding<'a>>,
    summary: Summary,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    rule: &'a str,
    severity: &'a str,
    path: &'a str,
    line: usize,
    column: usize,
    message: &'a str,
    help: &'a str,
}

#[derive(Serialize)]
struct Summary {
    errors: usize,
    warnings: usize,
    files_checked: usize,
    suppressed: usize,
    baselined: usize,
}

pub(super) fn outcome(out: &mut dyn Write, root: &str, o: &Outcome) -> io::Result<()> {
    let report = Report {
        version: 1,
        root,
        findings: super::sorted(o)
            .map(|f| JsonFinding {
                rule: f.rule,
                severity: f.severity.as_str(),
                path: &f.path,
                line: f.line,
                column: f.column,
                message: &f.message,
                help: &f.help,
            })
            .collect(),
        summary: Summary {
            errors: o.errors(),
            warnings: o.warnings(),
            files_checked: o.files_checked,
            suppressed: o.suppressed,
            baselined: o.baselined,
        },
    };
    super::inert::to_writer(&mut *out, &report)?;
    writeln!(out)
}

#[derive(Serialize)]
struct JsonRule<'a> {
    id: &'a str,
    severity: &'a str,
    summary: &'a str,
}

pub(super) fn rule_list(out: &mut dyn Write, rules: &[RuleInfo]) -> io::Result<()> {
    #[derive(Serialize)]
    struct List<'a> {
        rules: Vec<JsonRule<'a>>,
    }
    let list = List {
        rules: rules
            .iter()
            .map(|r| JsonRule {
                id: r.id,
                severity: r.severity.as_str(),
                summary: r.summary,
            })
            .collect(),
    };
    super::inert::to_writer(&mut *out, &list)?;
    writeln!(out)
}

pub(super) fn explain(out: &mut dyn Write, r: &RuleInfo, doc: &str) -> io::Result<()> {
    #[derive(Serialize)]
    struct Explain<'a> {
        id: &'a str,
        severity: &'a str,
        summary: &'a str,
        doc: &'a str,
    }
    super::inert::to_writer(
        &mut *out,
        &Explain {
            id: r.id,
            severity: r.severity.as_str(),
            summary: r.summary,
            doc,
        },
    )?;
    writeln!(out)
}

pub(super) fn gates(out: &mut dyn Write, gates: &[crate::gates::PlannedGate]) -> io::Result<()> {
    #[derive(Serialize)]
    struct Gate<'a> {
        gate: &'a str,
        command: &'a [String],
        triggered_by: &'a [String],
    }
    #[derive(Serialize)]
    struct Gates<'a> {
        gates: Vec<Gate<'a>>,
    }
    let g = Gates {
        gates: gates
            .iter()
            .map(|g| Gate {
                gate: &g.gate,
                command: &g.command,
                triggered_by: &g.triggered_by,
            })
            .collect(),
    };
    super::inert::to_writer(&mut *out, &g)?;
    writeln!(out)
}

pub(super) fn value(out: &mut dyn Write, v: &serde_json::Value) -> io::Result<()> {
    super::inert::to_writer(&mut *out, v)?;
    writeln!(out)
}
