//! The repository's files: a gitignore-aware, parallel, sorted walk that also takes the
//! metadata of every Rust source in the same pass, so the check cache can tell an
//! unchanged file without opening it (as git's index does).

use std::path::Path;
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Every file, repo-relative, `/`-separated, sorted.
    pub files: Vec<String>,
    /// The metadata of each file, by its index in `files`: taken for `.rs` files only,
    /// and empty when the walk took none.
    pub stats: Vec<Option<FileStat>>,
    /// `.rs` files the check cannot read but cargo would build, sorted, each with why: a
    /// name that is not UTF-8 (as read lossily), or a symlink. Findings, never silently
    /// skipped.
    pub unchecked: Vec<(String, Unchecked)>,
    /// Every other file that is a symlink, sorted: never read, and a rule that needs one
    /// of them says it could not read it.
    pub links: Vec<String>,
    /// What the walk could not read, sorted, each with why: an ignore file that is not a
    /// regular file (its folder is walked as if it ignored nothing), a folder it cannot
    /// list. Findings, never silently skipped.
    pub unread: Vec<(String, String)>,
}

impl Walk {
    /// Adds the planned files `planned` (repo-relative, sorted) that the disk does not
    /// hold yet, as a walk of the tree with them written would list them (not one the walk
    /// would leave out: see [`walk_skips`]); a planned file the disk holds is listed as the
    /// walk listed it (an ignore file may hide it). No planned file has metadata: a check
    /// reads it, never takes a cache entry by it.
    pub fn add<'a>(&mut self, root: &Path, planned: impl Iterator<Item = &'a String>) {
        let mut ignores = IgnoreFiles::default();
        let mut new: Vec<&String> = Vec::new();
        for path in planned {
            match self.files.binary_search(path) {
                // The disk's metadata is not the planned file's.
                Ok(i) => {
                    if let Some(stat) = self.stats.get_mut(i) {
                        *stat = None;
                    }
                }
                Err(_)
                    if std::fs::symlink_metadata(root.join(path)).is_err()
                        && !walk_skips(root, path, &mut ignores) =>
                {
                    new.push(path)
                }
                Err(_) => {}
            }
        }
        if new.is_empty() {
            return;
        }
        let stats = !self.stats.is_empty();
        let old_stats = std::mem::take(&mut self.stats)
            .into_iter()
            .chain(std::iter::repeat(None));
        let mut all: Vec<(String, Option<FileStat>)> = std::mem::take(&mut self.files)
            .into_iter()
            .zip(old_stats)
            .collect();
        all.extend(new.into_iter().map(|p| (p.clone(), None)));
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let (files, kept): (Vec<String>, Vec<Option<FileStat>>) = all.into_iter().unzip();
        self.files = files;
        self.stats = if stats { kept } else { Vec::new() };
    }
}

/// The ignore files [`walk_skips`] has read, by repo-relative path (`None`: none there,
/// or one that cannot be read or built, which ignores nothing).
type IgnoreFiles = std::collections::HashMap<String, Option<ignore::gitignore::Gitignore>>;

/// Whether the walk would leave out `rel`, a file the disk does not hold yet: under a
/// name it never walks (`.git`, `.scaffold`), in a folder holding `CACHEDIR.TAG`, or
/// ignored by an ignore file on the way (`.ignore` before `.gitignore`, the deepest folder
/// deciding, as the walk's matcher does). Ignore files are read as the walk reads them:
/// regular files inside the root, each once for all the planned files (`ignores`).
fn walk_skips(root: &Path, rel: &str, ignores: &mut IgnoreFiles) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.iter().any(|p| *p == ".git" || *p == ".scaffold") {
        return true;
    }
    let dirs: Vec<String> = (0..parts.len()).map(|i| parts[..i].join("/")).collect();
    if dirs
        .iter()
        .skip(1)
        .any(|d| std::fs::symlink_metadata(root.join(d).join("CACHEDIR.TAG")).is_ok())
    {
        return true;
    }
    for dir in dirs.iter().rev() {
        for name in [".ignore", ".gitignore"] {
            let file = if dir.is_empty() {
                name.to_owned()
            } else {
                format!("{dir}/{name}")
            };
            let matcher = ignores.entry(file).or_insert_with_key(|file| {
                let text = super::inside::read_text(root, file, super::MANIFEST_LIMIT)
                    .ok()
                    .flatten()?;
                let mut builder = ignore::gitignore::GitignoreBuilder::new(root.join(dir));
                for line in text.lines() {
                    // A line that is no glob is no rule, as the walk has it.
                    let _ = builder.add_line(None, line);
                }
                builder.build().ok()
            });
            let Some(matcher) = matcher else {
                continue;
            };
            match matcher.matched_path_or_any_parents(root.join(rel), false) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
    }
    false
}

/// Why a `.rs` file found by the walk is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unchecked {
    NotUtf8,
    Symlink,
}

/// What the check cache compares to tell that a file has not changed since it was read:
/// size, modification and change times and inode. The change time cannot be set back by
/// `touch`, and any write moves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileStat {
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
}

impl FileStat {
    pub fn of(meta: &std::fs::Metadata) -> FileStat {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
            FileStat {
                len: meta.len(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
                ino: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            FileStat {
                len: meta.len(),
                mtime_ns: ns,
                ctime_ns: ns,
                ino: 0,
            }
        }
    }

    /// The later of the two times, in nanoseconds since the epoch.
    pub fn latest_ns(&self) -> i128 {
        self.mtime_ns.max(self.ctime_ns)
    }
}

/// Walks `root`. Honours `.gitignore` and `.ignore` (also outside a git checkout), never
/// follows symlinks, and skips `.git`, `.scaffold` and Cargo target directories (those
/// holding `CACHEDIR.TAG`). What is left out is only the fast list: the Rust that cargo
/// builds is found from the crates' module trees whatever it says. An ignore file is read
/// only as a regular file (the vendored `ignore`'s patch); one that is not is in
/// [`Walk::unread`].
///
/// With `stats`, also takes each `.rs` file's metadata (what the check cache compares to
/// take a file's entry without opening it); without, a caller that wants it takes it from
/// the open file when it reads one (cheaper than a lookup by path).
pub fn walk(root: &Path, stats: bool) -> Walk {
    let out: Mutex<Vec<Vec<Found>>> = Mutex::new(Vec::new());
    let unchecked: Mutex<Vec<(String, Unchecked)>> = Mutex::new(Vec::new());
    let links: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let unread: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(|e| {
            let name = e.file_name();
            if name == ".git" || name == ".scaffold" {
                return false;
            }
            !(e.file_type().is_some_and(|t| t.is_dir()) && e.path().join("CACHEDIR.TAG").exists())
        })
        .build_parallel()
        .run(|| {
            let mut found = ThreadFiles::new(&out);
            let unchecked = &unchecked;
            let links = &links;
            let unread = &unread;
            Box::new(move |entry| {
                // An ignore file a folder holds that could not be read rides on the
                // folder's entry; a folder that could not be listed is an error of its own.
                let error = match &entry {
                    Err(e) => Some(e),
                    Ok(e) => e.error(),
                };
                if let Some(e) = error {
                    let mut found = Vec::new();
                    io_errors(e, None, &mut found);
                    if let Ok(mut list) = unread.lock() {
                        list.extend(
                            found
                                .into_iter()
                                .filter_map(|(p, why)| relative(root, &p).map(|r| (r, why))),
                        );
                    }
                    if entry.is_err() {
                        return WalkState::Continue;
                    }
                }
                // A symlink is never followed. A symlinked `.rs` file: cargo would build it,
                // the check reads only real files inside the root, so it is reported, not
                // skipped; any other is listed for the rules that need it to say so.
                if let Ok(e) = &entry
                    && e.file_type().is_some_and(|t| t.is_symlink())
                {
                    if let Some(rel) = relative(root, e.path()) {
                        if rel.ends_with(".rs") {
                            if let Ok(mut list) = unchecked.lock() {
                                list.push((rel, Unchecked::Symlink));
                            }
                        } else if let Ok(mut list) = links.lock() {
                            list.push(rel);
                        }
                    }
                    return WalkState::Continue;
                }
                if let Ok(e) = entry
                    && e.file_type().is_some_and(|t| t.is_file())
                    && let Some(rel) = relative(root, e.path())
                {
                    if e.path().to_str().is_none() {
                        if rel.ends_with(".rs")
                            && let Ok(mut list) = unchecked.lock()
                        {
                            list.push((rel, Unchecked::NotUtf8));
                        }
                        return WalkState::Continue;
                    }
                    let stat = if stats && rel.ends_with(".rs") {
                        e.metadata().ok().map(|m| FileStat::of(&m))
                    } else {
                        None
                    };
                    found.local.push((rel, stat));
                }
                WalkState::Continue
            })
        });
    // Each walker thread's list, joined into one allocation of the right size.
    let parts = out.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut all = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for part in parts {
        all.extend(part);
    }
    // On the pool's threads: sorting 20,000 paths is a tenth of a warm check.
    rayon::slice::ParallelSliceMut::par_sort_unstable_by(&mut all[..], |a, b| a.0.cmp(&b.0));
    let mut unchecked = unchecked.into_inner().unwrap_or_else(|p| p.into_inner());
    unchecked.sort_unstable();
    let mut links = links.into_inner().unwrap_or_else(|p| p.into_inner());
    links.sort_unstable();
    let mut unread = unread.into_inner().unwrap_or_else(|p| p.into_inner());
    unread.sort_unstable();
    unread.dedup();
    if !stats {
        // No vector of nothing but `None` beside the file list.
        let files = all.into_iter().map(|(path, _)| path).collect();
        return Walk {
            files,
            stats: Vec::new(),
            unchecked,
            links,
            unread,
        };
    }
    let (files, stats) = all.into_iter().unzip();
    Walk {
        files,
        stats,
        unchecked,
        links,
        unread,
    }
}

/// The I/O errors inside a walk error, each with the path it is about: an ignore file
/// that could not be opened or read, a folder that could not be listed. A glob an ignore
/// file holds that is not one is the ignore file's own business (git skips such lines).
fn io_errors(e: &ignore::Error, path: Option<&Path>, out: &mut Vec<(std::path::PathBuf, String)>) {
    match e {
        ignore::Error::Partial(errs) => {
            for e in errs {
                io_errors(e, path, out);
            }
        }
        ignore::Error::WithPath { path, err } => io_errors(err, Some(path), out),
        ignore::Error::WithLineNumber { err, .. } | ignore::Error::WithDepth { err, .. } => {
            io_errors(err, path, out);
        }
        ignore::Error::Io(io) => {
            if let Some(p) = path {
                let why = if is_loop(io) {
                    "a symlink".to_owned()
                } else {
                    io.to_string()
                };
                out.push((p.to_path_buf(), why));
            }
        }
        _ => {}
    }
}

/// Whether an open failed because its path is a symlink (`O_NOFOLLOW`'s answer).
fn is_loop(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

type Found = (String, Option<FileStat>);

/// What one walker thread found, handed over whole when the thread's closure is dropped
/// at the end of the walk (handing it over in batches grew one shared vector by
/// doubling, under a lock).
struct ThreadFiles<'a> {
    local: Vec<Found>,
    out: &'a Mutex<Vec<Vec<Found>>>,
}

impl<'a> ThreadFiles<'a> {
    fn new(out: &'a Mutex<Vec<Vec<Found>>>) -> Self {
        ThreadFiles {
            local: Vec::new(),
            out,
        }
    }
}

impl Drop for ThreadFiles<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        self.out
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(local);
    }
}

/// `path` relative to `root` with `/` separators, if it is inside.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    // The walk's paths are `root` joined with clean names: their bytes after `root/` are
    // the answer, without a component-by-component comparison per file (a tenth of a
    // warm check's walk). Anything less plain takes the general way.
    if std::path::MAIN_SEPARATOR == '/'
        && let Some(rest) = path
            .to_str()
            .zip(root.to_str())
            .and_then(|(p, r)| p.strip_prefix(r.strip_suffix('/').unwrap_or(r)))
            .and_then(|rest| rest.strip_prefix('/'))
        && !rest.is_empty()
        && !rest.starts_with('/')
        && !rest.ends_with('/')
        && !rest.starts_with("./")
        && !rest.contains("//")
        && !rest.contains("/./")
        && rest != "."
        && !rest.ends_with("/.")
    {
        return Some(rest.to_owned());
    }
    let rel = path.strip_prefix(root).ok()?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    match rel.to_str() {
        Some(s) if std::path::MAIN_SEPARATOR == '/' => Some(s.to_owned()),
        _ => {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            Some(parts.join("/"))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Planned files join the walk as it would list them written: not under an ignored
    /// folder, `.scaffold` or a build's output; and a planned file the disk holds loses its
    /// metadata.
    #[test]
    fn planned_files_join_the_walk_as_it_would_list_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "/gen/\n*.log\n").expect("write");
        std::fs::create_dir_all(root.join("out/debug")).expect("mkdir");
        std::fs::write(root.join("out/CACHEDIR.TAG"), "").expect("write");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/lib.rs"), "").expect("write");
        std::fs::write(root.join("src/.ignore"), "!keep.log\n").expect("write");
        let mut walk = super::walk(root, true);
        assert!(walk.stats.iter().any(Option::is_some));
        let planned: Vec<String> = [
            ".scaffold/x.rs",
            "gen/a.rs",
            "out/debug/b.rs",
            "src/keep.log",
            "src/lib.rs",
            "src/new.rs",
            "top.log",
        ]
        .map(str::to_owned)
        .to_vec();
        walk.add(root, planned.iter());
        assert_eq!(
            walk.files,
            [
                ".gitignore",
                "src/.ignore",
                "src/keep.log",
                "src/lib.rs",
                "src/new.rs"
            ]
        );
        assert_eq!(walk.stats.len(), walk.files.len());
        assert!(walk.stats.iter().all(Option::is_none), "{:?}", walk.stats);
    }

    /// The byte fast path answers as `Path::strip_prefix` does, or leaves it the case.
    #[test]
    fn relative_agrees_with_strip_prefix() {
        let slow = |root: &str, path: &str| {
            let rel = Path::new(path).strip_prefix(root).ok()?;
            (!rel.as_os_str().is_empty()).then(|| rel.to_str().unwrap_or_default().to_owned())
        };
        for (root, path) in [
            ("/r", "/r/a/b.rs"),
            ("/r/", "/r/a"),
            ("/r", "/rx/a"),
            ("/r", "/r"),
            ("/r", "/r/"),
            ("/", "/tmp/x"),
            ("/r", "/r/a/../b"),
            ("/r", "/r//a"),
            ("/r", "/r/./a"),
            ("/r", "/r/a/./b"),
            ("/r", "/r/a/"),
            ("/r/.", "/r/a"),
            ("/r", "/other"),
        ] {
            assert_eq!(
                super::relative(Path::new(root), Path::new(path)),
                slow(root, path),
                "{root} {path}"
            );
        }
    }
}
