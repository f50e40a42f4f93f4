//! Change sets: which files a range of history or the index touches, read from `git`
//! run as argv (never through a shell). Renames count as both paths; deletions count.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

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
    /// A file git reads that would hang it (a FIFO, a device, a folder): refused before
    /// git runs.
    #[error("{path} is not a regular file: git would block reading it")]
    #[diagnostic(
        code(scaffold::git),
        help("replace it with what git keeps there (a regular file), or remove it")
    )]
    Unsafe { path: String },
    #[error("`git {args}` did not finish within {seconds} s and was stopped")]
    #[diagnostic(
        code(scaffold::git),
        help(
            "a FIFO in place of a file git reads (a .gitignore, .git/info/exclude) hangs it; SCAFFOLD_GIT_TIMEOUT sets the wait in seconds"
        )
    )]
    Timeout { args: String, seconds: u64 },
    #[error("`git {args}` failed: {stderr}")]
    #[diagnostic(code(scaffold::git), help("{help}"))]
    Failed {
        args: String,
        stderr: String,
        help: String,
    },
}

/// How long a git command may run, unless `SCAFFOLD_GIT_TIMEOUT` (seconds) says
/// otherwise.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The files of a git directory git reads on most commands, relative to it.
const GIT_FILES: [&str; 6] = [
    "HEAD",
    "index",
    "config",
    "packed-refs",
    "commondir",
    "info/exclude",
];

/// The most of a `.git` file or `commondir` read.
const POINTER_LIMIT: u64 = 4096;

/// Runs git with `args` in `dir`, returning stdout. Nothing git is known to read blocks
/// it: the repository's `.git` and the files above are looked at first (a FIFO there is
/// refused), and git is stopped past a deadline (it reads `.gitignore` files of the tree
/// too, which nothing can look at beforehand).
pub fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    check_git_files(dir)?;
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.quotepath=off"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(GitError::Spawn)?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let timeout = git_timeout();
    let status = match child.wait_timeout(timeout).map_err(GitError::Spawn)? {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::Timeout {
                args: args.join(" "),
                seconds: timeout.as_secs(),
            });
        }
    };
    let out = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
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

/// Reads a child's pipe to its end on a thread of its own, so neither pipe fills while
/// the other is read or the deadline is waited for.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

fn git_timeout() -> Duration {
    std::env::var("SCAFFOLD_GIT_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| (1..=86_400).contains(s))
        .map_or(GIT_TIMEOUT, Duration::from_secs)
}

/// Refuses a file git would block on: the nearest `.git` above `dir` (a folder, or a file
/// naming one), then the files git reads in that folder and its common folder. Each is
/// looked at without being opened; a pointer file (`.git`, `commondir`) is read only as a
/// regular file, without blocking.
fn check_git_files(dir: &Path) -> Result<(), GitError> {
    let unsafe_at = |p: &Path| GitError::Unsafe {
        path: p.display().to_string(),
    };
    let gitdir = match std::env::var_os("GIT_DIR") {
        Some(d) => dir.join(d),
        None => {
            let Some(dot_git) = dir
                .ancestors()
                .map(|a| a.join(".git"))
                .find(|p| std::fs::symlink_metadata(p).is_ok())
            else {
                return Ok(());
            };
            let meta = std::fs::metadata(&dot_git).map_err(|_| unsafe_at(&dot_git))?;
            if meta.is_dir() {
                dot_git
            } else if meta.is_file() {
                let text = read_pointer(&dot_git).ok_or_else(|| unsafe_at(&dot_git))?;
                let Some(to) = text.trim().strip_prefix("gitdir:") else {
                    return Ok(());
                };
                let base = dot_git.parent().unwrap_or(dir);
                base.join(to.trim())
            } else {
                return Err(unsafe_at(&dot_git));
            }
        }
    };
    let mut dirs = vec![gitdir.clone()];
    if let Some(common) = read_pointer(&gitdir.join("commondir")) {
        dirs.push(gitdir.join(common.trim()));
    }
    for d in &dirs {
        for f in GIT_FILES {
            let path = d.join(f);
            match std::fs::metadata(&path) {
                Ok(m) if !m.is_file() => return Err(unsafe_at(&path)),
                _ => {}
            }
        }
    }
    Ok(())
}

/// A small pointer file git keeps (`.git` of a worktree, `commondir`), read only as a
/// regular file and without blocking; `None` otherwise.
fn read_pointer(path: &Path) -> Option<String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(POINTER_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
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
