//! # orchestration-unmapped
//!
//! ## What it finds
//! An orchestration kind (`OrchestrationKindSpec { name: "X", … }` under `om/src/`) that no
//! worker maps to its steps — no arm `"X" => …` in a `match` on the payload's
//! `orchestration` in the handler of `ORCHESTRATION` items — and an arm that maps a name
//! no `OrchestrationKindSpec` declares.
//!
//! Names are read as string literals or consts of the same file. When one is written
//! another way, it could be any name, and this rule says nothing about what it would decide
//! (a blind spot, not a guess); nor when a file of either side does not parse, a handler's
//! kind is not resolved, or the orchestration handler maps names without a `match` on
//! them. A repository that declares no `OrchestrationKindSpec` at all (made before they
//! existed) is not told its mappings are for no kind.
//!
//! ## Why
//! An orchestration kind nobody maps is started and then dies at once as "unknown
//! orchestration", its producer none the wiser; a mapping for no declared kind is steps
//! that run without the permission and the step list the spec declares, or a typo that
//! leaves the real kind unmapped.
//!
//! ## Example
//! ```rust,ignore
//! // om/src/ledger/kinds.rs
//! OrchestrationKindSpec { name: "SYNC_LEDGER", steps: &["fetch", "apply"], .. },
//! // workers/maintenance/src/handlers/orchestration.rs
//! match item.payload.orchestration.as_str() {
//!     "SYNC_LEGDER" => crate::handlers::sync_ledger::run(ctx, &input(&item.payload)?).await,
//!     other => Err(WorkError::permanent(format!("unknown orchestration `{other}`"))),
//! }
//! ```
//!
//! ## Fix
//! Map the kind to its steps in the orchestration handler (`scaffold worker maintenance
//! <KIND> --orchestration` writes the spec, the steps, the arm and a test), correct the
//! arm's name, or delete the spec of a kind nothing starts any more.

use std::collections::HashSet;

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::orchestrations;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "orchestration-unmapped",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "an orchestration kind no worker maps to its steps, or a step mapping for no declared kind",
    severity_note: "",
    finds: "an orchestration kind (`OrchestrationKindSpec`) no worker maps to its steps, or a step mapping for no declared kind",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let o = orchestrations::find(ctx);
    let specs = o.specs.as_deref().unwrap_or_default();
    let arms = o.mapped.as_deref().unwrap_or_default();
    let names = |v: &[orchestrations::Named]| -> Option<HashSet<String>> {
        v.iter().map(|n| n.name.clone()).collect()
    };
    let declared = o.specs.as_deref().and_then(names).filter(|d| !d.is_empty());
    let mapped = o.mapped.as_deref().and_then(names);
    if let Some(mapped) = &mapped {
        let mut seen = HashSet::new();
        for spec in specs {
            let Some(name) = spec.name.as_deref() else {
                continue;
            };
            if mapped.contains(name) || !seen.insert(name.to_owned()) {
                continue;
            }
            sink.push(
                Finding::new(ID, spec.path.clone(), spec.at)
                    .message(format!(
                        "orchestration kind `{name}` is declared but no worker maps it to its steps"
                    ))
                    .label("no step mapping")
                    .help(format!(
                        "map it in the ORCHESTRATION handler: `\"{name}\" => …::run(ctx, &input)`, as `scaffold worker maintenance {name} --orchestration` writes it; or delete the spec if nothing starts `{name}` any more"
                    )),
            );
        }
    }
    if let Some(declared) = &declared {
        for arm in arms {
            let Some(name) = arm.name.as_deref() else {
                continue;
            };
            if declared.contains(name) {
                continue;
            }
            sink.push(
                Finding::new(ID, arm.path.clone(), arm.at)
                    .message(format!(
                        "`{name}` is mapped to steps, but no OrchestrationKindSpec declares it"
                    ))
                    .label("mapped for no kind")
                    .help(format!(
                        "declare `OrchestrationKindSpec {{ name: \"{name}\", … }}` in its namespace's kinds.rs (registered in ORCHESTRATION_KINDS), or correct the name to the kind's"
                    )),
            );
        }
    }
}
