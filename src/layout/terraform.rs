//! The Terraform of a scaffold repository (`deployment/terraform/**/*.tf`), read with
//! hcl-edit: which top-level `module`/`resource` blocks run a worker, which worker, and
//! what each is told about its lane.
//!
//! A block runs a worker when it sets a `…_LANE` (as an attribute `X_WORKER_LANE = "l"`,
//! an object entry `"X_WORKER_LANE" = "l"`, or `{ name = "X_WORKER_LANE", value = "l" }`),
//! passes `"--lane", "l"` or `"serve --lane l"`, mentions `"serve"`, or instantiates the
//! `service` module (`source = "…/service"`). Its `--lane` and its lane variables are kept
//! ([`super::lane`] says which a worker reads); a lane written as an expression
//! (`var.lane`) comes back as `${var.lane}`. hcl-edit bounds the nesting it parses, so a hostile file is a
//! parse error, not a stack overflow.

use hcl_edit::expr::{Expression, ObjectKey, ObjectValue};
use hcl_edit::structure::{Attribute, Block, Body, Structure};
use hcl_edit::visit::{self, Visit};

use super::dev_sh::serve_lane;

/// A Terraform file that does not parse: the parser's message and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
    pub line: usize,
    pub column: usize,
    /// Its byte offset in the file.
    pub offset: usize,
}

/// A top-level block of a `.tf` file that runs a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerBlock {
    /// The worker it runs, as far as the block says: its `worker` attribute, else its
    /// `name`, else (a `module`) its label with `_` read as `-`; `None` when it says none.
    pub worker: Option<String>,
    /// Its `--lane` and lane variables.
    pub lane: super::lane::LaneSettings,
}

/// The blocks of one `.tf` file that run a worker, in order.
pub fn worker_blocks(text: &str) -> Result<Vec<WorkerBlock>, ParseError> {
    let body = parse(text)?;
    Ok(top_blocks(&body)
        .filter_map(|block| {
            let mut scan = Scan::default();
            visit::visit_body(&mut scan, &block.body);
            let serve = scan
                .strings
                .iter()
                .any(|s| s.split_whitespace().any(|w| w == "serve"));
            let service_module = is_service_module(block);
            let lane = super::lane::LaneSettings {
                flag: scan.flag(),
                vars: scan.lane_values.clone(),
            };
            let worker = block_worker(block);
            (lane.lane().is_some() || serve || service_module)
                .then_some(WorkerBlock { worker, lane })
        })
        .collect())
}

/// Parses a `.tf` file (hcl-edit bounds its nesting).
pub fn parse(text: &str) -> Result<Body, ParseError> {
    hcl_edit::parser::parse_body(text).map_err(|e| ParseError {
        message: e.message().lines().next().unwrap_or_default().to_owned(),
        line: e.location().line(),
        column: e.location().column(),
        offset: e.location().offset(),
    })
}

/// Whether `block` is an instance of the `service` module (`source = "…/service"`).
pub fn is_service_module(block: &Block) -> bool {
    block.ident.as_str() == "module"
        && block.body.get_attribute("source").is_some_and(|a| {
            string_of(&a.value).is_some_and(|s| s.trim_end_matches('/').ends_with("/service"))
        })
}

/// The worker a block runs, as far as it says: its `worker` attribute, else its `name`,
/// else (a `module`) its label with `_` read as `-`.
pub fn block_worker(block: &Block) -> Option<String> {
    let attribute = |key: &str| {
        block
            .body
            .get_attribute(key)
            .and_then(|a| string_of(&a.value))
            .filter(|v| !v.is_empty())
    };
    attribute("worker")
        .or_else(|| attribute("name"))
        .or_else(|| {
            (block.ident.as_str() == "module")
                .then(|| block.labels.first().map(|l| l.as_str().replace('_', "-")))
                .flatten()
        })
}

fn top_blocks(body: &Body) -> impl Iterator<Item = &Block> {
    body.iter().filter_map(|s| match s {
        Structure::Block(b) if matches!(b.ident.as_str(), "module" | "resource") => Some(b),
        _ => None,
    })
}

/// What a block's body says, in document order.
#[derive(Default)]
struct Scan {
    /// Every string in it (a template's text as written, `${…}` and all).
    strings: Vec<String>,
    /// The `…_LANE` keys and the values given to them, in order.
    lane_values: Vec<(String, String)>,
}

impl Scan {
    /// A `--lane` among its strings.
    fn flag(&self) -> Option<String> {
        if let Some(i) = self.strings.iter().position(|s| s == "--lane") {
            return Some(self.strings.get(i + 1).cloned().unwrap_or_default());
        }
        for s in &self.strings {
            if let Some(v) = s.strip_prefix("--lane=") {
                return Some(v.to_owned());
            }
            let words: Vec<&str> = s.split_whitespace().collect();
            if let Some(Some(l)) = serve_lane(&words) {
                return Some(l);
            }
        }
        None
    }

    fn lane_key(&mut self, key: &str, value: &Expression) {
        if key.ends_with("_LANE") {
            self.lane_values.push((key.to_owned(), lane_value(value)));
        }
    }
}

impl Visit for Scan {
    fn visit_attr(&mut self, node: &Attribute) {
        self.lane_key(node.key.as_str(), &node.value);
        visit::visit_attr(self, node);
    }

    fn visit_object_item(&mut self, key: &ObjectKey, value: &ObjectValue) {
        let name = match key {
            ObjectKey::Ident(i) => Some(i.as_str().to_owned()),
            ObjectKey::Expression(e) => string_of(e),
        };
        if let Some(name) = name {
            self.lane_key(&name, value.expr());
        }
        visit::visit_object_item(self, key, value);
    }

    fn visit_object(&mut self, node: &hcl_edit::expr::Object) {
        // `{ name = "X_WORKER_LANE", value = "fast" }`
        let field = |want: &str| {
            node.iter().find_map(|(k, v)| match k {
                ObjectKey::Ident(i) if i.as_str() == want => Some(v.expr()),
                _ => None,
            })
        };
        if let (Some(name), Some(value)) = (field("name").and_then(string_of), field("value")) {
            self.lane_key(&name, value);
        }
        visit::visit_object(self, node);
    }

    fn visit_expr(&mut self, node: &Expression) {
        match node {
            Expression::String(s) => self.strings.push(s.as_str().to_owned()),
            Expression::StringTemplate(_) => self.strings.push(template_text(node)),
            _ => {}
        }
        visit::visit_expr(self, node);
    }
}

/// A plain string's value.
fn string_of(expr: &Expression) -> Option<String> {
    match expr {
        Expression::String(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

/// A template string's text as written, without its quotes.
fn template_text(expr: &Expression) -> String {
    let text = expr.to_string();
    let text = text.trim();
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
        .to_owned()
}

/// The lane a `…_LANE` key is given: a string's value, else the expression as `${…}`.
fn lane_value(expr: &Expression) -> String {
    match expr {
        Expression::String(s) => s.as_str().to_owned(),
        Expression::StringTemplate(_) => template_text(expr),
        other => format!("${{{}}}", other.to_string().trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terraform_lanes_in_each_spelling() {
        let blocks = worker_blocks(
            "module \"a\" {\n  source = \"../service\"\n}\n\
             module \"b\" { environment = { ACME_WORKER_LANE = \"fast\" } }\n\
             resource \"x\" \"y\" { env = [{ name = \"ACME_WORKER_LANE\", value = \"bulk\" }] }\n\
             module \"c\" { command = [\"serve\", \"--lane\", \"slow\"] } # module \"d\" { command = [\"serve\"] }\n\
             module \"e\" {\n lane = var.lane\n ACME_WORKER_LANE = var.lane\n}\n\
             module \"f\" {\n env = { \"ACME_WORKER_LANE\" = \"${var.lane}\" }\n}\n\
             module \"g\" {\n source = \"../registry\"\n}\n\
             variable \"h\" {\n default = \"serve\"\n}\n",
        )
        .expect("parses");
        let lanes: Vec<Option<String>> = blocks.iter().map(|b| b.lane.lane()).collect();
        assert_eq!(
            lanes,
            [
                None,
                Some("fast".into()),
                Some("bulk".into()),
                Some("slow".into()),
                Some("${var.lane}".into()),
                Some("${var.lane}".into()),
            ]
        );
    }

    #[test]
    fn a_block_names_its_worker_by_attribute_name_or_label() {
        let blocks = worker_blocks(
            "module \"billing_bulk\" {\n  source = \"../service\"\n  name = \"billing-bulk\"\n  worker = \"billing\"\n}\n\
             module \"outbox_relay\" {\n  source = \"../service\"\n  name = \"outbox-relay\"\n}\n\
             module \"projector_two\" {\n  source = \"../service\"\n}\n\
             resource \"aws_ecs_service\" \"x\" { command = [\"serve\"] }\n",
        )
        .expect("parses");
        let workers: Vec<Option<&str>> = blocks.iter().map(|b| b.worker.as_deref()).collect();
        assert_eq!(
            workers,
            [
                Some("billing"),
                Some("outbox-relay"),
                Some("projector-two"),
                None
            ]
        );
    }

    #[test]
    fn a_file_that_does_not_parse_or_nests_too_deep_is_an_error() {
        let e = worker_blocks("module \"a\" {\n  x = \n").expect_err("broken");
        assert!(e.line >= 2, "{e:?}");
        let deep = format!("a = {}1{}\n", "(".repeat(10_000), ")".repeat(10_000));
        assert!(worker_blocks(&deep).is_err());
    }
}
