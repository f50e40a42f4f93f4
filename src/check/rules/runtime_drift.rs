//! # runtime-drift
//!
//! ## What it finds
//! A vendored runtime (`platform/runtime/`) that is not the runtime this scaffold ships,
//! or that was edited since it was vendored. `scaffold init` copies the runtime there and
//! writes its stamp, `platform/runtime/.scaffold-stamp`:
//!
//! ```text
//! version = "0.1.0"
//! hash = "sha256:<64 hex digits>"
//! ```
//!
//! `hash` is SHA-256 over the runtime's `Cargo.toml`, `src/**` and `migrations/**`: files
//! sorted by path relative to the runtime's root, each fed as its path, a NUL byte, its
//! length (8 bytes, big-endian) and its bytes, CRLF read as LF. The rule reports
//! - a `platform/runtime/` without a stamp (or a stamp without `version`/`hash`);
//! - files whose hash is not the stamp's: the vendored copy was edited by hand;
//! - a stamp that is not this scaffold's runtime (`scaffold --version` tells which scaffold
//!   you run).
//!
//! A repository without `platform/runtime/` is not checked; a scaffold built without its
//! `runtime/` sources (so with no runtime to compare) checks nothing either.
//!
//! ## Why
//! Generated workers, templates and this checker assume the runtime's semantics (fencing,
//! leases, outbox ids). A vendored copy that drifted — an old version, or a local patch —
//! silently changes them, and the next update overwrites the patch.
//!
//! ## Example
//! ```text
//! platform/runtime/.scaffold-stamp:   version = "0.0.9"   # this scaffold ships 0.1.0
//! ```
//!
//! ## Fix
//! Replace `platform/runtime/`'s `Cargo.toml`, `src/` and `migrations/` with those of the
//! scaffold-runtime this scaffold ships and write its stamp (`scaffold init` does both for
//! a new repository), or run the scaffold release that matches the stamp. Upstream local
//! patches to scaffold-runtime instead of editing the vendored copy.

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;
use super::super::workqueue::stamp::{self, RUNTIME_DIR, STAMP_PATH};
use crate::source::SourceFile;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "runtime-drift",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "platform/runtime differs from the runtime this scaffold ships",
    severity_note: "",
    finds: "`platform/runtime` is not the runtime this scaffold ships, or was edited since stamped (`.scaffold-stamp`)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let repo = ctx.repo;
    let prefix = format!("{RUNTIME_DIR}/");
    let Some(first) = repo.files.iter().find(|f| f.starts_with(&prefix)) else {
        return;
    };
    let (ours_version, ours_hash) = stamp::runtime_stamp();
    if ours_hash.is_empty() {
        return;
    }
    let update = format!(
        "replace platform/runtime's Cargo.toml, src/ and migrations/ with those of scaffold-runtime {ours_version} (the runtime this scaffold ships) and write its stamp, or run the scaffold release that matches the stamp"
    );
    let text = match repo.read_listed(STAMP_PATH) {
        Ok(text) => text,
        Err(why) => {
            sink.push(
                Finding::new(ID, STAMP_PATH, Location::START)
                    .message(format!(
                        "{STAMP_PATH} cannot be read ({why}): which scaffold-runtime {RUNTIME_DIR} holds is unknown"
                    ))
                    .label("stamp not read")
                    .help(format!(
                        "make {STAMP_PATH} a regular file inside the repository (it is never read through a symlink); {update}"
                    )),
            );
            return;
        }
    };
    let Some(text) = text else {
        let manifest = format!("{RUNTIME_DIR}/Cargo.toml");
        let at = if repo.files.binary_search(&manifest).is_ok() {
            manifest
        } else {
            first.clone()
        };
        sink.push(
            Finding::new(ID, at, Location::START)
                .message(format!(
                    "{RUNTIME_DIR} has no stamp ({STAMP_PATH}): which scaffold-runtime it holds is unknown"
                ))
                .label("unstamped runtime")
                .help(update),
        );
        return;
    };
    let file = SourceFile::new(STAMP_PATH, text);
    let st = stamp::parse(&file);
    let (Some((version, version_at)), Some((hash, hash_at))) = (&st.version, &st.hash) else {
        sink.push(
            Finding::new(ID, STAMP_PATH, Location::START)
                .message(format!(
                    "{STAMP_PATH} lacks `version = \"…\"` or `hash = \"…\"`"
                ))
                .label("incomplete stamp")
                .help(update),
        );
        return;
    };
    let content = stamp::vendored_hash(repo);
    let edited = content.as_deref() != Some(hash.as_str());
    let other = hash != ours_hash;
    let edited_note = "its files were edited since it was stamped (their hash is not the stamp's)";
    let (at, message) = match (edited, other) {
        (false, false) => return,
        (true, false) => (
            *hash_at,
            format!("{RUNTIME_DIR} is scaffold-runtime {version}, but {edited_note}"),
        ),
        (false, true) if version != ours_version => (
            *version_at,
            format!(
                "{RUNTIME_DIR} is scaffold-runtime {version}; this scaffold ships {ours_version}"
            ),
        ),
        (false, true) => (
            *hash_at,
            format!(
                "{RUNTIME_DIR} is stamped scaffold-runtime {version} with a hash other than the {ours_version} this scaffold ships"
            ),
        ),
        (true, true) => (
            *version_at,
            format!(
                "{RUNTIME_DIR} is stamped scaffold-runtime {version}, not the {ours_version} this scaffold ships, and {edited_note}"
            ),
        ),
    };
    let help = if edited {
        format!("upstream local changes to scaffold-runtime first; then {update}")
    } else {
        update
    };
    sink.push(
        Finding::new(ID, STAMP_PATH, at)
            .message(message)
            .label("runtime drift")
            .help(help),
    );
}
