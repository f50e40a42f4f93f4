//! The repository's files: a gitignore-aware, parallel, sorted walk that also reads the
//! Rust sources in the same pass (as ripgrep does), so no file is opened twice.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ignore::{WalkBuilder, WalkState};

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Every file, repo-relative, `/`-separated, sorted.
    pub files: Vec<String>,
    /// The text of every `.rs` file (lossy UTF-8).
    pub rust: HashMap<String, Arc<str>>,
}

/// Walks `root`. Honours `.gitignore` (also outside a git checkout), never follows
/// symlinks, and skips `.git`, `.scaffold` and Cargo target directories (those holding
/// `CACHEDIR.TAG`).
pub fn walk(root: &Path) -> Walk {
    let out: Mutex<Vec<Found>> = Mutex::new(Vec::new());
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
            let mut batch = Batch {
                local: Vec::new(),
                out: &out,
            };
            Box::new(move |entry| {
                if let Ok(e) = entry
                    && e.file_type().is_some_and(|t| t.is_file())
                    && let Some(rel) = relative(root, e.path())
                {
                    let text = if rel.ends_with(".rs") {
                        read_text(e.path())
                    } else {
                        None
                    };
                    batch.push(rel, text);
                }
                WalkState::Continue
            })
        });
    let mut all = out.into_inner().unwrap_or_else(|p| p.into_inner());
    all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut walk = Walk::default();
    for (path, text) in all {
        if let Some(t) = text {
            walk.rust.insert(path.clone(), t);
        }
        walk.files.push(path);
    }
    walk
}

type Found = (String, Option<Arc<str>>);

/// A walker thread's findings, handed over in batches; the rest when the thread's
/// closure is dropped at the end of the walk.
struct Batch<'a> {
    local: Vec<Found>,
    out: &'a Mutex<Vec<Found>>,
}

impl Batch<'_> {
    fn push(&mut self, path: String, text: Option<Arc<str>>) {
        self.local.push((path, text));
        if self.local.len() >= 256 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let mut v = self.out.lock().unwrap_or_else(|p| p.into_inner());
        v.append(&mut self.local);
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

fn read_text(path: &Path) -> Option<Arc<str>> {
    let bytes = std::fs::read(path).ok()?;
    Some(match String::from_utf8(bytes) {
        Ok(s) => Arc::from(s),
        Err(e) => Arc::from(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    })
}

/// `path` relative to `root` with `/` separators, if it is inside.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    match rel.to_str() {
        Some(s) if std::path::MAIN_SEPARATOR == '/' => Some(s.to_owned()),
        _ => {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            Some(parts.join("/"))
        }
    }
}
