//! What loading a repository could not read, typed. The repository does not decide how a
//! gap is reported: rule `source-unparsed` turns each into a finding, so a gap is never a
//! silent skip.

use crate::check::finding::Location;

/// A file, or part of the workspace, the load could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// The repo-relative file the problem is in.
    pub path: String,
    pub at: Location,
    pub why: Why,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// A manifest that is not TOML (the parser's first line).
    Toml { message: String },
    /// A folder a workspace member glob matches has no Cargo.toml.
    GlobMemberWithoutManifest { dir: String, glob: String },
    /// A workspace member named literally has no Cargo.toml.
    MemberWithoutManifest { dir: String },
    /// A member's Cargo.toml is there but cannot be read (a symlink, a folder, a FIFO).
    ManifestUnreadable { dir: String },
    /// A member (or the folder a member glob lists) reached through a symlink or not a
    /// regular file: cargo would build it, scaffold does not read it.
    MemberUnreadable { dir: String, reason: String },
    /// A folder a member glob matches is a symlink to a folder: cargo builds the crate
    /// in it, scaffold does not follow it.
    MemberLinked { dir: String, glob: String },
    /// A member glob that is not a glob.
    MemberGlobInvalid { glob: String },
    /// A folder cargo finds targets in (`tests/`, `src/bin/`, …) that cannot be listed
    /// (a symlink): the targets in it were not checked.
    TargetsUnlisted { folder: String, reason: String },
    /// `package` is not a table.
    PackageNotTable,
    /// The package has no `name`.
    PackageUnnamed,
    /// A file name that is not UTF-8.
    NameNotUtf8,
    /// A `.rs` file that is a symlink.
    SymlinkedSource,
    /// An ignore file the walk could not read as a regular file (a FIFO, a symlink), or
    /// a folder it could not list.
    WalkUnread { reason: String },
}
