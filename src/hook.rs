//! `scaffold hook install`: a git pre-commit hook running `scaffold check --staged`.

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use thiserror::Error;

use crate::changes::{GitError, git};

/// Marks hooks scaffold wrote (and may therefore replace).
pub const MARKER: &str = "# scaffold:hook";

#[derive(Debug, Error, Diagnostic)]
pub enum HookError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Git(#[from] GitError),
    #[error("{} exists and was not written by scaffold", path.display())]
    #[diagnostic(
        code(scaffold::hook_exists),
        help("pass --force to replace it, or call `scaffold check --staged` from your own hook")
    )]
    Exists { path: PathBuf },
    #[error("cannot write {}", path.display())]
    #[diagnostic(
        code(scaffold::io),
        help("check the permissions of the hooks directory")
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The hook's text. `subdir` is the scaffold root relative to the git work tree ("" when
/// they are the same); git runs hooks from the top of the work tree.
pub fn script(subdir: &str) -> String {
    let chdir = if subdir.is_empty() {
        String::new()
    } else {
        format!(" -C '{}'", subdir.replace('\'', "'\\''"))
    };
    format!(
        "#!/bin/sh\n{MARKER} v1: written by `scaffold hook install`; re-run it to update.\n\
         # Checks the staged changes; `git commit --no-verify` skips it.\n\
         exec scaffold{chdir} check --staged\n"
    )
}

/// Installs the hook for the repository rooted at `root`; returns the hook's path.
pub fn install(root: &Path, force: bool) -> Result<PathBuf, HookError> {
    let hooks = String::from_utf8_lossy(&git(
        root,
        &["rev-parse", "--path-format=absolute", "--git-path", "hooks"],
    )?)
    .trim()
    .to_owned();
    let top = String::from_utf8_lossy(&git(root, &["rev-parse", "--show-toplevel"])?)
        .trim()
        .to_owned();
    let top = std::fs::canonicalize(&top).unwrap_or_else(|_| PathBuf::from(&top));
    let root_c = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let subdir = crate::repo::files::relative(&top, &root_c).unwrap_or_default();
    let hooks = PathBuf::from(hooks);
    let path = hooks.join("pre-commit");
    // Anything there but a hook scaffold wrote (a symlink, a FIFO, another hook) is
    // replaced only with --force, and never opened in a way that could block or follow.
    if !force && std::fs::symlink_metadata(&path).is_ok() && !written_by_scaffold(&path) {
        return Err(HookError::Exists { path });
    }
    let write_err = |source| HookError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&hooks).map_err(write_err)?;
    // A new file of its own (O_EXCL, a random name), so a link planted in the hooks
    // folder is never written through; renamed over the hook, which replaces a link at
    // its name, never its target.
    let mut tmp = tempfile::Builder::new()
        .prefix(".pre-commit.scaffold-")
        .tempfile_in(&hooks)
        .map_err(write_err)?;
    std::io::Write::write_all(&mut tmp, script(&subdir).as_bytes()).map_err(write_err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o755))
            .map_err(write_err)?;
    }
    tmp.persist(&path).map_err(|e| write_err(e.error))?;
    Ok(path)
}

/// The most of an existing hook read to tell whether scaffold wrote it.
const HOOK_LIMIT: u64 = 64 << 10;

/// Whether the hook at `path` is a regular file holding scaffold's marker: opened without
/// following a link and without blocking (a FIFO there would hang the read).
fn written_by_scaffold(path: &Path) -> bool {
    use std::io::Read;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let Ok(file) = opts.open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut text = String::new();
    file.take(HOOK_LIMIT).read_to_string(&mut text).is_ok() && text.contains(MARKER)
}
