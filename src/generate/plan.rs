//! The in-memory plan of a generator command: every file it creates or changes, with the
//! bytes before and after. Nothing touches the disk until [`super::write::commit`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::GenerateError;
use crate::layout::model::{OnDisk, RepoFiles};

/// One file of the plan.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// The bytes on disk before the command (`None`: the command creates the file).
    pub before: Option<Vec<u8>>,
    /// The bytes the command writes.
    pub after: Vec<u8>,
    /// The template that rendered it (for messages), if one did.
    pub template: Option<String>,
    /// Whether that template was the repository's override.
    pub overridden: bool,
    /// Whether a created file is executable (scripts).
    pub executable: bool,
}

/// The plan: repo-relative `/` paths to files, sorted.
#[derive(Debug)]
pub struct Plan {
    root: PathBuf,
    files: BTreeMap<String, PlannedFile>,
}

impl Plan {
    pub fn new(root: &Path) -> Plan {
        Plan {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Plans a new file. Refuses a path that exists (on disk or in the plan).
    pub fn create(
        &mut self,
        path: &str,
        after: Vec<u8>,
        template: Option<(String, bool)>,
    ) -> Result<(), GenerateError> {
        check_relative(path)?;
        if self.files.contains_key(path) || self.root.join(path).symlink_metadata().is_ok() {
            return Err(GenerateError::FileExists {
                path: path.to_owned(),
            });
        }
        let executable = path.ends_with(".sh");
        let (template, overridden) = match template {
            Some((t, o)) => (Some(t), o),
            None => (None, false),
        };
        self.files.insert(
            path.to_owned(),
            PlannedFile {
                before: None,
                after,
                template,
                overridden,
                executable,
            },
        );
        Ok(())
    }

    /// The text of `path` as the plan has it so far: planned content, else the disk's;
    /// `None` when neither has it.
    pub fn text(&self, path: &str) -> Result<Option<String>, GenerateError> {
        check_relative(path)?;
        if let Some(f) = self.files.get(path) {
            return String::from_utf8(f.after.clone()).map(Some).map_err(|_| {
                GenerateError::NotUtf8 {
                    path: path.to_owned(),
                }
            });
        }
        match read_inside(&self.root, path)? {
            Some(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| GenerateError::NotUtf8 {
                    path: path.to_owned(),
                }),
            None => Ok(None),
        }
    }

    /// Plans new contents for a file that exists (or is already planned).
    pub fn edit(&mut self, path: &str, after: String) -> Result<(), GenerateError> {
        check_relative(path)?;
        if let Some(f) = self.files.get_mut(path) {
            f.after = after.into_bytes();
            return Ok(());
        }
        let abs = self.root.join(path);
        let before = read_inside(&self.root, path)?.ok_or_else(|| {
            GenerateError::io(
                "read",
                &abs,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        self.files.insert(
            path.to_owned(),
            PlannedFile {
                before: Some(before),
                after: after.into_bytes(),
                template: None,
                overridden: false,
                executable: false,
            },
        );
        Ok(())
    }

    /// Every planned file, sorted by path.
    pub fn files(&self) -> impl Iterator<Item = (&String, &PlannedFile)> {
        self.files.iter()
    }

    pub(crate) fn files_mut(&mut self) -> impl Iterator<Item = (&String, &mut PlannedFile)> {
        self.files.iter_mut()
    }

    /// Paths the plan creates, sorted.
    pub fn created(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|(_, f)| f.before.is_none())
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Paths the plan changes (whose bytes differ), sorted.
    pub fn changed(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|(_, f)| f.before.as_ref().is_some_and(|b| *b != f.after))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// The repository as the plan will leave it, for the repository model
/// (`layout::model`): a planned file's new bytes, the disk's for the rest.
impl RepoFiles for Plan {
    fn text(&self, rel: &str) -> Result<Option<String>, String> {
        Plan::text(self, rel).map_err(|e| e.to_string())
    }

    fn rust_sources(&self, folder: &str) -> Result<Vec<(String, String)>, String> {
        let folder = folder.trim_end_matches('/');
        let mut files: BTreeMap<String, String> =
            crate::layout::rust_sources::read(&self.root, folder)?
                .into_iter()
                .collect();
        let prefix = format!("{folder}/");
        for (path, file) in &self.files {
            if path.starts_with(&prefix) && path.ends_with(".rs") {
                let text = String::from_utf8(file.after.clone())
                    .map_err(|_| format!("{path} is not UTF-8"))?;
                files.insert(path.clone(), text);
            }
        }
        // In the disk walk's order (one component at a time), so the first of two
        // answers is the same whether the plan or the disk is asked.
        let mut files: Vec<(String, String)> = files.into_iter().collect();
        files.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
        Ok(files)
    }

    fn folders(&self, folder: &str) -> Result<Vec<String>, String> {
        let folder = folder.trim_end_matches('/');
        let mut out: std::collections::BTreeSet<String> =
            OnDisk(&self.root).folders(folder)?.into_iter().collect();
        let prefix = format!("{folder}/");
        for path in self.files.keys() {
            if let Some((dir, _)) = path.strip_prefix(&prefix).and_then(|p| p.split_once('/')) {
                out.insert(dir.to_owned());
            }
        }
        Ok(out.into_iter().collect())
    }
}

/// A repo-relative path the generator may write: `/`-separated, no `.`/`..`/empty
/// components, not absolute.
pub fn check_relative(path: &str) -> Result<(), GenerateError> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path.contains('\0')
        || path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if bad {
        return Err(GenerateError::PathEscapes {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// The largest file the generator reads to edit.
const READ_LIMIT: u64 = 64 << 20;

/// A repo-relative file's bytes: only a regular file reached through real directories
/// (a FIFO in place of `om/src/root.rs` hung the generator; a symlink was read through).
fn read_inside(root: &std::path::Path, path: &str) -> Result<Option<Vec<u8>>, GenerateError> {
    crate::repo::inside::read_bytes(root, path, READ_LIMIT).map_err(|reason| {
        GenerateError::Refused {
            path: path.to_owned(),
            reason,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_repo_files_the_plan_answers_over_the_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for (rel, text) in [
            ("om/src/a.rs", "disk a"),
            ("om/src/a-b.rs", "disk a-b"),
            ("om/src/a/x.rs", "disk x"),
            ("workers/maintenance/src/main.rs", "fn main() {}"),
        ] {
            std::fs::create_dir_all(root.join(rel).parent().expect("a parent")).expect("mkdir");
            std::fs::write(root.join(rel), text).expect("write");
        }
        let mut plan = Plan::new(root);
        plan.edit("om/src/a.rs", "planned a".to_owned())
            .expect("edit");
        plan.create("om/src/b/y.rs", b"planned y".to_vec(), None)
            .expect("create");
        plan.create(
            "workers/billing/src/main.rs",
            b"fn main() {}".to_vec(),
            None,
        )
        .expect("create");
        let sources = RepoFiles::rust_sources(&plan, "om/src").expect("read");
        let disk = OnDisk(root).rust_sources("om/src").expect("read");
        let paths = |v: &[(String, String)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
        assert_eq!(
            paths(&sources),
            [
                "om/src/a/x.rs",
                "om/src/a-b.rs",
                "om/src/a.rs",
                "om/src/b/y.rs"
            ],
            "the disk walk's order, a planned file among them"
        );
        assert_eq!(paths(&disk), paths(&sources)[..3].to_vec());
        assert_eq!(
            sources[2].1, "planned a",
            "a planned file replaces the disk's"
        );
        assert_eq!(
            RepoFiles::folders(&plan, "workers/").expect("read"),
            ["billing", "maintenance"],
            "a folder only the plan has"
        );
        assert_eq!(
            RepoFiles::text(&plan, "om/src/a-b.rs")
                .expect("read")
                .as_deref(),
            Some("disk a-b")
        );
        // A link to a folder is refused, never skipped.
        std::os::unix::fs::symlink(root.join("om/src/a"), root.join("workers/linked"))
            .expect("a link");
        assert!(RepoFiles::folders(&plan, "workers").is_err());
    }

    #[test]
    fn refuses_paths_that_leave_the_root() {
        for p in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            "",
            "a\\b",
        ] {
            assert!(check_relative(p).is_err(), "{p:?} accepted");
        }
        check_relative("workers/billing/src/main.rs").expect("a plain relative path");
    }
}
