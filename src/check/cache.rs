//! The per-file cache of `scaffold check`: what parsing a Rust file yielded (its crate
//! references, or its parse failure), its allow comments and which work-queue words it
//! holds, keyed by path and a hash of the file's content, so a warm run re-parses only
//! the files that changed.
//!
//! Like git's index, an entry also records the file's metadata (size, mtime, ctime,
//! inode) when the file had not changed for a while before the run that read it: a later
//! run that finds the same metadata takes the entry without opening the file. A file
//! written in the last seconds before a run is recorded without metadata (it could change
//! again within the filesystem's timestamp granularity), so the next run reads and hashes
//! it.
//!
//! Lives in `.scaffold/cache/` (which carries its own `.gitignore` and `CACHEDIR.TAG`).
//! The file holds a checksum of its payload and the key it was built under (scaffold
//! version and the set of crate names files were scanned for); any mismatch, truncation
//! or decoding error means the cache is ignored and rebuilt, never trusted.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::mentions::Mentions;
use super::rust_refs::{ParseFailure, RustFacts};
use super::suppress::Suppression;
use crate::repo::files::FileStat;

const DIR: &str = ".scaffold/cache";
const FILE: &str = "check-v3.bin";
/// [`FILE`] relative to the root.
const FILE_REL: &str = ".scaffold/cache/check-v3.bin";
const MAGIC: &[u8; 16] = b"scaffold-check\0\x03";

/// How long before a run a file must have last changed for its metadata to be trusted
/// next time: more than any common filesystem's timestamp granularity (FAT's is 2 s).
const SETTLED_NS: i128 = 3_000_000_000;

/// What one file yielded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub hash: u128,
    /// The file's metadata when it was read, if it had settled by then.
    pub stat: Option<FileStat>,
    pub mentions: Mentions,
    pub facts: Result<RustFacts, ParseFailure>,
    pub suppressions: Vec<Suppression>,
}

/// The cache of one run. The file is read whole, but each entry is decoded only when a
/// file asks for it (in parallel, by the caller), so a run that visits a few files pays
/// for a few entries.
#[derive(Debug, Default)]
pub struct Cache {
    /// The payload: the key, then per entry its path and its encoded [`Entry`].
    payload: Vec<u8>,
    /// Where each path's encoded entry lies in `payload`, and whether a file of this run
    /// took it.
    index: HashMap<String, (Range<usize>, bool), foldhash::fast::RandomState>,
}

/// An entry taken from the cache, still encoded.
#[derive(Debug, Clone)]
pub struct Taken(Range<usize>);

/// One entry of the cache to write.
#[derive(Debug)]
pub enum Record<'a> {
    /// Copied as encoded from the cache that was loaded (the file did not change).
    Kept(Taken),
    Fresh(EntryRef<'a>),
}

/// An [`Entry`] to write, borrowing what it holds from the run's sources: encoded exactly
/// as the `Entry` it decodes to (the same fields in the same order), without copying
/// every file's facts first.
#[derive(Debug, Serialize)]
pub struct EntryRef<'a> {
    pub hash: u128,
    pub stat: Option<FileStat>,
    pub mentions: Mentions,
    pub facts: &'a Result<RustFacts, ParseFailure>,
    pub suppressions: &'a [Suppression],
}

/// `stat`, if a file with this metadata had settled before a run that started at
/// `started_ns` (nanoseconds since the epoch): only then may a later run trust it.
pub fn settled(stat: Option<FileStat>, started_ns: i128) -> Option<FileStat> {
    stat.filter(|s| s.latest_ns() < started_ns - SETTLED_NS)
}

/// The content hash of a file.
pub fn hash(text: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes())
}

/// The key the entries are valid under: this scaffold's version, the source of the code
/// that extracts entries, and the names files are scanned for (facts only list
/// references to those names).
pub fn key(candidates: &[&str]) -> u128 {
    let mut data = code_key(&[
        include_str!("rust_refs/depth.rs"),
        include_str!("rust_refs/mod.rs"),
        include_str!("rust_refs/fast/mod.rs"),
        include_str!("rust_refs/fast/tokens.rs"),
        include_str!("rust_refs/fast/exits.rs"),
        include_str!("rust_refs/lex.rs"),
        include_str!("rust_refs/quiet.rs"),
        include_str!("rust_refs/syn_scan.rs"),
        include_str!("rust_refs/tt.rs"),
        include_str!("cfg_test.rs"),
        include_str!("suppress.rs"),
        include_str!("cache.rs"),
        include_str!("mentions.rs"),
        include_str!("../repo/files.rs"),
    ]);
    for c in candidates {
        data.push(0);
        data.extend_from_slice(c.as_bytes());
    }
    xxhash_rust::xxh3::xxh3_128(&data)
}

/// This scaffold's version and a hash of each of `sources`, the code that produces a
/// cache's entries: part of every cache key, so a build whose extraction changed never
/// reuses an older build's entries, whatever the version says.
const CARGO_LOCK: &str = include_str!("../../Cargo.lock");

pub(crate) fn code_key(sources: &[&str]) -> Vec<u8> {
    let mut data = env!("CARGO_PKG_VERSION").as_bytes().to_vec();
    // The locked dependency versions: a parser upgrade at the same version and sources
    // (syn, ra_ap_parser) may read files differently.
    data.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(CARGO_LOCK.as_bytes()).to_le_bytes());
    for source in sources {
        data.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(source.as_bytes()).to_le_bytes());
    }
    data
}

/// How many bytes [`seal`] puts before the payload: the magic and the checksum.
pub(crate) const SEAL_LEN: usize = 32;

/// `payload` behind `magic` and its checksum: what a cache file holds.
pub(crate) fn seal(magic: &[u8; 16], payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(payload.len() + SEAL_LEN);
    bytes.resize(SEAL_LEN, 0);
    bytes.extend_from_slice(payload);
    seal_in_place(magic, &mut bytes);
    bytes
}

/// Seals a buffer whose first [`SEAL_LEN`] bytes were left for it and whose payload
/// follows, without copying the payload.
pub(crate) fn seal_in_place(magic: &[u8; 16], bytes: &mut [u8]) {
    let sum = xxhash_rust::xxh3::xxh3_128(bytes.get(SEAL_LEN..).unwrap_or_default());
    if let Some(head) = bytes.get_mut(..SEAL_LEN) {
        head[..16].copy_from_slice(magic);
        head[16..].copy_from_slice(&sum.to_le_bytes());
    }
}

/// The payload of a file [`seal`] wrote with `magic`; `None` when the magic or the
/// checksum does not match (damaged, truncated, another format).
pub(crate) fn unseal(magic: &[u8; 16], mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    if !bytes.starts_with(magic) || bytes.len() < SEAL_LEN {
        return None;
    }
    let sum = u128::from_le_bytes(bytes[magic.len()..SEAL_LEN].try_into().ok()?);
    // In place: the payload moves to the front of the buffer it was read into.
    bytes.drain(..SEAL_LEN);
    (xxhash_rust::xxh3::xxh3_128(&bytes) == sum).then_some(bytes)
}

fn path(root: &Path) -> PathBuf {
    root.join(DIR).join(FILE)
}

/// Whether `root` has a cache file: only then is the walk asked for every source's
/// metadata (without one, no entry can be taken by metadata, and a source's metadata is
/// taken from the open file when it is read, which is cheaper).
pub fn exists(root: &Path) -> bool {
    path(root).is_file()
}

impl Cache {
    /// Loads the cache of `root` for `key`; anything unreadable is an empty cache.
    pub fn load(root: &Path, key: u128) -> Cache {
        crate::repo::inside::read_bytes(root, FILE_REL, CACHE_LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| decode(bytes, key))
            .unwrap_or_default()
    }

    /// Takes the entry recorded for `path`, if any; the caller decodes it with
    /// [`Cache::entry`] and checks that it still matches the file (by metadata or by
    /// content hash).
    pub fn take(&mut self, path: &str) -> Option<Taken> {
        // Not removed: a `#[path]` module shared by two crates is visited twice.
        self.index.get_mut(path).map(|(range, taken)| {
            *taken = true;
            Taken(range.clone())
        })
    }

    /// Decodes a taken entry; `None` if it does not decode (then the file is parsed).
    pub fn entry(&self, taken: &Taken) -> Option<Entry> {
        postcard::from_bytes(self.payload.get(taken.0.clone())?).ok()
    }

    /// Whether every loaded entry was taken (none is left for a file that is gone).
    pub fn all_taken(&self) -> bool {
        self.index.values().all(|(_, taken)| *taken)
    }

    /// The entries no file of this run took, still encoded: files that are gone, or that
    /// a partial run (`--staged`) did not visit.
    pub fn rest(&self) -> impl Iterator<Item = (&str, Record<'_>)> + '_ {
        self.index
            .iter()
            .filter(|(_, (_, taken))| !taken)
            .map(|(p, (r, _))| (p.as_str(), Record::Kept(Taken(r.clone()))))
    }

    /// Writes `records` as the new cache, by temp file and rename; a kept record is
    /// copied from this cache as it was encoded. A cache that cannot be written
    /// (read-only checkout) only costs speed, so errors are returned for the caller to
    /// ignore.
    pub fn save(
        &self,
        root: &Path,
        key: u128,
        mut records: Vec<(&str, Record<'_>)>,
    ) -> std::io::Result<()> {
        mark_dir(root)?;
        records.sort_unstable_by(|a, b| a.0.cmp(b.0));
        records.dedup_by(|a, b| a.0 == b.0);
        // One buffer, sealed in place: room for the seal, then the payload, each fresh
        // entry encoded straight into it behind its length.
        let mut bytes =
            Vec::with_capacity(SEAL_LEN + self.payload.len().max(128 * records.len()) + 20);
        bytes.resize(SEAL_LEN, 0);
        bytes.extend_from_slice(&key.to_le_bytes());
        bytes.extend_from_slice(&len32(records.len())?);
        for (path, record) in &records {
            bytes.extend_from_slice(&len32(path.len())?);
            bytes.extend_from_slice(path.as_bytes());
            match record {
                Record::Kept(t) => {
                    let data = self.payload.get(t.0.clone()).unwrap_or_default();
                    bytes.extend_from_slice(&len32(data.len())?);
                    bytes.extend_from_slice(data);
                }
                Record::Fresh(entry) => {
                    let at = bytes.len();
                    bytes.extend_from_slice(&[0; 4]);
                    bytes = postcard::to_extend(entry, bytes).map_err(std::io::Error::other)?;
                    let len = len32(bytes.len() - at - 4)?;
                    bytes[at..at + 4].copy_from_slice(&len);
                }
            }
        }
        seal_in_place(MAGIC, &mut bytes);
        crate::repo::inside::replace_file(root, FILE_REL, &bytes)
    }
}

/// The largest cache file read.
const CACHE_LIMIT: u64 = 1 << 30;

/// Creates `.scaffold/cache/` as real directories and marks it ignored (`.gitignore`,
/// `CACHEDIR.TAG`). Never through a symlink: a committed `.scaffold` or `CACHEDIR.TAG`
/// link is refused or replaced by a file of ours, its target untouched.
pub fn mark_dir(root: &Path) -> std::io::Result<()> {
    use crate::repo::inside;
    inside::create_dirs(root, DIR)?;
    let ignore = format!("{DIR}/.gitignore");
    let is_ours = std::fs::symlink_metadata(root.join(&ignore)).is_ok_and(|m| m.is_file());
    if !is_ours {
        inside::replace_file(
            root,
            &ignore,
            b"# scaffold's check cache: safe to delete\n*\n",
        )?;
    }
    let tag = format!("{DIR}/CACHEDIR.TAG");
    if !std::fs::symlink_metadata(root.join(&tag)).is_ok_and(|m| m.is_file()) {
        inside::replace_file(
            root,
            &tag,
            b"Signature: 8a477f597d28d172789f06886806bc55\n# scaffold check cache\n",
        )?;
    }
    Ok(())
}

fn len32(n: usize) -> std::io::Result<[u8; 4]> {
    u32::try_from(n)
        .map(u32::to_le_bytes)
        .map_err(std::io::Error::other)
}

/// Checks the magic, checksum and key, and indexes the entries; `None` on any mismatch
/// or truncation.
fn decode(bytes: Vec<u8>, key: u128) -> Option<Cache> {
    let payload = unseal(MAGIC, bytes)?;
    let mut at = 0usize;
    let mut next = |n: usize| -> Option<Range<usize>> {
        let r = at..at.checked_add(n)?;
        (r.end <= payload.len()).then(|| {
            at = r.end;
            r
        })
    };
    let key_at = next(16)?;
    if u128::from_le_bytes(payload[key_at].try_into().ok()?) != key {
        return None;
    }
    let u32_at = |r: Range<usize>| -> Option<usize> {
        Some(u32::from_le_bytes(payload.get(r)?.try_into().ok()?) as usize)
    };
    let count = u32_at(next(4)?)?;
    let mut index =
        HashMap::with_capacity_and_hasher(count.min(payload.len() / 8), Default::default());
    for _ in 0..count {
        let path_len = u32_at(next(4)?)?;
        let path = std::str::from_utf8(payload.get(next(path_len)?)?)
            .ok()?
            .to_owned();
        let data_len = u32_at(next(4)?)?;
        index.insert(path, (next(data_len)?, false));
    }
    (at == payload.len()).then_some(Cache { payload, index })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_covers_every_file_of_the_import_scan() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/check/rust_refs");
        let mut names: Vec<String> = Vec::new();
        let mut stack = vec![String::new()];
        while let Some(sub) = stack.pop() {
            for e in std::fs::read_dir(dir.join(&sub)).expect("rust_refs") {
                let e = e.expect("entry");
                let name = format!("{sub}{}", e.file_name().to_string_lossy());
                if e.file_type().expect("type").is_dir() {
                    stack.push(format!("{name}/"));
                } else if name.ends_with(".rs")
                    // Test-only modules (`#[cfg(test)] mod tests;`, `mod differential;`).
                    && !matches!(name.as_str(), "tests.rs" | "differential.rs")
                {
                    names.push(name);
                }
            }
        }
        names.sort();
        assert!(names.len() >= 4, "{names:?}");
        let this = include_str!("cache.rs");
        for name in names {
            let listed = format!("include_str!(\"rust_refs/{name}\")");
            assert!(
                this.contains(&listed),
                "cache::key does not hash rust_refs/{name}"
            );
        }
    }

    #[test]
    fn trusts_metadata_only_of_files_settled_before_the_run() {
        let stat = |t: i128| FileStat {
            len: 1,
            mtime_ns: t,
            ctime_ns: t,
            ino: 1,
        };
        let start = 100 * 1_000_000_000;
        assert!(settled(Some(stat(start - 10_000_000_000)), start).is_some());
        assert!(settled(Some(stat(start - 1_000_000_000)), start).is_none());
        assert!(
            settled(Some(stat(start + 1)), start).is_none(),
            "a file from the future"
        );
        let mut late_ctime = stat(0);
        late_ctime.ctime_ns = start;
        assert!(
            settled(Some(late_ctime), start).is_none(),
            "ctime counts too"
        );
        assert!(settled(None, start).is_none());
    }

    #[test]
    fn round_trips_and_rejects_damage() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut entries = HashMap::new();
        entries.insert(
            "a.rs".to_owned(),
            Entry {
                hash: 7,
                stat: None,
                mentions: Mentions::default(),
                facts: Ok(RustFacts::default()),
                suppressions: Vec::new(),
            },
        );
        let records = entries
            .iter()
            .map(|(p, e)| {
                let fresh = EntryRef {
                    hash: e.hash,
                    stat: e.stat,
                    mentions: e.mentions,
                    facts: &e.facts,
                    suppressions: &e.suppressions,
                };
                (p.as_str(), Record::Fresh(fresh))
            })
            .collect();
        Cache::default().save(dir.path(), 1, records).expect("save");
        let mut c = Cache::load(dir.path(), 1);
        let taken = c.take("a.rs").expect("recorded");
        assert_eq!(c.entry(&taken).map(|e| e.hash), Some(7));
        assert!(
            c.take("a.rs").is_some(),
            "a file visited twice finds it again"
        );
        assert!(c.all_taken());
        assert_eq!(c.rest().count(), 0);
        let whole = Cache::load(dir.path(), 1);
        assert_eq!(whole.rest().count(), 1, "what a run does not take is kept");
        // Kept entries are copied as they were encoded.
        let before = std::fs::read(path(dir.path())).expect("read");
        whole
            .save(dir.path(), 1, whole.rest().collect())
            .expect("save");
        assert_eq!(std::fs::read(path(dir.path())).expect("read"), before);
        assert!(
            Cache::load(dir.path(), 2).take("a.rs").is_none(),
            "another key is a miss"
        );
        // Flip one byte, truncate, or write garbage: the cache is ignored, never trusted.
        let file = path(dir.path());
        let mut bytes = std::fs::read(&file).expect("read");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&file, &bytes).expect("write");
        assert!(Cache::load(dir.path(), 1).index.is_empty());
        std::fs::write(&file, &bytes[..20]).expect("write");
        assert!(Cache::load(dir.path(), 1).index.is_empty());
        std::fs::write(&file, b"garbage").expect("write");
        assert!(Cache::load(dir.path(), 1).index.is_empty());
        assert!(
            std::fs::read_to_string(dir.path().join(".scaffold/cache/.gitignore"))
                .expect("gitignore")
                .contains('*')
        );
    }
}
