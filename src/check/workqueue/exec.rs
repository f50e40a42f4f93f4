//! What workers' code runs: `WorkContext`s built by handlers, and processes started with
//! `Command::new` (a shell with `-c`, or a program the worker did not build from literals).

mod commands;
mod contexts;

use commands::execs_in;
pub use commands::{Exec, ExecKind, execs};
use contexts::contexts_in;

use rayon::prelude::*;

use super::is_test_code;
use crate::check::cfg_test::item_attrs;
use crate::check::context::Context;
use crate::check::finding::Location;

/// A `WorkContext` a handler builds itself.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BuiltContext {
    pub path: String,
    pub at: Location,
    /// `NotifyShipmentHandler::handle`.
    pub owner: String,
    /// How: `WorkContext::new(…)` or `WorkContext { … }`.
    pub how: String,
}

/// Every `WorkContext` a handler builds itself.
pub fn built_contexts<'c>(ctx: &'c Context<'_>) -> &'c [BuiltContext] {
    &worker_code(ctx).contexts
}

/// What workers' code runs: one file's part (as the memo keeps it), or every file's,
/// both lists sorted by file and offset.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkerCode {
    contexts: Vec<BuiltContext>,
    execs: Vec<Exec>,
}

/// Reads the worker sources that can build a `WorkContext` (they mention it and
/// `WorkHandler`) or start a process (they mention `Command`), each parsed once for both:
/// a handler file is usually both, and was parsed once per list.
fn worker_code<'c>(ctx: &'c Context<'_>) -> &'c WorkerCode {
    ctx.worker_code.get_or_init(|| {
        let files = super::worker_sources(ctx, &["WorkContext", "Command"]);
        let parts: Vec<WorkerCode> = files
            .par_iter()
            .filter_map(|s| {
                let contexts = s.mentions("WorkContext") && s.mentions("WorkHandler");
                let execs = s.mentions("Command");
                if !contexts && !execs {
                    return None;
                }
                ctx.memo.parsed("worker-code", s, 0, |tree| WorkerCode {
                    contexts: if contexts {
                        contexts_in(s.file(), tree)
                    } else {
                        Vec::new()
                    },
                    execs: if execs {
                        execs_in(s.file(), tree)
                    } else {
                        Vec::new()
                    },
                })
            })
            .collect();
        let mut code = WorkerCode::default();
        for part in parts {
            code.contexts.extend(part.contexts);
            code.execs.extend(part.execs);
        }
        code.contexts
            .sort_by(|a, b| (&a.path, a.at.offset).cmp(&(&b.path, b.at.offset)));
        code.execs
            .sort_by(|a, b| (&a.path, a.at.offset).cmp(&(&b.path, b.at.offset)));
        code
    })
}

fn all_impls<'a>(list: &'a [syn::Item], out: &mut Vec<&'a syn::ItemImpl>) {
    for item in list {
        if is_test_code(item_attrs(item)) {
            continue;
        }
        match item {
            syn::Item::Impl(i) => out.push(i),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    all_impls(inner, out);
                }
            }
            _ => {}
        }
    }
}
