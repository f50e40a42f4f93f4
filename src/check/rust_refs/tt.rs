//! Paths inside token trees: a macro call's arguments (`println!("{}", b::f())`), a
//! `macro_rules!` body, an attribute's arguments (`#[derive(b::D)]`, `#[cfg_attr(x,
//! derive(b::R))]`). Neither parser gives these a tree, so both scans feed the tokens
//! through this one reader and get the same answer.
//!
//! A token tree is read as a stream: an identifier followed by `::` starts a path (its
//! first segment may name a crate), and so does `::` where it cannot continue a path
//! (`(::b::x)`). An identifier after `$` (a macro variable), `.` (a method), `#` (a
//! `quote!` interpolation) or `'` (a lifetime) is no first segment, and neither is one after a
//! `::` that continues a path. That is what a parse of the tokens as expressions, items
//! or types would find wherever they parse, and it reads the tokens that do not
//! (`macro_rules!` bodies, custom syntax) the same way. The bodies of `quote!`-like macros
//! are code for another crate and are not read ([`is_quote`]).

/// What a token is, as far as paths go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// An identifier that is no keyword (a raw one included).
    Ident,
    /// `self`, `super`, `crate`, `Self`: a `::` after one continues a path.
    PathKeyword,
    /// Any other keyword (`as`, `in`, `dyn`, …).
    Keyword,
    Punct(char),
    /// A literal, a lifetime, a delimiter.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Last {
    Start,
    Ident,
    PathKeyword,
    /// `>` that closes generics (not `=>` or `->`).
    Angle,
    /// `::`, and whether it continues a path.
    Sep {
        continues: bool,
    },
    /// A single `:`.
    Colon,
    Dot,
    Eq,
    Minus,
    /// `$`, `#`, `'`: the identifier after it is no first segment.
    NoFirst,
    Other,
}

/// Reads one token tree's tokens in order.
pub(super) struct Reader<T> {
    last: Last,
    /// What came before a pending single `:`.
    before_colon: Last,
    /// An identifier that starts a path if `::` follows.
    candidate: Option<T>,
}

impl<T: Clone> Reader<T> {
    pub(super) fn new() -> Self {
        Reader {
            last: Last::Start,
            before_colon: Last::Start,
            candidate: None,
        }
    }

    /// Feeds one token; `joined` when it follows the previous token with nothing between
    /// (only read for punctuation after punctuation). Returns a path's first segment.
    pub(super) fn feed(&mut self, class: Class, joined: bool, tok: T) -> Option<T> {
        if class == Class::Punct(':') {
            if self.last == Last::Colon && joined {
                let continues = matches!(
                    self.before_colon,
                    Last::Ident | Last::PathKeyword | Last::Angle
                );
                let first = self.candidate.take();
                self.last = Last::Sep { continues };
                return first.filter(|_| self.before_colon == Last::Ident);
            }
            self.before_colon = self.last;
            self.last = Last::Colon;
            if self.before_colon != Last::Ident {
                self.candidate = None;
            }
            return None;
        }
        let prev = self.last;
        self.candidate = None;
        let mut leading = None;
        self.last = match class {
            Class::Ident => {
                match prev {
                    // After `.`, a method or a field, never a crate.
                    Last::Sep { continues: true } | Last::NoFirst | Last::Dot => {}
                    // `(::b::x)`: a `::`-rooted path names a crate.
                    Last::Sep { continues: false } => leading = Some(tok),
                    _ => self.candidate = Some(tok),
                }
                Last::Ident
            }
            Class::PathKeyword => Last::PathKeyword,
            Class::Punct('>') if joined && matches!(prev, Last::Eq | Last::Minus) => Last::Other,
            Class::Punct('>') => Last::Angle,
            Class::Punct('=') => Last::Eq,
            Class::Punct('-') => Last::Minus,
            // `..b::MAX` is a range: the path after it is read.
            Class::Punct('.') if joined && prev == Last::Dot => Last::Other,
            Class::Punct('.') => Last::Dot,
            Class::Punct('$' | '#' | '\'') => Last::NoFirst,
            Class::Keyword | Class::Punct(_) | Class::Other => Last::Other,
        };
        leading
    }
}

/// A token as the module reader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ModTok<'a> {
    /// The keyword `mod`.
    Mod,
    Ident(&'a str),
    Semi,
    Eq,
    /// A string literal's value.
    Str(String),
    Other,
}

/// Finds `mod name;` in a token tree (`cfg_if! { if #[cfg(unix)] { mod unix; } }`): a
/// module declared there is part of the module tree like any other, with the
/// `#[path = "…"]` written before it.
#[derive(Default)]
pub(super) struct ModReader {
    /// 0: nothing; 1: after `mod`; 2: after `mod name`.
    state: u8,
    name: String,
    /// 0: nothing; 1: after `path`; 2: after `path =`.
    path_state: u8,
    path: Option<String>,
}

impl ModReader {
    /// Whether a string literal now would be a `#[path]` value (only then is its value
    /// worth computing).
    pub(super) fn wants_str(&self) -> bool {
        self.path_state == 2
    }

    /// Whether a token that is neither `mod` nor `path` would leave it as it is (most
    /// tokens of most trees: they are not fed).
    pub(super) fn idle(&self) -> bool {
        self.state == 0 && self.path_state == 0 && self.path.is_none()
    }

    /// Feeds one token; returns a declaration (`name`, `#[path]`) when one ends here.
    pub(super) fn feed(&mut self, tok: ModTok<'_>) -> Option<(String, Option<String>)> {
        let mut out = None;
        self.state = match (self.state, &tok) {
            (_, ModTok::Mod) => 1,
            (1, ModTok::Ident(name)) => {
                self.name = (*name).to_owned();
                2
            }
            (2, ModTok::Semi) => {
                out = Some((std::mem::take(&mut self.name), self.path.take()));
                0
            }
            _ => 0,
        };
        self.path_state = match (self.path_state, tok) {
            (_, ModTok::Ident("path")) => 1,
            (1, ModTok::Eq) => 2,
            (2, ModTok::Str(value)) => {
                self.path = Some(value);
                0
            }
            (_, ModTok::Semi) => {
                self.path = None;
                0
            }
            _ => 0,
        };
        out
    }
}

/// Macros whose body is code generated for another crate (`quote!`, `parse_quote!`):
/// what it names is that crate's edge, not this one's.
pub(super) fn is_quote(macro_name: &str) -> bool {
    matches!(
        macro_name,
        "quote" | "quote_spanned" | "parse_quote" | "parse_quote_spanned"
    )
}

/// Lint tools (`#[allow(clippy::x, rustdoc::y)]`): a path in an attribute's arguments
/// starting with one names a lint, never a crate.
pub(super) fn is_lint_tool(name: &str) -> bool {
    super::is_tool(name) || name == "rustdoc"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `(class, text)` pairs, every token joined to the one before it unless it
    /// follows a space in `spaced`; returns the first segments found.
    fn firsts(tokens: &[(Class, &'static str, bool)]) -> Vec<&'static str> {
        let mut r = Reader::new();
        tokens
            .iter()
            .filter_map(|(c, t, joined)| r.feed(*c, *joined, *t))
            .collect()
    }

    fn lex(src: &'static str) -> Vec<(Class, &'static str, bool)> {
        // A tiny lexer for the tests: identifiers, keywords, single punctuation.
        let mut out = Vec::new();
        let mut prev_end = usize::MAX;
        let bytes = src.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i] as char;
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            let start = i;
            if c.is_alphanumeric() || c == '_' {
                while i < bytes.len() && ((bytes[i] as char).is_alphanumeric() || bytes[i] == b'_')
                {
                    i += 1;
                }
                let w = &src[start..i];
                let class = match w {
                    "self" | "super" | "crate" | "Self" => Class::PathKeyword,
                    "as" | "in" | "dyn" | "fn" => Class::Keyword,
                    _ if w.as_bytes()[0].is_ascii_digit() => Class::Other,
                    _ => Class::Ident,
                };
                out.push((class, w, start == prev_end));
            } else {
                i += 1;
                let class = if "([{}])".contains(c) {
                    Class::Other
                } else {
                    Class::Punct(c)
                };
                out.push((class, &src[start..i], start == prev_end));
            }
            prev_end = i;
        }
        out
    }

    #[test]
    fn finds_first_segments_and_nothing_else() {
        let cases: &[(&str, &[&str])] = &[
            ("\"{}\", b::f()", &["b"]),
            ("b::C, 1", &["b"]),
            ("a::b::c", &["a"]),
            ("$crate::x, $v::y, s.m::<T>(), #q::r", &[]),
            ("(::b::x) as ::c::T", &["b", "c"]),
            ("<T>::f, Vec::<u8>::new, self::a, super::b", &["Vec"]),
            ("x: b::C, y : : z", &["b"]),
            ("A => ::b::f(), F -> ::c::T", &["b", "c"]),
            ("0..b::MAX, ..c::d()", &["b", "c"]),
        ];
        for (src, want) in cases {
            assert_eq!(firsts(&lex(src)), *want, "{src}");
        }
    }
}
