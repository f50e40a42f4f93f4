//! A YAML document as a tree of spanned nodes.
//!
//! Manifests are parsed into this tree first and validated by hand afterwards, so that
//! validation can report *every* problem (unknown keys, wrong types, bad globs) with its
//! own location instead of stopping at the first serde error.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use serde_saphyr::options::DuplicateKeyPolicy;

/// A byte range in the source text plus its 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pos {
    pub offset: usize,
    pub len: usize,
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn from_location(loc: &serde_saphyr::Location, text: &str) -> Self {
        let line = usize::try_from(loc.line()).unwrap_or(0).max(1);
        let column = usize::try_from(loc.column()).unwrap_or(0).max(1);
        let span = loc.span();
        let offset = span
            .byte_offset()
            .and_then(|o| usize::try_from(o).ok())
            .unwrap_or_else(|| line_col_to_offset(text, line, column));
        let len = span
            .byte_len()
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0);
        let offset = offset.min(text.len());
        let len = len.min(text.len() - offset);
        Pos {
            offset,
            len,
            line,
            column,
        }
    }
}

/// Byte offset of a 1-based line/column (column counted in characters).
pub fn line_col_to_offset(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let col_bytes: usize = l
                .chars()
                .take(column.saturating_sub(1))
                .map(char::len_utf8)
                .sum();
            return start + col_bytes;
        }
        start += l.len();
    }
    text.len()
}

/// One YAML value with where it was written.
#[derive(Clone, Debug)]
pub struct Node {
    pub value: Value,
    pub pos: Pos,
}

#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order; duplicates are kept so validation can report them.
    Map(Vec<(Node, Node)>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// The value as the raw deserializer hands it over, before spans are attached.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Raw::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            out.push(item);
        }
        Ok(Raw::Seq(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Raw>>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            out.push((key, value));
        }
        Ok(Raw::Map(out))
    }
}

fn convert(raw: Spanned<Raw>, text: &str) -> Node {
    let pos = Pos::from_location(&raw.referenced, text);
    let value = match raw.value {
        Raw::Null => Value::Null,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Int(i) => Value::Int(i),
        Raw::Float(f) => Value::Float(f),
        Raw::Str(s) => Value::Str(s),
        Raw::Seq(items) => Value::Seq(items.into_iter().map(|n| convert(n, text)).collect()),
        Raw::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (convert(k, text), convert(v, text)))
                .collect(),
        ),
    };
    Node { value, pos }
}

/// A YAML syntax error with the place it happened.
#[derive(Debug, Clone)]
pub struct SyntaxError {
    pub message: String,
    pub pos: Pos,
}

/// Parses `text` into a spanned tree. Never panics; an empty document is `Null`.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    if text.trim().is_empty() {
        return Ok(Node {
            value: Value::Null,
            pos: Pos {
                line: 1,
                column: 1,
                ..Pos::default()
            },
        });
    }
    let options = serde_saphyr::options! {
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
    };
    match serde_saphyr::from_str_with_options::<Spanned<Raw>>(text, options) {
        Ok(raw) => Ok(convert(raw, text)),
        Err(err) => {
            let pos = err
                .location()
                .map(|l| Pos::from_location(&l, text))
                .unwrap_or(Pos {
                    line: 1,
                    column: 1,
                    ..Pos::default()
                });
            let message = first_line(&err.to_string());
            Err(SyntaxError { message, pos })
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("invalid YAML").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_positions_and_duplicates() {
        let text = "version: 1\nlayers:\n  a: {paths: [\"x/**\"]}\n  a: {}\n";
        let node = parse(text).expect("valid yaml");
        let Value::Map(entries) = &node.value else {
            panic!("expected a map, got {:?}", node.value)
        };
        assert_eq!(entries[0].0.as_str(), Some("version"));
        assert_eq!(entries[1].0.pos.line, 2);
        let Value::Map(layers) = &entries[1].1.value else {
            panic!("layers should be a map")
        };
        assert_eq!(layers.len(), 2, "duplicate keys are kept");
        assert_eq!((layers[1].0.pos.line, layers[1].0.pos.column), (4, 3));
        assert_eq!(
            &text[layers[1].0.pos.offset..layers[1].0.pos.offset + 1],
            "a"
        );
    }

    #[test]
    fn syntax_error_has_a_position() {
        let err = parse("a: [1, 2\nb: c\n").expect_err("unterminated flow sequence");
        assert!(err.pos.line >= 1);
        assert!(!err.message.is_empty());
    }
}
