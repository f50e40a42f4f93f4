//! What can stop a generator command. Refused requests (a bad name, a target that is not
//! empty, a kind or namespace that exists) exit 1; a broken template, a repository without
//! a marker, a file that cannot be written exit 2. Every one leaves the tree as it was.

use std::io;
use std::path::PathBuf;

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

#[derive(Debug, Error, Diagnostic)]
pub enum GenerateError {
    #[error("invalid {what} `{name}`: {reason}")]
    #[diagnostic(code(scaffold::invalid_name), help("a {what} is {rule}"))]
    InvalidName {
        what: &'static str,
        name: String,
        reason: String,
        rule: &'static str,
    },
    #[error("{} is not empty (or not a directory)", dir.display())]
    #[diagnostic(
        code(scaffold::target_not_empty),
        help(
            "`scaffold init` creates a new repository: pass a new or empty directory (one holding only .scaffold/templates overrides is fine)"
        )
    )]
    TargetNotEmpty { dir: PathBuf },
    #[error("cannot name the project after {}: {cause}", dir.display())]
    #[diagnostic(code(scaffold::invalid_name), help("pass --name, e.g. --name acme"))]
    NoProjectName { dir: PathBuf, cause: String },
    #[error("namespace `{ns}` exists: {path}")]
    #[diagnostic(
        code(scaffold::namespace_exists),
        help("add kinds to it with `scaffold worker <worker> <KIND> --namespace {ns}`")
    )]
    NamespaceExists { ns: String, path: String },
    #[error("{path} exists without kinds.rs and README.md")]
    #[diagnostic(
        code(scaffold::namespace_bare),
        help(
            "move or remove the folder, then run `scaffold namespace {ns}`; the generator does not adopt a bare folder"
        )
    )]
    NamespaceBare { ns: String, path: String },
    #[error("template {template}: {message}")]
    #[diagnostic(
        code(scaffold::template),
        help("{origin}; fix the template, or delete the override to use the embedded one")
    )]
    Template {
        template: String,
        origin: String,
        message: String,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    InvalidOutput(Box<InvalidOutput>),
    #[error(
        "`scaffold check` would fail on this change ({count} new error(s)); nothing was written:\n{findings}"
    )]
    #[diagnostic(
        code(scaffold::plan_flagged),
        help(
            "the generator checks its plan with the checker's rules before it writes; a template (or an override under .scaffold/templates) produced code the checker refuses: fix it, then run the command again"
        )
    )]
    PlanFlagged { findings: String, count: usize },
    #[error("{path} has no `{marker}` line")]
    #[diagnostic(
        code(scaffold::marker_missing),
        help(
            "the generator inserts below this marker comment and never guesses a place; put the line `{marker}` back in {place}"
        )
    )]
    MarkerMissing {
        path: String,
        marker: String,
        place: &'static str,
    },
    #[error("{path} has `{marker}` {count} times")]
    #[diagnostic(
        code(scaffold::marker_ambiguous),
        help("keep exactly one `{marker}` line so the generator knows where to insert")
    )]
    MarkerAmbiguous {
        path: String,
        marker: String,
        count: usize,
    },
    #[error("{path} is read-only")]
    #[diagnostic(
        code(scaffold::read_only),
        help("make it writable (chmod u+w {path}) and run the command again; nothing was written")
    )]
    ReadOnly { path: String },
    #[error("{path} leaves the repository")]
    #[diagnostic(
        code(scaffold::path_escapes),
        help("the generator writes only inside the repository root and never through symlinks")
    )]
    PathEscapes { path: String },
    #[error("{path} exists")]
    #[diagnostic(
        code(scaffold::file_exists),
        help("the generator never overwrites a file it would create; move it away first")
    )]
    FileExists { path: String },
    #[error("cannot {op} {}", path.display())]
    #[diagnostic(
        code(scaffold::io),
        help("check the permissions of the directory; nothing was left half-written")
    )]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not valid UTF-8")]
    #[diagnostic(code(scaffold::io), help("the generator edits text files only"))]
    NotUtf8 { path: String },
    /// A file the generator would read is a symlink, is reached through one, is not a
    /// regular file (a FIFO would hang the run) or is too large: refused unread.
    #[error("refused {path}: {reason}")]
    #[diagnostic(
        code(scaffold::refused),
        help(
            "the generator reads and edits only regular files inside the repository; nothing was written"
        )
    )]
    Refused {
        path: String,
        #[source]
        reason: crate::repo::inside::Refusal,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Repo(#[from] crate::repo::RepoError),
    #[error("kind `{kind}` is registered already: {at}")]
    #[diagnostic(
        code(scaffold::kind_exists),
        help("a kind is registered once; pick another name, or edit the existing kind at {at}")
    )]
    KindExists { kind: String, at: String },
    #[error("namespace `{ns}` does not exist")]
    #[diagnostic(
        code(scaffold::unknown_namespace),
        help("create it first with `scaffold namespace {ns}` (namespaces now: {known})")
    )]
    UnknownNamespace { ns: String, known: String },
    #[error("the repository has no namespace for the kind")]
    #[diagnostic(
        code(scaffold::unknown_namespace),
        help(
            "create the namespace whose write starts the work: `scaffold namespace <ns>`, then run this again"
        )
    )]
    NoNamespace,
    #[error("which namespace does the kind belong to?")]
    #[diagnostic(
        code(scaffold::ambiguous_namespace),
        help("pass --namespace <ns>; the repository has {known}")
    )]
    AmbiguousNamespace { known: String },
    #[error("{path} has no write `{from}`")]
    #[diagnostic(
        code(scaffold::unknown_producer),
        help(
            "name one of its writes (a `{manager}` method holding the `// scaffold:work-rows` marker): {known}"
        )
    )]
    UnknownProducer {
        from: String,
        path: String,
        manager: String,
        known: String,
    },
    #[error("which write starts the kind? {path} has several")]
    #[diagnostic(
        code(scaffold::ambiguous_producer),
        help("pass --from <Manager>::<method>, one of: {known}")
    )]
    AmbiguousProducer { path: String, known: String },
    #[error("the generator cannot fill a work row in `{write}` ({path})")]
    #[diagnostic(
        code(scaffold::unfillable_producer),
        help(
            "it fills rows in writes of `{manager}` that take `record: Record` (the payload's id comes from it); name one of those with --from, or pass --from none and add the row to your write by hand, below its `// scaffold:work-rows`"
        )
    )]
    UnfillableProducer {
        write: String,
        path: String,
        manager: String,
    },
    #[error("{path} holds `{found}`, not the {provider} integration `{package}`")]
    #[diagnostic(
        code(scaffold::integration_foreign),
        help(
            "integrations/<provider>/ is where `--integration {provider}` puts its client crate; name the provider differently, or move that crate"
        )
    )]
    IntegrationForeign {
        provider: String,
        path: String,
        found: String,
        package: String,
    },
    #[error("agent/codemap.yml {problem}")]
    #[diagnostic(
        code(scaffold::integration_unlayered),
        help(
            "a repository made before integrations existed lacks their layer: add `integrations: {{paths: [\"integrations/**\"], may_import: [runtime]}}` to `layers` and `integrations` to the workers layer's `may_import`, then run the command again"
        )
    )]
    IntegrationUnlayered { problem: String },
    #[error("Cargo.lock has other entries than scaffold resolved for {packages}")]
    #[diagnostic(
        code(scaffold::lock_diverged),
        help(
            "the integration's HTTP client (reqwest) was resolved against the lock `scaffold init` writes, and this lock has moved on from it (starting with `{first}`); add the crate by hand and let cargo resolve the lock (`cargo update -p reqwest`), or run the generator on the lock as init wrote it"
        )
    )]
    LockDiverged { packages: String, first: String },
    #[error("`{from}` is not <Manager>::<method>")]
    #[diagnostic(
        code(scaffold::invalid_name),
        help("name the write as its impl does, e.g. --from ShippingManager::record")
    )]
    InvalidProducer { from: String },
    #[error("an orchestration kind has no lane of its own: --orchestration with --lane {lane}")]
    #[diagnostic(
        code(scaffold::orchestration_lane),
        help(
            "every orchestration's steps ride WorkKind::ORCHESTRATION's lane; a long-running kind that needs its own capacity is a long-held work kind whose lease the worker renews: `scaffold worker {worker} {kind} --long-held --lane {lane}`"
        )
    )]
    OrchestrationLane {
        worker: String,
        kind: String,
        lane: String,
    },
    #[error("worker `{worker}` runs no orchestrations: {path} does not exist")]
    #[diagnostic(
        code(scaffold::orchestration_worker),
        help(
            "orchestrations run in the worker whose handler takes ORCHESTRATION items: `scaffold worker maintenance {kind} --orchestration`"
        )
    )]
    OrchestrationWorker {
        worker: String,
        kind: String,
        path: String,
    },
    #[error("unknown role `{role}`")]
    #[diagnostic(code(scaffold::unknown_role), help("roles: {known}"))]
    UnknownRole { role: String, known: String },
    #[error("worker `{worker}` exists; --role applies to a new worker")]
    #[diagnostic(
        code(scaffold::worker_exists),
        help("drop --role: the worker's role is in workers/{worker}/Cargo.toml")
    )]
    RoleOfExistingWorker { worker: String },
    #[error("worker `{worker}` exists and is not a remote worker; --remote makes a new one")]
    #[diagnostic(
        code(scaffold::worker_exists),
        help(
            "give the kind to a new worker (`scaffold worker <new-name> <KIND> --remote`), or drop --remote to add it to this worker"
        )
    )]
    RemoteOfExistingWorker { worker: String },
    #[error("a remote worker is not generated with {option} (worker `{worker}`)")]
    #[diagnostic(
        code(scaffold::remote_refuses),
        help(
            "a remote worker holds no database: orchestrations, schedules, a producer's transaction and provider crates built on the full runtime run on a local worker; drop {option}, or give the kind to a local worker"
        )
    )]
    RemoteRefuses {
        worker: String,
        option: &'static str,
    },
    #[error("worker `{worker}` exists; --container applies to a new worker")]
    #[diagnostic(
        code(scaffold::worker_exists),
        help(
            "drop --container, or add the worker's service to deployment/local/docker-compose.full.yml by hand"
        )
    )]
    ContainerOfExistingWorker { worker: String },
    #[error("{path}: cannot wire an integration's settings into {what}")]
    #[diagnostic(
        code(scaffold::unwirable),
        help(
            "the deployment no longer has the shape `scaffold init` wrote there; nothing was written: restore it, or run without --integration and wire the settings by hand"
        )
    )]
    Unwirable { path: String, what: String },
    #[error("{path}: cannot declare the volume `{volume}`: {why}")]
    #[diagnostic(
        code(scaffold::compose_volume),
        help(
            "nothing was written: write the file's top-level `volumes:` as a block mapping (one `name:` per line), or declare the volume there by hand and run again"
        )
    )]
    ComposeVolume {
        path: String,
        volume: String,
        why: String,
    },
    #[error("which lane worker `{worker}`'s own process serves cannot be told")]
    #[diagnostic(
        code(scaffold::unknown_lane),
        help(
            "its process in scripts/dev.sh names no lane, and the spec of its first kind (the last handler in workers/{worker}/src/work_loop.rs) has no string lane to read; pass --lane"
        )
    )]
    UnknownOwnLane { worker: String },
    #[error("worker `{worker}` has no work loop (workers/{worker}/src/work_loop.rs)")]
    #[diagnostic(
        code(scaffold::no_work_loop),
        help(
            "kinds of work go to a worker that runs a work loop, such as maintenance, or to a new worker: `scaffold worker <new-name> <KIND>`"
        )
    )]
    NoWorkLoop { worker: String },
    #[error("{path} changed while the command ran")]
    #[diagnostic(code(scaffold::io), help("nothing was written; run the command again"))]
    ChangedMeanwhile { path: String },
    #[error("{path}: {message}")]
    #[diagnostic(code(scaffold::manifest_invalid), help("{help}"))]
    Manifest {
        path: String,
        message: String,
        help: String,
    },
    #[error("another scaffold run holds the repository lock: {holder}")]
    #[diagnostic(
        code(scaffold::locked),
        help(
            "waited {waited} s; let that run finish (or stop it) and run this again; SCAFFOLD_LOCK_TIMEOUT sets the wait in seconds"
        )
    )]
    Locked { holder: String, waited: u64 },
    #[error("SCAFFOLD_LOCK_TIMEOUT is `{value}`, not a number of seconds")]
    #[diagnostic(
        code(scaffold::usage),
        help("set it to a whole number of seconds up to 86400")
    )]
    LockTimeout { value: String },
    #[error("cannot finish the interrupted `scaffold {command}` in .scaffold/txn: {reason}")]
    #[diagnostic(
        code(scaffold::journal),
        help(
            "a scaffold run was stopped while it wrote, and its journal no longer matches the tree; look at .scaffold/txn/journal.json, put the listed files right by hand, then delete .scaffold/txn"
        )
    )]
    Journal { command: String, reason: String },
    /// `check`, `gates` and `hook install` never write the tree: a journal a killed
    /// generator run left stops them, naming what finishes or undoes it.
    #[error(
        "an interrupted `scaffold {command}` left its journal in .scaffold/txn: the tree may be half written"
    )]
    #[diagnostic(
        code(scaffold::journal_pending),
        help(
            "run `scaffold recover` (or the next generator command, which does it first) to finish or undo that run; `{this}` does not write the tree, so it stopped here"
        )
    )]
    JournalPending { command: String, this: String },
    /// A journal git tracks came with a commit, not from a run killed here: applying it
    /// would write whatever it names.
    #[error("`.scaffold/txn` is tracked by git: a committed journal is never applied")]
    #[diagnostic(
        code(scaffold::journal_tracked),
        help(
            "a generator journal is local to one run; remove it from git (`git rm -r --cached .scaffold/txn`, and keep `.scaffold/` in .gitignore), then delete the folder"
        )
    )]
    JournalTracked,
    /// The kinds a repository already has cannot be known: a file of `om/src` (or of a
    /// worker's `src/`) cannot be read as a regular one inside the repository.
    #[error("{reason}; refused, as the kinds that exist cannot be told without it")]
    #[diagnostic(
        code(scaffold::registry_unreadable),
        help(
            "the generator reads om/src and every worker's src/ whole to refuse a kind that exists; replace the link or special file it names with a regular file or move it away; nothing was written"
        )
    )]
    RegistryUnreadable { reason: String },
    #[error("agent/codemap.yml has no valid `name:`")]
    #[diagnostic(
        code(scaffold::manifest_invalid),
        help("run `scaffold check` to see what is wrong with agent/codemap.yml")
    )]
    NoCodemapName,
}

impl GenerateError {
    /// 1 for a refused request, 2 for a usage, configuration or I/O error (docs/reference.md#commands).
    pub fn exit_code(&self) -> u8 {
        match self {
            GenerateError::InvalidName { .. }
            | GenerateError::TargetNotEmpty { .. }
            | GenerateError::NoProjectName { .. }
            | GenerateError::NamespaceExists { .. }
            | GenerateError::NamespaceBare { .. }
            | GenerateError::FileExists { .. }
            | GenerateError::KindExists { .. }
            | GenerateError::UnknownNamespace { .. }
            | GenerateError::NoNamespace
            | GenerateError::AmbiguousNamespace { .. }
            | GenerateError::UnknownRole { .. }
            | GenerateError::RoleOfExistingWorker { .. }
            | GenerateError::RemoteOfExistingWorker { .. }
            | GenerateError::RemoteRefuses { .. }
            | GenerateError::ContainerOfExistingWorker { .. }
            | GenerateError::NoWorkLoop { .. }
            | GenerateError::UnknownProducer { .. }
            | GenerateError::AmbiguousProducer { .. }
            | GenerateError::InvalidProducer { .. }
            | GenerateError::UnfillableProducer { .. }
            | GenerateError::OrchestrationLane { .. }
            | GenerateError::OrchestrationWorker { .. }
            | GenerateError::IntegrationForeign { .. }
            | GenerateError::IntegrationUnlayered { .. }
            | GenerateError::LockDiverged { .. } => 1,
            _ => 2,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        GenerateError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// A planned file that does not parse back.
#[derive(Debug, Error, Diagnostic)]
#[error("{path} would not be valid {language}: {message}")]
#[diagnostic(
    code(scaffold::invalid_output),
    help(
        "nothing was written; the file comes from template {template}{override_note}, which renders it wrong"
    )
)]
pub struct InvalidOutput {
    pub path: String,
    pub language: &'static str,
    pub message: String,
    pub template: String,
    pub override_note: &'static str,
    #[source_code]
    pub src: NamedSource<String>,
    #[label("here")]
    pub span: SourceSpan,
}
