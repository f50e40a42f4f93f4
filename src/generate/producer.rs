//! The write that starts a kind's work (seed 001, Procedure 4): a method of the namespace's
//! service manager (`services/<ns>/src/manager.rs`) holding the `// scaffold:work-rows`
//! marker. `--from <Manager>::<method>` names it; without it, the service's one write is
//! taken, and several are refused with the list. The kind's work row goes below the
//! marker, in the write's own transaction; the worker's test drives that write.

use crate::layout::markers as marker;
use minijinja::Value;

use super::error::GenerateError;
use super::plan::Plan;
use super::templates::Templates;

/// One write: `<Manager>::<method>`, the byte range of its marker line, and whether it
/// takes the `record: Record` its work rows are filled from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub manager: String,
    pub method: String,
    marker: (usize, usize),
    takes_record: bool,
}

impl Write {
    pub fn name(&self) -> String {
        format!("{}::{}", self.manager, self.method)
    }
}

/// The manager file of namespace `ns`'s service.
pub fn manager_path(ns: &str) -> String {
    format!("{}/src/manager.rs", super::namespace::service_dir(ns))
}

/// The writes in a manager file: every method of an `impl …Manager` block whose body holds
/// the marker as a line comment of its own. A file that does not parse has none (the
/// checker's `source-unparsed` says why).
pub fn writes(text: &str) -> Vec<Write> {
    // A pull request can commit a manager nested deep enough to overflow syn's stack: past
    // the checker's depth budget the file has no writes (`source-unparsed` says why).
    if crate::check::rust_refs::depth::past_budget_of(text).is_some() {
        return Vec::new();
    }
    let parsed = syn::parse_file(text);
    let out = parsed
        .map(|file| writes_in(text, &file))
        .unwrap_or_default();
    proc_macro2::extra::invalidate_current_thread_spans();
    out
}

fn writes_in(text: &str, file: &syn::File) -> Vec<Write> {
    let markers = super::markers::find_all("manager.rs", text, marker::WORK_ROWS);
    // syn parses the text without its byte-order mark, so its offsets are that much short.
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut out = Vec::new();
    for item in &file.items {
        let syn::Item::Impl(imp) = item else { continue };
        let syn::Type::Path(ty) = &*imp.self_ty else {
            continue;
        };
        let Some(manager) = ty.path.segments.last().map(|s| s.ident.to_string()) else {
            continue;
        };
        if !manager.ends_with("Manager") || imp.trait_.is_some() {
            continue;
        }
        for it in &imp.items {
            let syn::ImplItem::Fn(f) = it else { continue };
            let body = syn::spanned::Spanned::span(&f.block).byte_range();
            let body = body.start + bom..body.end + bom;
            let inside: Vec<(usize, usize)> = markers
                .iter()
                .filter(|(start, _)| body.contains(start))
                .copied()
                .collect();
            if let [marker] = inside[..] {
                out.push(Write {
                    manager: manager.clone(),
                    method: f.sig.ident.to_string(),
                    marker,
                    takes_record: takes_record(&f.sig),
                });
            }
        }
    }
    out
}

/// Whether `sig` has a parameter `record` of type `Record` (the work row's payload is
/// filled from it).
fn takes_record(sig: &syn::Signature) -> bool {
    sig.inputs.iter().any(|arg| match arg {
        syn::FnArg::Typed(t) => {
            matches!(&*t.pat, syn::Pat::Ident(i) if i.ident == "record")
                && matches!(&*t.ty, syn::Type::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "Record"))
        }
        syn::FnArg::Receiver(_) => false,
    })
}

/// What `--from none` says: no write starts the kind (it is scheduled, or started by hand).
pub const NONE: &str = "none";

/// The write `from` names, or the one write there is; `Ok(None)` when the namespace has
/// no service writes and none was named (a repository made before services, or one whose
/// producer is written by hand), or when `from` is `none`. A write the generator cannot
/// fill a row in (not of the namespace's own manager, or without its `record: Record`)
/// is refused with the reason.
pub fn resolve(
    plan: &Plan,
    ns: &str,
    from: Option<&str>,
) -> Result<Option<(String, Write)>, GenerateError> {
    if from == Some(NONE) {
        return Ok(None);
    }
    if let Some(from) = from {
        let valid = from.split_once("::").is_some_and(|(m, f)| {
            syn::parse_str::<syn::Ident>(m).is_ok() && syn::parse_str::<syn::Ident>(f).is_ok()
        });
        if !valid {
            return Err(GenerateError::InvalidProducer {
                from: from.to_owned(),
            });
        }
    }
    let path = manager_path(ns);
    let text = plan.text(&path)?.unwrap_or_default();
    let found = writes(&text);
    let known = || {
        if found.is_empty() {
            format!("{path} has none")
        } else {
            found.iter().map(Write::name).collect::<Vec<_>>().join(", ")
        }
    };
    let chosen = match from {
        Some(from) => {
            let named: Vec<&Write> = found.iter().filter(|w| w.name() == from).collect();
            match named[..] {
                [one] => one.clone(),
                [] => {
                    return Err(GenerateError::UnknownProducer {
                        from: from.to_owned(),
                        manager: from.split("::").next().unwrap_or(from).to_owned(),
                        path: path.clone(),
                        known: known(),
                    });
                }
                // Two impls (`impl M<A>`, `impl M<B>`) with a write of one name.
                _ => {
                    return Err(GenerateError::AmbiguousProducer {
                        known: known(),
                        path,
                    });
                }
            }
        }
        None => match &found[..] {
            [] => return Ok(None),
            [one] => one.clone(),
            _ => {
                return Err(GenerateError::AmbiguousProducer {
                    known: known(),
                    path,
                });
            }
        },
    };
    let manager = format!("{}Manager", super::names::camel(ns));
    if chosen.manager != manager || !chosen.takes_record {
        return Err(GenerateError::UnfillableProducer {
            write: chosen.name(),
            path,
            manager,
        });
    }
    Ok(Some((path, chosen)))
}

/// Adds the kind's work row below `write`'s marker in `path`, the worker's dependency on
/// the service (manifest and lock), and its test of the producer path.
pub fn plan(
    plan: &mut Plan,
    templates: &Templates,
    ctx: &Value,
    (path, write): &(String, Write),
    package: (&str, &str),
    worker_dir: &str,
    test: &str,
) -> Result<(), GenerateError> {
    let text = plan.text(path)?.unwrap_or_default();
    let row = templates.render("kind/work-row.j2", ctx)?.text;
    let lines: Vec<String> = row.lines().map(str::to_owned).collect();
    let out = super::markers::insert_at(&text, write.marker, &lines);
    plan.edit(path, out)?;

    let (worker_package, service_package) = package;
    super::members::plan_dependency(
        plan,
        (worker_dir, worker_package),
        service_package,
        "dev-dependencies",
    )?;
    let r = templates.render("kind/produced.rs.j2", ctx)?;
    plan.create(
        &format!("{worker_dir}/tests/{test}"),
        r.text.into_bytes(),
        Some((r.template, r.overridden)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANAGER: &str = "impl<R: Records> ShippingManager<R> {\n    pub async fn record(&self, record: Record) {\n        let rows = [\n            // scaffold:work-rows\n        ];\n    }\n    pub async fn cancel(&self) {\n        let rows = [\n            // scaffold:work-rows\n        ];\n    }\n    fn helper(&self) {}\n}\nimpl Other {\n    fn record(&self) {\n        // scaffold:work-rows\n    }\n}\n";

    #[test]
    fn a_write_is_a_manager_method_holding_the_marker() {
        let found = writes(MANAGER);
        let names: Vec<String> = found.iter().map(Write::name).collect();
        assert_eq!(
            names,
            ["ShippingManager::record", "ShippingManager::cancel"]
        );
        assert!(found[0].takes_record && !found[1].takes_record);
        let deep = format!(
            "fn f() {{ {}1{} }}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        assert!(
            writes(&deep).is_empty(),
            "past the depth budget: no writes, no overflow"
        );
        let with_bom = format!("\u{feff}{MANAGER}");
        let bommed = writes(&with_bom);
        assert_eq!(bommed.len(), 2, "a byte-order mark shifts nothing");
        assert_eq!(
            &with_bom[bommed[0].marker.0..bommed[0].marker.1].trim(),
            &marker::WORK_ROWS
        );
        assert!(writes("fn broken(").is_empty());
        let in_string = "impl AManager { fn f(&self) { let s = \"\n// scaffold:work-rows\n\"; } }";
        assert!(
            writes(in_string).is_empty(),
            "a marker inside a string is data"
        );
    }
}
