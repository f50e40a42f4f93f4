//! Stamps the runtime this binary embeds: the version and content hash of `runtime/`
//! (`Cargo.toml`, `src/**`, `migrations/**`), exposed as
//! `scaffold::layout::runtime::runtime_stamp()` and compared by the `runtime-drift` rule
//! with a repository's `platform/runtime/.scaffold-stamp`.

#[path = "src/layout/tree_hash.rs"]
#[allow(dead_code)]
mod tree_hash;

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    for p in ["Cargo.toml", "src", "migrations"] {
        println!("cargo:rerun-if-changed=runtime/{p}");
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let version = package_version(&manifest).unwrap_or_default();
    let mut files = Vec::new();
    if !manifest.is_empty() {
        files.push(("Cargo.toml".to_owned(), vendored(&manifest).into_bytes()));
        for dir in ["src", "migrations"] {
            walk(&root, dir, &mut files);
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
    println!("cargo:rerun-if-changed=templates");
    let mut templates = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&templates_root) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&templates_root, &name, &mut templates),
                Ok(t) if t.is_file() => {
                    if let Ok(bytes) = std::fs::read(e.path()) {
                        templates.push((name, bytes));
                    }
                }
                _ => {}
            }
        }
    }
    templates.sort();
    let mut runtime: Vec<&String> = runtime_files.iter().map(|(p, _)| p).collect();
    runtime.sort();
    let mut out = String::from("/// Every template, by its path under `templates/`.\n");
    out.push_str("pub static TEMPLATES: &[(&str, &[u8])] = &[\n");
    for (rel, _) in &templates {
        let abs = templates_root.join(rel);
        out.push_str(&format!(
            "    ({rel:?}, include_bytes!({:?})),\n",
            abs.display().to_string()
        ));
    }
    out.push_str("];\n/// The runtime's hashed files, by their path under `runtime/`.\n");
    out.push_str("pub static RUNTIME_FILES: &[(&str, &[u8])] = &[\n");
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

fn walk(root: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(root, &child, out),
            Ok(t) if t.is_file() => {
                if let Ok(bytes) = std::fs::read(e.path()) {
                    out.push((child, bytes));
                }
            }
            _ => {}
        }
    }
}
