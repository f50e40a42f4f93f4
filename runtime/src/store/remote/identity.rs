//! The worker's identity on its own disk: the state directory (0700, this user's, never
//! through a symlink), the Ed25519 device key in it (0600), and what enrollment answered
//! (`identity.json`: the coordinator's worker id, account and kinds). Enrollment happens
//! once: the token file is read, spent, and deleted.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::protocol::tokens;

/// The device key's file in the state directory.
pub(crate) const KEY_FILE: &str = "device.key";
/// The enrolled identity's file in the state directory.
pub(crate) const IDENTITY_FILE: &str = "identity.json";
/// The most bytes read of a token, key or identity file.
const SMALL_FILE: u64 = 64 * 1024;

/// What enrollment answered, kept beside the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub worker_id: String,
    pub account: String,
    pub kinds: Option<Vec<String>>,
    /// The coordinator's origin it enrolled with: another coordinator is another identity.
    pub coordinator: String,
}

/// Makes the state directory when missing (0700); refuses one reached through a symlink,
/// not a directory, or open to others (group or world bits).
pub(crate) fn state_dir(dir: &Path) -> Result<(), StoreError> {
    let refuse = |reason: &str| StoreError::RemoteState {
        path: dir.to_path_buf(),
        reason: reason.to_owned(),
    };
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| refuse(&format!("cannot create it: {e}")))?;
            // The mode asked may have been narrowed by the umask, never widened; set it.
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| refuse(&format!("cannot set its mode: {e}")))?;
            Ok(())
        }
        Err(e) => Err(refuse(&format!("cannot read it: {e}"))),
        Ok(m) if m.file_type().is_symlink() => Err(refuse(
            "it is a symlink; give the real directory, so no one can swap it for theirs",
        )),
        Ok(m) if !m.is_dir() => Err(refuse("it is not a directory")),
        Ok(m) if m.mode() & 0o077 != 0 => Err(refuse(&format!(
            "its mode is {:o}; others may read the device key (chmod 700)",
            m.mode() & 0o777
        ))),
        Ok(_) => Ok(()),
    }
}

/// Reads a small regular file of the state directory (or the token file): never through a
/// symlink, never one open to others when `private`.
fn read_small(path: &Path, private: bool) -> Result<Option<Vec<u8>>, StoreError> {
    let refuse = |reason: String| StoreError::RemoteState {
        path: path.to_path_buf(),
        reason,
    };
    let m = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(format!("cannot read it: {e}"))),
        Ok(m) => m,
    };
    if m.file_type().is_symlink() {
        return Err(refuse("it is a symlink".to_owned()));
    }
    if !m.is_file() {
        return Err(refuse("it is not a regular file".to_owned()));
    }
    if private && m.mode() & 0o077 != 0 {
        return Err(refuse(format!(
            "its mode is {:o}; it must be readable by this user only (chmod 600)",
            m.mode() & 0o777
        )));
    }
    if m.len() > SMALL_FILE {
        return Err(refuse(format!("it is over {SMALL_FILE} bytes")));
    }
    fs::read(path)
        .map(Some)
        .map_err(|e| refuse(format!("cannot read it: {e}")))
}

/// Writes `bytes` to `path` as a new 0600 file, by a temporary file and a rename (a crash
/// leaves the old file or the new one, never half of one).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let fail = |e: std::io::Error| StoreError::RemoteState {
        path: path.to_path_buf(),
        reason: format!("cannot write it: {e}"),
    };
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(fail)?;
    f.write_all(bytes).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    drop(f);
    fs::rename(&tmp, path).map_err(fail)
}

/// The device key of `dir`: read, or made (from the OS's CSPRNG) and written 0600.
pub(crate) fn device_key(dir: &Path) -> Result<SigningKey, StoreError> {
    let path = dir.join(KEY_FILE);
    if let Some(bytes) = read_small(&path, true)? {
        let text = String::from_utf8_lossy(&bytes);
        let seed = tokens::unb64(text.trim())
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .ok_or_else(|| StoreError::RemoteState {
                path: path.clone(),
                reason: "it is not a device key (32 bytes, unpadded base64url)".to_owned(),
            })?;
        return Ok(SigningKey::from_bytes(&seed));
    }
    let seed = tokens::random_32().map_err(|e| StoreError::RemoteState {
        path: path.clone(),
        reason: format!("no randomness for a key: {e}"),
    })?;
    write_private(&path, format!("{}\n", tokens::b64(&seed)).as_bytes())?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The enrolled identity kept in `dir`, if any.
pub(crate) fn load(dir: &Path) -> Result<Option<Identity>, StoreError> {
    let path = dir.join(IDENTITY_FILE);
    let Some(bytes) = read_small(&path, true)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::RemoteState {
            path,
            reason: format!("it is not an identity: {e}"),
        })
}

/// Keeps `identity` in `dir`.
pub(crate) fn save(dir: &Path, identity: &Identity) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(identity).map_err(|e| StoreError::RemoteState {
        path: dir.join(IDENTITY_FILE),
        reason: e.to_string(),
    })?;
    write_private(&dir.join(IDENTITY_FILE), &bytes)
}

/// The enrollment token in `path` (a regular file, never a symlink), trimmed.
pub(crate) fn read_token(path: &Path) -> Result<String, StoreError> {
    let bytes = read_small(path, false)?.ok_or_else(|| StoreError::RemoteState {
        path: path.to_path_buf(),
        reason: "it does not exist; make one with `scaffold queue enroll --out`".to_owned(),
    })?;
    let token = String::from_utf8(bytes)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|t| t.starts_with(tokens::ENROLL_PREFIX))
        .ok_or_else(|| StoreError::RemoteState {
            path: path.to_path_buf(),
            reason: "it holds no enrollment token (scf_enr_…)".to_owned(),
        })?;
    Ok(token)
}

/// Deletes the spent token file; a failure is a warning (the token is spent either way).
pub(crate) fn spend_token(path: &PathBuf) {
    if let Err(e) = fs::remove_file(path) {
        tracing::warn!(path = %path.display(), error = %e, "cannot delete the spent enrollment token file; it is spent, delete it");
    }
}
