//! What the repository already holds that a new kind must agree with: its namespaces, where a kind is registered, a kind's variant.

use crate::generate::error::GenerateError;
use crate::generate::names::{self, mentions_ident};
use crate::generate::plan::Plan;
use crate::layout::model::Model;

/// The file and line that already register or handle `kind`, in the tree as `plan` has it
/// (the repository model's answer); a file that cannot be read is an error: the answer
/// would be a guess.
pub(super) fn registered_at(
    model: &Model<'_>,
    kind: &str,
) -> Result<Option<(String, usize)>, GenerateError> {
    model
        .registered_at(kind)
        .map_err(|reason| GenerateError::RegistryUnreadable { reason })
}

/// The namespaces of `om/src/` (folders with a kinds.rs), except `work`.
pub(super) fn namespaces(plan: &Plan) -> Result<Vec<String>, GenerateError> {
    Model::new(plan)
        .namespaces()
        .map_err(|reason| GenerateError::RegistryUnreadable { reason })
}

pub(super) fn resolve_namespace(plan: &Plan, given: Option<&str>) -> Result<String, GenerateError> {
    let ns = resolve_namespace_name(plan, given)?;
    // However it was found (given, or inferred from the one folder of om/src/), it reaches
    // paths and templates: `café` or `ship-x` as a folder name must be refused like the
    // same name given to `scaffold namespace`.
    super::super::names::validate(super::super::names::NameKind::Namespace, &ns)?;
    Ok(ns)
}

pub(super) fn resolve_namespace_name(
    plan: &Plan,
    given: Option<&str>,
) -> Result<String, GenerateError> {
    let known = namespaces(plan)?;
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
pub(super) fn variant_at(plan: &Plan, ns: &str, kind: &str) -> Option<String> {
    let camel = names::camel(kind);
    let payload = format!("{camel}Payload");
    for (file, ident) in [
        ("kinds.rs", camel.as_str()),
        ("types/work.rs", payload.as_str()),
    ] {
        let rel = crate::layout::namespace_file(ns, file);
        // Regular files only (a FIFO here hung the generator). A refused file is refused
        // again, with its reason, when the plan reads it to edit.
        let Ok(Some(text)) = plan.text(&rel) else {
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
