//! The repository being checked: discovery, manifests and the Cargo workspace.

pub mod codemap;
pub mod files;
pub mod gaps;
pub mod gate_matrix;
pub mod inside;
pub mod manifest;
pub mod overlay;
pub mod workspace;
pub mod yaml;

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use thiserror::Error;

use crate::source::SourceFile;
use codemap::{CODEMAP_PATH, Codemap};
use gate_matrix::{GATE_MATRIX_PATH, GateMatrix};
use manifest::Problem;
use overlay::Overlay;
use workspace::Workspace;

#[derive(Debug, Error, Diagnostic)]
pub enum RepoError {
    #[error("no agent/codemap.yml in {} or any of its parents", start.display())]
    #[diagnostic(
        code(scaffold::repo_not_found),
        help("looked in:\n{}\nrun inside a repository made by `scaffold init`, or pass `-C <dir>`", looked.iter().map(|p| format!("  {}", p.join(CODEMAP_PATH).display())).collect::<Vec<_>>().join("\n"))
    )]
    NotFound {
        start: PathBuf,
        looked: Vec<PathBuf>,
    },

    #[error("cannot read {}", path.display())]
    #[diagnostic(code(scaffold::io), help("check that the file exists and is readable"))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A manifest that is a symlink, reached through one, not a regular file, or too
    /// large: refused without reading (or showing) it.
    #[error("refused {path}: {reason}")]
    #[diagnostic(
        code(scaffold::refused),
        help("replace it with a regular file inside the repository; its content was not read")
    )]
    Refused {
        path: String,
        #[source]
        reason: inside::Refusal,
    },

    /// The root `Cargo.toml` is missing or cannot be read: the workspace, and so every
    /// crate, would be unknown, and the gate would pass on nothing.
    #[error("cannot read the workspace's Cargo.toml: {}", match why {
        workspace::RootUnread::Missing => "there is none at the repository's root".to_owned(),
        workspace::RootUnread::Refused(r) => r.to_string(),
    })]
    #[diagnostic(
        code(scaffold::root_manifest),
        help(
            "the repository's root holds the Cargo workspace: make Cargo.toml a regular file there (at most 16 MiB); its content was not read"
        )
    )]
    RootManifest { why: workspace::RootUnread },

    #[error("{} problem(s) in the manifests", problems.len())]
    #[diagnostic(code(manifest_invalid), help("fix each problem listed above"))]
    Manifest {
        problems: Vec<Problem>,
        /// The manifests' texts, so problems can be shown in context.
        sources: Vec<SourceFile>,
    },
}

/// The nearest ancestor of `start` (itself included) that holds `agent/codemap.yml`.
pub fn discover(start: &Path) -> Result<PathBuf, RepoError> {
    let mut looked = Vec::new();
    for dir in start.ancestors() {
        looked.push(dir.to_path_buf());
        if dir.join(CODEMAP_PATH).is_file() {
            return Ok(dir.to_path_buf());
        }
    }
    Err(RepoError::NotFound {
        start: start.to_path_buf(),
        looked,
    })
}

/// Everything the checker knows about a repository before it looks at sources.
#[derive(Debug)]
pub struct Repo {
    pub root: PathBuf,
    /// Every file, repo-relative, sorted.
    pub files: Vec<String>,
    pub codemap: Codemap,
    pub codemap_file: SourceFile,
    pub gate_matrix: Option<(GateMatrix, SourceFile)>,
    pub workspace: Workspace,
    /// What the load could not read: manifests, members, file names, symlinked sources
    /// (rule source-unparsed reports each).
    pub gaps: Vec<gaps::Gap>,
    /// Files (other than `.rs` ones, which are gaps) that are symlinks, sorted: never
    /// read; a rule that needs one says it could not read it.
    pub links: Vec<String>,
    /// The metadata of each `.rs` file by its index in `files`, taken during the walk
    /// (empty when the walk took none, or for a listed load).
    stats: Vec<Option<files::FileStat>>,
    /// When loading began (before the walk), in nanoseconds since the epoch: a file that
    /// changed after this may have changed again since it was read.
    pub started_ns: i128,
    /// The generator's planned files, read in place of the disk's; a repository loaded
    /// with one (even an empty one) writes nothing back.
    overlay: Option<Overlay>,
}

impl Repo {
    /// The metadata the walk took of `rel`, a `.rs` file (`None` when the walk took none,
    /// or for a listed load).
    pub fn walked_stat(&self, rel: &str) -> Option<files::FileStat> {
        if self.stats.is_empty() {
            return None;
        }
        let i = self.files.binary_search_by(|f| f.as_str().cmp(rel)).ok()?;
        self.stats.get(i).copied().flatten()
    }

    /// Reads a repo-relative file as text, if it exists and is UTF-8. Never follows a path
    /// out of the repository.
    pub fn read(&self, rel: &str) -> Option<String> {
        match self.planned(rel) {
            Some(planned) => planned.ok(),
            None => read_in(&self.root, rel),
        }
    }

    /// [`read_in_within`] of `rel`, or its planned text.
    pub(crate) fn read_within(
        &self,
        rel: &str,
        len: Option<u64>,
        limit: u64,
    ) -> Result<String, Unread> {
        match self.overlay.as_ref().and_then(|o| o.text(rel, limit)) {
            Some(planned) => planned,
            None => read_in_within(&self.root, rel, len, limit),
        }
    }

    /// A repo-relative file's bytes (its planned ones first), opened as [`open_in`] opens
    /// it (never through a symlink or `..`; a hard-linked file is read, as its text is for
    /// its imports); `None` when it cannot be read or holds more than `limit` bytes.
    pub(crate) fn read_bytes(&self, rel: &str, limit: u64) -> Option<Vec<u8>> {
        if let Some(b) = self.overlay.as_ref().and_then(|o| o.bytes(rel)) {
            return (b.len() as u64 <= limit).then(|| b.to_vec());
        }
        read_open_bytes(open_in(&self.root, rel)?, None, limit).ok()
    }

    /// A planned file's text, refused past [`TEXT_LIMIT`]; `None` when `rel` is not
    /// planned (or nothing is).
    pub(crate) fn planned(&self, rel: &str) -> Option<Result<String, Unread>> {
        self.overlay.as_ref()?.text(rel, TEXT_LIMIT)
    }

    /// Whether `rel` is a planned file (read from the plan, never from the disk).
    pub(crate) fn is_planned(&self, rel: &str) -> bool {
        self.overlay.as_ref().is_some_and(|o| o.holds(rel))
    }

    /// What is at `rel` (see [`inside::probe`]), the plan first.
    pub(crate) fn probe(&self, rel: &str) -> inside::Probe {
        self.overlay
            .as_ref()
            .and_then(|o| o.probe(rel))
            .unwrap_or_else(|| inside::probe(&self.root, rel))
    }

    /// Whether `rel` may be shown (see [`inside::showable`]): a planned file may.
    pub(crate) fn showable(&self, rel: &str) -> bool {
        self.is_planned(rel) || inside::showable(&self.root, rel)
    }

    /// Whether a check of this repository may write its cache and memo back: not when
    /// it reads a plan (what it saw is not on disk).
    pub(crate) fn writes_back(&self) -> bool {
        self.overlay.is_none()
    }

    /// The `.rs` files the walk found and could not check (a symlink, a name that is not
    /// UTF-8), sorted: each is a finding already.
    pub fn unchecked_sources(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .gaps
            .iter()
            .filter(|g| matches!(g.why, gaps::Why::SymlinkedSource | gaps::Why::NameNotUtf8))
            .map(|g| g.path.clone())
            .collect();
        out.sort_unstable();
        out
    }

    /// A file the walk listed, read: `Ok(None)` when the repository has no such file,
    /// `Err` when it has one that cannot be read (a symlink, which is never read, no
    /// permission, or larger than [`TEXT_LIMIT`]).
    pub fn read_listed(&self, rel: &str) -> Result<Option<String>, Unread> {
        let listed = |list: &[String]| list.binary_search_by(|f| f.as_str().cmp(rel)).is_ok();
        if listed(&self.links) {
            return Err(Unread::Unreadable);
        }
        if !listed(&self.files) {
            return Ok(None);
        }
        self.read_within(rel, None, TEXT_LIMIT).map(Some)
    }

    /// Loads the repository, walking its whole tree.
    pub fn load(root: &Path) -> Result<Repo, RepoError> {
        Self::load_with(root, None, || files::walk(root, false))
    }

    /// Loads the repository as it would be with `overlay`'s files written: its walk with
    /// the planned files added, every planned file read from the plan. Nothing is written
    /// back by a check of it; the check cache is read (its entries taken by metadata for
    /// the files the plan leaves alone).
    pub fn load_planned(root: &Path, overlay: Overlay) -> Result<Repo, RepoError> {
        Self::load_with(root, Some(overlay), || files::walk(root, true))
    }

    /// Loads the repository, walking its whole tree and taking its Rust sources'
    /// metadata on the way: for a check whose cache can then take a file's entry without
    /// opening the file.
    pub fn load_with_stats(root: &Path) -> Result<Repo, RepoError> {
        Self::load_with(root, None, || files::walk(root, true))
    }

    /// Loads the repository with a file list given by the caller (e.g. git's index) and
    /// no source read up front: for runs that look at a few files only.
    pub fn load_listed(root: &Path, mut files: Vec<String>) -> Result<Repo, RepoError> {
        files.sort_unstable();
        files.dedup();
        Self::load_with(root, None, || files::Walk {
            files,
            stats: Vec::new(),
            unchecked: Vec::new(),
            links: Vec::new(),
            unread: Vec::new(),
        })
    }

    fn load_with(
        root: &Path,
        overlay: Option<Overlay>,
        walk: impl FnOnce() -> files::Walk,
    ) -> Result<Repo, RepoError> {
        let started_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        // Real files inside the root only: a manifest is shown in diagnostics, so one
        // that links to `/proc/self/environ` must never be read.
        let read_manifest = |rel: &str| -> Result<Option<SourceFile>, RepoError> {
            let refused = |reason| RepoError::Refused {
                path: rel.to_owned(),
                reason,
            };
            let text = match overlay
                .as_ref()
                .and_then(|o| o.manifest(rel, MANIFEST_LIMIT))
            {
                Some(planned) => Some(planned.map_err(refused)?),
                None => inside::read_text(root, rel, MANIFEST_LIMIT).map_err(refused)?,
            };
            Ok(text.map(|t| SourceFile::new(rel, t)))
        };
        let codemap_file = read_manifest(CODEMAP_PATH)?.ok_or_else(|| RepoError::Read {
            path: root.join(CODEMAP_PATH),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        let gm_file = read_manifest(GATE_MATRIX_PATH)?;
        let mut problems = Vec::new();
        let codemap = Codemap::parse(&codemap_file.text).unwrap_or_else(|p| {
            problems.extend(p);
            Codemap::default()
        });
        let gate_matrix = gm_file
            .as_ref()
            .and_then(|f| match GateMatrix::parse(&f.text) {
                Ok(m) => Some((m, f.clone())),
                Err(p) => {
                    problems.extend(p);
                    None
                }
            });
        if !problems.is_empty() {
            let mut sources = vec![codemap_file];
            sources.extend(gm_file);
            return Err(RepoError::Manifest { problems, sources });
        }
        let mut walk = walk();
        if let Some(o) = &overlay {
            walk.add(root, o.paths());
        }
        let files = walk.files;
        // Manifests only as regular files inside the root: a symlink, a FIFO or a folder
        // in a member manifest's place is a finding; in the root manifest's, an error.
        let disk = workspace::Disk {
            root,
            files: &files,
            overlay: overlay.as_ref(),
        };
        let (workspace, mut gaps) =
            Workspace::load(&disk).map_err(|why| RepoError::RootManifest { why })?;
        gaps.extend(walk.unread.iter().map(|(path, reason)| gaps::Gap {
            path: path.clone(),
            at: crate::check::finding::Location::START,
            why: gaps::Why::WalkUnread {
                reason: reason.clone(),
            },
        }));
        gaps.extend(walk.unchecked.iter().map(|(name, why)| gaps::Gap {
            path: name.clone(),
            at: crate::check::finding::Location::START,
            why: match why {
                files::Unchecked::NotUtf8 => gaps::Why::NameNotUtf8,
                files::Unchecked::Symlink => gaps::Why::SymlinkedSource,
            },
        }));
        Ok(Repo {
            root: root.to_path_buf(),
            files,
            codemap,
            codemap_file,
            gate_matrix,
            workspace,
            gaps,
            links: walk.links,
            stats: walk.stats,
            started_ns,
            overlay,
        })
    }
}

/// The largest manifest (codemap, gate matrix, baseline) read.
pub const MANIFEST_LIMIT: u64 = 16 << 20;

/// A repo-relative file as text (lossy UTF-8), never through a symlink or `..`.
pub(crate) fn read_in(root: &Path, rel: &str) -> Option<String> {
    read_in_sized(root, rel, None)
}

/// The largest buffer a length hint sizes up front.
const HINT_CAP: usize = 16 << 20;

/// `read_in` for a file whose length the caller already has (from the walk): the
/// buffer is sized up front and no metadata is asked for, so a read costs an open, one
/// read and a close. The length is only a hint; a file that changed size is read whole.
pub(crate) fn read_in_sized(root: &Path, rel: &str, len: Option<u64>) -> Option<String> {
    read_open(open_in(root, rel)?, len)
}

/// [`read_in_sized`] with a limit, saying why a file was not read.
pub(crate) fn read_in_within(
    root: &Path,
    rel: &str,
    len: Option<u64>,
    limit: u64,
) -> Result<String, Unread> {
    read_open_within(open_in(root, rel).ok_or(Unread::Unreadable)?, len, limit)
}

/// Opens a repo-relative file for reading, never through a symlink or `..`; `None` when
/// it cannot be opened.
pub(crate) fn open_in(root: &Path, rel: &str) -> Option<std::fs::File> {
    if leaves_root(rel) {
        return None;
    }
    open_no_follow(&root.join(rel))
}

/// The metadata of a repo-relative path itself (a symlink's own, not its target's),
/// never of a path out of the repository.
pub(crate) fn stat_in(root: &Path, rel: &str) -> Option<files::FileStat> {
    if leaves_root(rel) {
        return None;
    }
    std::fs::symlink_metadata(root.join(rel))
        .ok()
        .map(|m| files::FileStat::of(&m))
}

/// Whether a repo-relative path climbs out with `..`.
fn leaves_root(rel: &str) -> bool {
    rel.split('/').any(|s| s == "..")
}

/// The largest text file the checker reads (a Rust source, a README); the largest real
/// source in a crates.io cache is 2.5 MB. A larger file is a finding, not a read of
/// whatever size a pull request commits.
pub const TEXT_LIMIT: u64 = 32 << 20;

/// Why a file was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// Larger than the limit (in bytes).
    TooLarge(u64),
    /// It cannot be opened or read: no permission, a symlink, gone.
    Unreadable,
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::TooLarge(limit) => write!(f, "it is larger than {} MiB", limit >> 20),
            Unread::Unreadable => {
                f.write_str("no permission, a symlink, or it changed during the check")
            }
        }
    }
}

/// Reads an open file whole as text (lossy UTF-8), its buffer sized for `len` bytes (a
/// hint: a file that changed size is read whole); `None` past [`TEXT_LIMIT`].
pub(crate) fn read_open(file: std::fs::File, len: Option<u64>) -> Option<String> {
    read_open_within(file, len, TEXT_LIMIT).ok()
}

/// [`read_open`] with a limit, saying why a file was not read.
pub(crate) fn read_open_within(
    file: std::fs::File,
    len: Option<u64>,
    limit: u64,
) -> Result<String, Unread> {
    read_open_bytes(file, len, limit).map(into_text)
}

/// An open file's bytes, read as [`read_open_within`] reads them.
fn read_open_bytes(
    mut file: std::fs::File,
    len: Option<u64>,
    limit: u64,
) -> Result<Vec<u8>, Unread> {
    use std::io::Read;
    // Capped: a length from metadata is not trusted with an allocation (a file past the
    // cap is read on to its end as it comes), and a length past `limit` takes the path
    // that tells a file too large.
    let len = len
        .filter(|n| *n <= limit)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n <= HINT_CAP);
    let mut bytes = Vec::new();
    if let Some(len) = len {
        // One byte past the length, and one read: a read of a regular file comes back
        // short only at the file's end, so a read that returns exactly the length the
        // metadata gave has read the whole file, and no second read is needed to find the
        // end (`read_to_end` always makes one). Anything else (a file that grew or
        // shrank, a filesystem that returns short reads early) is read on to the end.
        bytes.resize(len + 1, 0);
        let got = loop {
            match file.read(&mut bytes) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Unread::Unreadable),
            }
        };
        bytes.truncate(got);
        if got == len {
            return Ok(bytes);
        }
    }
    // Through `Take`, which reads into the buffer as it is: `File`'s own `read_to_end`
    // asks for the file's metadata first. One byte past the limit tells a file too large.
    let had = bytes.len() as u64;
    file.take((limit + 1).saturating_sub(had))
        .read_to_end(&mut bytes)
        .map_err(|_| Unread::Unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(Unread::TooLarge(limit));
    }
    Ok(bytes)
}

/// Bytes as text, invalid UTF-8 replaced.
fn into_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Opens `path` for reading unless it is a symlink: refused by the kernel on Unix
/// (`O_NOFOLLOW`), so no separate metadata call is needed. Non-blocking, so a FIFO
/// listed by git reads as empty instead of hanging the check.
#[cfg(unix)]
fn open_no_follow(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> Option<std::fs::File> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return None;
    }
    std::fs::File::open(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_file_whole_whatever_the_length_hint() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.rs"), "fn main() {}\n").expect("write");
        // Shorter than the file, one short of its length (the read fills the buffer),
        // its length, longer; and a length past the cap.
        for hint in [
            None,
            Some(0),
            Some(3),
            Some(12),
            Some(13),
            Some(14),
            Some(4096),
            Some(u64::MAX),
        ] {
            assert_eq!(
                read_in_sized(dir.path(), "a.rs", hint).as_deref(),
                Some("fn main() {}\n"),
                "hint {hint:?}"
            );
        }
        std::fs::write(dir.path().join("b.rs"), b"ok \xff\n").expect("write");
        assert_eq!(
            read_in(dir.path(), "b.rs").as_deref(),
            Some("ok \u{fffd}\n")
        );
    }

    #[test]
    fn never_reads_through_a_symlink_or_out_of_the_root() {
        let outer = tempfile::tempdir().expect("temp dir");
        let root = outer.path().join("repo");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::write(outer.path().join("secret.rs"), "outside").expect("write");
        assert_eq!(read_in(&root, "../secret.rs"), None);
        assert_eq!(read_in(&root, "missing.rs"), None);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outer.path().join("secret.rs"), root.join("link.rs"))
                .expect("symlink");
            assert_eq!(read_in(&root, "link.rs"), None);
            assert_eq!(read_in_sized(&root, "link.rs", Some(7)), None);
        }
    }

    #[test]
    fn an_open_files_metadata_is_what_a_walk_with_stats_records() {
        // A cold check records the metadata of the file it opened; a warm one compares
        // the walk's with it. They must agree, or no entry is ever taken by metadata.
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}\n").expect("write");
        std::fs::write(dir.path().join("README.md"), "# a\n").expect("write");
        let walk = files::walk(dir.path(), true);
        assert_eq!(walk.files, ["README.md", "src/a.rs"]);
        assert!(
            walk.stats[0].is_none(),
            "metadata is taken of .rs files only"
        );
        let opened = open_in(dir.path(), "src/a.rs").expect("open");
        let meta = opened.metadata().expect("metadata");
        assert_eq!(walk.stats[1], Some(files::FileStat::of(&meta)));
        let bare = files::walk(dir.path(), false);
        assert_eq!(bare.files, walk.files);
        assert!(bare.stats.is_empty(), "{:?}", bare.stats);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_reads_as_empty_instead_of_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("pipe.rs");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("SKIPPED: mkfifo is not available here");
            return;
        }
        assert_eq!(read_in(dir.path(), "pipe.rs").as_deref(), Some(""));
    }

    /// A copy of `fixtures/bases/minimal` in a temp dir.
    fn minimal() -> tempfile::TempDir {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bases/minimal");
        let dir = tempfile::tempdir().expect("temp dir");
        for rel in files::walk(&from, false).files {
            let to = dir.path().join(&rel);
            std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
            std::fs::copy(from.join(&rel), to).expect("copy");
        }
        dir
    }

    /// A repository loaded through a plan sees the plan's files (a new member crate, an
    /// edited root manifest, a source the check cache holds another content of), and a
    /// check of it writes nothing.
    #[test]
    fn a_planned_repository_reads_the_plan_and_writes_nothing() {
        let dir = minimal();
        let root = dir.path();
        let main = "workers/maintenance/src/main.rs";
        let check = |repo: &Repo| crate::check::run(repo, &crate::check::CheckOptions::default());
        // A check of the disk fills the cache (so the plan's source has an entry of
        // another content).
        let plain = check(&Repo::load_with_stats(root).expect("load"));
        assert!(
            !plain.findings.iter().any(|f| f.rule == "import-forbidden"),
            "{:?}",
            plain.findings
        );
        assert!(
            root.join(".scaffold/cache").is_dir(),
            "a check keeps its cache"
        );
        std::fs::remove_dir_all(root.join(".scaffold")).expect("clear");
        check(&Repo::load_with_stats(root).expect("load"));
        let cached = std::fs::read(root.join(".scaffold/cache/check-v3.bin")).expect("cache");

        let planned = Overlay::new([
            (
                "Cargo.toml".to_owned(),
                b"[workspace]\nmembers = [\"om\", \"workers/*\", \"infra\"]\nresolver = \"2\"\n"
                    .to_vec(),
            ),
            (
                "infra/Cargo.toml".to_owned(),
                b"[package]\nname = \"acme-infra\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"
                    .to_vec(),
            ),
            ("infra/src/lib.rs".to_owned(), b"pub struct Db;\n".to_vec()),
            (
                main.to_owned(),
                b"use acme_infra::Db;\nfn main() {}\n".to_vec(),
            ),
        ]);
        let before = files::walk(root, false).files;
        let repo = Repo::load_planned(root, planned).expect("load the plan");
        assert!(repo.files.iter().any(|f| f == "infra/src/lib.rs"));
        assert!(repo.workspace.crates.iter().any(|c| c.dir == "infra"));
        assert_eq!(
            repo.read(main).as_deref(),
            Some("use acme_infra::Db;\nfn main() {}\n")
        );
        // A planned file is held to the reader's limit, as the disk's would be.
        assert_eq!(repo.read_within(main, None, 4), Err(Unread::TooLarge(4)));
        // Bytes are read past a second name (a source read for its imports), as text is.
        let other = root.join("om/src/linked.rs");
        std::fs::hard_link(root.join("om/src/lib.rs"), &other).expect("link");
        assert!(repo.read_bytes("om/src/linked.rs", TEXT_LIMIT).is_some());
        std::fs::remove_file(other).expect("unlink");
        let outcome = check(&repo);
        assert!(
            outcome
                .findings
                .iter()
                .any(|f| f.rule == "import-forbidden" && f.path == main),
            "{:?}",
            outcome.findings
        );
        assert_eq!(files::walk(root, false).files, before, "a file was written");
        assert_eq!(
            std::fs::read(root.join(".scaffold/cache/check-v3.bin")).expect("cache"),
            cached,
            "the cache was written"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(main)).expect("main"),
            "fn main() {}\n"
        );
    }
}
