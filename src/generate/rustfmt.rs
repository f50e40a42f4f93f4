//! Formats generated Rust with the machine's rustfmt, so that a repository stays
//! rustfmt-clean whatever length its names have and wherever an insertion lands (rustfmt
//! also sorts the `mod` lines the generator adds). Each file goes through `rustfmt --emit
//! stdout` on stdin (argv, no shell; in parallel), so a module whose files are not in the
//! plan does not stop it; the repository's rustfmt.toml applies. Without rustfmt on PATH
//! the templates' own formatting stands.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use rayon::prelude::*;

use super::GenerateError;
use super::plan::Plan;

/// Whether rustfmt ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formatted {
    Yes,
    NoRustfmt,
    Nothing,
}

/// Formats every `.rs` file the plan renders or edits (vendored copies are left as they are).
pub fn format(plan: &mut Plan, edition: &str) -> Result<Formatted, GenerateError> {
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
    // rustfmt looks for rustfmt.toml from its working directory up.
    let dir = if plan.root().is_dir() {
        plan.root().to_path_buf()
    } else {
        std::env::temp_dir()
    };
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
