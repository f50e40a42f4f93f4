//! Where the repository model reads: [`RepoFiles`], over the disk ([`OnDisk`]) or over the
//! generator's plan (`generate::plan::Plan`, which answers with a planned file's new
//! bytes and the disk's for the rest).

use std::path::Path;

/// The files of a repository, read as scaffold reads them: inside the root, no link
/// followed, a file that cannot be read as a regular one an error naming it (never a
/// skip: a model read in part answers wrongly).
pub trait RepoFiles: std::fmt::Debug {
    /// The text of the repo-relative file `rel`; `Ok(None)` when there is none.
    fn text(&self, rel: &str) -> Result<Option<String>, String>;
    /// Every `.rs` file under the repo-relative folder `folder` (path, text), in the
    /// order of a sorted walk (by path, one component at a time: `a/x.rs` before
    /// `a-b.rs`); empty when there is no such folder.
    fn rust_sources(&self, folder: &str) -> Result<Vec<(String, String)>, String>;
    /// The names of the folders directly in `folder`, sorted; empty when there is none. A
    /// link to a folder is an error.
    fn folders(&self, folder: &str) -> Result<Vec<String>, String>;
}

/// The repository on disk, at `root`.
#[derive(Debug)]
pub struct OnDisk<'r>(pub &'r Path);

impl RepoFiles for OnDisk<'_> {
    fn text(&self, rel: &str) -> Result<Option<String>, String> {
        crate::repo::inside::read_text(self.0, rel, crate::repo::TEXT_LIMIT)
            .map_err(|r| r.to_string())
    }

    fn rust_sources(&self, folder: &str) -> Result<Vec<(String, String)>, String> {
        crate::layout::rust_sources::read(self.0, folder)
    }

    fn folders(&self, folder: &str) -> Result<Vec<String>, String> {
        let folder = folder.trim_end_matches('/');
        crate::repo::inside::no_links(self.0, folder).map_err(|r| r.to_string())?;
        let entries = match std::fs::read_dir(self.0.join(folder)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{folder}: {e}")),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| format!("{folder}: {e}"))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{folder}/{name}");
            let kind = entry.file_type().map_err(|e| format!("{child}: {e}"))?;
            if kind.is_symlink() {
                // A linked folder may hold what the model looks for (a worker's handlers):
                // refused, never skipped and never followed. A link to anything else is not
                // a folder and is left alone.
                if crate::repo::inside::leads_to_dir(self.0, &child) {
                    return Err(crate::repo::inside::Refusal::Symlink(child).to_string());
                }
            } else if kind.is_dir() {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }
}
