//! What every generator command renders with: the project's template variables, a
//! template context, a template planned as a file, the project's name, the Rust files of a
//! folder.

use minijinja::Value;

use super::error::GenerateError;
use super::plan::Plan;
use super::{names, templates};

/// The template variables every command has: the project's name in its three spellings.
pub(crate) fn project_vars(name: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("name", Value::from(name)),
        ("name_snake", Value::from(names::snake(name))),
        ("NAME", Value::from(names::shouty(name))),
    ]
}

/// A template context from `(key, value)` pairs.
pub(crate) fn context(vars: &[(&'static str, Value)]) -> Value {
    Value::from_iter(vars.iter().map(|(k, v)| (*k, v.clone())))
}

/// Renders `template` and plans it as a new file at `path`.
pub(crate) fn create_from(
    plan: &mut Plan,
    templates: &templates::Templates,
    template: &str,
    path: &str,
    ctx: &Value,
) -> Result<(), GenerateError> {
    let r = templates.render(template, ctx)?;
    plan.create(path, r.text.into_bytes(), Some((r.template, r.overridden)))
}

/// The project name a repository declares in agent/codemap.yml.
pub(crate) fn project_name(root: &std::path::Path) -> Result<String, GenerateError> {
    let rel = crate::repo::codemap::CODEMAP_PATH;
    let text = crate::repo::inside::read_text(root, rel, crate::repo::MANIFEST_LIMIT)
        .map_err(|reason| GenerateError::Refused {
            path: rel.to_owned(),
            reason,
        })?
        .ok_or(GenerateError::NoCodemapName)?;
    let codemap = crate::repo::codemap::Codemap::parse(&text).map_err(|problems| {
        // The first problem, at its line: the one `scaffold check` would list first.
        let first = problems.into_iter().next();
        GenerateError::Manifest {
            path: rel.to_owned(),
            message: first.as_ref().map_or_else(
                || "it does not parse".to_owned(),
                |p| format!("line {}: {}", p.pos.line, p.message),
            ),
            help: first.map_or_else(
                || "run `scaffold check` to see what is wrong with it".to_owned(),
                |p| p.help,
            ),
        }
    })?;
    codemap.name.ok_or(GenerateError::NoCodemapName)
}

/// Every `.rs` file under `root/rel` (repo-relative, sorted; `target/` and hidden folders
/// skipped).
pub(crate) fn rust_files(root: &std::path::Path, rel: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        match e.file_type() {
            Ok(t) if t.is_dir() && name != "target" && !name.starts_with('.') => {
                rust_files(root, &child, out);
            }
            Ok(t) if t.is_file() && name.ends_with(".rs") => out.push(child),
            _ => {}
        }
    }
}
