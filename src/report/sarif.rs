use std::io::{self, Write};

use serde_json::{Value, json};

use crate::check::catalogue;
use crate::check::finding::Severity;
use crate::check::rules;
use crate::check::sink::Outcome;

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// SARIF 2.1.0: every rule with its help text, every result with a physical location
/// (line 1 of the file when a finding has no better place), so code scanning accepts it.
pub fn outcome(out: &mut dyn Write, o: &Outcome) -> io::Result<()> {
    let infos = catalogue::rules();
    let rule_objs: Vec<Value> = infos
        .iter()
        .map(|r| {
            let doc = rules::get(r.id).map(rules::Rule::doc).unwrap_or_default();
            json!({
                "id": r.id,
                "name": r.id,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": doc, "markdown": doc},
                "helpUri": format!("https://scaffold.invalid/rules/{}", r.id),
                "defaultConfiguration": {"level": level(r.severity)},
            })
        })
        .collect();
    let results: Vec<Value> = super::sorted(o)
        .map(|f| {
            let index = infos.iter().position(|r| r.id == f.rule).unwrap_or(0);
            let mut text = f.message.clone();
            if !f.help.is_empty() {
                text.push_str("\nhelp: ");
                text.push_str(&f.help);
            }
            json!({
                "ruleId": f.rule,
                "ruleIndex": index,
                "level": level(f.severity),
                "message": {"text": text},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path},
                        "region": {"startLine": f.line.max(1), "startColumn": f.column.max(1)},
                    }
                }],
            })
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "scaffold",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://scaffold.invalid",
                "rules": rule_objs,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
