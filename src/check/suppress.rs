//! `scaffold:allow(<rule-id>) <reason>` comments.
//!
//! Written as `// …` in Rust, `# …` in YAML, TOML and shell, `<!-- … -->` in Markdown. A
//! comment on a line of its own covers the next line that is not itself a comment; a
//! comment after code covers its own line.

use std::collections::HashMap;

use crate::source::SourceFile;

use super::finding::Location;

const MARKER: &str = "scaffold:allow(";

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Suppression {
    pub path: String,
    pub rule: String,
    pub reason: Option<String>,
    /// Where the comment is written.
    pub loc: Location,
    /// The lines whose findings it suppresses.
    pub covers: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Slash,
    Hash,
    Html,
}

fn style_of(path: &str) -> Option<Style> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e);
    match ext {
        Some("rs") => Some(Style::Slash),
        Some("md") => Some(Style::Html),
        Some("yml" | "yaml" | "toml" | "sh" | "tf" | "example" | "env") => Some(Style::Hash),
        _ if name == "Dockerfile" || name.ends_with(".Dockerfile") => Some(Style::Hash),
        _ => None,
    }
}

/// Every allow comment in a file.
pub fn scan(file: &SourceFile) -> Vec<Suppression> {
    let Some(style) = style_of(&file.path) else {
        return Vec::new();
    };
    if !file.text.contains(MARKER) {
        return Vec::new();
    }
    let opener = match style {
        Style::Slash => "//",
        Style::Hash => "#",
        Style::Html => "<!--",
    };
    let starts = match style {
        Style::Slash => rust_line_comments(&file.text),
        Style::Hash => hash_comments(&file.text),
        Style::Html => HashMap::new(),
    };
    let mut out = Vec::new();
    for line_no in 1..=file.line_count() {
        let line = file.line(line_no);
        let Some(m) = line.find(MARKER) else { continue };
        // The marker must sit inside a comment that opens before it on this line (and,
        // in Rust, YAML, TOML and shell, not inside a string literal).
        let open = match style {
            Style::Html => line[..m].rfind(opener),
            _ => starts.get(&line_no).copied().filter(|o| *o <= m),
        };
        let Some(open) = open else {
            continue;
        };
        let between = line[open + opener.len()..m].trim();
        if !between.is_empty() && !between.chars().all(|c| c == '/' || c == '!') {
            continue;
        }
        let rest = &line[m + MARKER.len()..];
        let Some(close) = rest.find(')') else {
            continue;
        };
        let rule = rest[..close].trim().to_owned();
        let mut reason = rest[close + 1..].trim();
        if style == Style::Html {
            reason = reason.split("-->").next().unwrap_or("").trim();
        }
        let reason = (!reason.is_empty()).then(|| reason.to_owned());
        let code_before = !line[..open].trim().is_empty();
        let mut covers = vec![line_no];
        if !code_before {
            let next_code = (line_no + 1..=file.line_count()).find(|&n| {
                let t = file.line(n).trim_start();
                !(t.starts_with(opener) || (style == Style::Slash && t.starts_with("#[")))
            });
            if let Some(n) = next_code {
                covers.push(n);
            }
        }
        let line_start = file.offset_of(line_no, 1);
        let offset = line_start + open;
        out.push(Suppression {
            path: file.path.clone(),
            rule,
            reason,
            loc: Location::in_file(file, offset, line.len() - open),
            covers,
        });
    }
    out
}

/// Where each line comment of a Rust file starts: 1-based line → byte column. String,
/// raw string, byte string and character literals and block comments are skipped.
fn rust_line_comments(text: &str) -> HashMap<usize, usize> {
    let b = text.as_bytes();
    let mut out = HashMap::new();
    let (mut i, mut line, mut line_start) = (0usize, 1usize, 0usize);
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                out.insert(line, i - line_start);
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if b[i] == b'\n' {
                            line += 1;
                            line_start = i + 1;
                        }
                        i += 1;
                    }
                }
            }
            b'r' if (i == 0
                || !ident(b[i - 1])
                || (b[i - 1] == b'b' && (i < 2 || !ident(b[i - 2]))))
                && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                i += 2 + hashes;
                while i < b.len() {
                    if b[i] == b'"'
                        && b[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|c| **c == b'#')
                            .count()
                            == hashes
                    {
                        i += 1 + hashes;
                        break;
                    }
                    if b[i] == b'\n' {
                        line += 1;
                        line_start = i + 1;
                    }
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'\n' {
                        line += 1;
                        line_start = i + 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'\'' => {
                // A character literal ('a', '\n', '\u{..}', 'é') or a lifetime ('a).
                let rest = &text[i + 1..];
                let mut chars = rest.char_indices();
                match chars.next() {
                    Some((_, '\\')) => {
                        let end = rest[1..].find('\'').map_or(rest.len(), |e| e + 2);
                        i += 1 + end;
                    }
                    Some((_, c)) if rest[c.len_utf8()..].starts_with('\'') && c != '\n' => {
                        i += 1 + c.len_utf8() + 1;
                    }
                    _ => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Where each `#` comment starts in YAML, TOML, shell or HCL: outside quotes, and at the
/// start of the line or after whitespace (`http://x#frag` is not a comment).
fn hash_comments(text: &str) -> HashMap<usize, usize> {
    let mut out = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        let mut escaped = false;
        for (i, c) in line.char_indices() {
            match quote {
                Some(q) => {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' && q == '"' {
                        escaped = true;
                    } else if c == q {
                        quote = None;
                    }
                }
                None if c == '"' || c == '\'' => quote = Some(c),
                None if c == '#' && prev.is_whitespace() => {
                    out.insert(n + 1, i);
                    break;
                }
                None => {}
            }
            prev = c;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignores_markers_inside_string_literals() {
        let rs = SourceFile::new(
            "src/lib.rs",
            "const H: &str = \"write // scaffold:allow(import-forbidden) <reason>\";\n\
             const R: &str = r#\"// scaffold:allow(x) y\"#;\n\
             let c = '\\''; // scaffold:allow(import-forbidden) real one\n\
             fn f<'a>(x: &'a str) {} // scaffold:allow(source-unparsed) also real\n\
             /* // scaffold:allow(x) in a block comment */\n",
        );
        let s = scan(&rs);
        let lines: Vec<usize> = s.iter().map(|s| s.loc.line).collect();
        assert_eq!(lines, [3, 4], "{s:?}");
        let yml = SourceFile::new(
            "a.yml",
            "url: \"http://x # scaffold:allow(gate-unknown) no\"\nrun: x # scaffold:allow(gate-unknown) yes\n",
        );
        let s = scan(&yml);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].loc.line, 2);
    }

    #[test]
    fn the_comment_scanner_survives_every_prefix_of_tricky_text() {
        let tricky = "let a = 'é'; let b = b'\\''; let s = br##\"x\"# \"##; /* /* nested */ */ 'a: loop {} r#\"unterminated \\\" // \u{1F600} '\\u{1F600}' \"";
        for (i, _) in tricky.char_indices() {
            let _ = rust_line_comments(&tricky[..i]);
            let _ = hash_comments(&tricky[..i]);
        }
        assert_eq!(
            rust_line_comments("x // c\n\"//\" // d\n").get(&2),
            Some(&5)
        );
    }

    #[test]
    fn reads_comments_in_each_style() {
        let rs = SourceFile::new(
            "src/lib.rs",
            "// scaffold:allow(import-forbidden) legacy, removed in Q3\n// another comment\nuse acme_infra::x; // scaffold:allow(import-undeclared)\nlet s = \"scaffold:allow(x) no\";\n",
        );
        let s = scan(&rs);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].rule, "import-forbidden");
        assert_eq!(s[0].reason.as_deref(), Some("legacy, removed in Q3"));
        assert_eq!(s[0].covers, [1, 3]);
        assert_eq!(s[1].reason, None);
        assert_eq!(s[1].covers, [3]);
        let md = SourceFile::new(
            "workers/a/README.md",
            "<!-- scaffold:allow(worker-strategy-missing) replay is done by the projector -->\n# A\n",
        );
        let s = scan(&md);
        assert_eq!(
            s[0].reason.as_deref(),
            Some("replay is done by the projector")
        );
        assert_eq!(s[0].covers, [1, 2]);
        let toml = SourceFile::new(
            "workers/a/Cargo.toml",
            "[dependencies]\nacme-infra = { path = \"../../infra\" } # scaffold:allow(dependency-forbidden) migration\n",
        );
        assert_eq!(scan(&toml)[0].covers, [2]);
    }
}
