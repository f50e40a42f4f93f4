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
    sink.extend(
        ctx.repo
            .workspace_findings
            .iter()
            .filter(|f| f.rule == ID)
            .cloned(),
    );
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
