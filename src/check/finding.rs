//! What a rule reports.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem found in the checked repository.
///
/// Rules fill everything but `severity`, which the sink sets from the catalogue and the
/// codemap's `policy:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    /// Repo-relative, `/`-separated.
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// Byte range in the file the label points at (empty: a point).
    pub span: (usize, usize),
    pub message: String,
    /// Short text shown under the span.
    pub label: String,
    pub help: String,
    /// The finding is about the file's path, not its content: no snippet of it is shown
    /// (it may be any file — a binary, a `.env` no one ignored).
    pub path_only: bool,
}

impl Finding {
    /// A finding at a position; severity is filled by the sink.
    pub fn new(rule: &'static str, path: impl Into<String>, at: Location) -> Self {
        Finding {
            rule,
            severity: Severity::Error,
            path: path.into(),
            line: at.line,
            column: at.column,
            span: (at.offset, at.len),
            message: String::new(),
            label: String::new(),
            help: String::new(),
            path_only: false,
        }
    }

    pub fn message(mut self, m: impl Into<String>) -> Self {
        self.message = m.into();
        self
    }

    pub fn label(mut self, l: impl Into<String>) -> Self {
        self.label = l.into();
        self
    }

    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.help = h.into();
        self
    }

    /// Shows no snippet of the file: the finding is about its path.
    pub fn path_only(mut self) -> Self {
        self.path_only = true;
        self
    }

    pub(crate) fn sort_key(&self) -> (&str, usize, usize, &str, &str) {
        (&self.path, self.line, self.column, self.rule, &self.message)
    }
}

/// Where in a file: 1-based line/column plus the byte span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Location {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
    pub len: usize,
}

impl Location {
    /// The start of a file.
    pub const START: Location = Location {
        line: 1,
        column: 1,
        offset: 0,
        len: 0,
    };

    pub fn in_file(file: &crate::source::SourceFile, offset: usize, len: usize) -> Self {
        let (line, column) = file.line_col(offset);
        Location {
            line,
            column,
            offset,
            len,
        }
    }
}

impl From<&crate::layout::terraform::ParseError> for Location {
    /// Where hcl-edit stopped: one byte at the break.
    fn from(e: &crate::layout::terraform::ParseError) -> Self {
        Location {
            line: e.line,
            column: e.column,
            offset: e.offset,
            len: 1,
        }
    }
}

impl From<crate::repo::yaml::Pos> for Location {
    fn from(p: crate::repo::yaml::Pos) -> Self {
        Location {
            line: p.line,
            column: p.column,
            offset: p.offset,
            len: p.len,
        }
    }
}
