//! A generator run as a transaction, safe against the process being killed at any point.
//!
//! A run takes the repository lock ([`super::lock`]) before it reads the tree, and works in
//! `.scaffold/txn/`: `begin.json` (who), scratch space (rustfmt's staging), then every new
//! file's bytes (`new/N`) and every replaced file's old bytes (`old/N`). Writing
//! `journal.json` (temp file, fsync, rename) is the commit point. Before it nothing in the
//! tree has changed; after it each staged file is renamed over its target, in order.
//!
//! The next scaffold command, whichever it is, takes the lock and finds what a killed run
//! left: no journal, and it removes the scratch folder (the tree was never touched); a
//! journal, and it finishes the renames (roll forward); a journal marked `abort` (the run
//! failed while renaming and was killed while undoing), and it puts back the old bytes
//! (roll back). Each step can be repeated, so a recovery that is itself killed is
//! recovered in turn. A journal whose files no longer match the tree (hashes of every
//! file before and after) is refused, never applied over someone's edits.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::GenerateError;
use super::lock::{self, RepoLock};
use crate::repo::inside;

/// The transaction folder, repo-relative.
pub const TXN_DIR: &str = ".scaffold/txn";

const BEGIN: &str = "begin.json";
const JOURNAL: &str = "journal.json";
const ABORT: &str = "abort";
const VERSION: u32 = 1;
/// The largest journal or planned file a recovery reads.
const LIMIT: u64 = 64 << 20;

/// Who started a transaction, and whether it made the repository's folder (`init` into
/// a new directory: undoing it removes the folder again).
#[derive(Debug, Serialize, Deserialize)]
struct Begin {
    version: u32,
    command: String,
    pid: u32,
    #[serde(default)]
    root_created: bool,
}

/// What a transaction will do once committed: its directories to create and its files, in
/// the order they are renamed into place.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Journal {
    version: u32,
    command: String,
    pid: u32,
    #[serde(default)]
    root_created: bool,
    pub(crate) dirs: Vec<String>,
    pub(crate) entries: Vec<Entry>,
}

/// One planned file: where its new bytes (and, when it replaces a file, the old ones)
/// wait inside the transaction folder, and the hashes of both.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) path: String,
    pub(crate) staged: String,
    pub(crate) backup: Option<String>,
    pub(crate) before: Option<String>,
    pub(crate) after: String,
}

/// What a command found and did about a run that was killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The interrupted command (`worker maintenance REINDEX`, …).
    pub command: String,
    pub pid: Option<u32>,
    pub outcome: Outcome,
    /// How many files it had planned (0 when it was killed before its commit point).
    pub files: usize,
    /// It had made the repository's folder, which is empty again after a roll back.
    pub root_created: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It had committed: its remaining files were written.
    Finished,
    /// It had not committed, or was undoing a failure: the tree is as it was before it.
    RolledBack,
}

/// A generator run holding the repository lock.
#[derive(Debug)]
pub struct Txn {
    root: PathBuf,
    dir: PathBuf,
    command: String,
    /// The run made the root folder (`init` into a new directory).
    root_created: bool,
    /// Whether `journal.json` is on disk (from then on the folder is left for recovery
    /// unless the commit finishes or undoes itself).
    journaled: bool,
    done: bool,
    lock: Option<RepoLock>,
    /// What this run recovered before it began.
    pub recovered: Option<Recovered>,
}

impl Txn {
    /// Locks the repository at `root` (making the folder first when `create_root`),
    /// recovers what a killed run left, and opens the transaction folder.
    pub fn begin(
        root: &Path,
        command: &str,
        create_root: bool,
        waiting: &mut dyn FnMut(&str),
    ) -> Result<Txn, GenerateError> {
        let mut root_created = false;
        if create_root {
            match fs::create_dir(root) {
                Ok(()) => root_created = true,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(GenerateError::io("create", root, e)),
            }
        }
        let lock = match refuse_tracked(root).and_then(|()| lock::acquire(root, command, waiting)) {
            Ok(lock) => lock,
            Err(e) => {
                if root_created {
                    remove_empty_root(root);
                }
                return Err(e);
            }
        };
        // Recovered before this run owns the folder: a journal recovery refuses stays on
        // disk for a person to look at.
        let recovered = recover_locked(root)?;
        // A killed `init` undone here leaves the folder it made: this run now owns it.
        let root_created = root_created
            || recovered
                .as_ref()
                .is_some_and(|r| r.root_created && r.outcome == Outcome::RolledBack);
        let txn = Txn {
            root: root.to_path_buf(),
            dir: root.join(TXN_DIR),
            command: command.to_owned(),
            root_created,
            journaled: false,
            done: false,
            lock: Some(lock),
            recovered,
        };
        inside::create_dirs(root, TXN_DIR).map_err(|e| GenerateError::io("create", &txn.dir, e))?;
        let begin = Begin {
            version: VERSION,
            command: command.to_owned(),
            pid: std::process::id(),
            root_created,
        };
        write_synced(&txn.dir.join(BEGIN), &to_json(&begin)?)?;
        Ok(txn)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A fresh, empty scratch folder `name` inside the transaction folder (removed with it,
    /// by this run or by the recovery after a kill).
    pub fn scratch(&self, name: &str) -> Result<PathBuf, GenerateError> {
        let dir = self.dir.join(name);
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| GenerateError::io("remove", &dir, e))?;
        }
        inside::create_dirs(&self.root, &format!("{TXN_DIR}/{name}"))
            .map_err(|e| GenerateError::io("create", &dir, e))
    }

    /// The transaction folder's path for a staged name (`new/3`).
    pub(crate) fn path(&self, staged: &str) -> PathBuf {
        self.dir.join(staged)
    }

    /// A journal for `entries`, the directories they need created first.
    pub(crate) fn journal(&self, dirs: Vec<String>, entries: Vec<Entry>) -> Journal {
        Journal {
            version: VERSION,
            command: self.command.clone(),
            pid: std::process::id(),
            root_created: self.root_created,
            dirs,
            entries,
        }
    }

    /// The commit point: `journal` made durable. From here a killed run is rolled forward.
    pub(crate) fn write_journal(&mut self, journal: &Journal) -> Result<(), GenerateError> {
        let tmp = self.dir.join("journal.json.tmp");
        write_synced(&tmp, &to_json(journal)?)?;
        let path = self.dir.join(JOURNAL);
        fs::rename(&tmp, &path).map_err(|e| GenerateError::io("write", &path, e))?;
        sync_dir(&self.dir);
        self.journaled = true;
        Ok(())
    }

    /// Renames every staged file into place; calls `fault` before each rename.
    pub(crate) fn roll_forward(
        &self,
        journal: &Journal,
        fault: &mut dyn FnMut(&str) -> io::Result<()>,
    ) -> Result<(), GenerateError> {
        forward(&self.root, &self.dir, journal, fault)
    }

    /// After a failure past the commit point: marks the journal aborted and puts the tree
    /// back, then ends the run as one that never committed (the folder goes, and the root
    /// when this run made it). When undoing fails too, the folder is left for the next run.
    pub(crate) fn undo(mut self, journal: &Journal) {
        let marked = write_synced(&self.dir.join(ABORT), b"").is_ok();
        if marked && back(&self.root, &self.dir, journal).is_ok() {
            // Undone: dropped as a run that never committed.
            self.journaled = false;
        }
    }

    /// Ends a run whose every file is in place: the transaction folder goes (its journal
    /// first, so a kill half-way through leaves nothing to redo), and the lock with it. A
    /// folder that cannot be removed is harmless: its journal, if still there, is finished
    /// again by the next run, which finds every file already renamed.
    pub(crate) fn finish(mut self) {
        self.done = true;
        let _ = discard(&self.dir);
    }

    /// Stops as a killed process would (for tests): everything stays on disk, and the lock
    /// file with it.
    #[cfg(test)]
    pub(crate) fn crash(&mut self) {
        self.done = true;
        if let Some(lock) = self.lock.take() {
            lock.leave_behind();
        }
    }
}

impl Drop for Txn {
    /// A run that stops before its commit point (an error, `--dry-run`) leaves the tree as
    /// it found it; one that stops after it leaves its journal for the next run.
    fn drop(&mut self) {
        if self.done || self.journaled {
            return;
        }
        let _ = discard(&self.dir);
        self.lock.take();
        if self.root_created {
            remove_empty_root(&self.root);
        }
    }
}

/// Recovers what a killed run left in the repository at `root`, if anything, taking the
/// lock to do it (so a live run is waited for, never undone). `None` when there was
/// nothing to do.
pub fn recover(
    root: &Path,
    command: &str,
    waiting: &mut dyn FnMut(&str),
) -> Result<Option<Recovered>, GenerateError> {
    let pending = fs::symlink_metadata(root.join(TXN_DIR)).is_ok();
    if !pending && !lock::stale_file(root) {
        return Ok(None);
    }
    refuse_tracked(root)?;
    let lock = match lock::acquire(root, command, waiting) {
        Ok(lock) => lock,
        // A lock file left behind in a tree this run may not write: nothing to recover.
        Err(GenerateError::Io { .. }) if !pending => return Ok(None),
        Err(e) => return Err(e),
    };
    let recovered = recover_locked(root);
    drop(lock);
    if let Ok(Some(r)) = &recovered
        && r.root_created
        && r.outcome == Outcome::RolledBack
    {
        remove_empty_root(root);
    }
    recovered
}

/// For the commands that never write the tree (`check`, `gates`, `hook install`, named by
/// `this`): waits while a live generator run holds the lock, then refuses to go on over a
/// journal a killed run left (the tree may be half written), naming what finishes or
/// undoes it. Writes nothing: no lock file, no folder, no recovery. A transaction folder
/// without a journal is a run killed before its commit point, which changed nothing.
pub fn refuse_pending(
    root: &Path,
    this: &str,
    waiting: &mut dyn FnMut(&str),
) -> Result<(), GenerateError> {
    lock::wait_free(root, waiting)?;
    if fs::symlink_metadata(root.join(TXN_DIR)).is_err() {
        return Ok(());
    }
    refuse_tracked(root)?;
    let rel = format!("{TXN_DIR}/{JOURNAL}");
    match inside::probe(root, &rel) {
        inside::Probe::Missing => Ok(()),
        inside::Probe::Refused(r) => Err(GenerateError::Journal {
            command: "?".to_owned(),
            reason: r.to_string(),
        }),
        inside::Probe::File => {
            let command = read_json::<Journal>(root, JOURNAL)
                .ok()
                .flatten()
                .map_or_else(|| "?".to_owned(), |j| j.command);
            Err(GenerateError::JournalPending {
                command,
                this: this.to_owned(),
            })
        }
    }
}

/// Refuses a transaction folder git tracks: it came with a commit (a pull request can
/// commit one), not from a run killed here, and applying it would write what it names.
/// Outside a git work tree, or without git, nothing is tracked.
fn refuse_tracked(root: &Path) -> Result<(), GenerateError> {
    use crate::changes::GitError;
    if fs::symlink_metadata(root.join(TXN_DIR)).is_err() {
        return Ok(());
    }
    match crate::changes::git(root, &["ls-files", "-z", "--cached", "--", TXN_DIR]) {
        Ok(out) if out.is_empty() => Ok(()),
        Ok(_) => Err(GenerateError::JournalTracked),
        Err(GitError::Spawn(_)) => Ok(()),
        Err(GitError::Failed { stderr, .. }) if stderr.contains("not a git repository") => Ok(()),
        Err(e) => Err(GenerateError::Journal {
            command: "?".to_owned(),
            reason: format!("git cannot say whether {TXN_DIR} is tracked: {e}"),
        }),
    }
}

/// [`recover`] with the lock held.
fn recover_locked(root: &Path) -> Result<Option<Recovered>, GenerateError> {
    let dir = root.join(TXN_DIR);
    if fs::symlink_metadata(&dir).is_err() {
        return Ok(None);
    }
    let refused = |reason: String| GenerateError::Journal {
        command: "?".to_owned(),
        reason,
    };
    inside::no_links(root, TXN_DIR).map_err(|r| refused(r.to_string()))?;
    if !dir.is_dir() {
        return Err(refused(format!("{TXN_DIR} is not a directory")));
    }
    let begin: Option<Begin> = read_json(root, BEGIN).ok().flatten();
    let journal: Option<Journal> = read_json(root, JOURNAL).map_err(refused)?;
    let (command, pid) = match (&journal, &begin) {
        (Some(j), _) => (j.command.clone(), Some(j.pid)),
        (None, Some(b)) => (b.command.clone(), Some(b.pid)),
        (None, None) => ("?".to_owned(), None),
    };
    let fail = |reason: String| GenerateError::Journal {
        command: command.clone(),
        reason,
    };
    let root_created = journal.as_ref().map_or_else(
        || begin.as_ref().is_some_and(|b| b.root_created),
        |j| j.root_created,
    );
    let (outcome, files) = match &journal {
        None => (Outcome::RolledBack, 0),
        Some(j) => {
            validate(root, j).map_err(fail)?;
            if dir.join(ABORT).exists() {
                back(root, &dir, j)?;
                (Outcome::RolledBack, j.entries.len())
            } else {
                forward(root, &dir, j, &mut |_| Ok(()))?;
                (Outcome::Finished, j.entries.len())
            }
        }
    };
    discard(&dir).map_err(|e| GenerateError::io("remove", &dir, e))?;
    Ok(Some(Recovered {
        command,
        pid,
        outcome,
        files,
        root_created,
    }))
}

/// A journal's paths stay inside the root, outside `.git/` (a planted hook would run) and
/// `.scaffold/` (scaffold's own), and its staged names are its own. (A journal is read
/// from the tree, and a pull request can commit one.)
fn validate(root: &Path, j: &Journal) -> Result<(), String> {
    if j.version != VERSION {
        return Err(format!("journal version {} is not {VERSION}", j.version));
    }
    let staged_name = |s: &str, prefix: &str| {
        s.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.len() < 10 && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut paths = std::collections::HashSet::new();
    if let Some(twice) = j.entries.iter().find(|e| !paths.insert(e.path.as_str())) {
        return Err(format!("`{}` is listed twice", twice.path));
    }
    for path in j.dirs.iter().chain(j.entries.iter().map(|e| &e.path)) {
        super::plan::check_relative(path).map_err(|e| e.to_string())?;
        if path
            .split('/')
            .any(|c| c.eq_ignore_ascii_case(".git") || c.eq_ignore_ascii_case(".scaffold"))
        {
            return Err(format!("`{path}` is not a file scaffold generates"));
        }
    }
    for e in &j.entries {
        let backup_ok = match &e.backup {
            None => e.before.is_none(),
            Some(b) => staged_name(b, "old/") && e.before.is_some(),
        };
        if !staged_name(&e.staged, "new/") || !backup_ok {
            return Err(format!("entry for `{}` is malformed", e.path));
        }
        for staged in std::iter::once(&e.staged).chain(&e.backup) {
            let rel = format!("{TXN_DIR}/{staged}");
            inside::no_links(root, &rel).map_err(|r| r.to_string())?;
            if fs::symlink_metadata(root.join(&rel)).is_ok_and(|m| !m.is_file()) {
                return Err(format!("{rel} is not a regular file"));
            }
        }
    }
    Ok(())
}

/// Rolls forward: creates the journal's directories, then renames each file still staged
/// over its target, which must still hold what it held when the run planned it.
fn forward(
    root: &Path,
    dir: &Path,
    j: &Journal,
    fault: &mut dyn FnMut(&str) -> io::Result<()>,
) -> Result<(), GenerateError> {
    let changed = |path: &str| GenerateError::Journal {
        command: j.command.clone(),
        reason: format!("{path} changed since the run planned it"),
    };
    // Every entry is checked before anything is made: a journal refused part way must not
    // have created its folders first.
    let mut todo = Vec::with_capacity(j.entries.len());
    for e in &j.entries {
        let now = hash_of(root, &e.path)?;
        let staged = dir.join(&e.staged);
        if fs::symlink_metadata(&staged).is_ok() {
            if now != e.before {
                return Err(changed(&e.path));
            }
            let staged_rel = format!("{TXN_DIR}/{}", e.staged);
            if hash_of(root, &staged_rel)?.as_deref() != Some(e.after.as_str()) {
                return Err(GenerateError::Journal {
                    command: j.command.clone(),
                    reason: format!("{staged_rel} does not hold what the journal says"),
                });
            }
            inside::no_links(root, &e.path).map_err(|reason| GenerateError::Refused {
                path: e.path.clone(),
                reason,
            })?;
            todo.push((e, staged));
        } else if now.as_deref() != Some(e.after.as_str()) {
            return Err(changed(&e.path));
        }
    }
    for d in &j.dirs {
        inside::create_dirs(root, d).map_err(|e| GenerateError::io("create", root.join(d), e))?;
    }
    for (e, staged) in todo {
        let target = root.join(&e.path);
        if hash_of(root, &e.path)? != e.before {
            return Err(changed(&e.path));
        }
        fault(&e.path).map_err(|err| GenerateError::io("replace", &target, err))?;
        inside::no_links(root, &e.path).map_err(|reason| GenerateError::Refused {
            path: e.path.clone(),
            reason,
        })?;
        fs::rename(&staged, &target).map_err(|err| GenerateError::io("replace", &target, err))?;
    }
    Ok(())
}

/// Rolls back: every file already renamed gets its old bytes back (or goes, when the run
/// created it), last first, then the directories the run created.
fn back(root: &Path, dir: &Path, j: &Journal) -> Result<(), GenerateError> {
    let changed = |path: &str| GenerateError::Journal {
        command: j.command.clone(),
        reason: format!("{path} changed since the run wrote it"),
    };
    for e in j.entries.iter().rev() {
        if fs::symlink_metadata(dir.join(&e.staged)).is_ok() {
            continue; // never renamed
        }
        let target = root.join(&e.path);
        let now = hash_of(root, &e.path)?;
        match &e.backup {
            Some(backup) => {
                let backup = dir.join(backup);
                if fs::symlink_metadata(&backup).is_err() {
                    continue; // put back already
                }
                if now.as_deref() != Some(e.after.as_str()) {
                    return Err(changed(&e.path));
                }
                fs::rename(&backup, &target)
                    .map_err(|err| GenerateError::io("restore", &target, err))?;
            }
            None => match now {
                None => {} // removed already
                Some(h) if h == e.after => {
                    fs::remove_file(&target)
                        .map_err(|err| GenerateError::io("remove", &target, err))?;
                }
                Some(_) => return Err(changed(&e.path)),
            },
        }
    }
    for d in j.dirs.iter().rev() {
        if inside::no_links(root, d).is_ok() {
            let _ = fs::remove_dir(root.join(d));
        }
    }
    Ok(())
}

/// Removes a transaction folder, its journal first (made durable), so that a kill part
/// way through leaves a folder with no journal: nothing the next run would redo or undo.
///
/// A killed run's `rustfmt` outlives it (a SIGKILL reaches no child) and may still be
/// rewriting its staged copies while the folder goes: a file it writes back between
/// `remove_dir_all`'s unlink and its `rmdir` fails the removal with "directory not empty".
/// Such a writer ends within one rustfmt run, and once its folder is gone it cannot make
/// it again (rustfmt creates no folders), so the removal is retried, for up to two seconds.
fn discard(dir: &Path) -> io::Result<()> {
    match fs::remove_file(dir.join(JOURNAL)) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut tries = 0;
    loop {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && tries > 0 => return Ok(()),
            other => return other,
        }
    }
}

/// Removes the folder a run made for a new repository (`init`), once nothing but an empty
/// `.scaffold/` is left in it; a folder holding anything else stays.
fn remove_empty_root(root: &Path) {
    let _ = fs::remove_dir(root.join(".scaffold"));
    let _ = fs::remove_dir(root);
}

/// The hash of the repo-relative file `rel`, `None` when it does not exist.
fn hash_of(root: &Path, rel: &str) -> Result<Option<String>, GenerateError> {
    inside::read_bytes(root, rel, LIMIT)
        .map(|b| b.map(|b| hash(&b)))
        .map_err(|reason| GenerateError::Refused {
            path: rel.to_owned(),
            reason,
        })
}

/// What the journal records of a file's bytes (a change detector, not a signature).
pub(crate) fn hash(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

fn read_json<T: serde::de::DeserializeOwned>(root: &Path, name: &str) -> Result<Option<T>, String> {
    let rel = format!("{TXN_DIR}/{name}");
    match inside::read_text(root, &rel, LIMIT) {
        Ok(None) => Ok(None),
        Ok(Some(text)) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{rel} cannot be read: {e}")),
        Err(r) => Err(r.to_string()),
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, GenerateError> {
    serde_json::to_vec_pretty(value)
        .map_err(|e| GenerateError::io("write", TXN_DIR, io::Error::other(e)))
}

/// Writes a new file and makes it durable.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), GenerateError> {
    let write = || -> io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        io::Write::write_all(&mut f, bytes)?;
        f.sync_all()
    };
    write().map_err(|e| GenerateError::io("write", path, e))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A killed run's rustfmt keeps rewriting its staged copies while recovery removes the
    /// folder (seen in CI as "cannot remove .scaffold/txn: Directory not empty"): the
    /// removal outlasts such a writer.
    #[test]
    fn a_folder_a_late_writer_still_fills_is_removed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for round in 0..20 {
            let dir = tmp.path().join(format!("txn-{round}"));
            let fmt = dir.join("fmt-1/src");
            fs::create_dir_all(&fmt).expect("mkdir");
            let files: Vec<_> = (0..50).map(|i| fmt.join(format!("{i}.rs"))).collect();
            for f in &files {
                fs::write(f, b"fn main() {}\n").expect("write");
            }
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writer = {
                let (stop, files) = (stop.clone(), files.clone());
                std::thread::spawn(move || {
                    // As rustfmt does: each file written back whole, its folder never made.
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for f in &files {
                            let _ = fs::write(f, b"fn main() {}\n");
                        }
                    }
                })
            };
            std::thread::sleep(std::time::Duration::from_millis(2));
            let stopper = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                })
            };
            discard(&dir).expect("the folder goes");
            stopper.join().expect("joins");
            writer.join().expect("joins");
            assert!(!dir.exists(), "round {round}");
        }
    }
}
