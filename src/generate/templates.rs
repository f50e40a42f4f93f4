//! The generator's templates: embedded in the binary from `templates/`, rendered with
//! minijinja (strict undefined: a template naming a variable nobody set fails). A
//! repository overrides any of them with a file at the same relative path under
//! `.scaffold/templates/`.

use std::path::{Path, PathBuf};

use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use super::error::GenerateError;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// Where a repository keeps its overrides.
pub const OVERRIDE_DIR: &str = ".scaffold/templates";

/// The runtime files `scaffold init` vendors into `platform/runtime/` (paths relative to
/// the runtime's root).
pub fn runtime_files() -> &'static [(&'static str, &'static [u8])] {
    embedded::RUNTIME_FILES
}

/// An embedded non-template file under `templates/` (e.g. the lock file).
pub fn embedded_file(name: &str) -> Option<&'static [u8]> {
    embedded::TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
}

/// A rendered template.
#[derive(Debug)]
pub struct Rendered {
    pub text: String,
    /// The template's name (its path under `templates/`).
    pub template: String,
    /// Whether the repository's override rendered it.
    pub overridden: bool,
}

/// Instructions one render may run: the largest embedded template needs a few thousand;
/// an override looping over `range(100000)` runs out and fails instead of running on.
const FUEL: u64 = 1_000_000;

/// The most text one render may produce.
const OUTPUT_LIMIT: usize = 8 << 20;

/// The largest override read.
const OVERRIDE_LIMIT: u64 = 1 << 20;

/// The template set of one command.
#[derive(Debug)]
pub struct Templates {
    /// The repository root, when overrides may be read from it.
    overrides: Option<PathBuf>,
    env: Environment<'static>,
}

impl Templates {
    /// Templates for a repository at `root` (its overrides win), or the embedded ones only.
    pub fn new(root: Option<&Path>) -> Templates {
        let overrides = root.map(Path::to_path_buf);
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(FUEL));
        let dir = overrides.clone();
        env.set_loader(move |name| {
            if let Some(text) = read_override(dir.as_deref(), name)? {
                return Ok(Some(text));
            }
            Ok(embedded_file(name).map(|b| String::from_utf8_lossy(b).into_owned()))
        });
        Templates { overrides, env }
    }

    /// The embedded templates whose names start with `prefix` (e.g. `init/`), sorted.
    pub fn names_under(prefix: &str) -> Vec<&'static str> {
        embedded::TEMPLATES
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| n.starts_with(prefix) && n.ends_with(".j2"))
            .collect()
    }

    fn is_overridden(&self, name: &str) -> bool {
        self.overrides.as_ref().is_some_and(|root| {
            std::fs::symlink_metadata(root.join(OVERRIDE_DIR).join(name)).is_ok_and(|m| m.is_file())
        })
    }

    fn origin(&self, name: &str) -> String {
        if self.is_overridden(name) {
            format!("the override {OVERRIDE_DIR}/{name} renders it")
        } else {
            "it is scaffold's embedded template".to_owned()
        }
    }

    /// Renders template `name` with `ctx`.
    pub fn render(&self, name: &str, ctx: &Value) -> Result<Rendered, GenerateError> {
        let fail = |e: minijinja::Error| {
            let mut message = e.to_string();
            if let Some(detail) = e.detail()
                && !message.contains(detail)
            {
                message = format!("{message}: {detail}");
            }
            GenerateError::Template {
                template: name.to_owned(),
                origin: self.origin(name),
                message,
            }
        };
        let template = self.env.get_template(name).map_err(fail)?;
        let text = template.render(ctx).map_err(fail)?;
        if text.len() > OUTPUT_LIMIT {
            return Err(GenerateError::Template {
                template: name.to_owned(),
                origin: self.origin(name),
                message: format!("it renders more than {OUTPUT_LIMIT} bytes"),
            });
        }
        Ok(Rendered {
            text,
            template: name.to_owned(),
            overridden: self.is_overridden(name),
        })
    }
}

/// An override's text: only a regular file reached through real directories inside the
/// repository (a symlinked `.scaffold`, `.scaffold/templates` or subfolder, a link to
/// `/dev/zero`, a FIFO are refused, their content unread), 1 MiB at most.
fn read_override(root: Option<&Path>, name: &str) -> Result<Option<String>, minijinja::Error> {
    let Some(root) = root else {
        return Ok(None);
    };
    if name.split('/').any(|c| c == ".." || c.is_empty()) {
        return Ok(None);
    }
    let rel = format!("{OVERRIDE_DIR}/{name}");
    crate::repo::inside::read_text(root, &rel, OVERRIDE_LIMIT).map_err(|refusal| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("refused the override: {refusal}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::embedded;

    /// The files git tracks under `dir`, relative to it; `None` (said) where git cannot
    /// answer (a tree that is not a checkout).
    fn tracked(dir: &str) -> Option<Vec<String>> {
        let out = std::process::Command::new("git")
            .args(["ls-files", "-z", "--", dir])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let mut files: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(|p| p.strip_prefix(dir).unwrap_or(p).to_owned())
            .collect();
        files.sort();
        Some(files)
    }

    /// build.rs embeds exactly the tracked templates and runtime files: not a stale list
    /// (it reruns on every file, not only on folders whose times a `cp -p` keeps) and no
    /// untracked dotfile (an editor's swap file) beside them.
    #[test]
    fn the_embedded_files_are_the_tracked_ones() {
        let Some(templates) = tracked("templates/") else {
            println!("SKIPPED: not a git checkout; the embedded lists were not compared");
            return;
        };
        let embedded_templates: Vec<&str> = embedded::TEMPLATES.iter().map(|(n, _)| *n).collect();
        assert_eq!(embedded_templates, templates);
        let mut runtime = tracked("runtime/").unwrap_or_default();
        runtime
            .retain(|p| p == "Cargo.toml" || p.starts_with("src/") || p.starts_with("migrations/"));
        let embedded_runtime: Vec<&str> = embedded::RUNTIME_FILES.iter().map(|(n, _)| *n).collect();
        assert_eq!(embedded_runtime, runtime);
    }
}
