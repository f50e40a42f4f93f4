//! Insertion below marker lines (`// scaffold:kinds`, `// scaffold:handlers`,
//! `# scaffold:workers`, …). A marker is matched literally as a whole line (indentation
//! aside); a missing or repeated marker is an error, never a guess. Inserted lines take the
//! marker's indentation and the file's line ending.

use super::error::GenerateError;

/// `text` with `lines` inserted directly below the line `marker` (each line prefixed with
/// the marker's indentation; an empty line stays empty).
pub fn insert_below(
    path: &str,
    text: &str,
    marker: &str,
    place: &'static str,
    lines: &[String],
) -> Result<String, GenerateError> {
    Ok(insert_at(text, find(path, text, marker, place)?, lines))
}

/// `text` with `lines` inserted below the marker line at byte range `line` (as [`find`] or
/// [`find_all`] give it), with the marker's indentation and the file's line ending.
pub fn insert_at(text: &str, (line_start, line_end): (usize, usize), lines: &[String]) -> String {
    let marker_line = &text[line_start..line_end];
    let indent: String = marker_line
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let eol = line_ending(text);
    let mut insert = String::new();
    let mut at = line_end;
    if !text[..line_end].ends_with('\n') {
        // The marker is the last line without a newline: end it first.
        insert.push_str(eol);
        at = text.len();
    }
    for l in lines {
        if !l.is_empty() {
            insert.push_str(&indent);
            insert.push_str(l);
        }
        insert.push_str(eol);
    }
    let mut out = String::with_capacity(text.len() + insert.len());
    out.push_str(&text[..at]);
    out.push_str(&insert);
    out.push_str(&text[at..]);
    out
}

/// The byte range of the marker's line (end includes its line ending).
pub fn find(
    path: &str,
    text: &str,
    marker: &str,
    place: &'static str,
) -> Result<(usize, usize), GenerateError> {
    let found = find_all(path, text, marker);
    match found.len() {
        0 => Err(GenerateError::MarkerMissing {
            path: path.to_owned(),
            marker: marker.to_owned(),
            place,
        }),
        1 => Ok(found[0]),
        n => Err(GenerateError::MarkerAmbiguous {
            path: path.to_owned(),
            marker: marker.to_owned(),
            count: n,
        }),
    }
}

/// The byte range of every line that is `marker` (end includes its line ending). In Rust,
/// only a marker that is a line comment of its own counts: the same text inside a string
/// literal or a block comment is data (an insertion there would land inside the string).
pub fn find_all(path: &str, text: &str, marker: &str) -> Vec<(usize, usize)> {
    let comments = (path.ends_with(".rs") && marker.starts_with("//")).then(|| line_comments(text));
    let mut found = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == marker {
            let at = offset + (line.len() - line.trim_start().len());
            if comments
                .as_ref()
                .is_none_or(|c| c.binary_search(&at).is_ok())
            {
                found.push((offset, offset + line.len()));
            }
        }
        offset += line.len();
    }
    found
}

/// The byte offsets where `text`'s line comments start, ascending (rustc's lexer, so a
/// `//` inside a string or a block comment is not one).
fn line_comments(text: &str) -> Vec<usize> {
    use ra_ap_rustc_lexer::{FrontmatterAllowed, TokenKind, tokenize};
    let mut at = 0usize;
    let mut out = Vec::new();
    for token in tokenize(text, FrontmatterAllowed::No) {
        if matches!(token.kind, TokenKind::LineComment { .. }) {
            out.push(at);
        }
        at += token.len as usize;
    }
    out
}

/// `"\r\n"` when CRLF lines outnumber LF-only lines, else `"\n"`.
pub fn line_ending(text: &str) -> &'static str {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    if crlf > lf { "\r\n" } else { "\n" }
}

/// `line` with the file's line ending.
pub fn with_eol(text: &str, s: &str) -> String {
    if line_ending(text) == "\r\n" {
        s.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_inside_a_rust_string_or_block_comment_is_not_one() {
        let text = "const DOC: &str = r#\"\n    // scaffold:handlers\n\"#;\n/*\n// scaffold:handlers\n*/\nfn f() {\n    // scaffold:handlers\n}\n";
        let (start, _) =
            find("src/lib.rs", text, "// scaffold:handlers", "x").expect("one real marker");
        assert_eq!(&text[start..start + 8], "    // s");
        assert!(
            text[..start].contains("fn f()"),
            "the marker inside the string was taken"
        );
        let only_in_string = "const DOC: &str = \"\n// scaffold:handlers\n\";\n";
        assert!(matches!(
            find("src/lib.rs", only_in_string, "// scaffold:handlers", "x"),
            Err(GenerateError::MarkerMissing { .. })
        ));
        // Other files keep the whole-line rule.
        assert!(
            find(
                "dev.sh",
                "x\n# scaffold:workers\n",
                "# scaffold:workers",
                "x"
            )
            .is_ok()
        );
    }

    #[test]
    fn inserts_below_with_the_markers_indent_and_the_files_line_ending() {
        let text =
            "pub const KINDS: Registry = &[\r\n    WORK_KINDS,\r\n    // scaffold:kinds\r\n];\r\n";
        let out = insert_below(
            "root.rs",
            text,
            "// scaffold:kinds",
            "x",
            &["SHIPPING_KINDS,".to_owned()],
        )
        .expect("inserted");
        assert_eq!(
            out,
            "pub const KINDS: Registry = &[\r\n    WORK_KINDS,\r\n    // scaffold:kinds\r\n    SHIPPING_KINDS,\r\n];\r\n"
        );
    }

    #[test]
    fn a_missing_or_repeated_marker_is_an_error() {
        let missing = insert_below("a.rs", "fn main() {}\n", "// scaffold:kinds", "x", &[]);
        assert!(matches!(missing, Err(GenerateError::MarkerMissing { .. })));
        let twice = insert_below(
            "a.rs",
            "// scaffold:kinds\n// scaffold:kinds\n",
            "// scaffold:kinds",
            "x",
            &[],
        );
        assert!(matches!(twice, Err(GenerateError::MarkerAmbiguous { .. })));
        let partial = insert_below(
            "a.rs",
            "// scaffold:kinds-old\n",
            "// scaffold:kinds",
            "x",
            &[],
        );
        assert!(matches!(partial, Err(GenerateError::MarkerMissing { .. })));
    }

    #[test]
    fn a_marker_on_the_last_line_without_newline() {
        let out = insert_below(
            "dev.sh",
            "a\n# scaffold:workers",
            "# scaffold:workers",
            "x",
            &["b".to_owned()],
        )
        .expect("inserted");
        assert_eq!(out, "a\n# scaffold:workers\nb\n");
    }
}
