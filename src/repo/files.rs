//! The repository's files: a gitignore-aware, parallel, sorted walk.

use std::path::Path;
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

/// Every file under `root` as a sorted list of repo-relative `/` paths.
///
/// Honours `.gitignore` (also outside a git checkout), never follows symlinks, and skips
/// `.git`, `.scaffold` and Cargo target directories (those holding `CACHEDIR.TAG`).
pub fn walk(root: &Path) -> Vec<String> {
    let out = Mutex::new(Vec::new());
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
            let out = &out;
            Box::new(move |entry| {
                if let Ok(e) = entry {
                    if e.file_type().is_some_and(|t| t.is_file()) {
                        if let Some(rel) = relative(root, e.path()) {
                            if let Ok(mut v) = out.lock() {
                                v.push(rel);
                            }
                        }
                    }
                }
                WalkState::Continue
            })
        });
    let mut files = out.into_inner().unwrap_or_else(|p| p.into_inner());
    files.sort_unstable();
    files
}

/// `path` relative to `root` with `/` separators, if it is inside.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("/"))
    }
}
