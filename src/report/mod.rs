//! Every byte scaffold prints goes through here: findings in four formats, the rule list,
//! rule documentation. Rules and the runtime never print.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod github;
mod human;
pub mod inert;
mod json;
pub mod queue;
mod sarif;

use std::io::{self, Write};
use std::path::Path;

use crate::check::catalogue;
use crate::check::finding::Finding;
use crate::check::rules;
use crate::check::sink::Outcome;
use crate::cli::Format;

/// How human output is drawn.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub width: usize,
}

/// Where a check's paths are reported from: the repository root (to show source
/// snippets), how it is named in JSON (relative to where scaffold was started), and its
/// folder inside git's work tree (`platform/`, or empty), which SARIF's and GitHub's paths
/// start with.
#[derive(Debug, Clone, Copy)]
pub struct Root<'a> {
    pub path: &'a Path,
    pub display: &'a str,
    pub in_git: &'a str,
}

/// Prints a check outcome.
pub fn outcome(
    out: &mut dyn Write,
    format: Format,
    style: Style,
    root: Root<'_>,
    outcome: &Outcome,
) -> io::Result<()> {
    match format {
        Format::Human => human::outcome(out, style, root.path, outcome),
        Format::Json => json::outcome(out, root.display, outcome),
        Format::Sarif => sarif::outcome(out, root.in_git, outcome),
        Format::Github => github::outcome(out, root.in_git, outcome),
    }
}

/// `scaffold rules`.
pub fn rule_list(out: &mut dyn Write, format: Format) -> io::Result<()> {
    let list = catalogue::rules();
    match format {
        Format::Json => json::rule_list(out, list),
        _ => {
            let w = list.iter().map(|r| r.id.len()).max().unwrap_or(0);
            for r in list {
                writeln!(
                    out,
                    "{:<w$}  {:<7}  {}",
                    r.id,
                    r.severity.as_str(),
                    r.summary
                )?;
            }
            writeln!(
                out,
                "\n{} rules. `scaffold explain <id>` prints a rule's documentation.",
                list.len()
            )
        }
    }
}

/// `scaffold explain <id>`; the id is known to exist.
pub fn explain(out: &mut dyn Write, format: Format, id: &str) -> io::Result<()> {
    let (Some(info), Some(rule)) = (catalogue::rule(id), rules::get(id)) else {
        return Ok(());
    };
    let doc = rule.doc();
    match format {
        Format::Json => json::explain(out, info, &doc),
        _ => {
            write!(out, "{doc}")?;
            writeln!(
                out,
                "\nDefault severity: {}. Change it with `policy: {{{}: off|warning|error}}` in agent/codemap.yml.",
                info.severity, info.id
            )
        }
    }
}

/// `s` with every character a terminal acts on (ESC, CR, a raw newline in a file name, a
/// bidirectional override, …) written as an escape, so nothing a file name or a manifest
/// holds can move the cursor, recolour, reorder or forge lines on the reader's terminal;
/// `\n` stays when `keep_newlines` (help text). See [`inert`].
pub fn escape_controls(s: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    inert::escape(s, keep_newlines, false)
}

/// `scaffold gates` (without --run).
pub fn gates(
    out: &mut dyn Write,
    format: Format,
    gates: &[crate::gates::PlannedGate],
) -> io::Result<()> {
    if format == Format::Json {
        return json::gates(out, gates);
    }
    if gates.is_empty() {
        return writeln!(out, "no gates required for these changes");
    }
    let names: Vec<_> = gates
        .iter()
        .map(|g| escape_controls(&g.gate, false))
        .collect();
    let w = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for (g, name) in gates.iter().zip(&names) {
        writeln!(
            out,
            "{name:<w$}  {}",
            escape_controls(&crate::repo::gate_matrix::join_argv(&g.command), false)
        )?;
        writeln!(
            out,
            "{:<w$}  triggered by: {}",
            "",
            escape_controls(&g.triggered_by.join(", "), false)
        )?;
    }
    writeln!(
        out,
        "\n{} gate(s). `scaffold gates --run` runs them in this order.",
        gates.len()
    )
}

/// Announces a gate `--run` is about to start.
pub fn gate_starting(out: &mut dyn Write, g: &crate::gates::PlannedGate) -> io::Result<()> {
    writeln!(
        out,
        "==> gate {}: {}",
        escape_controls(&g.gate, false),
        escape_controls(&crate::repo::gate_matrix::join_argv(&g.command), false)
    )
}

pub fn gates_passed(out: &mut dyn Write, n: usize) -> io::Result<()> {
    writeln!(out, "ok: {n} gate(s) passed")
}

pub fn hook_installed(out: &mut dyn Write, format: Format, path: &Path) -> io::Result<()> {
    if format == Format::Json {
        return json::value(
            out,
            &serde_json::json!({"installed": path.display().to_string()}),
        );
    }
    writeln!(
        out,
        "installed {} (runs `scaffold check --staged`)",
        path.display()
    )
}

pub fn baseline_written(
    out: &mut dyn Write,
    format: Format,
    file: &str,
    entries: usize,
    before: usize,
) -> io::Result<()> {
    if format == Format::Json {
        return json::value(
            out,
            &serde_json::json!({"baseline": file, "entries": entries, "previous_entries": before}),
        );
    }
    writeln!(out, "wrote {file}: {entries} entries (was {before})")
}

/// Any JSON document, pretty-printed (schemas).
pub fn json_value(out: &mut dyn Write, v: &serde_json::Value) -> io::Result<()> {
    inert::to_writer_pretty(&mut *out, v)?;
    writeln!(out)
}

/// The summary line shared by the human and GitHub formats.
fn summary_line(o: &Outcome) -> String {
    let (e, w) = (o.errors(), o.warnings());
    let plural = |n: usize, s: &str| format!("{n} {s}{}", if n == 1 { "" } else { "s" });
    let mut extra = Vec::new();
    if o.suppressed > 0 {
        extra.push(format!("{} suppressed", o.suppressed));
    }
    if o.baselined > 0 {
        extra.push(format!("{} baselined", o.baselined));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(" ({})", extra.join(", "))
    };
    if e == 0 && w == 0 {
        format!("no findings in {}{extra}", plural(o.files_checked, "file"))
    } else {
        format!(
            "{}, {} in {}{extra}",
            plural(e, "error"),
            plural(w, "warning"),
            plural(o.files_checked, "file")
        )
    }
}

fn sorted(o: &Outcome) -> impl Iterator<Item = &Finding> {
    o.findings.iter()
}

/// Writes an error as miette renders it: with colour only when `style` allows it, wrapped
/// at its width. What `main` prints when a command fails.
pub fn error(err: &mut dyn Write, e: &dyn miette::Diagnostic, style: &Style) -> io::Result<()> {
    let render = |color: bool| {
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(style.width);
        let mut s = String::new();
        if handler.render_report(&mut s, e).is_err() {
            s = format!("error: {e}\n");
        }
        s
    };
    // An error's text can hold a repository's strings (a manifest's key, a journal's
    // command): rendered without colour, every character a terminal acts on is escaped.
    // In colour only when that text holds none (miette's own escapes are its colours).
    let plain = render(false);
    let escaped = inert::escape(&plain, true, true);
    if style.color && matches!(escaped, std::borrow::Cow::Borrowed(_)) {
        return write!(err, "{}", render(true));
    }
    write!(err, "{escaped}")
}

/// Said on stderr (stdout stays the command's own output) while a run waits for the
/// repository lock.
pub fn lock_waiting(err: &mut dyn Write, holder: &str) -> io::Result<()> {
    writeln!(
        err,
        "note: waiting for the repository lock, held by {}",
        escape_controls(holder, false)
    )
}

/// `scaffold recover`: what it finished or undid, or that there was nothing to do.
pub fn recovery(
    out: &mut dyn Write,
    format: Format,
    r: Option<&crate::generate::txn::Recovered>,
) -> io::Result<()> {
    use crate::generate::txn::Outcome;
    if format == Format::Json {
        let doc = match r {
            None => serde_json::json!({"recovered": null}),
            Some(r) => serde_json::json!({"recovered": {
                "command": r.command,
                "pid": r.pid,
                "outcome": match r.outcome {
                    Outcome::Finished => "finished",
                    Outcome::RolledBack => "rolled_back",
                },
                "files": r.files,
            }}),
        };
        return json::value(out, &doc);
    }
    match r {
        None => writeln!(
            out,
            "nothing to recover: no generator run was interrupted here"
        ),
        Some(r) => recovered(out, r),
    }
}

/// Said on stderr when a command finished or undid a run that was killed while writing.
pub fn recovered(err: &mut dyn Write, r: &crate::generate::txn::Recovered) -> io::Result<()> {
    use crate::generate::txn::Outcome;
    let who = match r.pid {
        Some(pid) => format!("`scaffold {}` (pid {pid})", r.command),
        None => format!("`scaffold {}`", r.command),
    };
    let who = escape_controls(&who, false);
    match r.outcome {
        Outcome::Finished => writeln!(
            err,
            "note: {who} was stopped while it wrote; finished writing its {} file(s)",
            r.files
        ),
        Outcome::RolledBack => writeln!(
            err,
            "note: {who} was stopped before it finished; the tree is as it was before it ran"
        ),
    }
}

/// More files than fit a screen (a new repository's hundred) are listed by top folder with
/// a count, so the commands printed after them stay in view; `--format json` lists each.
const LISTED_ONE_BY_ONE: usize = 20;

fn compact(paths: &[String]) -> Vec<String> {
    if paths.len() <= LISTED_ONE_BY_ONE {
        return paths.to_vec();
    }
    let mut folders: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut top: Vec<String> = Vec::new();
    for p in paths {
        match p.split_once('/') {
            Some((folder, _)) => *folders.entry(folder).or_default() += 1,
            None => top.push(p.clone()),
        }
    }
    top.extend(
        folders
            .into_iter()
            .map(|(f, n)| format!("{f}/ ({n} file{})", if n == 1 { "" } else { "s" })),
    );
    top
}

/// Which agents own the files a generator command wrote: each agent's part, which passes
/// `scaffold check --as <agent>` on its own.
fn owners(out: &mut dyn Write, owners: &crate::generate::owners::Owners) -> io::Result<()> {
    use crate::generate::owners::Owners;
    match owners {
        Owners::NoAgents => Ok(()),
        Owners::Unread => writeln!(
            out,
            "owners: unknown: agent/codemap.yml does not parse (scaffold check says why)"
        ),
        Owners::Known {
            by_agent,
            generated,
            unowned,
        } => {
            writeln!(out, "owners (agent/codemap.yml):")?;
            for (agent, paths) in by_agent {
                writeln!(
                    out,
                    "  {}: {}",
                    escape_controls(agent, false),
                    compact(paths).join(", ")
                )?;
            }
            if !generated.is_empty() {
                writeln!(out, "  generated: {}", compact(generated).join(", "))?;
            }
            if !unowned.is_empty() {
                writeln!(
                    out,
                    "  no agent may write (file-unowned): {}",
                    compact(unowned).join(", ")
                )?;
            }
            if by_agent.len() > 1 {
                writeln!(
                    out,
                    "  each agent's part, staged alone, passes `scaffold check --staged --as <agent>`"
                )?;
            }
            Ok(())
        }
    }
}

fn owners_json(owners: &crate::generate::owners::Owners) -> serde_json::Value {
    use crate::generate::owners::Owners;
    match owners {
        Owners::NoAgents => serde_json::Value::Null,
        Owners::Unread => serde_json::Value::from("unread"),
        Owners::Known {
            by_agent,
            generated,
            unowned,
        } => serde_json::json!({
            "agents": by_agent,
            "generated": generated,
            "unowned": unowned,
        }),
    }
}

/// What a generator command created and changed (with `--dry-run`: the plan's diffs first),
/// and the commands to run next.
pub fn generated(
    out: &mut dyn Write,
    format: Format,
    done: &crate::generate::Generated,
) -> io::Result<()> {
    if format == Format::Json {
        let mut v = serde_json::json!({
            "version": 1,
            "command": done.command,
            "dry_run": done.dry_run,
            "created": done.created,
            "changed": done.changed,
            "next": done.next,
            "owners": owners_json(&done.owners),
        });
        if let Some(diff) = &done.diff {
            v["diff"] = serde_json::Value::from(diff.as_str());
        }
        return json::value(out, &v);
    }
    if let Some(diff) = &done.diff {
        out.write_all(diff.as_bytes())?;
        writeln!(out)?;
    }
    let verb = if done.dry_run {
        "would create"
    } else {
        "created"
    };
    writeln!(out, "{verb} {} file(s):", done.created.len())?;
    for line in compact(&done.created) {
        writeln!(out, "  {line}")?;
    }
    if !done.changed.is_empty() {
        let verb = if done.dry_run {
            "would change"
        } else {
            "changed"
        };
        writeln!(out, "{verb} {} file(s):", done.changed.len())?;
        for p in &done.changed {
            writeln!(out, "  {p}")?;
        }
    }
    match &done.formatted {
        crate::generate::rustfmt::Formatted::NoRustfmt => writeln!(
            out,
            "note: rustfmt is not on PATH; the Rust files are as the templates wrote them"
        )?,
        crate::generate::rustfmt::Formatted::Untrusted(path) => writeln!(
            out,
            "note: rustfmt was not run: {} belongs to another user and would choose its binary; the Rust files are as the templates wrote them",
            escape_controls(path, false)
        )?,
        _ => {}
    }
    owners(out, &done.owners)?;
    if done.dry_run {
        writeln!(out, "dry run: nothing was written")?;
    } else {
        writeln!(out, "next:")?;
        for n in &done.next {
            writeln!(out, "  {n}")?;
        }
    }
    Ok(())
}
