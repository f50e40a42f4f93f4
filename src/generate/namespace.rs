//! `scaffold namespace <ns>`: `om/src/<ns>/{mod.rs,kinds.rs,types/work.rs,README.md}` and
//! the module's line below `// scaffold:namespaces` in `om/src/lib.rs`. Its kinds join
//! `om::root::KINDS` with its first kind (`scaffold worker`).

use crate::layout::markers as marker;
use std::path::Path;

use minijinja::Value;

use super::error::GenerateError;
use super::finish::{Generated, finish};
use super::markers;
use super::names::{self, NameKind};
use super::plan::Plan;
use super::render::{context, create_from, project_name, project_vars};
use super::templates::Templates;

pub use crate::layout::OM_LIB;

/// The files of a namespace, by template (under `templates/namespace/`).
const FILES: &[&str] = &["README.md", "kinds.rs", "mod.rs", "types/work.rs"];

/// The files of a namespace's service, by template (under `templates/service/`).
const SERVICE_FILES: &[&str] = &[
    "Cargo.toml",
    "README.md",
    "src/lib.rs",
    "src/manager.rs",
    "src/records.rs",
    "tests/manager.rs",
    "examples/record.rs",
];

/// The workspace packages a service depends on (dev-dependencies included), besides the
/// project's om: what its lock entry lists.
const SERVICE_DEPS: &[&str] = &[
    "scaffold-runtime",
    "serde",
    "serde_json",
    "tempfile",
    "tokio",
];

/// Where namespace `ns`'s service lives, and its package.
pub fn service_dir(ns: &str) -> String {
    crate::layout::service_dir(ns)
}

pub fn service_package(name: &str, ns: &str) -> String {
    format!("{name}-{}-service", ns.replace('_', "-"))
}

/// The namespace's service (docs/reference.md#the-generator): a crate under `services/` whose manager's write
/// runs in one storage transaction with the work rows it starts; a workspace member and
/// dependency, in the lock with what it depends on.
fn plan_service(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    name: &str,
    ns: &str,
) -> Result<(), GenerateError> {
    let dir = service_dir(ns);
    for file in SERVICE_FILES {
        create_from(
            plan,
            templates,
            &format!("service/{file}.j2"),
            &format!("{dir}/{file}"),
            ctx,
        )?;
    }
    let package = service_package(name, ns);
    let manifest = plan.text("Cargo.toml")?.unwrap_or_default();
    let manifest = super::members::add("Cargo.toml", &manifest, &dir)?;
    let manifest = super::members::add_path_dependency("Cargo.toml", &manifest, &package, &dir)?;
    plan.edit("Cargo.toml", manifest)?;
    if let Some(lock) = plan.text("Cargo.lock")? {
        let om = format!("{name}-om");
        let mut deps: Vec<String> = SERVICE_DEPS.iter().map(|d| (*d).to_owned()).collect();
        deps.push(om.clone());
        if let Some(lock) = super::lockfile::add_member(&lock, &package, &om, &deps)? {
            plan.edit("Cargo.lock", lock)?;
        }
    }
    Ok(())
}

/// Plans and (unless dry-run) writes a namespace.
pub fn namespace(
    cwd: &Path,
    ns: &str,
    dry_run: bool,
    waiting: &mut dyn FnMut(&str),
) -> Result<Generated, GenerateError> {
    names::validate(NameKind::Namespace, ns)?;
    let root = crate::repo::discover(cwd)?;
    let txn = super::txn::Txn::begin(&root, &format!("namespace {ns}"), false, waiting)?;
    let name = project_name(&root)?;
    let dir = crate::layout::namespace_dir(ns);
    if root.join(&dir).symlink_metadata().is_ok() {
        let kinds = format!("{dir}/kinds.rs");
        return Err(if root.join(&kinds).is_file() {
            GenerateError::NamespaceExists {
                ns: ns.to_owned(),
                path: kinds,
            }
        } else {
            GenerateError::NamespaceBare {
                ns: ns.to_owned(),
                path: format!("{dir}/"),
            }
        });
    }
    let module = crate::layout::namespace_module(ns);
    let declared = crate::repo::inside::read_text(&root, OM_LIB, crate::repo::TEXT_LIMIT)
        .map_err(|reason| GenerateError::Refused {
            path: OM_LIB.to_owned(),
            reason,
        })?
        .map(|t| {
            t.lines().any(|l| {
                let code = l.split("//").next().unwrap_or_default().trim();
                code == format!("mod {ns};") || code == format!("pub mod {ns};")
            })
        })
        .unwrap_or(false);
    if root.join(&module).symlink_metadata().is_ok() || declared {
        return Err(GenerateError::NamespaceExists {
            ns: ns.to_owned(),
            path: if declared { OM_LIB.to_owned() } else { module },
        });
    }
    let templates = Templates::new(Some(&root));
    let mut plan = Plan::new(&root);
    let ctx = context(&namespace_vars(&project_vars(&name), ns));
    for file in FILES {
        create_from(
            &mut plan,
            &templates,
            &format!("namespace/{file}.j2"),
            &format!("{dir}/{file}"),
            &ctx,
        )?;
    }
    plan_service(&mut plan, &templates, &ctx, &name, ns)?;
    let lib = plan
        .text(OM_LIB)?
        .ok_or_else(|| GenerateError::MarkerMissing {
            path: OM_LIB.to_owned(),
            marker: marker::NAMESPACES.to_owned(),
            place: "the module list of om/src/lib.rs",
        })?;
    let lib = markers::insert_below(
        OM_LIB,
        &lib,
        marker::NAMESPACES,
        "the module list of om/src/lib.rs",
        &[format!("pub mod {ns};")],
    )?;
    plan.edit(OM_LIB, lib)?;
    let next = vec![
        format!(
            "edit om/src/{ns}/README.md: say what the {ns} namespace is in the product's language"
        ),
        format!(
            "edit services/{ns}/src/manager.rs: the namespace's writes; each lists the work it starts below `// scaffold:work-rows`"
        ),
        format!(
            "cargo run -p {} --example record -- r-1: the write, outside the tests (it creates the records table)",
            service_package(&name, ns)
        ),
        format!("scaffold worker maintenance <KIND> --namespace {ns}"),
        "cargo test --workspace".to_owned(),
        "scaffold check".to_owned(),
    ];
    finish("namespace", txn, plan, dry_run, next)
}

/// The namespace's variables: `ns` (`order_sync`), `Ns` (`OrderSync`), `NS` (`ORDER_SYNC`).
pub(crate) fn namespace_vars(
    project: &[(&'static str, Value)],
    ns: &str,
) -> Vec<(&'static str, Value)> {
    let mut vars = project.to_vec();
    vars.extend([
        ("ns", Value::from(ns)),
        ("Ns", Value::from(names::camel(ns))),
        ("NS", Value::from(names::shouty(ns))),
        ("ns_kebab", Value::from(ns.replace('_', "-"))),
    ]);
    vars
}
