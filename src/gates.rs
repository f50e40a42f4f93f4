//! `scaffold gates`: which verification gates a change requires, with `{package}`
//! resolved to the Cargo package owning each changed path.

use std::path::Path;
use std::process::Command;

use miette::Diagnostic;
use thiserror::Error;

use crate::repo::Repo;

/// One gate to run, after `{package}` substitution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedGate {
    pub gate: String,
    pub command: Vec<String>,
    pub triggered_by: Vec<String>,
}

/// Gates required by `paths`, in gate-matrix order (then by package), deduplicated by
/// command, each with the sorted paths that required it.
pub fn plan(repo: &Repo, paths: &[String]) -> Vec<PlannedGate> {
    let Some((gm, _)) = &repo.gate_matrix else {
        return Vec::new();
    };
    let mut out: Vec<PlannedGate> = Vec::new();
    for gate in &gm.gates {
        let needs_package = gate.argv.iter().any(|a| a.contains("{package}"));
        for path in paths {
            let required = gm.rules.iter().any(|r| {
                r.require.iter().any(|(g, _)| *g == gate.name)
                    && r.paths.iter().any(|g| g.is_match(path))
            });
            if !required {
                continue;
            }
            let command: Vec<String> = if needs_package {
                let Some(k) = repo.workspace.crate_of(path) else {
                    continue;
                };
                let package = &repo.workspace.crates[k].package;
                gate.argv
                    .iter()
                    .map(|a| a.replace("{package}", package))
                    .collect()
            } else {
                gate.argv.clone()
            };
            match out
                .iter_mut()
                .find(|p| p.gate == gate.name && p.command == command)
            {
                Some(p) => p.triggered_by.push(path.clone()),
                None => out.push(PlannedGate {
                    gate: gate.name.clone(),
                    command,
                    triggered_by: vec![path.clone()],
                }),
            }
        }
    }
    let order = |name: &str| {
        gm.gates
            .iter()
            .position(|g| g.name == name)
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| (order(&a.gate), &a.command).cmp(&(order(&b.gate), &b.command)));
    for p in &mut out {
        p.triggered_by.sort();
        p.triggered_by.dedup();
    }
    out
}

#[derive(Debug, Error, Diagnostic)]
pub enum GateError {
    #[error("gate `{gate}` failed: `{command}` exited with {status}")]
    #[diagnostic(
        code(scaffold::gate_failed),
        help("fix what it reports, then run `scaffold gates --run` again")
    )]
    Failed {
        gate: String,
        command: String,
        status: String,
    },
    #[error("gate `{gate}` could not start `{program}`")]
    #[diagnostic(
        code(scaffold::gate_spawn),
        help("install `{program}` or correct the gate's `run` in agent/manifests/gate-matrix.yml")
    )]
    Spawn {
        gate: String,
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a regular file: the gates' cargo and rustup would block reading it")]
    #[diagnostic(
        code(scaffold::gate_blocked),
        help("replace it with a regular file (or remove it); no gate was run")
    )]
    Blocked { path: String },
}

/// Runs each gate's argv in `root` (no shell), output streamed to ours, stopping at the
/// first failure. `before` is called with each gate before it starts.
pub fn run(
    root: &Path,
    gates: &[PlannedGate],
    before: &mut dyn FnMut(&PlannedGate),
) -> Result<(), GateError> {
    if !gates.is_empty()
        && let Some(path) = crate::repo::inside::blocking_tool_config(root)
    {
        return Err(GateError::Blocked {
            path: path.display().to_string(),
        });
    }
    for g in gates {
        before(g);
        let Some((program, args)) = g.command.split_first() else {
            continue;
        };
        let status = Command::new(program)
            .args(args)
            .current_dir(root)
            .status()
            .map_err(|source| GateError::Spawn {
                gate: g.gate.clone(),
                program: program.clone(),
                source,
            })?;
        if !status.success() {
            return Err(GateError::Failed {
                gate: g.gate.clone(),
                command: crate::repo::gate_matrix::join_argv(&g.command),
                status: status
                    .code()
                    .map_or_else(|| "a signal".to_owned(), |c| format!("status {c}")),
            });
        }
    }
    Ok(())
}
