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
//!
//! The tree is cargo's, whatever ignore files say: a file a `mod` reaches that the walk
//! did not list (a `.gitignore`, an `.ignore` or a `CACHEDIR.TAG` hid it) is looked up on
//! disk and read, and one that is there but cannot be read as a regular file through real
//! folders inside the root (a symlink on the way, a FIFO, a path out of the repository) is
//! [`Unreadable`]: a finding at the `mod` line, never a skip.

use std::collections::{HashMap, HashSet, VecDeque};

use super::rust_refs::RustFacts;
use crate::repo::inside::{Probe, Refusal};
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

/// The outcome of a walk: how each node was reached (`None`: by no tree), the files the
/// trees reach that are not among the nodes yet (a `#[path]` outside the crate's folder,
/// a file an ignore file hid from the walk), with their crate, to be parsed and walked
/// again, and what they reach that cannot be read.
#[derive(Debug)]
pub struct Walk {
    pub reached: Vec<Option<Reached>>,
    pub missing: Vec<(String, usize)>,
    pub unreadable: Vec<Unreadable>,
}

/// A file a crate's module tree reaches that cargo would build and the check cannot read
/// as a regular file through real folders inside the root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unreadable {
    /// The node whose `mod` or `include!` reaches it; `None` for a target's root.
    pub from: Option<usize>,
    pub krate: usize,
    pub via: Via,
    /// The file cargo would read, repo-relative (as written, for a path out of the root).
    pub path: String,
    pub why: Why,
}

/// What reaches an [`Unreadable`] file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Via {
    /// `mod <name>;` (with or without `#[path]`).
    Mod(String),
    /// `include!("<path>")`.
    Include(String),
    /// The crate's target root.
    Target,
}

/// Why an [`Unreadable`] file is not read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// It, or the folder named, is a symlink.
    Symlink(String),
    /// A FIFO, a device or a folder in the file's place.
    NotRegular,
    /// `..` past the root, or an absolute path.
    OutsideRoot,
    /// It cannot be looked at (no permission).
    Io(String),
}

impl Why {
    fn of(r: Refusal) -> Why {
        match r {
            Refusal::Symlink(at) => Why::Symlink(at),
            Refusal::Climbs(_) => Why::OutsideRoot,
            Refusal::NotRegular(_)
            | Refusal::NotDirectory(_)
            | Refusal::TooLarge { .. }
            | Refusal::HardLinked(_) => Why::NotRegular,
            Refusal::Io { source, .. } => Why::Io(source.kind().to_string()),
        }
    }
}

/// How [`reach`] looks at a file the walk did not list (a file's repo-relative path).
pub type Prober<'a> = &'a (dyn Fn(&str) -> Probe + Sync);

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
/// are sorted by (path, crate), so the files below a folder are one range; `reported` are
/// the `.rs` files the walk found and could not check (sorted: a symlink, a name that is
/// not UTF-8), already findings of their own; `probe` looks at a file the walk did not
/// list. The crates' trees are independent and walked in parallel.
pub fn reach(
    ws: &Workspace,
    files: &[String],
    reported: &[String],
    nodes: &[Node<'_>],
    probe: Prober<'_>,
) -> Walk {
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
        reported,
        nodes,
        first,
        probe,
    };
    let walks: Vec<CrateWalk> = (0..ws.crates.len())
        .into_par_iter()
        .map(|k| walk_crate(ws, &index, k))
        .collect();
    let mut reached: Vec<Option<Reached>> = vec![None; nodes.len()];
    let mut missing: Vec<(String, usize)> = Vec::new();
    let mut unreadable = Vec::new();
    for w in walks {
        for (i, r) in w.reached {
            reached[i] = Some(r);
        }
        missing.extend(w.missing);
        unreadable.extend(w.unreadable);
    }
    unreadable.sort();
    unreadable.dedup();
    Walk {
        reached,
        missing,
        unreadable,
    }
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
    reported: &'n [String],
    nodes: &'n [Node<'a>],
    first: HashMap<&'a str, usize, foldhash::fast::RandomState>,
    probe: Prober<'n>,
}

/// Where a `mod`, an `include!` or a target root leads.
enum Resolved {
    /// A parsed file of the crate.
    Node(usize),
    /// A regular file not parsed yet (outside the crate's folder, or hidden from the
    /// walk): parsed, then the trees are walked again.
    Parse(String),
    /// A file the walk already reported (a symlinked `.rs` file).
    Reported,
    Unreadable(String, Why),
    /// No such file: cargo has none to build either (a `cfg`'d-out module).
    Missing,
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

    fn listed(list: &[String], path: &str) -> bool {
        list.binary_search_by(|f| f.as_str().cmp(path)).is_ok()
    }

    /// The first of `candidates` (in rustc's order) that is a file: the walk's list first,
    /// then, only when none is listed, the disk (a file an ignore file hid, or one that
    /// cannot be read).
    fn resolve(&self, candidates: &[&str], k: usize) -> Resolved {
        for c in candidates {
            if let Some(i) = self.find(c, k) {
                return Resolved::Node(i);
            }
            if Self::listed(self.files, c) {
                return Resolved::Parse((*c).to_owned());
            }
        }
        for c in candidates {
            if Self::listed(self.reported, c) {
                return Resolved::Reported;
            }
            match (self.probe)(c) {
                Probe::Missing => {}
                Probe::File => return Resolved::Parse((*c).to_owned()),
                Probe::Refused(r) => return Resolved::Unreadable((*c).to_owned(), Why::of(r)),
            }
        }
        Resolved::Missing
    }
}

/// One crate's walk: how each of its nodes was reached, the files outside the nodes it
/// reaches, and those it cannot read.
#[derive(Default)]
struct CrateWalk {
    reached: HashMap<usize, Reached, foldhash::fast::RandomState>,
    missing: Vec<(String, usize)>,
    to_parse: HashSet<String, foldhash::fast::RandomState>,
    unreadable: Vec<Unreadable>,
}

/// (node, scope, parent, folder its `mod` declarations resolve in)
type Queue = VecDeque<(usize, DepKind, Option<usize>, String)>;

/// What leads to a file, borrowed: made a [`Via`] only for the rare file that cannot be
/// read (a warm check visits every `mod` of every crate).
#[derive(Clone, Copy)]
enum ViaRef<'a> {
    Mod(&'a str),
    Include(&'a str),
    Target,
}

impl ViaRef<'_> {
    fn owned(self) -> Via {
        match self {
            ViaRef::Mod(name) => Via::Mod(name.to_owned()),
            ViaRef::Include(path) => Via::Include(path.to_owned()),
            ViaRef::Target => Via::Target,
        }
    }
}

/// One file to visit: what leads to it, the files it may be (in rustc's order), and
/// how it is to be walked once found.
struct Visit<'c> {
    from: Option<usize>,
    via: ViaRef<'c>,
    candidates: &'c [&'c str],
    scope: DepKind,
    parent: Option<usize>,
    base: String,
}

impl CrateWalk {
    fn visit(&mut self, index: &Index<'_, '_>, k: usize, queue: &mut Queue, v: Visit<'_>) {
        match index.resolve(v.candidates, k) {
            Resolved::Node(i) => queue.push_back((i, v.scope, v.parent, v.base)),
            Resolved::Parse(path) => {
                if self.to_parse.insert(path.clone()) {
                    self.missing.push((path, k));
                }
            }
            Resolved::Reported | Resolved::Missing => {}
            Resolved::Unreadable(path, why) => self.unreadable.push(Unreadable {
                from: v.from,
                krate: k,
                via: v.via.owned(),
                path,
                why,
            }),
        }
    }

    /// A path written in a `#[path]` or an `include!` that leaves the repository.
    fn outside(&mut self, k: usize, from: usize, via: ViaRef<'_>, written: &str) {
        self.unreadable.push(Unreadable {
            from: Some(from),
            krate: k,
            via: via.owned(),
            path: written.to_owned(),
            why: Why::OutsideRoot,
        });
    }
}

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
    let (mut file, mut folder) = (String::new(), String::new());
    for (root, scope) in &krate.targets {
        out.visit(
            index,
            k,
            &mut queue,
            Visit {
                from: None,
                via: ViaRef::Target,
                candidates: &[root.as_str()],
                scope: *scope,
                parent: None,
                base: dir_of(root).to_owned(),
            },
        );
    }
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
            let via = ViaRef::Mod(name);
            match &m.path {
                Some(p) => {
                    // Relative to the declaring file's folder at the top of the file, to
                    // the inline modules' folder inside them.
                    let from = if m.inline.is_empty() {
                        dir_of(path)
                    } else {
                        &dir
                    };
                    let Some(file) = join_rel(from, p) else {
                        out.outside(k, i, via, p);
                        continue;
                    };
                    let base = dir_of(&file).to_owned();
                    out.visit(
                        index,
                        k,
                        &mut queue,
                        Visit {
                            from: Some(i),
                            via,
                            candidates: &[file.as_str()],
                            scope: child_scope,
                            parent: Some(i),
                            base,
                        },
                    );
                }
                None => {
                    // `name.rs`, else `name/mod.rs` (rustc refuses both at once); either
                    // way its own `mod`s are looked for in `name/`. The two names are
                    // written into buffers kept across the walk (one per `mod` of every
                    // file: no allocation each).
                    let base = join(&dir, name);
                    file.clear();
                    file.push_str(&base);
                    file.push_str(".rs");
                    folder.clear();
                    folder.push_str(&base);
                    folder.push_str("/mod.rs");
                    out.visit(
                        index,
                        k,
                        &mut queue,
                        Visit {
                            from: Some(i),
                            via,
                            candidates: &[file.as_str(), folder.as_str()],
                            scope: child_scope,
                            parent: Some(i),
                            base,
                        },
                    );
                }
            }
        }
        // An included file is part of the module that includes it.
        for inc in &facts.includes {
            let via = ViaRef::Include(inc);
            let Some(file) = join_rel(dir_of(path), inc) else {
                out.outside(k, i, via, inc);
                continue;
            };
            out.visit(
                index,
                k,
                &mut queue,
                Visit {
                    from: Some(i),
                    via,
                    candidates: &[file.as_str()],
                    scope,
                    parent,
                    base: base.clone(),
                },
            );
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
