//! Parses back every file of a plan before anything is written: Rust with syn, TOML with
//! toml_edit, YAML with serde-saphyr, Terraform with hcl-edit, Dockerfiles by their
//! instructions, JSON with serde_json. A file that does not parse stops the command and
//! names the file, the place and the template that rendered it.

use miette::{NamedSource, SourceSpan};
use rayon::prelude::*;

use super::error::GenerateError;
use super::error::InvalidOutput;
use super::plan::{Plan, PlannedFile};
use crate::repo::yaml;

/// Checks every file the plan writes; the first failure (by path) is returned.
pub fn validate(plan: &Plan) -> Result<(), GenerateError> {
    let files: Vec<(&String, &PlannedFile)> = plan.files().collect();
    let mut errors: Vec<GenerateError> = files
        .par_iter()
        .filter_map(|(path, file)| check(path, file).err())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.remove(0))
    }
}

/// What is wrong with `text` as Rust: nesting past the checker's depth budget (never
/// handed to syn, whose recursion would overflow the stack), or syn's first error. It runs
/// on the rayon pool's threads, which have the checker's parsing stack (see `main`).
fn rust_problem(text: &str) -> Option<(String, usize, usize)> {
    use crate::check::rust_refs::depth;
    if let Some(offset) = depth::past_budget_of(text) {
        return Some((depth::message(), offset, 1));
    }
    let problem = syn::parse_file(text).err().map(|e| {
        let start = e.span().start();
        let offset = yaml::line_col_to_offset(text, start.line, start.column + 1);
        (e.to_string(), offset, 1)
    });
    proc_macro2::extra::invalidate_current_thread_spans();
    problem
}

fn check(path: &str, file: &PlannedFile) -> Result<(), GenerateError> {
    let Some(language) = language(path) else {
        return Ok(());
    };
    let text = match std::str::from_utf8(&file.after) {
        Ok(t) => t,
        Err(_) => {
            return Err(GenerateError::NotUtf8 {
                path: path.to_owned(),
            });
        }
    };
    let problem: Option<(String, usize, usize)> = match language {
        Language::Rust => rust_problem(text),
        Language::Toml => text.parse::<toml_edit::DocumentMut>().err().map(|e| {
            let span = e.span().unwrap_or(0..0);
            (first_line(e.message()), span.start, span.len().max(1))
        }),
        Language::Yaml => yaml::parse(text)
            .err()
            .map(|e| (e.message, e.pos.offset, e.pos.len.max(1))),
        Language::Hcl => hcl_edit::parser::parse_body(text).err().map(|e| {
            let loc = e.location();
            let offset = yaml::line_col_to_offset(text, loc.line(), loc.column());
            (first_line(e.message()), offset, 1)
        }),
        Language::Json => serde_json::from_str::<serde_json::Value>(text)
            .err()
            .map(|e| {
                let offset = yaml::line_col_to_offset(text, e.line(), e.column());
                (e.to_string(), offset, 1)
            }),
        Language::Dockerfile => dockerfile(text),
    };
    match problem {
        None => Ok(()),
        Some((message, offset, len)) => {
            let offset = offset.min(text.len());
            let len = len.min(text.len() - offset);
            Err(GenerateError::InvalidOutput(Box::new(InvalidOutput {
                path: path.to_owned(),
                language: language.name(),
                message,
                template: file
                    .template
                    .clone()
                    .unwrap_or_else(|| "(an edit of the existing file)".to_owned()),
                override_note: if file.overridden {
                    " (the repository's override under .scaffold/templates)"
                } else {
                    ""
                },
                src: NamedSource::new(path, text.to_owned()),
                span: SourceSpan::new(offset.into(), len),
            })))
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).trim().to_owned()
}

#[derive(Debug, Clone, Copy)]
enum Language {
    Rust,
    Toml,
    Yaml,
    Hcl,
    Json,
    Dockerfile,
}

impl Language {
    fn name(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::Toml => "TOML",
            Language::Yaml => "YAML",
            Language::Hcl => "Terraform (HCL)",
            Language::Json => "JSON",
            Language::Dockerfile => "Dockerfile",
        }
    }
}

fn language(path: &str) -> Option<Language> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "Cargo.lock" || name.ends_with(".toml") {
        Some(Language::Toml)
    } else if name.ends_with(".rs") {
        Some(Language::Rust)
    } else if name.ends_with(".yml") || name.ends_with(".yaml") {
        Some(Language::Yaml)
    } else if name.ends_with(".tf") || name.ends_with(".tfvars") {
        Some(Language::Hcl)
    } else if name.ends_with(".json") {
        Some(Language::Json)
    } else if name == "Dockerfile" || name.ends_with(".Dockerfile") {
        Some(Language::Dockerfile)
    } else {
        None
    }
}

/// Dockerfile instructions (the reference's list).
const DOCKER_INSTRUCTIONS: &[&str] = &[
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
];

/// Every logical line (continuations joined, heredoc bodies skipped) starts with an
/// instruction; the first instruction other than `ARG` is `FROM`.
fn dockerfile(text: &str) -> Option<(String, usize, usize)> {
    let mut offset = 0;
    let mut continued = false;
    let mut heredoc: Option<String> = None;
    let mut seen_from = false;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let t = line.trim();
        if let Some(end) = &heredoc {
            if t == end {
                heredoc = None;
            }
            continue;
        }
        if continued {
            continued = t.ends_with('\\');
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let word = t.split_whitespace().next().unwrap_or("");
        let upper = word.to_ascii_uppercase();
        if !DOCKER_INSTRUCTIONS.contains(&upper.as_str()) {
            let at = start + (line.len() - line.trim_start().len());
            return Some((
                format!("`{word}` is not a Dockerfile instruction"),
                at,
                word.len().max(1),
            ));
        }
        if upper != "ARG" && !seen_from {
            if upper != "FROM" {
                let at = start + (line.len() - line.trim_start().len());
                return Some((
                    "the first instruction must be FROM".to_owned(),
                    at,
                    word.len(),
                ));
            }
            seen_from = true;
        }
        if let Some(pos) = t.find("<<") {
            let tag: String = t[pos + 2..]
                .trim_start_matches('-')
                .trim_matches(|c| c == '"' || c == '\'')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !tag.is_empty() {
                heredoc = Some(tag);
                continue;
            }
        }
        continued = t.ends_with('\\');
    }
    if !seen_from {
        return Some(("no FROM instruction".to_owned(), 0, 0));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dockerfile_instructions_are_checked() {
        assert!(
            dockerfile("FROM rust:1 AS build\nRUN cargo build \\\n  --release\nUSER app\n")
                .is_none()
        );
        assert!(dockerfile("ARG V=1\nFROM x:${V}\n").is_none());
        assert!(dockerfile("RUN x\n").is_some());
        assert!(dockerfile("FROM x\nFORM y\n").is_some());
        assert!(dockerfile("FROM x\nRUN <<EOF\nnot an instruction\nEOF\nUSER a\n").is_none());
    }
}
