//! Commits a validated plan: every file goes to a temporary file beside its target, then
//! each temporary file is renamed over its target. A failure at any step puts back what
//! was there (changed files get their old bytes, created files and directories go) so the
//! tree is byte-identical to before the command.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::GenerateError;
use super::plan::Plan;

/// Writes `plan` to disk, all or nothing.
pub fn commit(plan: &Plan) -> Result<(), GenerateError> {
    commit_with(plan, &mut |_| Ok(()))
}

/// The steps a commit takes, for fault injection in tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    WriteTemp(&'a str),
    Rename(&'a str),
}

/// [`commit`], calling `fault` before each step; an error from it fails that step.
pub(crate) fn commit_with(
    plan: &Plan,
    fault: &mut dyn FnMut(Step<'_>) -> io::Result<()>,
) -> Result<(), GenerateError> {
    let root = plan.root();
    preflight(plan)?;
    let mut undo = Undo::default();
    if plan.creates_root {
        match fs::create_dir(root) {
            Ok(()) => undo.root = Some(root.to_path_buf()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(GenerateError::io("create", root, e)),
        }
    }
    let result = write_all(plan, fault, &mut undo);
    if result.is_err() {
        undo.roll_back(plan);
    }
    result
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

#[derive(Default)]
struct Undo {
    /// The root directory, when the commit created it.
    root: Option<PathBuf>,
    /// Directories created, in creation order.
    dirs: Vec<PathBuf>,
    /// Temporary files written and not yet renamed.
    temps: Vec<PathBuf>,
    /// Targets already replaced, in order.
    renamed: Vec<String>,
}

fn write_all(
    plan: &Plan,
    fault: &mut dyn FnMut(Step<'_>) -> io::Result<()>,
    undo: &mut Undo,
) -> Result<(), GenerateError> {
    let root = plan.root();
    let mut pending = Vec::new();
    for (rel, file) in plan.files() {
        if file.before.as_ref() == Some(&file.after) {
            continue;
        }
        let target = root.join(rel);
        if let Some(parent) = target.parent() {
            create_dirs(parent, &mut undo.dirs)?;
        }
        let temp = temp_path(&target);
        fault(Step::WriteTemp(rel)).map_err(|e| GenerateError::io("write", &temp, e))?;
        write_temp(
            &temp,
            &file.after,
            file.executable,
            file.before.is_some(),
            &target,
        )
        .inspect_err(|_| {
            let _ = fs::remove_file(&temp);
        })
        .map_err(|e| GenerateError::io("write", &target, e))?;
        undo.temps.push(temp.clone());
        pending.push((rel.as_str(), temp, target));
    }
    for (rel, temp, target) in pending {
        fault(Step::Rename(rel)).map_err(|e| GenerateError::io("replace", &target, e))?;
        fs::rename(&temp, &target).map_err(|e| GenerateError::io("replace", &target, e))?;
        undo.temps.retain(|t| *t != temp);
        undo.renamed.push(rel.to_owned());
    }
    Ok(())
}

fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> Result<(), GenerateError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, created)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {
            created.push(dir.to_path_buf());
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(GenerateError::io("create", dir, e)),
    }
}

fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.scaffold-{}.tmp", std::process::id()))
}

fn write_temp(
    temp: &Path,
    bytes: &[u8],
    executable: bool,
    replaces: bool,
    target: &Path,
) -> io::Result<()> {
    // A new file, never one that exists (a stale temporary or a planted symlink).
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temp)?;
    std::io::Write::write_all(&mut f, bytes)?;
    f.sync_all()?;
    // A replaced file keeps its permissions; a created script is executable.
    if replaces {
        let perms = fs::metadata(target)?.permissions();
        fs::set_permissions(temp, perms)?;
    } else if executable {
        set_executable(temp)?;
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

impl Undo {
    /// Puts the tree back: old bytes for replaced files, created files, temporaries and
    /// directories removed. Best effort: it keeps going past a failure.
    fn roll_back(&self, plan: &Plan) {
        let root = plan.root();
        for temp in &self.temps {
            let _ = fs::remove_file(temp);
        }
        let files: std::collections::BTreeMap<&String, _> = plan.files().collect();
        for rel in self.renamed.iter().rev() {
            let target = root.join(rel);
            match files.get(rel).and_then(|f| f.before.as_ref()) {
                Some(before) => {
                    let temp = temp_path(&target);
                    if fs::write(&temp, before).is_ok() {
                        if let Ok(m) = fs::metadata(&target) {
                            let _ = fs::set_permissions(&temp, m.permissions());
                        }
                        let _ = fs::rename(&temp, &target);
                    }
                }
                None => {
                    let _ = fs::remove_file(&target);
                }
            }
        }
        for dir in self.dirs.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
        if let Some(root) = &self.root {
            let _ = fs::remove_dir_all(root);
        }
    }
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

    #[test]
    fn a_failure_at_any_step_leaves_the_tree_byte_identical() {
        let steps = [
            Step::WriteTemp("a/new.txt"),
            Step::WriteTemp("b/c/deep.txt"),
            Step::Rename("a/new.txt"),
            Step::Rename("a/old.txt"),
            Step::Rename("b/c/deep.txt"),
        ];
        for failing in steps {
            let dir = tempfile::tempdir().expect("tempdir");
            let plan = plan(dir.path());
            let before = snapshot(dir.path());
            let result = commit_with(&plan, &mut |step| {
                if step == failing {
                    Err(io::Error::other("injected"))
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
    fn a_successful_commit_writes_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = plan(dir.path());
        commit(&plan).expect("commit");
        assert_eq!(
            fs::read(dir.path().join("a/old.txt")).expect("read"),
            b"changed\n"
        );
        assert_eq!(
            fs::read(dir.path().join("b/c/deep.txt")).expect("read"),
            b"deep\n"
        );
        let leftovers: Vec<_> = snapshot(dir.path())
            .into_iter()
            .filter(|(p, _)| p.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
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
        let err = commit(&plan).expect_err("refused");
        assert!(matches!(err, GenerateError::ReadOnly { .. }), "{err:?}");
        assert_eq!(snapshot(dir.path()), before);
    }
}
