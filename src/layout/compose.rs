//! The local compose files (`deployment/local/docker-compose*.yml`): which services run a
//! worker, and which worker each runs.

use super::dev_sh::shell_commands;
use crate::repo::yaml::{Node, Value};

/// The compose file the generator adds worker services to.
pub const PATH: &str = "deployment/local/docker-compose.full.yml";

/// Whether a repository path is a local compose file.
pub fn is_compose_file(path: &str) -> bool {
    path.strip_prefix("deployment/local/").is_some_and(|n| {
        !n.contains('/')
            && n.starts_with("docker-compose")
            && (n.ends_with(".yml") || n.ends_with(".yaml"))
    })
}

/// The entry `key` of a mapping node.
pub fn get<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// A scalar node as text.
pub fn scalar(node: &Node) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A `command` or `entrypoint`: a string split into words, or a list.
pub fn words_of(node: Option<&Node>) -> Option<Vec<String>> {
    let node = node?;
    match &node.value {
        Value::Str(s) => Some(shell_commands(s).into_iter().flatten().collect()),
        Value::Seq(items) => Some(items.iter().filter_map(scalar).collect()),
        _ => None,
    }
}

/// The worker a compose service runs: the `<worker>` of the `<worker>.Dockerfile` it
/// builds, else the service's name.
pub fn service_worker(key: &str, svc: &Node) -> String {
    get(svc, "build")
        .and_then(|b| get(b, "dockerfile"))
        .and_then(scalar)
        .and_then(|df| {
            df.rsplit('/')
                .next()
                .and_then(|n| n.strip_suffix(".Dockerfile"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| key.to_owned())
}
