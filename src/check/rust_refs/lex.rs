//! The fast scan's lexer for the common case: rust-analyzer's parser input for a file of
//! plain, clean tokens, and where each of its non-trivia tokens lies, built in one pass.
//!
//! `LexedStr::new` followed by `to_input` gives the same two things, but restarts the
//! lexer at every token, keeps an error list, and walks the tokens a second time to build
//! the input. This pass reads the common tokens (ASCII whitespace, identifiers and
//! keywords, punctuation, comments, decimal integers, strings without escapes) byte by
//! byte, and asks `rustc_lexer` for one token wherever it meets anything else (a
//! lifetime, a char, an escape, a suffix, a prefix, a float, a non-ASCII character). It
//! takes only what is plainly right and says `None` for anything else (a lexer error of
//! any kind, a shebang or `#!` line, frontmatter, a reserved or unknown prefix, an unknown
//! character, an escape `rustc_literal_escaper` questions, even one rust-analyzer lets
//! pass); the caller then asks `LexedStr`, as before. The differential tests in `mod.rs`
//! pin the two to the same tokens and the same parse wherever this one answers.

use ra_ap_parser::{Edition, Input, LexedStr, SyntaxKind as K, T};
use ra_ap_rustc_lexer::{self as lexer, LiteralKind as L, TokenKind as Tk};
use rustc_literal_escaper::{
    unescape_byte, unescape_byte_str, unescape_c_str, unescape_char, unescape_str,
};

/// Where each non-trivia token of a text lies (the tokens the parser reads, in order).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Tokens {
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
}

impl Tokens {
    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The non-trivia tokens `LexedStr` found.
    pub(super) fn of(lexed: &LexedStr<'_>) -> Tokens {
        let n = lexed.len();
        let solid = || (0..n).filter(|&i| !lexed.kind(i).is_trivia());
        Tokens {
            starts: solid().map(|i| lexed.text_start(i) as u32).collect(),
            ends: solid().map(|i| lexed.text_start(i + 1) as u32).collect(),
        }
    }
}

/// ASCII whitespace as `rustc_lexer` reads it (`Pattern_White_Space`, ASCII part).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// ASCII identifier characters (`XID_Continue`, ASCII part).
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The first index from `i` whose byte fails `keep`.
fn run_end(bytes: &[u8], i: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| !keep(b))
        .map_or(bytes.len(), |p| i + p)
}

/// The kind and end of the token at `i` when it is one of the common tokens this pass
/// reads itself, exactly as `rustc_lexer` and `LexedStr` would; `None` sends the token to
/// `rustc_lexer`. Identifiers come back as `K::IDENT`, keywords not yet told apart.
fn common(bytes: &[u8], i: usize) -> Option<(K, usize)> {
    let b = bytes[i];
    let next = bytes.get(i + 1).copied();
    let punct = |k: K| Some((k, i + 1));
    match b {
        b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => {
            let end = run_end(bytes, i + 1, is_space);
            // Non-ASCII whitespace (U+0085, U+200E, …) would continue the token.
            (bytes.get(end).is_none_or(|&c| c < 0x80)).then_some((K::WHITESPACE, end))
        }
        b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
            let end = run_end(bytes, i + 1, is_ident_byte);
            // A non-ASCII identifier character, or a literal prefix (`r#`, `b"`, `c"`,
            // `br#`, `foo'`, …) is for `rustc_lexer`.
            match bytes.get(end) {
                Some(&c) if c >= 0x80 || matches!(c, b'#' | b'"' | b'\'') => None,
                _ => Some((K::IDENT, end)),
            }
        }
        b'0'..=b'9' => {
            let end = run_end(bytes, i + 1, |c| c.is_ascii_digit() || c == b'_');
            // A base prefix, a suffix, an exponent or a fraction is for `rustc_lexer`.
            match bytes.get(end) {
                Some(&c) if c >= 0x80 || c == b'.' || c.is_ascii_alphanumeric() => None,
                _ => Some((K::INT_NUMBER, end)),
            }
        }
        b'/' => match next {
            Some(b'/') => {
                let end = bytes[i + 2..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |p| i + 2 + p);
                Some((K::COMMENT, end))
            }
            Some(b'*') => block_comment_end(bytes, i).map(|end| (K::COMMENT, end)),
            _ => punct(T![/]),
        },
        b'"' => {
            // A string without escapes or carriage returns, and no suffix after it.
            let close = i
                + 1
                + bytes[i + 1..]
                    .iter()
                    .position(|&c| matches!(c, b'"' | b'\\' | b'\r'))?;
            if bytes[close] != b'"' {
                return None;
            }
            let end = close + 1;
            match bytes.get(end) {
                Some(&c) if c >= 0x80 || c.is_ascii_alphabetic() || c == b'_' => None,
                _ => Some((K::STRING, end)),
            }
        }
        // `#"` and `##` are guarded-string prefixes.
        b'#' if matches!(next, Some(b'"' | b'#')) => None,
        b'#' => punct(T![#]),
        b';' => punct(T![;]),
        b',' => punct(T![,]),
        b'.' => punct(T![.]),
        b'(' => punct(T!['(']),
        b')' => punct(T![')']),
        b'{' => punct(T!['{']),
        b'}' => punct(T!['}']),
        b'[' => punct(T!['[']),
        b']' => punct(T![']']),
        b'@' => punct(T![@]),
        b'~' => punct(T![~]),
        b'?' => punct(T![?]),
        b':' => punct(T![:]),
        b'$' => punct(T![$]),
        b'=' => punct(T![=]),
        b'!' => punct(T![!]),
        b'<' => punct(T![<]),
        b'>' => punct(T![>]),
        b'-' => punct(T![-]),
        b'&' => punct(T![&]),
        b'|' => punct(T![|]),
        b'+' => punct(T![+]),
        b'*' => punct(T![*]),
        b'^' => punct(T![^]),
        b'%' => punct(T![%]),
        _ => None,
    }
}

/// The end of the terminated block comment at `i` (`/*`, nesting), or `None`.
fn block_comment_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut depth = 1usize;
    let mut j = i + 2;
    while j < bytes.len() {
        match (bytes[j], bytes.get(j + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                j += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => j += 1,
        }
    }
    None
}

/// The parser's input for `text` and where its non-trivia tokens lie, exactly as
/// `LexedStr::new(edition, text)` and its `to_input(edition)` give them, or `None` where
/// this pass does not answer. `text` must be shorter than 4 GiB.
pub(super) fn lex(text: &str, edition: Edition) -> Option<(Tokens, Input)> {
    // A shebang or inner attribute line, or cargo-script frontmatter (`---` after
    // blank lines): `LexedStr` reads these with its own rules.
    if text.starts_with("#!") || text.trim_start().starts_with('-') {
        return None;
    }
    let bytes = text.as_bytes();
    // Roughly one non-trivia token per six bytes of typical code.
    let guess = text.len() / 6 + 16;
    let mut tokens = Tokens {
        starts: Vec::with_capacity(guess),
        ends: Vec::with_capacity(guess),
    };
    let mut input = Input::with_capacity(guess);
    let mut offset = 0usize;
    // Whether the last non-trivia token that was not an identifier touches the next one.
    let mut was_joint = false;
    while offset < bytes.len() {
        let (kind, end) = match common(bytes, offset) {
            Some((K::IDENT, end)) => {
                let word = text.get(offset..end)?;
                let kind = if word == "_" {
                    K::UNDERSCORE
                } else {
                    K::from_keyword(word, edition).unwrap_or(K::IDENT)
                };
                (kind, end)
            }
            Some(found) => found,
            None => {
                let rest = text.get(offset..)?;
                let token = lexer::Cursor::new(rest, lexer::FrontmatterAllowed::No).advance_token();
                let len = token.len as usize;
                if len == 0 {
                    return None;
                }
                let kind = kind_of(&token.kind, rest.get(..len)?, edition)?;
                (kind, offset + len)
            }
        };
        let start = offset;
        offset = end;
        if kind.is_trivia() {
            was_joint = false;
            continue;
        }
        tokens.starts.push(start as u32);
        tokens.ends.push(end as u32);
        if kind == K::IDENT {
            let word = text.get(start..end)?;
            input.push_ident(K::from_contextual_keyword(word, edition).unwrap_or(K::IDENT));
        } else {
            if was_joint {
                input.was_joint();
            }
            input.push(kind);
            if kind == K::FLOAT_NUMBER {
                // A float with a fractional part is joint: how the parser tells `x.0.1`.
                if bytes[end - 1] == b'.' {
                    was_joint = false;
                } else {
                    input.was_joint();
                }
            } else {
                was_joint = true;
            }
        }
    }
    Some((tokens, input))
}

/// rust-analyzer's kind for a clean token, or `None` for one it reports or treats
/// specially.
fn kind_of(kind: &Tk, text: &str, edition: Edition) -> Option<K> {
    Some(match kind {
        Tk::LineComment { .. } => K::COMMENT,
        Tk::BlockComment {
            terminated: true, ..
        } => K::COMMENT,
        Tk::Whitespace => K::WHITESPACE,
        Tk::Ident if text == "_" => K::UNDERSCORE,
        Tk::Ident => K::from_keyword(text, edition).unwrap_or(K::IDENT),
        Tk::RawIdent => K::IDENT,
        Tk::Literal { kind, .. } => literal(kind, text)?,
        Tk::Lifetime {
            starts_with_number: false,
        }
        | Tk::RawLifetime => K::LIFETIME_IDENT,
        Tk::Semi => T![;],
        Tk::Comma => T![,],
        Tk::Dot => T![.],
        Tk::OpenParen => T!['('],
        Tk::CloseParen => T![')'],
        Tk::OpenBrace => T!['{'],
        Tk::CloseBrace => T!['}'],
        Tk::OpenBracket => T!['['],
        Tk::CloseBracket => T![']'],
        Tk::At => T![@],
        Tk::Pound => T![#],
        Tk::Tilde => T![~],
        Tk::Question => T![?],
        Tk::Colon => T![:],
        Tk::Dollar => T![$],
        Tk::Eq => T![=],
        Tk::Bang => T![!],
        Tk::Lt => T![<],
        Tk::Gt => T![>],
        Tk::Minus => T![-],
        Tk::And => T![&],
        Tk::Or => T![|],
        Tk::Plus => T![+],
        Tk::Star => T![*],
        Tk::Slash => T![/],
        Tk::Caret => T![^],
        Tk::Percent => T![%],
        _ => return None,
    })
}

/// A literal's kind when it is terminated and every escape in it is valid.
fn literal(kind: &L, text: &str) -> Option<K> {
    // The body between the quotes: after the prefix (`b`, `c`) and the opening quote, up
    // to the last closing quote (a suffix may follow it).
    let body = |prefix: usize, quote: char| -> Option<&str> {
        let rest = text.get(prefix + 1..)?;
        rest.get(..rest.rfind(quote)?)
    };
    let mut clean = true;
    let kind = match *kind {
        L::Int {
            empty_int: false, ..
        } => K::INT_NUMBER,
        L::Float {
            empty_exponent: false,
            ..
        } => K::FLOAT_NUMBER,
        L::Char { terminated: true } => {
            clean = unescape_char(body(0, '\'')?).is_ok();
            K::CHAR
        }
        L::Byte { terminated: true } => {
            clean = unescape_byte(body(1, '\'')?).is_ok();
            K::BYTE
        }
        L::Str { terminated: true } => {
            unescape_str(body(0, '"')?, |_, r| clean &= r.is_ok());
            K::STRING
        }
        L::ByteStr { terminated: true } => {
            unescape_byte_str(body(1, '"')?, |_, r| clean &= r.is_ok());
            K::BYTE_STRING
        }
        L::CStr { terminated: true } => {
            unescape_c_str(body(1, '"')?, |_, r| clean &= r.is_ok());
            K::C_STRING
        }
        L::RawStr { n_hashes: Some(_) } => K::STRING,
        L::RawByteStr { n_hashes: Some(_) } => K::BYTE_STRING,
        L::RawCStr { n_hashes: Some(_) } => K::C_STRING,
        _ => return None,
    };
    clean.then_some(kind)
}
