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
    /// Every `.rs` file under the repo-relative folder `folder` (path, text), sorted by
    /// path; empty when there is no such folder.
    fn rust_sources(&self, folder: &str) -> Result<Vec<(String, String)>, String>;
    /// The names of the folders directly in `folder`, sorted; empty when there is none.
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
            // A link is not a folder of the repository's (its target is never read).
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(out)
    }
}
