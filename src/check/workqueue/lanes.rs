//! Which lanes have a worker process, in each place workers run: `scripts/dev.sh`, the
//! local compose file, and Terraform.
//!
//! - **dev.sh**: a command with the word `serve` runs a worker; its lane is `--lane <l>`
//!   (or `--lane=<l>`) after it, else a `<NAME>_WORKER_LANE=<l>` assignment (or any
//!   upper-case `…_LANE`, such as a worker's own `<NAME>_<WORKER>_LANE`) on the command or
//!   exported earlier in the script, else `default`.
//! - **compose** (`deployment/local/docker-compose*.yml`): a service whose `command` or
//!   `entrypoint` has `serve`, or that sets `*_LANE` in its `environment`, or that has
//!   no command and builds an image whose Dockerfile's `CMD`/`ENTRYPOINT` runs `serve`; its
//!   lane as for dev.sh.
//! - **Terraform** (`deployment/terraform/**/*.tf`): a `module`/`resource` block that sets
//!   `*_LANE` (as `X_WORKER_LANE = "l"`, `"X_WORKER_LANE": "l"` or
//!   `{ name = "X_WORKER_LANE", value = "l" }`), passes `"--lane", "l"`, mentions
//!   `"serve"`, or instantiates the `service` module; its lane as above, else `default`.
//!
//! A lane written with a variable (`$LANE`, `var.lane`, `${…}`) could be any lane: the
//! place then counts as serving every lane.

use std::collections::BTreeSet;

use crate::repo::Repo;
use crate::repo::yaml::{self, Node, Value};

pub const DEV_SH: &str = "scripts/dev.sh";

/// One place workers run.
#[derive(Debug, Clone, Default)]
pub struct Place {
    /// How the finding names it (a file, or a folder for Terraform).
    pub name: String,
    /// Whether the repository has it at all.
    pub exists: bool,
    pub lanes: BTreeSet<String>,
    /// A process whose lane is a variable: it may serve any lane.
    pub any: bool,
    /// For a place where each worker is optional (the local compose file, where
    /// `scaffold worker --container` adds a worker or not): the workers it runs, by the
    /// name of their `deployment/docker/<worker>.Dockerfile` or, without one, the service.
    /// `None` for places that must run every worker.
    pub workers: Option<BTreeSet<String>>,
}

impl Place {
    pub fn serves(&self, lane: &str) -> bool {
        self.any || self.lanes.contains(lane)
    }

    fn add(&mut self, lane: Option<String>) {
        match lane {
            Some(l) if is_variable(&l) => self.any = true,
            Some(l) => {
                self.lanes.insert(l);
            }
            None => {
                self.lanes.insert(super::registry::DEFAULT_LANE.to_owned());
            }
        }
    }
}

fn is_variable(lane: &str) -> bool {
    lane.is_empty() || lane.contains('$') || lane.starts_with("var.") || lane.starts_with("local.")
}

/// The three places, in the order findings name them.
pub fn places(repo: &Repo) -> Vec<Place> {
    vec![dev_sh(repo), compose(repo), terraform(repo)]
}

// ---------------------------------------------------------------- dev.sh

fn dev_sh(repo: &Repo) -> Place {
    let mut place = Place {
        name: DEV_SH.to_owned(),
        ..Place::default()
    };
    let Some(text) = repo
        .files
        .binary_search(&DEV_SH.to_owned())
        .ok()
        .and_then(|_| repo.read(DEV_SH))
    else {
        return place;
    };
    place.exists = true;
    for process in dev_sh_processes(&text) {
        place.add(process.lane);
    }
    place
}

/// A worker process `scripts/dev.sh` starts: a command with the word `serve`.
#[derive(Debug)]
pub struct DevProcess {
    /// The command's words, quotes removed.
    pub words: Vec<String>,
    /// Its lane: `--lane L` after `serve`, else a `…_LANE=L` assignment on the command,
    /// else the last one the script exported before it; `None` when there is none.
    pub lane: Option<String>,
}

/// The worker processes dev.sh starts, in order, each with the lane it serves.
pub fn dev_sh_processes(text: &str) -> Vec<DevProcess> {
    let mut processes = Vec::new();
    let mut exported: Option<String> = None;
    for cmd in shell_commands(text) {
        let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let skip = usize::from(words.first() == Some(&"export"));
        let assignments: Vec<&str> = words[skip..]
            .iter()
            .take_while(|w| is_assignment(w))
            .copied()
            .collect();
        if assignments.len() + skip == words.len() {
            // Only assignments (`export ACME_WORKER_LANE=fast`): later commands inherit them.
            if let Some(l) = assignments.iter().find_map(|a| lane_assignment(a)) {
                exported = Some(l);
            }
            continue;
        }
        if let Some(lane) = serve_lane(&words) {
            let lane = lane
                .or_else(|| words.iter().find_map(|a| lane_assignment(a)))
                .or_else(|| exported.clone());
            processes.push(DevProcess { words: cmd, lane });
        }
    }
    processes
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `X_WORKER_LANE=v` (or any `…_LANE=v`, such as a worker's own `ACME_MAINTENANCE_LANE`)
/// → v.
fn lane_assignment(w: &str) -> Option<String> {
    let (k, v) = w.split_once('=')?;
    is_lane_var(k).then(|| v.to_owned())
}

/// `<NAME>_WORKER_LANE`, or a worker's own `<NAME>_<WORKER>_LANE` setting.
fn is_lane_var(k: &str) -> bool {
    k.ends_with("_LANE")
        && k.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `Some(lane)` when the words run `serve`: the `--lane` given after it, if any.
fn serve_lane(words: &[&str]) -> Option<Option<String>> {
    let at = words.iter().position(|w| *w == "serve")?;
    let rest = &words[at + 1..];
    for (i, w) in rest.iter().enumerate() {
        if *w == "--lane" {
            return Some(Some(
                rest.get(i + 1).map_or(String::new(), |s| (*s).to_owned()),
            ));
        }
        if let Some(v) = w.strip_prefix("--lane=") {
            return Some(Some(v.to_owned()));
        }
    }
    Some(None)
}

/// Splits a shell script into simple commands (words, quotes removed), joining
/// continuation lines and dropping comments. Good enough for launch scripts; not a shell.
fn shell_commands(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut cmd: Vec<String> = Vec::new();
        let mut word = String::new();
        let mut in_word = false;
        let mut chars = line.chars().peekable();
        let flush = |cmd: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
            if *in_word {
                cmd.push(std::mem::take(word));
                *in_word = false;
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '#' if !in_word => break,
                '\'' => {
                    in_word = true;
                    for d in chars.by_ref() {
                        if d == '\'' {
                            break;
                        }
                        word.push(d);
                    }
                }
                '"' => {
                    in_word = true;
                    while let Some(d) = chars.next() {
                        match d {
                            '"' => break,
                            '\\' => word.extend(chars.next()),
                            _ => word.push(d),
                        }
                    }
                }
                ';' | '&' | '|' | '(' | ')' => {
                    flush(&mut cmd, &mut word, &mut in_word);
                    if !cmd.is_empty() {
                        out.push(std::mem::take(&mut cmd));
                    }
                }
                c if c.is_whitespace() => flush(&mut cmd, &mut word, &mut in_word),
                c => {
                    in_word = true;
                    word.push(c);
                }
            }
        }
        flush(&mut cmd, &mut word, &mut in_word);
        if !cmd.is_empty() {
            out.push(cmd);
        }
    }
    out
}

// ---------------------------------------------------------------- compose

fn compose(repo: &Repo) -> Place {
    let files: Vec<&String> = repo
        .files
        .iter()
        .filter(|f| {
            f.strip_prefix("deployment/local/").is_some_and(|n| {
                !n.contains('/')
                    && n.starts_with("docker-compose")
                    && (n.ends_with(".yml") || n.ends_with(".yaml"))
            })
        })
        .collect();
    let mut place = Place {
        name: files
            .first()
            .map_or("deployment/local/docker-compose.full.yml".to_owned(), |f| {
                (*f).clone()
            }),
        exists: !files.is_empty(),
        workers: Some(BTreeSet::new()),
        ..Place::default()
    };
    for f in files {
        let Some(text) = repo.read(f) else { continue };
        let Ok(root) = yaml::parse(&text) else {
            // Not YAML we can read: say nothing about its lanes.
            place.any = true;
            continue;
        };
        let Some(services) = get(&root, "services") else {
            continue;
        };
        let Value::Map(entries) = &services.value else {
            continue;
        };
        for (key, svc) in entries {
            let worker = service_worker(key.as_str().unwrap_or_default(), svc);
            if compose_service(repo, svc, &mut place)
                && let Some(w) = &mut place.workers
            {
                w.insert(worker);
            }
        }
    }
    place
}

fn get<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn scalar(node: &Node) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn words_of(node: Option<&Node>) -> Option<Vec<String>> {
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

/// Adds the lane of a service that runs a worker; whether it does.
fn compose_service(repo: &Repo, svc: &Node, place: &mut Place) -> bool {
    let command = words_of(get(svc, "command"));
    let entry = words_of(get(svc, "entrypoint"));
    let mut words: Vec<String> = entry.clone().unwrap_or_default();
    words.extend(command.clone().unwrap_or_default());
    let env_lane = get(svc, "environment").and_then(|env| match &env.value {
        Value::Map(entries) => entries.iter().find_map(|(k, v)| {
            k.as_str()
                .filter(|k| is_lane_var(k))
                .map(|_| scalar(v).unwrap_or_default())
        }),
        Value::Seq(items) => items
            .iter()
            .filter_map(scalar)
            .find_map(|s| lane_assignment(&s)),
        _ => None,
    });
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    let serve = serve_lane(&refs);
    let image_serves = command.is_none() && entry.is_none() && dockerfile_serves(repo, svc);
    if serve.is_none() && env_lane.is_none() && !image_serves {
        return false;
    }
    place.add(serve.flatten().or(env_lane));
    true
}

/// Whether the service builds from a Dockerfile of the repo whose CMD/ENTRYPOINT is `serve`.
fn dockerfile_serves(repo: &Repo, svc: &Node) -> bool {
    let Some(build) = get(svc, "build") else {
        return false;
    };
    let Some(df) = get(build, "dockerfile").and_then(scalar) else {
        return false;
    };
    let base = df.rsplit('/').next().unwrap_or(&df).to_owned();
    let Some(path) = repo
        .files
        .iter()
        .find(|f| f.rsplit('/').next() == Some(base.as_str()))
    else {
        return false;
    };
    repo.read(path).is_some_and(|text| {
        text.lines().any(|l| {
            let t = l.trim_start();
            (t.starts_with("CMD") || t.starts_with("ENTRYPOINT"))
                && t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                    .any(|w| w == "serve")
        })
    })
}

// ---------------------------------------------------------------- terraform

fn terraform(repo: &Repo) -> Place {
    let files: Vec<&String> = repo
        .files
        .iter()
        .filter(|f| f.starts_with("deployment/terraform/") && f.ends_with(".tf"))
        .collect();
    let mut place = Place {
        name: "deployment/terraform".to_owned(),
        exists: !files.is_empty(),
        ..Place::default()
    };
    for f in files {
        let Some(text) = repo.read(f) else { continue };
        for (header, body) in hcl_blocks(&strip_hcl_comments(&text)) {
            let module = header.trim_start().starts_with("module");
            if !module && !header.trim_start().starts_with("resource") {
                continue;
            }
            let strings = hcl_strings(&body);
            let lane = hcl_lane(&body, &strings);
            let serve = strings
                .iter()
                .any(|s| s.split_whitespace().any(|w| w == "serve"));
            let service_module = module
                && hcl_attr(&body, "source")
                    .is_some_and(|s| s.trim_end_matches('/').ends_with("/service"));
            if lane.is_some() || serve || service_module {
                place.add(lane);
            }
        }
    }
    place
}

/// Removes `#`, `//` and `/* */` comments outside strings.
fn strip_hcl_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '#' => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Top-level blocks: (header, body).
fn hcl_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut header = String::new();
    let mut body = String::new();
    let mut in_str = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_str {
            if depth > 0 {
                body.push(c);
            } else {
                header.push(c);
            }
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                if depth > 0 {
                    body.push(c);
                } else {
                    header.push(c);
                }
            }
            '{' => {
                if depth > 0 {
                    body.push(c);
                }
                depth += 1;
            }
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.push((std::mem::take(&mut header), std::mem::take(&mut body)));
                } else {
                    body.push(c);
                }
            }
            '\n' if depth == 0 => header.clear(),
            c if depth > 0 => body.push(c),
            c => header.push(c),
        }
    }
    out
}

/// Every double-quoted string in a body.
fn hcl_strings(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '"' {
            let mut s = String::new();
            while let Some(d) = chars.next() {
                match d {
                    '"' => break,
                    '\\' => s.extend(chars.next()),
                    _ => s.push(d),
                }
            }
            out.push(s);
        }
    }
    out
}

/// `key = "value"` at any depth of a body.
fn hcl_attr(body: &str, key: &str) -> Option<String> {
    let mut rest = body;
    while let Some(i) = rest.find(key) {
        let before_ok = rest[..i]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let after = rest[i + key.len()..].trim_start();
        if before_ok && let Some(v) = after.strip_prefix('=') {
            let v = v.trim_start();
            if let Some(v) = v.strip_prefix('"') {
                return v.split('"').next().map(str::to_owned);
            }
        }
        rest = &rest[i + key.len()..];
    }
    None
}

/// The lane a block sets, if any (an expression comes back as `${…}`).
fn hcl_lane(body: &str, strings: &[String]) -> Option<String> {
    if let Some(i) = strings.iter().position(|s| s == "--lane") {
        return Some(strings.get(i + 1).cloned().unwrap_or_default());
    }
    for s in strings {
        if let Some(v) = s.strip_prefix("--lane=") {
            return Some(v.to_owned());
        }
        let words: Vec<&str> = s.split_whitespace().collect();
        if let Some(Some(l)) = serve_lane(&words) {
            return Some(l);
        }
    }
    let mut rest = body;
    while let Some(i) = rest.find("_LANE") {
        let after = &rest[i + "_LANE".len()..];
        let mut t = after.trim_start_matches(|c: char| c == '"' || c.is_whitespace());
        // `{ name = "X_WORKER_LANE", value = "fast" }`
        if let Some(r) = t.strip_prefix(',') {
            t = r.trim_start();
            t = t.strip_prefix("value").unwrap_or(t).trim_start();
        }
        if let Some(r) = t.strip_prefix('=').or_else(|| t.strip_prefix(':')) {
            let r = r.trim_start();
            return Some(match r.strip_prefix('"') {
                Some(v) => v.split('"').next().unwrap_or_default().to_owned(),
                // Not a string: an expression (`var.lane`), written as an interpolation.
                None => format!(
                    "${{{}}}",
                    r.split(|c: char| c.is_whitespace() || c == ',' || c == '}')
                        .next()
                        .unwrap_or_default()
                ),
            });
        }
        rest = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_serves_its_own_lane_else_the_one_exported_before_it() {
        let lanes: Vec<Option<String>> = dev_sh_processes(
            "cargo run -p a -- serve &\nexport ACME_WORKER_LANE=fast\n\
             cargo run -p b -- serve &\nACME_WORKER_LANE=bulk cargo run -p c -- serve &\n\
             export ACME_WORKER_LANE=slow\ncargo run -p d -- serve --lane=x &\n\
             cargo run -p e -- serve &\ncargo run -p f -- health\n",
        )
        .into_iter()
        .map(|p| p.lane)
        .collect();
        let want = [None, Some("fast"), Some("bulk"), Some("x"), Some("slow")];
        assert_eq!(lanes, want.map(|l| l.map(str::to_owned)));
    }

    #[test]
    fn shell_commands_split_words_quotes_and_separators() {
        let cmds = shell_commands(
            "# dev\nexport ACME_WORKER_LANE=default\ncargo run -p m -- serve --lane 'fast' & # bg\n\
             ACME_WORKER_LANE=bulk \\\n  cargo run -- serve; echo \"a # b\"\n",
        );
        assert_eq!(cmds[0], ["export", "ACME_WORKER_LANE=default"]);
        assert_eq!(
            cmds[1],
            ["cargo", "run", "-p", "m", "--", "serve", "--lane", "fast"]
        );
        assert_eq!(
            cmds[2],
            ["ACME_WORKER_LANE=bulk", "cargo", "run", "--", "serve"]
        );
        assert_eq!(cmds[3], ["echo", "a # b"]);
    }

    #[test]
    fn terraform_lanes_in_each_spelling() {
        let tf = strip_hcl_comments(
            "module \"a\" {\n  source = \"../service\"\n}\n\
             module \"b\" { environment = { ACME_WORKER_LANE = \"fast\" } }\n\
             resource \"x\" \"y\" { env = [{ name = \"ACME_WORKER_LANE\", value = \"bulk\" }] }\n\
             module \"c\" { command = [\"serve\", \"--lane\", \"slow\"] } # module \"d\" { command = [\"serve\"] }\n\
             module \"e\" { lane = var.lane\n ACME_WORKER_LANE = var.lane }\n",
        );
        let blocks = hcl_blocks(&tf);
        assert_eq!(blocks.len(), 5);
        let lanes: Vec<Option<String>> = blocks
            .iter()
            .map(|(_, b)| hcl_lane(b, &hcl_strings(b)))
            .collect();
        assert_eq!(
            lanes,
            [
                None,
                Some("fast".into()),
                Some("bulk".into()),
                Some("slow".into()),
                Some("${var.lane}".into())
            ]
        );
        assert_eq!(
            hcl_attr(&blocks[0].1, "source").as_deref(),
            Some("../service")
        );
    }
}
