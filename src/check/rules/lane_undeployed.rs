//! # lane-undeployed
//!
//! ## What it finds
//! A lane named by a registered kind's spec (`lane: "bulk"`, or `default` when the spec
//! leaves it to `..WorkKindSpec::DEFAULT`) that some place workers run has no worker process
//! on. The places are `scripts/dev.sh`, the local compose file
//! (`deployment/local/docker-compose*.yml`) and Terraform (`deployment/terraform/**/*.tf`);
//! a place the repository does not have at all is not required. The finding names exactly
//! the places that lack the lane. The local compose file runs the workers someone chose to
//! containerise (`scaffold worker --container`): there, a lane is required only when a
//! worker whose handlers take the lane's kinds has a service in the file.
//!
//! A process serves a lane when it runs `serve --lane <lane>` or has its worker's own lane
//! variable (`<NAME>_WORKER_LANE=<lane>` for the maintenance worker, `<NAME>_<WORKER>_LANE`
//! for another) in its environment; a plain `serve` of a worker under `workers/` serves the
//! lanes of the kinds its handlers take (what its loop claims on when told no lane), and
//! one of no known worker serves `default`. In
//! compose, a service with no command whose Dockerfile's `CMD` runs `serve` is a worker; in
//! Terraform, so is an instance of the `service` module. A lane given by a variable
//! (`"$LANE"`, `var.lane`) could be any lane, so that place is not checked.
//!
//! A file of a place that cannot be read (a symlink, no permission, over 32 MiB) or does
//! not parse (compose YAML, Terraform HCL) is a finding too: what the place runs is then
//! unknown, and no lane is checked against it until the file is fixed.
//!
//! ## Why
//! Items of a lane nobody serves are enqueued and never claimed. A lane that works on a
//! laptop (dev.sh) but has no process in Terraform fails only in production, and the other
//! way round the local stack silently drops the kind.
//!
//! ## Example
//! ```rust,ignore
//! WorkKindSpec { name: "REINDEX", permission: "search.reindex", lane: "bulk", ..WorkKindSpec::DEFAULT },
//! // scripts/dev.sh starts only `serve`; compose has no service with ACME_WORKER_LANE=bulk
//! ```
//!
//! ## Fix
//! Add a replica of the worker on the lane in each missing place: in dev.sh
//! `serve --lane bulk` with a metrics port of its own, in compose and Terraform a second
//! service / module instance of the worker's image with `<NAME>_WORKER_LANE=bulk`
//! (`scaffold worker <worker> <KIND> --lane bulk` writes all three).

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;
use super::super::workqueue::lanes::Unknown;
use super::super::workqueue::{Model, lanes};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "lane-undeployed",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a spec's lane with no worker process on it in dev.sh, compose or Terraform",
    severity_note: "",
    finds: "a spec's lane with no worker process in dev.sh, compose or Terraform (names the places that lack it)",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let m = Model::of(ctx);
    let kinds = m.registry.kinds();
    if kinds.is_empty() {
        return;
    }
    let places = lanes::places(ctx.repo);
    if !places.iter().any(|p| p.exists) {
        return;
    }
    for place in &places {
        for (path, why) in &place.unknown {
            sink.push(unknown(&place.name, path, why));
        }
    }
    let mut done: Vec<String> = Vec::new();
    for k in &kinds {
        let Some(lane) = &k.lane else { continue };
        if done.contains(lane) {
            continue;
        }
        done.push(lane.clone());
        let handled_by = workers_handling(m, &kinds, lane);
        let missing: Vec<&str> = places
            .iter()
            .filter(|p| p.exists && !p.serves(lane, handled_by.as_deref()))
            .filter(|p| match (&p.workers, &handled_by) {
                // A place where each worker is optional needs the lane only when it runs a
                // worker that handles it (or nobody knows who handles it).
                (Some(runs), Some(handlers)) => handlers.iter().any(|w| runs.contains(w)),
                _ => true,
            })
            .map(|p| p.name.as_str())
            .collect();
        if missing.is_empty() {
            continue;
        }
        let kind = k.name.as_deref().unwrap_or("?");
        let how = if lane == "default" {
            "a plain `serve`".to_owned()
        } else {
            format!(
                "`serve --lane {lane}`, or its worker's lane variable (<NAME>_WORKER_LANE, <NAME>_<WORKER>_LANE) set to `{lane}`"
            )
        };
        sink.push(
            Finding::new(ID, k.spec.path.clone(), k.spec.lane_at)
                .message(format!(
                    "lane `{lane}` (kind `{kind}`) has no worker process in {}",
                    missing.join(", ")
                ))
                .label(format!("lane `{lane}`"))
                .help(format!(
                    "add a worker process on lane `{lane}` ({how}) to {}",
                    missing.join(" and ")
                )),
        );
    }
}

/// The workers (`workers/<name>/…`) whose handlers take a kind on `lane`; `None` when a kind
/// on it has no handler there, so nobody knows which worker should run it.
fn workers_handling(
    m: &Model,
    kinds: &[super::super::workqueue::registry::Kind<'_>],
    lane: &str,
) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for k in kinds.iter().filter(|k| k.lane.as_deref() == Some(lane)) {
        let name = k.name.as_deref()?;
        let mut found = false;
        for h in m
            .handlers
            .iter()
            .filter(|h| h.kind.as_deref() == Some(name))
        {
            let worker = h
                .path
                .strip_prefix(crate::layout::WORKERS_DIR)?
                .split('/')
                .next()?;
            out.push(worker.to_owned());
            found = true;
        }
        if !found {
            return None;
        }
    }
    Some(out)
}

/// The finding on a file of a place whose lanes are unknown: no lane is checked against
/// the place until it is fixed.
fn unknown(place: &str, path: &str, why: &Unknown) -> Finding {
    match why {
        Unknown::Syntax {
            language,
            message,
            at,
        } => {
            let fix = if *language == "HCL" {
                "fix the syntax (`terraform fmt` or `terraform validate` points at it); until then no lane is checked against Terraform".to_owned()
            } else {
                format!("fix the syntax (`docker compose config` points at it); until then no lane is checked against {place}")
            };
            Finding::new(ID, path.to_owned(), *at)
                .message(format!(
                    "{path} does not parse as {language} ({message}), so which lanes it runs workers on is unknown"
                ))
                .label("does not parse")
                .help(fix)
        }
        Unknown::Unread(reason) => Finding::new(ID, path.to_owned(), Location::START)
            .message(format!(
                "{path} cannot be read ({reason}), so which lanes {place} runs workers on is unknown"
            ))
            .label("not read")
            .help(format!(
                "make it a regular file inside the repository, readable and under {} MiB; until then no lane is checked against {place}",
                crate::repo::TEXT_LIMIT >> 20
            )),
    }
}
