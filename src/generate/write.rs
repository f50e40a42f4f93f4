//! Commits a validated plan through the run's transaction ([`super::txn`]): every new
//! file's bytes, and every replaced file's old bytes, are staged in `.scaffold/txn/`, the
//! journal is written, then each staged file is renamed over its target. A failure before
//! the journal leaves the tree untouched; one after it puts back what was there (changed
//! files get their old bytes, created files and directories go), so the tree is
//! byte-identical to before the command; a kill anywhere is finished or undone by the
//! next scaffold command.

use std::fs;
use std::io;
use std::path::Path;

use super::error::GenerateError;
use super::plan::Plan;
use super::txn::{self, Entry, Txn};

/// Writes `plan` to disk, all or nothing, and ends the transaction.
pub fn commit(txn: Txn, plan: &Plan) -> Result<(), GenerateError> {
    commit_with(txn, plan, &mut |_| Ok(()))
}

/// The steps a commit takes, for fault injection in tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    Stage(&'a str),
    Journal,
    Rename(&'a str),
}

/// What an injected fault does at a step.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The step fails with this error.
    #[cfg_attr(not(test), allow(dead_code))]
    Fail(io::Error),
    /// The process dies here, leaving everything on disk.
    #[cfg(test)]
    Crash,
}

/// [`commit`], calling `fault` before each step.
pub(crate) fn commit_with(
    mut txn: Txn,
    plan: &Plan,
    fault: &mut dyn FnMut(Step<'_>) -> Result<(), Fault>,
) -> Result<(), GenerateError> {
    let root = plan.root();
    preflight(plan)?;
    let mut dirs: Vec<String> = Vec::new();
    let mut entries = Vec::new();
    for (i, (rel, file)) in plan
        .files()
        .filter(|(_, f)| f.before.as_ref() != Some(&f.after))
        .enumerate()
    {
        let target = root.join(rel);
        injected(fault(Step::Stage(rel)), &mut txn, &target)?;
        let perms = match &file.before {
            Some(_) => Some(
                fs::metadata(&target)
                    .map_err(|e| GenerateError::io("read", &target, e))?
                    .permissions(),
            ),
            None => None,
        };
        let staged = format!("new/{i}");
        stage(&txn, &staged, &file.after, perms.clone(), file.executable)?;
        let backup = match &file.before {
            Some(before) => {
                let name = format!("old/{i}");
                stage(&txn, &name, before, perms, false)?;
                Some(name)
            }
            None => None,
        };
        for dir in parents(rel) {
            if root.join(dir).symlink_metadata().is_err() && !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_owned());
            }
        }
        entries.push(Entry {
            path: rel.clone(),
            staged,
            backup,
            before: file.before.as_deref().map(txn::hash),
            after: txn::hash(&file.after),
        });
    }
    let journal = txn.journal(dirs, entries);
    injected(fault(Step::Journal), &mut txn, &root.join(txn::TXN_DIR))?;
    txn.write_journal(&journal)?;
    let crashed = std::cell::Cell::new(false);
    let applied = txn.roll_forward(&journal, &mut |rel| match fault(Step::Rename(rel)) {
        Ok(()) => Ok(()),
        Err(Fault::Fail(e)) => Err(e),
        #[cfg(test)]
        Err(Fault::Crash) => {
            crashed.set(true);
            Err(io::Error::other("crashed"))
        }
    });
    match applied {
        Ok(()) => {
            txn.finish();
            Ok(())
        }
        Err(e) if crashed.get() => {
            #[cfg(test)]
            txn.crash();
            Err(e)
        }
        Err(e) => {
            txn.undo(&journal);
            Err(e)
        }
    }
}

/// Applies an injected fault to the step about `at`.
fn injected(r: Result<(), Fault>, txn: &mut Txn, at: &Path) -> Result<(), GenerateError> {
    let _ = &txn;
    match r {
        Ok(()) => Ok(()),
        Err(Fault::Fail(e)) => Err(GenerateError::io("write", at, e)),
        #[cfg(test)]
        Err(Fault::Crash) => {
            txn.crash();
            Err(GenerateError::io("write", at, io::Error::other("crashed")))
        }
    }
}

/// Each parent directory of `rel`, outermost first (`a`, `a/b` for `a/b/c.rs`).
fn parents(rel: &str) -> impl Iterator<Item = &str> {
    rel.match_indices('/').map(move |(i, _)| &rel[..i])
}

/// Stages `bytes` as `name` in the transaction folder, with the permissions its target
/// will have.
fn stage(
    txn: &Txn,
    name: &str,
    bytes: &[u8],
    perms: Option<fs::Permissions>,
    executable: bool,
) -> Result<(), GenerateError> {
    let path = txn.path(name);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| GenerateError::io("create", dir, e))?;
    }
    txn::write_synced(&path, bytes)?;
    let set = match perms {
        Some(perms) => fs::set_permissions(&path, perms),
        None if executable => set_executable(&path),
        None => Ok(()),
    };
    set.map_err(|e| GenerateError::io("write", &path, e))
}

/// Refuses symlinks on the way to any planned file, and read-only files it would change,
/// before anything is written.
fn preflight(plan: &Plan) -> Result<(), GenerateError> {
    let root = plan.root();
    for (rel, file) in plan.files() {
        let mut at = root.to_path_buf();
        for component in rel.split('/') {
            at.push(component);
            match at.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(GenerateError::PathEscapes { path: rel.clone() });
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if let Some(before) = &file.before {
            let abs = root.join(rel);
            let meta = fs::metadata(&abs).map_err(|e| GenerateError::io("read", &abs, e))?;
            if meta.permissions().readonly() {
                return Err(GenerateError::ReadOnly { path: rel.clone() });
            }
            let now = fs::read(&abs).map_err(|e| GenerateError::io("read", &abs, e))?;
            if now != *before {
                return Err(GenerateError::ChangedMeanwhile { path: rel.clone() });
            }
        } else if root.join(rel).symlink_metadata().is_ok() {
            return Err(GenerateError::FileExists { path: rel.clone() });
        }
    }
    Ok(())
}

#[cfg(unix)]
fn set_executable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = fs::metadata(path)?.permissions();
    perms.set_mode(perms.mode() | 0o111);
    fs::set_permissions(path, perms)
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).expect("readable").flatten() {
                let p = e.path();
                let rel = p
                    .strip_prefix(dir)
                    .expect("inside")
                    .to_string_lossy()
                    .into_owned();
                if p.is_dir() {
                    out.push((format!("{rel}/"), Vec::new()));
                    stack.push(p);
                } else {
                    out.push((rel, fs::read(&p).expect("readable")));
                }
            }
        }
        out.sort();
        out
    }

    fn plan(root: &Path) -> Plan {
        fs::create_dir_all(root.join("a")).expect("mkdir");
        fs::write(root.join("a/old.txt"), "old\n").expect("write");
        let mut plan = Plan::new(root);
        plan.create("a/new.txt", b"new\n".to_vec(), None)
            .expect("plan");
        plan.create("b/c/deep.txt", b"deep\n".to_vec(), None)
            .expect("plan");
        plan.edit("a/old.txt", "changed\n".to_owned())
            .expect("plan");
        plan
    }

    fn begin(root: &Path) -> Txn {
        Txn::begin(root, "test", false, &mut |_| {}).expect("begin")
    }

    /// Every step a commit of [`plan`] takes.
    const STEPS: [Step<'static>; 7] = [
        Step::Stage("a/new.txt"),
        Step::Stage("a/old.txt"),
        Step::Stage("b/c/deep.txt"),
        Step::Journal,
        Step::Rename("a/new.txt"),
        Step::Rename("a/old.txt"),
        Step::Rename("b/c/deep.txt"),
    ];

    #[test]
    fn a_failure_at_any_step_leaves_the_tree_byte_identical() {
        for failing in STEPS {
            let dir = tempfile::tempdir().expect("tempdir");
            let plan = plan(dir.path());
            let before = snapshot(dir.path());
            let result = commit_with(begin(dir.path()), &plan, &mut |step| {
                if step == failing {
                    Err(Fault::Fail(io::Error::other("injected")))
                } else {
                    Ok(())
                }
            });
            assert!(result.is_err(), "{failing:?} did not fail");
            assert_eq!(
                snapshot(dir.path()),
                before,
                "tree changed after {failing:?}"
            );
        }
    }

    #[test]
    fn a_kill_at_any_step_is_finished_or_undone_by_the_next_run() {
        let full = {
            let dir = tempfile::tempdir().expect("tempdir");
            let plan = plan(dir.path());
            commit(begin(dir.path()), &plan).expect("commit");
            snapshot(dir.path())
        };
        for (n, killed) in STEPS.into_iter().enumerate() {
            let dir = tempfile::tempdir().expect("tempdir");
            let plan = plan(dir.path());
            let before = snapshot(dir.path());
            let result = commit_with(begin(dir.path()), &plan, &mut |step| {
                if step == killed {
                    Err(Fault::Crash)
                } else {
                    Ok(())
                }
            });
            assert!(result.is_err(), "{killed:?} did not stop the commit");
            assert!(
                dir.path().join(".scaffold/lock").exists(),
                "a kill leaves the lock file"
            );
            let recovered = txn::recover(dir.path(), "check", &mut |_| {})
                .expect("recovers")
                .expect("something to recover");
            let expected = if n < 4 {
                (&before, txn::Outcome::RolledBack)
            } else {
                (&full, txn::Outcome::Finished)
            };
            assert_eq!(recovered.outcome, expected.1, "after {killed:?}");
            assert_eq!(recovered.command, "test");
            assert_eq!(&snapshot(dir.path()), expected.0, "tree after {killed:?}");
            // Recovered once: the next run finds nothing to do.
            assert_eq!(
                txn::recover(dir.path(), "check", &mut |_| {}).expect("ok"),
                None
            );
        }
    }

    #[test]
    fn a_journal_that_no_longer_matches_the_tree_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(dir.path());
        let result = commit_with(begin(dir.path()), &plan, &mut |step| {
            if step == Step::Rename("a/new.txt") {
                Err(Fault::Crash)
            } else {
                Ok(())
            }
        });
        assert!(result.is_err());
        fs::write(dir.path().join("a/old.txt"), "edited by hand\n").expect("write");
        let err = txn::recover(dir.path(), "check", &mut |_| {}).expect_err("refused");
        assert!(
            err.to_string()
                .contains("cannot finish the interrupted `scaffold test`"),
            "{err}"
        );
        assert_eq!(
            fs::read(dir.path().join("a/old.txt")).expect("read"),
            b"edited by hand\n"
        );
        assert!(dir.path().join(txn::TXN_DIR).join("journal.json").exists());
    }

    #[test]
    fn a_generator_run_leaves_a_journal_it_cannot_recover_for_a_person() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(dir.path());
        let _ = commit_with(begin(dir.path()), &plan, &mut |step| {
            if step == Step::Rename("a/old.txt") {
                Err(Fault::Crash)
            } else {
                Ok(())
            }
        });
        fs::write(dir.path().join("a/new.txt"), "edited by hand\n").expect("write");
        let err = Txn::begin(dir.path(), "next", false, &mut |_| {}).expect_err("refused");
        assert!(matches!(err, GenerateError::Journal { .. }), "{err:?}");
        let txn = dir.path().join(txn::TXN_DIR);
        for kept in ["journal.json", "new/1", "old/1"] {
            assert!(txn.join(kept).exists(), "{kept} was removed");
        }
    }

    /// `init` into a new directory: a failure undone, a kill before the commit point and a
    /// kill after it each leave no folder, or the whole repository.
    #[test]
    fn a_run_that_made_the_root_folder_removes_it_when_undone() {
        let outer = tempfile::tempdir().expect("tempdir");
        let plan_in = |root: &Path| {
            let mut plan = Plan::new(root);
            plan.create("a/new.txt", b"new\n".to_vec(), None)
                .expect("plan");
            plan.create("b.txt", b"b\n".to_vec(), None).expect("plan");
            plan
        };
        let root = outer.path().join("repo");
        // Fails while renaming: undone, folder gone.
        let txn = Txn::begin(&root, "init", true, &mut |_| {}).expect("begin");
        let err = commit_with(txn, &plan_in(&root), &mut |step| {
            if step == Step::Rename("b.txt") {
                Err(Fault::Fail(io::Error::other("injected")))
            } else {
                Ok(())
            }
        });
        assert!(err.is_err());
        assert!(
            !root.exists(),
            "the folder init made is left: {:?}",
            snapshot(outer.path())
        );
        // Killed before its commit point: the next run's recovery removes the folder.
        for (killed, whole) in [(Step::Stage("b.txt"), false), (Step::Rename("b.txt"), true)] {
            let txn = Txn::begin(&root, "init", true, &mut |_| {}).expect("begin");
            let _ = commit_with(txn, &plan_in(&root), &mut |step| {
                if step == killed {
                    Err(Fault::Crash)
                } else {
                    Ok(())
                }
            });
            let r = txn::recover(&root, "init", &mut |_| {})
                .expect("ok")
                .expect("recovered");
            assert!(r.root_created);
            if whole {
                assert_eq!(
                    snapshot(&root)
                        .into_iter()
                        .map(|(p, _)| p)
                        .collect::<Vec<_>>(),
                    ["a/", "a/new.txt", "b.txt"]
                );
                fs::remove_dir_all(&root).expect("clean");
            } else {
                assert!(!root.exists(), "after {killed:?}: {:?}", snapshot(&root));
            }
        }
    }

    #[test]
    fn a_successful_commit_writes_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(dir.path());
        commit(begin(dir.path()), &plan).expect("commit");
        assert_eq!(
            fs::read(dir.path().join("a/old.txt")).expect("read"),
            b"changed\n"
        );
        assert_eq!(
            fs::read(dir.path().join("b/c/deep.txt")).expect("read"),
            b"deep\n"
        );
        let names: Vec<_> = snapshot(dir.path()).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            names,
            ["a/", "a/new.txt", "a/old.txt", "b/", "b/c/", "b/c/deep.txt"],
            "stray files"
        );
    }

    #[test]
    fn a_read_only_file_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(dir.path());
        let target = dir.path().join("a/old.txt");
        let mut perms = fs::metadata(&target).expect("meta").permissions();
        perms.set_readonly(true);
        fs::set_permissions(&target, perms).expect("chmod");
        let before = snapshot(dir.path());
        let err = commit(begin(dir.path()), &plan).expect_err("refused");
        assert!(matches!(err, GenerateError::ReadOnly { .. }), "{err:?}");
        assert_eq!(snapshot(dir.path()), before);
    }
}
