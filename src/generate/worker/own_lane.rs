//! The lane a worker's own process serves when it is told none: what its loop claims on,
//! read off the specs in the root's registry (seed 001 §5), never off a copy in a deployment.
//!
//! A worker other than maintenance is made with one kind, on the kind's lane (`--lane`, else
//! a lane named after the worker), and its loop, told no lane, claims on the lanes of its
//! kinds' specs. Its own lane is the lane of that first kind: the oldest handler of its loop
//! (the generator inserts each handler right below the marker, so the oldest is the last),
//! whose `KIND` names a spec under `om/src/`.

use crate::check::workqueue::str_lit;
use crate::layout::markers;
use crate::layout::model::Model;

use super::super::plan::Plan;
use crate::generate::error::GenerateError;

/// The lane of the spec of worker `worker`'s first kind; `None` when its loop, its handler
/// or the spec cannot be found, or the spec names its lane by anything but a string.
pub(super) fn own_lane(
    plan: &Plan,
    model: &Model<'_>,
    worker: &str,
) -> Result<Option<String>, GenerateError> {
    let Some(lp) = plan.text(&crate::layout::work_loop(worker))? else {
        return Ok(None);
    };
    let Some(module) = oldest_handler_module(&lp) else {
        return Ok(None);
    };
    let Some(handler) = plan.text(&crate::layout::worker_file(
        worker,
        &format!("src/handlers/{module}.rs"),
    ))?
    else {
        return Ok(None);
    };
    let Some(kind) = handler_kind(&handler) else {
        return Ok(None);
    };
    model
        .spec_lane(&kind)
        .map(Option::flatten)
        .map_err(|reason| GenerateError::RegistryUnreadable { reason })
}

/// The module of the last `.handler(crate::handlers::<module>::…)` below the marker.
fn oldest_handler_module(work_loop: &str) -> Option<String> {
    work_loop
        .lines()
        .skip_while(|l| l.trim() != markers::HANDLERS)
        .filter_map(|l| {
            let path = l.trim().strip_prefix(".handler(crate::handlers::")?;
            let module = path.split("::").next()?;
            (!module.is_empty()
                && module
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| module.to_owned())
        })
        .last()
}

/// The `KIND` a handler file's `impl WorkHandler` declares, as a string literal.
fn handler_kind(text: &str) -> Option<String> {
    let file = syn::parse_file(text).ok()?;
    file.items.iter().find_map(|item| match item {
        syn::Item::Impl(i)
            if i.trait_
                .as_ref()
                .and_then(|(_, p, _)| p.segments.last())
                .is_some_and(|s| s.ident == "WorkHandler") =>
        {
            i.items.iter().find_map(|it| match it {
                syn::ImplItem::Const(c) if c.ident == "KIND" => str_lit(&c.expr),
                _ => None,
            })
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_handler_is_the_last_below_the_marker() {
        let lp = "x\n        // scaffold:handlers\n        .handler(crate::handlers::b::BHandler)\n        .handler(crate::handlers::a::AHandler)\n        .concurrency(1)\n";
        assert_eq!(oldest_handler_module(lp).as_deref(), Some("a"));
        assert_eq!(
            oldest_handler_module("no marker\n.handler(crate::handlers::a::A)\n"),
            None
        );
    }

    #[test]
    fn a_handler_names_its_kind() {
        let h =
            "impl WorkHandler for X { type Payload = P; const KIND: &'static str = \"CHARGE\"; }";
        assert_eq!(handler_kind(h).as_deref(), Some("CHARGE"));
    }
}
