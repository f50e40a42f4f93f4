//! A crate folder's Rust sources as text, for the readers that must see all of them or
//! say they cannot (the kind registry in `om/src` for the queue's kind check and the
//! generator's "is this kind taken", the handlers under each worker's `src/`): the folder
//! is walked sorted, and a folder or file is refused by name when it is a link, not a
//! regular file, too large, too deep or past the budget — a registry read in part would
//! answer wrongly.

use std::path::Path;

/// Every `.rs` file under the repo-relative folder `rel` of `root` (repo-relative path,
/// text), sorted; empty when there is no such folder.
pub fn read(root: &Path, rel: &str) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    let rel = rel.trim_end_matches('/');
    crate::repo::inside::no_links(root, rel).map_err(|r| r.to_string())?;
    if root.join(rel).is_dir() {
        collect(root, rel, rel, &mut files, 0, &mut Budget::default())?;
    }
    Ok(files)
}

/// How deep under the folder read folders are read.
const MAX_DEPTH: usize = 12;
/// The most `.rs` files, and bytes of them, read under one folder: a namespace crate of a
/// thousand files is far past any real one, and a tree past either is refused by name
/// rather than held in memory whole.
pub const MAX_FILES: usize = 5_000;
const MAX_BYTES: u64 = 64 << 20;

/// What the walk has read so far.
#[derive(Default)]
struct Budget {
    files: usize,
    bytes: u64,
}

fn collect(
    root: &Path,
    top: &str,
    rel: &str,
    files: &mut Vec<(String, String)>,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{rel} is nested deeper than {MAX_DEPTH} folders under {top}/"
        ));
    }
    crate::repo::inside::no_links(root, rel).map_err(|r| r.to_string())?;
    let entries = std::fs::read_dir(root.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    let mut entries: Vec<_> = entries
        .map(|e| e.map_err(|err| format!("{rel}: {err}")))
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        let kind = entry.file_type().map_err(|e| format!("{child}: {e}"))?;
        if kind.is_symlink() {
            // A linked folder may hold modules and a linked `.rs` file is one: refused. A
            // link to anything else (a README) is not a source and is left alone.
            let to_folder = crate::repo::inside::leads_to_dir(root, &child);
            if to_folder || name.ends_with(".rs") {
                return Err(crate::repo::inside::Refusal::Symlink(child).to_string());
            }
        } else if kind.is_dir() {
            collect(root, top, &child, files, depth + 1, budget)?;
        } else if name.ends_with(".rs") {
            let text = crate::repo::inside::read_text(root, &child, crate::repo::TEXT_LIMIT)
                .map_err(|r| r.to_string())?
                .unwrap_or_default();
            budget.files += 1;
            budget.bytes += text.len() as u64;
            if budget.files > MAX_FILES || budget.bytes > MAX_BYTES {
                return Err(format!(
                    "{top}/ holds more than {MAX_FILES} .rs files or {} MiB of them (at {child}); scaffold does not read a tree that large",
                    MAX_BYTES >> 20
                ));
            }
            files.push((child, text));
        }
    }
    Ok(())
}
