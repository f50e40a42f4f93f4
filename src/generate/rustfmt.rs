//! Formats generated Rust with the machine's rustfmt, so that a repository is
//! rustfmt-clean whatever length its names have. rustfmt runs once, as argv (no shell), on
//! copies of the files in a temporary directory laid out like the repository (with the
//! repository's rustfmt.toml). Without rustfmt on PATH the templates' own formatting
//! stands.

use std::path::Path;
use std::process::{Command, Stdio};

use super::GenerateError;
use super::plan::Plan;

/// Whether rustfmt ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formatted {
    Yes,
    NoRustfmt,
    Nothing,
}

/// Formats every `.rs` file the plan writes that differs from what is on disk.
pub fn format(plan: &mut Plan, edition: &str) -> Result<Formatted, GenerateError> {
    let rust: Vec<String> = plan
        .files()
        .filter(|(p, f)| p.ends_with(".rs") && f.before.as_ref() != Some(&f.after))
        .map(|(p, _)| p.clone())
        .collect();
    if rust.is_empty() {
        return Ok(Formatted::Nothing);
    }
    let stage = tempfile::Builder::new()
        .prefix("scaffold-fmt-")
        .tempdir()
        .map_err(|e| GenerateError::io("create", std::env::temp_dir(), e))?;
    for config in ["rustfmt.toml", ".rustfmt.toml"] {
        let from = plan.root().join(config);
        if let Some(text) = plan.text(config).ok().flatten() {
            let _ = std::fs::write(stage.path().join(config), text);
        } else if from.is_file() {
            let _ = std::fs::copy(&from, stage.path().join(config));
        }
    }
    for (path, file) in plan.files() {
        if !rust.contains(path) {
            continue;
        }
        let dest = stage.path().join(path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| GenerateError::io("create", parent, e))?;
        }
        std::fs::write(&dest, &file.after).map_err(|e| GenerateError::io("write", &dest, e))?;
    }
    let status = Command::new("rustfmt")
        .arg("--edition")
        .arg(edition)
        .args(&rust)
        .current_dir(stage.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Formatted::NoRustfmt),
        // A file rustfmt cannot parse is left as rendered; parsing it back reports it.
        Err(_) | Ok(_) => {}
    }
    read_back(plan, stage.path(), &rust);
    Ok(Formatted::Yes)
}

fn read_back(plan: &mut Plan, stage: &Path, rust: &[String]) {
    for (path, file) in plan.files_mut() {
        if !rust.contains(path) {
            continue;
        }
        if let Ok(bytes) = std::fs::read(stage.join(path)) {
            file.after = bytes;
        }
    }
}
