//! Nothing scaffold prints can act on the reader's terminal or reorder what they read. A
//! pull request can put anything in a file name, a manifest, a gate's command or a queue
//! item's dedupe key: an escape sequence (an OSC title, a screen clear), a carriage return
//! that forges a line, a bidirectional override (U+202E) that shows code in another order
//! than it runs. Each such character is written as an escape, in one place per output
//! kind: [`escape`] for a string, [`Terminal`] for everything a human or GitHub output
//! writes, and [`to_writer`] for JSON (as `\uXXXX`, the same value to a parser).

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether `c` is one scaffold never prints raw: a control character (C0, DEL, C1), a
/// bidirectional control (embeddings, overrides, isolates, marks), or a line or paragraph
/// separator.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `s` with every [`is_unsafe`] character written as an escape (`\u{1b}`, `\u{202e}`,
/// `\r`); `\n` stays when `keep_newlines` (help text), `\t` when `keep_tabs`.
pub fn escape(s: &str, keep_newlines: bool, keep_tabs: bool) -> Cow<'_, str> {
    let keep = |c: char| (keep_newlines && c == '\n') || (keep_tabs && c == '\t');
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) && !keep(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer for people's terminals and CI logs: every [`is_unsafe`] character that
/// reaches it is written as an escape, but `\n` and `\t`, and ESC where the output draws
/// its own colours (`colour`: the check's human output on a terminal, whose every
/// repository string is escaped before it is drawn). A character split across writes is
/// held until it is whole.
#[derive(Debug)]
pub struct Terminal<W: Write> {
    inner: W,
    colour: bool,
    /// The start of a UTF-8 sequence the last write ended in.
    held: Vec<u8>,
}

impl<W: Write> Terminal<W> {
    pub fn new(inner: W, colour: bool) -> Self {
        Terminal {
            inner,
            colour,
            held: Vec::new(),
        }
    }

    fn pass(&self, c: char) -> bool {
        !is_unsafe(c) || c == '\n' || c == '\t' || (self.colour && c == '\u{1b}')
    }

    /// Writes the whole characters of `bytes`, escaping the unsafe ones; invalid UTF-8
    /// is written as it is (it is no character a terminal acts on).
    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut rest = bytes;
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => return self.emit_str(text),
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    self.emit_str(std::str::from_utf8(good).unwrap_or_default())?;
                    let skip = e.error_len().unwrap_or(bad.len());
                    self.inner.write_all(&bad[..skip])?;
                    rest = &bad[skip..];
                }
            }
        }
        Ok(())
    }

    fn emit_str(&mut self, text: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in text.char_indices() {
            if !self.pass(c) {
                self.inner.write_all(&text.as_bytes()[start..i])?;
                write!(self.inner, "{}", c.escape_default())?;
                start = i + c.len_utf8();
            }
        }
        self.inner.write_all(&text.as_bytes()[start..])
    }
}

/// How many bytes at the end of `bytes` start a UTF-8 sequence that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let len = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if len > back { back } else { 0 };
    }
    0
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.held);
        bytes.extend_from_slice(buf);
        let keep = incomplete_tail(&bytes);
        let (whole, tail) = bytes.split_at(bytes.len() - keep);
        self.emit(whole)?;
        self.held = tail.to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        self.inner.write_all(&held)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Terminal<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// serde_json's formatter, but each [`is_unsafe`] character it would write raw (DEL, C1,
/// bidirectional controls, separators: serde_json escapes only C0) is written as
/// `\uXXXX`.
struct Inert<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for Inert<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    // Everything else as the wrapped formatter writes it.
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `value` as one line of JSON, every [`is_unsafe`] character escaped.
pub fn to_writer<W: Write, T: serde::Serialize + ?Sized>(out: W, value: &T) -> io::Result<()> {
    let mut ser =
        serde_json::Serializer::with_formatter(out, Inert(serde_json::ser::CompactFormatter));
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// `value` as indented JSON, every [`is_unsafe`] character escaped.
pub fn to_writer_pretty<W: Write, T: serde::Serialize + ?Sized>(
    out: W,
    value: &T,
) -> io::Result<()> {
    let mut ser =
        serde_json::Serializer::with_formatter(out, Inert(serde_json::ser::PrettyFormatter::new()));
    value.serialize(&mut ser).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "a\u{1b}]0;pwned\u{7}\u{1b}[2Jb\r\u{202e}c\u{9b}d\te\u{2028}f\n";

    #[test]
    fn a_string_is_escaped_whole() {
        assert_eq!(
            escape(HOSTILE, true, true),
            "a\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jb\\r\\u{202e}c\\u{9b}d\te\\u{2028}f\n"
        );
        assert!(matches!(
            escape("plain é ✓", false, false),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_terminal_writer_escapes_across_split_writes() {
        for colour in [false, true] {
            let mut out = Vec::new();
            {
                let mut t = Terminal::new(&mut out, colour);
                // One byte at a time: every multi-byte character is split.
                for b in HOSTILE.as_bytes() {
                    t.write_all(std::slice::from_ref(b)).expect("write");
                }
                t.flush().expect("flush");
            }
            let text = String::from_utf8(out).expect("UTF-8");
            assert!(
                !text.contains('\u{202e}') && !text.contains('\r'),
                "{text:?}"
            );
            assert!(
                !text.contains('\u{9b}') && !text.contains('\u{2028}'),
                "{text:?}"
            );
            assert_eq!(text.contains('\u{1b}'), colour, "{text:?}");
            assert!(text.contains("d\te") && text.ends_with("f\n"), "{text:?}");
        }
    }

    #[test]
    fn json_escapes_what_serde_json_writes_raw_and_parses_back_the_same() {
        let value = serde_json::json!({ "key": HOSTILE, "emoji": "✓ 😀" });
        let mut out = Vec::new();
        to_writer(&mut out, &value).expect("write");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.contains("\\u202e") && text.contains("\\u009b"),
            "{text}"
        );
        assert!(!text.chars().any(is_unsafe), "{text:?}");
        assert!(text.contains("✓ 😀"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, value);
    }
}
