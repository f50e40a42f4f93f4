//! `agent/codemap.yml`: layers, import rules, agent ownership, generated paths, policy.

use std::collections::BTreeMap;

use super::manifest::{PathGlob, Problems, closest};
use super::yaml::{Node, Pos, Value};
use crate::check::catalogue;
use crate::check::finding::Severity;

pub const CODEMAP_PATH: &str = "agent/codemap.yml";

#[derive(Debug, Clone)]
pub struct Layer {
    pub name: String,
    pub pos: Pos,
    pub paths: Vec<PathGlob>,
    pub may_import: Vec<String>,
    pub must_not_import: Vec<String>,
    /// Crates of this layer are workers (the `workers` layer always is).
    pub workers: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Agent {
    pub writable: Vec<PathGlob>,
    pub forbidden: Vec<PathGlob>,
}

impl Agent {
    /// Whether this agent may write `path`: one of its `writable` globs matches it and none
    /// of its `forbidden` ones does.
    pub fn may_write(&self, path: &str) -> bool {
        self.writable.iter().any(|g| g.is_match(path))
            && !self.forbidden.iter().any(|g| g.is_match(path))
    }
}

#[derive(Debug, Clone)]
pub struct Generated {
    pub paths: Vec<PathGlob>,
    pub from: Vec<PathGlob>,
}

/// A rule's severity as set by `policy:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Off,
    On(Severity),
}

/// The validated codemap.
#[derive(Debug, Clone, Default)]
pub struct Codemap {
    pub name: Option<String>,
    pub layers: Vec<Layer>,
    pub agents: BTreeMap<String, Agent>,
    pub generated: Vec<Generated>,
    pub policy: BTreeMap<String, Level>,
}

impl Codemap {
    /// The first layer one of whose globs matches `path`.
    pub fn layer_of(&self, path: &str) -> Option<&Layer> {
        self.layers
            .iter()
            .find(|l| l.paths.iter().any(|g| g.is_match(path)))
    }

    /// The agents that may write `path` (a `writable` glob matches, no `forbidden` one
    /// does), in name order.
    pub fn writers(&self, path: &str) -> Vec<&str> {
        self.agents
            .iter()
            .filter(|(_, a)| a.may_write(path))
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Whether `path` is generated (a `generated` entry's `paths` match it): its generator
    /// writes it from its sources, and no agent by hand.
    pub fn is_generated(&self, path: &str) -> bool {
        self.generated
            .iter()
            .any(|g| g.paths.iter().any(|p| p.is_match(path)))
    }

    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// Parses and validates, collecting every problem.
    pub fn parse(text: &str) -> Result<Codemap, Vec<super::manifest::Problem>> {
        super::manifest::parse_with(CODEMAP_PATH, text, validate)
    }
}

const TOP_KEYS: &[&str] = &["version", "name", "layers", "agents", "generated", "policy"];
const LAYER_KEYS: &[&str] = &["paths", "may_import", "must_not_import", "workers"];
const AGENT_KEYS: &[&str] = &["writable", "forbidden"];
const GENERATED_KEYS: &[&str] = &["paths", "from"];

fn validate(root: &Node, p: &mut Problems) -> Codemap {
    let mut map = Codemap::default();
    if matches!(root.value, Value::Null) {
        p.push(
            root.pos,
            "the codemap is empty",
            "empty file",
            "start with `version: 1` and a `layers:` mapping",
        );
        return map;
    }
    let fields = p.fields(root, "the codemap", TOP_KEYS);
    let get = |k: &str| fields.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| *v);
    p.version(get("version"), root);
    if let Some(n) = get("name")
        && let Some(name) = p.string(n, "`name`")
    {
        if valid_project_name(&name) {
            map.name = Some(name);
        } else {
            p.push(n.pos, format!("invalid project name `{name}`"), "invalid name",
                    "a project name is lower case letters, digits and `-`, starting with a letter (e.g. `acme`)");
        }
    }
    let mut layer_refs: Vec<(String, Pos, &'static str)> = Vec::new();
    match get("layers") {
        None => p.push(
            root.pos,
            "missing `layers`",
            "no layers",
            "declare at least one layer, e.g. `workers: {paths: [\"workers/**\"]}`",
        ),
        Some(node) => {
            let entries = p.map(node, "`layers`");
            for (k, v) in entries {
                let Some(name) = k.as_str() else {
                    p.push(k.pos, "layer names must be strings", "not a string", "");
                    continue;
                };
                if let Some(first) = map.layers.iter().find(|l| l.name == name) {
                    p.push(
                        k.pos,
                        format!("duplicate layer `{name}`"),
                        "duplicate layer",
                        format!(
                            "layer `{name}` is first declared on line {}; merge the two",
                            first.pos.line
                        ),
                    );
                    continue;
                }
                let lf = p.fields(v, &format!("layer `{name}`"), LAYER_KEYS);
                let lget = |k: &str| lf.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| *v);
                let paths = match lget("paths") {
                    Some(n) => p.globs(n, &format!("`layers.{name}.paths`")),
                    None => {
                        p.push(
                            k.pos,
                            format!("layer `{name}` has no `paths`"),
                            "no paths",
                            format!("add `paths: [\"{name}/**\"]` to say which files belong to it"),
                        );
                        Vec::new()
                    }
                };
                let mut refs = |key: &'static str| -> Vec<String> {
                    lget(key)
                        .map(|n| p.strings(n, &format!("`layers.{name}.{key}`")))
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(s, pos)| {
                            layer_refs.push((s.clone(), pos, key));
                            s
                        })
                        .collect()
                };
                let may_import = refs("may_import");
                let must_not_import = refs("must_not_import");
                let workers = match lget("workers") {
                    None => name == "workers",
                    Some(n) => match n.value {
                        Value::Bool(b) => b,
                        ref other => {
                            p.push(
                                n.pos,
                                format!(
                                    "`layers.{name}.workers` must be true or false, found {}",
                                    other.type_name()
                                ),
                                "expected a boolean",
                                "",
                            );
                            false
                        }
                    },
                };
                map.layers.push(Layer {
                    name: name.to_owned(),
                    pos: k.pos,
                    paths,
                    may_import,
                    must_not_import,
                    workers,
                });
            }
        }
    }
    let names: Vec<&str> = map.layers.iter().map(|l| l.name.as_str()).collect();
    for (r, pos, key) in &layer_refs {
        if !names.contains(&r.as_str()) {
            let help = match closest(r, &names) {
                Some(s) => format!("did you mean `{s}`? layers: {}", names.join(", ")),
                None => format!("declared layers: {}", names.join(", ")),
            };
            p.push(
                *pos,
                format!("unknown layer `{r}` in `{key}`"),
                "unknown layer",
                help,
            );
        }
    }
    if let Some(node) = get("agents") {
        for (k, v) in p.map(node, "`agents`") {
            let Some(name) = k.as_str() else {
                p.push(k.pos, "agent names must be strings", "not a string", "");
                continue;
            };
            if map.agents.contains_key(name) {
                p.push(
                    k.pos,
                    format!("duplicate agent `{name}`"),
                    "duplicate agent",
                    "merge the two entries",
                );
                continue;
            }
            let af = p.fields(v, &format!("agent `{name}`"), AGENT_KEYS);
            let mut agent = Agent::default();
            for (key, _, value) in af {
                let globs = p.globs(value, &format!("`agents.{name}.{key}`"));
                if key == "writable" {
                    agent.writable = globs
                } else {
                    agent.forbidden = globs
                }
            }
            map.agents.insert(name.to_owned(), agent);
        }
    }
    if let Some(node) = get("generated") {
        match &node.value {
            Value::Seq(items) => {
                for item in items {
                    let gf = p.fields(item, "a `generated` entry", GENERATED_KEYS);
                    let gget = |k: &str| gf.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| *v);
                    let (Some(paths), Some(from)) = (gget("paths"), gget("from")) else {
                        p.push(
                            item.pos,
                            "a `generated` entry needs both `paths` and `from`",
                            "incomplete entry",
                            "write `{paths: [\"packages/sdk/**\"], from: [\"contracts/**\"]}`",
                        );
                        continue;
                    };
                    let paths = p.globs(paths, "`generated.paths`");
                    let from = p.globs(from, "`generated.from`");
                    map.generated.push(Generated { paths, from });
                }
            }
            Value::Null => {}
            other => p.push(
                node.pos,
                format!("`generated` must be a list, found {}", other.type_name()),
                "expected a list",
                "",
            ),
        }
    }
    if let Some(node) = get("policy") {
        let ids: Vec<&str> = catalogue::rules().iter().map(|r| r.id).collect();
        for (k, v) in p.map(node, "`policy`") {
            let Some(id) = k.as_str() else { continue };
            if !ids.contains(&id) {
                let help = closest(id, &ids).map_or_else(
                    || "run `scaffold rules` for the list of rule ids".to_owned(),
                    |s| format!("did you mean `{s}`?"),
                );
                p.push(
                    k.pos,
                    format!("unknown rule `{id}` in `policy`"),
                    "unknown rule",
                    help,
                );
                continue;
            }
            // YAML 1.1 readers take a bare `off` for `false`; both mean off.
            let level = match (&v.value, v.as_str()) {
                (Value::Bool(false), _) | (_, Some("off")) => Level::Off,
                (_, Some("warning")) => Level::On(Severity::Warning),
                (_, Some("error")) => Level::On(Severity::Error),
                _ => {
                    p.push(
                        v.pos,
                        format!("invalid level for `{id}`"),
                        "expected off, warning or error",
                        "write one of: off, warning, error",
                    );
                    continue;
                }
            };
            map.policy.insert(id.to_owned(), level);
        }
    }
    map
}

fn valid_project_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && s.len() <= 64
}
