//! Which `.rs` files are Rust of which crate, as rustc sees it: the module tree grown from
//! each target's root (lib, bins, tests, examples, benches, build script) through `mod x;`
//! declarations, `#[path]` included, plus files pulled in by `include!("…")` with a plain
//! literal. A file no crate's tree reaches (`test_data/*.rs`, fixtures) is no crate's code
//! and is not checked.
//!
//! Each file reached gets its scope from its target (tests, examples and benches are dev
//! scope, the build script build scope), and a module declared under `#[cfg(test)]` makes
//! its file and everything below it dev scope. A file that cannot be read or parsed hides
//! its `mod` declarations: every `.rs` file below its module folder is reached in its
//! place, so nothing under it goes unchecked.

use std::collections::{HashMap, VecDeque};

use super::rust_refs::RustFacts;
use crate::repo::workspace::{DepKind, Workspace, join_rel};

/// How one file was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reached {
    pub scope: DepKind,
    /// The file whose `mod` declared it (what `use super::*` reads), for a module file.
    pub parent: Option<usize>,
}

/// What [`reach`] needs of a parsed file.
#[derive(Debug)]
pub struct Node<'a> {
    pub path: &'a str,
    pub krate: usize,
    pub facts: Option<&'a RustFacts>,
}

/// The outcome of a walk: how each node was reached (`None`: by no tree), and the files
/// the trees reach that are not among the nodes yet (a `#[path]` outside the crate's
/// folder), with their crate, to be parsed and walked again.
#[derive(Debug)]
pub struct Walk {
    pub reached: Vec<Option<Reached>>,
    pub missing: Vec<(String, usize)>,
}

/// Normal code is held to the normal dependencies even where a test also reaches it.
fn stronger(a: DepKind, b: DepKind) -> DepKind {
    use DepKind::{Build, Dev, Normal};
    match (a, b) {
        (Normal, _) | (_, Normal) => Normal,
        (Build, _) | (_, Build) => Build,
        (Dev, Dev) => Dev,
    }
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        return name.to_owned();
    }
    let mut out = String::with_capacity(dir.len() + 1 + name.len());
    out.push_str(dir);
    out.push('/');
    out.push_str(name);
    out
}

/// The folder a file's `mod x;` declarations are looked for in when it is not a module
/// root: `a/b.rs` declares `a/b/x.rs`; `mod.rs`, `lib.rs`, `main.rs` their own folder.
fn default_base(path: &str) -> String {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    match file {
        "mod.rs" | "lib.rs" | "main.rs" => dir.to_owned(),
        _ => join(dir, file.strip_suffix(".rs").unwrap_or(file)),
    }
}

/// Walks every crate's module tree. `files` is every repo-relative file, sorted; `nodes`
/// are sorted by (path, crate), so the files below a folder are one range. The crates'
/// trees are independent and walked in parallel.
pub fn reach(ws: &Workspace, files: &[String], nodes: &[Node<'_>]) -> Walk {
    use rayon::prelude::*;
    debug_assert!(
        nodes
            .windows(2)
            .all(|w| (w[0].path, w[0].krate) < (w[1].path, w[1].krate)),
        "nodes sorted"
    );
    // The first node of each path (a path shared by two crates has adjacent nodes): one
    // hash per lookup instead of a binary search's string comparisons.
    let mut first: HashMap<&str, usize, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
    for (i, n) in nodes.iter().enumerate() {
        first.entry(n.path).or_insert(i);
    }
    let index = Index {
        files,
        nodes,
        first,
    };
    let walks: Vec<CrateWalk> = (0..ws.crates.len())
        .into_par_iter()
        .map(|k| walk_crate(ws, &index, k))
        .collect();
    let mut reached: Vec<Option<Reached>> = vec![None; nodes.len()];
    let mut missing: Vec<(String, usize)> = Vec::new();
    for w in walks {
        for (i, r) in w.reached {
            reached[i] = Some(r);
        }
        missing.extend(w.missing);
    }
    Walk { reached, missing }
}

/// The nodes below folder `dir` (every node for the root): one range, the nodes being
/// sorted by path.
fn below(nodes: &[Node<'_>], dir: &str) -> std::ops::Range<usize> {
    if dir.is_empty() {
        return 0..nodes.len();
    }
    let prefix = format!("{dir}/");
    let start = nodes.partition_point(|n| n.path < prefix.as_str());
    let len = nodes[start..].partition_point(|n| n.path.starts_with(&prefix));
    start..start + len
}

/// What every crate's walk looks files up in.
struct Index<'n, 'a> {
    files: &'n [String],
    nodes: &'n [Node<'a>],
    first: HashMap<&'a str, usize, foldhash::fast::RandomState>,
}

impl Index<'_, '_> {
    /// The node of `path` in crate `k`.
    fn find(&self, path: &str, k: usize) -> Option<usize> {
        let start = *self.first.get(path)?;
        self.nodes[start..]
            .iter()
            .take_while(|n| n.path == path)
            .position(|n| n.krate == k)
            .map(|at| start + at)
    }

    fn exists(&self, path: &str) -> bool {
        self.files
            .binary_search_by(|f| f.as_str().cmp(path))
            .is_ok()
    }
}

/// One crate's walk: how each of its nodes was reached, and the files outside the nodes
/// it reaches.
#[derive(Default)]
struct CrateWalk {
    reached: HashMap<usize, Reached, foldhash::fast::RandomState>,
    missing: Vec<(String, usize)>,
}

/// (node, scope, parent, folder its `mod` declarations resolve in)
type Queue = VecDeque<(usize, DepKind, Option<usize>, String)>;

fn walk_crate(ws: &Workspace, index: &Index<'_, '_>, k: usize) -> CrateWalk {
    let nodes = index.nodes;
    let mut out = CrateWalk::default();
    let Some(krate) = ws.crates.get(k) else {
        return out;
    };
    // No target cargo would build from: every file of the crate, as before the tree,
    // rather than none.
    if krate.targets.is_empty() {
        // Its files are the ones below its folder (a tree walk is what reaches others).
        for i in below(nodes, &krate.dir) {
            let n = &nodes[i];
            if n.krate == k {
                let scope = fallback_scope(&krate.dir, n.path);
                out.reached.insert(
                    i,
                    Reached {
                        scope,
                        parent: None,
                    },
                );
            }
        }
        return out;
    }
    let mut queue: Queue = VecDeque::new();
    // A file to visit: a node, or one to parse first (outside the crate's folder). The
    // folder is handed back when no such file exists, for the next candidate.
    let visit = |path: &str,
                 scope: DepKind,
                 parent: Option<usize>,
                 base: String,
                 queue: &mut Queue,
                 missing: &mut Vec<(String, usize)>|
     -> Option<String> {
        match index.find(path, k) {
            Some(i) => {
                queue.push_back((i, scope, parent, base));
                None
            }
            None if index.exists(path) => {
                if !missing.iter().any(|(p, _)| p == path) {
                    missing.push((path.to_owned(), k));
                }
                None
            }
            None => Some(base),
        }
    };
    for (root, scope) in &krate.targets {
        let base = dir_of(root).to_owned();
        visit(root, *scope, None, base, &mut queue, &mut out.missing);
    }
    let mut candidate = String::new();
    while let Some((i, scope, parent, base)) = queue.pop_front() {
        match out.reached.get_mut(&i) {
            Some(r) => {
                let merged = stronger(r.scope, scope);
                if merged == r.scope {
                    continue;
                }
                // Reached again with a stronger scope: its subtree is walked again.
                r.scope = merged;
            }
            None => {
                out.reached.insert(i, Reached { scope, parent });
            }
        }
        let scope = out.reached.get(&i).map_or(scope, |r| r.scope);
        let path = nodes[i].path;
        let Some(facts) = nodes[i].facts else {
            // Unread: what it declares is unknown, so everything below its folder.
            for j in below(nodes, &base) {
                let n = &nodes[j];
                if j != i && n.krate == k && !out.reached.contains_key(&j) {
                    queue.push_back((j, scope, Some(i), default_base(n.path)));
                }
            }
            continue;
        };
        for m in &facts.mods {
            let name = m.name.strip_prefix("r#").unwrap_or(&m.name);
            let mut dir = std::borrow::Cow::Borrowed(base.as_str());
            for seg in &m.inline {
                dir = std::borrow::Cow::Owned(join_rel(&dir, seg).unwrap_or_default());
            }
            let child_scope = if m.test { DepKind::Dev } else { scope };
            match &m.path {
                Some(p) => {
                    // Relative to the declaring file's folder at the top of the file, to
                    // the inline modules' folder inside them.
                    let from = if m.inline.is_empty() {
                        dir_of(path)
                    } else {
                        &dir
                    };
                    if let Some(file) = join_rel(from, p) {
                        let b = dir_of(&file).to_owned();
                        visit(&file, child_scope, Some(i), b, &mut queue, &mut out.missing);
                    }
                }
                None => {
                    // `name.rs`, else `name/mod.rs` (rustc refuses both at once); the
                    // folder comes back when a candidate is no file.
                    let mut child_base = Some(join(&dir, name));
                    for suffix in [".rs", "/mod.rs"] {
                        let Some(b) = child_base.take() else { break };
                        candidate.clear();
                        candidate.push_str(&b);
                        candidate.push_str(suffix);
                        child_base = visit(
                            &candidate,
                            child_scope,
                            Some(i),
                            b,
                            &mut queue,
                            &mut out.missing,
                        );
                    }
                }
            }
        }
        // An included file is part of the module that includes it.
        for inc in &facts.includes {
            if let Some(file) = join_rel(dir_of(path), inc) {
                visit(
                    &file,
                    scope,
                    parent,
                    base.clone(),
                    &mut queue,
                    &mut out.missing,
                );
            }
        }
    }
    out
}

/// For a partial run: each of `only`'s files with its crate, and the module files that
/// may declare it, up to a target root (`a/b/c.rs` and `a/b/c/mod.rs` are declared by
/// `a/b.rs`, `a/b/mod.rs` or a root in `a/b/`). `jobs` are every `.rs` file with its crate.
pub fn chains(
    ws: &Workspace,
    jobs: &[(String, usize)],
    only: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeSet<(String, usize)> {
    let has = |p: &str, k: usize| {
        jobs.binary_search_by(|(jp, jk)| (jp.as_str(), *jk).cmp(&(p, k)))
            .is_ok()
    };
    let mut keep = std::collections::BTreeSet::new();
    let mut todo: Vec<(String, usize)> = jobs
        .iter()
        .filter(|(p, _)| only.contains(p))
        .cloned()
        .collect();
    let mut steps = 0;
    while let Some((path, k)) = todo.pop() {
        steps += 1;
        if !keep.insert((path.clone(), k)) || steps > 4096 {
            continue;
        }
        let Some(c) = ws.crates.get(k) else { continue };
        if c.targets.iter().any(|(t, _)| *t == path) {
            continue;
        }
        let dir = dir_of(&path);
        let base = if path.ends_with("/mod.rs") {
            dir_of(dir)
        } else {
            dir
        };
        for cand in [format!("{base}.rs"), format!("{base}/mod.rs")] {
            if has(&cand, k) {
                todo.push((cand, k));
            }
        }
        for (t, _) in &c.targets {
            if dir_of(t) == base && has(t, k) {
                todo.push((t.clone(), k));
            }
        }
    }
    keep
}

/// The scope by folder, for a crate with no target to walk from.
pub fn fallback_scope(dir: &str, path: &str) -> DepKind {
    let rel = if dir.is_empty() {
        path
    } else {
        path.strip_prefix(dir)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(path)
    };
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

/// The crate names a file's `use super::*` brings into scope from its parent module
/// files (and theirs, through their own `use super::*`), up to `limit` levels.
pub fn glob_binds<'a>(
    nodes: &[Node<'a>],
    reached: &[Option<Reached>],
    i: usize,
    limit: usize,
) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut at = i;
    for _ in 0..limit {
        let Some(facts) = nodes[at].facts else { break };
        if !facts.glob_super {
            break;
        }
        let Some(parent) = reached[at].as_ref().and_then(|r| r.parent) else {
            break;
        };
        let Some(pf) = nodes[parent].facts else { break };
        out.extend(pf.binds.iter().map(String::as_str));
        at = parent;
    }
    out
}
