//! The Cargo workspace of the checked repository: members, packages, library names,
//! dependencies of every kind, and each package's `[package.metadata.scaffold] role`.

use std::collections::BTreeMap;

use rayon::prelude::*;
use toml_edit::Item;

use super::gaps::{Gap, Why};
use super::manifest::PathGlob;
use crate::check::finding::Location;
use crate::source::SourceFile;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum DepKind {
    Normal,
    Dev,
    Build,
}

impl DepKind {
    pub fn table(self) -> &'static str {
        match self {
            DepKind::Normal => "dependencies",
            DepKind::Dev => "dev-dependencies",
            DepKind::Build => "build-dependencies",
        }
    }
}

/// One dependency entry of a crate's Cargo.toml.
#[derive(Debug, Clone)]
pub struct Dep {
    /// The key in Cargo.toml; also the name code uses when `package =` renames it.
    pub key: String,
    /// The package it names (`package =` or the key).
    pub package: String,
    pub kind: DepKind,
    /// `cfg(...)` or a target triple, for `[target.'…'.dependencies]`.
    pub target: Option<String>,
    /// Repo-relative directory of a path dependency (directly or via `workspace = true`).
    pub path: Option<String>,
    /// The features it turns on (its own and, with `workspace = true`, the workspace
    /// entry's: cargo adds them up).
    pub features: Vec<String>,
    /// Whether its default features are on, as cargo decides it (with `workspace = true`,
    /// a member's `default-features = false` counts only when the workspace entry says it
    /// too).
    pub default_features: bool,
    /// Where the key is written in the crate's Cargo.toml.
    pub loc: Location,
}

/// A `[workspace.dependencies]` entry, as a member's `workspace = true` inherits it.
#[derive(Debug, Clone)]
pub(crate) struct WorkspaceDep {
    pub package: Option<String>,
    /// Repo-relative directory, for a path dependency.
    pub path: Option<String>,
    pub features: Vec<String>,
    pub default_features: bool,
}

#[derive(Debug, Clone)]
pub struct Crate {
    pub package: String,
    /// The name code uses for this crate (`[lib] name`, else the package with `_`).
    pub lib_name: String,
    /// Repo-relative directory ("" for the root package).
    pub dir: String,
    pub manifest: SourceFile,
    pub deps: Vec<Dep>,
    /// `[package.metadata.scaffold] role` and where it is written.
    pub role: Option<(String, Location)>,
    /// `[package.metadata.scaffold] remote = true` (a worker that reaches the queue through
    /// the coordinator and holds no database) and where it is written.
    pub remote: Option<Location>,
    /// Where `[package]` (or `name`) is written.
    pub package_loc: Location,
    /// The root file of every target cargo builds from it (lib, bins, tests, examples,
    /// benches, build script) that exists, with the scope its code has.
    pub targets: Vec<(String, DepKind)>,
}

impl Crate {
    /// Whether a repo-relative path lies inside this crate's directory.
    pub fn is_file_of(&self, path: &str) -> bool {
        self.dir.is_empty() || path.starts_with(&format!("{}/", self.dir))
    }
}

#[derive(Debug, Clone, Default)]
pub struct Workspace {
    pub crates: Vec<Crate>,
    /// Every directory holding a Cargo.toml, member or not, sorted: a file belongs to
    /// the package of the nearest one.
    pub manifest_dirs: Vec<String>,
}

impl Workspace {
    /// The member crate `path` belongs to: the package of the nearest directory above it
    /// that holds a Cargo.toml, if that package is a member (a nested, excluded or
    /// fixture package is not, and its files belong to no member).
    pub fn crate_of(&self, path: &str) -> Option<usize> {
        let mut dir = path;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if self
                .manifest_dirs
                .binary_search_by(|d| d.as_str().cmp(parent))
                .is_ok()
            {
                return self.by_dir(parent);
            }
            dir = parent;
        }
        self.by_dir("")
    }

    pub fn by_dir(&self, dir: &str) -> Option<usize> {
        self.crates
            .binary_search_by(|c| c.dir.as_str().cmp(dir))
            .ok()
    }

    /// Loads the workspace rooted at the repository's `Cargo.toml`, as cargo finds it:
    /// members, targets and path dependencies on disk, the walk's list (`disk.files`) the
    /// fast answer for what it holds. What cannot be read comes back as [`Gap`] (rule
    /// source-unparsed reports it); a root manifest that cannot be read at all is an
    /// error. Members are read and parsed in parallel.
    pub(crate) fn load(disk: &Disk<'_>) -> Result<(Workspace, Vec<Gap>), RootUnread> {
        let files = disk.files;
        let mut findings = Vec::new();
        let mut ws = Workspace::default();
        let root_text = match disk.read("Cargo.toml") {
            Ok(Some(text)) => text,
            Ok(None) => return Err(RootUnread::Missing),
            Err(r) => return Err(RootUnread::Refused(r)),
        };
        let root_file = SourceFile::new("Cargo.toml", root_text);
        let root_doc = match toml_edit::Document::parse(root_file.text.to_string()) {
            Ok(d) => d,
            Err(e) => {
                findings.push(toml_error(&root_file, &e));
                return Ok((ws, findings));
            }
        };
        let root = root_doc.as_table();
        let mut workspace_deps: BTreeMap<String, WorkspaceDep> = BTreeMap::new();
        ws.manifest_dirs = files
            .iter()
            .filter_map(|f| f.strip_suffix("/Cargo.toml"))
            .map(str::to_owned)
            .collect();
        ws.manifest_dirs.sort();
        let workspace_table = root.get("workspace").and_then(Item::as_table_like);
        let exclude = workspace_table.map_or_else(Vec::new, |w| string_list(w.get("exclude")));
        let excluded = Excluded::new(&exclude);
        let mut member_dirs: Vec<String> = Vec::new();
        if let Some(w) = workspace_table {
            member_dirs =
                members::expand(disk, &root_file, w.get("members"), &excluded, &mut findings);
            if let Some(deps) = w.get("dependencies").and_then(Item::as_table_like) {
                for (key, item) in deps.iter() {
                    let spec = item.as_table_like();
                    let package = spec
                        .and_then(|t| t.get("package"))
                        .and_then(Item::as_str)
                        .map(str::to_owned);
                    let path = spec
                        .and_then(|t| t.get("path"))
                        .and_then(Item::as_str)
                        .and_then(|p| join_rel("", p));
                    workspace_deps.insert(
                        key.to_owned(),
                        WorkspaceDep {
                            package,
                            path,
                            features: string_list(spec.and_then(|t| t.get("features"))),
                            default_features: spec.and_then(default_features_said) != Some(false),
                        },
                    );
                }
            }
        }
        let root_is_package = root.contains_key("package");
        if root_is_package {
            member_dirs.push(String::new());
        }
        member_dirs.sort();
        member_dirs.dedup();
        let load_dir = |dir: &String| {
            let file = if dir.is_empty() {
                root_file.clone()
            } else {
                let manifest_path = format!("{dir}/Cargo.toml");
                // Found, so present: unreadable means a symlink, a FIFO or a folder in its
                // place, or no permission. The crate would drop out of every layer
                // silently: a finding instead.
                let Ok(Some(text)) = disk.read(&manifest_path) else {
                    return Err(Box::new(Gap {
                        path: manifest_path,
                        at: Location::START,
                        why: Why::ManifestUnreadable { dir: dir.clone() },
                    }));
                };
                SourceFile::new(manifest_path, text)
            };
            package::load_crate(dir, file, &workspace_deps, disk)
        };
        // Cargo makes every path dependency of a member that lies inside the root (and is
        // not excluded) a member too, listed or not, transitively: read in waves until no
        // new directory turns up.
        let is_workspace = workspace_table.is_some();
        let mut seen: std::collections::BTreeSet<String> = member_dirs.iter().cloned().collect();
        let mut wave = member_dirs;
        while !wave.is_empty() {
            let loaded: Vec<_> = wave.par_iter().map(load_dir).collect();
            let mut next = std::collections::BTreeSet::new();
            for result in loaded {
                match result {
                    Ok((Some(c), gaps)) => {
                        findings.extend(gaps);
                        if is_workspace {
                            for p in c.deps.iter().filter_map(|d| d.path.as_deref()) {
                                let manifest = if p.is_empty() {
                                    "Cargo.toml".to_owned()
                                } else {
                                    format!("{p}/Cargo.toml")
                                };
                                if !seen.contains(p) && !excluded.is(p) && disk.has(&manifest) {
                                    seen.insert(p.to_owned());
                                    next.insert(p.to_owned());
                                }
                            }
                        }
                        ws.crates.push(c);
                    }
                    Ok((None, gaps)) => findings.extend(gaps),
                    Err(f) => findings.push(*f),
                }
            }
            wave = next.into_iter().collect();
        }
        ws.crates.sort_by(|a, b| a.dir.cmp(&b.dir));
        debug_assert!(
            ws.crates.windows(2).all(|w| w[0].dir < w[1].dir),
            "crates sorted by dir"
        );
        Ok((ws, findings))
    }
}

/// Why the root `Cargo.toml` was not read.
#[derive(Debug)]
pub enum RootUnread {
    Missing,
    Refused(crate::repo::inside::Refusal),
}

/// `[workspace] exclude`: a folder matched by one of its globs, or below one of them.
pub(crate) struct Excluded {
    globs: Vec<PathGlob>,
    dirs: Vec<String>,
}

impl Excluded {
    fn new(exclude: &[String]) -> Excluded {
        let globs: Vec<PathGlob> = exclude
            .iter()
            .filter_map(|m| PathGlob::new(normalize_rel(m).as_str()).ok())
            .collect();
        let dirs = globs.iter().map(|g| format!("{}/", g.pattern)).collect();
        Excluded { globs, dirs }
    }

    pub(crate) fn is(&self, dir: &str) -> bool {
        self.globs.iter().any(|g| g.is_match(dir))
            || self.dirs.iter().any(|d| dir.starts_with(d.as_str()))
    }
}

fn toml_error(file: &SourceFile, e: &toml_edit::TomlError) -> Gap {
    let at = e.span().map_or(Location::START, |r| {
        Location::in_file(file, r.start, r.end - r.start)
    });
    let msg = e
        .message()
        .lines()
        .next()
        .unwrap_or("invalid TOML")
        .to_owned();
    Gap {
        path: file.path.clone(),
        at,
        why: Why::Toml { message: msg },
    }
}

/// What a dependency's `default-features` (or cargo's older `default_features`) says, if
/// anything.
fn default_features_said(spec: &dyn toml_edit::TableLike) -> Option<bool> {
    spec.get("default-features")
        .or_else(|| spec.get("default_features"))
        .and_then(Item::as_bool)
}

fn string_list(item: Option<&Item>) -> Vec<String> {
    item.and_then(Item::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn normalize_rel(p: &str) -> String {
    p.trim_start_matches("./").trim_end_matches('/').to_owned()
}

/// Joins a relative path onto a repo-relative directory, resolving `.` and `..`.
/// `None` when the result leaves the repository.
pub fn join_rel(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in rel.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

pub(crate) mod disk;
mod members;
mod package;
#[cfg(test)]
mod tests;

pub(crate) use disk::Disk;
