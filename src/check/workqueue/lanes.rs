//! Which lanes have a worker process, in each place workers run: `scripts/dev.sh`, the
//! local compose file, and Terraform.
//!
//! - **dev.sh**: a command with the word `serve` runs a worker (the worker whose package it
//!   runs, when it is one under `workers/`); it is told `--lane <l>` (or `--lane=<l>`) after
//!   it, and the upper-case `…_LANE=<l>` variables on the command or exported earlier.
//! - **compose** (`deployment/local/docker-compose*.yml`): a service whose `command` or
//!   `entrypoint` has `serve`, or that sets `*_LANE` in its `environment`, or that has
//!   no command and builds an image whose Dockerfile's `CMD`/`ENTRYPOINT` runs `serve`; its
//!   worker is the `<worker>` of the `<worker>.Dockerfile` it builds, else its name.
//! - **Terraform** (`deployment/terraform/**/*.tf`): a `module`/`resource` block that sets
//!   `*_LANE`, passes `--lane`, mentions `"serve"`, or instantiates the `service` module
//!   ([`crate::layout::terraform`]); its worker is its `worker`, else its `name`.
//!
//! A process of a known worker serves the lane of its `--lane`, else of its own lane variable
//! (`<NAME>_WORKER_LANE` for the maintenance worker, `<NAME>_<WORKER>_LANE` for another),
//! else the lanes its kinds' specs name — what the generated loop claims on
//! ([`crate::layout::lane`]). A process of no known worker serves its `--lane`, else any lane
//! variable's, else `default`.
//!
//! The coordinator (`platform/coordinator/`, what `scaffold worker --remote` adds) is not a
//! worker: its `serve` claims nothing, so its process (dev.sh running its package, a compose
//! service building `coordinator.Dockerfile`) serves no lane. Only those two are told
//! apart: a service merely named `coordinator` is judged like any other.
//!
//! A file of a place that cannot be read, or does not parse (YAML, HCL), is a finding of
//! `lane-undeployed` (fail closed: never a silent skip), and its place then counts as
//! serving every lane; so is a compose service's Dockerfile that cannot be read.
//!
//! The readers of each place live in [`crate::layout`], which the generator reads too.
//!
//! A lane written with a variable (`$LANE`, `var.lane`, `${…}`) could be any lane: the
//! place then counts as serving every lane.

use std::collections::BTreeSet;

use crate::check::finding::Location;
use crate::layout::compose::{get, is_compose_file, scalar, service_worker, words_of};
use crate::layout::dev_sh::{
    dev_sh_processes, is_lane_var, lane_var_assignment, runs_package, serve_lane,
};
use crate::layout::lane::LaneSettings;
use crate::layout::{DEFAULT_LANE, DEV_SH, terraform, worker_folder};
use crate::repo::yaml::{self, Node, Value};
use crate::repo::{Repo, TEXT_LIMIT, Unread};

/// One place workers run.
#[derive(Debug, Clone, Default)]
pub struct Place {
    /// How the finding names it (a file, or a folder for Terraform).
    pub name: String,
    /// Whether the repository has it at all.
    pub exists: bool,
    pub lanes: BTreeSet<String>,
    /// The workers with a process here told no lane of their own: each serves the lanes of
    /// its kinds' specs.
    pub own: BTreeSet<String>,
    /// A process whose lane is a variable: it may serve any lane.
    pub any: bool,
    /// For a place where each worker is optional (the local compose file, where
    /// `scaffold worker --container` adds a worker or not): the workers it runs, by the
    /// name of their `deployment/docker/<worker>.Dockerfile` or, without one, the service.
    /// `None` for places that must run every worker.
    pub workers: Option<BTreeSet<String>>,
    /// Its files that cannot be read or do not parse, and why: what they serve is
    /// unknown, so the place counts as serving every lane and the rule says so.
    pub unknown: Vec<(String, Unknown)>,
}

/// Why what a file of a place serves is unknown.
#[derive(Debug, Clone)]
pub enum Unknown {
    /// It was not read.
    Unread(Unread),
    /// It does not parse as `language`.
    Syntax {
        language: &'static str,
        message: String,
        at: Location,
    },
}

impl Place {
    /// Whether a process here serves `lane`, whose kinds the workers `handled_by` handle.
    /// `None`: who handles some kind on it is not known (a `KIND` the checker cannot read),
    /// so a process that serves its own kinds' lanes may serve it: not guessed against.
    pub fn serves(&self, lane: &str, handled_by: Option<&[String]>) -> bool {
        self.any
            || self.lanes.contains(lane)
            || match handled_by {
                Some(h) => h.iter().any(|w| self.own.contains(w)),
                None => !self.own.is_empty(),
            }
    }

    /// Reads one of the place's files; one that cannot be read makes what the place serves
    /// unknown.
    fn read(&mut self, repo: &Repo, path: &str) -> Option<String> {
        match repo.read_within(path, None, TEXT_LIMIT) {
            Ok(text) => Some(text),
            Err(why) => {
                self.unknown_file(path, Unknown::Unread(why));
                None
            }
        }
    }

    /// The place's files that are symlinks (never read): each makes what the place serves
    /// unknown.
    fn links(&mut self, repo: &Repo, of_place: impl Fn(&str) -> bool) {
        for link in repo.links.iter().filter(|l| of_place(l)) {
            self.exists = true;
            self.unknown_file(link, Unknown::Unread(Unread::Unreadable));
        }
    }

    fn unknown_file(&mut self, path: &str, why: Unknown) {
        self.any = true;
        self.unknown.push((path.to_owned(), why));
    }

    /// A process of `worker` (when known) told `lane`.
    fn add(&mut self, worker: Option<&str>, lane: &LaneSettings) {
        let told = match worker {
            Some(w) => lane.lane_of(w),
            None => lane.lane(),
        };
        match (told, worker) {
            (Some(l), _) if is_variable(&l) => self.any = true,
            (Some(l), _) => {
                self.lanes.insert(l);
            }
            (None, Some(w)) => {
                self.own.insert(w.to_owned());
            }
            (None, None) => {
                self.lanes.insert(DEFAULT_LANE.to_owned());
            }
        }
    }
}

/// Whether a compose service builds the coordinator's image (`…/coordinator.Dockerfile`):
/// a service merely named `coordinator` could run anything.
fn builds_coordinator(svc: &Node) -> bool {
    get(svc, "build")
        .and_then(|b| get(b, "dockerfile"))
        .and_then(scalar)
        .is_some_and(|df| {
            df.rsplit('/').next() == Some(&format!("{}.Dockerfile", crate::layout::COORDINATOR))
        })
}

/// The coordinator's package, when `platform/coordinator/` is a crate of the workspace.
fn coordinator_package(repo: &Repo) -> Option<&str> {
    repo.workspace
        .crates
        .iter()
        .find(|c| c.dir == crate::layout::COORDINATOR_DIR)
        .map(|c| c.package.as_str())
}

/// Whether `workers/<worker>/` is a crate of the workspace.
fn is_worker(repo: &Repo, worker: &str) -> bool {
    repo.workspace
        .crates
        .iter()
        .any(|c| worker_folder(&c.dir) == Some(worker))
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
    let text = match repo.read_listed(DEV_SH) {
        Ok(None) => return place,
        Ok(Some(text)) => text,
        Err(why) => {
            place.exists = true;
            place.unknown_file(DEV_SH, Unknown::Unread(why));
            return place;
        }
    };
    place.exists = true;
    let workers: Vec<(&str, String)> = repo
        .workspace
        .crates
        .iter()
        .filter_map(|c| Some((c.package.as_str(), worker_folder(&c.dir)?.to_owned())))
        .collect();
    let coordinator = coordinator_package(repo);
    for process in dev_sh_processes(&text) {
        if coordinator.is_some_and(|package| {
            runs_package(
                &process.words,
                package,
                &format!("{}/Cargo.toml", crate::layout::COORDINATOR_DIR),
            )
        }) {
            continue;
        }
        let worker = workers.iter().find_map(|(package, w)| {
            runs_package(
                &process.words,
                package,
                &crate::layout::worker_file(w, "Cargo.toml"),
            )
            .then_some(w.as_str())
        });
        place.add(worker, &process.lane);
    }
    place
}

// ---------------------------------------------------------------- compose

fn compose(repo: &Repo) -> Place {
    let files: Vec<&String> = repo.files.iter().filter(|f| is_compose_file(f)).collect();
    let mut place = Place {
        name: files
            .first()
            .map_or(crate::layout::COMPOSE.to_owned(), |f| (*f).clone()),
        exists: !files.is_empty(),
        workers: Some(BTreeSet::new()),
        ..Place::default()
    };
    place.links(repo, is_compose_file);
    for f in files {
        let Some(text) = place.read(repo, f) else {
            continue;
        };
        let root = match yaml::parse(&text) {
            Ok(root) => root,
            Err(e) => {
                let at = Location {
                    len: 1,
                    ..e.pos.into()
                };
                place.unknown_file(
                    f,
                    Unknown::Syntax {
                        language: "YAML",
                        message: e.message,
                        at,
                    },
                );
                continue;
            }
        };
        let Some(services) = get(&root, "services") else {
            continue;
        };
        let Value::Map(entries) = &services.value else {
            continue;
        };
        let has_coordinator = coordinator_package(repo).is_some();
        for (key, svc) in entries {
            let worker = service_worker(key.as_str().unwrap_or_default(), svc);
            let known = is_worker(repo, &worker).then_some(worker.as_str());
            if known.is_none() && builds_coordinator(svc) && has_coordinator {
                continue;
            }
            if compose_service(repo, svc, known, &mut place)
                && let Some(w) = &mut place.workers
            {
                w.insert(worker);
            }
        }
    }
    place
}

/// Adds the lane of a service that runs a worker (`worker`, when it is a known one); whether
/// it does.
fn compose_service(repo: &Repo, svc: &Node, worker: Option<&str>, place: &mut Place) -> bool {
    let command = words_of(get(svc, "command"));
    let entry = words_of(get(svc, "entrypoint"));
    let mut words: Vec<String> = entry.clone().unwrap_or_default();
    words.extend(command.clone().unwrap_or_default());
    let mut lane = LaneSettings::default();
    match get(svc, "environment").map(|env| &env.value) {
        Some(Value::Map(entries)) => {
            for (k, v) in entries {
                if let Some(k) = k.as_str().filter(|k| is_lane_var(k)) {
                    lane.set(k, scalar(v).unwrap_or_default());
                }
            }
        }
        Some(Value::Seq(items)) => {
            for (k, v) in items
                .iter()
                .filter_map(scalar)
                .filter_map(|item| lane_var_assignment(&item))
            {
                lane.set(&k, v);
            }
        }
        _ => {}
    }
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    let serve = serve_lane(&refs);
    let image_serves = command.is_none() && entry.is_none() && dockerfile_serves(repo, svc, place);
    if serve.is_none() && lane.vars.is_empty() && !image_serves {
        return false;
    }
    lane.flag = serve.flatten();
    place.add(worker, &lane);
    true
}

/// Whether the service builds from a Dockerfile of the repo whose CMD/ENTRYPOINT is `serve`
/// (a Dockerfile that cannot be read is unknown to `place`).
fn dockerfile_serves(repo: &Repo, svc: &Node, place: &mut Place) -> bool {
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
    let path = path.clone();
    place.read(repo, &path).is_some_and(|text| {
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
        .filter(|f| f.starts_with(crate::layout::TF_DIR) && f.ends_with(".tf"))
        .collect();
    let mut place = Place {
        name: crate::layout::TF_DIR.trim_end_matches('/').to_owned(),
        exists: !files.is_empty(),
        ..Place::default()
    };
    // A linked `.tf` file, or a linked folder (Terraform would read the files in it),
    // told by its name: the link is not followed, not even to ask what it points at.
    place.links(repo, |l| {
        l.strip_prefix(crate::layout::TF_DIR).is_some_and(|rest| {
            rest.ends_with(".tf") || !rest.rsplit('/').next().unwrap_or(rest).contains('.')
        })
    });
    for f in files {
        let Some(text) = place.read(repo, f) else {
            continue;
        };
        match terraform::worker_blocks(&text) {
            Ok(blocks) => {
                for block in blocks {
                    let worker = block.worker.as_deref().filter(|w| is_worker(repo, w));
                    place.add(worker, &block.lane);
                }
            }
            Err(e) => {
                let at = Location::from(&e);
                place.unknown_file(
                    f,
                    Unknown::Syntax {
                        language: "HCL",
                        message: e.message,
                        at,
                    },
                );
            }
        }
    }
    place
}
