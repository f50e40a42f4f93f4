//! The generated repository's `Cargo.lock`. The embedded lock was resolved for the project
//! name `acme`; for another name its workspace packages (no `source`) are renamed and the
//! packages re-sorted the way cargo writes them, so `cargo build --locked` accepts it.

/// The name the embedded lock was resolved with.
pub const LOCK_NAME: &str = "acme";
/// The embedded lock, under `templates/`.
pub const EMBEDDED_LOCK: &str = "Cargo.lock.acme";

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Package {
    name: String,
    /// Every line of the block except `name = …` and the dependency entries.
    lines: Vec<String>,
    dependencies: Option<Vec<String>>,
    is_local: bool,
    /// Taken from the lock merged in by [`merge_registry`] (its bare names mean its versions).
    from_with: bool,
}

impl Package {
    fn version(&self) -> &str {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix("version = "))
            .map_or("", |v| v.trim_matches('"'))
    }

    /// `name version`, how cargo names one of several versions.
    fn id(&self) -> String {
        format!("{} {}", self.name, self.version())
    }
}

/// `lock` with the workspace packages `acme-*` renamed to `<name>-*`, sorted by name.
pub fn rename(lock: &str, name: &str) -> String {
    if name == LOCK_NAME {
        return lock.to_owned();
    }
    let from = format!("{LOCK_NAME}-");
    let to = format!("{name}-");
    let (header, mut packages) = parse(lock);
    let renamed: Vec<String> = packages
        .iter()
        .filter(|p| p.is_local && p.name.starts_with(&from))
        .map(|p| p.name.clone())
        .collect();
    let rename_one = |n: &str| -> String {
        if renamed.iter().any(|r| r == n) {
            format!("{to}{}", &n[from.len()..])
        } else {
            n.to_owned()
        }
    };
    for p in &mut packages {
        p.name = rename_one(&p.name);
        if let Some(deps) = &mut p.dependencies {
            for d in deps.iter_mut() {
                let (dep_name, rest) = match d.split_once(' ') {
                    Some((n, r)) => (n.to_owned(), format!(" {r}")),
                    None => (d.clone(), String::new()),
                };
                *d = format!("{}{rest}", rename_one(&dep_name));
            }
        }
    }
    render(&header, packages)
}

/// `lock` with workspace package `new` added, with the entry workspace package `like` has in
/// `template` (a new worker's crate renders from the same template as the maintenance
/// worker's, so it depends on the same packages); `None` when `template` has no `like` or
/// `lock` already has `new`.
pub fn add_member_like(lock: &str, template: &str, new: &str, like: &str) -> Option<String> {
    let (_, template) = parse(&template.replace("\r\n", "\n"));
    let mut copy = template
        .into_iter()
        .find(|p| p.is_local && p.name == like)?;
    copy.name = new.to_owned();
    edit(lock, |packages| {
        if packages.iter().any(|p| p.name == new) {
            return false;
        }
        packages.push(copy);
        true
    })
}

/// `lock` with workspace package `new` added, depending on `deps`, with the other lines
/// (the version) of workspace package `like` in `lock`; `None` when `lock` has no `like`
/// or already has `new`.
pub fn add_member(lock: &str, new: &str, like: &str, deps: &[String]) -> Option<String> {
    edit(lock, |packages| {
        if packages.iter().any(|p| p.name == new) {
            return false;
        }
        let Some(like) = packages.iter().find(|p| p.is_local && p.name == like) else {
            return false;
        };
        let mut copy = like.clone();
        copy.name = new.to_owned();
        copy.dependencies = (!deps.is_empty()).then(|| deps.to_vec());
        packages.push(copy);
        true
    })
}

/// `lock` with `dep` among the dependencies of workspace package `package`; `None` when
/// `lock` has no such package or it has `dep` already.
pub fn add_dependency(lock: &str, package: &str, dep: &str) -> Option<String> {
    edit(lock, |packages| {
        let Some(p) = packages
            .iter_mut()
            .find(|p| p.is_local && p.name == package)
        else {
            return false;
        };
        let deps = p.dependencies.get_or_insert_with(Vec::new);
        if deps.iter().any(|d| dep_key(d) == dep) {
            return false;
        }
        deps.push(dep.to_owned());
        true
    })
}

/// `lock` with the registry packages of `with` it lacks, and the dependency lists `with`
/// changed from `without` (two locks resolved from one base: `with` adds a dependency, as
/// the embedded integration lock adds reqwest to the embedded lock). A dependency named
/// bare that now has two versions is pinned to the version it meant. `Ok(None)` when
/// `lock` has them all already; `Err` names the packages whose entry in `lock` is neither
/// `without`'s nor `with`'s, that `without` had and `lock` lacks, or that `lock` has at
/// another version (a lock updated since: merging would guess).
pub fn merge_registry(
    lock: &str,
    without: &str,
    with: &str,
) -> Result<Option<String>, Vec<String>> {
    let (_, without) = parse(&without.replace("\r\n", "\n"));
    let (_, with) = parse(&with.replace("\r\n", "\n"));
    let mut conflicts = Vec::new();
    let result = edit(lock, |packages| {
        let before = unique_versions(packages);
        let from_with = unique_versions(&with);
        // Registry packages by (name, version), looked up once each: a lock may be large.
        let registry = |list: &[Package]| -> BTreeMap<(String, String), usize> {
            list.iter()
                .enumerate()
                .filter(|(_, p)| !p.is_local)
                .map(|(i, p)| ((p.name.clone(), p.version().to_owned()), i))
                .collect()
        };
        let in_lock = registry(packages);
        let in_without = registry(&without);
        let in_with = registry(&with);
        let mut changed = false;
        for (key, &wi) in &in_with {
            let w = &with[wi];
            let base = in_without.get(key).map(|&bi| &without[bi]);
            // The lock has the crate at a version `with` does not.
            let other_version = in_lock
                .range((key.0.clone(), String::new())..)
                .take_while(|((name, _), _)| *name == key.0)
                .any(|(k, _)| !in_with.contains_key(k));
            match in_lock.get(key).map(|&i| &mut packages[i]) {
                // `without` had it, or the lock has the crate at a version `with` does not:
                // the lock was updated since (a second version next to it would be one
                // cargo never resolves).
                None if base.is_some() || other_version => conflicts.push(w.id()),
                None => {
                    let mut added = w.clone();
                    added.from_with = true;
                    packages.push(added);
                    changed = true;
                }
                Some(p) if p.dependencies == w.dependencies => {}
                Some(p) if base.is_some_and(|b| b.dependencies == p.dependencies) => {
                    p.dependencies.clone_from(&w.dependencies);
                    p.from_with = true;
                    changed = true;
                }
                Some(p) => conflicts.push(p.id()),
            }
        }
        if !conflicts.is_empty() || !changed {
            return false;
        }
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for p in packages.iter() {
            *count.entry(p.name.clone()).or_default() += 1;
        }
        for p in packages.iter_mut() {
            let meant = if p.from_with { &from_with } else { &before };
            for d in p.dependencies.iter_mut().flatten() {
                if !d.contains(' ')
                    && count.get(d.as_str()).is_some_and(|n| *n > 1)
                    && let Some(version) = meant.get(d.as_str())
                {
                    *d = format!("{d} {version}");
                }
            }
        }
        true
    });
    if conflicts.is_empty() {
        Ok(result)
    } else {
        Err(conflicts)
    }
}

/// Each crate name with a single version in `packages`, and that version.
fn unique_versions(packages: &[Package]) -> BTreeMap<String, String> {
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    for p in packages {
        seen.entry(p.name.clone())
            .and_modify(|v| *v = None)
            .or_insert_with(|| Some(p.version().to_owned()));
    }
    seen.into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect()
}

/// `lock` parsed, changed by `change` (which says whether it changed anything), rendered
/// back with its line endings.
fn edit(lock: &str, change: impl FnOnce(&mut Vec<Package>) -> bool) -> Option<String> {
    let (header, mut packages) = parse(&lock.replace("\r\n", "\n"));
    if !change(&mut packages) {
        return None;
    }
    let out = render(&header, packages);
    Some(if lock.contains("\r\n") {
        out.replace('\n', "\r\n")
    } else {
        out
    })
}

fn parse(lock: &str) -> (String, Vec<Package>) {
    let mut blocks = lock.split("\n\n[[package]]\n");
    let header = blocks.next().unwrap_or_default().to_owned();
    (header, blocks.map(parse_package).collect())
}

fn render(header: &str, mut packages: Vec<Package>) -> String {
    for p in &mut packages {
        if let Some(deps) = &mut p.dependencies {
            deps.sort_by(|a, b| dep_key(a).cmp(dep_key(b)));
        }
    }
    // Cargo orders packages by name, then version.
    packages.sort_by(|a, b| {
        a.name
            .cmp(&b.name)
            .then_with(|| version_key(a.version()).cmp(&version_key(b.version())))
    });
    let mut out = header.to_owned();
    for p in &packages {
        out.push_str("\n\n[[package]]\n");
        out.push_str(&format!("name = \"{}\"\n", p.name));
        for l in &p.lines {
            out.push_str(l);
            out.push('\n');
        }
        if let Some(deps) = &p.dependencies {
            out.push_str("dependencies = [\n");
            for d in deps {
                out.push_str(&format!(" \"{d}\",\n"));
            }
            out.push_str("]\n");
        }
        // Blocks are joined by a blank line; the last newline is re-added below.
        out.pop();
    }
    out.push('\n');
    out
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

fn parse_package(block: &str) -> Package {
    let mut name = String::new();
    let mut lines = Vec::new();
    let mut dependencies = None;
    let mut is_local = true;
    let mut in_deps = false;
    for line in block.lines() {
        if in_deps {
            if line.trim() == "]" {
                in_deps = false;
            } else if let Some(dep) = line.trim().strip_prefix('"')
                && let Some(list) = &mut dependencies
            {
                let list: &mut Vec<String> = list;
                list.push(dep.trim_end_matches(',').trim_end_matches('"').to_owned());
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("name = ") {
            name = v.trim_matches('"').to_owned();
        } else if line.starts_with("dependencies = [") {
            dependencies = Some(Vec::new());
            in_deps = !line.ends_with(']');
        } else {
            if line.starts_with("source = ") {
                is_local = false;
            }
            if !line.is_empty() {
                lines.push(line.to_owned());
            }
        }
    }
    Package {
        name,
        lines,
        dependencies,
        is_local,
        from_with: false,
    }
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
        assert_eq!(rename(LOCK, "acme"), LOCK);
        let out = rename(LOCK, "zeta");
        let expected = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"ab\"\n\n[[package]]\nname = \"zeta-maintenance\"\nversion = \"0.1.0\"\ndependencies = [\n \"serde\",\n \"zeta-om\",\n]\n\n[[package]]\nname = \"zeta-om\"\nversion = \"0.1.0\"\n";
        assert_eq!(out, expected);
        let added = add_member_like(LOCK, LOCK, "acme-billing", "acme-maintenance").expect("added");
        assert!(added.contains("[[package]]\nname = \"acme-billing\"\nversion = \"0.1.0\"\ndependencies = [\n \"acme-om\",\n \"serde\",\n]\n\n[[package]]\nname = \"acme-maintenance\""), "{added}");
        assert!(add_member_like(LOCK, LOCK, "acme-om", "acme-maintenance").is_none());
        let crlf = LOCK.replace('\n', "\r\n");
        let added =
            add_member_like(&crlf, LOCK, "acme-billing", "acme-maintenance").expect("added");
        assert!(added.contains("name = \"acme-billing\"\r\n"), "{added}");
    }

    #[test]
    fn adds_a_member_with_its_dependencies_and_a_dependency_to_a_member() {
        let deps = ["acme-om".to_owned(), "serde".to_owned()];
        let added = add_member(LOCK, "acme-shipping-service", "acme-om", &deps).expect("added");
        assert!(added.contains("[[package]]\nname = \"acme-shipping-service\"\nversion = \"0.1.0\"\ndependencies = [\n \"acme-om\",\n \"serde\",\n]\n\n[[package]]\nname = \"serde\""), "{added}");
        assert!(add_member(LOCK, "acme-om", "acme-maintenance", &deps).is_none());
        assert!(add_member(LOCK, "acme-x", "acme-missing", &deps).is_none());
        let dep = add_dependency(LOCK, "acme-maintenance", "acme-shipping-service").expect("added");
        assert!(
            dep.contains(
                "dependencies = [\n \"acme-om\",\n \"acme-shipping-service\",\n \"serde\",\n]"
            ),
            "{dep}"
        );
        assert!(add_dependency(&dep, "acme-maintenance", "acme-shipping-service").is_none());
        let om = add_dependency(LOCK, "acme-om", "serde").expect("added");
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
            merge_registry(&merged, &without, &with),
            Ok(None),
            "merged once"
        );

        let edited = mine.replace(
            "dependencies = [\n \"libc\",",
            "dependencies = [\n \"libc\",\n \"wasi\",",
        );
        assert_eq!(
            merge_registry(&edited, &without, &with),
            Err(vec!["getrandom 0.2.0".to_owned()]),
            "a lock edited since is not merged by guesswork"
        );
        let updated = mine.replace(
            "name = \"libc\"\nversion = \"0.2.0\"",
            "name = \"libc\"\nversion = \"0.2.9\"",
        );
        assert_ne!(updated, mine);
        assert_eq!(
            merge_registry(&updated, &without, &with),
            Err(vec!["libc 0.2.0".to_owned()]),
            "a crate updated since is not added a second time at the old version"
        );
    }

    #[test]
    fn versions_sort_as_numbers() {
        let mut v = vec!["0.10.0", "0.9.1", "1.0.0", "1.0.0-rc.1", "0.9.0"];
        v.sort_by_key(|v| version_key(v));
        assert_eq!(v, ["0.9.0", "0.9.1", "0.10.0", "1.0.0-rc.1", "1.0.0"]);
    }
}
