//! `[workspace] members`, expanded as cargo expands them: on disk, whatever ignore files
//! say. A member whose folder or manifest cannot be read (a symlink, a FIFO) is a gap,
//! never a crate silently gone; so is a folder a glob matches that has no manifest.
//! Each member costs a lookup in the walk's list, and a look at the disk only when the
//! list does not hold its manifest: linear in the members.

use toml_edit::Item;

use super::disk::Disk;
use super::{Excluded, normalize_rel};
use crate::check::finding::Location;
use crate::repo::gaps::{Gap, Why};
use crate::repo::inside::Probe;
use crate::repo::inside::leads_to_dir;
use crate::repo::manifest::PathGlob;
use crate::source::SourceFile;

/// The member folders `members` names, repo-relative; what cannot be read goes to
/// `gaps`, at the member's string in the root manifest.
pub(super) fn expand(
    disk: &Disk<'_>,
    root_file: &SourceFile,
    members: Option<&Item>,
    excluded: &Excluded,
    gaps: &mut Vec<Gap>,
) -> Vec<String> {
    let Some(array) = members.and_then(Item::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for value in array.iter() {
        let Some(raw) = value.as_str() else { continue };
        let at = value.span().map_or(Location::START, |r| {
            Location::in_file(root_file, r.start, r.end - r.start)
        });
        let member = normalize_rel(raw);
        if member == "." || member.is_empty() {
            continue;
        }
        let gap = |why: Why| Gap {
            path: "Cargo.toml".to_owned(),
            at,
            why,
        };
        if !member.contains(['*', '?', '[']) {
            if excluded.is(&member) {
                continue;
            }
            match disk.probe(&format!("{member}/Cargo.toml")) {
                Probe::File => out.push(member),
                Probe::Missing => gaps.push(gap(Why::MemberWithoutManifest { dir: member })),
                Probe::Refused(r) => gaps.push(gap(Why::MemberUnreadable {
                    dir: member,
                    reason: r.to_string(),
                })),
            }
            continue;
        }
        let Ok(glob) = PathGlob::new(&member) else {
            gaps.push(gap(Why::MemberGlobInvalid { glob: member }));
            continue;
        };
        let dirs = match disk.glob_dirs(&member) {
            Ok(dirs) => dirs,
            Err(r) => {
                gaps.push(gap(Why::MemberUnreadable {
                    dir: member,
                    reason: r.to_string(),
                }));
                continue;
            }
        };
        for (dir, real) in dirs {
            if !glob.is_match(&dir) || excluded.is(&dir) {
                continue;
            }
            if !real {
                // Cargo's glob follows a symlink to a folder and builds the crate in it.
                if leads_to_dir(disk.root, &dir) {
                    gaps.push(gap(Why::MemberLinked {
                        dir,
                        glob: member.clone(),
                    }));
                }
                continue;
            }
            match disk.probe(&format!("{dir}/Cargo.toml")) {
                Probe::File => out.push(dir),
                Probe::Missing => gaps.push(gap(Why::GlobMemberWithoutManifest {
                    dir,
                    glob: member.clone(),
                })),
                Probe::Refused(r) => gaps.push(gap(Why::MemberUnreadable {
                    dir,
                    reason: r.to_string(),
                })),
            }
        }
    }
    out
}
