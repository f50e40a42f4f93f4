//! Adds a workspace member to the root Cargo.toml the way `cargo new` does: toml_edit keeps
//! comments and formatting; a sorted list stays sorted, and each entry keeps the layout of
//! the entry that held its position.

use toml_edit::{Array, DocumentMut, Item, Value};

use super::GenerateError;

/// `manifest` with `member` in `[workspace] members`.
pub fn add(path: &str, manifest: &str, member: &str) -> Result<String, GenerateError> {
    let mut doc: DocumentMut =
        manifest
            .parse()
            .map_err(|e: toml_edit::TomlError| GenerateError::Manifest {
                path: path.to_owned(),
                message: e.message().to_owned(),
                help: "fix the TOML syntax; the generator edits it in place".to_owned(),
            })?;
    let missing = || GenerateError::Manifest {
        path: path.to_owned(),
        message: "no `[workspace] members = [...]` list".to_owned(),
        help: "the generator adds workers to an explicit members list".to_owned(),
    };
    let members: &mut Array = doc
        .get_mut("workspace")
        .and_then(Item::as_table_like_mut)
        .and_then(|t| t.get_mut("members"))
        .and_then(Item::as_array_mut)
        .ok_or_else(missing)?;
    if members.iter().any(|v| v.as_str() == Some(member)) {
        return Ok(manifest.to_owned());
    }
    insert(members, member);
    Ok(doc.to_string())
}

fn insert(members: &mut Array, member: &str) {
    let names: Vec<&str> = members
        .iter()
        .map(|v| v.as_str().unwrap_or_default())
        .collect();
    let at = if names.is_sorted() {
        names
            .iter()
            .position(|n| *n > member)
            .unwrap_or(names.len())
    } else {
        names.len()
    };
    let prefix_of = |v: &Value| {
        v.decor()
            .prefix()
            .and_then(|p| p.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // The layout of an entry in the middle of the list ("\n    " or " ").
    let middle = match members.len() {
        0 => String::new(),
        1 => {
            let p = members.get(0).map(prefix_of).unwrap_or_default();
            if p.contains('\n') { p } else { " ".to_owned() }
        }
        _ => members.get(1).map(prefix_of).unwrap_or_default(),
    };
    let mut value = Value::from(member);
    if at == 0 && !members.is_empty() {
        let first = members.get(0).map(prefix_of).unwrap_or_default();
        value.decor_mut().set_prefix(first);
        if let Some(old_first) = members.get_mut(0) {
            old_first.decor_mut().set_prefix(middle);
        }
    } else {
        value.decor_mut().set_prefix(middle);
    }
    value.decor_mut().set_suffix("");
    members.insert_formatted(at, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_layout_comments_and_order() {
        let manifest = "# the workspace\n[workspace]\nresolver = \"3\"\nmembers = [\n    \"om\",\n    \"platform/runtime\",\n    \"workers/maintenance\", # the sweep\n    \"workers/projector\",\n]\n";
        let out = add("Cargo.toml", manifest, "workers/billing").expect("added");
        assert_eq!(
            out,
            "# the workspace\n[workspace]\nresolver = \"3\"\nmembers = [\n    \"om\",\n    \"platform/runtime\",\n    \"workers/billing\",\n    \"workers/maintenance\", # the sweep\n    \"workers/projector\",\n]\n"
        );
    }

    #[test]
    fn single_line_and_unsorted_lists() {
        let out = add("Cargo.toml", "[workspace]\nmembers = [\"b\", \"a\"]\n", "c").expect("added");
        assert_eq!(out, "[workspace]\nmembers = [\"b\", \"a\", \"c\"]\n");
        let first =
            add("Cargo.toml", "[workspace]\nmembers = [\"b\", \"c\"]\n", "a").expect("added");
        assert_eq!(first, "[workspace]\nmembers = [\"a\", \"b\", \"c\"]\n");
        let same = add("Cargo.toml", "[workspace]\nmembers = [\"a\"]\n", "a").expect("same");
        assert_eq!(same, "[workspace]\nmembers = [\"a\"]\n");
    }
}
