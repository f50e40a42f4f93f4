//! How the workspace reads what cargo reads. Cargo finds members, targets and path
//! dependencies on disk, whatever ignore files say; the walk's list is the fast answer
//! for what it holds, and the disk is asked, without following a link, for what it does
//! not (an ignored folder, a symlinked one).

use std::path::Path;

use crate::repo::inside::{self, EntryKind, Probe, Refusal};
use crate::repo::overlay::Overlay;

/// The most entries one folder a member glob or a target folder lists may have.
const LIST_LIMIT: usize = 100_000;

/// The deepest a `**` member glob is followed.
const DEEP_GLOB_LEVELS: usize = 32;

/// The repository as cargo sees it.
pub(crate) struct Disk<'a> {
    pub root: &'a Path,
    /// Every file the walk listed, repo-relative, sorted.
    pub files: &'a [String],
    /// The generator's planned files, read in place of the disk's.
    pub overlay: Option<&'a Overlay>,
}

impl Disk<'_> {
    pub(crate) fn listed(&self, rel: &str) -> bool {
        self.files.binary_search_by(|f| f.as_str().cmp(rel)).is_ok()
    }

    /// What is at `rel`: a listed file without a look at the disk.
    pub(crate) fn probe(&self, rel: &str) -> Probe {
        if self.listed(rel) {
            return Probe::File;
        }
        if let Some(planned) = self.overlay.and_then(|o| o.probe(rel)) {
            return planned;
        }
        inside::probe(self.root, rel)
    }

    /// Whether cargo would find a file at `rel` (one that cannot be read counts: what
    /// reaches it reports it).
    pub(crate) fn has(&self, rel: &str) -> bool {
        !matches!(self.probe(rel), Probe::Missing)
    }

    /// A manifest's text: `Ok(None)` when it does not exist.
    pub(crate) fn read(&self, rel: &str) -> Result<Option<String>, Refusal> {
        let limit = crate::repo::MANIFEST_LIMIT;
        match self.overlay.and_then(|o| o.manifest(rel, limit)) {
            Some(planned) => planned.map(Some),
            None => inside::read_text(self.root, rel, limit),
        }
    }

    pub(crate) fn list(&self, rel: &str) -> Result<Option<Vec<(String, EntryKind)>>, Refusal> {
        let disk = inside::list_dir(self.root, rel, LIST_LIMIT)?;
        Ok(match self.overlay {
            Some(o) => o.list(rel, disk),
            None => disk,
        })
    }

    /// The folders under the literal start of `pattern` (its components before the first
    /// wildcard) as deep as the pattern reaches, each with whether it is a real folder:
    /// `false` for an entry cargo's glob would follow and scaffold does not (a symlink).
    /// What cannot be listed is a refusal.
    pub(crate) fn glob_dirs(&self, pattern: &str) -> Result<Vec<(String, bool)>, Refusal> {
        let parts: Vec<&str> = pattern.split('/').collect();
        let literal = parts
            .iter()
            .take_while(|p| !p.contains(['*', '?', '[', '{']))
            .count();
        let start = parts[..literal].join("/");
        let depth = if parts[literal..].contains(&"**") {
            DEEP_GLOB_LEVELS
        } else {
            parts.len() - literal
        };
        let mut out = Vec::new();
        let mut level = vec![start];
        for _ in 0..depth {
            let mut next = Vec::new();
            for dir in &level {
                let Some(entries) = self.list(dir)? else {
                    continue;
                };
                for (name, kind) in entries {
                    if name == ".git" || name == ".scaffold" {
                        continue;
                    }
                    let path = if dir.is_empty() {
                        name
                    } else {
                        format!("{dir}/{name}")
                    };
                    match kind {
                        EntryKind::Dir => {
                            out.push((path.clone(), true));
                            // Under `**`, a build's output (it holds `CACHEDIR.TAG`) is
                            // not searched for crates, as the walk does not walk it.
                            let cache = depth == DEEP_GLOB_LEVELS
                                && std::fs::symlink_metadata(
                                    self.root.join(&path).join("CACHEDIR.TAG"),
                                )
                                .is_ok();
                            if !cache {
                                next.push(path);
                            }
                        }
                        EntryKind::Other => out.push((path, false)),
                        EntryKind::File => {}
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        Ok(out)
    }
}
