//! The generated repository's `Cargo.lock`, edited through toml_edit: what a change leaves
//! alone keeps its bytes, what it adds is written the way cargo writes it (packages sorted
//! by name then version, a dependency list one entry per line). The embedded lock was
//! resolved for the project name `acme`; for another name its workspace packages (no
//! `source`) are renamed, so `cargo build --locked` accepts it.

use std::collections::{BTreeMap, BTreeSet};

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::error::GenerateError;

/// The name the embedded lock was resolved with.
pub const LOCK_NAME: &str = "acme";
/// The embedded lock, under `templates/`.
pub const EMBEDDED_LOCK: &str = "Cargo.lock.acme";

/// The lock's path in the generated repository, as errors name it.
const LOCK_PATH: &str = "Cargo.lock";

/// One `[[package]]` entry of a lock.
trait Package {
    fn field(&self, key: &str) -> &str;
    fn name(&self) -> &str {
        self.field("name")
    }
    fn version(&self) -> &str {
        self.field("version")
    }
    /// A workspace member: cargo records no `source` for one.
    fn is_local(&self) -> bool;
    /// Its `dependencies` entries (`name`, or `name version` where the name is ambiguous);
    /// `None` when it has no such list.
    fn dependencies(&self) -> Option<Vec<String>>;
    /// `name version`, how cargo names one of several versions.
    fn id(&self) -> String {
        format!("{} {}", self.name(), self.version())
    }
}

impl Package for Table {
    fn field(&self, key: &str) -> &str {
        self.get(key).and_then(Item::as_str).unwrap_or("")
    }
    fn is_local(&self) -> bool {
        !self.contains_key("source")
    }
    fn dependencies(&self) -> Option<Vec<String>> {
        let list = self.get("dependencies")?.as_array()?;
        Some(
            list.iter()
                .map(|v| v.as_str().unwrap_or_default().to_owned())
                .collect(),
        )
    }
}

/// `lock` with the workspace packages `acme-*` renamed to `<name>-*`, sorted by name.
pub fn rename(lock: &str, name: &str) -> Result<String, GenerateError> {
    if name == LOCK_NAME {
        return Ok(lock.to_owned());
    }
    let from = format!("{LOCK_NAME}-");
    let to = format!("{name}-");
    let renamed = edit(lock, |packages| {
        let local: BTreeSet<String> = packages
            .iter()
            .filter(|p| p.is_local() && p.name().starts_with(&from))
            .map(|p| p.name().to_owned())
            .collect();
        let rename_one = |n: &str| -> Option<String> {
            local
                .contains(n)
                .then(|| format!("{to}{}", &n[from.len()..]))
        };
        for p in packages.iter_mut() {
            if let Some(new) = rename_one(p.name()) {
                set_str(p, "name", &new);
            }
            let deps = p.get_mut("dependencies").and_then(Item::as_array_mut);
            for d in deps.into_iter().flat_map(Array::iter_mut) {
                let entry = d.as_str().unwrap_or_default();
                let (dep, rest) = entry.split_once(' ').map_or((entry, ""), |(n, r)| (n, r));
                if let Some(new) = rename_one(dep) {
                    let new = if rest.is_empty() {
                        new
                    } else {
                        format!("{new} {rest}")
                    };
                    replace_keeping_decor(d, &new);
                }
            }
        }
        Ok(!local.is_empty())
    })?;
    Ok(renamed.unwrap_or_else(|| lock.to_owned()))
}

/// `lock` with workspace package `new` added, with the entry workspace package `like` has in
/// `template` (a new worker's crate renders from the same template as the maintenance
/// worker's, so it depends on the same packages); `None` when `template` has no `like` or
/// `lock` already has `new`.
pub fn add_member_like(
    lock: &str,
    template: &str,
    new: &str,
    like: &str,
) -> Result<Option<String>, GenerateError> {
    let template = packages_of(template)?;
    let Some(mut copy) = template
        .into_iter()
        .find(|p| p.is_local() && p.name() == like)
    else {
        return Ok(None);
    };
    set_str(&mut copy, "name", new);
    edit(lock, |packages| {
        if packages.iter().any(|p| p.name() == new) {
            return Ok(false);
        }
        packages.push(copy);
        Ok(true)
    })
}

/// `lock` with workspace package `new` added, depending on `deps`, with the other fields
/// (the version) of workspace package `like` in `lock`; `None` when `lock` already has
/// `new`. A lock without `like` is behind the workspace: an error, not a lock left without
/// `new` for `cargo build --locked` to refuse later.
pub fn add_member(
    lock: &str,
    new: &str,
    like: &str,
    deps: &[String],
) -> Result<Option<String>, GenerateError> {
    edit(lock, |packages| {
        if packages.iter().any(|p| p.name() == new) {
            return Ok(false);
        }
        let Some(like) = packages.iter().find(|p| p.is_local() && p.name() == like) else {
            return Err(behind_the_workspace(like, new));
        };
        let mut copy = like.clone();
        set_str(&mut copy, "name", new);
        if deps.is_empty() {
            copy.remove("dependencies");
        } else {
            copy.insert("dependencies", Item::Value(Value::Array(cargo_list(deps))));
        }
        packages.push(copy);
        Ok(true)
    })
}

/// `lock` with `dep` among the dependencies of workspace package `package`; `None` when it
/// has `dep` already. A lock without `package` is behind the workspace: an error.
pub fn add_dependency(
    lock: &str,
    package: &str,
    dep: &str,
) -> Result<Option<String>, GenerateError> {
    edit(lock, |packages| {
        let Some(p) = packages
            .iter_mut()
            .find(|p| p.is_local() && p.name() == package)
        else {
            return Err(behind_the_workspace(package, dep));
        };
        if p.dependencies()
            .unwrap_or_default()
            .iter()
            .any(|d| dep_key(d) == dep)
        {
            return Ok(false);
        }
        match p.get_mut("dependencies").and_then(Item::as_array_mut) {
            Some(list) => list.push_formatted(list_entry(dep)),
            None => {
                p.insert(
                    "dependencies",
                    Item::Value(Value::Array(cargo_list(&[dep.to_owned()]))),
                );
            }
        }
        Ok(true)
    })
}

/// Whether `lock` has a package whose name satisfies `is`.
pub fn has_package(lock: &str, is: impl Fn(&str) -> bool) -> Result<bool, GenerateError> {
    Ok(packages_of(lock)?.iter().any(|p| is(p.name())))
}

/// `lock` with the registry packages of `with` it lacks, and the dependency lists `with`
/// changed from `without` (two locks resolved from one base: `with` adds a dependency, as
/// the embedded integration lock adds reqwest to the embedded lock). A dependency named
/// bare that now has two versions is pinned to the version it meant. `Ok(None)` when
/// `lock` has them all already; [`GenerateError::LockDiverged`] names the packages whose
/// entry in `lock` is neither `without`'s nor `with`'s, that `without` had and `lock`
/// lacks, or that `lock` has at another version (a lock updated since: merging would
/// guess).
pub fn merge_registry(
    lock: &str,
    without: &str,
    with: &str,
) -> Result<Option<String>, GenerateError> {
    let without = packages_of(without)?;
    let with = packages_of(with)?;
    let mut conflicts = Vec::new();
    let result = edit(lock, |packages| {
        let before = unique_versions(packages);
        let from_with_versions = unique_versions(&with);
        // Registry packages by (name, version), looked up once each: a lock may be large.
        let registry = |list: &[Table]| -> BTreeMap<(String, String), usize> {
            list.iter()
                .enumerate()
                .filter(|(_, p)| !p.is_local())
                .map(|(i, p)| ((p.name().to_owned(), p.version().to_owned()), i))
                .collect()
        };
        let in_lock = registry(packages);
        let in_without = registry(&without);
        let in_with = registry(&with);
        // Indices into `packages` of the entries taken from `with` (its bare names mean
        // its versions).
        let mut from_with = BTreeSet::new();
        for (key, &wi) in &in_with {
            let w = &with[wi];
            let base = in_without.get(key).map(|&bi| &without[bi]);
            // The lock has the crate at a version `with` does not.
            let other_version = in_lock
                .range((key.0.clone(), String::new())..)
                .take_while(|((name, _), _)| *name == key.0)
                .any(|(k, _)| !in_with.contains_key(k));
            match in_lock.get(key).copied() {
                // `without` had it, or the lock has the crate at a version `with` does not:
                // the lock was updated since (a second version next to it would be one
                // cargo never resolves).
                None if base.is_some() || other_version => conflicts.push(w.id()),
                None => {
                    from_with.insert(packages.len());
                    packages.push(w.clone());
                }
                Some(i) if packages[i].dependencies() == w.dependencies() => {}
                Some(i) if base.is_some_and(|b| b.dependencies() == packages[i].dependencies()) => {
                    match w.get("dependencies") {
                        Some(list) => {
                            packages[i].insert("dependencies", list.clone());
                        }
                        None => {
                            packages[i].remove("dependencies");
                        }
                    }
                    from_with.insert(i);
                }
                Some(i) => conflicts.push(packages[i].id()),
            }
        }
        if !conflicts.is_empty() || from_with.is_empty() {
            return Ok(false);
        }
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for p in packages.iter() {
            *count.entry(p.name().to_owned()).or_default() += 1;
        }
        for (i, p) in packages.iter_mut().enumerate() {
            let meant = if from_with.contains(&i) {
                &from_with_versions
            } else {
                &before
            };
            let deps = p.get_mut("dependencies").and_then(Item::as_array_mut);
            for d in deps.into_iter().flat_map(Array::iter_mut) {
                let entry = d.as_str().unwrap_or_default().to_owned();
                if !entry.contains(' ')
                    && count.get(&entry).is_some_and(|n| *n > 1)
                    && let Some(version) = meant.get(&entry)
                {
                    replace_keeping_decor(d, &format!("{entry} {version}"));
                }
            }
        }
        Ok(true)
    })?;
    if conflicts.is_empty() {
        Ok(result)
    } else {
        Err(GenerateError::LockDiverged {
            first: conflicts
                .first()
                .and_then(|p| p.split(' ').next())
                .unwrap_or_default()
                .to_owned(),
            packages: conflicts.join(", "),
        })
    }
}

/// Each crate name with a single version in `packages`, and that version.
fn unique_versions(packages: &[Table]) -> BTreeMap<String, String> {
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    for p in packages {
        seen.entry(p.name().to_owned())
            .and_modify(|v| *v = None)
            .or_insert_with(|| Some(p.version().to_owned()));
    }
    seen.into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect()
}

/// `lock` parsed, its packages changed by `change` (which says whether it changed
/// anything), sorted as cargo sorts them and rendered back with its line endings; entries
/// the change left alone keep their bytes.
fn edit(
    lock: &str,
    change: impl FnOnce(&mut Vec<Table>) -> Result<bool, GenerateError>,
) -> Result<Option<String>, GenerateError> {
    let mut doc = parse(lock)?;
    let mut packages = take_packages(&mut doc)?;
    if !change(&mut packages)? {
        return Ok(None);
    }
    for p in &mut packages {
        if let Some(list) = p.get_mut("dependencies").and_then(Item::as_array_mut) {
            list.sort_by(|a, b| {
                dep_key(a.as_str().unwrap_or_default()).cmp(dep_key(b.as_str().unwrap_or_default()))
            });
        }
        // Laid out in the order of the list, right after the lock's top-level keys: a
        // table's parsed position would put it back where it was.
        p.set_position(None);
    }
    // Cargo orders packages by name, then version.
    packages.sort_by(|a, b| {
        a.name()
            .cmp(b.name())
            .then_with(|| version_key(a.version()).cmp(&version_key(b.version())))
    });
    // In the slot the list was taken from, so tables after it (`[[patch.unused]]`) stay
    // after it.
    doc["package"] = Item::ArrayOfTables(packages.into_iter().collect());
    let out = doc.to_string();
    Ok(Some(if lock.contains("\r\n") {
        out.replace('\n', "\r\n")
    } else {
        out
    }))
}

/// `lock` as a document, its line endings `\n`; one that is not TOML is an error, never
/// an edit by guesswork.
fn parse(lock: &str) -> Result<DocumentMut, GenerateError> {
    lock.replace("\r\n", "\n")
        .parse::<DocumentMut>()
        .map_err(|e| not_a_lock(format!("it is not TOML: {}", e.message())))
}

/// Cargo.lock lacks workspace package `missing`, whose entry the change to `for_` needs.
fn behind_the_workspace(missing: &str, for_: &str) -> GenerateError {
    GenerateError::Manifest {
        path: LOCK_PATH.to_owned(),
        message: format!(
            "has no entry for the workspace package `{missing}`, which adding `{for_}` to it needs"
        ),
        help: "the lock is behind the workspace: let cargo bring it up to date (`cargo generate-lockfile`, or any `cargo build` without --locked), then run this again; nothing was written".to_owned(),
    }
}

/// The error for a `Cargo.lock` the generator cannot edit: `message` says why.
fn not_a_lock(message: String) -> GenerateError {
    GenerateError::Manifest {
        path: LOCK_PATH.to_owned(),
        message,
        help: "restore it (`git checkout Cargo.lock`) or let cargo write it again (`cargo generate-lockfile`); nothing was written".to_owned(),
    }
}

/// The `[[package]]` entries of `lock`.
fn packages_of(lock: &str) -> Result<Vec<Table>, GenerateError> {
    take_packages(&mut parse(lock)?)
}

/// The `[[package]]` entries, taken out of `doc` (their key left in its place, empty).
fn take_packages(doc: &mut DocumentMut) -> Result<Vec<Table>, GenerateError> {
    let Some(slot) = doc.get_mut("package") else {
        return Ok(Vec::new());
    };
    match std::mem::take(slot) {
        Item::ArrayOfTables(list) => Ok(list.into_iter().collect()),
        _ => Err(not_a_lock(
            "`package` is not a list of `[[package]]` tables".to_owned(),
        )),
    }
}

/// Sets the string `key` of `table`, keeping the decor of the value it replaces.
fn set_str(table: &mut Table, key: &str, to: &str) {
    match table.get_mut(key).and_then(Item::as_value_mut) {
        Some(v) => replace_keeping_decor(v, to),
        None => {
            table.insert(key, toml_edit::value(to));
        }
    }
}

fn replace_keeping_decor(v: &mut Value, to: &str) {
    let decor = v.decor().clone();
    *v = Value::from(to);
    *v.decor_mut() = decor;
}

/// A dependency list as cargo writes one: an entry per line, each followed by a comma.
fn cargo_list(entries: &[String]) -> Array {
    let mut list = Array::new();
    for e in entries {
        list.push_formatted(list_entry(e));
    }
    list.set_trailing_comma(true);
    list.set_trailing("\n");
    list
}

fn list_entry(entry: &str) -> Value {
    let mut v = Value::from(entry);
    v.decor_mut().set_prefix("\n ");
    v.decor_mut().set_suffix("");
    v
}

/// A version as cargo orders them: its numbers compared as numbers (`0.9.0` before
/// `0.10.0`), a pre-release before its release (`1.0.0-rc.1` before `1.0.0`), build
/// metadata ignored.
fn version_key(v: &str) -> (Vec<u64>, bool, String) {
    let v = v.split('+').next().unwrap_or(v);
    let (core, pre) = v.split_once('-').unwrap_or((v, ""));
    let numbers = core
        .split('.')
        .map(|n| n.parse().unwrap_or(u64::MAX))
        .collect();
    (numbers, pre.is_empty(), pre.to_owned())
}

fn dep_key(d: &str) -> &str {
    d.split(' ').next().unwrap_or(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"acme-maintenance\"\nversion = \"0.1.0\"\ndependencies = [\n \"acme-om\",\n \"serde\",\n]\n\n[[package]]\nname = \"acme-om\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"ab\"\n";

    #[test]
    fn the_binary_embeds_a_lock_for_the_generated_workspace() {
        let lock = crate::generate::templates::embedded_file(EMBEDDED_LOCK)
            .expect("templates/Cargo.lock.acme is embedded");
        let text = String::from_utf8_lossy(lock);
        assert!(
            text.contains("name = \"acme-maintenance\""),
            "the lock resolves the init workspace"
        );
        assert!(text.contains("name = \"scaffold-runtime\""));
    }

    #[test]
    fn renames_workspace_packages_and_resorts() {
        assert_eq!(rename(LOCK, "acme").expect("renamed"), LOCK);
        let out = rename(LOCK, "zeta").expect("renamed");
        let expected = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"ab\"\n\n[[package]]\nname = \"zeta-maintenance\"\nversion = \"0.1.0\"\ndependencies = [\n \"serde\",\n \"zeta-om\",\n]\n\n[[package]]\nname = \"zeta-om\"\nversion = \"0.1.0\"\n";
        assert_eq!(out, expected);
        let added = add_member_like(LOCK, LOCK, "acme-billing", "acme-maintenance")
            .expect("parses")
            .expect("added");
        assert!(added.contains("[[package]]\nname = \"acme-billing\"\nversion = \"0.1.0\"\ndependencies = [\n \"acme-om\",\n \"serde\",\n]\n\n[[package]]\nname = \"acme-maintenance\""), "{added}");
        assert!(
            add_member_like(LOCK, LOCK, "acme-om", "acme-maintenance")
                .expect("parses")
                .is_none()
        );
        let crlf = LOCK.replace('\n', "\r\n");
        let added = add_member_like(&crlf, LOCK, "acme-billing", "acme-maintenance")
            .expect("parses")
            .expect("added");
        assert!(added.contains("name = \"acme-billing\"\r\n"), "{added}");
    }

    #[test]
    fn adds_a_member_with_its_dependencies_and_a_dependency_to_a_member() {
        let deps = ["acme-om".to_owned(), "serde".to_owned()];
        let added = add_member(LOCK, "acme-shipping-service", "acme-om", &deps)
            .expect("parses")
            .expect("added");
        assert!(added.contains("[[package]]\nname = \"acme-shipping-service\"\nversion = \"0.1.0\"\ndependencies = [\n \"acme-om\",\n \"serde\",\n]\n\n[[package]]\nname = \"serde\""), "{added}");
        assert!(
            add_member(LOCK, "acme-om", "acme-maintenance", &deps)
                .expect("parses")
                .is_none()
        );
        let behind = add_member(LOCK, "acme-x", "acme-missing", &deps)
            .expect_err("a lock without the package to copy is behind the workspace");
        assert!(behind.to_string().contains("`acme-missing`"), "{behind}");
        let behind = add_dependency(LOCK, "acme-missing", "serde")
            .expect_err("a lock without the package is behind the workspace");
        assert!(behind.to_string().contains("`acme-missing`"), "{behind}");
        let dep = add_dependency(LOCK, "acme-maintenance", "acme-shipping-service")
            .expect("parses")
            .expect("added");
        assert!(
            dep.contains(
                "dependencies = [\n \"acme-om\",\n \"acme-shipping-service\",\n \"serde\",\n]"
            ),
            "{dep}"
        );
        assert!(
            add_dependency(&dep, "acme-maintenance", "acme-shipping-service")
                .expect("parses")
                .is_none()
        );
        let om = add_dependency(LOCK, "acme-om", "serde")
            .expect("parses")
            .expect("added");
        assert!(
            om.contains(
                "name = \"acme-om\"\nversion = \"0.1.0\"\ndependencies = [\n \"serde\",\n]"
            ),
            "{om}"
        );
    }

    fn pkg(name: &str, version: &str, deps: &[&str]) -> String {
        let mut out = format!(
            "\n\n[[package]]\nname = \"{name}\"\nversion = \"{version}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"ab\"\n"
        );
        if !deps.is_empty() {
            out.push_str("dependencies = [\n");
            for d in deps {
                out.push_str(&format!(" \"{d}\",\n"));
            }
            out.push_str("]\n");
        }
        out.pop();
        out
    }

    fn lock(packages: &[String]) -> String {
        format!("version = 4{}\n", packages.concat())
    }

    #[test]
    fn merging_adds_what_the_wider_lock_has_and_pins_names_that_gain_a_version() {
        let without = lock(&[
            pkg("base64", "0.22.1", &[]),
            pkg("getrandom", "0.2.0", &["libc"]),
            pkg("libc", "0.2.0", &[]),
            pkg("postgres", "0.19.0", &["base64"]),
        ]);
        let with = lock(&[
            pkg("base64", "0.22.1", &[]),
            pkg("base64", "0.23.1", &[]),
            pkg("getrandom", "0.2.0", &["js-sys", "libc"]),
            pkg("js-sys", "0.3.0", &[]),
            pkg("libc", "0.2.0", &[]),
            pkg("postgres", "0.19.0", &["base64 0.22.1"]),
            pkg("reqwest", "0.12.0", &["base64 0.23.1", "getrandom"]),
        ]);
        // The user's lock: the base plus a workspace member depending on base64.
        let mine = format!(
            "{}\n[[package]]\nname = \"zeta-api\"\nversion = \"0.1.0\"\ndependencies = [\n \"base64\",\n]\n",
            without
        );
        let merged = merge_registry(&mine, &without, &with)
            .expect("no conflict")
            .expect("changed");
        let expected = format!(
            "version = 4{}\n\n[[package]]\nname = \"zeta-api\"\nversion = \"0.1.0\"\ndependencies = [\n \"base64 0.22.1\",\n]\n",
            [
                pkg("base64", "0.22.1", &[]),
                pkg("base64", "0.23.1", &[]),
                pkg("getrandom", "0.2.0", &["js-sys", "libc"]),
                pkg("js-sys", "0.3.0", &[]),
                pkg("libc", "0.2.0", &[]),
                pkg("postgres", "0.19.0", &["base64 0.22.1"]),
                pkg("reqwest", "0.12.0", &["base64 0.23.1", "getrandom"]),
            ]
            .concat()
        );
        assert_eq!(merged, expected);
        assert_eq!(
            merge_registry(&merged, &without, &with).expect("no conflict"),
            None,
            "merged once"
        );

        let edited = mine.replace(
            "dependencies = [\n \"libc\",",
            "dependencies = [\n \"libc\",\n \"wasi\",",
        );
        assert_eq!(
            diverged(merge_registry(&edited, &without, &with)),
            "getrandom 0.2.0",
            "a lock edited since is not merged by guesswork"
        );
        let updated = mine.replace(
            "name = \"libc\"\nversion = \"0.2.0\"",
            "name = \"libc\"\nversion = \"0.2.9\"",
        );
        assert_ne!(updated, mine);
        assert_eq!(
            diverged(merge_registry(&updated, &without, &with)),
            "libc 0.2.0",
            "a crate updated since is not added a second time at the old version"
        );
    }

    #[test]
    fn entries_a_change_leaves_alone_keep_their_bytes() {
        // A hand-touched entry (odd spacing, a comment) and a table after the packages.
        let odd = LOCK.replace(
            "checksum = \"ab\"\n",
            "checksum =   \"ab\" # pinned by hand\n\n[[patch.unused]]\nname = \"zed\"\nversion = \"0.1.0\"\n",
        );
        let added = add_member(&odd, "acme-zz", "acme-om", &[])
            .expect("parses")
            .expect("added");
        assert!(
            added.contains("checksum =   \"ab\" # pinned by hand\n"),
            "{added}"
        );
        assert!(
            added.contains("name = \"serde\"")
                && added.find("name = \"acme-zz\"") < added.find("name = \"serde\""),
            "sorted among the packages: {added}"
        );
        assert!(
            added.ends_with("\n[[patch.unused]]\nname = \"zed\"\nversion = \"0.1.0\"\n"),
            "what follows the packages stays after them: {added}"
        );
        // A change that changes nothing writes nothing.
        assert!(
            add_dependency(LOCK, "acme-maintenance", "serde")
                .expect("parses")
                .is_none()
        );
    }

    #[test]
    fn the_embedded_lock_renamed_and_back_is_itself() {
        let lock = crate::generate::templates::embedded_file(EMBEDDED_LOCK).expect("embedded");
        let lock = String::from_utf8_lossy(lock);
        // `acme-` to `acme-x-`, and back: the same bytes, so nothing else moved.
        let there = rename(&lock, "acme-x").expect("renamed");
        assert!(there.contains("name = \"acme-x-maintenance\""));
        assert_ne!(there, lock);
        let back = there.replace("\"acme-x-", "\"acme-");
        assert_eq!(
            edit(&back, |_| Ok(true)).expect("parses").as_deref(),
            Some(&*lock)
        );
    }

    #[test]
    fn a_lock_that_is_not_toml_is_refused() {
        for broken in ["version = 4\n[[package]\nname = \"x\"\n", "package = 3\n"] {
            match add_dependency(broken, "x", "y") {
                Err(GenerateError::Manifest { path, .. }) => assert_eq!(path, "Cargo.lock"),
                other => panic!("{broken:?} was not refused: {other:?}"),
            }
        }
    }

    fn diverged(merged: Result<Option<String>, GenerateError>) -> String {
        match merged {
            Err(GenerateError::LockDiverged { packages, .. }) => packages,
            other => panic!("not diverged: {other:?}"),
        }
    }

    #[test]
    fn versions_sort_as_numbers() {
        let mut v = vec!["0.10.0", "0.9.1", "1.0.0", "1.0.0-rc.1", "0.9.0"];
        v.sort_by_key(|v| version_key(v));
        assert_eq!(v, ["0.9.0", "0.9.1", "0.10.0", "1.0.0-rc.1", "1.0.0"]);
    }
}
