//! References that stay true: a comment that names a file of this repository (in a
//! manifest, in build.rs, in the library's or the runtime's source) names one that exists,
//! a heading it cites (`docs/reference.md#the-generator`) is one that file has, and no
//! comment cites a design document the repository does not hold (`DESIGN §n`).
//! A path relative to a generated repository says so by its own prefix (`workers/<w>/…`,
//! `integrations/<provider>/…`), which this test does not look at.

use std::path::{Path, PathBuf};

/// The folders of this repository a comment's path starts with.
const TOP: &[&str] = &[
    "src/",
    "runtime/",
    "tests/",
    "templates/",
    "docs/",
    "benches/",
    "fixtures/",
    "rules/",
];

/// The file endings a named path has.
const ENDINGS: &[&str] = &[
    ".rs", ".md", ".toml", ".yml", ".yaml", ".sh", ".py", ".j2", ".json", ".sql",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("reads the source folder")
        .map(|e| e.expect("reads an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The comment of a line: `//…` in Rust, `#…` in TOML.
fn comment(line: &str, toml: bool) -> Option<&str> {
    let l = line.trim_start();
    if toml {
        l.strip_prefix('#')
    } else {
        l.strip_prefix("//")
    }
}

/// The repository paths `text` names: a word that starts at a word boundary with one of
/// [`TOP`] and ends with one of [`ENDINGS`] (trailing punctuation dropped).
fn named_paths(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "`()[],;:'\"<>".contains(c))
        .map(|w| w.trim_end_matches(['.', '!', '?']))
        .filter(|w| TOP.iter().any(|t| w.starts_with(t)))
        .filter(|w| ENDINGS.iter().any(|e| w.ends_with(e)))
        .filter(|w| !w.contains(['{', '}', '*', '<']))
        .map(str::to_owned)
        .collect()
}

/// The Markdown sections `text` cites: `file.md#anchor`, split in two.
fn named_anchors(text: &str) -> Vec<(String, String)> {
    text.split(|c: char| c.is_whitespace() || "`()[],;:'\"<>".contains(c))
        .map(|w| w.trim_end_matches(['.', '!', '?']))
        .filter_map(|w| w.split_once(".md#"))
        .map(|(file, anchor)| (format!("{file}.md"), anchor.to_owned()))
        .collect()
}

/// The anchors GitHub gives a Markdown file's headings: lower case, punctuation but `-`
/// and `_` dropped, spaces as hyphens.
fn anchors(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| h.trim_start_matches('#').trim())
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// Every comment line of the files this test reads, with where it is.
fn comments(root: &Path) -> Vec<(String, String)> {
    let mut files = vec![
        root.join("Cargo.toml"),
        root.join("runtime/Cargo.toml"),
        root.join("build.rs"),
    ];
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("runtime/src"), &mut files);
    let mut out = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("reads the file");
        let toml = file.extension().is_some_and(|e| e == "toml");
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            if let Some(c) = comment(line, toml) {
                out.push((format!("{rel}:{}", n + 1), c.to_owned()));
            }
        }
    }
    out
}

#[test]
fn every_section_a_comment_cites_exists_and_none_cites_a_missing_design() {
    let root = root();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for (at, comment) in comments(&root) {
        if comment.contains("DESIGN") {
            wrong.push(format!(
                "{at}: cites DESIGN, which this repository does not hold (cite docs/reference.md#… or README.md#…)"
            ));
        }
        for (file, anchor) in named_anchors(&comment) {
            seen += 1;
            match std::fs::read_to_string(root.join(&file)) {
                Ok(text) if anchors(&text).contains(&anchor) => {}
                Ok(_) => wrong.push(format!("{at}: {file} has no heading `#{anchor}`")),
                Err(_) => wrong.push(format!("{at}: {file} does not exist")),
            }
        }
    }
    assert!(
        seen > 10,
        "the scan found only {seen} cited sections: is it looking?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn github_anchors_are_made_as_github_makes_them() {
    assert_eq!(
        anchors(
            "# x\n## The work queue (`scaffold-runtime`)\n### The worker's side: the remote backend\n"
        ),
        [
            "x",
            "the-work-queue-scaffold-runtime",
            "the-workers-side-the-remote-backend"
        ]
    );
    assert_eq!(
        named_anchors(" see (docs/reference.md#commands), README.md#remote-workers."),
        [
            ("docs/reference.md".to_owned(), "commands".to_owned()),
            ("README.md".to_owned(), "remote-workers".to_owned())
        ]
    );
}

#[test]
fn every_path_a_comment_names_exists() {
    let root = root();
    let mut missing = Vec::new();
    let mut seen = 0;
    for (at, comment) in comments(&root) {
        // A crate's own paths may be written from the crate (`src/…` in runtime/).
        let base = if at.starts_with("runtime/") {
            root.join("runtime")
        } else {
            root.clone()
        };
        for path in named_paths(&comment) {
            seen += 1;
            if !root.join(&path).exists() && !base.join(&path).exists() {
                missing.push(format!("{at}: {path}"));
            }
        }
    }
    assert!(
        seen > 20,
        "the scan found only {seen} named paths: is it looking?"
    );
    assert!(
        missing.is_empty(),
        "comments name files that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_named_path_is_found_where_a_comment_says_it() {
    assert_eq!(
        named_paths(" see src/check/rust_refs/fast.rs). And `docs/reference.md`."),
        ["src/check/rust_refs/fast.rs", "docs/reference.md"]
    );
    assert!(named_paths(" `workers/<w>/src/work_loop.rs` and {dir}/src/x.rs").is_empty());
}
