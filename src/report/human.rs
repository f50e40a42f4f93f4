use std::io::{self, Write};
use std::path::Path;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
};

use super::Style;
use crate::check::finding::{Finding, Severity};
use crate::check::sink::Outcome;

/// A finding as a miette diagnostic: rule id as the code, the labelled span, the help.
#[derive(Debug)]
struct FindingDiagnostic<'a> {
    finding: &'a Finding,
    source: Option<NamedSource<String>>,
}

impl std::fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.finding.message)
    }
}

impl std::error::Error for FindingDiagnostic<'_> {}

impl Diagnostic for FindingDiagnostic<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.finding.rule))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        (!self.finding.help.is_empty())
            .then(|| Box::new(&self.finding.help) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source.as_ref()?;
        let f = self.finding;
        let label = (!f.label.is_empty()).then(|| f.label.clone());
        Some(Box::new(std::iter::once(LabeledSpan::new(
            label, f.span.0, f.span.1,
        ))))
    }
}

/// `text` with every character a terminal would act on (ESC, BEL, backspace, C1 controls,
/// bidirectional overrides and isolates) replaced by a character of the same UTF-8 length
/// (`?`, `¿`, U+FFFD), so a snippet of a file cannot drive the reader's terminal or show
/// code in another order, and spans keep their byte offsets. Tabs and line endings stay.
fn inert(text: String) -> String {
    let acts = |c: char| super::inert::is_unsafe(c) && !matches!(c, '\t' | '\n' | '\r');
    if !text.chars().any(acts) {
        return text;
    }
    // Each replaced by a character of the same length in UTF-8.
    text.chars()
        .map(|c| match c {
            c if !acts(c) => c,
            c if c.len_utf8() == 1 => '?',
            c if c.len_utf8() == 2 => '¿',
            _ => '\u{FFFD}',
        })
        .collect()
}

/// Whether any text of `f` holds a character [`super::escape_controls`] escapes.
fn needs_escaping(f: &Finding) -> bool {
    let unsafe_char = super::inert::is_unsafe;
    [&f.path, &f.message, &f.label]
        .iter()
        .any(|t| t.chars().any(unsafe_char))
        || f.help.chars().any(|c| unsafe_char(c) && c != '\n')
}

/// Lines longer than this (in bytes) near a finding are not handed to miette.
const LONG_LINE: usize = 1_000;

/// How much of a long line is shown on each side of the finding's span, in characters.
const CLIP: usize = 60;

/// When a line within one of the finding's (the context miette shows) is longer than
/// [`LONG_LINE`], an excerpt of the finding's line around its span: `…before[span]after…`,
/// control characters escaped.
fn long_line_excerpt(text: &str, span: (usize, usize)) -> Option<String> {
    let start = text[..span.0].rfind('\n').map_or(0, |i| i + 1);
    let end = text[span.0..].find('\n').map_or(text.len(), |i| span.0 + i);
    let prev_start = text[..start.saturating_sub(1)]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let next_end = text
        .get(end + 1..)
        .and_then(|rest| rest.find('\n'))
        .map_or(text.len(), |i| end + 1 + i);
    let long = |a: usize, b: usize| b.saturating_sub(a) > LONG_LINE;
    if !(long(start, end) || long(prev_start, start) || long(end, next_end)) {
        return None;
    }
    let line = &text[start..end];
    let at = span.0 - start;
    let to = (at + span.1).min(line.len());
    let before: String = line[..at]
        .chars()
        .rev()
        .take(CLIP)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let inside: String = line[at..to].chars().take(CLIP).collect();
    let after: String = line[to..].chars().take(CLIP).collect();
    let clean = |s: &str| s.escape_debug().to_string();
    Some(format!(
        "{}{}[{}]{}{}",
        if before.len() < at { "…" } else { "" },
        clean(&before),
        clean(&inside),
        clean(&after),
        if to + after.len() < line.len() {
            "…"
        } else {
            ""
        }
    ))
}

/// The largest file whose text a finding is shown in.
const SHOWN_LIMIT: u64 = 64 << 20;

pub(super) fn outcome(
    out: &mut dyn Write,
    style: Style,
    root: &Path,
    o: &Outcome,
) -> io::Result<()> {
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_links(false)
        .with_context_lines(1);
    let mut cache: Option<(String, Option<String>)> = None;
    for found in super::sorted(o) {
        // What is printed, with control characters from file names and manifests escaped
        // (the file is still read by its real path). A copy only when one needs it.
        let cleaned;
        let f = if needs_escaping(found) {
            cleaned = Finding {
                path: super::escape_controls(&found.path, false).into_owned(),
                message: super::escape_controls(&found.message, false).into_owned(),
                label: super::escape_controls(&found.label, false).into_owned(),
                help: super::escape_controls(&found.help, true).into_owned(),
                ..found.clone()
            };
            &cleaned
        } else {
            found
        };
        // A path-only finding shows no text: its file is not read for it.
        if !f.path_only && cache.as_ref().is_none_or(|(p, _)| *p != found.path) {
            // Only a real file inside the root is shown: a finding on a path that is (or
            // is reached through) a symlink never prints what the link points at.
            let text = match o.texts.get(&found.path) {
                Some(text) => Some(text.to_string()),
                None => crate::repo::inside::read_text(root, &found.path, SHOWN_LIMIT)
                    .unwrap_or_default(),
            };
            cache = Some((found.path.clone(), text));
        }
        let text = cache
            .as_ref()
            .filter(|(p, _)| !f.path_only && *p == found.path)
            .and_then(|(_, t)| t.clone());
        let text = text.filter(|t| {
            f.span.0 + f.span.1 <= t.len()
                && t.is_char_boundary(f.span.0)
                && t.is_char_boundary(f.span.0 + f.span.1)
        });
        // miette lays out a snippet's lines whole (and panics on very long ones): a finding
        // near a line longer than a screen gets a clipped excerpt of its own instead.
        let excerpt = text.as_deref().and_then(|t| long_line_excerpt(t, f.span));
        let source = text
            .filter(|_| excerpt.is_none())
            .map(|t| NamedSource::new(f.path.clone(), inert(t)));
        let has_source = source.is_some();
        let diag = FindingDiagnostic { finding: f, source };
        let mut rendered = String::new();
        if handler.render_report(&mut rendered, &diag).is_err() {
            rendered = format!("{}: {} [{}]\n", f.severity, f.message, f.rule);
        }
        write!(out, "{rendered}")?;
        if let Some(excerpt) = &excerpt {
            writeln!(
                out,
                "  at {}:{}:{} (a long line, clipped): {excerpt}",
                f.path, f.line, f.column
            )?;
        } else if f.path_only {
            writeln!(out, "  at {}", f.path)?;
        } else if !has_source {
            writeln!(
                out,
                "  at {}:{}:{} (not in the work tree)",
                f.path, f.line, f.column
            )?;
        }
        writeln!(out)?;
    }
    let line = super::summary_line(o);
    let status = if o.errors() > 0 {
        "error"
    } else if o.warnings() > 0 {
        "warning"
    } else {
        "ok"
    };
    writeln!(out, "{status}: {line}")
}
