//! The fast scan: rust-analyzer's lexer and parser (`ra_ap_parser`, vendored with patches
//! that hand over its steps in place: `vendor/ra_ap_parser/SCAFFOLD.md`), read as one stream
//! of enter / token / exit steps. No syntax tree is built and trivia (whitespace, comments)
//! is never looked at; a few small stacks follow the nodes that matter (paths, use trees,
//! attributes, items).
//!
//! It finds what the syn scan finds (see `syn_scan.rs`) in about a third of the time, and
//! takes a file only when rust-analyzer's lexer and parser report no error at all.
//! Anything else (an error, a parser panic, cargo-script frontmatter) returns `None`, and
//! the caller hands the file to syn, whose verdict and message stand. A file this scan
//! cannot read is never silently skipped.
//!
//! Where the two differ, this scan follows Rust more closely (the differential tests in
//! `mod.rs` pin each case): `<T as Trait>::f` and `<T>::f` name no crate (syn's tree makes
//! `Trait` and `f` look like first segments); a `use` group holding a `::`-rooted path is
//! read (syn keeps the item as opaque tokens); `#![cfg(test)]` makes its file or inline module test-only; `#[cfg(test)]`
//! counts on every item, trait items included. And rust-analyzer's grammar accepts some
//! code rustc only rejects after parsing (`pub(x)`, a doc comment with no item after it,
//! newer syntax syn lacks); such a file is read, not reported unparsed.

mod exits;
mod tokens;
use ra_ap_parser::{Edition, LexedStr, Step, SyntaxKind as K, TopEntryPoint};

use super::lex::{self, Tokens};
use super::quiet::quietly;
use super::tt;
use super::{ModDecl, RefKind, RustFacts};
use crate::check::cfg_test::CfgTok;

/// The edition the lexer and parser read with. A file that only parses under another
/// edition (`async` as a 2015 identifier, say) reports an error and goes to syn.
pub(super) const EDITION: Edition = Edition::Edition2021;

/// The facts of `text`, or `None` when rust-analyzer's lexer or parser reports anything
/// (or the file nests past the depth budget).
#[cfg(test)]
pub(super) fn scan(text: &str, candidates: &super::Candidates) -> Option<RustFacts> {
    match scan_checked(text, candidates) {
        Scan::Read(facts) => Some(facts),
        Scan::TooDeep(_) | Scan::Unread => None,
    }
}

/// What the fast scan made of a file.
#[derive(Debug)]
pub(super) enum Scan {
    Read(RustFacts),
    /// The file nests past [`super::depth::MAX_DEPTH`] here (an offset in the text): it is
    /// never handed to a recursive parser.
    TooDeep(usize),
    /// The scan does not answer; syn decides.
    Unread,
}

/// [`scan`], telling a file too deep to parse from one the scan leaves to syn.
pub(super) fn scan_checked(text: &str, candidates: &super::Candidates) -> Scan {
    // rust-analyzer keeps offsets in `u32`.
    if u32::try_from(text.len()).is_err() {
        return Scan::Unread;
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Cargo-script frontmatter (`---`, unstable) is for syn to refuse: this version of the
    // lexer can panic inside a malformed one.
    let after_shebang = match body.strip_prefix("#!") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, r)| r),
        None => body,
    };
    if after_shebang.trim_start().starts_with('-') {
        return Scan::Unread;
    }
    // A parser bug must cost speed, never a finding: syn takes the file instead, and the
    // panic is not printed.
    match quietly(|| scan_unguarded(text, body, candidates)) {
        Some(Ok(Some(facts))) => Scan::Read(facts),
        Some(Err(offset)) => Scan::TooDeep(offset),
        Some(Ok(None)) | None => Scan::Unread,
    }
}

/// The scan: `Err(offset)` when the file nests past the depth budget (checked on the
/// tokens, before the parser recurses), `Ok(None)` when it does not answer.
fn scan_unguarded(
    text: &str,
    body: &str,
    candidates: &super::Candidates,
) -> Result<Option<RustFacts>, usize> {
    let (tokens, input) = match lex::lex(body, EDITION) {
        Some(lexed) => lexed,
        None => {
            let lexed = LexedStr::new(EDITION, body);
            if lexed.errors().next().is_some() {
                return Ok(None);
            }
            (Tokens::of(&lexed), lexed.to_input(EDITION))
        }
    };
    if let Some(offset) = super::depth::past_budget(body, &tokens) {
        return Err(offset + (text.len() - body.len()));
    }
    Ok(scan_steps(text, body, &tokens, &input, candidates))
}

/// Reads the parser's steps over the lexed tokens.
fn scan_steps(
    text: &str,
    body: &str,
    tokens: &Tokens,
    input: &ra_ap_parser::Input,
    candidates: &super::Candidates,
) -> Option<RustFacts> {
    let mut scanner = Scanner::new(body);
    // The parser's steps count non-trivia tokens, as `tokens` does; `pos` walks both.
    let n = tokens.len();
    let mut pos = 0;
    let mut steps = TopEntryPoint::SourceFile.parse_steps(input, EDITION);
    while let Some(step) = steps.next_step() {
        match step {
            Step::Enter { kind } => scanner.enter(kind),
            Step::Exit => scanner.exit(),
            Step::Token {
                kind,
                n_input_tokens,
            } => {
                let end = pos + usize::from(n_input_tokens);
                if end > n || end == pos {
                    return None;
                }
                scanner.token(
                    kind,
                    tokens.starts[pos] as usize,
                    tokens.ends[end - 1] as usize,
                );
                pos = end;
            }
            // `x.0.1`: one float token read as two field names; the step closes the
            // nodes the parser opened for it (one when it ends in a dot, else two).
            Step::FloatSplit { ends_in_dot } => {
                // Only digits around one dot are two field indexes (`s.1e0`, `s.0.1f32`
                // are errors rustc reports after parsing).
                if pos >= n
                    || !is_field_pair(&body[tokens.starts[pos] as usize..tokens.ends[pos] as usize])
                {
                    return None;
                }
                pos += 1;
                for _ in 0..1 + usize::from(!ends_in_dot) {
                    scanner.exit();
                }
            }
            Step::Error { .. } => return None,
        }
        if scanner.failed {
            return None;
        }
    }
    if pos != n || !scanner.stack.is_empty() {
        return None;
    }
    Some(scanner.finish(text, text.len() - body.len(), candidates))
}

/// `0.1` or `0.`: a float literal that can stand for two tuple-field indexes.
fn is_field_pair(float: &str) -> bool {
    float.bytes().filter(|b| *b == b'.').count() == 1
        && float
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'_' || b == b'.')
}

/// A token: its text and its byte offset in the scanned text.
#[derive(Clone, Copy)]
struct Tok<'t> {
    text: &'t str,
    offset: usize,
}

/// A path being read: the outermost `PATH` node of a chain (`a::b::c` nests three).
struct PathRec<'t> {
    depth: usize,
    segments: u32,
    leading_colon: bool,
    first: Option<Tok<'t>>,
    last: Option<Tok<'t>>,
}

/// A `USE_TREE` node.
struct TreeRec<'t> {
    depth: usize,
    /// Not below a path prefix: its first segment names what the `use` imports from.
    top: bool,
    /// Segments written before this tree (`a::b::{…}` gives its trees two).
    prefix: u32,
    /// Its own path: segment count and last segment.
    path: Option<(u32, Option<Tok<'t>>)>,
    /// No `{…}` list and no `*` below it: it binds a name.
    leaf: bool,
    rename: Option<&'t str>,
}

/// An `ATTR` node.
#[derive(Default)]
struct AttrRec<'t> {
    depth: usize,
    inner: bool,
    /// The attribute's name when its path is a single segment (`cfg`, `path`, …).
    name: Option<&'t str>,
    /// `cfg(…)`'s tokens, outer delimiters included, while they are read.
    cfg: Option<Vec<CfgTok>>,
    /// Inside `cfg`'s token tree.
    in_cfg: bool,
    /// `#[name = "…"]`: the string literal, as written.
    value: Option<&'t str>,
    /// A tool's attribute (`#[rustfmt::skip]`): its arguments are not read either.
    tool: bool,
}

/// A token tree being read for paths ([`tt`]): its depth, the reader, and where the
/// last token ended.
struct TreeRead<'t> {
    depth: usize,
    reader: tt::Reader<Tok<'t>>,
    prev_end: usize,
    /// The tree of an `include!` call: its tokens counted, and its string literal.
    include: Option<(usize, Option<&'t str>)>,
    /// `mod name;` written in the tree (`cfg_if!`).
    mods: tt::ModReader,
}

/// A `MODULE` node being read.
struct ModRec<'t> {
    depth: usize,
    name: Option<&'t str>,
    path: Option<String>,
    /// It has a body (`mod a { … }`).
    inline: bool,
}

/// An item node (or the file), whose `#[cfg(test)]` makes everything in it test-only.
struct ItemRec {
    depth: usize,
    refs_start: usize,
    test: bool,
}

struct RawRef<'t> {
    tok: Tok<'t>,
    kind: RefKind,
    test: bool,
    /// The innermost scope it is written in.
    scope: usize,
    /// Written after a leading `::`: an extern crate, whatever the file binds.
    global: bool,
}

/// A scope names are bound in: the file, an inline module's body, or a block.
struct ScopeRec {
    parent: Option<usize>,
    /// A module's scope: names bound outside it are not seen inside...
    module: bool,
    /// ...unless it says `use super::*;`: then its parent module's are.
    glob_super: bool,
}

struct Scanner<'t> {
    body: &'t str,
    stack: Vec<K>,
    paths: Vec<PathRec<'t>>,
    trees: Vec<TreeRec<'t>>,
    attrs: Vec<AttrRec<'t>>,
    items: Vec<ItemRec>,
    in_use: usize,
    in_extern_crate: usize,
    test_depth: usize,
    extern_target: Option<&'t str>,
    refs: Vec<RawRef<'t>>,
    /// Names the file binds — modules and what `use` brings in — each with the scope it is
    /// bound in: it shadows a crate of that name in paths written in that scope and the
    /// blocks inside it, not across a module's boundary.
    locals: Vec<(&'t str, usize)>,
    /// Every scope of the file (0: the file itself), and the open ones by node depth.
    scopes: Vec<ScopeRec>,
    open_scopes: Vec<(usize, usize)>,
    /// `extern crate x as y`: (y, x, where y is written). An alias names its crate in the
    /// references after it, as in syn's scan.
    aliases: Vec<(&'t str, &'t str, usize)>,
    /// The token tree read for paths, while inside one.
    tt: Option<TreeRead<'t>>,
    /// The last segment of the last macro call's path (`println`, `quote`).
    macro_name: Option<&'t str>,
    modules: Vec<ModRec<'t>>,
    /// Every module the file declares, with the scope it is declared in: a `use` there of
    /// that name imports from it (`mod nu; pub use nu::X;`), not from a crate.
    module_names: Vec<(&'t str, usize)>,
    mods: Vec<ModDecl>,
    includes: Vec<String>,
    glob_super: bool,
    failed: bool,
}

fn is_item(kind: K) -> bool {
    matches!(
        kind,
        K::CONST
            | K::ENUM
            | K::EXTERN_CRATE
            | K::FN
            | K::EXTERN_BLOCK
            | K::IMPL
            | K::MACRO_CALL
            | K::MACRO_RULES
            | K::MACRO_DEF
            | K::MODULE
            | K::STATIC
            | K::STRUCT
            | K::TRAIT
            | K::TYPE_ALIAS
            | K::UNION
            | K::USE
    )
}

impl<'t> Scanner<'t> {
    fn new(body: &'t str) -> Self {
        Scanner {
            body,
            stack: Vec::with_capacity(64),
            paths: Vec::new(),
            trees: Vec::new(),
            attrs: Vec::new(),
            items: Vec::new(),
            in_use: 0,
            in_extern_crate: 0,
            test_depth: 0,
            extern_target: None,
            refs: Vec::new(),
            locals: Vec::new(),
            scopes: Vec::new(),
            open_scopes: Vec::new(),
            aliases: Vec::new(),
            tt: None,
            macro_name: None,
            modules: Vec::new(),
            module_names: Vec::new(),
            mods: Vec::new(),
            includes: Vec::new(),
            glob_super: false,
            failed: false,
        }
    }

    /// The innermost open scope.
    fn scope(&self) -> usize {
        self.open_scopes.last().map_or(0, |(_, id)| *id)
    }

    /// Opens a scope at node depth `depth`.
    fn open_scope(&mut self, depth: usize, module: bool) {
        let parent = self.open_scopes.last().map(|(_, id)| *id);
        self.scopes.push(ScopeRec {
            parent,
            module,
            glob_super: false,
        });
        self.open_scopes.push((depth, self.scopes.len() - 1));
    }

    /// Whether a name bound in scope `bound` is seen in scope `at`: `bound` is `at` or
    /// encloses it with no module's boundary between — or past the boundary of a module
    /// that says `use super::*;`, in the module around it (its own names, not its blocks').
    fn sees(&self, at: usize, bound: usize) -> bool {
        let mut s = at;
        loop {
            if s == bound {
                return true;
            }
            let Some(rec) = self.scopes.get(s) else {
                return false;
            };
            match rec.parent {
                Some(p) if !rec.module => s = p,
                Some(mut p) if rec.glob_super => {
                    // `super` is the nearest module around, past any block.
                    while let Some(r) = self.scopes.get(p)
                        && !r.module
                        && let Some(up) = r.parent
                    {
                        p = up;
                    }
                    s = p;
                }
                _ => return false,
            }
        }
    }

    /// The kind of the node `up` levels above the innermost open one (0 = innermost).
    fn up(&self, up: usize) -> Option<K> {
        self.stack.len().checked_sub(up + 1).map(|i| self.stack[i])
    }

    fn enter(&mut self, kind: K) {
        let parent = self.stack.last().copied();
        let depth = self.stack.len();
        self.stack.push(kind);
        match kind {
            K::SOURCE_FILE => self.open_scope(depth, true),
            K::ITEM_LIST if parent == Some(K::MODULE) => self.open_scope(depth, true),
            K::STMT_LIST => self.open_scope(depth, false),
            _ => {}
        }
        match kind {
            K::PATH if parent != Some(K::PATH) => self.paths.push(PathRec {
                depth,
                segments: 0,
                leading_colon: false,
                first: None,
                last: None,
            }),
            K::PATH_SEGMENT if parent == Some(K::PATH) => {
                if let Some(p) = self.paths.last_mut() {
                    p.segments += 1;
                }
            }
            K::USE_TREE => {
                let (top, prefix) = match (parent, self.trees.last()) {
                    (Some(K::USE), _) => (true, 0),
                    (Some(K::USE_TREE_LIST), Some(owner)) => {
                        let own = owner.path.map_or(0, |p| p.0);
                        (owner.top && own == 0, owner.prefix + own)
                    }
                    _ => (false, 0),
                };
                self.trees.push(TreeRec {
                    depth,
                    top,
                    prefix,
                    path: None,
                    leaf: true,
                    rename: None,
                });
            }
            K::USE_TREE_LIST if parent == Some(K::USE_TREE) => {
                if let Some(t) = self.trees.last_mut() {
                    t.leaf = false;
                }
            }
            K::ATTR => self.attrs.push(AttrRec {
                depth,
                ..AttrRec::default()
            }),
            K::TOKEN_TREE if parent == Some(K::META) => {
                if let Some(a) = self.attrs.last_mut()
                    && a.depth + 2 == depth
                    && a.name == Some("cfg")
                {
                    a.cfg = Some(Vec::new());
                    a.in_cfg = true;
                }
            }
            _ => {}
        }
        if kind == K::TOKEN_TREE
            && self.tt.is_none()
            && self.in_use == 0
            && self.in_extern_crate == 0
        {
            let read = match parent {
                Some(K::MACRO_CALL) => !self.macro_name.is_some_and(tt::is_quote),
                Some(K::MACRO_RULES) => true,
                Some(K::META) => self
                    .attrs
                    .last()
                    .is_some_and(|a| a.depth + 2 == depth && a.name != Some("cfg") && !a.tool),
                _ => false,
            };
            if read {
                let include = (parent == Some(K::MACRO_CALL) && self.macro_name == Some("include"))
                    .then_some((0, None));
                self.tt = Some(TreeRead {
                    depth,
                    reader: tt::Reader::new(),
                    prev_end: usize::MAX,
                    include,
                    mods: tt::ModReader::default(),
                });
            }
        }
        match kind {
            K::MODULE => self.modules.push(ModRec {
                depth,
                name: None,
                path: None,
                inline: false,
            }),
            K::ITEM_LIST if parent == Some(K::MODULE) => {
                if let Some(m) = self.modules.last_mut() {
                    m.inline = true;
                }
            }
            _ => {}
        }
        match kind {
            K::USE => self.in_use += 1,
            K::EXTERN_CRATE => self.in_extern_crate += 1,
            _ => {}
        }
        if kind == K::SOURCE_FILE || is_item(kind) {
            self.items.push(ItemRec {
                depth,
                refs_start: self.refs.len(),
                test: false,
            });
        }
    }

    /// The folders of the inline modules open here, outermost first.
    fn inline_dirs(&self) -> Vec<String> {
        self.modules
            .iter()
            .filter(|m| m.inline)
            .map(|o| {
                o.path
                    .clone()
                    .unwrap_or_else(|| o.name.unwrap_or("").to_owned())
            })
            .collect()
    }

    fn rename(&mut self, owner: Option<K>, name: Tok<'t>) {
        match owner {
            Some(K::EXTERN_CRATE) => {
                if let Some(target) = self.extern_target {
                    self.aliases.push((name.text, target, name.offset));
                }
            }
            Some(K::USE_TREE) => {
                if let Some(t) = self.trees.last_mut() {
                    t.rename = Some(name.text);
                }
            }
            _ => {}
        }
    }
}

/// The value of a string literal as written: plain ones directly, anything with escapes
/// or a raw prefix through syn.
fn string_value(lit: &str) -> Option<String> {
    if let Some(inner) = lit.strip_prefix('"').and_then(|s| s.strip_suffix('"'))
        && !inner.contains(['\\', '\r'])
    {
        return Some(inner.to_owned());
    }
    let value = syn::parse_str::<syn::LitStr>(lit).ok().map(|l| l.value());
    proc_macro2::extra::invalidate_current_thread_spans();
    value
}

/// Line and character column of increasing offsets, counted once through the text.
pub(super) struct LineCursor<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    line_start: usize,
    /// Characters from `line_start` to `pos`: a long line is counted once, not once per
    /// reference on it.
    column: usize,
}

impl<'a> LineCursor<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        LineCursor {
            text,
            pos: 0,
            line: 1,
            line_start: 0,
            column: 0,
        }
    }

    pub(super) fn at(&mut self, offset: usize) -> (usize, usize) {
        if offset < self.pos {
            *self = LineCursor::new(self.text);
        }
        let offset = offset.min(self.text.len());
        if let Some(seg) = self.text.get(self.pos..offset) {
            for (i, _) in seg.match_indices('\n') {
                self.line += 1;
                self.line_start = self.pos + i + 1;
            }
        }
        let from = self.pos.max(self.line_start);
        if from == self.line_start {
            self.column = 0;
        }
        self.column += self.text.get(from..offset).map_or(0, |s| s.chars().count());
        self.pos = offset;
        (self.line, self.column + 1)
    }
}
