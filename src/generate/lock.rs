//! One writer at a time per repository. A generator command holds `.scaffold/lock` (an
//! advisory `flock`, released by the kernel when the process dies, however it dies) from
//! before it reads the tree until its last rename, so two runs cannot plan from the same
//! tree and lose each other's registrations. The file names its holder, which a waiting
//! run shows; it exists only while held (a holder unlinks it before unlocking, and a
//! waiter that locks an unlinked file tries again), and so does an empty `.scaffold/`, so
//! a finished run leaves no trace.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::FileExt;

use super::error::GenerateError;
use crate::repo::inside;

/// The lock file, repo-relative.
pub const LOCK_PATH: &str = ".scaffold/lock";

/// How long a run waits for another to finish, unless `SCAFFOLD_LOCK_TIMEOUT` (seconds)
/// says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How often a waiting run tries again.
const POLL: Duration = Duration::from_millis(25);

/// The most of a holder's note a waiter reads.
const NOTE_LIMIT: u64 = 4096;

/// The repository lock, held until dropped.
#[derive(Debug)]
pub struct RepoLock {
    file: File,
    path: PathBuf,
    root: PathBuf,
    /// Unlink the file on release (always, but in tests that play a killed run).
    unlink: bool,
}

/// Takes the lock of the repository at `root` for `command` (shown to other runs),
/// waiting while another run holds it; `waiting` is called once, with the holder's note,
/// when it has to wait.
pub fn acquire(
    root: &Path,
    command: &str,
    waiting: &mut dyn FnMut(&str),
) -> Result<RepoLock, GenerateError> {
    let timeout = timeout()?;
    let started = Instant::now();
    let mut told = false;
    let mut retries = 0u32;
    loop {
        // A file unlinked under us, or `.scaffold/` removed, is tried again, but not for
        // ever (something keeps removing them).
        if retries > 0 {
            if started.elapsed() >= timeout {
                return Err(GenerateError::Locked {
                    holder: "a run that keeps removing .scaffold/lock".to_owned(),
                    waited: timeout.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        retries += 1;
        inside::create_dirs(root, ".scaffold")
            .map_err(|e| GenerateError::io("create", root.join(".scaffold"), e))?;
        let path = root.join(LOCK_PATH);
        let (mut file, created) = match open(&path) {
            Ok(f) => f,
            // The holder removed `.scaffold/` as it finished: make it again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(GenerateError::io("lock", &path, e)),
        };
        match FileExt::try_lock(&file) {
            Ok(()) => {
                if !still_linked(&file, &path) {
                    // Locked a file its holder had already unlinked: take the new one.
                    continue;
                }
                if !created {
                    // A lock file a killed run left (or one planted there): its name goes,
                    // its content is never touched, and the next try makes a new one.
                    std::fs::remove_file(&path)
                        .map_err(|e| GenerateError::io("remove", &path, e))?;
                    let _ = FileExt::unlock(&file);
                    continue;
                }
                let note = format!("pid {}: scaffold {command}\n", std::process::id());
                file.write_all(note.as_bytes())
                    .map_err(|e| GenerateError::io("write", &path, e))?;
                return Ok(RepoLock {
                    file,
                    path,
                    root: root.to_path_buf(),
                    unlink: true,
                });
            }
            Err(fs4::TryLockError::WouldBlock) => {
                let holder = holder(&mut file);
                if started.elapsed() >= timeout {
                    return Err(GenerateError::Locked {
                        holder,
                        waited: timeout.as_secs(),
                    });
                }
                if !told {
                    waiting(&holder);
                    told = true;
                }
                std::thread::sleep(POLL);
            }
            Err(fs4::TryLockError::Error(e)) => return Err(GenerateError::io("lock", &path, e)),
        }
    }
}

/// Whether a lock file is left on disk (by a run that was killed).
pub fn stale_file(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(LOCK_PATH)).is_ok()
}

fn timeout() -> Result<Duration, GenerateError> {
    match std::env::var("SCAFFOLD_LOCK_TIMEOUT") {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| *s <= 86_400)
            .map(Duration::from_secs)
            .ok_or(GenerateError::LockTimeout { value: v }),
    }
}

/// Opens the lock file read-write: a new one it creates (`true`), else the one there;
/// never through a symlink, never anything but a regular file (a FIFO would block the open
/// or the note's read), never a file with a second name (a hard link to a file elsewhere:
/// a write would land there). Nothing is truncated: only a file this run created is
/// written to.
fn open(path: &Path) -> io::Result<(File, bool)> {
    let with = |create: bool| {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true);
        if create {
            opts.create_new(true);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        opts.open(path)
    };
    let (file, created) = match with(true) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (with(false)?, false),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "{LOCK_PATH} is not a regular file"
        )));
    }
    if links(&meta) > 1 {
        return Err(io::Error::other(format!(
            "{LOCK_PATH} has {} names (a hard link): scaffold writes only a lock file of its own",
            links(&meta)
        )));
    }
    Ok((file, created))
}

/// How many names a file has.
#[cfg(unix)]
fn links(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links(_: &std::fs::Metadata) -> u64 {
    1
}

/// Waits while a live generator run holds the lock, creating and writing nothing: for the
/// commands that only read the tree (`check`, `gates`, `hook install`), so they never read
/// it half written. A lock file nobody holds (a killed run's) is left as it is.
pub fn wait_free(root: &Path, waiting: &mut dyn FnMut(&str)) -> Result<(), GenerateError> {
    let path = root.join(LOCK_PATH);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(());
    }
    let timeout = timeout()?;
    let started = Instant::now();
    let mut told = false;
    loop {
        let mut opts = OpenOptions::new();
        opts.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        // Gone, a link, a FIFO: no live run holds it (a run locks only a regular file).
        let Ok(mut file) = opts.open(&path) else {
            return Ok(());
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        match FileExt::try_lock_shared(&file) {
            Ok(()) => {
                let _ = FileExt::unlock(&file);
                return Ok(());
            }
            Err(fs4::TryLockError::WouldBlock) => {
                let holder = holder(&mut file);
                if started.elapsed() >= timeout {
                    return Err(GenerateError::Locked {
                        holder,
                        waited: timeout.as_secs(),
                    });
                }
                if !told {
                    waiting(&holder);
                    told = true;
                }
                std::thread::sleep(POLL);
            }
            Err(fs4::TryLockError::Error(e)) => return Err(GenerateError::io("lock", &path, e)),
        }
    }
}

#[cfg(unix)]
fn still_linked(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_linked(_: &File, path: &Path) -> bool {
    path.is_file()
}

/// The holder's note, or a placeholder while it is being written.
fn holder(file: &mut File) -> String {
    let mut note = String::new();
    let _ = file.rewind();
    let _ = file.take(NOTE_LIMIT).read_to_string(&mut note);
    let note: String = note
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if note.is_empty() {
        "another scaffold run".to_owned()
    } else {
        note
    }
}

impl RepoLock {
    /// Releases the lock as the kernel does for a killed process: the file stays.
    #[cfg(test)]
    pub(crate) fn leave_behind(mut self) {
        self.unlink = false;
    }
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        if !self.unlink {
            let _ = FileExt::unlock(&self.file);
            return;
        }
        // Unlink first: a waiter that then locks this file sees it unlinked and retries.
        let _ = std::fs::remove_file(&self.path);
        let _ = FileExt::unlock(&self.file);
        // An empty `.scaffold/` is nothing git or the checker sees; a run leaves none.
        let _ = std::fs::remove_dir(self.root.join(".scaffold"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_waits_and_names_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = acquire(dir.path(), "worker a A", &mut |_| {}).expect("first");
        let (tx, rx) = std::sync::mpsc::channel();
        let root = dir.path().to_path_buf();
        let second = std::thread::spawn(move || {
            acquire(&root, "worker b B", &mut |holder| {
                let _ = tx.send(holder.to_owned());
            })
            .map(|_| ())
        });
        let holder = rx.recv().expect("told to wait");
        assert!(holder.contains("scaffold worker a A"), "{holder}");
        drop(first);
        second.join().expect("joins").expect("second takes it");
        assert!(
            !dir.path().join(LOCK_PATH).exists(),
            "lock file left behind"
        );
        assert!(
            !dir.path().join(".scaffold").exists(),
            ".scaffold left behind"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let outside = tempfile::tempdir().expect("tempdir");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(".scaffold")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path().join("target"), dir.path().join(LOCK_PATH))
            .expect("link");
        let err = acquire(dir.path(), "worker", &mut |_| {}).expect_err("refused");
        assert!(matches!(err, GenerateError::Io { .. }), "{err:?}");
        assert!(
            !outside.path().join("target").exists(),
            "wrote through the link"
        );
    }
}
