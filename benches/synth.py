#!/usr/bin/env python3
"""Writes a synthetic scaffold repository: a Cargo workspace of many crates across the
codemap's layers, each with many .rs files holding realistic `use` lines, qualified paths,
structs, impls and tests. Deterministic for a given --seed.

    python3 benches/synth.py OUT_DIR [--crates 520] [--files 20800] [--seed 7]
"""
import argparse
import os
import random

LAYERS = [  # (layer, folder, share of crates, layers it may import)
    ("workers", "workers", 0.30, ["om", "services", "packages"]),
    ("services", "services", 0.30, ["om", "packages"]),
    ("packages", "packages", 0.30, []),
    ("om", "om", 0.05, []),
    ("apps", "apps", 0.05, ["services", "packages", "om"]),
]

CODEMAP = """version: 1
name: synth
layers:
  workers:  {paths: ["workers/**"], may_import: [om, services, packages, runtime], must_not_import: [apps, infra]}
  services: {paths: ["services/**"], may_import: [om, packages, runtime]}
  om:       {paths: ["om/**"], may_import: [runtime]}
  runtime:  {paths: ["platform/runtime/**"], may_import: []}
  packages: {paths: ["packages/**"], may_import: []}
  apps:     {paths: ["apps/**"], may_import: [services, packages, om]}
  infra:    {paths: ["infra/**"], may_import: []}
agents:
  worker-agent:
    writable:  ["workers/**"]
    forbidden: ["infra/**"]
"""

GATES = """version: 1
gates:
  worker-build: {run: "cargo check -p {package}", evidence: build}
  worker-test:  {run: "cargo test -p {package}",  evidence: test}
rules:
  - when: {paths: ["workers/**"]}
    require: [worker-build, worker-test]
"""

README = """# {name}

## Idempotency
Every effect of a handler runs through `ctx.once`, so a retried item never repeats it.

## Retry
Transient errors are retried with exponential backoff and jitter until max_attempts.

## Checkpoint
Long items checkpoint their progress under the claim's fence.

## Recovery
Items of a killed worker return to the queue when their lease expires.
"""

STD_USES = [
    "use std::collections::HashMap;",
    "use std::sync::Arc;",
    "use std::time::{Duration, Instant};",
    "use std::fmt::{self, Display};",
    "use serde::{Deserialize, Serialize};",
    "use tracing::{debug, info, warn};",
]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def rust_file(rng, crate, deps, idx):
    lines = ["//! Module {} of {}.".format(idx, crate["name"]), ""]
    lines += rng.sample(STD_USES, 3)
    for d in rng.sample(deps, min(len(deps), rng.randint(1, 3))):
        lines.append("use {}::{{{}, module_{}::Item{}}};".format(d["lib"], "prelude", rng.randint(0, 9), rng.randint(0, 9)))
    lines.append("use crate::module_{}::Helper;".format(rng.randint(0, 9)))
    lines.append("")
    n = rng.randint(1, 1000)
    lines.append("#[derive(Debug, Clone, Serialize, Deserialize)]")
    lines.append("pub struct Record{} {{ pub id: u64, pub name: String, pub tags: Vec<String> }}".format(n))
    lines.append("")
    lines.append("impl Record{} {{".format(n))
    lines.append("    pub fn new(id: u64) -> Self {")
    lines.append("        let started = Instant::now();")
    lines.append("        let mut map: HashMap<u64, Arc<String>> = HashMap::new();")
    lines.append("        map.insert(id, Arc::new(format!(\"{}\", id)));")
    if deps:
        d = rng.choice(deps)
        lines.append("        let _value = {}::module_{}::compute(id);".format(d["lib"], rng.randint(0, 9)))
    lines.append("        debug!(elapsed = ?started.elapsed(), \"built\");")
    lines.append("        Self { id, name: String::new(), tags: Vec::new() }")
    lines.append("    }")
    lines.append("")
    lines.append("    pub fn timeout(&self) -> Duration {")
    lines.append("        Duration::from_millis(self.id % 1000)")
    lines.append("    }")
    lines.append("}")
    lines.append("")
    lines.append("impl Display for Record{} {{".format(n))
    lines.append("    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {")
    lines.append("        write!(f, \"{}:{}\", self.id, self.name)")
    lines.append("    }")
    lines.append("}")
    lines.append("")
    lines.append("#[cfg(test)]")
    lines.append("mod tests {")
    lines.append("    use super::*;")
    lines.append("")
    lines.append("    #[test]")
    lines.append("    fn builds() {")
    lines.append("        assert_eq!(Record{}::new(7).id, 7);".format(n))
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--crates", type=int, default=520)
    ap.add_argument("--files", type=int, default=20800)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--literal-members", action="store_true",
                    help="list every member in [workspace] members instead of globs (as cargo new does)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    crates = []
    for layer, folder, share, may in LAYERS:
        count = 1 if layer == "om" else max(1, int(a.crates * share))
        if layer == "apps":  # the remainder, so the total is exactly --crates
            count = max(1, a.crates - len(crates))
        for i in range(count):
            if layer == "om":
                name, d = "synth-om", "om"
            else:
                name, d = "synth-{}-{}".format(layer, i), "{}/{}{}".format(folder, layer[:-1] if layer.endswith("s") else layer, i)
            crates.append({"layer": layer, "name": name, "lib": name.replace("-", "_"), "dir": d, "may": may})
    by_layer = {}
    for c in crates:
        by_layer.setdefault(c["layer"], []).append(c)
    per_crate = max(1, a.files // len(crates))
    write(os.path.join(a.out, "agent/codemap.yml"), CODEMAP)
    write(os.path.join(a.out, "agent/manifests/gate-matrix.yml"), GATES)
    if a.literal_members:
        members = sorted(c["dir"] for c in crates)
    else:
        members = sorted({c["dir"].split("/")[0] + "/*" if "/" in c["dir"] else c["dir"] for c in crates})
    write(os.path.join(a.out, "Cargo.toml"), "[workspace]\nmembers = [{}]\nresolver = \"2\"\n".format(", ".join('"{}"'.format(m) for m in members)))
    total = 0
    for c in crates:
        pool = [d for l in c["may"] for d in by_layer.get(l, [])]
        deps = rng.sample(pool, min(len(pool), 4)) if pool else []
        toml = "[package]\nname = \"{}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n".format(c["name"])
        if c["layer"] == "workers":
            toml += "\n[package.metadata.scaffold]\nrole = \"maintenance\"\n"
            write(os.path.join(a.out, c["dir"], "README.md"), README.replace("{name}", c["name"]))
        toml += "\n[dependencies]\nserde = \"1\"\ntracing = \"0.1\"\n"
        depth = c["dir"].count("/") + 1
        for d in deps:
            toml += "{} = {{ path = \"{}{}\" }}\n".format(d["name"], "../" * depth, d["dir"])
        write(os.path.join(a.out, c["dir"], "Cargo.toml"), toml)
        mods = "\n".join("pub mod module_{};".format(i) for i in range(per_crate - 1))
        write(os.path.join(a.out, c["dir"], "src/lib.rs"), mods + "\npub mod prelude {}\n")
        total += 1
        for i in range(per_crate - 1):
            write(os.path.join(a.out, c["dir"], "src/module_{}.rs".format(i)), rust_file(rng, c, deps, i))
            total += 1
    total += work_queue(a.out, by_layer)
    print("{} crates, {} .rs files in {}".format(len(crates), total, a.out))


def work_queue(out, by_layer):
    """The work-queue shape the kind/lane rules read: a namespace per worker in om (kinds.rs,
    README.md), the root registry, two handlers and their tests per worker, a Settings struct
    per worker with .env.example, a manager per service writing outbox rows, and every lane
    deployed in dev.sh, compose and Terraform. Returns the number of .rs files written."""
    workers = by_layer.get("workers", [])
    services = by_layer.get("services", [])
    om = by_layer["om"][0]
    written = 0
    om_lib = os.path.join(out, om["dir"], "src/lib.rs")
    with open(om_lib) as f:
        lib = f.read()
    mods = ["pub mod root;"] + ["pub mod ns{};".format(i) for i in range(len(workers))]
    write(om_lib, lib + "\n".join(mods) + "\n")
    uses, slices, env = [], [], ["SYNTH_DATABASE_URL=sqlite://.scaffold/queue.db"]
    dev = ["#!/usr/bin/env bash", "set -euo pipefail", "# scaffold:workers"]
    compose = ["services:"]
    tf = []
    for i, w in enumerate(workers):
        ns, kind = "ns{}".format(i), "Ns{}Kind".format(i)
        lane = "bulk" if i % 10 == 0 else "default"
        write(os.path.join(out, om["dir"], "src", ns, "mod.rs"), "pub mod kinds;\n")
        write(os.path.join(out, om["dir"], "src", ns, "README.md"), "# {}\n\nTASK{}_A and TASK{}_B.\n".format(ns, i, i))
        write(os.path.join(out, om["dir"], "src", ns, "kinds.rs"), KINDS.format(i=i, kind=kind, lane=lane))
        written += 2
        uses.append("use crate::{}::kinds::NS{}_KINDS;".format(ns, i))
        slices.append("    NS{}_KINDS,".format(i))
        wdir = os.path.join(out, w["dir"])
        with open(os.path.join(wdir, "src/lib.rs")) as f:
            wlib = f.read()
        write(os.path.join(wdir, "src/lib.rs"), wlib + "pub mod handlers;\npub mod settings;\n")
        write(os.path.join(wdir, "src/handlers.rs"), HANDLERS.format(i=i, kind=kind, om=om["lib"]))
        write(os.path.join(wdir, "src/settings.rs"), SETTINGS.format(i=i))
        write(os.path.join(wdir, "tests/handlers.rs"), TESTS.format(i=i, lib=w["lib"]))
        written += 3
        env.append("SYNTH_WORKER{}_BATCH=100".format(i))
        dev.append("cargo run -p {} -- serve &".format(w["name"]))
        compose += ["  w{}:".format(i), "    image: synth/{}".format(w["name"]), "    command: [\"serve\"]"]
        tf.append('module "w{}" {{\n  source = "../service"\n  name   = "{}"\n}}\n'.format(i, w["name"]))
        if lane != "default":
            dev.append("cargo run -p {} -- serve --lane {} &".format(w["name"], lane))
            compose += ["  w{}-{}:".format(i, lane), "    image: synth/{}".format(w["name"]),
                        "    command: [\"serve\", \"--lane\", \"{}\"]".format(lane)]
            tf.append('module "w{}_{}" {{\n  source      = "../service"\n  environment = {{ SYNTH_WORKER_LANE = "{}" }}\n}}\n'.format(i, lane, lane))
    write(os.path.join(out, om["dir"], "src/root.rs"), "\n".join(uses) + "\nuse scaffold_runtime::WorkKindSpec;\n\npub const KINDS: &[&[WorkKindSpec]] = &[\n    // scaffold:kinds\n" + "\n".join(slices) + "\n];\n")
    written += 1
    for i, s in enumerate(services):
        sdir = os.path.join(out, s["dir"])
        with open(os.path.join(sdir, "src/lib.rs")) as f:
            slib = f.read()
        write(os.path.join(sdir, "src/lib.rs"), slib + "pub mod manager;\n")
        write(os.path.join(sdir, "src/manager.rs"), MANAGER.format(i=i))
        written += 1
    write(os.path.join(out, ".env.example"), "\n".join(env) + "\n")
    write(os.path.join(out, "scripts/dev.sh"), "\n".join(dev + ["wait"]) + "\n")
    write(os.path.join(out, "deployment/local/docker-compose.full.yml"), "\n".join(compose) + "\n")
    write(os.path.join(out, "deployment/terraform/modules/environment/main.tf"), "\n".join(tf))
    return written


KINDS = """use scaffold_runtime::WorkKindSpec;

pub enum {kind} {{
    Task{i}A,
    Task{i}B,
}}

pub const NS{i}_KINDS: &[WorkKindSpec] = &[
    WorkKindSpec {{ name: "TASK{i}_A", permission: "ns{i}.run", ..WorkKindSpec::DEFAULT }},
    WorkKindSpec {{ name: "TASK{i}_B", permission: "ns{i}.run", lane: "{lane}", ..WorkKindSpec::DEFAULT }},
];
"""

HANDLERS = """use scaffold_runtime::{{Item, WorkContext, WorkError, WorkHandler}};
use {om}::ns{i}::kinds::{kind};

const RUN: &str = "ns{i}.run";

pub struct Task{i}AHandler;

impl WorkHandler for Task{i}AHandler {{
    type Payload = serde_json::Value;
    const KIND: &'static str = {kind}::Task{i}A.as_str();
    const REQUIRES: &'static [&'static str] = &[RUN];

    async fn handle(&self, ctx: &WorkContext, _item: &Item<Self::Payload>) -> Result<(), WorkError> {{
        ctx.once("a", || async {{ Ok(()) }}).await
    }}
}}

pub struct Task{i}BHandler;

impl WorkHandler for Task{i}BHandler {{
    type Payload = serde_json::Value;
    const KIND: &'static str = "TASK{i}_B";
    const REQUIRES: &'static [&'static str] = &["ns{i}.run"];

    async fn handle(&self, _ctx: &WorkContext, _item: &Item<Self::Payload>) -> Result<(), WorkError> {{
        let _ = std::process::Command::new("true").status();
        Ok(())
    }}
}}
"""

SETTINGS = """#[derive(Debug, serde::Deserialize)]
pub struct Settings {{
    pub database_url: String,
    pub worker{i}_batch: usize,
}}
"""

TESTS = """use {lib}::handlers::{{Task{i}AHandler, Task{i}BHandler}};
use scaffold_runtime::testing::{{MemoryContainer, item, run_twice}};

#[tokio::test]
async fn a_runs_twice() {{
    let c = MemoryContainer::new();
    run_twice(&c, &Task{i}AHandler, item("TASK{i}_A", &1)).await.expect("runs");
}}

#[tokio::test]
async fn b_runs_twice() {{
    let c = MemoryContainer::new();
    run_twice(&c, &Task{i}BHandler, item("TASK{i}_B", &1)).await.expect("runs");
}}
"""

MANAGER = """use scaffold_runtime::{{NewItem, Store}};

pub struct Service{i}Manager {{
    store: Store,
}}

impl Service{i}Manager {{
    pub async fn save(&self, id: u64) -> Result<(), scaffold_runtime::StoreError> {{
        let item = NewItem::new("TASK{i}_A", serde_json::json!({{ "id": id }}));
        self.store.transaction(|tx| self.store.enqueue_in(tx, item)).await?;
        Ok(())
    }}
}}
"""


if __name__ == "__main__":
    main()
