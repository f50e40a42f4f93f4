//! # source-unparsed
//!
//! ## What it finds
//! A `.rs` file of a workspace crate that does not parse, and a crate `Cargo.toml` that
//! is not valid TOML (or a workspace member without one). Files are read with
//! rust-analyzer's parser; one it reports an error in goes to `syn`, and the finding is
//! syn's, pointing at the place syn stopped. A file that cannot be read (a symlink, no
//! permission, not UTF-8, larger than 32 MiB) is one too, and so is one that nests deeper
//! than the checker's one depth budget for brackets, operators and chained calls together
//! (4,000; real code stays under 1,500): it is never handed to a recursive parser.
//!
//! ## Why
//! The checker fails closed: a file it cannot read could hold any import, so skipping it
//! would turn "no findings" into a guess. rustc would refuse the file too, so this is
//! almost always a real syntax error or a file that is not Rust at all.
//!
//! ## Example
//! ```rust,ignore
//! pub fn broken( {        // <- source-unparsed: expected one of ...
//! ```
//!
//! ## Fix
//! Fix the syntax (`cargo check` shows the same place), or move a file that is not Rust
//! source out of the crate. Code generated into the tree must parse as well.

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;
use crate::repo::gaps::{Gap, Why};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "source-unparsed",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a .rs file that does not parse, or a Cargo.toml that cannot be read (the check fails closed)",
    severity_note: "",
    finds: "a `.rs` file that does not parse or is not UTF-8 (name or bytes), a member Cargo.toml that cannot be read (a symlink, a folder, a FIFO) or is missing from a folder a member glob matches (fails closed, as cargo does)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    sink.extend(ctx.repo.gaps.iter().map(finding));
    for s in &ctx.sources {
        let Err(e) = &s.facts else { continue };
        let at = Location {
            line: e.line,
            column: e.column,
            offset: e.offset,
            len: 0,
        };
        sink.push(
            Finding::new(ID, s.path.clone(), at)
                .message(format!("cannot parse {}: {}", s.path, e.message))
                .label("the parser stopped here")
                .help("fix the syntax (cargo check shows the same error); scaffold checks no import of a file it cannot parse"),
        );
    }
}

/// What the repository's load could not read, as a finding.
fn finding(u: &Gap) -> Finding {
    let path = &u.path;
    let (message, label, help) = match &u.why {
        Why::Toml { message } => (
            format!("cannot parse {path}: {message}"),
            "invalid TOML",
            "fix the TOML syntax; until then scaffold cannot see this crate's dependencies"
                .to_owned(),
        ),
        Why::GlobMemberWithoutManifest { dir, glob } => (
            format!(
                "`{dir}` matches the workspace member `{glob}` but has no Cargo.toml; cargo would refuse the workspace"
            ),
            "member without a manifest",
            format!("restore {dir}/Cargo.toml, or add `{dir}` to `[workspace] exclude`"),
        ),
        Why::MemberWithoutManifest { dir } => (
            format!("workspace member `{dir}` has no Cargo.toml"),
            "member without a manifest",
            format!("create {dir}/Cargo.toml or remove `{dir}` from `[workspace] members`"),
        ),
        Why::ManifestUnreadable { dir } => (
            format!(
                "cannot read {path} (a symlink, not a regular file, or unreadable): crate `{dir}` was not checked"
            ),
            "unreadable manifest",
            "make it a regular, readable file inside the repository".to_owned(),
        ),
        Why::PackageNotTable => (
            "`package` is not a table".to_owned(),
            "expected [package]",
            "write the package as a `[package]` table with a `name`".to_owned(),
        ),
        Why::PackageUnnamed => (
            "the package has no `name`".to_owned(),
            "no name",
            "add `name = \"…\"` under `[package]`".to_owned(),
        ),
        Why::NameNotUtf8 => (
            format!(
                "the file name {path} is not UTF-8: cargo and rustc cannot build it, and it was not checked"
            ),
            "a name that is not UTF-8",
            "rename the file to a UTF-8 name".to_owned(),
        ),
        Why::SymlinkedSource => (
            format!(
                "{path} is a symlink: cargo would build what it points at, but scaffold checks only real files inside the repository, so its imports were not checked"
            ),
            "a symlinked source",
            "replace the link with the file itself".to_owned(),
        ),
    };
    Finding::new(ID, path.clone(), u.at)
        .message(message)
        .label(label)
        .help(help)
}
