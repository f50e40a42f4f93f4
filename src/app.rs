//! Runs a parsed command line: resolves the working directory, loads the repository,
//! runs the command and decides the exit code. Output goes through `crate::report`.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::Diagnostic;
use thiserror::Error;

use crate::changes::{self, ChangeSet};
use crate::check::{self, run::Done};
use crate::cli::{
    ChangeArgs, CheckArgs, Cli, ColorChoice, Command, Format, GatesArgs, GlobalArgs, HookCommand,
    SchemaKind,
};
use crate::repo::{self, Repo, RepoError};
use crate::report::{self, Style};

/// Exit codes (docs/reference.md#commands).
pub const EXIT_OK: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

#[derive(Debug, Error, Diagnostic)]
pub enum AppError {
    #[error("cannot use {} as the working directory", path.display())]
    #[diagnostic(code(scaffold::chdir), help("pass an existing directory to -C"))]
    Chdir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Repo(#[from] RepoError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Check(#[from] check::run::RunError),
    #[error("unknown rule(s)")]
    #[diagnostic(code(scaffold::unknown_rule))]
    UnknownRules {
        #[related]
        errors: Vec<check::CheckError>,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Git(#[from] crate::changes::GitError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Gate(#[from] crate::gates::GateError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hook(#[from] crate::hook::HookError),
    #[error("cannot write output")]
    #[diagnostic(code(scaffold::io))]
    Output(#[source] io::Error),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Queue(#[from] crate::queue::QueueError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Generate(Box<crate::generate::GenerateError>),
}

impl From<crate::generate::GenerateError> for AppError {
    fn from(e: crate::generate::GenerateError) -> Self {
        AppError::Generate(Box::new(e))
    }
}

impl AppError {
    /// The exit code of a run that ends in this error: a failing gate is a finding (1),
    /// everything else a usage, configuration or I/O error (2).
    pub fn exit_code(&self) -> u8 {
        match self {
            AppError::Gate(crate::gates::GateError::Failed { .. }) => EXIT_FINDINGS,
            AppError::Generate(e) => e.exit_code(),
            _ => EXIT_ERROR,
        }
    }
}

/// The directory the command runs in (`-C`), made absolute.
pub fn working_dir(global: &GlobalArgs) -> Result<PathBuf, AppError> {
    global
        .working_dir()
        .map_err(|(path, source)| AppError::Chdir { path, source })
}

pub fn style(global: &GlobalArgs) -> Style {
    let tty = io::stdout().is_terminal();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let color = match global.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => tty && !no_color,
    };
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w| *w >= 40)
        .unwrap_or(100);
    Style { color, width }
}

/// Runs the command; `Ok` carries the exit code.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode, AppError> {
    let global = cli.global;
    match cli.command {
        Command::Rules { .. } => {
            write_or_quiet(report::rule_list(out, global.format))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Explain { rule, .. } => {
            check::validate_rule_ids(std::slice::from_ref(&rule))
                .map_err(|errors| AppError::UnknownRules { errors })?;
            write_or_quiet(report::explain(out, global.format, &rule))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Check(args) => run_check(&global, &args, out),
        Command::Gates(args) => run_gates(&global, &args, out),
        Command::Hook {
            command: HookCommand::Install { force, .. },
        } => {
            let root = repo::discover(&working_dir(&global)?)?;
            refuse_pending(&root, "hook install")?;
            let path = crate::hook::install(&root, force)?;
            write_or_quiet(report::hook_installed(out, global.format, &path))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Schema { manifest } => {
            let schema = match manifest {
                SchemaKind::Codemap => crate::schema::codemap(),
                SchemaKind::GateMatrix => crate::schema::gate_matrix(),
            };
            write_or_quiet(report::json_value(out, &schema))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "scaffold", &mut buf);
            write_or_quiet(out.write_all(&buf))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Queue(args) => Ok(crate::queue::run(args, &global, out)?),
        Command::Init(args) => {
            let opts = crate::generate::init::InitOptions {
                dir: args.dir,
                name: args.name,
                dry_run: args.dry_run,
            };
            let done = crate::generate::init::init(&working_dir(&global)?, &opts, &mut waiting)?;
            say_recovered(done.recovered.as_ref());
            write_or_quiet(report::generated(out, global.format, &done))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Worker(args) => {
            let opts = crate::generate::worker::WorkerOptions {
                worker: args.worker,
                kind: args.kind,
                namespace: args.namespace,
                lane: args.lane,
                container: args.container,
                role: args.role,
                from: args.from,
                orchestration: args.orchestration,
                long_held: args.long_held,
                integration: args.integration.clone(),
                remote: args.remote,
                dry_run: args.dry_run,
            };
            let done =
                crate::generate::worker::worker(&working_dir(&global)?, &opts, &mut waiting)?;
            say_recovered(done.recovered.as_ref());
            write_or_quiet(report::generated(out, global.format, &done))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Recover { .. } => {
            let root = repo::discover(&working_dir(&global)?)?;
            let r = crate::generate::txn::recover(&root, "recover", &mut waiting)?;
            write_or_quiet(report::recovery(out, global.format, r.as_ref()))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Namespace(args) => {
            let done = crate::generate::namespace::namespace(
                &working_dir(&global)?,
                &args.ns,
                args.dry_run,
                &mut waiting,
            )?;
            say_recovered(done.recovered.as_ref());
            write_or_quiet(report::generated(out, global.format, &done))?;
            Ok(ExitCode::from(EXIT_OK))
        }
    }
}

/// Tells stderr that the run waits for another one.
fn waiting(holder: &str) {
    let _ = report::lock_waiting(&mut std::io::stderr(), holder);
}

/// Tells stderr what a command finished or undid of a killed run.
fn say_recovered(r: Option<&crate::generate::txn::Recovered>) {
    if let Some(r) = r {
        let _ = report::recovered(&mut std::io::stderr(), r);
    }
}

/// Before a command that only reads the repository at `root` does anything else: waits
/// for a generator run still writing there, and stops at a journal a killed one left
/// (`scaffold recover` finishes or undoes it). Writes nothing.
fn refuse_pending(root: &Path, command: &str) -> Result<(), AppError> {
    Ok(crate::generate::txn::refuse_pending(
        root,
        command,
        &mut waiting,
    )?)
}

fn change_set(root: &Path, args: &ChangeArgs) -> Result<Option<ChangeSet>, AppError> {
    let source = match (&args.since, args.staged) {
        (Some(rev), _) => changes::Source::Since(rev.clone()),
        (None, true) => changes::Source::Staged,
        (None, false) => return Ok(None),
    };
    Ok(Some(changes::read(root, &source)?))
}

/// For SARIF and GitHub annotations, the scaffold root's folder inside git's work tree
/// (`platform/`): code scanning and the annotations resolve a path from the checkout's
/// root. Empty outside git, or for another format.
fn git_prefix(format: Format, root: &Path) -> String {
    if !matches!(format, Format::Sarif | Format::Github) {
        return String::new();
    }
    changes::git(root, &["rev-parse", "--show-prefix"])
        .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
        .unwrap_or_default()
}

/// A path given on the command line (relative to where scaffold was started) as a
/// normalised root-relative path; `None` when it is not inside the root.
fn root_relative(root: &Path, cwd: &Path, p: impl AsRef<Path>) -> Option<String> {
    crate::repo::files::relative(root, &cwd.join(p))
        .and_then(|r| crate::repo::workspace::join_rel("", &r))
}

/// The files named on the command line as a change set: relative to the scaffold root
/// (those outside it are left out), a file that is gone counted as deleted.
fn named_changes(root: &Path, cwd: &Path, paths: &[String]) -> ChangeSet {
    let mut changes: Vec<changes::Change> = paths
        .iter()
        .filter_map(|p| {
            let rel = root_relative(root, cwd, p)?;
            let kind = if crate::repo::stat_in(root, &rel).is_some() {
                changes::ChangeKind::Modified
            } else {
                changes::ChangeKind::Deleted
            };
            Some(changes::Change { path: rel, kind })
        })
        .collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes.dedup_by(|a, b| a.path == b.path);
    ChangeSet { changes }
}

fn run_gates(
    global: &GlobalArgs,
    args: &GatesArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, AppError> {
    let cwd = working_dir(global)?;
    let root = repo::discover(&cwd)?;
    refuse_pending(&root, "gates")?;
    let loaded = match Repo::load(&root) {
        Ok(r) => r,
        Err(RepoError::Manifest { problems, .. }) => {
            let outcome = check::run::manifest_invalid(&problems);
            print_outcome(global, &root, &cwd, &outcome, out)?;
            return Ok(ExitCode::from(EXIT_ERROR));
        }
        Err(e) => return Err(e.into()),
    };
    let paths: Vec<String> = match change_set(&root, &args.changes)? {
        Some(c) => c.paths().into_iter().map(str::to_owned).collect(),
        None if !args.paths.is_empty() => args
            .paths
            .iter()
            .map(|p| {
                root_relative(&root, &cwd, p)
                    .unwrap_or_else(|| p.trim_start_matches("./").to_owned())
            })
            .collect(),
        None => changes::read(&root, &changes::Source::Staged)?
            .paths()
            .into_iter()
            .map(str::to_owned)
            .collect(),
    };
    let planned = crate::gates::plan(&loaded, &paths);
    if !args.run {
        write_or_quiet(report::gates(out, global.format, &planned))?;
        return Ok(ExitCode::from(EXIT_OK));
    }
    let result = crate::gates::run(&root, &planned, &mut |g| {
        let _ = report::gate_starting(&mut *out, g);
        let _ = out.flush();
    });
    match result {
        Ok(()) => {
            write_or_quiet(report::gates_passed(out, planned.len()))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Err(e) => {
            let _ = out.flush();
            Err(e.into())
        }
    }
}

fn run_check(
    global: &GlobalArgs,
    args: &CheckArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, AppError> {
    check::validate_rule_ids(&args.rules).map_err(|errors| AppError::UnknownRules { errors })?;
    let cwd = working_dir(global)?;
    let root = repo::discover(&cwd)?;
    refuse_pending(&root, "check")?;
    let changes = match change_set(&root, &args.changes)? {
        None if !args.paths.is_empty() => Some(named_changes(&root, &cwd, &args.paths)),
        changes => changes,
    };
    let run = check::run::Run {
        rules: args.rules.clone(),
        changes,
        staged: args.changes.staged,
        partial: !args.rules.is_empty()
            || args.changes.since.is_some()
            || args.changes.staged
            || !args.paths.is_empty(),
        agent: args.agent.clone(),
        baseline: args.baseline.as_ref().map(|p| {
            root_relative(&root, &cwd, p).unwrap_or_else(|| p.to_string_lossy().into_owned())
        }),
        write_baseline: args.write_baseline,
        ci: std::env::var("CI").is_ok_and(|v| v == "true" || v == "1"),
    };
    let (outcome, code) = match run.execute(&root)? {
        Done::Checked(outcome) => {
            let code = if outcome.errors() > 0 {
                EXIT_FINDINGS
            } else {
                EXIT_OK
            };
            (outcome, code)
        }
        // Manifest problems are findings of `manifest-invalid`, shown like any other, but
        // the run is a configuration error.
        Done::ManifestInvalid(outcome) => (outcome, EXIT_ERROR),
        Done::BaselineWritten {
            path,
            entries,
            previous,
        } => {
            write_or_quiet(report::baseline_written(
                out,
                global.format,
                &path,
                entries,
                previous,
            ))?;
            return Ok(ExitCode::from(EXIT_OK));
        }
    };
    print_outcome(global, &root, &cwd, &outcome, out)?;
    Ok(ExitCode::from(code))
}

/// Prints a check's (or a manifest's) findings in the chosen format.
fn print_outcome(
    global: &GlobalArgs,
    root: &Path,
    cwd: &Path,
    outcome: &check::sink::Outcome,
    out: &mut dyn Write,
) -> Result<(), AppError> {
    let display = relative_display(cwd, root);
    let in_git = git_prefix(global.format, root);
    let at = report::Root {
        path: root,
        display: &display,
        in_git: &in_git,
    };
    write_or_quiet(report::outcome(
        out,
        global.format,
        style(global),
        at,
        outcome,
    ))
}

/// A closed pipe (`scaffold check | head`) is not an error: stop writing quietly.
fn write_or_quiet(r: io::Result<()>) -> Result<(), AppError> {
    match r {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(AppError::Output(e)),
        _ => Ok(()),
    }
}

/// `root` relative to `cwd` with `/` separators ("." when equal).
fn relative_display(cwd: &Path, root: &Path) -> String {
    let up = cwd
        .strip_prefix(root)
        .map(|rel| rel.components().count())
        .unwrap_or(0);
    if up == 0 {
        ".".to_owned()
    } else {
        vec![".."; up].join("/")
    }
}
