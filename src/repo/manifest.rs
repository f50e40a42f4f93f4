//! Shared machinery for validating a manifest's spanned YAML tree while collecting every
//! problem (cargo-deny's raw config → validated config, with all errors reported).

use globset::{Glob, GlobBuilder, GlobMatcher};

use super::yaml::{Node, Pos, Value};

/// One thing wrong with a manifest. Each becomes a `manifest-invalid` diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Repo-relative path of the manifest.
    pub file: String,
    pub pos: Pos,
    pub message: String,
    pub label: String,
    pub help: String,
}

/// Parses `text` as the YAML manifest `file` and validates it with `validate`, returning
/// the validated value or every problem found (a syntax error is the only one then).
pub fn parse_with<T>(
    file: &str,
    text: &str,
    validate: impl FnOnce(&Node, &mut Problems) -> T,
) -> Result<T, Vec<Problem>> {
    let mut p = Problems::new(file);
    let root = match super::yaml::parse(text) {
        Ok(n) => n,
        Err(e) => {
            p.invalid_yaml(&e, "fix the YAML syntax");
            return Err(p.list);
        }
    };
    let value = validate(&root, &mut p);
    if p.list.is_empty() {
        Ok(value)
    } else {
        Err(p.list)
    }
}

/// Collects problems for one manifest file.
#[derive(Debug)]
pub struct Problems {
    file: String,
    pub list: Vec<Problem>,
}

impl Problems {
    pub fn new(file: &str) -> Self {
        Problems {
            file: file.to_owned(),
            list: Vec::new(),
        }
    }

    pub fn push(
        &mut self,
        pos: Pos,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.list.push(Problem {
            file: self.file.clone(),
            pos,
            message: message.into(),
            label: label.into(),
            help: help.into(),
        });
    }

    /// A manifest that is not YAML: where the parser stopped, and `help`.
    pub fn invalid_yaml(&mut self, e: &super::yaml::SyntaxError, help: &str) {
        self.push(e.pos, format!("invalid YAML: {}", e.message), "here", help);
    }

    /// The entries of a mapping, reporting an error when `node` is something else.
    pub fn map<'n>(&mut self, node: &'n Node, what: &str) -> &'n [(Node, Node)] {
        match &node.value {
            Value::Map(entries) => entries,
            Value::Null => &[],
            other => {
                self.push(
                    node.pos,
                    format!("{what} must be a mapping, found {}", other.type_name()),
                    "expected a mapping",
                    format!("write {what} as `key: value` pairs"),
                );
                &[]
            }
        }
    }

    /// Checks the keys of a mapping against `allowed`, reporting unknown and duplicate keys,
    /// and returns the recognised (key, value) pairs.
    pub fn fields<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        allowed: &[&str],
    ) -> Vec<(&'n str, &'n Node, &'n Node)> {
        let mut out: Vec<(&str, &Node, &Node)> = Vec::new();
        for (k, v) in self.map(node, what) {
            let Some(key) = k.as_str() else {
                self.push(
                    k.pos,
                    format!("keys of {what} must be strings"),
                    "not a string key",
                    "",
                );
                continue;
            };
            if !allowed.contains(&key) {
                let suggestion = closest(key, allowed);
                self.push(
                    k.pos,
                    format!("unknown key `{key}` in {what}"),
                    "unknown key",
                    match suggestion {
                        Some(s) => {
                            format!("did you mean `{s}`? allowed keys: {}", allowed.join(", "))
                        }
                        None => format!("allowed keys: {}", allowed.join(", ")),
                    },
                );
                continue;
            }
            if let Some((_, first, _)) = out.iter().find(|(name, _, _)| *name == key) {
                self.push(
                    k.pos,
                    format!("duplicate key `{key}` in {what}"),
                    "duplicate key",
                    format!("`{key}` is first set on line {}; keep one", first.pos.line),
                );
                continue;
            }
            out.push((key, k, v));
        }
        out
    }

    pub fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::Str(s) => Some(s.clone()),
            other => {
                self.push(
                    node.pos,
                    format!("{what} must be a string, found {}", other.type_name()),
                    "expected a string",
                    "",
                );
                None
            }
        }
    }

    /// A list of strings; a single string is not accepted (the manifests always use lists).
    pub fn strings(&mut self, node: &Node, what: &str) -> Vec<(String, Pos)> {
        match &node.value {
            Value::Seq(items) => items
                .iter()
                .filter_map(|i| {
                    self.string(i, &format!("each entry of {what}"))
                        .map(|s| (s, i.pos))
                })
                .collect(),
            Value::Null => Vec::new(),
            other => {
                self.push(
                    node.pos,
                    format!("{what} must be a list, found {}", other.type_name()),
                    "expected a list",
                    format!("write {what} as a list, e.g. [\"a\", \"b\"]"),
                );
                Vec::new()
            }
        }
    }

    /// Compiles path globs, reporting each invalid one.
    pub fn globs(&mut self, node: &Node, what: &str) -> Vec<PathGlob> {
        self.strings(node, what)
            .into_iter()
            .filter_map(|(pattern, pos)| match PathGlob::new(&pattern) {
                Ok(g) => Some(PathGlob { pos, ..g }),
                Err(e) => {
                    self.push(
                        pos,
                        format!("invalid glob `{pattern}` in {what}: {e}"),
                        "invalid glob",
                        "globs use `*` within a path segment and `**` across segments, e.g. \"workers/**\"",
                    );
                    None
                }
            })
            .collect()
    }

    /// `version: 1`, the only version this scaffold reads.
    pub fn version(&mut self, node: Option<&Node>, whole: &Node) {
        match node {
            None => self.push(
                whole.pos,
                "missing `version`",
                "no version",
                "add `version: 1` at the top of the file",
            ),
            Some(v) => match v.value {
                Value::Int(1) => {}
                Value::Int(n) => self.push(
                    v.pos,
                    format!("unsupported version {n}"),
                    "unsupported version",
                    "this scaffold reads version 1; upgrade scaffold or write `version: 1`",
                ),
                ref other => self.push(
                    v.pos,
                    format!("`version` must be an integer, found {}", other.type_name()),
                    "expected an integer",
                    "write `version: 1`",
                ),
            },
        }
    }
}

/// A compiled path glob (`*` stays within a segment, `**` crosses them).
#[derive(Debug, Clone)]
pub struct PathGlob {
    pub pattern: String,
    pub pos: Pos,
    matcher: GlobMatcher,
    /// For `dir/**`: also matches `dir` itself.
    dir_prefix: Option<String>,
}

/// Why a glob was refused.
#[derive(Debug, thiserror::Error)]
pub enum GlobError {
    #[error("{0}")]
    Invalid(#[from] globset::Error),
    /// globset compiles a glob to a regex, and panics when the regex it made does not
    /// compile (nesting past the regex parser's limit, a program past its size limit):
    /// such globs are refused before globset sees them.
    #[error("it nests `{{…}}` deeper than {MAX_GLOB_BRACES} levels")]
    TooDeep,
    #[error("it is longer than {MAX_GLOB_LEN} bytes")]
    TooLong,
}

/// The deepest `{a,{b,c}}` nesting a glob may have.
pub const MAX_GLOB_BRACES: usize = 16;
/// The longest glob.
pub const MAX_GLOB_LEN: usize = 1024;

impl PathGlob {
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        if pattern.is_empty() {
            return Err(Glob::new("[")
                .expect_err("`[` is never a valid glob")
                .into());
        }
        let mut depth = 0usize;
        for b in pattern.bytes() {
            match b {
                b'{' => {
                    depth += 1;
                    if depth > MAX_GLOB_BRACES {
                        return Err(GlobError::TooDeep);
                    }
                }
                b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if pattern.len() > MAX_GLOB_LEN {
            return Err(GlobError::TooLong);
        }
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()?
            .compile_matcher();
        let dir_prefix = pattern.strip_suffix("/**").map(str::to_owned);
        Ok(PathGlob {
            pattern: pattern.to_owned(),
            pos: Pos::default(),
            matcher,
            dir_prefix,
        })
    }

    /// Whether a repo-relative `/` path matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path) || self.dir_prefix.as_deref() == Some(path)
    }
}

/// The allowed word nearest to `word`, if any is close.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_gitignore_paths() {
        let g = PathGlob::new("workers/**").expect("valid");
        assert!(g.is_match("workers/a/src/lib.rs"));
        assert!(g.is_match("workers"));
        assert!(!g.is_match("workersx/a"));
        let one = PathGlob::new("services/*/domain/**").expect("valid");
        assert!(one.is_match("services/billing/domain/x.rs"));
        assert!(!one.is_match("services/a/b/domain/x.rs"));
        assert!(PathGlob::new("a/[").is_err());
        // globset panicked on these (exit 101); they are refused instead.
        let nested = format!("infra/{}b{}", "{a,".repeat(256), "}".repeat(256));
        assert!(matches!(PathGlob::new(&nested), Err(GlobError::TooDeep)));
        assert!(matches!(
            PathGlob::new(&"{a,b}".repeat(400)),
            Err(GlobError::TooLong)
        ));
        let ok = format!("infra/{}b{}", "{a,".repeat(16), "}".repeat(16));
        assert!(PathGlob::new(&ok).is_ok());
        assert!(PathGlob::new("").is_err());
    }

    #[test]
    fn suggests_near_keys() {
        assert_eq!(
            closest("may_imports", &["may_import", "paths"]),
            Some("may_import")
        );
        assert_eq!(closest("zzz", &["may_import", "paths"]), None);
    }
}
