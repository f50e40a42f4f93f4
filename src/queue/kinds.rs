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

/// The kinds registered under `<repo>/om` for the repository holding `cwd`, each with the
/// lane its spec names (`None`: the default lane); `None` outside a repository or when it
/// registers none (nothing to check against).
pub fn registered(cwd: &Path) -> Option<BTreeMap<String, Option<String>>> {
    let root = crate::repo::discover(cwd).ok()?;
    let mut kinds = BTreeMap::new();
    collect(&root.join("om"), &mut kinds, 0);
    (!kinds.is_empty()).then_some(kinds)
}

fn collect(dir: &Path, kinds: &mut Kinds, depth: usize) {
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
                collect(&path, kinds, depth + 1);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            spec_names(&text, kinds);
        }
    }
}

type Kinds = BTreeMap<String, Option<String>>;

/// The `name` (and `lane`) of every `WorkKindSpec { … }` literal in `text`.
fn spec_names(text: &str, kinds: &mut Kinds) {
    for (at, _) in text.match_indices("WorkKindSpec {") {
        let body = &text[at..];
        let body = &body[..body.find('}').unwrap_or(body.len())];
        if let Some(name) = field(body, "name:") {
            kinds.insert(name.to_owned(), field(body, "lane:").map(str::to_owned));
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
            &mut kinds,
        );
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            vec![
                ("NOTIFY_SHIPMENT".to_owned(), Some("default".to_owned())),
                ("SEND_INVOICE".to_owned(), None)
            ]
        );
    }
}
