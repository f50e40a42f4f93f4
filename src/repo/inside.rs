//! Paths resolved inside the repository root. A pull request can commit symlinks: a
//! manifest pointing at `/proc/self/environ`, a `.scaffold` pointing at someone else's
//! folder. What is read here is a regular file reached through real directories only,
//! and what is written is written by temp file and rename into real directories only, so
//! nothing outside the root is ever read, shown or written through a link.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Why a path was refused. Never carries the file's content.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("`{0}` is a symlink; scaffold reads and writes only real files inside the repository")]
    Symlink(String),
    #[error("`{0}` is not a regular file")]
    NotRegular(String),
    #[error("`{0}` is not a directory")]
    NotDirectory(String),
    #[error("`{path}` is larger than {limit} bytes")]
    TooLarge { path: String, limit: u64 },
    #[error("`{0}` leaves the repository (`..` or an absolute path)")]
    Climbs(String),
    /// A regular file with a second name: a hard link can make a file elsewhere (another
    /// user's, a secret) look like one of the repository's, so it is never shown.
    #[error(
        "`{0}` has more than one name (a hard link); scaffold shows only files the repository alone holds"
    )]
    HardLinked(String),
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl Refusal {
    fn io(path: &str, source: io::Error) -> Self {
        Refusal::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// Whether `rel` leaves the root: `..`, or an absolute path (which `Path::join` would
/// take as it is).
fn climbs(rel: &str) -> bool {
    Path::new(rel).is_absolute() || rel.starts_with('/') || rel.split('/').any(|s| s == "..")
}

/// Each leading part of `rel` (`a`, `a/b`, …, `rel` itself), as written, with its path
/// under `root`: what the readers and writers below check one component at a time.
fn prefixes<'a>(root: &'a Path, rel: &'a str) -> impl Iterator<Item = (PathBuf, &'a str)> + 'a {
    rel.match_indices('/')
        .map(|(i, _)| i)
        .chain(std::iter::once(rel.len()))
        .filter(move |&end| end > 0 && !rel[..end].ends_with('/'))
        .map(move |end| (root.join(&rel[..end]), &rel[..end]))
}

/// Whether every directory between `root` and `rel` (its parents, not `rel` itself) is a
/// real directory: `Ok(false)` when one is missing, a refusal when one is a symlink or not
/// a directory.
fn real_parents(root: &Path, rel: &str) -> Result<bool, Refusal> {
    for (at, shown) in prefixes(root, rel).filter(|(_, p)| p.len() < rel.len()) {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Refusal::Symlink(shown.to_owned()));
            }
            Ok(m) if !m.is_dir() => return Err(Refusal::NotDirectory(shown.to_owned())),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Refusal::io(shown, e)),
        }
    }
    Ok(true)
}

/// What is at a repo-relative path, looked at without following a link or opening
/// anything: how the module tree tells a file that cargo builds but the walk did not list
/// (an ignore file hid it) from one it cannot read (a link on the way, a FIFO).
#[derive(Debug)]
pub enum Probe {
    /// Nothing there (or a file where a folder on the way should be): cargo finds no
    /// file either.
    Missing,
    /// A regular file reached through real directories inside the root.
    File,
    /// Something cargo would read that scaffold does not: a symlink (the path itself or
    /// a folder on the way), a FIFO, a device or a folder in a file's place.
    Refused(Refusal),
}

/// Looks at the repo-relative path `rel` (see [`Probe`]).
pub fn probe(root: &Path, rel: &str) -> Probe {
    if climbs(rel) {
        return Probe::Refused(Refusal::Climbs(rel.to_owned()));
    }
    // One look at the path first: nothing there, even through a link, is nothing cargo
    // finds either (the common answer, for a target or a module that does not exist);
    // only what is there has its folders looked at one by one.
    let meta = match std::fs::symlink_metadata(root.join(rel)) {
        Ok(m) => m,
        Err(e) if gone(&e) => return Probe::Missing,
        Err(e) => return Probe::Refused(Refusal::io(rel, e)),
    };
    match real_parents(root, rel) {
        Ok(true) => {}
        Ok(false) | Err(Refusal::NotDirectory(_)) => return Probe::Missing,
        Err(r) => return Probe::Refused(r),
    }
    if meta.file_type().is_symlink() {
        Probe::Refused(Refusal::Symlink(rel.to_owned()))
    } else if meta.is_file() {
        Probe::File
    } else {
        Probe::Refused(Refusal::NotRegular(rel.to_owned()))
    }
}

/// Whether a lookup failed because nothing is there: no such entry, or a file where a
/// folder on the way should be.
fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory
}

/// What a folder listed by [`list_dir`] holds: each entry's name and whether it is a
/// regular file, a real folder, or something else (a symlink, a FIFO), as the folder
/// says (no entry is looked up or followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Other,
}

/// The entries of the repo-relative folder `rel`, sorted by name: `None` when there is no
/// such folder; a refusal when it is reached through a symlink, is one, or is not a
/// folder. Names that are not UTF-8 are left out (cargo cannot build such a file). At most
/// `limit` entries: past it, a refusal.
pub fn list_dir(
    root: &Path,
    rel: &str,
    limit: usize,
) -> Result<Option<Vec<(String, EntryKind)>>, Refusal> {
    if !probe_dir(root, rel)? {
        return Ok(None);
    }
    let read = std::fs::read_dir(root.join(rel)).map_err(|e| Refusal::io(rel, e))?;
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| Refusal::io(rel, e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let kind = match entry.file_type() {
            Ok(t) if t.is_file() => EntryKind::File,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            _ => EntryKind::Other,
        };
        out.push((name, kind));
        if out.len() > limit {
            return Err(Refusal::TooLarge {
                path: rel.to_owned(),
                limit: limit as u64,
            });
        }
    }
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Some(out))
}

/// Whether the repo-relative folder `rel` exists as a real folder reached through real
/// ones (`Ok(false)`: it does not exist).
fn probe_dir(root: &Path, rel: &str) -> Result<bool, Refusal> {
    if climbs(rel) {
        return Err(Refusal::Climbs(rel.to_owned()));
    }
    if rel.is_empty() {
        return Ok(true);
    }
    // As in [`probe`]: one look first, the folders on the way only for what is there.
    let meta = match std::fs::symlink_metadata(root.join(rel)) {
        Ok(m) => m,
        Err(e) if gone(&e) => return Ok(false),
        Err(e) => return Err(Refusal::io(rel, e)),
    };
    match real_parents(root, rel) {
        Ok(true) => {}
        Ok(false) | Err(Refusal::NotDirectory(_)) => return Ok(false),
        Err(r) => return Err(r),
    }
    if meta.file_type().is_symlink() {
        Err(Refusal::Symlink(rel.to_owned()))
    } else {
        Ok(meta.is_dir())
    }
}

/// Reads the repo-relative file `rel` as text (invalid UTF-8 replaced): `None` when it does
/// not exist; a refusal when it is reached through a symlink, is one, is not a regular
/// file (a FIFO, a device, a directory) or holds more than `limit` bytes.
pub fn read_text(root: &Path, rel: &str, limit: u64) -> Result<Option<String>, Refusal> {
    Ok(
        read_bytes(root, rel, limit)?.map(|bytes| match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }),
    )
}

/// [`read_text`]'s bytes.
pub fn read_bytes(root: &Path, rel: &str, limit: u64) -> Result<Option<Vec<u8>>, Refusal> {
    if climbs(rel) {
        return Err(Refusal::Climbs(rel.to_owned()));
    }
    if !real_parents(root, rel)? {
        return Ok(None);
    }
    let path = root.join(rel);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return Err(Refusal::Symlink(rel.to_owned())),
        Ok(m) if !m.is_file() => return Err(Refusal::NotRegular(rel.to_owned())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Refusal::io(rel, e)),
    }
    // Opened without following a link and without blocking, then checked again on the
    // open file: a swap between the check and the open cannot slip a link or a FIFO in.
    let file = open_no_follow(&path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => Refusal::Symlink(rel.to_owned()),
        _ => Refusal::io(rel, e),
    })?;
    let meta = file.metadata().map_err(|e| Refusal::io(rel, e))?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular(rel.to_owned()));
    }
    if names(&meta) > 1 {
        return Err(Refusal::HardLinked(rel.to_owned()));
    }
    if meta.len() > limit {
        return Err(Refusal::TooLarge {
            path: rel.to_owned(),
            limit,
        });
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::io(rel, e))?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge {
            path: rel.to_owned(),
            limit,
        });
    }
    Ok(Some(bytes))
}

/// A file rustup, cargo or rustfmt would read for a run inside `root` (a toolchain file, a
/// rustfmt config, in the root or a folder above it) that is not a regular file: a FIFO
/// there would hang them. Looked at only (its kind), never opened.
pub fn blocking_tool_config(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .flat_map(|dir| {
            [
                "rust-toolchain.toml",
                "rust-toolchain",
                "rustfmt.toml",
                ".rustfmt.toml",
            ]
            .map(|name| dir.join(name))
        })
        .find(|path| std::fs::metadata(path).is_ok_and(|m| !m.is_file()))
}

/// How many names (hard links) a file has.
#[cfg(unix)]
pub fn names(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
pub fn names(_: &std::fs::Metadata) -> u64 {
    1
}

/// Whether the entry at `rel`, a symlink (or another non-folder a listing could not
/// type), leads to a folder (cargo's member glob takes only folders; the repository
/// model and the Rust-source walk refuse a link to one). Only the kind of what it leads
/// to is asked, never its content.
pub fn leads_to_dir(root: &Path, rel: &str) -> bool {
    std::fs::metadata(root.join(rel)).is_ok_and(|m| m.is_dir())
}

/// Whether the repo-relative file `rel` may be shown: a regular file (not a link) with
/// one name. A file the check read for its imports is shown only then.
pub fn showable(root: &Path, rel: &str) -> bool {
    !climbs(rel)
        && std::fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.is_file() && names(&m) == 1)
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// Refuses `rel` when it, or a directory on the way to it, is a symlink (missing parts are
/// fine: they will be created as real ones).
pub fn no_links(root: &Path, rel: &str) -> Result<(), Refusal> {
    if climbs(rel) {
        return Err(Refusal::Climbs(rel.to_owned()));
    }
    for (at, shown) in prefixes(root, rel) {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(Refusal::Symlink(shown.to_owned())),
            Ok(_) => {}
            // Missing from here on (created as real ones), or not a folder (the caller's
            // own open says so).
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// Creates the directory `rel` under `root` and its missing parents, one component at a
/// time; refuses (as an I/O error) any component that exists as a symlink or as anything
/// but a directory. Returns its path.
pub fn create_dirs(root: &Path, rel: &str) -> io::Result<PathBuf> {
    if climbs(rel) {
        return Err(io::Error::other(Refusal::Climbs(rel.to_owned())));
    }
    let refuse = |r: Refusal| Err(io::Error::other(r));
    for (at, shown) in prefixes(root, rel) {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return refuse(Refusal::Symlink(shown.into())),
            Ok(m) if !m.is_dir() => return refuse(Refusal::NotDirectory(shown.into())),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => match std::fs::create_dir(&at) {
                Ok(()) => {}
                // Another process made it in the meantime: it must be a real folder too.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let m = std::fs::symlink_metadata(&at)?;
                    if !m.is_dir() || m.file_type().is_symlink() {
                        return refuse(Refusal::Symlink(shown.into()));
                    }
                }
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
    Ok(prefixes(root, rel)
        .last()
        .map_or_else(|| root.to_path_buf(), |(at, _)| at))
}

/// Replaces the repo-relative file `rel` with `bytes`: a uniquely named temp file in its
/// folder (created with [`create_dirs`]) renamed over it. A rename replaces a symlink at
/// `rel` itself, never its target, so nothing outside the root is written.
pub fn replace_file(root: &Path, rel: &str, bytes: &[u8]) -> io::Result<()> {
    let (dir, _) = rel.rsplit_once('/').unwrap_or(("", rel));
    let dir = create_dirs(root, dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".scaffold-write")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(root.join(rel)).map(|_| ()).map_err(|e| e.error)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn reads_only_real_files_inside() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret"), "TOKEN=1").expect("write");
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        std::fs::create_dir(r.join("agent")).expect("mkdir");
        std::fs::write(r.join("agent/ok.yml"), "a: 1").expect("write");
        symlink(outside.path().join("secret"), r.join("agent/link.yml")).expect("link");
        symlink(outside.path(), r.join("linked")).expect("link");
        assert_eq!(
            read_text(r, "agent/ok.yml", 100).expect("ok").as_deref(),
            Some("a: 1")
        );
        assert!(matches!(
            read_text(r, "agent/link.yml", 100),
            Err(Refusal::Symlink(_))
        ));
        assert!(
            matches!(read_text(r, "linked/secret", 100), Err(Refusal::Symlink(p)) if p == "linked")
        );
        assert!(matches!(
            read_text(r, "agent", 100),
            Err(Refusal::NotRegular(_))
        ));
        assert!(matches!(read_text(r, "../x", 100), Err(Refusal::Climbs(_))));
        let absolute = outside.path().join("secret");
        let absolute = absolute.to_str().expect("UTF-8 temp path");
        assert!(matches!(
            read_text(r, absolute, 100),
            Err(Refusal::Climbs(_))
        ));
        assert!(matches!(
            read_text(r, "agent/ok.yml", 2),
            Err(Refusal::TooLarge { .. })
        ));
        assert!(
            read_text(r, "agent/missing.yml", 100)
                .expect("missing")
                .is_none()
        );
        assert!(
            read_text(r, "nowhere/missing.yml", 100)
                .expect("missing")
                .is_none()
        );
        for refusal in [
            read_text(r, "agent/link.yml", 100),
            read_text(r, "linked/secret", 100),
        ] {
            let said = refusal.expect_err("refused").to_string();
            assert!(!said.contains("TOKEN"), "{said}");
        }
    }

    #[test]
    fn writes_never_go_through_a_link() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("target"), "theirs").expect("write");
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        std::fs::create_dir_all(r.join(".scaffold/cache")).expect("mkdir");
        symlink(outside.path().join("target"), r.join(".scaffold/cache/TAG")).expect("link");
        symlink(
            outside.path().join("dangling"),
            r.join(".scaffold/cache/new"),
        )
        .expect("link");
        replace_file(r, ".scaffold/cache/TAG", b"ours").expect("replaced");
        replace_file(r, ".scaffold/cache/new", b"ours").expect("replaced");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("target")).expect("read"),
            "theirs"
        );
        assert!(!outside.path().join("dangling").exists());
        assert_eq!(
            std::fs::read_to_string(r.join(".scaffold/cache/TAG")).expect("read"),
            "ours"
        );

        let other = tempfile::tempdir().expect("tempdir");
        symlink(outside.path(), other.path().join(".scaffold")).expect("link");
        assert!(replace_file(other.path(), ".scaffold/cache/x", b"ours").is_err());
        assert!(create_dirs(other.path(), ".scaffold/cache").is_err());
        assert!(!outside.path().join("cache").exists());
    }
}
