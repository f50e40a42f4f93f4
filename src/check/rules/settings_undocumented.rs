//! # settings-undocumented
//!
//! ## What it finds
//! A field of a worker's `Settings` struct (any `struct Settings` in the worker's `src/`,
//! outside test code) whose environment variable is not in `.env.example`. The variable is
//! `<NAME>_<FIELD>`: `<NAME>` is codemap.yml's `name:` in upper snake case (`acme-shop` →
//! `ACME_SHOP`), `<FIELD>` the field (or its `#[serde(rename = "…")]`) in upper case. A
//! line counts whether it is set or commented out (`# ACME_MAINTENANCE_LANE=`), with or
//! without `export`. Fields marked `#[serde(skip)]` or `#[serde(flatten)]` are not
//! variables of their own and are not checked. Without a `name:` in the codemap there is
//! no prefix and this rule says nothing.
//!
//! ## Why
//! `.env.example` is how a developer or an operator learns what a worker reads. A setting
//! missing from it is found in production, when the default turns out wrong and nobody
//! knew the variable existed.
//!
//! ## Example
//! ```rust,ignore
//! pub struct Settings {
//!     pub database_url: String,
//!     pub batch_size: usize,      // settings-undocumented: no ACME_BATCH_SIZE in .env.example
//! }
//! ```
//!
//! ## Fix
//! Add the variable to `.env.example` with its default and a comment saying what it does;
//! leave it commented out when the default is right for most setups.

use std::collections::HashSet;

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::{settings, upper_snake};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "settings-undocumented",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a field of a worker's Settings whose <NAME>_<FIELD> variable is missing from .env.example",
    severity_note: "",
    finds: "a field of a worker's `Settings` whose `<NAME>_<FIELD>` is not in `.env.example`",
};
pub const ID: &str = RULE.id;
pub const ENV_EXAMPLE: &str = ".env.example";

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let Some(name) = &ctx.repo.codemap.name else {
        return;
    };
    let fields = settings::fields(ctx);
    if fields.is_empty() {
        return;
    }
    let prefix = upper_snake(name);
    let text = ctx.repo.read_listed(ENV_EXAMPLE);
    let vars = match &text {
        Ok(Some(text)) => variables(text),
        _ => HashSet::new(),
    };
    for f in fields {
        let var = format!("{prefix}_{}", f.key.to_ascii_uppercase().replace('-', "_"));
        if vars.contains(&var) {
            continue;
        }
        let package = &ctx.repo.workspace.crates[f.krate].package;
        let (message, help) = match &text {
            Ok(Some(_)) => (
                format!(
                    "setting `{}` of worker `{package}` is read from `{var}`, which .env.example does not list",
                    f.field
                ),
                format!(
                    "add `{var}=<default>` to .env.example with a comment saying what it does (commented out when the default fits)"
                ),
            ),
            Ok(None) => (
                format!(
                    "setting `{}` of worker `{package}` is read from `{var}`, and the repository has no .env.example",
                    f.field
                ),
                format!(
                    "create .env.example listing every worker setting, starting with `{var}=<default>`"
                ),
            ),
            Err(why) => (
                format!(
                    "setting `{}` of worker `{package}` is read from `{var}`, and .env.example cannot be read ({why})",
                    f.field
                ),
                format!(
                    "make .env.example a regular file inside the repository, readable and under {} MiB, listing `{var}=<default>`",
                    crate::repo::TEXT_LIMIT >> 20
                ),
            ),
        };
        sink.push(
            Finding::new(ID, f.path.clone(), f.at)
                .message(message)
                .label(format!("`{var}` undocumented"))
                .help(help),
        );
    }
}

/// The variables an env file names, set or commented out.
fn variables(text: &str) -> HashSet<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().trim_start_matches('#').trim_start();
            let l = l.strip_prefix("export ").unwrap_or(l).trim_start();
            let (k, _) = l.split_once('=')?;
            let k = k.trim();
            (!k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .then(|| k.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::variables;

    #[test]
    fn reads_set_commented_and_exported_variables() {
        let v =
            variables("# comment\nACME_A=1\n# ACME_B=\nexport ACME_C=x\n#ACME_D = 2\nnot a var\n");
        for k in ["ACME_A", "ACME_B", "ACME_C", "ACME_D"] {
            assert!(v.contains(k), "{k}");
        }
        assert_eq!(v.len(), 4);
    }
}
