//! Everything rules read, built once per run: crates mapped to layers, every Rust source
//! of every workspace crate parsed (in parallel), worker READMEs.

use std::collections::{BTreeSet, HashMap, HashSet};

use rayon::prelude::*;

use super::rust_refs::{self, ParseFailure, RustFacts};
use crate::changes::ChangeSet;
use crate::repo::Repo;
use crate::repo::codemap::{Agent, Layer};
use crate::repo::workspace::{Crate, DepKind, join_rel};
use crate::source::SourceFile;

/// A parsed Rust file of a workspace crate.
#[derive(Debug)]
pub struct Source {
    pub file: SourceFile,
    /// Index into `repo.workspace.crates`.
    pub krate: usize,
    /// Dev for tests/, benches/, examples/; Build for build.rs; else Normal.
    pub scope: DepKind,
    pub facts: Result<RustFacts, ParseFailure>,
}

#[derive(Debug)]
pub struct Context<'r> {
    pub repo: &'r Repo,
    /// Layer index (into `codemap.layers`) of each crate.
    pub crate_layer: Vec<Option<usize>>,
    pub sources: Vec<Source>,
    /// Per crate: the names its code may use for other workspace crates.
    pub crate_names: Vec<HashMap<String, usize>>,
    /// README.md of each crate, when it has one.
    pub readmes: Vec<Option<SourceFile>>,
    /// The change set of `--since` / `--staged`, if any.
    pub changes: Option<&'r ChangeSet>,
    /// `--as <agent>`: a name the codemap declares (validated before the run).
    pub agent_name: Option<&'r str>,
}

impl<'r> Context<'r> {
    pub fn build(
        repo: &'r Repo,
        changes: Option<&'r ChangeSet>,
        agent_name: Option<&'r str>,
    ) -> Context<'r> {
        let ws = &repo.workspace;
        let crate_layer: Vec<Option<usize>> = ws
            .crates
            .iter()
            .map(|c| {
                let manifest = &c.manifest.path;
                repo.codemap.layers.iter().position(|l| {
                    l.paths
                        .iter()
                        .any(|g| g.is_match(manifest) || (!c.dir.is_empty() && g.is_match(&c.dir)))
                })
            })
            .collect();
        let crate_names: Vec<HashMap<String, usize>> = ws
            .crates
            .iter()
            .enumerate()
            .map(|(me, c)| names_for(c, me, &ws.crates))
            .collect();
        let candidates: HashSet<String> =
            crate_names.iter().flat_map(|m| m.keys().cloned()).collect();

        // Files of each crate: the longest crate directory that contains them.
        let mut jobs: Vec<(String, usize)> = repo
            .files
            .iter()
            .filter(|f| f.ends_with(".rs"))
            .filter_map(|f| ws.crate_of(f).map(|k| (f.clone(), k)))
            .collect();
        let mut sources = parse_all(repo, &jobs, &candidates);
        // `#[path]` modules that live outside their crate's directory belong to it too.
        let have: BTreeSet<(String, usize)> = jobs.drain(..).collect();
        let extra: BTreeSet<(String, usize)> = sources
            .iter()
            .filter_map(|s| s.facts.as_ref().ok().map(|f| (s, f)))
            .flat_map(|(s, f)| {
                let dir = s
                    .file
                    .path
                    .rsplit_once('/')
                    .map_or("", |(d, _)| d)
                    .to_owned();
                f.path_mods
                    .iter()
                    .filter_map(move |m| join_rel(&dir, m).map(|p| (p, s.krate)))
            })
            .filter(|pair| !have.contains(pair) && repo.files.binary_search(&pair.0).is_ok())
            .collect();
        if !extra.is_empty() {
            let extra: Vec<_> = extra.into_iter().collect();
            sources.extend(parse_all(repo, &extra, &candidates));
        }
        sources.sort_by(|a, b| (&a.file.path, a.krate).cmp(&(&b.file.path, b.krate)));

        let readmes = ws
            .crates
            .iter()
            .map(|c| {
                let path = if c.dir.is_empty() {
                    "README.md".to_owned()
                } else {
                    format!("{}/README.md", c.dir)
                };
                repo.files
                    .binary_search(&path)
                    .ok()
                    .and_then(|_| repo.read(&path))
                    .map(|t| SourceFile::new(path, t))
            })
            .collect();
        Context {
            repo,
            crate_layer,
            sources,
            crate_names,
            readmes,
            changes,
            agent_name,
        }
    }

    /// The `--as` agent and its ownership globs.
    pub fn agent(&self) -> Option<(&str, &Agent)> {
        let name = self.agent_name?;
        self.repo.codemap.agents.get(name).map(|a| (name, a))
    }

    pub fn layer(&self, krate: usize) -> Option<&Layer> {
        self.crate_layer[krate].map(|i| &self.repo.codemap.layers[i])
    }

    /// Crates in a layer whose crates are workers.
    pub fn workers(&self) -> impl Iterator<Item = (usize, &Crate)> {
        self.repo
            .workspace
            .crates
            .iter()
            .enumerate()
            .filter(|(i, _)| self.layer(*i).is_some_and(|l| l.workers))
    }
}

fn names_for(c: &Crate, me: usize, all: &[Crate]) -> HashMap<String, usize> {
    let mut names: HashMap<String, usize> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != me)
        .map(|(i, o)| (o.lib_name.clone(), i))
        .collect();
    for d in &c.deps {
        let Some(target) = d
            .path
            .as_ref()
            .and_then(|p| all.iter().position(|o| &o.dir == p))
        else {
            continue;
        };
        if target == me {
            continue;
        }
        if d.key != d.package {
            names.insert(d.key.replace('-', "_"), target);
        }
    }
    // The crate's own name refers to itself (integration tests): never an edge.
    names.remove(&c.lib_name);
    names
}

fn file_scope(krate: &Crate, path: &str) -> DepKind {
    let prefix = format!("{}/", krate.dir);
    let rel = path.strip_prefix(prefix.as_str()).unwrap_or(path);
    if rel == "build.rs" {
        DepKind::Build
    } else if ["tests/", "benches/", "examples/"]
        .iter()
        .any(|p| rel.starts_with(p))
    {
        DepKind::Dev
    } else {
        DepKind::Normal
    }
}

fn parse_all(repo: &Repo, jobs: &[(String, usize)], candidates: &HashSet<String>) -> Vec<Source> {
    jobs.par_iter()
        .filter_map(|(path, krate)| {
            let text = repo.read(path)?;
            let facts = rust_refs::extract(&text, candidates);
            let scope = file_scope(&repo.workspace.crates[*krate], path);
            Some(Source {
                file: SourceFile::new(path.clone(), text),
                krate: *krate,
                scope,
                facts,
            })
        })
        .collect()
}
