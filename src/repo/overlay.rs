//! Files a check reads in place of the disk's: the generator's plan, checked before it is
//! written (`generate::self_check`). A repository loaded with an overlay reads every
//! planned file from it and every other file from the disk, as the plan would leave them,
//! and writes nothing back (no check cache, no work-queue memo).

use std::collections::BTreeMap;
use std::ops::Bound;

use super::inside::{EntryKind, Probe, Refusal};
use super::{Unread, into_text};

/// Planned files by repo-relative path (checked when planned: no `..`, no absolute path).
#[derive(Debug, Default)]
pub struct Overlay {
    files: BTreeMap<String, Vec<u8>>,
}

impl Overlay {
    pub fn new(files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Overlay {
        Overlay {
            files: files.into_iter().collect(),
        }
    }

    /// Whether `rel` is a planned file.
    pub fn holds(&self, rel: &str) -> bool {
        self.files.contains_key(rel)
    }

    /// The planned paths, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &String> {
        self.files.keys()
    }

    /// A planned file's bytes.
    pub fn bytes(&self, rel: &str) -> Option<&[u8]> {
        self.files.get(rel).map(Vec::as_slice)
    }

    /// A planned file as text (invalid UTF-8 replaced), refused past `limit` as the disk's
    /// would be.
    pub fn text(&self, rel: &str, limit: u64) -> Option<Result<String, Unread>> {
        let bytes = self.bytes(rel)?;
        Some(if bytes.len() as u64 > limit {
            Err(Unread::TooLarge(limit))
        } else {
            Ok(into_text(bytes.to_vec()))
        })
    }

    /// [`Overlay::text`] refused as `inside::read_text` refuses a file on disk (a
    /// manifest's reader).
    pub fn manifest(&self, rel: &str, limit: u64) -> Option<Result<String, Refusal>> {
        Some(self.text(rel, limit)?.map_err(|why| match why {
            Unread::TooLarge(limit) => Refusal::TooLarge {
                path: rel.to_owned(),
                limit,
            },
            Unread::Unreadable => Refusal::NotRegular(rel.to_owned()),
        }))
    }

    /// The planned paths under the folder `rel` (`""`: the root), each without the
    /// folder's part, in order.
    fn under<'o>(&'o self, rel: &str) -> impl Iterator<Item = &'o str> {
        let prefix = dir_prefix(rel);
        self.files
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .map_while(move |(p, _)| p.strip_prefix(prefix.as_str()))
    }

    /// Whether a planned file lies under the folder `rel` (`""`: the root).
    pub fn has_dir(&self, rel: &str) -> bool {
        self.under(rel).next().is_some()
    }

    /// What is at `rel` in the plan: `None` when the plan has nothing there (the disk
    /// answers); a planned folder is no file, as the disk's would not be.
    pub fn probe(&self, rel: &str) -> Option<Probe> {
        if self.holds(rel) {
            Some(Probe::File)
        } else if self.has_dir(rel) {
            Some(Probe::Refused(Refusal::NotRegular(rel.to_owned())))
        } else {
            None
        }
    }

    /// The disk's listing of the folder `rel` (`None`: no such folder there) with what
    /// the plan puts directly in it, sorted by name.
    pub fn list(
        &self,
        rel: &str,
        disk: Option<Vec<(String, EntryKind)>>,
    ) -> Option<Vec<(String, EntryKind)>> {
        if !self.has_dir(rel) {
            return disk;
        }
        let mut out: BTreeMap<String, EntryKind> = disk.unwrap_or_default().into_iter().collect();
        for rest in self.under(rel) {
            let (name, kind) = match rest.split_once('/') {
                Some((dir, _)) => (dir, EntryKind::Dir),
                None => (rest, EntryKind::File),
            };
            out.insert(name.to_owned(), kind);
        }
        Some(out.into_iter().collect())
    }
}

/// `rel` as the start of the paths under it: `""` for the root, else `rel/`.
fn dir_prefix(rel: &str) -> String {
    if rel.is_empty() {
        String::new()
    } else {
        format!("{}/", rel.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Overlay {
        Overlay::new([
            (
                "workers/a/src/main.rs".to_owned(),
                b"fn main() {}\n".to_vec(),
            ),
            ("workers/a/Cargo.toml".to_owned(), b"[package]\n".to_vec()),
            ("om/src/lib.rs".to_owned(), vec![0xff, b'x']),
        ])
    }

    #[test]
    fn a_planned_folder_is_listed_over_the_disk() {
        let o = plan();
        assert!(o.has_dir("workers") && o.has_dir("workers/a") && o.has_dir(""));
        assert!(!o.has_dir("work") && !o.has_dir("workers/a/src/main.rs"));
        let listed = o
            .list("workers", Some(vec![("b".to_owned(), EntryKind::Dir)]))
            .expect("a folder");
        assert_eq!(
            listed,
            vec![
                ("a".to_owned(), EntryKind::Dir),
                ("b".to_owned(), EntryKind::Dir)
            ]
        );
        assert_eq!(
            o.list("workers/a", None).expect("planned"),
            vec![
                ("Cargo.toml".to_owned(), EntryKind::File),
                ("src".to_owned(), EntryKind::Dir)
            ]
        );
        assert_eq!(o.list("deployment", None), None);
    }

    #[test]
    fn planned_files_read_and_probe_as_the_disk_would() {
        let o = plan();
        assert!(matches!(o.probe("workers/a/Cargo.toml"), Some(Probe::File)));
        assert!(matches!(
            o.probe("workers/a"),
            Some(Probe::Refused(Refusal::NotRegular(_)))
        ));
        assert!(o.probe("workers/b.rs").is_none());
        assert_eq!(
            o.text("om/src/lib.rs", 10),
            Some(Ok("\u{FFFD}x".to_owned()))
        );
        assert_eq!(
            o.text("workers/a/Cargo.toml", 4),
            Some(Err(Unread::TooLarge(4)))
        );
        assert_eq!(o.text("missing", 10), None);
    }
}
