//! # worker-shell-exec
//!
//! ## What it finds
//! Non-test code of a worker that starts a process with `Command::new` (std or tokio) and
//! - runs a shell with its command-string flag: `sh`/`bash`/`zsh`/`dash`/… with `-c`
//!   (or `-lc`, `-ec`, …), `cmd` with `/C`, `powershell`/`pwsh` with `-Command`, also via
//!   `env bash -c`; the flag is found in the `.arg(…)`/`.args([…])` calls on the command
//!   (chained, or on the variable holding it, in the same function); or
//! - passes as the program a string it did not build from literals: a parameter of the
//!   function, a field (`item.payload.program`, `self.binary`), or a value computed from
//!   one.
//!
//! A program built from literals — a literal, a const, `concat!`, `format!` of literals, a
//! local bound to one, a `&'static str` parameter — is fine, and so is `"sh"` anywhere
//! except as the program of a command with `-c`. A program whose origin the checker cannot
//! follow (a closure argument, a macro, a nested function) is not reported: a blind spot.
//!
//! ## Why
//! A shell string is code: anything interpolated into it — a file name, a payload field —
//! can run arbitrary commands with the worker's credentials. A program named by the item
//! lets whoever enqueues work pick what runs. Workers run only programs they name
//! themselves, with arguments passed as separate argv entries.
//!
//! ## Example
//! ```rust,ignore
//! Command::new("sh").arg("-c").arg(format!("convert {} out.png", p.file));  // worker-shell-exec
//! Command::new(&item.payload.program).spawn()?;                              // worker-shell-exec
//! ```
//!
//! ## Fix
//! Call the program directly with separate arguments:
//! `Command::new("convert").arg(&p.file).arg("out.png")`, and choose the program from an
//! allow-list of literals rather than from the item.

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::exec::{self, ExecKind};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "worker-shell-exec",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::Local,
    summary: "a worker runs a shell with -c, or a program it did not build from literals",
    severity_note: "",
    finds: "a worker runs `sh -c` / `bash -c` / `cmd /C`, or a program it did not build from literals",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for e in exec::execs(ctx) {
        let f = Finding::new(ID, e.path.clone(), e.at);
        let f = match &e.what {
            ExecKind::Shell { shell, flag } => f
                .message(format!("`{}` runs `{shell} {flag}`: a shell command string", e.owner))
                .label(format!("`{shell}` with `{flag}`"))
                .help("run the program directly with separate arguments (`Command::new(\"prog\").arg(x)`): no shell parses the worker's data"),
            ExecKind::Received(text) => f
                .message(format!(
                    "`{}` runs a program it did not build from literals: `{text}`",
                    e.owner
                ))
                .label("program from a received value")
                .help("name the program with a literal (pick it from an allow-list of literals if the item chooses among several); never run a program named by the item or the caller"),
        };
        sink.push(f);
    }
}
