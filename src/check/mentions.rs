//! The words the work-queue rules look for in a Rust file before they parse it again
//! (`impl WorkHandler`, `struct Settings`, `Command`, …), recorded per file as a bit set so
//! a warm run can pick the few files those rules parse without reading every file's text.

use serde::{Deserialize, Serialize};

/// Every word recorded. A rule asking for a word not listed here reads the file's text.
/// The first [`REPO_WIDE`] are what a repo-wide rule looks for in any file; the rest only
/// the om registry reads (and a change under `om/` is never local anyway).
pub const TOKENS: &[&str] = &[
    "WorkHandler",
    "WorkContext",
    "WorkKindSpec",
    "KINDS",
    "Command",
    "enqueue",
    "struct Settings",
    "const ",
    " as ",
];

/// How many of [`TOKENS`], from the start, a repo-wide rule reads.
pub const REPO_WIDE: usize = 7;

/// Which of [`TOKENS`] a file's text contains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mentions(u16);

impl Mentions {
    pub fn scan(text: &str) -> Mentions {
        let bits = TOKENS
            .iter()
            .enumerate()
            .filter(|(_, t)| text.contains(*t))
            .fold(0u16, |acc, (i, _)| acc | (1 << i));
        Mentions(bits)
    }

    /// Whether the text holds any of [`TOKENS`]: a file that holds none is not one a rule
    /// reads the text of (except a few read by path, which read it again).
    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether the text holds a word a repo-wide rule reads: then a change to the file is
    /// not local to it (see `check::changes_are_local`).
    pub fn repo_wide(self) -> bool {
        self.0 & ((1 << REPO_WIDE) - 1) != 0
    }

    /// Whether the file contains `token`; `None` when `token` is not recorded.
    pub fn has(self, token: &str) -> Option<bool> {
        TOKENS
            .iter()
            .position(|t| *t == token)
            .map(|i| self.0 & (1 << i) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_each_token_and_only_those() {
        assert!(TOKENS.len() <= 16, "the set is a u16");
        let m = Mentions::scan("impl WorkHandler for X {}\nlet c = Command::new(\"ls\");");
        assert_eq!(m.has("WorkHandler"), Some(true));
        assert_eq!(m.has("Command"), Some(true));
        assert_eq!(m.has("enqueue"), Some(false));
        assert_eq!(m.has("not a token"), None);
        assert_eq!(Mentions::scan(""), Mentions::default());
        assert!(m.repo_wide());
        assert!(!Mentions::scan("pub const A: &str = \"a\"; use x as y;").repo_wide());
    }
}
