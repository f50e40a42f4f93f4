//! A job's files on the worker (README.md#artifacts-in-handlers): its input artifacts,
//! fetched and verified by SHA-256 before a handler reads them, the outputs it uploads, and
//! its workspace directory, kept until the cleanup policy allows.
//!
//! Names are file names, never paths or URIs: an artifact is stored and referred to by its
//! digest, so no result ever names `file://`, `worker://` or a path on the worker's disk.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The largest artifact a worker fetches or uploads: the coordinator's default cap.
pub const MAX_ARTIFACT_BYTES: u64 = 64 << 20;

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Whether `s` is a lower-case hex SHA-256 (64 characters).
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why `name` cannot name an artifact, if it cannot: a name is 1 to 128 of `A-Z a-z 0-9 . _
/// -`, starting with a letter or digit — a file name in the job's workspace, never a path,
/// a URI (`file://…`, `worker://…`) or `..`.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > 128 {
        return Some("an artifact name is 1 to 128 characters");
    }
    if name.contains("://") {
        return Some("an artifact name is not a URI: artifacts are named by their digest");
    }
    if name.contains('/') || name.contains('\\') {
        return Some("an artifact name is a file name, not a path");
    }
    let first_ok = name.as_bytes()[0].is_ascii_alphanumeric();
    if !first_ok
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Some(
            "an artifact name is letters, digits, `.`, `_` and `-`, starting with a letter or digit",
        );
    }
    None
}

/// Why `bytes` are not the artifact `sha256` of `size` bytes, if they are not.
pub fn mismatch(bytes: &[u8], sha256: &str, size: u64) -> Option<String> {
    if bytes.len() as u64 != size {
        return Some(format!(
            "{} bytes where {size} were named",
            bytes.len() as u64
        ));
    }
    let got = sha256_hex(bytes);
    (got != sha256).then(|| format!("its bytes hash to {got}, not {sha256}"))
}

/// When a job's workspace is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cleanup {
    /// Once its outcome is handed to the store, whatever the outcome.
    Always,
    /// Once a completion is handed to the store; a failed, parked or lost attempt's
    /// workspace is kept for whoever looks into it (the default).
    #[default]
    KeepFailed,
    /// Never: whoever runs the worker removes them.
    Never,
}

impl Cleanup {
    /// Whether a workspace whose attempt ended `completed` (or not) is removed.
    pub fn removes(self, completed: bool) -> bool {
        match self {
            Cleanup::Always => true,
            Cleanup::KeepFailed => completed,
            Cleanup::Never => false,
        }
    }
}

/// Where a loop keeps its jobs' workspaces, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspaces {
    /// The directory holding one directory per job (`<item>-<fence>`), made 0700.
    pub root: PathBuf,
    pub cleanup: Cleanup,
}

impl Workspaces {
    /// Under the system's temporary directory, in a folder whose name no other user of the
    /// host can guess and make first; cleaned up by the default policy.
    pub fn in_temp() -> Self {
        Workspaces::new(
            std::env::temp_dir().join(format!("scaffold-jobs-{:016x}", crate::retry::random_u64())),
            Cleanup::default(),
        )
    }

    /// `root`, cleaned up by `cleanup`.
    pub fn new(root: impl Into<PathBuf>, cleanup: Cleanup) -> Self {
        Workspaces {
            root: root.into(),
            cleanup,
        }
    }
}

/// Makes `dir` (and its parents) a private directory of this user's, refusing one reached
/// through a symlink; a stale one of the same name (an earlier process's) is emptied.
pub(crate) fn fresh_private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent() {
        private_dir(parent)?;
    }
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(std::io::Error::other(format!(
                "{} is a symlink; a workspace is never reached through one",
                dir.display()
            )));
        }
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(dir)?,
        Ok(_) => std::fs::remove_file(dir)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    make_dir(dir)
}

/// Makes `dir` when missing (its parents as the user's own directories, their modes and
/// links as they are: they are the configuration's), private to this user; refuses `dir`
/// itself when it is a symlink or not a directory.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(std::io::Error::other(format!(
            "{} is a symlink; a workspace is never reached through one",
            dir.display()
        ))),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(std::io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent()
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(parent)?;
            }
            make_dir(dir)
        }
        Err(e) => Err(e),
    }
}

fn make_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    match b.create(dir) {
        // Made meanwhile by another task of this loop: a directory, not a link to one.
        Err(e)
            if e.kind() == std::io::ErrorKind::AlreadyExists
                && std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// `path`'s bytes, refused past [`MAX_ARTIFACT_BYTES`] without reading further.
pub(crate) fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_ARTIFACT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ARTIFACT_BYTES {
        return Err(std::io::Error::other(format!(
            "over {MAX_ARTIFACT_BYTES} bytes, the largest artifact"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_file_names_never_paths_or_uris() {
        for ok in ["report.csv", "in.txt", "a", "part-0001_of_3.bin", "0"] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "file:///etc/passwd",
            "worker://host/out",
            "/tmp/out",
            "../out",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "C:out",
            "with space",
            "tab\t",
            &"x".repeat(129),
        ] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn a_mismatch_names_the_size_or_the_digest() {
        let sha = sha256_hex(b"abc");
        assert_eq!(mismatch(b"abc", &sha, 3), None);
        assert!(
            mismatch(b"abd", &sha, 3)
                .expect("differs")
                .contains("hash to")
        );
        assert!(
            mismatch(b"abcd", &sha, 3)
                .expect("longer")
                .contains("4 bytes")
        );
    }

    #[test]
    fn cleanup_keeps_what_the_policy_keeps() {
        assert!(Cleanup::Always.removes(false));
        assert!(Cleanup::KeepFailed.removes(true));
        assert!(!Cleanup::KeepFailed.removes(false));
        assert!(!Cleanup::Never.removes(true));
    }

    #[cfg(unix)]
    #[test]
    fn a_workspace_is_private_and_never_through_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        // No tempfile here: the vendored runtime's tests build with no dev-dependencies.
        let home = std::env::temp_dir().join(format!(
            "scaffold-workspace-test-{}-{}",
            std::process::id(),
            crate::retry::random_u64()
        ));
        let dir = home.join("jobs").join("1-1");
        fresh_private_dir(&dir).expect("made");
        std::fs::write(dir.join("stale"), b"x").expect("write");
        fresh_private_dir(&dir).expect("made again, emptied");
        assert!(!dir.join("stale").exists());
        let mode = std::fs::metadata(&dir).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let link = home.join("jobs").join("2-1");
        std::os::unix::fs::symlink(&home, &link).expect("symlink");
        let err = fresh_private_dir(&link).expect_err("a symlink");
        assert!(err.to_string().contains("symlink"), "{err}");
        assert!(home.join("jobs").exists(), "the link's target is untouched");
        std::fs::remove_dir_all(&home).expect("clean up");
    }
}
