//! Change sets: which files a range of history or the index touches, read from `git`
//! run as argv (never through a shell). Renames count as both paths; deletions count.

use std::path::Path;
use std::process::Command;

use miette::Diagnostic;
use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// The new path of a rename or copy; the old path is listed as `Deleted`.
    Renamed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Repo-relative (to the scaffold root), `/`-separated.
    pub path: String,
    pub kind: ChangeKind,
}

/// Where the change set comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Between the merge base of REV and HEAD, and the work tree (untracked files included).
    Since(String),
    /// The index against HEAD.
    Staged,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeSet {
    pub changes: Vec<Change>,
}

impl ChangeSet {
    /// Every touched path (old and new sides of renames), sorted and unique.
    pub fn paths(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.changes.iter().map(|c| c.path.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn contains(&self, path: &str) -> bool {
        self.changes.iter().any(|c| c.path == path)
    }
}

#[derive(Debug, Error, Diagnostic)]
pub enum GitError {
    #[error("cannot run git")]
    #[diagnostic(code(scaffold::git), help("install git and make sure it is on PATH"))]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed: {stderr}")]
    #[diagnostic(code(scaffold::git), help("{help}"))]
    Failed {
        args: String,
        stderr: String,
        help: String,
    },
}

/// Runs git with `args` in `dir`, returning stdout.
pub fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.quotepath=off"])
        .args(args)
        .output()
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let help = if stderr.contains("not a git repository") {
            "run inside a git checkout, or check without --since/--staged".to_owned()
        } else if stderr.contains("unknown revision")
            || stderr.contains("bad revision")
            || stderr.contains("Not a valid")
        {
            "pass a revision that exists here, e.g. `--since origin/main` after `git fetch`"
                .to_owned()
        } else {
            "see git's message above".to_owned()
        };
        Err(GitError::Failed {
            args: args.join(" "),
            stderr,
            help,
        })
    }
}

/// Reads the change set of `source` for the repository rooted at `root` (which may be a
/// subdirectory of the git work tree: paths outside it are left out).
pub fn read(root: &Path, source: &Source) -> Result<ChangeSet, GitError> {
    let mut changes = Vec::new();
    match source {
        Source::Staged => {
            let has_head = git(root, &["rev-parse", "--verify", "--quiet", "HEAD"]).is_ok();
            if !has_head {
                // A repository without commits: everything in the index is new.
                let out = git(root, &["ls-files", "-z", "--cached"])?;
                for p in split_z(&out) {
                    changes.push(Change {
                        path: p,
                        kind: ChangeKind::Added,
                    });
                }
                return Ok(finish(changes));
            }
            let args = [
                "diff",
                "--cached",
                "--name-status",
                "-z",
                "-M",
                "--relative",
            ];
            parse_name_status(&git(root, &args)?, &mut changes);
        }
        Source::Since(rev) => {
            let base_out = git(root, &["merge-base", rev, "HEAD"])?;
            let base = String::from_utf8_lossy(&base_out).trim().to_owned();
            parse_name_status(
                &git(
                    root,
                    &["diff", "--name-status", "-z", "-M", "--relative", &base],
                )?,
                &mut changes,
            );
            for p in split_z(&git(
                root,
                &["ls-files", "-z", "--others", "--exclude-standard"],
            )?) {
                changes.push(Change {
                    path: p,
                    kind: ChangeKind::Added,
                });
            }
        }
    }
    Ok(finish(changes))
}

/// Every file git knows under `root` (tracked, plus untracked ones not ignored), relative
/// to `root`: the tree's file list without walking it.
pub fn tracked_files(root: &Path) -> Result<Vec<String>, GitError> {
    Ok(split_z(&git(
        root,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
    )?))
}

fn finish(mut changes: Vec<Change>) -> ChangeSet {
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes.dedup_by(|a, b| a.path == b.path);
    ChangeSet { changes }
}

fn split_z(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// `git diff --name-status -z`: `X\0path\0` or, for renames/copies, `R100\0old\0new\0`.
fn parse_name_status(out: &[u8], changes: &mut Vec<Change>) {
    let fields = split_z(out);
    let mut it = fields.into_iter();
    while let Some(status) = it.next() {
        let code = status.chars().next().unwrap_or('M');
        match code {
            'R' | 'C' => {
                let (Some(old), Some(new)) = (it.next(), it.next()) else {
                    break;
                };
                if code == 'R' {
                    changes.push(Change {
                        path: old,
                        kind: ChangeKind::Deleted,
                    });
                }
                changes.push(Change {
                    path: new,
                    kind: ChangeKind::Renamed,
                });
            }
            _ => {
                let Some(path) = it.next() else { break };
                let kind = match code {
                    'A' => ChangeKind::Added,
                    'D' => ChangeKind::Deleted,
                    _ => ChangeKind::Modified,
                };
                changes.push(Change { path, kind });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_status_with_renames() {
        let out = b"M\0a.rs\0R087\0old/x.rs\0new/x.rs\0D\0gone.md\0A\0n.rs\0";
        let mut v = Vec::new();
        parse_name_status(out, &mut v);
        let got: Vec<(&str, ChangeKind)> = v.iter().map(|c| (c.path.as_str(), c.kind)).collect();
        assert_eq!(
            got,
            [
                ("a.rs", ChangeKind::Modified),
                ("old/x.rs", ChangeKind::Deleted),
                ("new/x.rs", ChangeKind::Renamed),
                ("gone.md", ChangeKind::Deleted),
                ("n.rs", ChangeKind::Added),
            ]
        );
    }
}
