//! Everything rules read, built once per run: crates mapped to layers, every Rust source
//! of every workspace crate parsed (in parallel), worker READMEs.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use super::cache::{self, Cache};
use super::crate_names::CrateNames;
use super::mentions::Mentions;
use super::rust_refs::{self, ParseFailure, RustFacts};
use super::suppress::{self, Suppression};
use crate::changes::ChangeSet;
use crate::repo::Repo;
use crate::repo::codemap::{Agent, Layer};
use crate::repo::files::FileStat;
use crate::repo::workspace::{Crate, DepKind};
use crate::source::SourceFile;

/// A parsed Rust file of a workspace crate. Its text is read on first use: a warm run
/// takes most files' facts from the cache and never opens them.
#[derive(Debug)]
pub struct Source {
    /// Repo-relative, `/`-separated.
    pub path: String,
    file: OnceLock<SourceFile>,
    root: Arc<Path>,
    /// Index into `repo.workspace.crates`.
    pub krate: usize,
    /// From its target in the crate's module tree ([`super::modtree`]): Dev for tests,
    /// benches, examples and `#[cfg(test)]` modules, Build for the build script.
    pub scope: DepKind,
    /// Crate names its `use super::*` brings in as local names: a path starting with
    /// one is no edge.
    pub hidden: Vec<String>,
    pub facts: Result<RustFacts, ParseFailure>,
    /// Its `scaffold:allow` comments.
    pub suppressions: Vec<Suppression>,
    /// The content hash the cache keys it by.
    pub hash: u128,
    /// Which work-queue words its text holds.
    pub mentions: Mentions,
    /// Its metadata, when it had settled before this run (what the cache records).
    stat: Option<FileStat>,
    /// Its cache entry, when it still holds exactly what this run would record (written
    /// back as it was encoded; a run where every file's is, writes nothing).
    kept: Option<cache::Taken>,
}

/// The largest README the checker reads (the largest in a crates.io cache is 77 KB); a
/// larger one is reported as unreadable by `worker-readme-missing`.
pub const README_LIMIT: u64 = 1 << 20;

impl Source {
    /// The file and its text, read on first use (empty if it has gone meanwhile).
    pub fn file(&self) -> &SourceFile {
        self.file.get_or_init(|| {
            let text = crate::repo::read_in(&self.root, &self.path).unwrap_or_default();
            SourceFile::new(self.path.clone(), text)
        })
    }

    /// A source of `root` whose facts are empty and whose recorded hash is `hash`, its text
    /// read on first use (for tests of what reads it lazily).
    #[cfg(test)]
    pub(crate) fn detached(root: &Path, path: &str, hash: u128) -> Source {
        Source {
            path: path.to_owned(),
            file: OnceLock::new(),
            root: Arc::from(root),
            krate: 0,
            scope: DepKind::Normal,
            hidden: Vec::new(),
            facts: Ok(RustFacts::default()),
            suppressions: Vec::new(),
            hash,
            mentions: Mentions::default(),
            stat: None,
            kept: None,
        }
    }

    /// Whether the file's text contains `token` (from the recorded words when it is one).
    pub fn mentions(&self, token: &str) -> bool {
        self.mentions
            .has(token)
            .unwrap_or_else(|| self.file().text.contains(token))
    }
}

#[derive(Debug)]
pub struct Context<'r> {
    pub repo: &'r Repo,
    /// Layer index (into `codemap.layers`) of each crate.
    pub crate_layer: Vec<Option<usize>>,
    pub sources: Vec<Source>,
    /// Files the crates' module trees reach that cannot be read (rule source-unparsed
    /// reports each at what reaches it).
    pub unreadable: Vec<Unreadable>,
    /// The names code uses for workspace crates.
    pub crate_names: CrateNames,
    /// README.md of each crate, when it has one.
    pub readmes: Vec<Option<SourceFile>>,
    /// The change set of `--since` / `--staged`, if any.
    pub changes: Option<&'r ChangeSet>,
    /// `--as <agent>`: a name the codemap declares (validated before the run).
    pub agent_name: Option<&'r str>,
    edges: std::sync::OnceLock<Vec<super::edges::Edge<'r>>>,
    /// The work-queue model, built on first use by the rules that read it.
    pub workqueue: super::workqueue::Slot,
    /// What workers' code runs (contexts built, processes started), read on first use.
    pub worker_code: std::sync::OnceLock<super::workqueue::exec::WorkerCode>,
    /// The work-queue extractors' per-file results, kept across runs.
    pub memo: super::workqueue::memo::Memo,
}

impl<'r> Context<'r> {
    pub fn build(
        repo: &'r Repo,
        changes: Option<&'r ChangeSet>,
        agent_name: Option<&'r str>,
        only: Option<&BTreeSet<String>>,
    ) -> (Context<'r>, PendingSave<'r>) {
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
        let crate_names = CrateNames::new(&ws.crates);
        let sorted = crate_names.all();
        let key = cache::key(&sorted);
        let candidates: rust_refs::Candidates = sorted.iter().copied().collect();
        let mut cache = Cache::load(&repo.root, key);

        // Files of each crate: the longest crate directory that contains them.
        // The files are sorted, so a directory's files come together: its crate is looked
        // up once, not once per file.
        let mut last: Option<(&str, Option<usize>)> = None;
        let jobs: Vec<(String, usize)> = repo
            .files
            .iter()
            .filter(|f| f.ends_with(".rs"))
            .filter_map(|f| {
                let dir = f.rsplit_once('/').map_or("", |(d, _)| d);
                let krate = match last {
                    Some((d, k)) if d == dir => k,
                    _ => {
                        let k = ws.crate_of(f);
                        last = Some((dir, k));
                        k
                    }
                };
                krate.map(|k| (f.clone(), k))
            })
            .collect();
        // A partial run (`--staged`) first parses only its files and the chains of module
        // files above them; when that reaches them all it is enough, else every file.
        let mut subset = only.map(|o| super::modtree::chains(ws, &jobs, o));
        let mut sources = match &subset {
            Some(keep) => {
                let first: Vec<(String, usize)> =
                    jobs.iter().filter(|j| keep.contains(j)).cloned().collect();
                parse_all(repo, &first, &candidates, &mut cache)
            }
            None => parse_all(repo, &jobs, &candidates, &mut cache),
        };
        // Only the files of the crates' module trees are their code. A `#[path]` or an
        // `include!` may reach a file outside the crate's folder: parsed, then walked again.
        let mut rounds = 0;
        sources.sort_by(|a, b| (&a.path, a.krate).cmp(&(&b.path, b.krate)));
        let reported = repo.unchecked_sources();
        let probe = |rel: &str| repo.probe(rel);
        let mut unreadable: Vec<Unreadable>;
        let walk = loop {
            let walk = {
                let nodes = nodes_of(&sources);
                super::modtree::reach(ws, &repo.files, &reported, &nodes, &probe)
            };
            unreadable = walk
                .unreadable
                .into_iter()
                .map(|u| Unreadable::of(u, &sources))
                .collect();
            let mut missing = walk.missing;
            if let Some(keep) = &subset {
                let unreached = sources
                    .iter()
                    .zip(&walk.reached)
                    .any(|(s, r)| r.is_none() && only.is_some_and(|o| o.contains(&s.path)));
                if unreached {
                    // Reached some other way (`#[path]`, `include!`), or by none: the
                    // whole tree decides.
                    let rest: Vec<(String, usize)> =
                        jobs.iter().filter(|j| !keep.contains(j)).cloned().collect();
                    sources.extend(parse_all(repo, &rest, &candidates, &mut cache));
                    sources.sort_by(|a, b| (&a.path, a.krate).cmp(&(&b.path, b.krate)));
                    subset = None;
                    continue;
                }
                // The files left out on purpose are not missing.
                let all: BTreeSet<&(String, usize)> = jobs.iter().collect();
                missing.retain(|m| !all.contains(m));
            }
            if missing.is_empty() {
                break walk.reached;
            }
            if rounds == MAX_TREE_ROUNDS {
                // A chain of files outside every crate's folder (or hidden from the walk)
                // deeper than this: what it reaches further is a finding, never a skip.
                unreadable.extend(missing.into_iter().map(|(path, krate)| Unreadable {
                    from: None,
                    krate,
                    via: super::modtree::Via::Target,
                    path,
                    why: UnreadableWhy::TooDeep,
                }));
                break walk.reached;
            }
            rounds += 1;
            let more = parse_all(repo, &missing, &candidates, &mut cache);
            sources.extend(more);
            sources.sort_by(|a, b| (&a.path, a.krate).cmp(&(&b.path, b.krate)));
        };
        let hidden: Vec<Vec<String>> = {
            let nodes = nodes_of(&sources);
            (0..sources.len())
                .map(|i| {
                    if !nodes[i].facts.is_some_and(|f| f.glob_super) {
                        return Vec::new();
                    }
                    super::modtree::glob_binds(&nodes, &walk, i, MAX_GLOB_LEVELS)
                        .into_iter()
                        .map(str::to_owned)
                        .collect()
                })
                .collect()
        };
        let mut unreached = Vec::new();
        let mut kept = Vec::with_capacity(sources.len());
        for ((mut s, reached), hidden) in sources.into_iter().zip(walk).zip(hidden) {
            match reached {
                Some(r) if only.is_none_or(|o| o.contains(&s.path)) => {
                    s.scope = r.scope;
                    s.hidden = hidden;
                    kept.push(s);
                }
                _ => unreached.push(s),
            }
        }
        // Still sorted by (path, crate).
        let sources = kept;
        let pending = PendingSave {
            root: repo.writes_back().then_some(repo.root.as_path()),
            key,
            cache,
            partial: only.is_some(),
            unreached,
        };

        // Read on rayon's threads (hundreds of small files in a large workspace).
        let readmes = ws
            .crates
            .par_iter()
            .map(|c| {
                let path = if c.dir.is_empty() {
                    "README.md".to_owned()
                } else {
                    format!("{}/README.md", c.dir)
                };
                repo.files
                    .binary_search(&path)
                    .ok()
                    .and_then(|_| repo.read_within(&path, None, README_LIMIT).ok())
                    .map(|t| SourceFile::new(path, t))
            })
            .collect();
        unreadable.sort();
        unreadable.dedup();
        let ctx = Context {
            repo,
            crate_layer,
            sources,
            unreadable,
            crate_names,
            readmes,
            changes,
            agent_name,
            edges: std::sync::OnceLock::new(),
            workqueue: Default::default(),
            worker_code: Default::default(),
            memo: super::workqueue::memo::Memo::new(&repo.root, repo.writes_back()),
        };
        (ctx, pending)
    }

    /// The `--as` agent and its ownership globs.
    pub fn agent(&self) -> Option<(&str, &Agent)> {
        let name = self.agent_name?;
        self.repo.codemap.agents.get(name).map(|a| (name, a))
    }

    pub fn layer(&self, krate: usize) -> Option<&'r Layer> {
        let repo: &'r Repo = self.repo;
        self.crate_layer[krate].map(|i| &repo.codemap.layers[i])
    }

    /// Every import edge between layers, computed once for the rules that read them.
    pub fn edges(&self) -> &[super::edges::Edge<'r>] {
        self.edges.get_or_init(|| super::edges::all(self))
    }

    /// The edges made `via` a dependency or a reference that the codemap forbids.
    pub fn forbidden_edges(
        &self,
        via: super::edges::EdgeVia,
    ) -> impl Iterator<Item = &super::edges::Edge<'r>> {
        self.edges()
            .iter()
            .filter(move |e| e.via == via && e.verdict() == super::edges::Verdict::Forbidden)
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

/// How many times the module trees are walked again for files outside their crates'
/// folders or hidden from the walk (a `#[path]` chain, a module tree under an ignored
/// folder); what a deeper chain reaches past this is a finding.
const MAX_TREE_ROUNDS: usize = 64;

/// A file a crate's module tree reaches that the check cannot read: what reaches it is a
/// `source-unparsed` finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unreadable {
    /// The file whose `mod` or `include!` reaches it; `None` for a target's root or a
    /// chain too deep to follow.
    pub from: Option<String>,
    pub krate: usize,
    pub via: super::modtree::Via,
    /// The file cargo would read.
    pub path: String,
    pub why: UnreadableWhy,
}

/// Why an [`Unreadable`] file is not read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnreadableWhy {
    Tree(super::modtree::Why),
    /// Reached past [`MAX_TREE_ROUNDS`] files outside the crates' folders in a chain.
    TooDeep,
}

impl Unreadable {
    fn of(u: super::modtree::Unreadable, sources: &[Source]) -> Unreadable {
        Unreadable {
            from: u.from.map(|i| sources[i].path.clone()),
            krate: u.krate,
            via: u.via,
            path: u.path,
            why: UnreadableWhy::Tree(u.why),
        }
    }
}

/// How many parents a chain of `use super::*` is followed through.
const MAX_GLOB_LEVELS: usize = 64;

fn nodes_of(sources: &[Source]) -> Vec<super::modtree::Node<'_>> {
    sources
        .iter()
        .map(|s| super::modtree::Node {
            path: &s.path,
            krate: s.krate,
            facts: s.facts.as_ref().ok(),
        })
        .collect()
}

fn file_scope(krate: &Crate, path: &str) -> DepKind {
    super::modtree::fallback_scope(&krate.dir, path)
}

fn parse_all(
    repo: &Repo,
    jobs: &[(String, usize)],
    candidates: &rust_refs::Candidates,
    cache: &mut Cache,
) -> Vec<Source> {
    let root: Arc<Path> = Arc::from(repo.root.as_path());
    // Sequentially (a map lookup each): where the cache holds an entry for each file.
    let prepared: Vec<(&String, usize, Option<cache::Taken>)> = jobs
        .iter()
        .map(|(path, krate)| (path, *krate, cache.take(path)))
        .collect();
    let cache: &Cache = cache;
    // In parallel: an entry whose recorded metadata still matches is taken as it is;
    // every other file is read and hashed, and parsed unless the content is unchanged.
    let sources: Vec<Option<Source>> = prepared
        .into_par_iter()
        .map(|(path, krate, taken)| {
            // The metadata from the walk or, when the walk took none (no cache to compare
            // it with, or a listed load), from the file opened here: either way taken
            // before any read, so a write during the read shows as a change.
            let mut opened = None;
            let planned = repo.planned(path);
            let walked = match repo.walked_stat(path) {
                Some(stat) => Some(stat),
                // A planned file has no metadata: it is read, and its entry taken only
                // when its content is the same.
                None if planned.is_some() => None,
                None => match crate::repo::open_in(&repo.root, path) {
                    Some(file) => {
                        let stat = file.metadata().ok().map(|m| FileStat::of(&m));
                        opened = Some(file);
                        stat
                    }
                    // Not readable now: its metadata by path, so an entry recorded for
                    // it is taken as a walk with metadata would take it.
                    None => crate::repo::stat_in(&repo.root, path),
                },
            };
            let entry = taken.as_ref().and_then(|t| cache.entry(t));
            let file = OnceLock::new();
            let (entry, stat, kept) = match entry {
                Some(e) if walked.is_some() && e.stat == walked => (e, walked, taken),
                entry => {
                    let stat = cache::settled(walked, repo.started_ns);
                    let len = walked.map(|w| w.len);
                    let limit = crate::repo::TEXT_LIMIT;
                    let read = match (planned, opened) {
                        (Some(planned), _) => planned,
                        (None, Some(f)) => crate::repo::read_open_within(f, len, limit),
                        (None, None) => crate::repo::read_in_within(&repo.root, path, len, limit),
                    };
                    // A listed source that cannot be read (no permission, a link put in
                    // its place, gone mid-run, too large) is a finding, never a silent
                    // skip: its imports cannot be checked.
                    let text = match read {
                        Ok(text) => text,
                        Err(why) => {
                            let facts = Err(rust_refs::ParseFailure {
                                message: format!("the file cannot be read ({why})"),
                                line: 1,
                                column: 1,
                                offset: 0,
                            });
                            // Never read again from the disk: a planned file's is not it.
                            let file = OnceLock::new();
                            if repo.is_planned(path) {
                                let _ = file.set(SourceFile::new(path.clone(), String::new()));
                            }
                            return Some(Source {
                                path: path.clone(),
                                file,
                                root: root.clone(),
                                krate,
                                scope: file_scope(&repo.workspace.crates[krate], path),
                                hidden: Vec::new(),
                                facts,
                                suppressions: Vec::new(),
                                hash: 0,
                                mentions: Mentions::default(),
                                stat: None,
                                kept: None,
                            });
                        }
                    };
                    let hash = cache::hash(&text);
                    let src = SourceFile::new(path.clone(), text);
                    let (entry, kept) = match entry {
                        // The same content: the entry is written back as it was unless the
                        // metadata to record changed (a file that has settled since).
                        Some(e) if e.hash == hash => {
                            let kept = taken.filter(|_| e.stat == stat);
                            (e, kept)
                        }
                        _ => {
                            // A replacement character may be a lossy read of bytes that
                            // are not UTF-8: then the file is unparsed, as rustc has it.
                            let facts = match invalid_utf8_at(repo, path, &src.text) {
                                Some(at) => Err(rust_refs::not_utf8(&src.text, at)),
                                None => rust_refs::extract(&src.text, candidates),
                            };
                            let fresh = cache::Entry {
                                hash,
                                stat: None,
                                mentions: Mentions::scan(&src.text),
                                facts,
                                suppressions: suppress::scan(&src),
                            };
                            (fresh, None)
                        }
                    };
                    // Kept only where a rule may read the text (most files it is not
                    // asked for again, and 20,000 texts held to the end cost more memory,
                    // and so page faults, than a second read of the few asked for).
                    // A planned file's text is only in the plan: always kept.
                    if entry.mentions.any() || repo.is_planned(path) {
                        let _ = file.set(src);
                    }
                    (entry, stat, kept)
                }
            };
            let scope = file_scope(&repo.workspace.crates[krate], path);
            Some(Source {
                path: path.clone(),
                file,
                root: root.clone(),
                krate,
                scope,
                hidden: Vec::new(),
                facts: entry.facts,
                suppressions: entry.suppressions,
                hash: entry.hash,
                mentions: entry.mentions,
                stat,
                kept,
            })
        })
        .collect();
    // Collected by index (one allocation of the right size), then the unreadable dropped
    // into a second allocation of that size (collecting a `flatten` would grow it by
    // doubling: copies, and fresh pages for each size).
    let mut out = Vec::with_capacity(sources.len());
    out.extend(sources.into_iter().flatten());
    out
}

/// What this run found, still to be written back to the check cache: the caller saves it
/// beside the rules (which only read the sources), not before them.
#[derive(Debug)]
pub struct PendingSave<'r> {
    /// `None`: this run may not write (it read a plan).
    root: Option<&'r Path>,
    key: u128,
    cache: Cache,
    /// A run over some files (`--staged`) keeps the entries of the others.
    partial: bool,
    /// Files parsed but outside every module tree (or outside `--staged`): not checked,
    /// and their entries kept for the next run.
    unreached: Vec<Source>,
}

impl PendingSave<'_> {
    /// Writes what this run found back to the cache, unless every file was taken from it
    /// by metadata and no entry is left over (then the file on disk is already right). A
    /// partial run keeps the entries of the files it did not visit. Entries of files that
    /// did not change are copied as they were encoded.
    pub fn save(self, sources: &[Source]) {
        let PendingSave {
            root,
            key,
            cache,
            partial,
            unreached,
        } = self;
        let Some(root) = root else {
            return;
        };
        let stale = !partial && !cache.all_taken();
        if !stale && sources.iter().chain(&unreached).all(|s| s.kept.is_some()) {
            return;
        }
        let mut records: Vec<(&str, cache::Record<'_>)> = Vec::with_capacity(sources.len());
        if partial {
            records.extend(cache.rest());
        }
        for s in sources.iter().chain(&unreached) {
            let record = match &s.kept {
                Some(t) => cache::Record::Kept(t.clone()),
                None => cache::Record::Fresh(cache::EntryRef {
                    hash: s.hash,
                    stat: s.stat,
                    mentions: s.mentions,
                    facts: &s.facts,
                    suppressions: &s.suppressions,
                }),
            };
            records.push((&s.path, record));
        }
        // A cache that cannot be written (a read-only checkout) only costs speed next time.
        let _ = cache.save(root, key, records);
    }
}

/// Where `path`'s bytes stop being UTF-8, when `text` (its lossy reading) holds a
/// replacement character; `None` for valid UTF-8 (the common case costs one scan of a
/// char that is almost never there).
fn invalid_utf8_at(repo: &Repo, path: &str, text: &str) -> Option<usize> {
    if !text.contains('\u{FFFD}') {
        return None;
    }
    let bytes = repo.read_bytes(path, crate::repo::TEXT_LIMIT)?;
    std::str::from_utf8(&bytes).err().map(|e| e.valid_up_to())
}
