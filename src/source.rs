//! A text file of the checked repository, addressed by its repo-relative path.

use std::sync::{Arc, OnceLock};

/// A file's text plus an index of where its lines start.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Repo-relative, `/`-separated.
    pub path: String,
    /// Shared, not copied: an `Arc<String>` takes a read buffer as it is (`Arc<str>`
    /// would copy every source once more).
    pub text: Arc<String>,
    /// Computed on first use: most files of a warm run are never asked for a line.
    line_starts: OnceLock<Arc<[usize]>>,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        SourceFile {
            path: path.into(),
            text: Arc::new(text.into()),
            line_starts: OnceLock::new(),
        }
    }

    /// A file whose text is already shared (read once, held by whoever read it).
    pub fn shared(path: impl Into<String>, text: Arc<String>) -> Self {
        SourceFile {
            path: path.into(),
            text,
            line_starts: OnceLock::new(),
        }
    }

    fn starts(&self) -> &[usize] {
        self.line_starts
            .get_or_init(|| line_starts(&self.text).into())
    }

    /// 1-based line and (character) column of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line_idx = match self.starts().binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.starts()[line_idx];
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        (line_idx + 1, column)
    }

    /// Byte offset of a 1-based line and character column.
    pub fn offset_of(&self, line: usize, column: usize) -> usize {
        let Some(&start) = self.starts().get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = &self.text[start..];
        let col: usize = rest
            .chars()
            .take_while(|c| *c != '\n')
            .take(column.saturating_sub(1))
            .map(char::len_utf8)
            .sum();
        start + col
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line(&self, line: usize) -> &str {
        let Some(&start) = self.starts().get(line.saturating_sub(1)) else {
            return "";
        };
        let end = self.starts().get(line).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    pub fn line_count(&self) -> usize {
        self.starts().len()
    }
}

fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        text.bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_round_trips() {
        let f = SourceFile::new("a.rs", "ab\ncé d\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        let d = f.text.find('d').expect("d is in the text");
        assert_eq!(f.line_col(d), (2, 4));
        assert_eq!(f.offset_of(2, 4), d);
        assert_eq!(f.line(2), "cé d");
        assert_eq!(f.line(9), "");
    }
}
