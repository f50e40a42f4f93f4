//! The command line (clap derive). Parsing only; `crate::app` runs the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "scaffold",
    version,
    about = "Generator, checker and work-queue runtime for Rust monorepos that run background workers",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Run as if scaffold was started in <DIR>.
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub chdir: Option<PathBuf>,
    /// The output format, read from the command's own `--format` (each command offers
    /// the formats it has: `check` four, `schema` and `completions` none, the rest human
    /// and json) by [`Cli::parse_args`].
    #[arg(skip)]
    pub format: Format,
    /// When to use colour (NO_COLOR is honoured; never when not a terminal).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
}

/// Whether the command line `args` (without the program) asks for `--format json`: read
/// before clap, for the error of a command line clap refuses.
pub fn asks_for_json<I, S>(args: I) -> bool
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut format = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.as_ref();
        if arg == "--" {
            break;
        }
        if arg == "--format" {
            format = args.next().map(|v| v.as_ref() == "json");
        } else if let Some(v) = arg.to_str().and_then(|a| a.strip_prefix("--format=")) {
            format = Some(v == "json");
        }
    }
    format.unwrap_or(false)
}

impl GlobalArgs {
    /// The directory the command runs in (`-C`, made absolute and canonical), or the path
    /// that could not be used and why.
    pub fn working_dir(&self) -> Result<PathBuf, (PathBuf, std::io::Error)> {
        let cwd = std::env::current_dir().map_err(|e| (PathBuf::from("."), e))?;
        match &self.chdir {
            None => Ok(cwd),
            Some(dir) => {
                let path = cwd.join(dir);
                std::fs::canonicalize(&path).map_err(|e| (path, e))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Human,
    Json,
    /// SARIF 2.1.0 (check only).
    Sarif,
    /// GitHub Actions workflow commands (check only).
    Github,
}

/// The formats of every command but `check`, `schema` and `completions`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum PlainFormat {
    #[default]
    Human,
    Json,
}

impl From<PlainFormat> for Format {
    fn from(f: PlainFormat) -> Self {
        match f {
            PlainFormat::Human => Format::Human,
            PlainFormat::Json => Format::Json,
        }
    }
}

/// `--format human|json`.
#[derive(Debug, Clone, Copy, Args)]
pub struct PlainOutput {
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlainFormat::Human)]
    pub format: PlainFormat,
}

/// `check`'s `--format human|json|sarif|github`.
#[derive(Debug, Clone, Copy, Args)]
pub struct CheckOutput {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

impl Cli {
    /// Parses the command line and reads the command's `--format` into
    /// [`GlobalArgs::format`].
    pub fn parse_args() -> Result<Self, clap::Error> {
        let mut cli = <Self as Parser>::try_parse()?;
        cli.global.format = cli.command.format();
        Ok(cli)
    }
}

impl Command {
    /// The format this command was asked for (human where it has no `--format`).
    pub fn format(&self) -> Format {
        match self {
            Command::Check(a) => a.output.format,
            Command::Rules { output }
            | Command::Explain { output, .. }
            | Command::Hook {
                command: HookCommand::Install { output, .. },
            }
            | Command::Recover { output } => output.format.into(),
            Command::Gates(a) => a.output.format.into(),
            Command::Init(a) => a.output.format.into(),
            Command::Namespace(a) => a.output.format.into(),
            Command::Worker(a) => a.output.format.into(),
            Command::Queue(a) => a.format.into(),
            Command::Schema { .. } | Command::Completions { .. } => Format::Human,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the repository against its manifests and the rule catalogue.
    Check(CheckArgs),
    /// List every rule: id, default severity, summary.
    Rules {
        #[command(flatten)]
        output: PlainOutput,
    },
    /// Print a rule's documentation: what it finds, why, an example, the fix.
    Explain {
        /// The rule id, e.g. import-forbidden.
        rule: String,
        #[command(flatten)]
        output: PlainOutput,
    },
    /// The verification gates a change must run (and, with --run, run them).
    Gates(GatesArgs),
    /// Git hooks.
    Hook {
        #[command(subcommand)]
        command: HookCommand,
    },
    /// Print a JSON Schema of a manifest (for editors); JSON is its only output.
    Schema {
        #[arg(value_enum)]
        manifest: SchemaKind,
    },
    /// Print shell completions (a script: no other output).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Create a new repository in the reference shape (workspace, om, workers, runtime,
    /// deployment), green from its first minute.
    Init(InitArgs),
    /// Add a namespace of kinds: om/src/<ns>/ and its module line in om, and its service,
    /// services/<ns>/ (a workspace member whose manager's writes start the work).
    Namespace(NamespaceArgs),
    /// Add a kind of work to a worker (creating the worker when it does not exist): the
    /// kind's spec, payload, handler, run-twice test, and the worker's wiring.
    Worker(WorkerArgs),
    /// Finish (or undo) a generator run that was killed while it wrote, from its journal
    /// in .scaffold/txn/; `check`, `gates` and `hook install` stop until it is done.
    Recover {
        #[command(flatten)]
        output: PlainOutput,
    },
    // scaffold:queue-wiring
    /// Operate the work queue: migrate, enqueue, status, list, show, workers, cancel,
    /// signal, release, drain, retry, discard, serve, operator, enroll, revoke,
    /// put-artifact, get-artifact, bench.
    Queue(crate::queue::QueueArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    Codemap,
    GateMatrix,
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Write .git/hooks/pre-commit running `scaffold check --staged`.
    Install {
        /// Replace a pre-commit hook scaffold did not write.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        output: PlainOutput,
    },
}

/// Where a change set comes from.
#[derive(Debug, Clone, Args)]
pub struct ChangeArgs {
    /// Changes between the merge base of <REV> and HEAD, and the work tree.
    #[arg(long, value_name = "REV", conflicts_with = "staged")]
    pub since: Option<String>,
    /// The changes staged in the index.
    #[arg(long)]
    pub staged: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Run only this rule (repeatable).
    #[arg(long = "rule", value_name = "ID")]
    pub rules: Vec<String>,
    #[command(flatten)]
    pub changes: ChangeArgs,
    /// Check ownership as this agent of agent/codemap.yml (needs --since or --staged).
    #[arg(long = "as", value_name = "AGENT")]
    pub agent: Option<String>,
    /// The baseline file (default agent/baseline.yml, when it exists).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<std::path::PathBuf>,
    /// Write today's findings to the baseline (under CI=true it may only shrink).
    #[arg(long)]
    pub write_baseline: bool,
    /// Report per-file findings only in these files (as `--staged` does for the staged
    /// ones); repo-wide rules still see the whole tree. The pre-commit framework passes
    /// the files of the commit, or every file under `--all-files`.
    #[arg(value_name = "PATH", conflicts_with_all = ["since", "staged"])]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub output: CheckOutput,
}

#[derive(Debug, Clone, Args)]
pub struct GatesArgs {
    #[command(flatten)]
    pub changes: ChangeArgs,
    /// Changed paths to consider instead of a git change set.
    #[arg(value_name = "PATH", conflicts_with_all = ["since", "staged"])]
    pub paths: Vec<String>,
    /// Run the gates in order, stopping at the first failure.
    #[arg(long)]
    pub run: bool,
    #[command(flatten)]
    pub output: PlainOutput,
}

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The directory to create (or an empty one).
    pub dir: PathBuf,
    /// The project name (crate prefix and env prefix); default: the directory's name.
    #[arg(long)]
    pub name: Option<String>,
    /// Print the plan as unified diffs; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output: PlainOutput,
}

#[derive(Debug, Clone, Args)]
pub struct NamespaceArgs {
    /// The namespace (lower snake case, e.g. shipping).
    pub ns: String,
    /// Print the plan as unified diffs; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output: PlainOutput,
}

#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    /// The worker (lower kebab case, e.g. maintenance).
    pub worker: String,
    /// The kind (UPPER_SNAKE_CASE, e.g. NOTIFY_SHIPMENT).
    pub kind: String,
    /// The namespace the kind belongs to (inferred when the repository has exactly one).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Give the kind its own lane (and the worker a process on it).
    #[arg(long)]
    pub lane: Option<String>,
    /// Also run a new worker as a service in the local compose file.
    #[arg(long)]
    pub container: bool,
    /// The role of a new worker (default maintenance).
    #[arg(long)]
    pub role: Option<String>,
    /// The write that starts the work, `<Manager>::<method>` of the namespace's service
    /// (inferred when the service has one write); `none` when no write starts it.
    #[arg(long, value_name = "MANAGER::METHOD", conflicts_with = "orchestration")]
    pub from: Option<String>,
    /// A long-running kind: an OrchestrationKindSpec whose named steps the worker's
    /// orchestration handler maps (no lane of its own).
    #[arg(long, conflicts_with = "long_held")]
    pub orchestration: bool,
    /// A long-running work kind whose lease the worker renews while it works in
    /// checkpointed chunks (may have its own lane).
    #[arg(long)]
    pub long_held: bool,
    /// The outside provider the handler calls, through a client under
    /// `integrations/<provider>/` (made once, reused by the provider's other kinds).
    #[arg(
        long,
        value_name = "PROVIDER",
        conflicts_with_all = ["orchestration", "long_held"]
    )]
    pub integration: Option<String>,
    /// A new remote worker: it reaches the queue through the coordinator
    /// (`platform/coordinator/`, made with the first one) and holds no database.
    #[arg(long, conflicts_with_all = ["orchestration", "integration"])]
    pub remote: bool,
    /// Print the plan as unified diffs; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output: PlainOutput,
}
