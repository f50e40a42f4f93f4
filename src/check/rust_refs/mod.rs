//! What a Rust source file says about other crates: every `use`, `extern crate` and
//! qualified path whose first segment may name a crate, with its precise position and
//! whether it sits in test-only (`#[cfg(test)]`) code.
//!
//! Every item is visited whatever its `cfg`, so cfg-gated code is checked on every cfg.
//! Token trees (macro arguments, `macro_rules!` bodies, attribute arguments) are read for
//! paths by one reader both scans share (`tt.rs`); what a macro expands to is not seen.
//! Each file also reports its `mod` declarations, `include!` literals and `use super::*`,
//! from which `check::modtree` grows each crate's module tree.
//!
//! A name the file binds (a `mod`, what a `use` brings in) hides a crate of that name in the
//! paths written in the module or block it is bound in, and the blocks inside it — not in
//! another module, nor in an inline module inside it unless that one says `use super::*;`.
//! A `::name` path always names an extern crate (edition 2018 on).
//!
//! Two scans find the same facts: `fast` (rust-analyzer's parser, no tree) takes every
//! file its parser accepts without error; `syn_scan` (a full syn parse) takes the rest and
//! has the last word on what is a parse failure.

pub mod depth;
mod fast;
mod lex;
mod quiet;
mod syn_scan;
mod tt;

use std::collections::HashSet;

use crate::repo::workspace::DepKind;

/// How a file names another crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RefKind {
    Use,
    Path,
    ExternCrate,
    /// A path inside a token tree (macro arguments, a `macro_rules!` body, an attribute's
    /// arguments). A macro's own syntax may look like a path (`code(nu::compile::x)`), so
    /// such a reference counts only for a crate the file's crate declares.
    Token,
}

impl RefKind {
    /// A path (not an import): a name the file binds shadows it.
    pub fn is_path(self) -> bool {
        matches!(self, RefKind::Path | RefKind::Token)
    }
}

/// The names files are scanned for (every name code may use for a workspace crate). Each
/// path's first segment is looked up: a length and first-byte filter answers most of them
/// without hashing the name.
#[derive(Debug, Default)]
pub struct Candidates {
    names: HashSet<String>,
    /// Bit `n`: a name of `n` bytes (63: 63 or more).
    lens: u64,
    /// Bit `b`: a name starting with byte `b`.
    firsts: [u64; 4],
}

/// A name's filter bits: its length's bit, and its first byte's word and bit in `firsts`.
fn filter_bits(name: &str) -> Option<(u64, usize, u64)> {
    let &first = name.as_bytes().first()?;
    Some((
        1 << name.len().min(63),
        usize::from(first >> 6),
        1 << (first & 63),
    ))
}

impl Candidates {
    pub fn contains(&self, name: &str) -> bool {
        filter_bits(name).is_some_and(|(len, word, bit)| {
            self.lens & len != 0 && self.firsts[word] & bit != 0 && self.names.contains(name)
        })
    }
}

impl<S: Into<String>> FromIterator<S> for Candidates {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut c = Candidates::default();
        for name in iter {
            let name: String = name.into();
            if let Some((len, word, bit)) = filter_bits(&name) {
                c.lens |= len;
                c.firsts[word] |= bit;
            }
            c.names.insert(name);
        }
        c
    }
}

/// One place a file names a crate.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CrateRef {
    /// The first path segment as written (after resolving `extern crate … as` aliases).
    pub name: String,
    pub kind: RefKind,
    /// Normal, or Dev inside `#[cfg(test)]`; the file's own scope is applied later.
    pub scope: DepKind,
    pub line: usize,
    pub column: usize,
    pub offset: usize,
    pub len: usize,
}

/// What one file contributes.
///
/// In the cache its module-tree facts are one optional group ([`TreeWire`]): most files
/// declare no module, bind no candidate, glob-import nothing and include nothing, and a
/// warm run decodes every file's entry, so for them the group is one byte, not four
/// empty fields.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(from = "OwnedWire")]
pub struct RustFacts {
    pub refs: Vec<CrateRef>,
    /// Out-of-line module declarations (`mod x;`), in order: what the module tree of its
    /// crate grows from this file.
    pub mods: Vec<ModDecl>,
    /// The names this file binds (modules, imports) that are also candidates: what a child
    /// module's `use super::*` brings into scope.
    pub binds: Vec<String>,
    /// The file glob-imports its parent module (`use super::*;`).
    pub glob_super: bool,
    /// `include!("…")` paths written as one plain literal, relative to the file's directory.
    pub includes: Vec<String>,
}

/// [`RustFacts`] as the cache holds it (see there).
#[derive(serde::Serialize, serde::Deserialize)]
struct FactsWire<R, T> {
    refs: R,
    tree: Option<T>,
}

/// The module-tree facts of a file that has any.
#[derive(serde::Serialize, serde::Deserialize)]
struct TreeWire<M, S> {
    mods: M,
    binds: S,
    glob_super: bool,
    includes: S,
}

impl serde::Serialize for RustFacts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let has_tree = !self.mods.is_empty()
            || !self.binds.is_empty()
            || self.glob_super
            || !self.includes.is_empty();
        FactsWire {
            refs: &self.refs,
            tree: has_tree.then_some(TreeWire {
                mods: &self.mods,
                binds: &self.binds,
                glob_super: self.glob_super,
                includes: &self.includes,
            }),
        }
        .serialize(s)
    }
}

type OwnedWire = FactsWire<Vec<CrateRef>, TreeWire<Vec<ModDecl>, Vec<String>>>;

impl From<OwnedWire> for RustFacts {
    fn from(w: OwnedWire) -> Self {
        let tree = w.tree.unwrap_or(TreeWire {
            mods: Vec::new(),
            binds: Vec::new(),
            glob_super: false,
            includes: Vec::new(),
        });
        RustFacts {
            refs: w.refs,
            mods: tree.mods,
            binds: tree.binds,
            glob_super: tree.glob_super,
            includes: tree.includes,
        }
    }
}

/// `mod name;`: a module whose body is another file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModDecl {
    pub name: String,
    /// Its `#[path = "…"]`, as written.
    pub path: Option<String>,
    /// The inline modules it is declared in, outermost first: each one's `#[path]` when it
    /// has one, else its name (the folders its file is looked for under).
    pub inline: Vec<String>,
    /// Under `#[cfg(test)]` (on it or on an enclosing item): its file is test code.
    pub test: bool,
}

/// A parse failure with its position.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ParseFailure {
    pub message: String,
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// The failure of a file whose bytes are not UTF-8, at the first invalid byte (`offset`,
/// in the lossy text as in the bytes: the text before it is the same). rustc refuses such a
/// file, so the checker does too, instead of reading the replacement characters.
pub fn not_utf8(text: &str, offset: usize) -> ParseFailure {
    let offset = offset.min(text.len());
    let (line, column) = fast::LineCursor::new(text).at(offset);
    ParseFailure {
        message: "the file is not valid UTF-8 (rustc refuses it)".to_owned(),
        line,
        column,
        offset,
    }
}

/// The tools whose attributes rustc knows (`#[rustfmt::skip]`, `#[clippy::allow(…)]`):
/// an attribute path starting with one is the tool's, never a crate's.
pub(crate) fn is_tool(name: &str) -> bool {
    matches!(
        name,
        "rustfmt" | "clippy" | "diagnostic" | "miri" | "rust_analyzer"
    )
}

/// Extracts the references to any name in `candidates` from `text`, or says where it
/// fails to parse. A file nesting past the depth budget ([`depth`]) is a parse failure
/// before any recursive parser sees it.
pub fn extract(text: &str, candidates: &Candidates) -> Result<RustFacts, ParseFailure> {
    let too_deep = |offset: usize| {
        let (line, column) = fast::LineCursor::new(text).at(offset);
        ParseFailure {
            message: depth::message(),
            line,
            column,
            offset,
        }
    };
    match fast::scan_checked(text, candidates) {
        fast::Scan::Read(facts) => Ok(facts),
        fast::Scan::TooDeep(offset) => Err(too_deep(offset)),
        fast::Scan::Unread => match depth::past_budget_of(text) {
            Some(offset) => Err(too_deep(offset)),
            None => syn_scan::extract(text, candidates),
        },
    }
}

#[cfg(test)]
mod tests;

/// The fast scan against syn's, file by file: the same facts wherever rust-analyzer's
/// parser takes a file, and syn's verdict wherever it does not.
#[cfg(test)]
mod differential;
