//! What the work-queue extractors found in each file, kept across runs in
//! `.scaffold/cache/` beside the check cache, so a warm run parses none of the files the
//! kind, lane and architecture rules read again.
//!
//! An extractor's result is keyed by the extractor's name, the file's path, crate and
//! content hash, and whatever else the extractor reads (`extra`: the om registry's inputs
//! for handlers). The file's header holds this scaffold's version and the source of the
//! extractors, so a build whose extraction changed never reuses an older build's
//! results. A damaged file is an empty memo, never trusted.
//!
//! Each result also records its slot (extractor, path, crate: the key without the
//! content), so a partial run that computes a file's result anew drops the one the old
//! content left, and repeated `--staged` runs on an edited file do not pile them up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::with_parsed;
use crate::check::context::Source;

const FILE: &str = ".scaffold/cache/workqueue-v1.bin";
const MAGIC: &[u8; 16] = b"scaffold-wq\0\0\0\0\x02";

/// A result as kept: its slot and its encoding.
type Kept = (u128, Vec<u8>);

/// The results of one run: those loaded (on first use) and those this run used.
#[derive(Debug)]
pub struct Memo {
    root: PathBuf,
    /// Whether `save` may write (not for a check of a plan: what it saw is not on disk).
    writes: bool,
    old: OnceLock<HashMap<u128, Kept>>,
    used: Mutex<HashMap<u128, Kept>>,
    /// Whether a result was computed rather than loaded.
    missed: AtomicBool,
    /// Whether a file changed under this run (its text no longer hashed as recorded):
    /// results computed after that may depend on it (handlers on om's consts), so none is
    /// recorded.
    unsettled: AtomicBool,
}

/// What the results are valid under: the version and the extractors' source. An
/// extractor that comes to depend on code in another file must add that file here, or a
/// build whose extraction changed could reuse an older build's results.
fn version_key() -> u128 {
    let data = crate::check::cache::code_key(&[
        include_str!("memo.rs"),
        include_str!("mod.rs"),
        include_str!("registry.rs"),
        include_str!("handlers.rs"),
        include_str!("exec.rs"),
        include_str!("exec/commands.rs"),
        include_str!("exec/contexts.rs"),
        include_str!("services.rs"),
        include_str!("orchestrations.rs"),
        include_str!("settings.rs"),
        include_str!("../finding.rs"),
        include_str!("../cfg_test.rs"),
        include_str!("../../source.rs"),
        include_str!("../../layout/mod.rs"),
    ]);
    xxhash_rust::xxh3::xxh3_128(&data)
}

impl Memo {
    pub fn new(root: &Path, writes: bool) -> Memo {
        Memo {
            root: root.to_path_buf(),
            writes,
            old: OnceLock::new(),
            used: Mutex::new(HashMap::new()),
            missed: AtomicBool::new(false),
            unsettled: AtomicBool::new(false),
        }
    }

    fn old(&self) -> &HashMap<u128, Kept> {
        self.old.get_or_init(|| {
            crate::repo::inside::read_bytes(&self.root, FILE, 1 << 30)
                .ok()
                .flatten()
                .and_then(decode)
                .unwrap_or_default()
        })
    }

    /// `f` run on the parsed tree of `s`, or its result from an earlier run when nothing
    /// it reads has changed. `None` when the file does not parse.
    pub fn parsed<T: Serialize + DeserializeOwned>(
        &self,
        extractor: &str,
        s: &Source,
        extra: u128,
        f: impl FnOnce(&syn::File) -> T,
    ) -> Option<T> {
        let mut data = Vec::with_capacity(extractor.len() + s.path.len() + 48);
        data.extend_from_slice(extractor.as_bytes());
        data.push(0);
        data.extend_from_slice(s.path.as_bytes());
        data.push(0);
        data.extend_from_slice(&(s.krate as u64).to_le_bytes());
        let slot = xxhash_rust::xxh3::xxh3_128(&data);
        data.extend_from_slice(&s.hash.to_le_bytes());
        data.extend_from_slice(&extra.to_le_bytes());
        let key = xxhash_rust::xxh3::xxh3_128(&data);
        if let Some((_, bytes)) = self.old().get(&key)
            && let Ok(v) = postcard::from_bytes::<T>(bytes)
        {
            self.lock().insert(key, (slot, bytes.clone()));
            return Some(v);
        }
        let file = s.file();
        let v = with_parsed(file, f)?;
        // The text is read now, the hash was taken earlier (or came from the cache by the
        // file's metadata): a file edited in between must not leave this result under the
        // hash of content it was not computed from, nor any later result (which may have
        // read this one) be recorded.
        if crate::check::cache::hash(&file.text) != s.hash {
            self.unsettled.store(true, Ordering::Relaxed);
        } else if !self.unsettled.load(Ordering::Relaxed) {
            self.missed.store(true, Ordering::Relaxed);
            if let Ok(bytes) = postcard::to_stdvec(&v) {
                self.lock().insert(key, (slot, bytes));
            }
        }
        Some(v)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u128, Kept>> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the results back when this run computed any, or (a full run) no longer
    /// needs some. A partial run (`--staged`) keeps the loaded results it did not use,
    /// but not one whose slot it filled anew (the result of a file's older content).
    /// Errors only cost speed next time, so they are ignored.
    pub fn save(&self, partial: bool) {
        if !self.writes {
            return;
        }
        let Some(old) = self.old.get() else {
            return; // no rule asked: nothing changed
        };
        let mut used = std::mem::take(&mut *self.lock());
        let dropped = !partial && used.len() != old.len();
        if !self.missed.load(Ordering::Relaxed) && !dropped {
            return;
        }
        if partial {
            let filled: std::collections::HashSet<u128> =
                used.values().map(|(slot, _)| *slot).collect();
            for (k, v) in old {
                if !filled.contains(&v.0) {
                    used.entry(*k).or_insert_with(|| v.clone());
                }
            }
        }
        let mut entries: Vec<(u128, Kept)> = used.into_iter().collect();
        entries.sort_unstable_by_key(|e| e.0);
        let _ = write(&self.root, &entries);
    }
}

fn write(root: &Path, entries: &[(u128, Kept)]) -> std::io::Result<()> {
    let payload = postcard::to_stdvec(&(version_key(), entries)).map_err(std::io::Error::other)?;
    crate::check::cache::mark_dir(root)?;
    crate::repo::inside::replace_file(root, FILE, &crate::check::cache::seal(MAGIC, &payload))
}

fn decode(bytes: Vec<u8>) -> Option<HashMap<u128, Kept>> {
    let payload = crate::check::cache::unseal(MAGIC, bytes)?;
    let (key, entries): (u128, Vec<(u128, Kept)>) = postcard::from_bytes(&payload).ok()?;
    (key == version_key()).then(|| entries.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of the work-queue model that memoises through `parsed` is part of the
    /// version key: an extractor changed without it would reuse an older build's results.
    #[test]
    fn every_extractor_file_is_in_the_version_key() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/check/workqueue");
        let this = include_str!("memo.rs");
        let mut missing = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("src/check/workqueue")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".rs"))
            .collect();
        entries.sort();
        for name in entries {
            let text = std::fs::read_to_string(dir.join(&name)).expect("read");
            if text.contains(".parsed(") && !this.contains(&format!("include_str!(\"{name}\")")) {
                missing.push(name);
            }
        }
        assert!(missing.is_empty(), "not in version_key: {missing:?}");
    }

    #[test]
    fn keeps_no_result_for_text_that_changed_since_it_was_hashed() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.rs"), "fn now() {}\n").expect("write");
        let count = |tree: &syn::File| tree.items.len();
        // The hash of what the file held when the run hashed it, before an edit.
        let stale = Source::detached(dir.path(), "a.rs", crate::check::cache::hash("old"));
        let memo = Memo::new(dir.path(), true);
        assert_eq!(memo.parsed("items", &stale, 0, count), Some(1));
        memo.save(false);
        assert!(
            !dir.path().join(FILE).exists(),
            "nothing recorded under the old hash"
        );
        // Nor anything after it in the same run.
        let current = crate::check::cache::hash("fn now() {}\n");
        let fresh = Source::detached(dir.path(), "a.rs", current);
        assert_eq!(memo.parsed("items", &fresh, 0, count), Some(1));
        memo.save(false);
        assert!(
            !dir.path().join(FILE).exists(),
            "nothing after a change either"
        );
        let memo = Memo::new(dir.path(), true);
        assert_eq!(memo.parsed("items", &fresh, 0, count), Some(1));
        memo.save(false);
        assert_eq!(
            decode(std::fs::read(dir.path().join(FILE)).expect("saved")).map(|m| m.len()),
            Some(1)
        );
    }

    #[test]
    fn a_partial_run_drops_the_result_of_a_files_older_content() {
        let dir = tempfile::tempdir().expect("tmp");
        let count = |tree: &syn::File| tree.items.len();
        let write_src = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write");
            Source::detached(dir.path(), name, crate::check::cache::hash(text))
        };
        // A full run records both files.
        let a = write_src("a.rs", "fn a() {}\n");
        let b = write_src("b.rs", "fn b() {}\n");
        let memo = Memo::new(dir.path(), true);
        assert_eq!(memo.parsed("items", &a, 0, count), Some(1));
        assert_eq!(memo.parsed("items", &b, 0, count), Some(1));
        memo.save(false);
        let saved = || decode(std::fs::read(dir.path().join(FILE)).expect("saved")).expect("ok");
        assert_eq!(saved().len(), 2);
        // Partial runs on `a` as it is edited, again and again: `b`'s result stays, and
        // only `a`'s newest one is kept.
        for n in 2..6 {
            let text = "fn a() {}\n".repeat(n);
            let a = write_src("a.rs", &text);
            let memo = Memo::new(dir.path(), true);
            assert_eq!(memo.parsed("items", &a, 0, count), Some(n));
            memo.save(true);
            assert_eq!(saved().len(), 2, "after edit {n}");
        }
        let memo = Memo::new(dir.path(), true);
        assert_eq!(memo.parsed("items", &b, 0, count), Some(1));
        assert!(!memo.missed.load(Ordering::Relaxed), "b's result was kept");
    }

    #[test]
    fn round_trips_and_rejects_damage() {
        let dir = tempfile::tempdir().expect("tmp");
        let entries = vec![(1u128, (7u128, vec![1u8, 2, 3])), (2, (8, vec![]))];
        write(dir.path(), &entries).expect("write");
        let file = dir.path().join(FILE);
        let bytes = std::fs::read(&file).expect("read");
        let map = decode(bytes.clone()).expect("decodes");
        assert_eq!(map.get(&1), Some(&(7, vec![1u8, 2, 3])));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(decode(flipped).is_none());
        assert!(decode(bytes[..bytes.len() / 2].to_vec()).is_none());
        assert!(decode(b"garbage".to_vec()).is_none());
    }
}
