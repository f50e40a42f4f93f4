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

/// Where scaffold's source lives (`repository` in its Cargo.toml): the driver's
/// `informationUri`, and the base of each rule's `helpUri`. Empty in a build whose manifest
/// names none — then neither is written, rather than a link that leads nowhere.
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// A rule's documentation page at this version: `docs/rules/<id>.md` of the source
/// repository at the tag `v<version>` (the page `scaffold explain <id>` prints, kept equal
/// to it by a test). `None` without a repository.
pub(super) fn help_uri(repository: &str, version: &str, id: &str) -> Option<String> {
    let base = repository.trim_end_matches('/');
    (!base.is_empty()).then(|| format!("{base}/blob/v{version}/docs/rules/{id}.md"))
}

/// SARIF 2.1.0: every rule with its help text, every result with a physical location
/// (line 1 of the file when a finding has no better place), so code scanning accepts it.
/// Paths are relative to `%SRCROOT%`, git's work tree, whose folder `in_git` holds the
/// scaffold root. Each result carries a fingerprint of its rule, path and message (and
/// which of identical ones it is), without the line, so a moved finding stays the same
/// alert.
pub(super) fn outcome(out: &mut dyn Write, in_git: &str, o: &Outcome) -> io::Result<()> {
    let infos = catalogue::rules();
    let rule_objs: Vec<Value> = infos
        .iter()
        .map(|r| {
            let doc = rules::get(r.id).map(rules::Rule::doc).unwrap_or_default();
            let mut rule = json!({
                "id": r.id,
                "name": pascal(r.id),
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": full_description(r.summary, &doc)},
                "help": {"text": doc, "markdown": doc},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": {
                    "tags": tags(r.id),
                    // Each rule reads the tree, not a guess at runtime behaviour.
                    "precision": "very-high",
                    "problem.severity": level(r.severity),
                },
            });
            if let Some(uri) = help_uri(REPOSITORY, env!("CARGO_PKG_VERSION"), r.id) {
                rule["helpUri"] = Value::from(uri);
            }
            rule
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
                        "region": region(f),
                    }
                }],
                // GitHub keys alerts on primaryLocationLineHash: without it an upload through
                // the API computes its own, and a finding can show up twice.
                "partialFingerprints": {
                    "scaffold/v1": fingerprint,
                    "primaryLocationLineHash": fingerprint,
                },
            })
        })
        .collect();
    let mut driver = json!({
        "name": "scaffold",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rule_objs,
    });
    if !REPOSITORY.is_empty() {
        driver["informationUri"] = Value::from(REPOSITORY);
    }
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "originalUriBaseIds": {SRCROOT: {
                "description": {"text": "The root of the repository's git work tree (the checkout)."},
            }},
            "columnKind": "unicodeCodePoints",
            // Which analysis this is, for code scanning to keep apart from other tools' and
            // to close the alerts a later run of the same one no longer reports.
            "automationDetails": {"id": "scaffold/check/"},
            "results": results,
        }],
    });
    super::inert::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// A finding's region: its line and column, ending one character on (a finding points at a
/// place, its span's end is not known here on another line).
fn region(f: &crate::check::finding::Finding) -> Value {
    let (line, column) = (f.line.max(1), f.column.max(1));
    json!({
        "startLine": line,
        "startColumn": column,
        "endLine": line,
        "endColumn": column + 1,
    })
}

/// A rule's id as SARIF's `name`: `import-forbidden` → `ImportForbidden`.
fn pascal(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|first| first.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The rule doc's "What it finds" section as one paragraph (longer than the summary, which
/// is the short description); the summary where the doc has no such section.
fn full_description(summary: &str, doc: &str) -> String {
    let section: Vec<&str> = doc
        .lines()
        .skip_while(|l| l.trim() != "## What it finds")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = section.join(" ");
    let text = text.trim();
    if text.chars().count() > summary.chars().count() {
        text.to_owned()
    } else {
        format!("{summary}. {text}").trim().to_owned()
    }
}

/// The tags code scanning filters by: the tool's, and the rule's family (the first word
/// of its id: import, kind, worker, manifest, …).
fn tags(id: &str) -> Vec<String> {
    let family = id.split('-').next().unwrap_or(id);
    vec!["scaffold".to_owned(), family.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::help_uri;

    #[test]
    fn a_rules_help_uri_is_its_page_at_the_version_tag_or_nothing() {
        assert_eq!(
            help_uri("https://git.example/org/scaffold/", "0.3.1", "file-unowned").as_deref(),
            Some("https://git.example/org/scaffold/blob/v0.3.1/docs/rules/file-unowned.md")
        );
        assert_eq!(help_uri("", "0.3.1", "file-unowned"), None);
    }
}
