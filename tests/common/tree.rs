//! A repository's tree as tests compare it: every file's content hash and mode, and every
//! directory, so "the tree is byte-identical" is one comparison with a readable diff.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Every file under `dir` (relative `/` path → content hash and mode), directories as
/// `path/`.
pub fn tree(dir: &Path) -> Tree {
    Tree(
        files(dir)
            .into_iter()
            .map(|(p, bytes)| {
                let mode = mode(&dir.join(&p));
                (p, (xxhash_rust::xxh3::xxh3_64(&bytes), mode))
            })
            .collect(),
    )
}

/// A tree's files by hash, compared with a diff of the paths that differ.
#[derive(PartialEq, Eq)]
pub struct Tree(BTreeMap<String, (u64, u32)>);

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} entries", self.0.len())
    }
}

#[track_caller]
pub fn assert_same(after: &Tree, before: &Tree, what: &str) {
    if after == before {
        return;
    }
    let mut diff = Vec::new();
    for (p, v) in &after.0 {
        match before.0.get(p) {
            None => diff.push(format!("+ {p}")),
            Some(b) if b != v => diff.push(format!("~ {p}")),
            _ => {}
        }
    }
    for p in before.0.keys() {
        if !after.0.contains_key(p) {
            diff.push(format!("- {p}"));
        }
    }
    panic!("{what}:\n{}", diff.join("\n"));
}

pub fn mode(path: &Path) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::symlink_metadata(path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        0
    }
}

/// Every file under `dir` with its bytes, directories as `path/` → empty. Nothing is
/// followed or opened that could lead out or block: a symlink is its target's name
/// (`-> target`), a FIFO or device its kind.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(dir)
                .expect("inside")
                .to_string_lossy()
                .replace('\\', "/");
            let Ok(meta) = fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&p).expect("a link has a target");
                out.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else if meta.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else if meta.is_file() {
                out.insert(rel, fs::read(&p).expect("readable"));
            } else {
                out.insert(rel, b"(not a regular file)".to_vec());
            }
        }
    }
    out
}

impl Tree {
    /// The tree without the entries under `prefix`.
    pub fn without(mut self, prefix: &str) -> Tree {
        self.0.retain(|p, _| !p.starts_with(prefix));
        self
    }

    /// The tree without the checker's own cache (`.scaffold/cache/`, and `.scaffold/`
    /// when that is all it holds): what `check` may write.
    pub fn but_cache(mut self) -> Tree {
        self.0.retain(|p, _| !p.starts_with(".scaffold/cache"));
        if !self
            .0
            .keys()
            .any(|p| p.starts_with(".scaffold/") && p != ".scaffold/")
        {
            self.0.remove(".scaffold/");
        }
        self
    }
}
