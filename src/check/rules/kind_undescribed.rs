//! # kind-undescribed
//!
//! ## What it finds
//! A kind's entry in its namespace's `om/src/<namespace>/README.md` that still holds the
//! sentence `scaffold worker` leaves there for its author: "Say here, in the product's
//! words, what happens for the user when it runs." A warning: a kind is described after it
//! is made, so a fresh kind's check stays green; `policy: {kind-undescribed: error}` in the
//! codemap makes it a gate.
//!
//! ## Why
//! The namespace README is where the product's people read what its background work does
//! (seed 001 wants each kind in the product's language). The generated line says only which
//! worker and lane take the kind; left as it is, nobody outside the code can tell what the
//! kind does for a user.
//!
//! ## Example
//! ```markdown
//! - `NOTIFY_SHIPMENT` (notify shipment): handled by the maintenance worker on lane
//!   `default`; a producer needs `shipping.notify_shipment` to ask for it. Say here, in the
//!   product's words, what happens for the user when it runs.
//! ```
//!
//! ## Fix
//! Replace the sentence with what happens for the user: "The customer gets an e-mail and a
//! push notification with the carrier's tracking link, once per shipment."

use super::super::context::Context;
use super::super::finding::{Finding, Location};
use super::super::sink::Sink;
use crate::layout::KIND_PLACEHOLDER;
use crate::source::SourceFile;

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "kind-undescribed",
    severity: crate::check::finding::Severity::Warning,
    scope: super::Scope::Local,
    summary: "a kind's namespace README entry that still holds the generator's placeholder sentence",
    severity_note: "",
    finds: "a namespace README kind entry still saying \"Say here, in the product's words, …\"",
};
pub const ID: &str = RULE.id;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    for path in ctx.repo.files.iter().filter(|f| is_namespace_readme(f)) {
        // One that cannot be read is `namespace-bare`'s to say (no README is known there).
        let Ok(text) = ctx.repo.read_within(path, None, crate::repo::TEXT_LIMIT) else {
            continue;
        };
        let file = SourceFile::new(path.clone(), text);
        for (at, _) in file.text.match_indices(KIND_PLACEHOLDER) {
            let line_start = file.text[..at].rfind('\n').map_or(0, |i| i + 1);
            let kind = file.text[line_start..at]
                .split('`')
                .nth(1)
                .filter(|k| !k.is_empty())
                .unwrap_or("a kind");
            sink.push(
                Finding::new(
                    ID,
                    path.clone(),
                    Location::in_file(&file, at, KIND_PLACEHOLDER.len()),
                )
                .message(format!(
                    "`{kind}` is not described: its entry still holds the generator's placeholder"
                ))
                .label("the placeholder")
                .help("say instead, in the product's words, what happens for the user when the kind runs"),
            );
        }
    }
}

/// `om/src/<namespace>/README.md`.
fn is_namespace_readme(path: &str) -> bool {
    path.strip_prefix(crate::layout::OM_SRC)
        .and_then(|rest| rest.strip_suffix("/README.md"))
        .is_some_and(|ns| !ns.is_empty() && !ns.contains('/'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_generators_line_holds_the_placeholder_this_rule_looks_for() {
        let template = crate::generate::templates::embedded_file("kind/readme.j2")
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        assert!(
            template.contains(crate::layout::KIND_PLACEHOLDER),
            "{template}"
        );
    }
}
