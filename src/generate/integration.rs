//! `scaffold worker <w> <KIND> --integration <provider>` (seed 001, Procedure 2): the
//! provider's client crate under `integrations/<provider>/` — a trait, an HTTP client, a
//! deterministic twin, and the setting that picks one — made once and reused by every kind
//! that names the provider; the worker's dependency on it, its registration on the
//! worker's loop, and its settings in `.env.example`.

use crate::layout::markers as marker;
use minijinja::Value;

use super::error::GenerateError;
use super::kind_files::insert_snippet;
use super::names;
use super::plan::Plan;
use super::render::create_from;
use super::templates::Templates;
use crate::layout::{COMPOSE, ENV_EXAMPLE};

/// The crate's files, under `integrations/<provider>/`, from `templates/integration/`.
const FILES: &[&str] = &[
    "Cargo.toml",
    "README.md",
    "src/lib.rs",
    "src/http.rs",
    "src/settings.rs",
    "src/twin.rs",
    "tests/http.rs",
];

/// The embedded lock with an integration crate added: the embedded lock plus reqwest and
/// what it needs, resolved once by cargo.
pub const INTEGRATION_LOCK: &str = "Cargo.lock.acme-integration";
/// The integration package in [`INTEGRATION_LOCK`].
const LOCK_PACKAGE: &str = "acme-mailer-integration";

/// The HTTP client's entry in `[workspace.dependencies]`: rustls with its webpki roots and
/// ring (the crypto provider the runtime's PostgreSQL TLS already builds), no HTTP/2.
const REQWEST: &str =
    r#"{ version = "0.12", default-features = false, features = ["json", "rustls-tls"] }"#;

pub use crate::layout::CARGO_CONFIG;

pub fn dir(provider: &str) -> String {
    crate::layout::integration_dir(provider)
}

pub fn package(name: &str, provider: &str) -> String {
    format!("{name}-{provider}-integration")
}

/// The template variables of `provider` (`None`: the kind calls no provider).
pub fn vars(provider: Option<&str>) -> Vec<(&'static str, Value)> {
    let Some(p) = provider else {
        return vec![("provider", Value::from(()))];
    };
    vec![
        ("provider", Value::from(p)),
        ("provider_snake", Value::from(names::snake(p))),
        ("Provider", Value::from(names::camel(p))),
        ("PROVIDER", Value::from(names::shouty(p))),
    ]
}

/// Plans the provider's crate (unless the tree has it), the worker's dependency on it, its
/// client on the worker's loop, and its settings.
pub fn plan(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    (name, worker): (&str, &str),
    provider: &str,
) -> Result<(), GenerateError> {
    let dir = dir(provider);
    let package = package(name, provider);
    layered(plan, &dir, worker)?;
    let manifest_path = format!("{dir}/Cargo.toml");
    match plan.text(&manifest_path)? {
        Some(manifest) => {
            let found = super::members::parse(&manifest_path, &manifest)?
                .get("package")
                .and_then(|p| p.get("name"))
                .and_then(toml_edit::Item::as_str)
                .unwrap_or_default()
                .to_owned();
            if found != package {
                return Err(GenerateError::IntegrationForeign {
                    provider: provider.to_owned(),
                    path: manifest_path,
                    found,
                    package,
                });
            }
        }
        None => {
            if plan.root().join(&dir).symlink_metadata().is_ok() {
                return Err(GenerateError::FileExists {
                    path: format!("{dir}/"),
                });
            }
            plan_crate(plan, templates, ctx, &dir, &package)?;
        }
    }

    super::members::plan_dependency(
        plan,
        (
            &crate::layout::worker_dir(worker),
            &format!("{name}-{worker}"),
        ),
        &package,
        "dependencies",
    )?;

    let client = format!(
        "{}_{}_integration::{}Client",
        names::snake(name),
        names::snake(provider),
        names::camel(provider)
    );
    let work_loop = crate::layout::work_loop(worker);
    if !plan.text(&work_loop)?.unwrap_or_default().contains(&client) {
        insert_snippet(
            plan,
            templates,
            ctx,
            &work_loop,
            marker::HANDLERS,
            "the handler list of the worker's work loop",
            "integration/resource.j2",
        )?;
    }
    let var = impl_var(name, provider);
    let setting = format!("{var}=");
    let env = plan.text(ENV_EXAMPLE)?;
    let cargo_setting = format!("{var} ");
    let config = plan.text(CARGO_CONFIG)?;
    if config.is_none() {
        create_from(
            plan,
            templates,
            "init/.cargo/config.toml.j2",
            CARGO_CONFIG,
            ctx,
        )?;
    }
    if !config.is_some_and(|c| c.contains(&cargo_setting)) {
        insert_snippet(
            plan,
            templates,
            ctx,
            CARGO_CONFIG,
            marker::ENV,
            "the settings `cargo test` and `cargo run` default",
            "integration/cargo-env.j2",
        )?;
    }
    compose_settings(plan, name, worker)?;
    super::provider_deploy::plan(plan, name, worker)?;
    if env.is_some_and(|e| !e.contains(&setting)) {
        insert_snippet(
            plan,
            templates,
            ctx,
            ENV_EXAMPLE,
            marker::SETTINGS,
            "the settings of what `scaffold worker` adds",
            "integration/env.j2",
        )?;
    }
    Ok(())
}

/// Refuses a codemap in which the crate at `dir` would be in no layer, or the worker's layer
/// could not import it (`scaffold check` would fail the tree the command leaves).
fn layered(plan: &Plan, dir: &str, worker: &str) -> Result<(), GenerateError> {
    let Some(text) = plan.text(crate::repo::codemap::CODEMAP_PATH)? else {
        return Ok(());
    };
    // A codemap that does not parse is the checker's finding (`manifest-invalid`).
    let Ok(map) = crate::repo::codemap::Codemap::parse(&text) else {
        return Ok(());
    };
    let Some(layer) = map.layer_of(&format!("{dir}/src/lib.rs")) else {
        return Err(GenerateError::IntegrationUnlayered {
            problem: format!("puts {dir}/ in no layer"),
        });
    };
    if let Some(workers) = map.layer_of(&crate::layout::worker_file(worker, "src/lib.rs"))
        && workers.name != layer.name
        && !workers.may_import.contains(&layer.name)
    {
        return Err(GenerateError::IntegrationUnlayered {
            problem: format!(
                "does not let layer `{}` import layer `{}`, which holds {dir}/",
                workers.name, layer.name
            ),
        });
    }
    Ok(())
}

/// The setting that picks a provider's client: `<NAME>_<PROVIDER>_IMPL` (the provider
/// spelled in kebab or snake case alike).
fn impl_var(name: &str, provider: &str) -> String {
    format!("{}_{}_IMPL", names::shouty(name), names::shouty(provider))
}

/// Gives each compose service running `worker` the setting of every provider its loop
/// registers (`<NAME>_<PROVIDER>_IMPL`, twin unless the shell says otherwise), so the local
/// stack starts; a replica added later gets them too.
pub fn compose_settings(plan: &mut Plan, name: &str, worker: &str) -> Result<(), GenerateError> {
    for provider in super::provider_deploy::providers(plan, name, worker)? {
        let var = impl_var(name, &provider);
        if let Some(compose) = plan.text(COMPOSE)?
            && let Some(out) = compose_env(&compose, worker, &var)
        {
            plan.edit(COMPOSE, out)?;
        }
    }
    Ok(())
}

/// `compose` with `var: ${var:-twin}` first in the `environment` map of each service that
/// runs `worker`'s image and lacks `var` (the local stack runs on the twin unless the shell
/// says otherwise); `None` when no service needed it, or the file does not parse (the
/// generator's parse-back of the file reports that).
fn compose_env(compose: &str, worker: &str, var: &str) -> Option<String> {
    use crate::repo::yaml::{self, Value as Yaml};
    let root = yaml::parse(compose).ok()?;
    let entries = |node: &yaml::Node| match &node.value {
        Yaml::Map(entries) => entries.clone(),
        _ => Vec::new(),
    };
    let services = entries(&root)
        .into_iter()
        .find(|(k, _)| k.as_str() == Some("services"))
        .map(|(_, v)| entries(&v))
        .unwrap_or_default();
    let mut at: Vec<usize> = Vec::new();
    for (key, svc) in &services {
        let name = key.as_str().unwrap_or_default();
        if crate::layout::compose::service_worker(name, svc) != worker {
            continue;
        }
        let env = entries(svc)
            .into_iter()
            .find(|(k, _)| k.as_str() == Some("environment"))
            .map(|(_, v)| entries(&v))
            .unwrap_or_default();
        if let Some((first, _)) = env.first()
            && !env.iter().any(|(k, _)| k.as_str() == Some(var))
        {
            at.push(first.pos.offset);
        }
    }
    if at.is_empty() {
        return None;
    }
    let eol = super::markers::line_ending(compose);
    let mut out = compose.to_owned();
    at.sort_unstable();
    for offset in at.into_iter().rev() {
        let start = compose[..offset].rfind('\n').map_or(0, |i| i + 1);
        let indent = &compose[start..offset];
        if !indent.chars().all(|c| c == ' ') {
            continue;
        }
        out.insert_str(start, &format!("{indent}{var}: ${{{var}:-twin}}{eol}"));
    }
    Some(out)
}

/// The crate itself, its workspace member and dependency, reqwest in the workspace's
/// table, and their lock entries.
fn plan_crate(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    dir: &str,
    package: &str,
) -> Result<(), GenerateError> {
    for file in FILES {
        create_from(
            plan,
            templates,
            &format!("integration/{file}.j2"),
            &format!("{dir}/{file}"),
            ctx,
        )?;
    }
    let manifest = plan.text("Cargo.toml")?.unwrap_or_default();
    let manifest = super::members::add("Cargo.toml", &manifest, dir)?;
    let manifest = super::members::add_path_dependency("Cargo.toml", &manifest, package, dir)?;
    let manifest =
        super::members::add_registry_dependency("Cargo.toml", &manifest, "reqwest", REQWEST)?;
    plan.edit("Cargo.toml", manifest)?;
    let Some(lock) = plan.text("Cargo.lock")? else {
        return Ok(());
    };
    let embedded = |file: &str| {
        super::templates::embedded_file(file)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .ok_or_else(|| GenerateError::Template {
                template: file.to_owned(),
                origin: "embedded".to_owned(),
                message: "not in this build".to_owned(),
            })
    };
    let base = embedded(super::lockfile::EMBEDDED_LOCK)?;
    let with = embedded(INTEGRATION_LOCK)?;
    // The member first, so the merge pins its bare names where a crate gains a version.
    let lock =
        super::lockfile::add_member_like(&lock, &with, package, LOCK_PACKAGE)?.unwrap_or(lock);
    // An earlier provider merged what reqwest needs already (the runtime's own optional
    // reqwest is in every lock, so its presence says nothing).
    let earlier =
        super::lockfile::has_package(&lock, |n| n.ends_with("-integration") && n != package)?;
    if earlier {
        return plan.edit("Cargo.lock", lock);
    }
    let lock = super::lockfile::merge_registry(&lock, &base, &with)?.unwrap_or(lock);
    plan.edit("Cargo.lock", lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded(file: &str) -> String {
        let bytes = crate::generate::templates::embedded_file(file).expect("embedded");
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// The integration lock was resolved from the embedded lock: when that one changes
    /// (a runtime dependency), this fails until the integration lock is resolved again
    /// (templates/README.md says how).
    #[test]
    fn the_integration_lock_extends_the_embedded_lock() {
        let base = embedded(crate::generate::lockfile::EMBEDDED_LOCK);
        let with = embedded(INTEGRATION_LOCK);
        let merged = crate::generate::lockfile::merge_registry(&base, &base, &with)
            .expect("every shared entry is the embedded lock's or the integration lock's")
            .expect("reqwest is added");
        let registry = |lock: &str| -> Vec<String> {
            lock.split("\n\n[[package]]\n")
                .filter(|block| block.contains("\nsource = "))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            registry(&merged),
            registry(&with),
            "the merge yields the integration lock's registry entries, no more, no less"
        );
        assert!(with.contains(&format!("name = \"{LOCK_PACKAGE}\"")));
    }
}
