//! The content hash of the vendored runtime, over SHA-256 from the `sha2` crate.
//!
//! `build.rs` compiles this very file (`#[path]`) to stamp the embedded runtime, and the
//! checker hashes the vendored copy with it, so the two agree by construction; `sha2` is a
//! build-dependency for that.

use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The content hash of a runtime tree: `(relative path, bytes)` pairs, in any order. Files
/// are sorted by path; each contributes its path, a NUL, its length (after turning CRLF
/// into LF, so a checkout's line endings do not count) as 8 bytes big-endian, and its
/// bytes. Returns `sha256:<hex>`.
pub fn tree_hash(files: &mut [(String, Vec<u8>)]) -> String {
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = Sha256::new();
    for (path, bytes) in files.iter() {
        let body = crlf_to_lf(bytes);
        h.update(path.as_bytes());
        h.update([0]);
        h.update((body.len() as u64).to_be_bytes());
        h.update(&body);
    }
    format!("sha256:{}", hex(&h.finalize()))
}

fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// Whether a runtime-relative path is part of the hashed tree: `Cargo.toml`, and every
/// file under `src/` and `migrations/`.
pub fn in_tree(rel: &str) -> bool {
    rel == "Cargo.toml" || rel.starts_with("src/") || rel.starts_with("migrations/")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree hash of a fixed tree, as every stamp written so far was computed: a change
    /// of the hashing (or of the hash function's use) breaks every vendored stamp.
    #[test]
    fn the_tree_hash_of_a_fixed_tree_is_stable() {
        let mut files = vec![("Cargo.toml".to_owned(), b"[package]\n".to_vec())];
        assert_eq!(tree_hash(&mut files), STABLE);
        assert_eq!(
            tree_hash(&mut Vec::new()),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "the empty tree is SHA-256 of nothing"
        );
    }

    const STABLE: &str = "sha256:3542cb6a3ece81c0abf28aab88e2a02a08dd4e432b156fcb88da446ff3f8e882";

    #[test]
    fn tree_hash_ignores_order_and_line_endings() {
        let mut a = vec![
            ("src/lib.rs".to_owned(), b"a\r\nb\n".to_vec()),
            ("Cargo.toml".to_owned(), b"[package]\n".to_vec()),
        ];
        let mut b = vec![
            ("Cargo.toml".to_owned(), b"[package]\n".to_vec()),
            ("src/lib.rs".to_owned(), b"a\nb\n".to_vec()),
        ];
        assert_eq!(tree_hash(&mut a), tree_hash(&mut b));
        b[1].1.push(b'c');
        assert_ne!(tree_hash(&mut a), tree_hash(&mut b));
        assert!(in_tree("migrations/sqlite/0001_init.sql"));
        assert!(!in_tree("README.md"));
    }
}
