//! The shape of a scaffold repository (docs/reference.md#the-generator): where each part lives, the markers the
//! generator writes below, and the readers of the places workers run (`scripts/dev.sh`, the
//! local compose file, Terraform) and of the vendored runtime's stamp. The generator plans
//! its edits with these and the checker's rules read the same, so the two cannot disagree
//! about what a repository looks like.

pub mod compose;
pub mod dev_sh;
pub mod instance_settings;
pub mod lane;
pub mod model;
pub mod roles;
pub mod runtime;
pub mod rust_sources;
pub mod terraform;
pub mod tree_hash;
pub mod work_loop;

/// The registry of every namespace's kinds.
pub const ROOT_RS: &str = "om/src/root.rs";
/// The `om` crate's root, where `scaffold namespace` declares each namespace.
pub const OM_LIB: &str = "om/src/lib.rs";
/// The folder of the `om` crate (kinds, specs, the root registry).
pub const OM_DIR: &str = "om/";
/// The `om` crate's manifest.
pub const OM_MANIFEST: &str = "om/Cargo.toml";
/// The sentence `scaffold worker` ends a kind's namespace README entry with, for its author
/// to replace (rule `kind-undescribed`).
pub const KIND_PLACEHOLDER: &str =
    "Say here, in the product's words, what happens for the user when it runs.";
/// The `<worker>` of a crate folder `workers/<worker>`.
pub fn worker_folder(dir: &str) -> Option<&str> {
    dir.strip_prefix("workers/")
        .filter(|w| !w.is_empty() && !w.contains('/'))
}

/// The folder of the `om` crate's sources: each namespace's kinds, types and README.
pub const OM_SRC: &str = "om/src/";
/// The folder every worker crate is in.
pub const WORKERS_DIR: &str = "workers/";

/// A worker crate's folder: `workers/<worker>`.
pub fn worker_dir(worker: &str) -> String {
    format!("workers/{worker}")
}

/// A file of a worker crate: `workers/<worker>/<rel>`.
pub fn worker_file(worker: &str, rel: &str) -> String {
    format!("workers/{worker}/{rel}")
}

/// A worker's loop, where its handlers and clients are registered.
pub fn work_loop(worker: &str) -> String {
    worker_file(worker, "src/work_loop.rs")
}

/// A worker's image: `deployment/docker/<worker>.Dockerfile`.
pub fn dockerfile(worker: &str) -> String {
    format!("deployment/docker/{worker}.Dockerfile")
}

/// The folder every namespace's service crate is in.
pub const SERVICES_DIR: &str = "services/";

/// Where namespace `ns`'s service lives: `services/<ns>`.
pub fn service_dir(ns: &str) -> String {
    format!("{SERVICES_DIR}{ns}")
}

/// Where an integration's client crate lives: `integrations/<provider>`.
pub fn integration_dir(provider: &str) -> String {
    format!("integrations/{provider}")
}

/// A namespace's folder in `om`: `om/src/<ns>`.
pub fn namespace_dir(ns: &str) -> String {
    format!("om/src/{ns}")
}

/// A file of a namespace in `om`: `om/src/<ns>/<rel>` (`kinds.rs`, `types/work.rs`, …).
pub fn namespace_file(ns: &str, rel: &str) -> String {
    format!("om/src/{ns}/{rel}")
}

/// A namespace's module file in `om`: `om/src/<ns>.rs`.
pub fn namespace_module(ns: &str) -> String {
    format!("om/src/{ns}.rs")
}

/// The lane a spec rides when it names none (`..WorkKindSpec::DEFAULT`).
pub const DEFAULT_LANE: &str = "default";

/// Where the coordinator's crate lives (`scaffold worker --remote` adds it).
pub const COORDINATOR_DIR: &str = "platform/coordinator";

/// The coordinator's name as an image and a deployment's worker.
pub const COORDINATOR: &str = "coordinator";
/// The local launch script: one worker process per line.
pub const DEV_SH: &str = dev_sh::PATH;
/// The local compose file the generator adds worker services to.
pub const COMPOSE: &str = compose::PATH;
/// The folder all of the Terraform lives under.
pub const TF_DIR: &str = "deployment/terraform/";
/// The Terraform module that instantiates the workers of an environment.
pub const TF_ENVIRONMENT: &str = "deployment/terraform/modules/environment/main.tf";
/// The environment module's variables.
pub const TF_ENVIRONMENT_VARS: &str = "deployment/terraform/modules/environment/variables.tf";
/// The account (the root module, one per AWS account), and its variables (one image per
/// worker).
pub const TF_ACCOUNT: &str = "deployment/terraform/modules/account/main.tf";
pub const TF_ACCOUNT_VARS: &str = "deployment/terraform/modules/account/variables.tf";
/// The coordinator's Terraform module (`scaffold worker --remote` adds it with the first
/// remote worker).
pub const TF_COORDINATOR_MODULE: &str = "deployment/terraform/modules/coordinator/";
/// The image registry's repositories.
pub const TF_REGISTRY: &str = "deployment/terraform/modules/registry/main.tf";
/// The deploy workflows, one per environment.
pub const STAGING: &str = ".github/workflows/deploy-staging.yml";
pub const PRODUCTION: &str = ".github/workflows/deploy-production.yml";
/// Every setting a process reads, documented (rule settings-undocumented).
pub const ENV_EXAMPLE: &str = ".env.example";
/// Cargo's `[env]` defaults (an integration's twin).
pub const CARGO_CONFIG: &str = ".cargo/config.toml";

/// The markers the generator inserts below, matched literally on a line of their own.
pub mod markers {
    /// `scripts/dev.sh`: one line per worker process.
    pub const WORKERS: &str = "# scaffold:workers";
    /// `.env.example`: one block per setting.
    pub const SETTINGS: &str = "# scaffold:settings";
    /// `.cargo/config.toml`'s `[env]`: one line per integration's default.
    pub const ENV: &str = "# scaffold:env";
    /// A worker's loop: one line per handler.
    pub const HANDLERS: &str = "// scaffold:handlers";
    /// A scheduler worker's `schedule.rs`: one kind it schedules per line.
    pub const SCHEDULED: &str = "// scaffold:scheduled";
    /// A producing manager's write: one work row per kind it starts.
    pub const WORK_ROWS: &str = "// scaffold:work-rows";
    /// `om/src/lib.rs`: one module per namespace.
    pub const NAMESPACES: &str = "// scaffold:namespaces";
    /// `om/src/root.rs`: one namespace's `<NS>_KINDS` per line of `KINDS`.
    pub const KINDS: &str = "// scaffold:kinds";
    /// `om/src/root.rs`: one namespace's orchestration kinds per line.
    pub const ORCHESTRATION_KINDS: &str = "// scaffold:orchestration-kinds";
    /// A namespace's `kinds.rs`: the enum's variants, their names and their specs.
    pub const VARIANTS: &str = "// scaffold:variants";
    pub const NAMES: &str = "// scaffold:names";
    pub const SPECS: &str = "// scaffold:specs";
    /// A namespace's `payloads.rs`: one payload struct per kind.
    pub const PAYLOADS: &str = "// scaffold:payloads";
    /// A worker's loop: one step mapping per orchestration kind.
    pub const ORCHESTRATIONS: &str = "// scaffold:orchestrations";
}
