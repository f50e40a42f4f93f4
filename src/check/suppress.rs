//! `scaffold:allow(<rule-id>) <reason>` comments.
//!
//! Written as `// …` in Rust, `# …` in YAML, TOML and shell, `<!-- … -->` in Markdown. A
//! comment on a line of its own covers the next line that is not itself a comment; a
//! comment after code covers its own line.

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
    let mut out = Vec::new();
    for line_no in 1..=file.line_count() {
        let line = file.line(line_no);
        let Some(m) = line.find(MARKER) else { continue };
        // The marker must sit inside a comment that opens before it on this line.
        let Some(open) = line[..m].rfind(opener) else {
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

#[cfg(test)]
mod tests {
    use super::*;

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
