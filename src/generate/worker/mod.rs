//! `scaffold worker <worker> <KIND>`: every file of a new kind of work (docs/reference.md#the-generator, seed
//! 001), and the worker itself when it does not exist yet — all or nothing.

mod deploy;
mod lookup;
mod own_lane;
mod remote;

use std::path::Path;

use minijinja::Value;

use deploy::{next_metrics_port, plan_new_worker, plan_replica, served_lane, served_lanes};
use lookup::{registered_at, resolve_namespace, variant_at};

use super::error::GenerateError;
use super::finish::{Generated, finish};
use super::init::worker_vars;
use super::kind_files::{
    HandlerFiles, NamespaceEntry, insert_snippet, plan_handler, plan_namespace_entry,
};
use super::names::{self, NameKind};
use super::namespace::namespace_vars;
use super::plan::Plan;
use super::render::{context, project_name, project_vars};
use super::templates::Templates;
use crate::layout::markers as marker;

/// What `scaffold worker` was asked for.
#[derive(Debug, Clone, Default)]
pub struct WorkerOptions {
    pub worker: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub lane: Option<String>,
    pub container: bool,
    pub role: Option<String>,
    /// The write that starts the kind (`<Manager>::<method>`).
    pub from: Option<String>,
    /// A long-running kind run as named steps (`OrchestrationKindSpec`).
    pub orchestration: bool,
    /// A long-running work kind whose lease the worker renews.
    pub long_held: bool,
    /// The outside provider the handler calls (`integrations/<provider>/`).
    pub integration: Option<String>,
    /// A new worker that reaches the queue through the coordinator (no database).
    pub remote: bool,
    pub dry_run: bool,
}

use crate::layout::DEV_SH;

/// Worker names whose package the workspace already has (`<name>-om`, …).
const RESERVED_WORKERS: &[&str] = &["om", "verification", "runtime", "coordinator"];

/// Plans and (unless dry-run) writes the kind, and the worker when it is new.
pub fn worker(
    cwd: &Path,
    opts: &WorkerOptions,
    waiting: &mut dyn FnMut(&str),
) -> Result<Generated, GenerateError> {
    names::validate(NameKind::Kind, &opts.kind)?;
    names::validate(NameKind::Worker, &opts.worker)?;
    if let Some(ns) = &opts.namespace {
        names::validate(NameKind::Namespace, ns)?;
    }
    if let Some(lane) = &opts.lane {
        names::validate(NameKind::Lane, lane)?;
    }
    if let Some(provider) = &opts.integration {
        names::validate(NameKind::Provider, provider)?;
    }
    if opts.orchestration
        && let Some(lane) = &opts.lane
    {
        return Err(GenerateError::OrchestrationLane {
            worker: opts.worker.clone(),
            kind: opts.kind.clone(),
            lane: lane.clone(),
        });
    }
    if let Some(role) = &opts.role {
        let roles = &crate::layout::roles::roles().roles;
        if !roles.contains_key(role) {
            return Err(GenerateError::UnknownRole {
                role: role.clone(),
                known: roles.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        }
    }
    let root = crate::repo::discover(cwd)?;
    let command = format!("worker {} {}", opts.worker, opts.kind);
    let txn = super::txn::Txn::begin(&root, &command, false, waiting)?;
    let name = project_name(&root)?;
    // Empty until planning starts: the lookups below read the tree through it, as the
    // repository model reads a plan (the disk's bytes for every file not planned).
    let mut plan = Plan::new(&root);
    // One model for every lookup before planning: `om/src/` read and parsed once.
    let model = crate::layout::model::Model::new(&plan);
    if let Some((path, line)) = registered_at(&model, &opts.kind)? {
        return Err(GenerateError::KindExists {
            kind: opts.kind.clone(),
            at: format!("{path}:{line}"),
        });
    }
    let ns = resolve_namespace(&plan, opts.namespace.as_deref())?;
    if let Some(at) = variant_at(&plan, &ns, &opts.kind) {
        return Err(GenerateError::KindExists {
            kind: opts.kind.clone(),
            at,
        });
    }
    let worker = opts.worker.as_str();
    let worker_dir = crate::layout::worker_dir(worker);
    // Read as the plan reads every file: a link in a worker's place is refused, not followed.
    let is_new = plan
        .text(&crate::layout::worker_file(worker, "Cargo.toml"))?
        .is_none();
    if is_new && root.join(&worker_dir).symlink_metadata().is_ok() {
        return Err(GenerateError::FileExists {
            path: format!("{worker_dir}/"),
        });
    }
    if is_new
        && let Some(suffix) = ["-integration", "-service"]
            .into_iter()
            .find(|s| worker.ends_with(s))
    {
        return Err(GenerateError::InvalidName {
            what: "worker name",
            name: worker.to_owned(),
            reason: format!(
                "`{name}-{worker}` is how the generator names {} crate",
                if suffix == "-service" {
                    "a namespace's service"
                } else {
                    "an outside provider's client"
                }
            ),
            rule: "a name not ending in `-integration` or `-service`",
        });
    }
    if is_new && RESERVED_WORKERS.contains(&worker) {
        return Err(GenerateError::InvalidName {
            what: "worker name",
            name: worker.to_owned(),
            reason: format!("the package `{name}-{worker}` exists (the workspace's own crate)"),
            rule: "a name no other workspace package has",
        });
    }
    if is_new {
        let test = format!("worker/tests/{}.rs.j2", names::snake(&opts.kind));
        if Templates::names_under("worker/").contains(&test.as_str()) {
            return Err(GenerateError::InvalidName {
                what: "kind",
                name: opts.kind.clone(),
                reason: format!(
                    "its test would be the new worker's own tests/{}.rs",
                    names::snake(&opts.kind)
                ),
                rule: "a name whose test file is not one of a worker's own tests",
            });
        }
    }
    if opts.orchestration
        && plan
            .text(&super::orchestration::handler_path(worker))?
            .is_none()
    {
        return Err(GenerateError::OrchestrationWorker {
            worker: worker.to_owned(),
            kind: opts.kind.clone(),
            path: super::orchestration::handler_path(worker),
        });
    }
    if !is_new && plan.text(&crate::layout::work_loop(worker))?.is_none() {
        return Err(GenerateError::NoWorkLoop {
            worker: worker.to_owned(),
        });
    }
    if !is_new && opts.container {
        return Err(GenerateError::ContainerOfExistingWorker {
            worker: worker.to_owned(),
        });
    }
    if !is_new && opts.role.is_some() {
        return Err(GenerateError::RoleOfExistingWorker {
            worker: worker.to_owned(),
        });
    }
    let remote = if is_new {
        opts.remote
    } else {
        let manifest = crate::layout::worker_file(worker, "Cargo.toml");
        let text = Plan::new(&root).text(&manifest)?.unwrap_or_default();
        let remote = remote::is_remote(&manifest, &text)?;
        if opts.remote && !remote {
            return Err(GenerateError::RemoteOfExistingWorker {
                worker: worker.to_owned(),
            });
        }
        remote
    };
    if remote {
        remote_refusals(opts)?;
    }
    let templates = Templates::new(Some(&root));
    // Asked only for a remote worker: a local one's run reads nothing of the coordinator.
    let coordinator_was_there = remote
        && plan
            .text(&format!("{}/Cargo.toml", crate::layout::COORDINATOR_DIR))?
            .is_some();
    let producer = if opts.orchestration {
        None
    } else {
        super::producer::resolve(&plan, &ns, opts.from.as_deref())?
    };
    let dev_sh = plan.text(DEV_SH)?.unwrap_or_default();
    // What a process of the worker told no lane serves: the maintenance worker's is the
    // default lane; another's, the lane of its first kind's spec.
    let own = if is_new {
        None
    } else if worker == "maintenance" {
        Some(crate::layout::DEFAULT_LANE.to_owned())
    } else {
        own_lane::own_lane(&plan, &model, worker)?
    };
    let lane = match &opts.lane {
        Some(l) => l.clone(),
        None if is_new && worker != "maintenance" => worker.to_owned(),
        None => served_lane(&dev_sh, &name, worker, own.as_deref()).ok_or_else(|| {
            GenerateError::UnknownOwnLane {
                worker: worker.to_owned(),
            }
        })?,
    };
    let port = next_metrics_port(&dev_sh);
    let role = opts
        .role
        .clone()
        .unwrap_or_else(|| "maintenance".to_owned());
    let project = project_vars(&name);
    let mut vars = worker_vars(&project, worker, &role, port, worker == "maintenance");
    vars.extend(namespace_vars(&[], &ns));
    vars.extend(kind_vars(&opts.kind, &ns, &lane));
    vars.push(("lane_var", Value::from(lane_var(&name, worker))));
    // A replica is told its lane; a new worker's own process is told none and takes the
    // lane off its kind's spec (seed 001 §5).
    vars.push(("replica", Value::from(!is_new)));
    // A new worker's processes are named after it; a replica of a worker the tree has
    // after the worker and its lane.
    let service = if is_new {
        worker.to_owned()
    } else {
        format!("{worker}-{lane}")
    };
    let service_snake = names::snake(&service);
    vars.push(("service_snake", Value::from(service_snake.as_str())));
    vars.push(("service", Value::from(service)));
    vars.push(("long_held", Value::from(opts.long_held)));
    vars.push(("remote", Value::from(remote)));
    vars.extend(super::integration::vars(opts.integration.as_deref()));
    let ctx = context(&vars);

    if opts.orchestration {
        super::orchestration::plan(&mut plan, &templates, &ctx, &ns, worker, &opts.kind)?;
        let next = vec![
            format!(
                "edit workers/{worker}/src/handlers/{}.rs: the steps, each inside ctx.step",
                names::snake(&opts.kind)
            ),
            format!(
                "start one by hand: scaffold queue enqueue ORCHESTRATION --payload '{{\"orchestration\":\"{}\",\"input\":{{\"id\":\"<record id>\"}}}}' (then bash scripts/dev.sh runs it)",
                opts.kind
            ),
            format!("cargo test -p {name}-{worker}"),
            "scaffold check".to_owned(),
        ];
        return finish("worker", txn, plan, opts.dry_run, next);
    }
    plan_kind(&mut plan, &templates, &ctx, &ns)?;
    if is_new && remote {
        remote::plan_new_remote_worker(
            &mut plan,
            &templates,
            &ctx,
            &name,
            (worker, &service_snake),
        )?;
    } else if is_new {
        plan_new_worker(
            &mut plan,
            &templates,
            &ctx,
            &name,
            worker,
            (opts.container, &role),
        )?;
    }
    plan_handler(
        &mut plan,
        &templates,
        &ctx,
        worker,
        &opts.kind,
        &work_kind_handler(worker, opts.long_held),
    )?;
    // A scheduler worker schedules every kind it handles.
    let schedule = crate::layout::worker_file(worker, "src/schedule.rs");
    let scheduler = plan.text(&schedule)?.is_some();
    if scheduler {
        insert_snippet(
            &mut plan,
            &templates,
            &ctx,
            &schedule,
            marker::SCHEDULED,
            "the kinds this worker schedules",
            "kind/scheduled.j2",
        )?;
    }
    if let Some(provider) = &opts.integration {
        super::integration::plan(&mut plan, &templates, &ctx, (&name, worker), provider)?;
    }
    if let Some(write) = &producer {
        let mut vars = vars.clone();
        vars.push(("method", Value::from(write.1.method.clone())));
        // A raw identifier (`r#match`) is called as written, named without its `r#`.
        let plain = write.1.method.trim_start_matches("r#").to_owned();
        vars.push(("method_name", Value::from(plain)));
        super::producer::plan(
            &mut plan,
            &templates,
            &context(&vars),
            write,
            (
                &format!("{name}-{worker}"),
                &super::namespace::service_package(&name, &ns),
            ),
            &worker_dir,
            &format!("{}_produced.rs", names::snake(&opts.kind)),
        )?;
    }
    // A lane no process of an existing worker serves yet gets a replica of it.
    let new_replica = !is_new
        && opts.lane.is_some()
        && !served_lanes(&dev_sh, &name, worker, own.as_deref()).contains(&lane);
    if new_replica {
        let replica = format!("{worker}-{lane}");
        if root
            .join("workers")
            .join(&replica)
            .symlink_metadata()
            .is_ok()
        {
            return Err(GenerateError::InvalidName {
                what: "lane",
                name: lane.clone(),
                reason: format!(
                    "the {worker} worker's replica on it would be named `{replica}`, like the worker workers/{replica}"
                ),
                rule: "a lane whose replica name no worker has",
            });
        }
        if remote {
            remote::plan_remote_replica(&mut plan, &templates, &ctx, (worker, &service_snake))?;
        } else {
            plan_replica(&mut plan, &templates, &ctx, (&name, worker))?;
        }
    }
    let mut next = vec![format!(
        "edit workers/{worker}/src/handlers/{}.rs: do the work inside ctx.once",
        names::snake(&opts.kind)
    )];
    next.push(match &producer {
        Some((path, write)) => format!(
            "{path}: {} now writes the {} work row in its own transaction (the payload's id is the record's): calling it starts the work",
            write.name(),
            opts.kind
        ),
        None => format!(
            "the {ns} namespace has no service write: have its producer add the work row in the transaction of its write (Store::enqueue_in)"
        ),
    });
    next.push(format!(
        "start one by hand: scaffold queue enqueue {} --payload '{{\"id\":\"<record id>\"}}' (then bash scripts/dev.sh runs it)",
        opts.kind
    ));
    if remote {
        // A new process of it (the worker itself, or a replica on a lane it did not serve)
        // is a new identity: it needs a token of its own.
        let terraform = plan.text(crate::layout::TF_ENVIRONMENT)?.is_some();
        next.extend(remote_next(
            (&name, worker),
            (is_new || new_replica).then_some(service_snake.as_str()),
            (terraform, coordinator_was_there),
        ));
    }
    if scheduler {
        next.push(format!(
            "{schedule} enqueues {} once a slot of EVERY (60 s; change it there), deduplicated per slot",
            opts.kind
        ));
    }
    if let Some(provider) = &opts.integration {
        next.push(format!(
            "edit integrations/{provider}/src/http.rs if the provider's API is not JSON POSTs"
        ));
        let up = names::shouty(provider);
        next.push(format!(
            "before the next deploy, set the repository variables {up}_BASE_URL and {up}_TOKEN_SECRET_ARN (a Secrets Manager secret holding the token): Terraform gives every instance of the worker {}_{up}_IMPL=http with them, and it does not start without them",
            names::shouty(&name)
        ));
    }
    next.push(format!("cargo test -p {name}-{worker}"));
    next.push("scaffold check".to_owned());
    finish("worker", txn, plan, opts.dry_run, next)
}

/// What to do after a remote worker (or its replica) is added: its token, and (when the
/// repository deploys with Terraform) the repository variables its deployment and, with the
/// first remote worker, the coordinator's read.
fn remote_next(
    (name, worker): (&str, &str),
    new_service: Option<&str>,
    (terraform, coordinator_was_there): (bool, bool),
) -> Vec<String> {
    let up = names::shouty(name);
    let worker_up = names::shouty(worker);
    let mut next = vec![format!(
        "bash scripts/dev.sh enrolls it from the coordinator; elsewhere give it a token from scaffold queue enroll --worker {worker} --out <file> ({up}_{worker_up}_TOKEN_FILE; spent on its first start, its identity then kept in {up}_{worker_up}_STATE_DIR)"
    )];
    if let Some(service) = new_service.filter(|_| terraform) {
        next.push(format!(
            "before the next deploy, set the repository variable {}_ENROLL_TOKEN_SECRET_ARN: a Secrets Manager secret holding a token from scaffold queue enroll --worker {worker}",
            service.to_ascii_uppercase()
        ));
    }
    if terraform && !coordinator_was_there {
        next.push(
            "before the next deploy, set the repository variables COORDINATOR_PUBLIC_URL (https://…), COORDINATOR_PUBLIC_SUBNET_IDS, COORDINATOR_TLS_CERT_SECRET_ARN and COORDINATOR_TLS_KEY_SECRET_ARN (Secrets Manager secrets with the PEM certificate and key for that URL), and point the URL's name at the coordinator module's load_balancer_dns_name".to_owned(),
        );
    }
    next
}

/// What a remote worker is not generated with: the parts that need the database on the
/// worker's host (an orchestration's child items, a schedule's enqueues) or a provider
/// crate built on the full runtime.
fn remote_refusals(opts: &WorkerOptions) -> Result<(), GenerateError> {
    let refused = if opts.orchestration {
        Some("--orchestration")
    } else if opts.integration.is_some() {
        Some("--integration")
    } else if opts.role.as_deref() == Some("scheduler") {
        Some("--role scheduler")
    } else {
        None
    };
    match refused {
        Some(option) => Err(GenerateError::RemoteRefuses {
            worker: opts.worker.clone(),
            option,
        }),
        None => Ok(()),
    }
}

/// The kind's variables: `KIND`, `Kind`, `kind_snake`, `kind_words`, `permission`, `lane`.
fn kind_vars(kind: &str, ns: &str, lane: &str) -> Vec<(&'static str, Value)> {
    let snake = names::snake(kind);
    vec![
        ("KIND", Value::from(kind)),
        ("Kind", Value::from(names::camel(kind))),
        ("kind_snake", Value::from(snake.clone())),
        ("kind_words", Value::from(snake.replace('_', " "))),
        ("kind_kebab", Value::from(snake.replace('_', "-"))),
        ("permission", Value::from(format!("{ns}.{snake}"))),
        ("lane", Value::from(lane)),
        ("lane_snake", Value::from(names::snake(lane))),
    ]
}

/// The variable a worker's process reads its lane from: the maintenance worker's
/// `<NAME>_WORKER_LANE`, another worker's `<NAME>_<WORKER>_LANE` (seed 001).
fn lane_var(name: &str, worker: &str) -> String {
    if worker == "maintenance" {
        format!("{}_WORKER_LANE", names::shouty(name))
    } else {
        format!("{}_{}_LANE", names::shouty(name), names::shouty(worker))
    }
}

/// The spec, variant, payload, README line and (for the namespace's first kind) the root
/// registration.
fn plan_kind(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    ns: &str,
) -> Result<(), GenerateError> {
    let kinds = crate::layout::namespace_file(ns, "kinds.rs");
    let place = "the namespace's kinds.rs (scaffold namespace writes it)";
    for (marker, template) in [
        (marker::VARIANTS, "kind/variant.j2"),
        (marker::NAMES, "kind/name.j2"),
        (marker::SPECS, "kind/spec.j2"),
    ] {
        insert_snippet(plan, templates, ctx, &kinds, marker, place, template)?;
    }
    plan_namespace_entry(
        plan,
        templates,
        ctx,
        ns,
        &NamespaceEntry {
            payload: "kind/payload.j2",
            readme: "kind/readme.j2",
            slice: format!("{}_KINDS", names::shouty(ns)),
            root_marker: marker::KINDS,
            root_place: "the KINDS registry of om/src/root.rs",
            root_template: "kind/root.j2",
        },
    )
}

/// A work kind's handler (or a long-held one), registered in the worker's loop.
fn work_kind_handler(worker: &str, long_held: bool) -> HandlerFiles<'static> {
    let (module, test) = if long_held {
        ("kind/long-held.rs.j2", "kind/long-held-test.rs.j2")
    } else {
        ("kind/handler.rs.j2", "kind/test.rs.j2")
    };
    HandlerFiles {
        module,
        test,
        register_in: crate::layout::work_loop(worker),
        marker: marker::HANDLERS,
        place: "the handler list of the worker's work loop",
        register: "kind/register.j2",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_and_ports_from_dev_sh() {
        let dev = "export ACME_WORKER_LANE=default\nACME_METRICS_PORT=9100 cargo run -p acme-maintenance -- serve &\n# scaffold:workers\nACME_METRICS_PORT=9104 cargo run -p acme-billing -- serve --lane eu &\nACME_METRICS_PORT=9103 cargo run -p acme-maintenance -- serve --lane bulk &\nACME_METRICS_PORT=9101 cargo run -p acme-billing -- serve --lane payments &\nwait\n";
        let def = Some("default");
        assert_eq!(
            served_lanes(dev, "acme", "maintenance", def),
            ["default", "bulk"]
        );
        assert_eq!(
            served_lane(dev, "acme", "maintenance", def).as_deref(),
            Some("default"),
            "the worker's own process, not its newest replica"
        );
        assert_eq!(
            served_lane(dev, "acme", "billing", None).as_deref(),
            Some("payments")
        );
        assert_eq!(next_metrics_port(dev), 9105);
        assert_eq!(next_metrics_port(""), 9100);
    }

    #[test]
    fn a_process_told_no_lane_of_its_own_serves_its_first_kinds_lane() {
        // dev.sh exports the maintenance worker's variable to every process; the billing
        // worker reads only its own, so its plain `serve` is on its spec's lane.
        let dev = "export ACME_WORKER_LANE=default\n# scaffold:workers\n\
            ACME_BILLING_LANE=bulk cargo run -p acme-billing -- serve &\n\
            cargo run -p acme-billing -- serve &\nwait\n";
        assert_eq!(
            served_lanes(dev, "acme", "billing", Some("payments")),
            ["bulk", "payments"]
        );
        assert_eq!(
            served_lane(dev, "acme", "billing", Some("payments")).as_deref(),
            Some("payments")
        );
        assert_eq!(served_lanes(dev, "acme", "billing", None), ["bulk"]);
    }

    #[test]
    fn a_workers_process_is_found_however_dev_sh_starts_it() {
        let dev = "# scaffold:workers\n\
            cargo run --package acme-billing -- serve --lane a &\n\
            cargo run -pacme-billing -- serve --lane b &\n\
            cargo run --bin=acme-billing -- serve --lane c &\n\
            cargo run --manifest-path ./workers/billing/Cargo.toml -- serve --lane d &\n\
            ACME_METRICS_PORT=9102 ./target/release/acme-billing serve --lane e &\n\
            exec acme-billing serve --lane f &\n\
            cargo run -p acme-billing-extra -- serve --lane no1 &\n\
            ./target/release/acme-maintenance serve --lane no2 &\n\
            cargo run -p acme-maintenance -- serve --lane no3 --bin acme-billingx &\n\
            wait\n";
        assert_eq!(
            served_lanes(dev, "acme", "billing", None),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(
            served_lanes(dev, "acme", "maintenance", None),
            ["no2", "no3"]
        );
    }
}
