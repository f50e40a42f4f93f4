//! # setting-undeployed
//!
//! ## What it finds
//! A deployment of a worker that does not set a setting the worker's binary cannot start
//! without: the `…_IMPL` of each provider whose client the worker's loop builds
//! (`<provider crate>::<Provider>Client::from_env` in `workers/<worker>/src/work_loop.rs`,
//! the setting named in the provider crate's `integrations/<provider>/src/settings.rs`). Checked in each Terraform
//! instance of the `service` module for the worker (its `environment` and `secrets`, through
//! object literals, `merge(…)` and `local.<name>`) and each compose service of its image.
//! An instance whose settings are written any other way (`var.settings`) could set
//! anything, and is not judged.
//!
//! ## Why
//! The worker exits at boot without the setting: the deployment goes out green and every
//! task of the service restarts in a loop, in the environment where nobody runs `cargo test`.
//!
//! ## Example
//! ```hcl
//! module "maintenance" {
//!   source      = "../service"
//!   name        = "maintenance"
//!   environment = { ACME_WORKER_LANE = "default" } # its loop builds CarrierClient: no ACME_CARRIER_IMPL
//! }
//! ```
//!
//! ## Fix
//! Give the instance the setting: `environment = merge({ … }, local.carrier)` with
//! `local.carrier = { ACME_CARRIER_IMPL = "http", ACME_CARRIER_BASE_URL = var.carrier_base_url }`
//! (what `scaffold worker … --integration carrier` writes), and in compose
//! `ACME_CARRIER_IMPL: ${ACME_CARRIER_IMPL:-twin}`.

use std::collections::{BTreeMap, BTreeSet};

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;
use crate::layout::compose::{get, is_compose_file, scalar, service_worker};
use crate::repo::yaml::{self, Value};
use crate::repo::{Repo, TEXT_LIMIT};
use crate::source::SourceFile;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "setting-undeployed",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a worker deployed without a setting its binary cannot start without",
    severity_note: "",
    finds: "a Terraform instance or compose service of a worker that lacks a provider's `…_IMPL` its loop needs",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let required = required(ctx);
    if required.is_empty() {
        return;
    }
    let repo = ctx.repo;
    for path in repo
        .files
        .iter()
        .filter(|f| f.starts_with(crate::layout::TF_DIR) && f.ends_with(".tf"))
    {
        let Some(text) = read(repo, path) else {
            continue;
        };
        // One that does not parse is `lane-undeployed`'s finding.
        let Ok(instances) = crate::layout::instance_settings::instances(&text) else {
            continue;
        };
        let file = SourceFile::new(path.clone(), text);
        for i in instances {
            let (Some(needed), Some(set)) = (required.get(&i.worker), &i.settings) else {
                continue;
            };
            for (setting, provider) in needed {
                if !set.contains(setting) {
                    sink.push(
                        finding(path, Location::in_file(&file, i.offset, "module".len()), setting)
                            .message(format!(
                                "module \"{}\" runs the {} worker without {setting}: its loop builds the {provider} client, which does not start without it",
                                i.label, i.worker
                            ))
                            .help(format!(
                                "set {setting} in the instance's environment (`scaffold worker … --integration {provider}` merges `local.{provider}` in)"
                            )),
                    );
                }
            }
        }
    }
    for path in repo.files.iter().filter(|f| is_compose_file(f)) {
        let Some(text) = read(repo, path) else {
            continue;
        };
        let Ok(root) = yaml::parse(&text) else {
            continue;
        };
        let Some(Value::Map(services)) = get(&root, "services").map(|s| &s.value) else {
            continue;
        };
        let file = SourceFile::new(path.clone(), text.clone());
        for (key, svc) in services {
            let name = key.as_str().unwrap_or_default();
            let Some(needed) = required.get(&service_worker(name, svc)) else {
                continue;
            };
            if get(svc, "env_file").is_some() {
                // Settings from a file the checker does not read: not judged.
                continue;
            }
            let set = compose_env(svc);
            for (setting, provider) in needed {
                if !set.contains(setting) {
                    let at = Location::in_file(&file, key.pos.offset, name.len().max(1));
                    sink.push(
                        finding(path, at, setting)
                            .message(format!(
                                "compose service `{name}` runs its worker without {setting}: its loop builds the {provider} client, which does not start without it"
                            ))
                            .help(format!(
                                "add `{setting}: ${{{setting}:-twin}}` to the service's environment"
                            )),
                    );
                }
            }
        }
    }
}

fn finding(path: &str, at: Location, setting: &str) -> Finding {
    Finding::new(ID, path.to_owned(), at).label(format!("no {setting}"))
}

fn read(repo: &Repo, path: &str) -> Option<String> {
    // A place that cannot be read is `lane-undeployed`'s finding.
    repo.read_within(path, None, TEXT_LIMIT).ok()
}

/// The names a compose service's `environment` sets (a map, or a list of `K=V`).
fn compose_env(svc: &yaml::Node) -> BTreeSet<String> {
    match get(svc, "environment").map(|e| &e.value) {
        Some(Value::Map(entries)) => entries
            .iter()
            .filter_map(|(k, _)| k.as_str().map(str::to_owned))
            .collect(),
        Some(Value::Seq(items)) => items
            .iter()
            .filter_map(scalar)
            .map(|s| s.split_once('=').map_or(s.clone(), |(k, _)| k.to_owned()))
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// By worker (`workers/<worker>`): each setting its binary requires, with the provider whose
/// client requires it.
fn required(ctx: &Context<'_>) -> BTreeMap<String, Vec<(String, String)>> {
    let ws = &ctx.repo.workspace;
    // Provider crates: a crate with a `settings.rs` under its `src/` naming `…_IMPL`.
    let mut providers: Vec<(&str, String, Vec<String>)> = Vec::new();
    for c in &ws.crates {
        let path = if c.dir.is_empty() {
            "src/settings.rs".to_owned()
        } else {
            format!("{}/src/settings.rs", c.dir)
        };
        let Some(text) = source_text(ctx, &path) else {
            continue;
        };
        let impls = impl_settings(&text);
        if !impls.is_empty() {
            let provider = c.dir.rsplit('/').next().unwrap_or(&c.dir).to_owned();
            providers.push((c.lib_name.as_str(), provider, impls));
        }
    }
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for c in &ws.crates {
        let Some(worker) = crate::layout::worker_folder(&c.dir) else {
            continue;
        };
        let Some(work_loop) = source_text(ctx, &format!("{}/src/work_loop.rs", c.dir)) else {
            continue;
        };
        let built = crate::layout::work_loop::client_crates(&work_loop);
        for (lib, provider, impls) in &providers {
            if built.contains(lib) {
                let needed = out.entry(worker.to_owned()).or_default();
                needed.extend(impls.iter().map(|s| (s.clone(), provider.clone())));
            }
        }
    }
    out
}

/// The text of source `path`, as the run read it (or, in a partial run that did not, from
/// the disk; one that cannot be read is the engine's finding).
fn source_text(ctx: &Context<'_>, path: &str) -> Option<String> {
    // The sources are sorted by path (then crate).
    let at = ctx.sources.partition_point(|s| s.path.as_str() < path);
    match ctx.sources.get(at).filter(|s| s.path == path) {
        Some(s) => Some(s.file().text.to_string()),
        None if ctx
            .repo
            .files
            .binary_search_by(|f| f.as_str().cmp(path))
            .is_ok() =>
        {
            read(ctx.repo, path)
        }
        None => None,
    }
}

/// The `"…_IMPL"` string literals of a settings file: upper-case names only.
fn impl_settings(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.ends_with("_IMPL")
                && s.len() > "_IMPL".len()
                && s.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_impl_settings_of_a_settings_file() {
        let text = "pub const VARIABLES: &[&str] = &[\n    \"ACME_CARRIER_IMPL\",\n    \"ACME_CARRIER_BASE_URL\",\n];\nlet x = \"_IMPL\"; let y = \"acme_impl\"; get(&format!(\"ACME_CARRIER_{suffix}\"));\n";
        assert_eq!(impl_settings(text), ["ACME_CARRIER_IMPL"]);
    }
}
