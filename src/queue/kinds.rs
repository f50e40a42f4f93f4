//! Which kinds `scaffold queue enqueue` accepts: an UPPER_SNAKE name, and, inside a scaffold
//! repository whose `om/` registers kinds, one of those (read from the `WorkKindSpec`
//! literals, docs/reference.md#the-work-queue-scaffold-runtime), so a typo never lands an item no worker will take.

use std::collections::BTreeMap;
use std::path::Path;

/// `kind` held to the one kind-name rule, the generator's (`generate::names`): what
/// `scaffold worker` would refuse to make, the queue refuses to take.
pub(super) fn check_name(kind: &str) -> Result<(), super::QueueError> {
    use crate::generate::names::{NameKind, validate};
    validate(NameKind::Kind, kind).map_err(|err| super::QueueError::InvalidKind {
        kind: kind.to_owned(),
        reason: match err {
            crate::generate::GenerateError::InvalidName { reason, .. } => reason,
            other => other.to_string(),
        },
    })
}

/// One registered kind: the lane its spec names (`None`: the default lane) and where the
/// spec is (`om/src/shipping/kinds.rs:2`, repo-relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Spec {
    pub lane: Option<String>,
    pub at: String,
}

/// The kinds registered under `<repo>/om` for the repository holding `cwd`; `None` outside
/// a repository or when it registers none (nothing to check against). A file or folder
/// under `om/` that cannot be read as a regular one inside the repository (a symlink, a
/// FIFO, too large, too deep) is an error naming it: the list would be incomplete, and a
/// symlink's target is never read.
pub(super) fn registered(cwd: &Path) -> Result<Option<BTreeMap<String, Spec>>, String> {
    let Ok(root) = crate::repo::discover(cwd) else {
        return Ok(None);
    };
    let mut kinds = BTreeMap::new();
    if root.join("om").is_dir() {
        collect(&root, "om", &mut kinds, 0)?;
    }
    Ok((!kinds.is_empty()).then_some(kinds))
}

/// How deep under `om/` folders are read.
const MAX_DEPTH: usize = 12;

fn collect(root: &Path, rel: &str, kinds: &mut Kinds, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{rel} is nested deeper than {MAX_DEPTH} folders under om/"
        ));
    }
    crate::repo::inside::no_links(root, rel).map_err(|r| r.to_string())?;
    let entries = std::fs::read_dir(root.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    let mut entries: Vec<_> = entries
        .map(|e| e.map_err(|err| format!("{rel}: {err}")))
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        let kind = entry.file_type().map_err(|e| format!("{child}: {e}"))?;
        if kind.is_dir() {
            if name != "target" {
                collect(root, &child, kinds, depth + 1)?;
            }
        } else if name.ends_with(".rs") {
            let text = crate::repo::inside::read_text(root, &child, crate::repo::TEXT_LIMIT)
                .map_err(|r| r.to_string())?
                .unwrap_or_default();
            spec_names(&text, &child, kinds);
        }
    }
    Ok(())
}

type Kinds = BTreeMap<String, Spec>;

/// The `name` (and `lane`) of every `WorkKindSpec { … }` literal in `text` (the file `rel`).
fn spec_names(text: &str, rel: &str, kinds: &mut Kinds) {
    for (at, _) in text.match_indices("WorkKindSpec {") {
        let body = &text[at..];
        let body = &body[..body.find('}').unwrap_or(body.len())];
        if let Some(name) = field(body, "name:") {
            let line = text[..at].matches('\n').count() + 1;
            kinds.insert(
                name.to_owned(),
                Spec {
                    lane: field(body, "lane:").map(str::to_owned),
                    at: format!("{rel}:{line}"),
                },
            );
        }
    }
}

/// The string literal after `key` in `body`.
fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let rest = body.split(key).nth(1)?.trim_start().strip_prefix('"')?;
    rest.find('"').map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names() {
        let ok = |k: &str| check_name(k).is_ok();
        assert!(ok("NOTIFY_SHIPMENT"));
        assert!(ok("A1"));
        assert!(ok(&"A".repeat(64)));
        assert!(!ok("notify"));
        assert!(!ok("1A"));
        assert!(!ok(""));
        assert!(!ok(&"A".repeat(65)));
        // The generator's rule, which the queue's own used to let through.
        assert!(!ok("A__B"));
        assert!(!ok("TRAILING_"));
        assert!(!ok("TYPE"), "its handler module would be a keyword");
    }

    #[test]
    fn reads_spec_literals() {
        let mut kinds = Kinds::new();
        spec_names(
            r#"pub const S: &[WorkKindSpec] = &[
                WorkKindSpec { name: "NOTIFY_SHIPMENT", permission: "shipping.notify", lane: "default",
                               ..WorkKindSpec::DEFAULT },
                WorkKindSpec {
                    name: "SEND_INVOICE", ..WorkKindSpec::DEFAULT },
            ];"#,
            "om/src/k.rs",
            &mut kinds,
        );
        assert_eq!(
            kinds
                .into_iter()
                .map(|(k, s)| (k, s.lane, s.at))
                .collect::<Vec<_>>(),
            vec![
                (
                    "NOTIFY_SHIPMENT".to_owned(),
                    Some("default".to_owned()),
                    "om/src/k.rs:2".to_owned()
                ),
                ("SEND_INVOICE".to_owned(), None, "om/src/k.rs:4".to_owned())
            ]
        );
    }
}
