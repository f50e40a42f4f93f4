//! The repository being checked: discovery, manifests and the Cargo workspace.

pub mod codemap;
pub mod files;
pub mod gate_matrix;
pub mod manifest;
pub mod workspace;
pub mod yaml;

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use thiserror::Error;

use crate::source::SourceFile;
use codemap::{CODEMAP_PATH, Codemap};
use gate_matrix::{GATE_MATRIX_PATH, GateMatrix};
use manifest::Problem;
use workspace::Workspace;

#[derive(Debug, Error, Diagnostic)]
pub enum RepoError {
    #[error("no agent/codemap.yml in {} or any of its parents", start.display())]
    #[diagnostic(
        code(scaffold::repo_not_found),
        help("looked in:\n{}\nrun inside a repository made by `scaffold init`, or pass `-C <dir>`", looked.iter().map(|p| format!("  {}", p.join(CODEMAP_PATH).display())).collect::<Vec<_>>().join("\n"))
    )]
    NotFound {
        start: PathBuf,
        looked: Vec<PathBuf>,
    },

    #[error("cannot read {}", path.display())]
    #[diagnostic(code(scaffold::io), help("check that the file exists and is readable"))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{} problem(s) in the manifests", problems.len())]
    #[diagnostic(code(manifest_invalid), help("fix each problem listed above"))]
    Manifest {
        problems: Vec<Problem>,
        /// The manifests' texts, so problems can be shown in context.
        sources: Vec<SourceFile>,
    },
}

/// The nearest ancestor of `start` (itself included) that holds `agent/codemap.yml`.
pub fn discover(start: &Path) -> Result<PathBuf, RepoError> {
    let mut looked = Vec::new();
    for dir in start.ancestors() {
        looked.push(dir.to_path_buf());
        if dir.join(CODEMAP_PATH).is_file() {
            return Ok(dir.to_path_buf());
        }
    }
    Err(RepoError::NotFound {
        start: start.to_path_buf(),
        looked,
    })
}

/// Everything the checker knows about a repository before it looks at sources.
#[derive(Debug)]
pub struct Repo {
    pub root: PathBuf,
    /// Every file, repo-relative, sorted.
    pub files: Vec<String>,
    pub codemap: Codemap,
    pub codemap_file: SourceFile,
    pub gate_matrix: Option<(GateMatrix, SourceFile)>,
    pub workspace: Workspace,
    /// Problems found while reading Cargo manifests (unparseable ones).
    pub workspace_findings: Vec<crate::check::finding::Finding>,
    /// The metadata of every `.rs` file, taken during the walk (empty for a listed load).
    pub rust: std::collections::HashMap<String, files::FileStat>,
    /// When loading began (before the walk), in nanoseconds since the epoch: a file that
    /// changed after this may have changed again since it was read.
    pub started_ns: i128,
}

impl Repo {
    /// Reads a repo-relative file as text, if it exists and is UTF-8. Never follows a path
    /// out of the repository.
    pub fn read(&self, rel: &str) -> Option<String> {
        read_in(&self.root, rel)
    }

    /// Loads the repository, walking its whole tree (and taking its Rust sources' metadata).
    pub fn load(root: &Path) -> Result<Repo, RepoError> {
        Self::load_with(root, || files::walk(root))
    }

    /// Loads the repository with a file list given by the caller (e.g. git's index) and
    /// no source read up front: for runs that look at a few files only.
    pub fn load_listed(root: &Path, mut files: Vec<String>) -> Result<Repo, RepoError> {
        files.sort_unstable();
        files.dedup();
        Self::load_with(root, || files::Walk {
            files,
            rust: Default::default(),
        })
    }

    fn load_with(root: &Path, walk: impl FnOnce() -> files::Walk) -> Result<Repo, RepoError> {
        let started_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let read_required = |rel: &str| -> Result<SourceFile, RepoError> {
            let path = root.join(rel);
            let bytes = std::fs::read(&path).map_err(|source| RepoError::Read {
                path: path.clone(),
                source,
            })?;
            Ok(SourceFile::new(
                rel,
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        };
        let codemap_file = read_required(CODEMAP_PATH)?;
        let gm_file = if root.join(GATE_MATRIX_PATH).is_file() {
            Some(read_required(GATE_MATRIX_PATH)?)
        } else {
            None
        };
        let mut problems = Vec::new();
        let codemap = Codemap::parse(&codemap_file.text).unwrap_or_else(|p| {
            problems.extend(p);
            Codemap::default()
        });
        let gate_matrix = gm_file
            .as_ref()
            .and_then(|f| match GateMatrix::parse(&f.text) {
                Ok(m) => Some((m, f.clone())),
                Err(p) => {
                    problems.extend(p);
                    None
                }
            });
        if !problems.is_empty() {
            let mut sources = vec![codemap_file];
            sources.extend(gm_file);
            return Err(RepoError::Manifest { problems, sources });
        }
        let walk = walk();
        let files = walk.files;
        let (workspace, workspace_findings) = Workspace::load(&|rel| read_in(root, rel), &files);
        Ok(Repo {
            root: root.to_path_buf(),
            files,
            codemap,
            codemap_file,
            gate_matrix,
            workspace,
            workspace_findings,
            rust: walk.rust,
            started_ns,
        })
    }
}

/// A repo-relative file as text (lossy UTF-8), never through a symlink or `..`.
pub(crate) fn read_in(root: &Path, rel: &str) -> Option<String> {
    if rel.split('/').any(|s| s == "..") {
        return None;
    }
    let path = root.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if meta.file_type().is_symlink() {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}
