//! Stamps the runtime this binary embeds: the version and content hash of `runtime/`
//! (`Cargo.toml`, `src/**`, `migrations/**`), exposed as
//! `scaffold::layout::runtime::runtime_stamp()` and compared by the `runtime-drift` rule
//! with a repository's `platform/runtime/.scaffold-stamp`.

// Cargo reads a build script's stdout.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "src/layout/tree_hash.rs"]
// The library's own module, public there.
#[allow(dead_code, unreachable_pub)]
mod tree_hash;

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    println!("cargo:rerun-if-changed=runtime/Cargo.toml");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let version = package_version(&manifest).unwrap_or_default();
    let mut files = Vec::new();
    if !manifest.is_empty() {
        files.push(("Cargo.toml".to_owned(), vendored(&manifest).into_bytes()));
        for dir in ["src", "migrations"] {
            walk(&root, dir, Dotfiles::Skip, &mut files);
        }
    }
    let hash = if files.is_empty() {
        String::new()
    } else {
        tree_hash::tree_hash(&mut files)
    };
    println!("cargo:rustc-env=SCAFFOLD_RUNTIME_VERSION={version}");
    println!("cargo:rustc-env=SCAFFOLD_RUNTIME_HASH={hash}");
    embed(&root, &files);
}

/// The runtime's manifest as a repository vendors it: without `[dev-dependencies]` (its
/// tests are not vendored, and a generated workspace would otherwise build their HTTP client,
/// fuzzer and certificate tools for every `cargo test --workspace`).
fn vendored(manifest: &str) -> String {
    match manifest.parse::<toml_edit::DocumentMut>() {
        Ok(mut doc) => {
            doc.remove("dev-dependencies");
            doc.to_string()
        }
        Err(_) => manifest.to_owned(),
    }
}

/// Writes `$OUT_DIR/embedded.rs`: every file under `templates/` (the generator's
/// templates) and the runtime's hashed files (the copy `scaffold init` vendors into
/// `platform/runtime/`), each as `(relative path, include_bytes!(absolute path))`, sorted.
fn embed(runtime_root: &Path, runtime_files: &[(String, Vec<u8>)]) {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let templates_root = manifest_dir.join("templates");
    let mut templates = Vec::new();
    walk(&templates_root, "", Dotfiles::Templates, &mut templates);
    templates.sort();
    let mut runtime: Vec<&String> = runtime_files.iter().map(|(p, _)| p).collect();
    runtime.sort();
    let mut out = String::from("/// Every template, by its path under `templates/`.\n");
    out.push_str("pub(crate) static TEMPLATES: &[(&str, &[u8])] = &[\n");
    for (rel, _) in &templates {
        let abs = templates_root.join(rel);
        out.push_str(&format!(
            "    ({rel:?}, include_bytes!({:?})),\n",
            abs.display().to_string()
        ));
    }
    out.push_str("];\n/// The runtime's hashed files, by their path under `runtime/`.\n");
    out.push_str("pub(crate) static RUNTIME_FILES: &[(&str, &[u8])] = &[\n");
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    for rel in runtime {
        let mut abs = runtime_root.join(rel);
        if rel == "Cargo.toml" {
            // The vendored manifest (see `vendored`), not the file under runtime/.
            abs = out_dir.join("runtime-Cargo.toml");
            let bytes = runtime_files
                .iter()
                .find(|(p, _)| p == rel)
                .map(|(_, b)| b.as_slice())
                .unwrap_or_default();
            if let Err(e) = std::fs::write(&abs, bytes) {
                panic!("cannot write {}: {e}", abs.display());
            }
        }
        out.push_str(&format!(
            "    ({rel:?}, include_bytes!({:?})),\n",
            abs.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = out_dir.join("embedded.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}

/// `version = "…"` of the `[package]` table.
fn package_version(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some(rest) = t.strip_prefix("version") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(v) = rest.strip_prefix('=') {
            return Some(v.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// Which names starting with `.` a walk takes.
#[derive(Clone, Copy)]
enum Dotfiles {
    /// None: an editor's swap file or a stray `.DS_Store` is not the runtime's source.
    Skip,
    /// Templates only: a dotted name ending `.j2` (`.gitignore.j2`) and the folders of a
    /// generated repository's own (`.cargo`, `.github`); not a swap file beside them.
    Templates,
}

impl Dotfiles {
    fn takes(self, name: &str, dir: bool) -> bool {
        if !name.starts_with('.') {
            return true;
        }
        match self {
            Dotfiles::Skip => false,
            Dotfiles::Templates if dir => matches!(name, ".cargo" | ".github"),
            Dotfiles::Templates => name.ends_with(".j2"),
        }
    }
}

/// Every file under `root/rel` the walk takes, by its path under `root`; each folder and
/// each file read gets its own `rerun-if-changed` (a folder's alone is not enough: copies
/// that keep old times, like `cp -p`, tar or a restored cache, change no folder's time).
fn walk(root: &Path, rel: &str, dotfiles: Dotfiles, out: &mut Vec<(String, Vec<u8>)>) {
    let dir = root.join(rel);
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        match e.file_type() {
            Ok(t) if t.is_dir() && dotfiles.takes(&name, true) => {
                walk(root, &child, dotfiles, out);
            }
            Ok(t) if t.is_file() && dotfiles.takes(&name, false) => {
                println!("cargo:rerun-if-changed={}", e.path().display());
                if let Ok(bytes) = std::fs::read(e.path()) {
                    out.push((child, bytes));
                }
            }
            _ => {}
        }
    }
}
