#![allow(clippy::print_stdout, clippy::print_stderr)]
use std::io::{self, Write};
use std::process::ExitCode;

use scaffold::app;
use scaffold::cli::Cli;

/// Parsing thousands of files with syn is allocation-bound; glibc malloc serialises
/// threads on its arenas, mimalloc does not (measured in benches/check-synthetic.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // syn parses recursively; deeply nested (generated) code needs more than the default
    // 2 MiB of stack on the parsing threads. Nesting past the checker's limit is refused
    // before syn sees it, so this bounds the depth that can reach syn.
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(64 << 20)
        .build_global();
    let cli = match Cli::parse_args() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let code = if e.use_stderr() {
                app::EXIT_ERROR
            } else {
                app::EXIT_OK
            };
            // A script that asked for JSON gets its usage error as JSON too (stdout, exit 2).
            if e.use_stderr() && scaffold::cli::asks_for_json(std::env::args_os().skip(1)) {
                let mut out = io::stdout().lock();
                let _ = scaffold::report::queue::print_usage_error(&mut out, &e);
                let _ = out.flush();
            } else {
                let _ = e.print();
            }
            return ExitCode::from(code);
        }
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || matches!(cli.global.color, scaffold::cli::ColorChoice::Never);
    let style = app::style(&cli.global);
    // Human and GitHub output goes through the terminal guard: nothing a repository holds
    // can act on the reader's terminal. ESC passes only where the check draws its own
    // colours (every repository string in it is escaped before it is drawn).
    let guarded = matches!(
        cli.global.format,
        scaffold::cli::Format::Human | scaffold::cli::Format::Github
    );
    let colour =
        style.color && !no_color && matches!(cli.command, scaffold::cli::Command::Check(_));
    let stdout = io::stdout();
    let buffered = io::BufWriter::new(stdout.lock());
    let mut out: Box<dyn Write> = if guarded {
        Box::new(scaffold::report::inert::Terminal::new(buffered, colour))
    } else {
        Box::new(buffered)
    };
    let result = app::run(cli, &mut out);
    let flushed = out.flush();
    match result {
        Ok(code) => {
            if let Err(e) = flushed
                && e.kind() != io::ErrorKind::BrokenPipe
            {
                let _ = writeln!(io::stderr(), "error: cannot write output: {e}");
                return ExitCode::from(app::EXIT_ERROR);
            }
            code
        }
        Err(e) => {
            let code = e.exit_code();
            let style = scaffold::report::Style {
                color: style.color && !no_color,
                width: style.width,
            };
            let _ = scaffold::report::error(&mut io::stderr(), &e, &style);
            ExitCode::from(code)
        }
    }
}
