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
//!   `*_LANE`, passes `--lane`, mentions `"serve"`, or instantiates the `service` module
//!   ([`crate::layout::terraform`]); a file that does not parse is a finding of
//!   `lane-undeployed`, and the place then counts as serving every lane.
//!
//! The readers of each place live in [`crate::layout`], which the generator reads too.
//!
//! A lane written with a variable (`$LANE`, `var.lane`, `${…}`) could be any lane: the
//! place then counts as serving every lane.

use std::collections::BTreeSet;

use crate::layout::compose::{get, is_compose_file, scalar, service_worker, words_of};
use crate::layout::dev_sh::{dev_sh_processes, is_lane_var, lane_assignment, serve_lane};
use crate::layout::{DEFAULT_LANE, DEV_SH, terraform};
use crate::repo::Repo;
use crate::repo::yaml::{self, Node, Value};

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
    /// Its files that do not parse, and why: what they serve is unknown, so the place
    /// counts as serving every lane and the rule says so.
    pub unparsed: Vec<(String, terraform::ParseError)>,
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
                self.lanes.insert(DEFAULT_LANE.to_owned());
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

// ---------------------------------------------------------------- compose

fn compose(repo: &Repo) -> Place {
    let files: Vec<&String> = repo.files.iter().filter(|f| is_compose_file(f)).collect();
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
        match terraform::worker_lanes(&text) {
            Ok(lanes) => lanes.into_iter().for_each(|lane| place.add(lane)),
            Err(e) => {
                place.any = true;
                place.unparsed.push((f.clone(), e));
            }
        }
    }
    place
}
