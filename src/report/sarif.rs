use std::io::{self, Write};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
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

/// What stays as it is in a URI path: RFC 3986's unreserved characters and `/`. Everything
/// else (`#`, `%`, a space, `:`, every non-ASCII byte) is percent-encoded, so a path is
/// always a uri-reference and code scanning does not cut it at a `#`.
const PATH_KEEPS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The base every result's URI is relative to: the root of git's work tree.
const SRCROOT: &str = "%SRCROOT%";

fn uri(in_git: &str, path: &str) -> String {
    utf8_percent_encode(&format!("{in_git}{path}"), PATH_KEEPS).to_string()
}

/// SARIF 2.1.0: every rule with its help text, every result with a physical location
/// (line 1 of the file when a finding has no better place), so code scanning accepts it.
/// Paths are relative to `%SRCROOT%`, git's work tree, whose folder `in_git` holds the
/// scaffold root. Each result carries a fingerprint of its rule, path and message (and
/// which of identical ones it is), without the line, so a moved finding stays the same
/// alert.
pub fn outcome(out: &mut dyn Write, in_git: &str, o: &Outcome) -> io::Result<()> {
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
                "defaultConfiguration": {"level": level(r.severity)},
            })
        })
        .collect();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let results: Vec<Value> = super::sorted(o)
        .map(|f| {
            // The baseline's fingerprint without the line's text (as for a whole-file
            // finding), and which of identical ones this is.
            let hash = crate::check::baseline::fingerprint(f, "");
            let nth = seen.entry(hash.clone()).or_default();
            *nth += 1;
            let fingerprint = format!("{hash}:{nth}");
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
                        "artifactLocation": {"uri": uri(in_git, &f.path), "uriBaseId": SRCROOT},
                        "region": {"startLine": f.line.max(1), "startColumn": f.column.max(1)},
                    }
                }],
                "partialFingerprints": {"scaffold/v1": fingerprint},
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
                "rules": rule_objs,
            }},
            "originalUriBaseIds": {SRCROOT: {
                "description": {"text": "The root of the repository's git work tree (the checkout)."},
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    super::inert::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
