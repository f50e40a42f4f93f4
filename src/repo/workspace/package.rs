//! One member's `Cargo.toml`: its package, library name and targets, its dependencies of
//! every kind (workspace-inherited ones resolved), and its `[package.metadata.scaffold]`.

use std::collections::BTreeMap;

use toml_edit::{Item, TableLike};

use super::super::gaps::{Gap, Why};
use super::{
    Crate, Dep, DepKind, Disk, WorkspaceDep, default_features_said, join_rel, string_list,
    toml_error,
};
use crate::check::finding::Location;
use crate::repo::inside::EntryKind;
use crate::source::SourceFile;

/// A member's crate (`None`: its manifest has no `[package]`), with the gaps its targets
/// leave (a target folder that cannot be listed).
pub(super) fn load_crate(
    dir: &str,
    file: SourceFile,
    workspace_deps: &BTreeMap<String, WorkspaceDep>,
    disk: &Disk<'_>,
) -> Result<(Option<Crate>, Vec<Gap>), Box<Gap>> {
    let doc = toml_edit::Document::parse(file.text.to_string())
        .map_err(|e| Box::new(toml_error(&file, &e)))?;
    let top = doc.as_table();
    let Some((pkg_key, pkg)) = top.get_key_value("package") else {
        return Ok((None, Vec::new()));
    };
    let pkg_loc = key_loc(&file, pkg_key, pkg);
    let Some(pkg) = pkg.as_table_like() else {
        return Err(Box::new(Gap {
            path: file.path.clone(),
            at: pkg_loc,
            why: Why::PackageNotTable,
        }));
    };
    let Some(name) = pkg.get("name").and_then(Item::as_str) else {
        return Err(Box::new(Gap {
            path: file.path.clone(),
            at: pkg_loc,
            why: Why::PackageUnnamed,
        }));
    };
    let lib_name = top
        .get("lib")
        .and_then(Item::as_table_like)
        .and_then(|l| l.get("name"))
        .and_then(Item::as_str)
        .map_or_else(|| name.replace('-', "_"), str::to_owned);
    let scaffold = pkg
        .get("metadata")
        .and_then(Item::as_table_like)
        .and_then(|m| m.get("scaffold"))
        .and_then(Item::as_table_like);
    let role = scaffold
        .and_then(|s| s.get_key_value("role"))
        .and_then(|(k, v)| v.as_str().map(|r| (r.to_owned(), value_loc(&file, k, v))));
    let remote = scaffold
        .and_then(|s| s.get_key_value("remote"))
        .filter(|(_, v)| v.as_bool() == Some(true))
        .map(|(k, v)| value_loc(&file, k, v));
    let mut deps = Vec::new();
    for kind in [DepKind::Normal, DepKind::Dev, DepKind::Build] {
        collect_deps(
            &file,
            top.get(kind.table()),
            kind,
            None,
            dir,
            workspace_deps,
            &mut deps,
        );
        if kind == DepKind::Dev {
            // Cargo still accepts the old underscore spelling.
            collect_deps(
                &file,
                top.get("dev_dependencies"),
                kind,
                None,
                dir,
                workspace_deps,
                &mut deps,
            );
        }
    }
    if let Some(targets) = top.get("target").and_then(Item::as_table_like) {
        for (target, t) in targets.iter() {
            let Some(t) = t.as_table_like() else { continue };
            for kind in [DepKind::Normal, DepKind::Dev, DepKind::Build] {
                collect_deps(
                    &file,
                    t.get(kind.table()),
                    kind,
                    Some(target),
                    dir,
                    workspace_deps,
                    &mut deps,
                );
            }
        }
    }
    let mut gaps = Vec::new();
    let targets = targets(top, pkg, dir, disk, &mut |folder, reason| {
        gaps.push(Gap {
            path: file.path.clone(),
            at: pkg_loc,
            why: Why::TargetsUnlisted { folder, reason },
        });
    });
    Ok((
        Some(Crate {
            package: name.to_owned(),
            lib_name,
            dir: dir.to_owned(),
            manifest: file,
            deps,
            role,
            remote,
            package_loc: pkg_loc,
            targets,
        }),
        gaps,
    ))
}

/// The root files of a package's targets, as cargo finds them: `[lib]`, `[[bin]]`,
/// `[[example]]`, `[[test]]`, `[[bench]]` paths (or the files their names give), the
/// files cargo discovers itself unless `autobins = false` and the like, and the build
/// script. Found on disk, whatever ignore files say, as cargo finds them: a `.rs` file or
/// a folder holding `main.rs` in `src/bin/`, `examples/`, `tests/`, `benches/` (no
/// dotfile); only files that exist (one that cannot be read counts: the module tree
/// reports it). A discovery folder that cannot be listed goes to `unlisted`. Sorted,
/// each once with its strongest scope.
fn targets(
    top: &toml_edit::Table,
    pkg: &dyn TableLike,
    dir: &str,
    disk: &Disk<'_>,
    unlisted: &mut dyn FnMut(String, String),
) -> Vec<(String, DepKind)> {
    let at = |p: &str| join_rel(dir, p);
    let mut out: Vec<(String, DepKind)> = Vec::new();
    let lib = top.get("lib").and_then(Item::as_table_like);
    match lib.and_then(|l| l.get("path")).and_then(Item::as_str) {
        Some(p) => out.extend(at(p).map(|p| (p, DepKind::Normal))),
        None => out.extend(at("src/lib.rs").map(|p| (p, DepKind::Normal))),
    }
    match pkg.get("build") {
        Some(b) if b.as_bool() == Some(false) => {}
        Some(b) if b.as_str().is_some() => {
            out.extend(b.as_str().and_then(at).map(|p| (p, DepKind::Build)));
        }
        _ => out.extend(at("build.rs").map(|p| (p, DepKind::Build))),
    }
    for (key, folder, scope, auto) in [
        ("bin", "src/bin", DepKind::Normal, "autobins"),
        ("example", "examples", DepKind::Dev, "autoexamples"),
        ("test", "tests", DepKind::Dev, "autotests"),
        ("bench", "benches", DepKind::Dev, "autobenches"),
    ] {
        if let Some(list) = top.get(key).and_then(Item::as_array_of_tables) {
            for t in list.iter() {
                if let Some(p) = t.get("path").and_then(Item::as_str) {
                    out.extend(at(p).map(|p| (p, scope)));
                } else if let Some(name) = t.get("name").and_then(Item::as_str) {
                    for p in [
                        format!("{folder}/{name}.rs"),
                        format!("{folder}/{name}/main.rs"),
                    ] {
                        out.extend(at(&p).map(|p| (p, scope)));
                    }
                    if key == "bin" {
                        out.extend(at("src/main.rs").map(|p| (p, scope)));
                    }
                }
            }
        }
        if pkg.get(auto).and_then(Item::as_bool) == Some(false) {
            continue;
        }
        if key == "bin" {
            out.extend(at("src/main.rs").map(|p| (p, scope)));
        }
        let Some(base) = at(folder) else { continue };
        match disk.list(&base) {
            Ok(None) => {}
            Ok(Some(entries)) => {
                for (name, kind) in entries {
                    if name.starts_with('.') {
                        continue;
                    }
                    match kind {
                        EntryKind::Dir => out.push((format!("{base}/{name}/main.rs"), scope)),
                        _ if name.ends_with(".rs") => out.push((format!("{base}/{name}"), scope)),
                        _ => {}
                    }
                }
            }
            Err(r) => unlisted(base, r.to_string()),
        }
    }
    out.retain(|(p, _)| disk.has(p));
    out.sort();
    // One entry per file: a file that is both a bin and a test root is held to normal.
    out.dedup_by(|later, kept| {
        later.0 == kept.0 && {
            if later.1 == DepKind::Normal {
                kept.1 = DepKind::Normal;
            }
            true
        }
    });
    out
}

fn collect_deps(
    file: &SourceFile,
    table: Option<&Item>,
    kind: DepKind,
    target: Option<&str>,
    dir: &str,
    workspace_deps: &BTreeMap<String, WorkspaceDep>,
    out: &mut Vec<Dep>,
) {
    let Some(table) = table.and_then(Item::as_table_like) else {
        return;
    };
    for (key, item) in table.iter() {
        let loc = table
            .get_key_value(key)
            .map_or(Location::START, |(k, i)| key_loc(file, k, i));
        let spec: Option<&dyn TableLike> = item.as_table_like();
        // `workspace = true` inherits the `[workspace.dependencies]` entry of the same key
        // (looked up by `package =` too, for manifests that spell it out).
        let own_package = spec.and_then(|s| s.get("package")).and_then(Item::as_str);
        let inherited = spec
            .filter(|s| s.get("workspace").and_then(Item::as_bool) == Some(true))
            .and_then(|_| {
                workspace_deps
                    .get(key)
                    .or_else(|| own_package.and_then(|p| workspace_deps.get(p)))
            });
        let package = own_package
            .map(str::to_owned)
            .or_else(|| inherited.and_then(|w| w.package.clone()))
            .unwrap_or_else(|| key.to_owned());
        let path = match (
            spec.and_then(|s| s.get("path")).and_then(Item::as_str),
            inherited,
        ) {
            (Some(p), _) => join_rel(dir, p),
            (None, Some(w)) => w.path.clone(),
            (None, None) => None,
        };
        let mut features = string_list(spec.and_then(|s| s.get("features")));
        if let Some(w) = inherited {
            features.extend(w.features.iter().cloned());
        }
        features.sort();
        features.dedup();
        let own_default = spec.and_then(default_features_said);
        // Cargo: a member turns defaults off only where the workspace entry does too.
        let default_features = match inherited {
            Some(w) => w.default_features || own_default == Some(true),
            None => own_default != Some(false),
        };
        out.push(Dep {
            key: key.to_owned(),
            package,
            kind,
            target: target.map(str::to_owned),
            path,
            features,
            default_features,
            loc,
        });
    }
}

fn key_loc(file: &SourceFile, key: &toml_edit::Key, item: &Item) -> Location {
    match key.span().or_else(|| item.span()) {
        Some(r) => Location::in_file(file, r.start, r.end - r.start),
        None => Location::START,
    }
}

fn value_loc(file: &SourceFile, key: &toml_edit::Key, item: &Item) -> Location {
    match item.span().or_else(|| key.span()) {
        Some(r) => Location::in_file(file, r.start, r.end - r.start),
        None => Location::START,
    }
}
