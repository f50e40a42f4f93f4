//! Just enough Markdown for worker READMEs: headings (ATX and setext) with the text under
//! each, skipping fenced code blocks and HTML comments.

/// A heading and the text up to the next heading of the same or a higher level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub level: usize,
    pub title: String,
    /// 1-based line of the heading.
    pub line: usize,
    /// Byte offset and length of the heading line.
    pub offset: usize,
    pub len: usize,
    /// The section's text, without code fences' markers, HTML comments or sub-headings' `#`.
    pub body: String,
}

pub fn sections(text: &str) -> Vec<Section> {
    let lines: Vec<(usize, &str)> = {
        let mut off = 0;
        text.split_inclusive('\n')
            .map(|l| {
                let start = off;
                off += l.len();
                (start, l.trim_end_matches(['\n', '\r']))
            })
            .collect()
    };
    // (level, title, line index) of each heading; body lines are attributed afterwards.
    let mut heads: Vec<(usize, String, usize)> = Vec::new();
    let mut body_lines: Vec<Option<String>> = vec![None; lines.len()];
    let mut fence: Option<(char, usize)> = None;
    let mut in_comment = false;
    let mut i = 0;
    while i < lines.len() {
        let (_, raw) = lines[i];
        let trimmed = raw.trim_start();
        let indent = raw.len() - trimmed.len();
        if let Some((ch, n)) = fence {
            if trimmed.chars().take_while(|c| *c == ch).count() >= n
                && trimmed.trim_start_matches(ch).trim().is_empty()
            {
                fence = None;
            } else {
                body_lines[i] = Some(raw.to_owned());
            }
            i += 1;
            continue;
        }
        if in_comment {
            if let Some(end) = raw.find("-->") {
                in_comment = false;
                body_lines[i] = Some(raw[end + 3..].to_owned());
            }
            i += 1;
            continue;
        }
        if indent < 4 {
            let fch = trimmed.chars().next();
            if let Some(ch @ ('`' | '~')) = fch {
                let n = trimmed.chars().take_while(|c| *c == ch).count();
                if n >= 3 {
                    fence = Some((ch, n));
                    i += 1;
                    continue;
                }
            }
            if let Some(level) = atx_level(trimmed) {
                let title = trimmed[level..]
                    .trim()
                    .trim_end_matches('#')
                    .trim()
                    .to_owned();
                heads.push((level, title, i));
                i += 1;
                continue;
            }
            if !trimmed.is_empty() && i + 1 < lines.len() && body_lines[i].is_none() {
                let next = lines[i + 1].1.trim();
                let is_para_start = i == 0
                    || lines[i - 1].1.trim().is_empty()
                    || heads.last().is_some_and(|h| h.2 + 1 == i);
                if is_para_start
                    && !next.is_empty()
                    && (next.chars().all(|c| c == '=')
                        || (next.chars().all(|c| c == '-') && next.len() >= 2))
                {
                    let level = if next.starts_with('=') { 1 } else { 2 };
                    heads.push((level, trimmed.trim().to_owned(), i));
                    i += 2;
                    continue;
                }
            }
        }
        let mut line = raw.to_owned();
        while let Some(start) = line.find("<!--") {
            match line[start..].find("-->") {
                Some(end) => line.replace_range(start..start + end + 3, ""),
                None => {
                    line.truncate(start);
                    in_comment = true;
                    break;
                }
            }
        }
        body_lines[i] = Some(line);
        i += 1;
    }
    heads
        .iter()
        .enumerate()
        .map(|(h, (level, title, li))| {
            let end = heads[h + 1..]
                .iter()
                .find(|(l, _, _)| l <= level)
                .map_or(lines.len(), |(_, _, e)| *e);
            let body = (li + 1..end)
                .filter_map(|j| body_lines[j].as_deref())
                .collect::<Vec<_>>()
                .join("\n");
            let (offset, raw) = lines[*li];
            Section {
                level: *level,
                title: title.clone(),
                line: li + 1,
                offset,
                len: raw.len(),
                body,
            }
        })
        .collect()
}

fn atx_level(line: &str) -> Option<usize> {
    let n = line.chars().take_while(|c| *c == '#').count();
    ((1..=6).contains(&n) && line[n..].chars().next().is_none_or(char::is_whitespace)).then_some(n)
}

/// Whether a section body says something real: not empty, not TODO/TBD/FIXME, not a bare
/// N/A, and at least three words of prose.
pub fn is_placeholder(body: &str) -> bool {
    let text: String = body
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '/' || c == '\'' {
                c
            } else {
                ' '
            }
        })
        .collect();
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some(first) = words.first() else {
        return true;
    };
    let first = first.to_ascii_uppercase();
    if matches!(
        first.as_str(),
        "TODO" | "TBD" | "FIXME" | "XXX" | "WIP" | "PLACEHOLDER"
    ) {
        return true;
    }
    if matches!(first.as_str(), "N/A" | "NA" | "NONE") {
        // "N/A: this worker keeps no state" has a reason; "N/A" alone does not.
        return words.len() < 4;
    }
    words.len() < 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_headings_and_bodies() {
        let md = "# Worker\n\nIntro.\n\n## Idempotency\nEvery effect goes through `ctx.once`.\n\n```\n## not a heading\n```\n## Retry\n<!-- nothing yet -->\n\nRetry\n-----\nsetext body here\n";
        let s = sections(md);
        let titles: Vec<_> = s
            .iter()
            .map(|s| (s.level, s.title.as_str(), s.line))
            .collect();
        assert_eq!(
            titles,
            [
                (1, "Worker", 1),
                (2, "Idempotency", 5),
                (2, "Retry", 11),
                (2, "Retry", 14)
            ]
        );
        assert!(s[1].body.contains("ctx.once"));
        assert!(s[1].body.contains("## not a heading"));
        assert!(is_placeholder(&s[2].body));
        assert!(!is_placeholder(
            "Transient errors are retried with backoff."
        ));
    }

    #[test]
    fn placeholders() {
        for p in [
            "",
            "TODO",
            "todo: write this",
            "TBD.",
            "N/A",
            "n/a.",
            "-",
            "Retries.",
        ] {
            assert!(is_placeholder(p), "{p:?} should be a placeholder");
        }
        for real in [
            "N/A: this worker keeps no state between items",
            "Items are deduplicated by key.",
        ] {
            assert!(!is_placeholder(real), "{real:?} is real");
        }
    }
}
