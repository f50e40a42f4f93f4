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
//! The files are the module tree cargo compiles, whatever ignore files say: a file a
//! `mod`, a `#[path]`, an `include!` or a target reaches that cannot be read as a regular
//! file through real folders inside the repository (a symlinked module folder, a FIFO in
//! a module's place, a `#[path]` out of the repository) is a finding at the `mod` line
//! that reaches it. So is a member folder that is a symlink, a folder cargo finds targets
//! in that cannot be listed, and an ignore file (`.gitignore`, `.ignore`,
//! `.git/info/exclude`) that is not a regular file (its folder is walked as if it ignored
//! nothing).
//!
//! ## Why
//! The checker fails closed: a file it cannot read could hold any import, so skipping it
//! would turn "no findings" into a guess. rustc would refuse the file too, so this is
//! almost always a real syntax error or a file that is not Rust at all.
//!
//! ## Example
//! ```rust,ignore
//! pub fn broken( {        // <- source-unparsed: expected one of ...
//! mod sneaky;             // <- source-unparsed, when src/sneaky is a symlink
//! ```
//!
//! ## Fix
//! Fix the syntax (`cargo check` shows the same place), or move a file that is not Rust
//! source out of the crate. Code generated into the tree must parse as well. Replace a
//! symlinked module or crate folder with the folder itself, inside the repository.

use super::super::context::{Context, Unreadable, UnreadableWhy};
use super::super::finding::{Finding, Location};
use super::super::modtree::{Via, Why as TreeWhy};
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
    finds: "a `.rs` file that does not parse or is not UTF-8 (name or bytes), a file cargo's module tree reaches that cannot be read as a regular file inside the root (a symlink on the way, a FIFO, a `#[path]` out of the repository: at the `mod` line), a member Cargo.toml that cannot be read (a symlink, a folder, a FIFO) or is missing from a folder a member glob matches, a symlinked member folder, an ignore file that is not a regular file (fails closed, as cargo does)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    sink.extend(ctx.repo.gaps.iter().map(finding));
    for u in &ctx.unreadable {
        sink.push(unreadable(ctx, u));
    }
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
        Why::MemberUnreadable { dir, reason } => (
            format!(
                "workspace member `{dir}` cannot be read ({reason}): cargo would build it, and it was not checked"
            ),
            "unreadable member",
            format!(
                "make `{dir}` a real folder with a regular Cargo.toml inside the repository, or remove it from `[workspace] members`"
            ),
        ),
        Why::MemberLinked { dir, glob } => (
            format!(
                "`{dir}` matches the workspace member `{glob}` and is a symlink to a folder: cargo builds the crate it points at, scaffold reads only real folders inside the repository, so it was not checked"
            ),
            "a symlinked member",
            format!(
                "replace the link `{dir}` with the crate's folder, or add `{dir}` to `[workspace] exclude`"
            ),
        ),
        Why::MemberGlobInvalid { glob } => (
            format!(
                "workspace member `{glob}` is not a valid glob: cargo would refuse the workspace"
            ),
            "invalid member glob",
            "fix the pattern (`*`, `?`, `[…]`)".to_owned(),
        ),
        Why::TargetsUnlisted { folder, reason } => (
            format!(
                "cargo finds targets in `{folder}`, which cannot be listed ({reason}): the targets in it were not checked"
            ),
            "target folder unreadable",
            format!("make `{folder}` a real folder inside the repository"),
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
        Why::WalkUnread { reason }
            if [".gitignore", ".ignore", "info/exclude"]
                .iter()
                .any(|n| path.ends_with(n)) =>
        {
            (
                format!(
                    "cannot read the ignore file {path} ({reason}): scaffold reads one only as a regular file, and walked its folder as if it ignored nothing"
                ),
                "unreadable ignore file",
                format!("make {path} a regular file inside the repository"),
            )
        }
        Why::WalkUnread { reason } => (
            format!("cannot list {path} ({reason}): the files in it were not checked"),
            "unreadable folder",
            format!("make {path} a readable folder"),
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

/// A file a crate's module tree reaches that cannot be read, as a finding at what reaches
/// it: the `mod` or `include!` in the declaring file, or the crate's manifest for a
/// target's root.
fn unreadable(ctx: &Context<'_>, u: &Unreadable) -> Finding {
    let path = &u.path;
    let what = match &u.via {
        Via::Mod(name) => format!("`mod {name};` reaches {path}"),
        Via::Include(inc) => format!("`include!(\"{inc}\")` reaches {path}"),
        Via::Target => format!("the target root {path}"),
    };
    let (message, label, help) = match &u.why {
        UnreadableWhy::Tree(TreeWhy::Symlink(at)) => (
            if at == path {
                format!(
                    "{what}, which is a symlink: cargo builds what it points at, but scaffold reads only real files inside the repository, so its imports were not checked"
                )
            } else {
                format!(
                    "{what} through the symlink `{at}`: cargo builds it, but scaffold reads only real files through real folders inside the repository, so its imports were not checked"
                )
            },
            "reached through a symlink",
            format!("replace `{at}` with the real folder or file, inside the repository"),
        ),
        UnreadableWhy::Tree(TreeWhy::NotRegular) => (
            format!(
                "{what}, which is not a regular file (a FIFO, a device or a folder): cargo would read it, scaffold does not, so nothing in it was checked"
            ),
            "not a regular file",
            format!("make {path} a regular Rust file"),
        ),
        UnreadableWhy::Tree(TreeWhy::OutsideRoot) => (
            format!(
                "{what}, outside the repository: cargo builds a file scaffold cannot check"
            ),
            "leaves the repository",
            "keep every file of a crate's module tree inside the repository".to_owned(),
        ),
        UnreadableWhy::Tree(TreeWhy::Io(e)) => (
            format!("{what}, which cannot be looked at ({e}): its imports were not checked"),
            "cannot be read",
            format!("make {path} readable"),
        ),
        UnreadableWhy::TooDeep => (
            format!(
                "{path} is reached through a chain of files outside their crates' folders (or hidden from the walk) longer than scaffold follows: it was not checked"
            ),
            "module tree too deep to follow",
            "keep module files inside their crate's folder, or shorten the chain of `#[path]` modules".to_owned(),
        ),
    };
    let (file, at) = match &u.from {
        Some(from) => {
            let text = ctx
                .sources
                .binary_search_by(|s| s.path.as_str().cmp(from))
                .ok()
                .map(|i| ctx.sources[i].file().clone())
                .or_else(|| {
                    ctx.repo
                        .read(from)
                        .map(|t| crate::source::SourceFile::new(from.clone(), t))
                });
            let at = text
                .as_ref()
                .map_or(Location::START, |f| declaration(f, &u.via));
            (from.clone(), at)
        }
        None => {
            let krate = &ctx.repo.workspace.crates[u.krate];
            (krate.manifest.path.clone(), krate.package_loc)
        }
    };
    Finding::new(ID, file, at)
        .message(message)
        .label(label)
        .help(help)
}

/// Where `file` declares what `via` names: the `mod` keyword of `mod <name>` (or the
/// `include` of `include!`), found by token so a comment or a string saying it is not
/// taken; the start of the file when no token matches (a macro built the declaration).
fn declaration(file: &crate::source::SourceFile, via: &Via) -> Location {
    use ra_ap_rustc_lexer::{FrontmatterAllowed, TokenKind, tokenize};
    let text = &file.text;
    let (keyword, name) = match via {
        Via::Mod(name) => ("mod", name.as_str()),
        Via::Include(_) => ("include", "!"),
        Via::Target => return Location::START,
    };
    let mut at = 0usize;
    let mut pending: Option<usize> = None;
    for token in tokenize(text, FrontmatterAllowed::No) {
        let start = at;
        at += token.len as usize;
        let word = &text[start..at];
        match token.kind {
            TokenKind::Whitespace
            | TokenKind::LineComment { .. }
            | TokenKind::BlockComment { .. } => continue,
            _ => {}
        }
        if let Some(kw) = pending.take() {
            let matches = match token.kind {
                TokenKind::Ident => word == name,
                TokenKind::RawIdent => word.strip_prefix("r#") == Some(name),
                TokenKind::Bang => name == "!",
                _ => false,
            };
            if matches {
                return Location::in_file(file, kw, keyword.len());
            }
        }
        if token.kind == TokenKind::Ident && word == keyword {
            pending = Some(start);
        }
    }
    Location::START
}
