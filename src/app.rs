//! Runs a parsed command line: resolves the working directory, loads the repository,
//! runs the command and decides the exit code. Output goes through `crate::report`.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::Diagnostic;
use thiserror::Error;

use crate::check::{self, CheckOptions};
use crate::cli::{CheckArgs, Cli, ColorChoice, Command, Format, GlobalArgs};
use crate::repo::{self, Repo, RepoError};
use crate::report::{self, Style};

/// Exit codes (DESIGN.md §4).
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
    #[error("{} is only available for `scaffold check`", format_name(*format))]
    #[diagnostic(code(scaffold::format), help("use --format human or --format json"))]
    FormatUnsupported { format: Format },
    #[error("unknown rule(s)")]
    #[diagnostic(code(scaffold::unknown_rule))]
    UnknownRules {
        #[related]
        errors: Vec<check::CheckError>,
    },
    #[error("cannot write output")]
    #[diagnostic(code(scaffold::io))]
    Output(#[source] io::Error),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Queue(#[from] crate::queue::QueueError),
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Human => "--format human",
        Format::Json => "--format json",
        Format::Sarif => "--format sarif",
        Format::Github => "--format github",
    }
}

/// The directory the command runs in (`-C`), made absolute.
pub fn working_dir(global: &GlobalArgs) -> Result<PathBuf, AppError> {
    let cwd = std::env::current_dir().map_err(|source| AppError::Chdir {
        path: PathBuf::from("."),
        source,
    })?;
    match &global.chdir {
        None => Ok(cwd),
        Some(dir) => {
            let path = cwd.join(dir);
            std::fs::canonicalize(&path).map_err(|source| AppError::Chdir { path, source })
        }
    }
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
        Command::Rules => {
            refuse_check_formats(global.format)?;
            write_or_quiet(report::rule_list(out, global.format))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Explain { rule } => {
            refuse_check_formats(global.format)?;
            check::validate_rule_ids(std::slice::from_ref(&rule))
                .map_err(|errors| AppError::UnknownRules { errors })?;
            write_or_quiet(report::explain(out, global.format, &rule))?;
            Ok(ExitCode::from(EXIT_OK))
        }
        Command::Check(args) => run_check(&global, &args, out),
        Command::Queue(args) => Ok(crate::queue::run(args, &global, out)?),
    }
}

fn refuse_check_formats(format: Format) -> Result<(), AppError> {
    match format {
        Format::Sarif | Format::Github => Err(AppError::FormatUnsupported { format }),
        Format::Human | Format::Json => Ok(()),
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
    let root_display = relative_display(&cwd, &root);
    let style = style(global);
    let loaded = match Repo::load(&root) {
        Ok(r) => r,
        Err(RepoError::Manifest { problems, .. }) => {
            // Manifest problems are findings of `manifest-invalid`, shown like any other,
            // but the run is a configuration error: exit 2.
            let mut findings: Vec<_> = problems
                .iter()
                .map(check::rules::manifest_invalid::finding)
                .collect();
            findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            let outcome = check::sink::Outcome {
                files_checked: 2,
                findings,
                ..Default::default()
            };
            write_or_quiet(report::outcome(
                out,
                global.format,
                style,
                &root,
                &root_display,
                &outcome,
            ))?;
            return Ok(ExitCode::from(EXIT_ERROR));
        }
        Err(e) => return Err(e.into()),
    };
    let outcome = check::run(
        &loaded,
        &CheckOptions {
            only: args.rules.clone(),
        },
    );
    write_or_quiet(report::outcome(
        out,
        global.format,
        style,
        &root,
        &root_display,
        &outcome,
    ))?;
    Ok(ExitCode::from(if outcome.errors() > 0 {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }))
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
