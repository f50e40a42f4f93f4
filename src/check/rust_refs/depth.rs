//! One depth budget for every recursive parse of a Rust file (rust-analyzer's parser, syn's,
//! and the recursion of syn's tree when it is visited and dropped), so a pull request
//! cannot overflow a stack and abort the run.
//!
//! Per-construct limits (delimiters, `<`, runs of `!`) were evaded by mixing constructs:
//! 4,000 `!` inside each of 300 parentheses passed every one of them, and so did
//! constructs none counted (`x = x = …`, `|| || …`, `1 as u8 as u8 …`, `else if` chains,
//! `a[0][0]…`). What recursion they share is nesting in the tree; the budget estimates it
//! from the tokens, over-counting where unsure:
//!
//! - each open `(`, `[` or `{` is one level, and a `(` or `[` right after a closing one
//!   (`f()()`, `a[0][0]`) one more;
//! - each operator token (`! - * & = | . ? < > + / % ^ ~ @`; `..` and `..=` as one) and
//!   each `as`, `else`, `return`, `break`, `yield` adds one to its level, until a `;` or `,` at that level
//!   ends the statement or element, or a `}` ends a block that no operator continues
//!   (`if a {} if b {}` is two statements; `x + {1} + {1}` is one expression);
//! - a closing `)` or `]` gives the level back what it had (the expression goes on).
//!
//! Whitespace, comments and literals count nothing: the estimate reads the lexer's
//! tokens, so a comment of dashes or a string of brackets does not make a file deep.

use ra_ap_parser::{Edition, LexedStr};

use super::lex::Tokens;

/// The most levels the estimate may reach. Measured on the 10,182 `.rs` files of a
/// crates.io cache: the deepest real file (unicode-normalization's generated tables, a
/// 700-alternative or-pattern) reaches 1,400, the next ones 220. The recursion the budget
/// allows fits the checker's 64 MiB parsing stacks in a debug build with room to spare: the
/// costliest shape below overflowed there only past 14,000 (`the_budget_fits_the_stack`).
pub const MAX_DEPTH: usize = 4_000;

/// What a token does to the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Open {
        brace: bool,
    },
    Close {
        brace: bool,
    },
    /// `;` or `,`: the level's statement or element ends.
    Reset,
    /// An operator or an operator keyword: one more level of tree.
    Count,
    Other,
}

fn class(tok: &[u8]) -> Class {
    match tok.first() {
        Some(b'(' | b'[') => Class::Open { brace: false },
        Some(b'{') => Class::Open { brace: true },
        Some(b')' | b']') => Class::Close { brace: false },
        Some(b'}') => Class::Close { brace: true },
        Some(b';' | b',') => Class::Reset,
        Some(
            b'!' | b'-' | b'*' | b'&' | b'=' | b'|' | b'.' | b'?' | b'<' | b'>' | b'+' | b'/'
            | b'%' | b'^' | b'~' | b'@',
        ) => Class::Count,
        Some(b'a' | b'b' | b'e' | b'r' | b'y')
            if matches!(tok, b"as" | b"else" | b"return" | b"break" | b"yield") =>
        {
            Class::Count
        }
        _ => Class::Other,
    }
}

/// The offset (in `text`) of the token where the estimate first passes [`MAX_DEPTH`], or
/// `None` when it never does. `tokens` are `text`'s non-trivia tokens.
pub(super) fn past_budget(text: &str, tokens: &Tokens) -> Option<usize> {
    // Almost every file settles here: no token adds more than its weight (a `(` or `[`
    // two, a `{`, an operator or a word that may be a keyword one), so a file whose
    // weights sum to no more than the budget is within it, without the walk.
    let bytes = text.as_bytes();
    let bound: usize = tokens
        .starts
        .iter()
        .map(|&s| usize::from(WEIGHT[usize::from(bytes.get(s as usize).copied().unwrap_or(0))]))
        .sum();
    if bound <= MAX_DEPTH {
        return None;
    }
    past_budget_with(text, tokens, MAX_DEPTH)
}

/// The most a token starting with each byte adds to the estimate (see [`past_budget`]).
static WEIGHT: [u8; 256] = {
    let mut w = [0u8; 256];
    w[b'(' as usize] = 2;
    w[b'[' as usize] = 2;
    w[b'{' as usize] = 1;
    let ops = b"!-*&=|.?<>+/%^~@abery";
    let mut i = 0;
    while i < ops.len() {
        w[ops[i] as usize] = 1;
        i += 1;
    }
    w
};

/// An upper bound of the estimate from the bytes alone (each token weighs at most what its
/// first byte does; a keyword starts after a byte no identifier continues), summed in
/// 8-bit lanes so the compiler vectorises it.
fn byte_bound(bytes: &[u8]) -> usize {
    let mut total = 0usize;
    let mut prev_ident = false;
    for chunk in bytes.chunks(127) {
        let mut n = 0u8;
        for &b in chunk {
            let ident = b.is_ascii_alphanumeric() | (b == b'_');
            let opens = u8::from((b == b'(') | (b == b'['));
            let one = (b == b'{')
                | (b == b'!')
                | (b == b'-')
                | (b == b'*')
                | (b == b'&')
                | (b == b'=')
                | (b == b'|')
                | (b == b'.')
                | (b == b'?')
                | (b == b'<')
                | (b == b'>')
                | (b == b'+')
                | (b == b'/')
                | (b == b'%')
                | (b == b'^')
                | (b == b'~')
                | (b == b'@')
                | (!prev_ident
                    & ((b == b'a') | (b == b'b') | (b == b'e') | (b == b'r') | (b == b'y')));
            n += 2 * opens + u8::from(one);
            prev_ident = ident;
        }
        total += usize::from(n);
    }
    total
}

fn past_budget_with(text: &str, tokens: &Tokens, budget: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    // What each enclosing level had counted when the current one opened.
    let mut outer: Vec<usize> = Vec::new();
    let mut outer_sum = 0usize;
    let mut count = 0usize;
    // At a block's `}`: what its level had counted, kept if an operator continues it.
    let mut after_block: Option<usize> = None;
    let mut after_close = false;
    let mut prev: &[u8] = b"";
    let mut prev2: &[u8] = b"";
    for (&start, &end) in tokens.starts.iter().zip(&tokens.ends) {
        let (start, end) = (start as usize, end as usize);
        let tok = bytes.get(start..end).unwrap_or_default();
        let mut c = class(tok);
        // A range (`..`, `..=`, `...`) is one operator, however many tokens spell it.
        if (tok == b"." && prev == b".") || (tok == b"=" && prev == b"." && prev2 == b".") {
            c = Class::Other;
        }
        (prev2, prev) = (prev, tok);
        if let Some(kept) = after_block.take()
            && matches!(c, Class::Count | Class::Open { brace: false })
        {
            count = kept;
        }
        match c {
            Class::Open { brace } => {
                if !brace && after_close {
                    count += 1;
                }
                outer.push(count);
                outer_sum += count;
                count = 0;
            }
            Class::Close { brace } => {
                let had = outer.pop().unwrap_or(0);
                outer_sum -= had;
                if brace {
                    after_block = Some(had);
                    count = 0;
                } else {
                    count = had;
                }
            }
            Class::Reset => count = 0,
            Class::Count => count += 1,
            Class::Other => {}
        }
        after_close = matches!(c, Class::Close { .. });
        if outer.len() + outer_sum + count > budget {
            return Some(start);
        }
    }
    None
}

/// [`past_budget`] for a text not yet lexed (for the callers that parse with syn alone).
pub fn past_budget_of(text: &str) -> Option<usize> {
    // rust-analyzer keeps offsets in `u32`; a larger file is too large to read anyway.
    if u32::try_from(text.len()).is_err() {
        return Some(0);
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let skip = text.len() - body.len();
    // Cargo-script frontmatter can panic this lexer; syn refuses such a file at its first
    // token, before any recursion.
    let after_shebang = match body.strip_prefix("#!") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, r)| r),
        None => body,
    };
    if after_shebang.trim_start().starts_with('-') {
        return None;
    }
    if byte_bound(body.as_bytes()) <= MAX_DEPTH {
        return None;
    }
    match super::quiet::quietly(|| Tokens::of(&LexedStr::new(Edition::Edition2021, body))) {
        Some(tokens) => past_budget(body, &tokens).map(|o| o + skip),
        // A lexer panic leaves the depth unknown: refused, never parsed blind.
        None => Some(0),
    }
}

/// The message a file past the budget is reported with.
pub fn message() -> String {
    format!(
        "nests deeper than scaffold reads ({MAX_DEPTH} levels of brackets, operators and chained calls together)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(text: &str) -> bool {
        past_budget_of(text).is_some()
    }

    /// Shapes that each nest `n` levels of tree.
    fn shapes(n: usize) -> Vec<(&'static str, String)> {
        vec![
            (
                "parens",
                format!("fn f() {{ let _ = {}1{}; }}", "(".repeat(n), ")".repeat(n)),
            ),
            (
                "bangs",
                format!("fn f() -> bool {{ {}true }}", "!".repeat(n)),
            ),
            (
                "bangs in parens",
                format!(
                    "fn f() -> bool {{ {}true{} }}",
                    format!("{}(", "!".repeat(9)).repeat(n / 10),
                    ")".repeat(n / 10)
                ),
            ),
            (
                "assign",
                format!("fn f() {{ let mut x = 0; {}1; }}", "x = ".repeat(n)),
            ),
            // `||` is two tokens, and so is each generic level (`<`, `>`).
            (
                "closures",
                format!("fn f() {{ let _f = {}1; }}", "|| ".repeat(n / 2)),
            ),
            ("returns", format!("fn f() {{ {}; }}", "return ".repeat(n))),
            (
                "else if",
                format!("fn f() {{ if true {{}} {} }}", "else if true {} ".repeat(n)),
            ),
            (
                "casts",
                format!("fn f() {{ let _ = 1{}; }}", " as u8".repeat(n)),
            ),
            (
                "sums",
                format!("fn f() {{ let _ = 1{}; }}", " + 1".repeat(n)),
            ),
            (
                "indexing",
                format!("fn f(a: X) {{ let _ = a{}; }}", "[0]".repeat(n)),
            ),
            (
                "calls",
                format!("fn f() {{ let _ = g{}; }}", "()".repeat(n)),
            ),
            (
                "methods",
                format!("fn f() {{ let _ = a{}; }}", ".b()".repeat(n)),
            ),
            ("tries", format!("fn f() {{ let _ = a{}; }}", "?".repeat(n))),
            (
                "blocks added",
                format!("fn f() {{ let _ = 1{}; }}", " + {1}".repeat(n)),
            ),
            (
                "generics",
                format!("type T = {}u8{};", "Vec<".repeat(n / 2), ">".repeat(n / 2)),
            ),
            ("refs", format!("type T = {}u8;", "&".repeat(n))),
        ]
    }

    #[test]
    fn every_shape_is_refused_past_the_budget_and_read_well_below_it() {
        for (name, text) in shapes(MAX_DEPTH * 2 + 10) {
            assert!(deep(&text), "{name} past the budget was not refused");
        }
        for (name, text) in shapes(MAX_DEPTH / 4) {
            assert!(!deep(&text), "{name} well below the budget was refused");
        }
    }

    #[test]
    fn statements_elements_and_blocks_do_not_add_up() {
        let many = |unit: &str| unit.repeat(MAX_DEPTH * 3);
        for text in [
            format!("fn f() {{ {} }}", many("let x = !a && !b - c * d; ")),
            format!("const A: [i32; 3] = [{}];", many("-1, ")),
            format!("fn f() {{ {} }}", many("if a < b {} ")),
            many("#[derive(Debug)] struct A { a: Vec<u8> } "),
            format!("fn f() {{ match x {{ {} }} }}", many("A => b.c(), ")),
            format!("// {}\nfn f() {{}}", many("-*&!")),
            format!("const S: &str = \"{}\";", many("((((")),
        ] {
            assert_eq!(past_budget_of(&text), None, "{}", &text[..80]);
        }
    }

    /// The two shortcuts never say "within" where the walk says "past": their bounds are
    /// at least the estimate's peak, on the shapes and on soups of the bytes that count.
    #[test]
    fn the_shortcuts_bound_the_walk() {
        let mut texts: Vec<String> = shapes(MAX_DEPTH + 50).into_iter().map(|(_, t)| t).collect();
        let mut seed = 7u64;
        for _ in 0..300 {
            let soup: String = (0..6_000)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    const PIECES: [&str; 14] = [
                        "(", ")", "[", "]", "{", "}", "!", "as ", "else ", "x", " ", ";", ".", "<",
                    ];
                    PIECES[(seed >> 33) as usize % PIECES.len()]
                })
                .collect();
            texts.push(format!("fn f() {{ {soup} }}"));
        }
        for text in texts {
            let lexed = LexedStr::new(Edition::Edition2021, &text);
            let tokens = Tokens::of(&lexed);
            let walk = past_budget_with(&text, &tokens, MAX_DEPTH);
            assert_eq!(
                past_budget(&text, &tokens),
                walk,
                "{}",
                &text[..60.min(text.len())]
            );
            if walk.is_some() {
                assert!(byte_bound(text.as_bytes()) > MAX_DEPTH);
            }
        }
    }

    /// The recursion the budget allows fits the stack the checker parses on (64 MiB, see
    /// `main`), through rust-analyzer's parser, syn's, and syn's tree dropped, in whatever
    /// build the tests run.
    #[test]
    fn the_budget_fits_the_stack() {
        let run = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(|| {
                for (name, text) in shapes(MAX_DEPTH - 20) {
                    assert!(!deep(&text), "{name} just below the budget was refused");
                    let cands = super::super::Candidates::default();
                    let _ = super::super::extract(&text, &cands);
                    let _ = syn::parse_file(&text);
                    let _ = super::super::syn_scan::extract(&text, &cands);
                }
            })
            .expect("spawns");
        run.join().expect("no stack overflow");
    }
}

/// Real code stays below the budget: every `.rs` file under `SCAFFOLD_DEPTH_CORPUS` (say
/// `~/.cargo/registry/src`), with the deepest estimates printed. Run by hand:
/// `SCAFFOLD_DEPTH_CORPUS=… cargo test --lib depth::corpus -- --ignored --nocapture`.
#[cfg(test)]
mod corpus {
    use super::*;

    /// The estimate's highest point in `text`.
    fn peak(text: &str) -> usize {
        let (mut lo, mut hi) = (0usize, MAX_DEPTH);
        // The estimate is monotone in the budget: search the lowest budget it passes.
        let lexed = LexedStr::new(Edition::Edition2021, text);
        let tokens = Tokens::of(&lexed);
        let past = |budget: usize| past_budget_with(text, &tokens, budget).is_some();
        if past(hi) {
            return hi + 1;
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if past(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    #[test]
    #[ignore = "reads a corpus named by SCAFFOLD_DEPTH_CORPUS"]
    fn real_code_stays_below_the_budget() {
        let Some(root) = std::env::var_os("SCAFFOLD_DEPTH_CORPUS") else {
            eprintln!("SKIPPED: set SCAFFOLD_DEPTH_CORPUS to a folder of Rust sources");
            return;
        };
        let mut peaks = Vec::new();
        for entry in ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .build()
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs")
                && let Ok(text) = std::fs::read_to_string(path)
            {
                peaks.push((peak(&text), path.display().to_string()));
            }
        }
        peaks.sort();
        eprintln!("{} files; deepest:", peaks.len());
        for (p, path) in peaks.iter().rev().take(15) {
            eprintln!("  {p:5} {path}");
        }
        assert!(
            peaks.iter().all(|(p, _)| *p <= MAX_DEPTH),
            "real code past the budget"
        );
    }
}
