//! The runtime stamp: which `scaffold-runtime` a repository vendors in `platform/runtime`.
//!
//! `platform/runtime/.scaffold-stamp` (written by `scaffold init`) holds two lines:
//!
//! ```text
//! version = "0.1.0"
//! hash = "sha256:<64 hex digits>"
//! ```
//!
//! `hash` is [`crate::layout::tree_hash::tree_hash`] over the runtime's `Cargo.toml`, `src/**` and
//! `migrations/**` (paths relative to the runtime's root, sorted; CRLF read as LF). The
//! binary's own stamp is computed by `build.rs` over this repository's `runtime/` with the
//! same code.

use crate::check::finding::Location;
use crate::layout::tree_hash as sha256;
use crate::repo::Repo;
use crate::source::SourceFile;

pub use crate::layout::runtime::{RUNTIME_DIR, STAMP_PATH, render, runtime_stamp};

/// A parsed stamp: each value with where it is written.
#[derive(Debug, Clone, Default)]
pub struct Stamp {
    pub version: Option<(String, Location)>,
    pub hash: Option<(String, Location)>,
}

pub fn parse(file: &SourceFile) -> Stamp {
    let mut out = Stamp::default();
    let mut offset = 0;
    for line in file.text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some((key, value)) = t.split_once('=') {
            let key = key.trim();
            let raw = value.trim();
            let v = raw.trim_matches('"').to_owned();
            let at = offset + line.find(raw).unwrap_or(0);
            let l = Location::in_file(file, at, raw.len());
            match key {
                "version" => out.version = Some((v, l)),
                "hash" => out.hash = Some((v, l)),
                _ => {}
            }
        }
        offset += line.len();
    }
    out
}

/// The content hash of `platform/runtime` as it is in `repo` (`None` when it holds no
/// hashed file).
pub fn vendored_hash(repo: &Repo) -> Option<String> {
    let prefix = format!("{RUNTIME_DIR}/");
    let mut files: Vec<(String, Vec<u8>)> = repo
        .files
        .iter()
        .filter_map(|f| f.strip_prefix(&prefix).map(|rel| (f, rel)))
        .filter(|(_, rel)| sha256::in_tree(rel))
        .filter_map(|(f, rel)| {
            repo.read_bytes(f, crate::repo::TEXT_LIMIT)
                .map(|b| (rel.to_owned(), b))
        })
        .collect();
    if files.is_empty() {
        return None;
    }
    Some(sha256::tree_hash(&mut files))
}
