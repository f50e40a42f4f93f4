//! The fast scan's lexer for the common case: rust-analyzer's tokens and parser input for
//! a file of plain, clean tokens, built in one pass over `rustc_lexer`'s tokens.
//!
//! `LexedStr::new` followed by `to_input` gives the same two things, but restarts the
//! lexer at every token, keeps an error list, and walks the tokens a second time to build
//! the input: 29% of a cold check's instructions (callgrind, synthetic tree); this pass
//! does the same work in about two thirds of that. It takes only what is plainly right
//! and says `None` for anything else (a lexer error of any kind, a shebang or `#!` line,
//! frontmatter, a reserved or unknown prefix, an unknown character, an escape
//! `rustc_literal_escaper` questions, even one rust-analyzer lets pass); the caller then
//! asks `LexedStr`, as before. The differential tests in `mod.rs` pin the two to the
//! same tokens and the same parse wherever this one answers.

use ra_ap_parser::{Edition, Input, LexedStr, SyntaxKind as K, T};
use ra_ap_rustc_lexer::{self as lexer, LiteralKind as L, TokenKind as Tk};
use rustc_literal_escaper::{
    unescape_byte, unescape_byte_str, unescape_c_str, unescape_char, unescape_str,
};

/// Every token of a text, trivia included.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Tokens {
    /// Each token's kind.
    pub kinds: Vec<K>,
    /// Each token's start, then the text's length (so token `i` ends at `starts[i + 1]`).
    pub starts: Vec<u32>,
}

impl Tokens {
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// The tokens `LexedStr` found.
    pub fn of(lexed: &LexedStr<'_>) -> Tokens {
        let n = lexed.len();
        Tokens {
            kinds: (0..n).map(|i| lexed.kind(i)).collect(),
            starts: (0..=n).map(|i| lexed.text_start(i) as u32).collect(),
        }
    }
}

/// The tokens of `text` and the parser's input, exactly as `LexedStr::new(edition, text)`
/// and its `to_input(edition)` give them, or `None` where this pass does not answer.
/// `text` must be shorter than 4 GiB.
pub(super) fn lex(text: &str, edition: Edition) -> Option<(Tokens, Input)> {
    // A shebang or inner attribute line, or cargo-script frontmatter (`---` after
    // blank lines): `LexedStr` reads these with its own rules.
    if text.starts_with("#!") || text.trim_start().starts_with('-') {
        return None;
    }
    // Roughly one token per four bytes of typical code.
    let guess = text.len() / 4 + 16;
    let mut tokens = Tokens {
        kinds: Vec::with_capacity(guess),
        starts: Vec::with_capacity(guess + 1),
    };
    let mut input = Input::with_capacity(guess / 2);
    let mut offset = 0usize;
    // Whether the last non-trivia token that was not an identifier touches the next one.
    let mut was_joint = false;
    for token in lexer::tokenize(text, lexer::FrontmatterAllowed::No) {
        let len = token.len as usize;
        let token_text = text.get(offset..offset + len)?;
        let kind = kind_of(&token.kind, token_text, edition)?;
        tokens.kinds.push(kind);
        tokens.starts.push(offset as u32);
        offset += len;
        if kind.is_trivia() {
            was_joint = false;
        } else if kind == K::IDENT {
            input.push_ident(K::from_contextual_keyword(token_text, edition).unwrap_or(K::IDENT));
        } else {
            if was_joint {
                input.was_joint();
            }
            input.push(kind);
            if kind == K::FLOAT_NUMBER {
                // A float with a fractional part is joint: how the parser tells `x.0.1`.
                if token_text.ends_with('.') {
                    was_joint = false;
                } else {
                    input.was_joint();
                }
            } else {
                was_joint = true;
            }
        }
    }
    if offset != text.len() {
        return None;
    }
    tokens.starts.push(offset as u32);
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
