//! `agent/baseline.yml`: today's findings, accepted, so a legacy repo adopts the gate and
//! only new findings fail. Entries are keyed by rule, path and a content fingerprint —
//! never a line number — and the file only shrinks.

use std::path::Path;

use super::finding::Finding;
use crate::repo::manifest::{Problem, Problems};
use crate::repo::yaml::{self, Pos, Value};

pub const BASELINE_PATH: &str = "agent/baseline.yml";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    pub rule: String,
    pub path: String,
    pub fingerprint: String,
}

#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// Repo-relative path of the file the entries came from.
    pub file: String,
    /// Entries with the line each is written on.
    pub entries: Vec<(Entry, Pos)>,
}

/// The fingerprint of a finding: its rule, path, message and the text of its line with
/// surrounding whitespace removed — so it survives the line moving, not the line changing.
pub fn fingerprint(f: &Finding, line_text: &str) -> String {
    // A finding about a whole file (placed at its start with an empty span) is not about
    // line 1: editing that line must not unmatch it.
    let whole_file = f.line == 1 && f.column == 1 && f.span == (0, 0);
    let line_text = if whole_file { "" } else { line_text };
    let mut data = Vec::new();
    for part in [
        f.rule,
        f.path.as_str(),
        f.message.as_str(),
        line_text.trim(),
    ] {
        data.extend_from_slice(part.as_bytes());
        data.push(0);
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&data))
}

impl Baseline {
    /// Reads a baseline; a missing file is an empty baseline. One that is a symlink, is
    /// reached through one, or is not a regular file is refused, its content unread.
    pub fn load(root: &Path, rel: &str) -> Result<Baseline, Vec<Problem>> {
        let mut p = Problems::new(rel);
        let text = match crate::repo::inside::read_text(root, rel, crate::repo::MANIFEST_LIMIT) {
            Ok(Some(text)) => text,
            Ok(None) => {
                return Ok(Baseline {
                    file: rel.to_owned(),
                    entries: Vec::new(),
                });
            }
            Err(refusal) => {
                p.push(
                    crate::repo::yaml::Pos::default(),
                    format!("refused: {refusal}"),
                    "refused",
                    "make the baseline a regular file inside the repository (its content was not read)",
                );
                return Err(p.list);
            }
        };
        let node = match yaml::parse(&text) {
            Ok(n) => n,
            Err(e) => {
                p.invalid_yaml(
                    &e,
                    "fix the syntax, or delete the file and run `scaffold check --write-baseline`",
                );
                return Err(p.list);
            }
        };
        let mut entries = Vec::new();
        let fields = p.fields(&node, "the baseline", &["version", "entries"]);
        let version = fields
            .iter()
            .find(|(k, _, _)| *k == "version")
            .map(|(_, _, v)| *v);
        p.version(version, &node);
        if let Some((_, _, list)) = fields.iter().find(|(k, _, _)| *k == "entries") {
            match &list.value {
                Value::Seq(items) => {
                    for item in items {
                        let ef =
                            p.fields(item, "a baseline entry", &["rule", "path", "fingerprint"]);
                        let get = |k: &str| {
                            ef.iter()
                                .find(|(n, _, _)| *n == k)
                                .and_then(|(_, _, v)| v.as_str().map(str::to_owned))
                        };
                        match (get("rule"), get("path"), get("fingerprint")) {
                            (Some(rule), Some(path), Some(fingerprint)) => entries.push((
                                Entry {
                                    rule,
                                    path,
                                    fingerprint,
                                },
                                item.pos,
                            )),
                            _ => p.push(
                                item.pos,
                                "a baseline entry needs `rule`, `path` and `fingerprint` strings",
                                "incomplete entry",
                                "regenerate the file with `scaffold check --write-baseline`",
                            ),
                        }
                    }
                }
                Value::Null => {}
                other => p.push(
                    list.pos,
                    format!("`entries` must be a list, found {}", other.type_name()),
                    "expected a list",
                    "",
                ),
            }
        }
        if p.list.is_empty() {
            Ok(Baseline {
                file: rel.to_owned(),
                entries,
            })
        } else {
            Err(p.list)
        }
    }

    /// The file's text for `entries` (sorted, one flow mapping per line).
    pub fn render(entries: &[Entry]) -> String {
        let mut out = String::from(
            "# scaffold baseline: findings accepted when this file was written, keyed by rule, path\n\
             # and a content fingerprint (never a line number). Entries may only be removed:\n\
             # `scaffold check --write-baseline` under CI=true refuses to add any.\n\
             version: 1\nentries:\n",
        );
        if entries.is_empty() {
            out.truncate(out.len() - 1);
            out.push_str(" []\n");
        }
        for e in entries {
            out.push_str(&format!(
                "  - {{rule: {}, path: {}, fingerprint: \"{}\"}}\n",
                e.rule,
                quote(&e.path),
                e.fingerprint
            ));
        }
        out
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `current` minus `old`, as multisets: the entries writing `current` would add.
pub fn added<'a>(old: &[Entry], current: &'a [Entry]) -> Vec<&'a Entry> {
    let mut pool: Vec<&Entry> = old.iter().collect();
    let mut out = Vec::new();
    for e in current {
        match pool.iter().position(|o| *o == e) {
            Some(i) => {
                pool.swap_remove(i);
            }
            None => out.push(e),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_load_round_trips() {
        let entries = vec![
            Entry {
                rule: "import-forbidden".into(),
                path: "workers/a/src/main.rs".into(),
                fingerprint: "00ff".into(),
            },
            Entry {
                rule: "import-forbidden".into(),
                path: "workers/a/src/main.rs".into(),
                fingerprint: "00ff".into(),
            },
        ];
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("agent")).expect("mkdir");
        std::fs::write(dir.path().join(BASELINE_PATH), Baseline::render(&entries)).expect("write");
        let b = Baseline::load(dir.path(), BASELINE_PATH).expect("loads");
        let got: Vec<Entry> = b.entries.into_iter().map(|(e, _)| e).collect();
        assert_eq!(got, entries);
        assert!(added(&got, &entries).is_empty());
        assert_eq!(added(&got[..1], &entries).len(), 1);
        std::fs::write(dir.path().join(BASELINE_PATH), Baseline::render(&[])).expect("write");
        assert!(
            Baseline::load(dir.path(), BASELINE_PATH)
                .expect("loads")
                .entries
                .is_empty()
        );
    }
}
