//! The generator's templates: embedded in the binary from `templates/`, rendered with
//! minijinja (strict undefined: a template naming a variable nobody set fails). A
//! repository overrides any of them with a file at the same relative path under
//! `.scaffold/templates/`.

use std::path::{Path, PathBuf};

use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use super::GenerateError;

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

/// The template set of one command.
#[derive(Debug)]
pub struct Templates {
    overrides: Option<PathBuf>,
    env: Environment<'static>,
}

impl Templates {
    /// Templates for a repository at `root` (its overrides win), or the embedded ones only.
    pub fn new(root: Option<&Path>) -> Templates {
        let overrides = root.map(|r| r.join(OVERRIDE_DIR)).filter(|d| d.is_dir());
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        env.set_auto_escape_callback(|_| AutoEscape::None);
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
        self.overrides
            .as_ref()
            .is_some_and(|d| d.join(name).is_file())
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
        Ok(Rendered {
            text,
            template: name.to_owned(),
            overridden: self.is_overridden(name),
        })
    }
}

/// An override's text, refusing one that is a symlink (it could point anywhere).
fn read_override(dir: Option<&Path>, name: &str) -> Result<Option<String>, minijinja::Error> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    if name.split('/').any(|c| c == ".." || c.is_empty()) {
        return Ok(None);
    }
    let path = dir.join(name);
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("{OVERRIDE_DIR}/{name} is a symlink; overrides must be plain files"),
        )),
        Ok(_) => std::fs::read_to_string(&path).map(Some).map_err(|e| {
            minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                format!("cannot read {OVERRIDE_DIR}/{name}: {e}"),
            )
        }),
        Err(_) => Ok(None),
    }
}
