//! Adds a workspace member to the root Cargo.toml the way `cargo new` does: toml_edit keeps
//! comments and formatting; a sorted list stays sorted, and each entry keeps the layout of
//! the entry that held its position.

use toml_edit::{Array, DocumentMut, Item, Value};

use super::error::GenerateError;

/// `manifest` with `member` in `[workspace] members`.
pub fn add(path: &str, manifest: &str, member: &str) -> Result<String, GenerateError> {
    let mut doc = parse(path, manifest)?;
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

/// `manifest` with `name = { path = "<dir>" }` in `[workspace.dependencies]`, so members
/// depend on it with `name.workspace = true`; unchanged when it is there.
pub fn add_path_dependency(
    path: &str,
    manifest: &str,
    name: &str,
    dir: &str,
) -> Result<String, GenerateError> {
    let mut table = toml_edit::InlineTable::new();
    table.insert("path", Value::from(dir));
    add_workspace_entry(path, manifest, name, Value::InlineTable(table))
}

/// `manifest` with `name = <spec>` (an inline table, as TOML) in `[workspace.dependencies]`;
/// unchanged when it has `name` there.
pub fn add_registry_dependency(
    path: &str,
    manifest: &str,
    name: &str,
    spec: &str,
) -> Result<String, GenerateError> {
    let value: Value = spec.parse().map_err(|e| GenerateError::Manifest {
        path: path.to_owned(),
        message: format!("the generator's own spec for `{name}` does not parse: {e}"),
        help: "report this as a bug in scaffold".to_owned(),
    })?;
    add_workspace_entry(path, manifest, name, value)
}

/// `manifest` with `name = value` in `[workspace.dependencies]`, unless `name` is there.
fn add_workspace_entry(
    path: &str,
    manifest: &str,
    name: &str,
    value: Value,
) -> Result<String, GenerateError> {
    let mut doc = parse(path, manifest)?;
    let deps = doc
        .get_mut("workspace")
        .and_then(Item::as_table_like_mut)
        .and_then(|t| t.get_mut("dependencies"))
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| GenerateError::Manifest {
            path: path.to_owned(),
            message: "no `[workspace.dependencies]` table".to_owned(),
            help: "the generated crates take their dependencies from the workspace's table"
                .to_owned(),
        })?;
    if deps.contains_key(name) {
        return Ok(manifest.to_owned());
    }
    deps.insert(name, Item::Value(value));
    Ok(doc.to_string())
}

/// `manifest` (a member's) with `package.workspace = true` in `table` (`dependencies` or
/// `dev-dependencies`); unchanged when it has `package` there already, or as a normal
/// dependency when `table` is `dev-dependencies`.
pub fn add_workspace_dependency(
    path: &str,
    manifest: &str,
    package: &str,
    table: &str,
) -> Result<String, GenerateError> {
    let mut doc = parse(path, manifest)?;
    let has = |t: &str| {
        doc.get(t)
            .and_then(Item::as_table_like)
            .is_some_and(|t| t.contains_key(package))
    };
    if has("dependencies") || has(table) {
        return Ok(manifest.to_owned());
    }
    let deps = doc
        .entry(table)
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .ok_or_else(|| GenerateError::Manifest {
            path: path.to_owned(),
            message: format!("`{table}` is not a table"),
            help: format!("make it a `[{table}]` table"),
        })?;
    let mut entry = toml_edit::Table::new();
    entry.set_dotted(true);
    entry.insert("workspace", toml_edit::value(true));
    deps.insert(package, Item::Table(entry));
    Ok(doc.to_string())
}

/// Plans `package.workspace = true` in `table` of the member at `dir` (whose package is
/// `member`), and the dependency in its lock entry: what a generated crate that starts to
/// use another one needs.
pub fn plan_dependency(
    plan: &mut super::plan::Plan,
    (dir, member): (&str, &str),
    package: &str,
    table: &str,
) -> Result<(), GenerateError> {
    let path = format!("{dir}/Cargo.toml");
    let manifest = plan.text(&path)?.unwrap_or_default();
    let manifest = add_workspace_dependency(&path, &manifest, package, table)?;
    plan.edit(&path, manifest)?;
    if let Some(lock) = plan.text("Cargo.lock")?
        && let Some(lock) = super::lockfile::add_dependency(&lock, member, package)?
    {
        plan.edit("Cargo.lock", lock)?;
    }
    Ok(())
}

/// `manifest` (the file at `path`) as an editable document.
pub fn parse(path: &str, manifest: &str) -> Result<DocumentMut, GenerateError> {
    manifest
        .parse()
        .map_err(|e: toml_edit::TomlError| GenerateError::Manifest {
            path: path.to_owned(),
            message: e.message().to_owned(),
            help: "fix the TOML syntax; the generator edits it in place".to_owned(),
        })
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
    let prefix_of = |i: usize| {
        members
            .get(i)
            .and_then(|v| v.decor().prefix())
            .and_then(|p| p.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // The layout of an entry in the middle of the list, comments left out: "\n" and the
    // indentation of a multi-line list, " " in a one-line list.
    let sample = prefix_of(if members.len() > 1 { 1 } else { 0 });
    let middle = match sample.rfind('\n') {
        Some(nl) => format!(
            "\n{}",
            sample[nl + 1..].trim_end_matches(|c: char| !c.is_whitespace())
        ),
        None if members.is_empty() => String::new(),
        None => " ".to_owned(),
    };
    let mut value = Value::from(member);
    value.decor_mut().set_suffix("");
    if at == 0 {
        // The new first entry takes the first entry's layout; the old first entry keeps its
        // own comments and takes a middle entry's layout if it had none.
        let first = prefix_of(0);
        let first_layout = match first.rfind('\n') {
            Some(nl) => format!("\n{}", &first[nl + 1..]),
            None => String::new(),
        };
        value.decor_mut().set_prefix(first_layout);
        if !first.contains('\n')
            && let Some(old) = members.get_mut(0)
        {
            old.decor_mut().set_prefix(middle.as_str());
        }
    } else if at < members.len() {
        // The next entry's prefix starts with the end-of-line comment of the entry before
        // the new one: that stays on its line, ahead of the new entry.
        let next = prefix_of(at);
        let (same_line, rest) = match next.find('\n') {
            Some(nl) => (next[..nl].to_owned(), next[nl..].to_owned()),
            None => (String::new(), next.clone()),
        };
        value.decor_mut().set_prefix(format!("{same_line}{middle}"));
        if let Some(old) = members.get_mut(at) {
            old.decor_mut().set_prefix(if rest.is_empty() {
                middle.clone()
            } else {
                rest
            });
        }
    } else {
        value.decor_mut().set_prefix(middle);
    }
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
    fn comments_stay_with_their_entries() {
        let manifest = "[workspace]\nmembers = [\n    \"om\",\n    # vendored, do not edit\n    \"platform/runtime\",\n    \"workers/maintenance\", # the sweep\n    \"workers/projector\",\n]\n";
        let out = add("Cargo.toml", manifest, "workers/nb").expect("added");
        assert_eq!(
            out,
            "[workspace]\nmembers = [\n    \"om\",\n    # vendored, do not edit\n    \"platform/runtime\",\n    \"workers/maintenance\", # the sweep\n    \"workers/nb\",\n    \"workers/projector\",\n]\n"
        );
        let first = add("Cargo.toml", manifest, "a").expect("added");
        assert!(
            first.starts_with("[workspace]\nmembers = [\n    \"a\",\n    \"om\",\n"),
            "{first}"
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
