//! What the repository already holds that a new kind must agree with: its namespaces, where a kind is registered, a kind's variant.

use std::path::Path;

use crate::generate::error::GenerateError;
use crate::generate::names::{self, mentions_ident};

/// The file and line that already register or handle `kind`: a spec under `om/src/` whose
/// name resolves to it (a literal, a const or `Kind::Variant.as_str()`, as the checker's
/// registry reader resolves them, whether or not `KINDS` reaches the spec), or a handler's
/// `KIND … = "KIND"` under `workers/*/src/`. A file that cannot be read is an error: the
/// answer would be a guess.
pub(super) fn registered_at(
    root: &Path,
    kind: &str,
) -> Result<Option<(String, usize)>, GenerateError> {
    let unreadable = |reason: String| GenerateError::RegistryUnreadable { reason };
    let om = crate::layout::rust_sources::read(root, crate::layout::OM_SRC).map_err(unreadable)?;
    let literal = format!("\"{kind}\"");
    // The quoted name on a spec's line, in whatever shape the registry reader does not
    // read (a `static` spec, a slice typed through an alias).
    let quoted = om.iter().find_map(|(path, text)| {
        text.lines()
            .position(|l| {
                let t = l.trim();
                t.contains(&literal) && (t.starts_with("name:") || t.contains("WorkKindSpec"))
            })
            .map(|i| (path.clone(), i + 1))
    });
    let reg = crate::check::workqueue::registry::from_texts(om);
    if let Some(spec) = reg
        .specs
        .iter()
        .find(|s| reg.resolve(s).name.as_deref() == Some(kind))
    {
        return Ok(Some((spec.path.clone(), spec.name_at.line)));
    }
    if quoted.is_some() {
        return Ok(quoted);
    }
    // A file that does not parse may name the kind through a const: no answer is a guess.
    if let Some(why) = reg.incomplete() {
        return Err(unreadable(format!(
            "{why}; fix it and run the command again"
        )));
    }
    let mut workers = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root.join(crate::layout::WORKERS_DIR)) {
        for e in entries {
            let e = e.map_err(|e| unreadable(format!("{}: {e}", crate::layout::WORKERS_DIR)))?;
            workers.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    workers.sort();
    for w in workers {
        // Regular files only (a FIFO here hung the generator), none through a link.
        let files = crate::layout::rust_sources::read(root, &crate::layout::worker_file(&w, "src"))
            .map_err(unreadable)?;
        for (rel, text) in files {
            if let Some(at) = handler_line(&text, &literal) {
                return Ok(Some((rel, at)));
            }
        }
    }
    Ok(None)
}

/// The line (1-based) of a handler's `KIND … = "KIND"` in `text`, `literal` being the
/// quoted kind.
fn handler_line(text: &str, literal: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let t = line.trim();
            t.contains(literal)
                && ((t.contains("KIND") && t.contains("&'static str")) || t.contains("KIND: &str"))
        })
        .map(|i| i + 1)
}

/// The namespaces of `om/src/` (folders with a kinds.rs), except `work`.
pub(super) fn namespaces(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root.join(crate::layout::OM_SRC))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().join("kinds.rs").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "work")
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

pub(super) fn resolve_namespace(root: &Path, given: Option<&str>) -> Result<String, GenerateError> {
    let ns = resolve_namespace_name(root, given)?;
    // However it was found (given, or inferred from the one folder of om/src/), it reaches
    // paths and templates: `café` or `ship-x` as a folder name must be refused like the
    // same name given to `scaffold namespace`.
    super::super::names::validate(super::super::names::NameKind::Namespace, &ns)?;
    Ok(ns)
}

pub(super) fn resolve_namespace_name(
    root: &Path,
    given: Option<&str>,
) -> Result<String, GenerateError> {
    let known = namespaces(root);
    match given {
        Some(ns) if known.iter().any(|k| k == ns) => Ok(ns.to_owned()),
        Some(ns) => Err(GenerateError::UnknownNamespace {
            ns: ns.to_owned(),
            known: list(&known),
        }),
        None => match known.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(GenerateError::NoNamespace),
            _ => Err(GenerateError::AmbiguousNamespace {
                known: list(&known),
            }),
        },
    }
}

pub(super) fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The `file:line` of a variant or payload that `kind`'s names would collide with in the
/// namespace (`A_1` and `A1` are both `A1`).
pub(super) fn variant_at(root: &Path, ns: &str, kind: &str) -> Option<String> {
    let camel = names::camel(kind);
    let payload = format!("{camel}Payload");
    for (file, ident) in [
        ("kinds.rs", camel.as_str()),
        ("types/work.rs", payload.as_str()),
    ] {
        let rel = crate::layout::namespace_file(ns, file);
        // Regular files only (a FIFO here hung the generator). A refused file is refused
        // again, with its reason, when the plan reads it to edit.
        let Ok(Some(text)) = crate::repo::inside::read_text(root, &rel, 64 << 20) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if mentions_ident(code, ident) {
                return Some(format!("{rel}:{}", i + 1));
            }
        }
    }
    None
}
