//! Formats generated Rust with the machine's rustfmt, so that a repository stays
//! rustfmt-clean whatever length its names have and wherever an insertion lands (rustfmt
//! also sorts the `mod` lines the generator adds). rustfmt runs as argv (no shell), once:
//! over a staged copy of the planned files beside the Rust files of the crates they belong
//! to (so the modules they declare resolve). Only when that cannot be done — a file that
//! may name a module path of its own (`#[path]`), one that cannot be read or staged —
//! does it fall back to file by file on stdin, in parallel. The repository's rustfmt.toml
//! applies. Without rustfmt on PATH the templates' own formatting stands.
//!
//! Every rustfmt runs inside the repository (the staged copy lives in the run's
//! transaction folder, `.scaffold/txn/fmt-<pid>`), never under `$TMPDIR`: rustup picks the
//! toolchain from the nearest `rust-toolchain.toml` above the working directory, and one
//! planted in `/tmp` by another local user would choose the binary that runs. Inside the
//! repository only the repository's own file (or its parents', as for cargo) applies, and
//! the staging goes with the transaction on every exit path, a kill included.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use rayon::prelude::*;

use super::error::GenerateError;
use super::plan::Plan;
use super::txn::Txn;

/// The largest file copied into the staging folder.
const READ_LIMIT: u64 = crate::repo::TEXT_LIMIT;

/// Whether rustfmt ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Formatted {
    Yes,
    NoRustfmt,
    Nothing,
    /// Not run: this toolchain file above the repository, owned by another user than the
    /// repository's folder, would choose the rustfmt binary.
    Untrusted(String),
}

/// A `rust-toolchain.toml` (or `rust-toolchain`) that rustup would read for a rustfmt run
/// inside `root`, found above the root, and owned by another user than the root's folder:
/// one planted in `/tmp` (world-writable) by someone else. A file in the root, or one of
/// the user's own above it (a monorepo's), is theirs to choose.
#[cfg(unix)]
fn foreign_toolchain_file(root: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(root).ok()?.uid();
    for dir in root.ancestors() {
        for name in ["rust-toolchain.toml", "rust-toolchain"] {
            let path = dir.join(name);
            if let Ok(meta) = std::fs::metadata(&path) {
                // rustup stops at the first one it finds.
                return (dir != root && meta.uid() != owner).then_some(path);
            }
        }
    }
    None
}

#[cfg(not(unix))]
fn foreign_toolchain_file(_: &Path) -> Option<std::path::PathBuf> {
    None
}

/// Formats every `.rs` file the plan renders or edits (vendored copies are left as they are).
pub fn format(plan: &mut Plan, edition: &str, txn: &Txn) -> Result<Formatted, GenerateError> {
    let jobs: Vec<(String, Vec<u8>)> = plan
        .files()
        .filter(|(p, f)| {
            p.ends_with(".rs")
                && (f.template.is_some() || f.before.is_some())
                && f.before.as_ref() != Some(&f.after)
        })
        .map(|(p, f)| (p.clone(), f.after.clone()))
        .collect();
    if jobs.is_empty() {
        return Ok(Formatted::Nothing);
    }
    if let Some(path) = crate::repo::inside::blocking_tool_config(txn.root()) {
        let shown = path.display().to_string();
        return Err(GenerateError::Refused {
            path: shown.clone(),
            reason: crate::repo::inside::Refusal::NotRegular(shown),
        });
    }
    if let Some(planted) = foreign_toolchain_file(txn.root()) {
        return Ok(Formatted::Untrusted(planted.display().to_string()));
    }
    if let Some(formatted) = batch(plan, edition, &jobs, txn) {
        for (path, file) in plan.files_mut() {
            if let Some(bytes) = formatted.get(path) {
                file.after = bytes.clone();
            }
        }
        return Ok(Formatted::Yes);
    }
    // rustfmt looks for rustfmt.toml, and rustup for rust-toolchain.toml, from its
    // working directory up: the repository's own.
    let dir = txn.root().to_path_buf();
    let results: Vec<(String, Formatting)> = jobs
        .into_par_iter()
        .map(|(path, text)| {
            let out = run(&dir, edition, &text);
            (path, out)
        })
        .collect();
    if results
        .iter()
        .any(|(_, r)| matches!(r, Err(e) if e.kind() == std::io::ErrorKind::NotFound))
    {
        return Ok(Formatted::NoRustfmt);
    }
    let formatted: std::collections::HashMap<String, Vec<u8>> = results
        .into_iter()
        .filter_map(|(p, r)| r.ok().flatten().map(|b| (p, b)))
        .collect();
    for (path, file) in plan.files_mut() {
        if let Some(bytes) = formatted.get(path) {
            file.after = bytes.clone();
        }
    }
    Ok(Formatted::Yes)
}

/// One rustfmt process over copies of every planned Rust file laid out as in the
/// repository (with its rustfmt.toml), beside the other Rust files of the crates they
/// belong to (so the modules they declare resolve). `None` when rustfmt cannot format them
/// that way, or is missing: the caller formats file by file.
fn batch(
    plan: &Plan,
    edition: &str,
    jobs: &[(String, Vec<u8>)],
    txn: &Txn,
) -> Option<std::collections::HashMap<String, Vec<u8>>> {
    // Named for this run: a killed run's rustfmt, still writing, never touches the next
    // run's copies.
    let stage = Stage(txn.scratch(&format!("fmt-{}", std::process::id())).ok()?);
    // Read as every other file: regular files inside the root only (a refusal sends the
    // files to the one-by-one path, which reads nothing from disk).
    let read = |rel: &str| crate::repo::inside::read_bytes(plan.root(), rel, READ_LIMIT);
    for config in ["rustfmt.toml", ".rustfmt.toml"] {
        if let Some(bytes) = read(config).ok()? {
            std::fs::write(stage.0.as_path().join(config), bytes).ok()?;
        }
    }
    let mut crate_files = Vec::new();
    for dir in crate_dirs(plan, jobs) {
        super::render::rust_files(plan.root(), &dir, &mut crate_files);
    }
    for rel in crate_files {
        let dest = stage.0.as_path().join(&rel);
        let bytes = read(&rel).ok()??;
        if names_a_module_path(&bytes) {
            return None;
        }
        std::fs::create_dir_all(dest.parent()?).ok()?;
        std::fs::write(dest, bytes).ok()?;
    }
    for (path, file) in plan.files().filter(|(p, _)| p.ends_with(".rs")) {
        let dest = stage.0.as_path().join(path);
        if names_a_module_path(&file.after) {
            return None;
        }
        std::fs::create_dir_all(dest.parent()?).ok()?;
        std::fs::write(&dest, &file.after).ok()?;
    }
    let status = Command::new("rustfmt")
        .args(["--edition", edition, "--quiet"])
        .args(jobs.iter().map(|(p, _)| p))
        .current_dir(stage.0.as_path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    jobs.iter()
        .map(|(p, _)| {
            std::fs::read(stage.0.as_path().join(p))
                .ok()
                .map(|b| (p.clone(), b))
        })
        .collect()
}

/// Whether Rust text may declare a module at a path of its own (`#[path = "…"]`, also
/// inside `cfg_attr`): rustfmt formats such a module in place, wherever the path points
/// (outside the staging folder, outside the repository). Such files go to the one-by-one
/// path, where rustfmt reads stdin and follows no module. Looks inside every attribute
/// (`#[…]`, `#![…]`, to its matching bracket) for the word `path` followed by `=`; a
/// `let path = …` outside attributes is not one (it sent every crate with a settings test
/// down the one-by-one path), while a string or comment that looks like one still counts:
/// over-matching costs only time.
fn names_a_module_path(text: &[u8]) -> bool {
    let mut i = 0;
    while let Some(at) = text[i..].iter().position(|b| *b == b'#') {
        let mut j = i + at + 1;
        if text.get(j) == Some(&b'!') {
            j += 1;
        }
        while text.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if text.get(j) != Some(&b'[') {
            i = j;
            continue;
        }
        let start = j + 1;
        let mut depth = 1usize;
        let mut end = start;
        while end < text.len() && depth > 0 {
            match text[end] {
                b'[' => depth += 1,
                b']' => depth -= 1,
                _ => {}
            }
            end += 1;
        }
        if assigns_path(&text[start..end]) {
            return true;
        }
        i = end;
    }
    false
}

/// Whether `attr` holds the word `path` followed (after whitespace) by `=`.
fn assigns_path(attr: &[u8]) -> bool {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    attr.windows(4).enumerate().any(|(i, w)| {
        w == b"path"
            && (i == 0 || !word(&attr[i - 1]))
            && attr[i + 4..]
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|b| *b == b'=')
            && !attr.get(i + 4).is_some_and(word)
    })
}

/// The staging folder, removed when the batch is done with it.
struct Stage(std::path::PathBuf);

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repo-relative directories of the crates (nearest `Cargo.toml` on disk) the jobs'
/// files belong to.
fn crate_dirs(plan: &Plan, jobs: &[(String, Vec<u8>)]) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (path, _) in jobs {
        let mut dir = path.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            dir = parent;
            if plan.root().join(dir).join("Cargo.toml").is_file() {
                out.insert(dir.to_owned());
                break;
            }
        }
    }
    out
}

/// What rustfmt made of one file.
type Formatting = Result<Option<Vec<u8>>, std::io::Error>;

/// rustfmt's output for `text`; `None` when rustfmt fails (the file is left as rendered and
/// parsing it back reports what is wrong).
fn run(dir: &Path, edition: &str, text: &[u8]) -> Formatting {
    let mut child = Command::new("rustfmt")
        .args(["--edition", edition, "--emit", "stdout", "--quiet"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no stdin"))?;
    let input = text.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output()?;
    let _ = writer.join();
    if out.status.success() && !out.stdout.is_empty() {
        Ok(Some(out.stdout))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rustfmt's batch formats a `#[path]` module in place wherever it points, so a file
    /// that may name one never goes to the batch (over-matching is fine: it costs speed);
    /// a `path` outside attributes is not one, or every crate with a settings test went
    /// file by file, one rustfmt process each.
    #[test]
    fn files_that_may_name_a_module_path_are_kept_from_the_batch() {
        for text in [
            "#[path = \"/etc/x.rs\"]\nmod x;\n",
            "#[cfg_attr(unix, path=\"../../y.rs\")] mod y;\n",
            "#[path\n  =\n \"z.rs\"] mod z;\n",
            "# [ path = \"w.rs\" ] mod w;\n",
            "#![cfg_attr(all(unix, feature = \"x\"), path = \"v.rs\")]\n",
            "#[doc = \"[x]\"] #[path = \"u.rs\"] mod u;\n",
        ] {
            assert!(names_a_module_path(text.as_bytes()), "{text:?}");
        }
        for text in [
            "mod x;\nfn f(path: &str) {}\n",
            "use std::path::Path;\n",
            "fn f(path: &str) { let path = 1; let state_path = 2; }\n",
            "#[derive(Debug)] struct S { path: String }\nfn g() { let p = S { path: String::new() }; }\n",
            "#[test] fn t() { let path = dir.join(\"x\"); }\n",
            "#[serde(rename = \"dest_path\")] struct D;\n",
            "",
        ] {
            assert!(!names_a_module_path(text.as_bytes()), "{text:?}");
        }
    }
}
