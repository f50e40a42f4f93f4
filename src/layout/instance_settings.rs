//! Which settings each Terraform instance of a worker is given: the names in its
//! `environment` and `secrets`, resolved through object literals, `merge(…)` and the file's
//! `local.<name>` values. What is written any other way (`var.x`, another function) could
//! name any setting: the instance's settings are then unknown, and nothing is claimed missing.

use std::collections::{BTreeMap, BTreeSet};

use hcl_edit::Span;
use hcl_edit::expr::{Expression, ObjectKey, TraversalOperator};
use hcl_edit::structure::{Body, Structure};

use super::terraform::{ParseError, block_worker, is_service_module};

/// How deep `local.a` → `local.b` → … is followed.
const MAX_DEPTH: usize = 16;

/// One `module` instance of a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Its label (`module "<label>"`).
    pub label: String,
    pub worker: String,
    /// The setting names it is given; `None` when that cannot be told.
    pub settings: Option<BTreeSet<String>>,
    /// The byte offset of the block in its file.
    pub offset: usize,
}

/// The `module` blocks of one `.tf` file that instantiate the `service` module, each with
/// its worker and the settings it is given.
pub fn instances(text: &str) -> Result<Vec<Instance>, ParseError> {
    let body = super::terraform::parse(text)?;
    let locals = locals(&body);
    let mut out = Vec::new();
    for block in body.iter().filter_map(|s| match s {
        Structure::Block(b) if b.ident.as_str() == "module" => Some(b),
        _ => None,
    }) {
        let (Some(worker), true) = (block_worker(block), is_service_module(block)) else {
            continue;
        };
        let mut settings = Some(BTreeSet::new());
        for attr in ["environment", "secrets"] {
            if let Some(a) = block.body.get_attribute(attr) {
                settings = match (settings, keys(&a.value, &locals, 0)) {
                    (Some(mut all), Some(more)) => {
                        all.extend(more);
                        Some(all)
                    }
                    _ => None,
                };
            }
        }
        out.push(Instance {
            label: block
                .labels
                .first()
                .map(|l| l.as_str().to_owned())
                .unwrap_or_default(),
            worker,
            settings,
            offset: block.span().map_or(0, |s| s.start),
        });
    }
    Ok(out)
}

/// Every `locals` attribute of the file, by name.
fn locals(body: &Body) -> BTreeMap<String, &Expression> {
    body.iter()
        .filter_map(|s| match s {
            Structure::Block(b) if b.ident.as_str() == "locals" => Some(b),
            _ => None,
        })
        .flat_map(|b| b.body.iter())
        .filter_map(|s| match s {
            Structure::Attribute(a) => Some((a.key.as_str().to_owned(), &a.value)),
            Structure::Block(_) => None,
        })
        .collect()
}

/// The keys `expr` is known to have.
fn keys(
    expr: &Expression,
    locals: &BTreeMap<String, &Expression>,
    depth: usize,
) -> Option<BTreeSet<String>> {
    if depth > MAX_DEPTH {
        return None;
    }
    match expr {
        Expression::Object(o) => o
            .iter()
            .map(|(k, _)| match k {
                ObjectKey::Ident(i) => Some(i.as_str().to_owned()),
                ObjectKey::Expression(Expression::String(s)) => Some(s.as_str().to_owned()),
                ObjectKey::Expression(_) => None,
            })
            .collect(),
        Expression::Parenthesis(p) => keys(p.inner(), locals, depth + 1),
        Expression::FuncCall(f)
            if f.name.namespace.is_empty() && f.name.name.as_str() == "merge" =>
        {
            let mut all = BTreeSet::new();
            for arg in f.args.iter() {
                all.extend(keys(arg, locals, depth + 1)?);
            }
            Some(all)
        }
        Expression::Traversal(t) => {
            let Expression::Variable(root) = &t.expr else {
                return None;
            };
            match (root.as_str(), t.operators.as_slice()) {
                ("local", [op]) => match op.value() {
                    TraversalOperator::GetAttr(name) => {
                        keys(locals.get(name.as_str())?, locals, depth + 1)
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_through_literals_merge_and_locals() {
        let text = "locals {\n  queue = { A_DATABASE_URL = var.db }\n  carrier = { A_CARRIER_IMPL = \"http\" }\n  chain = local.carrier\n}\n\
            module \"billing\" {\n  source = \"../service\"\n  worker = \"billing\"\n  environment = merge({ A_BILLING_LANE = \"x\" }, local.chain)\n  secrets = local.queue\n}\n\
            module \"other\" {\n  source = \"../service\"\n  name = \"other\"\n  environment = var.env\n}\n\
            module \"plain\" {\n  source = \"../service\"\n}\n\
            module \"registry\" {\n  source = \"../registry\"\n}\n";
        let got = instances(text).expect("parses");
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|i| (i.label.as_str(), i.worker.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("billing", "billing"),
                ("other", "other"),
                ("plain", "plain")
            ]
        );
        let set = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>());
        assert_eq!(
            got[0].settings,
            set(&["A_BILLING_LANE", "A_CARRIER_IMPL", "A_DATABASE_URL"])
        );
        assert_eq!(got[1].settings, None, "var.env could be anything");
        assert_eq!(got[2].settings, set(&[]));
    }

    #[test]
    fn a_cycle_of_locals_is_unknown_not_a_hang() {
        let text = "locals {\n  a = local.b\n  b = local.a\n}\nmodule \"w\" {\n  source = \"../service\"\n  environment = local.a\n}\n";
        assert_eq!(instances(text).expect("parses")[0].settings, None);
    }
}
