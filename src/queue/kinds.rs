//! Which kinds `scaffold queue enqueue` accepts: an UPPER_SNAKE name, and, inside a scaffold
//! repository whose `om/` registers kinds, one of those (read from the `WorkKindSpec`
//! literals, DESIGN §7.1), so a typo never lands an item no worker will take.

use std::collections::BTreeMap;
use std::path::Path;

/// Whether `kind` matches `^[A-Z][A-Z0-9_]{0,63}$`.
pub fn is_kind_name(kind: &str) -> bool {
    let mut bytes = kind.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z'))
        && kind.len() <= 64
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// One registered kind: the lane its spec names (`None`: the default lane) and where the
/// spec is (`om/src/shipping/kinds.rs:2`, repo-relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub lane: Option<String>,
    pub at: String,
}

/// The kinds registered under `<repo>/om` for the repository holding `cwd`; `None` outside
/// a repository or when it registers none (nothing to check against).
pub fn registered(cwd: &Path) -> Option<BTreeMap<String, Spec>> {
    let root = crate::repo::discover(cwd).ok()?;
    let mut kinds = BTreeMap::new();
    collect(&root, &root.join("om"), &mut kinds, 0);
    (!kinds.is_empty()).then_some(kinds)
}

fn collect(root: &Path, dir: &Path, kinds: &mut Kinds, depth: usize) {
    if depth > 12 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                collect(root, &path, kinds, depth + 1);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            spec_names(&text, &rel, kinds);
        }
    }
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
        assert!(is_kind_name("NOTIFY_SHIPMENT"));
        assert!(is_kind_name("A1"));
        assert!(!is_kind_name("notify"));
        assert!(!is_kind_name("1A"));
        assert!(!is_kind_name(""));
        assert!(!is_kind_name(&"A".repeat(65)));
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
