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
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human, global = true)]
    pub format: Format,
    /// When to use colour (NO_COLOR is honoured; never when not a terminal).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
    /// SARIF 2.1.0 (check only).
    Sarif,
    /// GitHub Actions workflow commands (check only).
    Github,
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
    Rules,
    /// Print a rule's documentation: what it finds, why, an example, the fix.
    Explain {
        /// The rule id, e.g. import-forbidden.
        rule: String,
    },
    // scaffold:queue-wiring
    /// Operate the work queue: migrate, enqueue, status, list, retry, discard, bench.
    Queue(crate::queue::QueueArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Run only this rule (repeatable).
    #[arg(long = "rule", value_name = "ID")]
    pub rules: Vec<String>,
}
