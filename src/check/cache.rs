//! The per-file cache of `scaffold check`: what parsing a Rust file yielded (its crate
//! references, or its parse failure) and its allow comments, keyed by path and a hash of
//! the file's content, so a warm run re-parses only the files that changed.
//!
//! Lives in `.scaffold/cache/` (which carries its own `.gitignore` and `CACHEDIR.TAG`).
//! The file holds a checksum of its payload and the key it was built under (scaffold
//! version and the set of crate names files were scanned for); any mismatch, truncation
//! or decoding error means the cache is ignored and rebuilt, never trusted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::rust_refs::{ParseFailure, RustFacts};
use super::suppress::Suppression;

const DIR: &str = ".scaffold/cache";
const FILE: &str = "check-v1.bin";
const MAGIC: &[u8; 16] = b"scaffold-check\0\x01";

/// What one file yielded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub hash: u128,
    pub facts: Result<RustFacts, ParseFailure>,
    pub suppressions: Vec<Suppression>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    key: u128,
    entries: HashMap<String, Entry>,
}

/// The cache of one run: entries read at the start, entries to write at the end.
#[derive(Debug, Default)]
pub struct Cache {
    old: HashMap<String, Entry>,
    /// How many entries were loaded, and how many a run took unchanged.
    loaded: usize,
    taken: usize,
    missed: usize,
}

/// The content hash of a file.
pub fn hash(text: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes())
}

/// The key the entries are valid under: this scaffold's version, the source of the code
/// that extracts entries, and the names files are scanned for (facts only list
/// references to those names).
pub fn key(candidates: &[&str]) -> u128 {
    // The code that produces entries is part of the key, so a build whose extraction
    // changed never reuses an older build's entries, whatever the version says.
    let mut data = env!("CARGO_PKG_VERSION").as_bytes().to_vec();
    for source in [
        include_str!("rust_refs.rs"),
        include_str!("suppress.rs"),
        include_str!("cache.rs"),
    ] {
        data.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(source.as_bytes()).to_le_bytes());
    }
    for c in candidates {
        data.push(0);
        data.extend_from_slice(c.as_bytes());
    }
    xxhash_rust::xxh3::xxh3_128(&data)
}

fn path(root: &Path) -> PathBuf {
    root.join(DIR).join(FILE)
}

impl Cache {
    /// Loads the cache of `root` for `key`; anything unreadable is an empty cache.
    pub fn load(root: &Path, key: u128) -> Cache {
        let entries = std::fs::read(path(root))
            .ok()
            .and_then(|bytes| decode(&bytes))
            .filter(|p| p.key == key)
            .map(|p| p.entries)
            .unwrap_or_default();
        Cache {
            loaded: entries.len(),
            old: entries,
            taken: 0,
            missed: 0,
        }
    }

    /// Takes the entry for `path` if the content still hashes the same.
    pub fn take(&mut self, path: &str, hash: u128) -> Option<Entry> {
        match self.old.get(path) {
            Some(e) if e.hash == hash => {
                self.taken += 1;
                self.old.remove(path)
            }
            _ => {
                self.missed += 1;
                None
            }
        }
    }

    /// Whether the run took every loaded entry unchanged and needed no other: then the
    /// file on disk is already right and need not be written.
    pub fn unchanged(&self) -> bool {
        self.missed == 0 && self.taken == self.loaded
    }

    /// Writes `entries` as the new cache, by temp file and rename. A cache that cannot be
    /// written (read-only checkout) only costs speed, so errors are returned for the
    /// caller to ignore.
    pub fn save(root: &Path, key: u128, entries: HashMap<String, Entry>) -> std::io::Result<()> {
        let dir = root.join(DIR);
        std::fs::create_dir_all(&dir)?;
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "# scaffold's check cache: safe to delete\n*\n")?;
            std::fs::write(
                dir.join("CACHEDIR.TAG"),
                "Signature: 8a477f597d28d172789f06886806bc55\n# scaffold check cache\n",
            )?;
        }
        let payload =
            postcard::to_stdvec(&Payload { key, entries }).map_err(std::io::Error::other)?;
        let mut bytes = Vec::with_capacity(payload.len() + 32);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        let tmp = dir.join(format!(".{FILE}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &bytes)?;
        std::fs::rename(&tmp, path(root))
    }
}

fn decode(bytes: &[u8]) -> Option<Payload> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < 16 {
        return None;
    }
    let (sum, payload) = rest.split_at(16);
    let sum = u128::from_le_bytes(sum.try_into().ok()?);
    if xxhash_rust::xxh3::xxh3_128(payload) != sum {
        return None;
    }
    postcard::from_bytes(payload).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_damage() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut entries = HashMap::new();
        entries.insert(
            "a.rs".to_owned(),
            Entry {
                hash: 7,
                facts: Ok(RustFacts::default()),
                suppressions: Vec::new(),
            },
        );
        Cache::save(dir.path(), 1, entries.clone()).expect("save");
        let mut c = Cache::load(dir.path(), 1);
        assert!(c.take("a.rs", 8).is_none(), "a changed file is a miss");
        assert!(!c.unchanged());
        let mut c = Cache::load(dir.path(), 1);
        assert!(c.take("a.rs", 7).is_some());
        assert!(c.unchanged(), "every entry taken, nothing missed");
        assert!(
            Cache::load(dir.path(), 2).take("a.rs", 7).is_none(),
            "another key is a miss"
        );
        // Flip one byte, truncate, or write garbage: the cache is ignored, never trusted.
        let file = path(dir.path());
        let mut bytes = std::fs::read(&file).expect("read");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&file, &bytes).expect("write");
        assert!(Cache::load(dir.path(), 1).old.is_empty());
        std::fs::write(&file, &bytes[..20]).expect("write");
        assert!(Cache::load(dir.path(), 1).old.is_empty());
        std::fs::write(&file, b"garbage").expect("write");
        assert!(Cache::load(dir.path(), 1).old.is_empty());
        assert!(
            std::fs::read_to_string(dir.path().join(".scaffold/cache/.gitignore"))
                .expect("gitignore")
                .contains('*')
        );
    }
}
