//! # remote-worker-database
//!
//! ## What it finds
//! A remote worker — a crate with `[package.metadata.scaffold] remote = true` — that links
//! a database driver or reads a database setting:
//! - a `[dependencies]` entry (or `[target.'…'.dependencies]`) on a driver: `rusqlite`,
//!   `tokio-postgres`, `postgres`, `sqlx`, `diesel`, `sea-orm`, `mongodb`, `redis`,
//!   `mysql`, `tiberius`, `scylla`, … (renamed ones by their package);
//! - `scaffold-runtime` with its `sqlite` or `postgres` feature, or with its default
//!   features on (which are those two) — including a member's `default-features = false`
//!   that cargo ignores because the `[workspace.dependencies]` entry leaves them on;
//! - either of those through a workspace crate it depends on, at any depth (the finding
//!   names the chain);
//! - a field of its `Settings` named for a database (`database_url`, `db_url`, `dsn`,
//!   `pg…`, `postgres…`, `sqlite…`, `redis_url`, `mongo…`).
//!
//! Dev-dependencies are not reported: a remote worker's tests may start a coordinator over
//! SQLite, and they are not linked into the binary that ships (under resolver 2, which the
//! generated workspace sets; resolver 1 would unify their features into the build). Not
//! read yet: a crate's own `[features]` turning on `scaffold-runtime/sqlite`.
//!
//! ## Why
//! A remote worker runs where the queue's database credentials must never go; it reaches
//! the queue through the coordinator (`scaffold queue serve`) with a device key. A linked
//! driver is how a credential gets used the day someone passes one, and a database setting
//! is where it would be put.
//!
//! ## Example
//! ```toml
//! # workers/render/Cargo.toml
//! [package.metadata.scaffold]
//! role = "maintenance"
//! remote = true
//!
//! [dependencies]
//! rusqlite = "0.37"                                   # remote-worker-database
//! scaffold-runtime = { workspace = true }             # remote-worker-database: sqlite, postgres
//! ```
//!
//! ## Fix
//! Remove the driver; build the runtime with `default-features = false, features =
//! ["remote"]` (and `default-features = false` on the `[workspace.dependencies]` entry, or
//! a path dependency of the worker's own); take the database setting out of `Settings` —
//! the worker's settings are its coordinator URL, token file, state directory and CA file.

use std::collections::BTreeSet;

use super::super::context::Context;
use super::super::finding::Finding;
use super::super::sink::Sink;
use super::super::workqueue::settings;
use crate::repo::workspace::{Crate, Dep, DepKind, Workspace};

/// The rule, declared once: `scaffold rules`, `rules/catalogue.yml` and the README's
/// rule table are built from this.
pub const RULE: super::Decl = super::Decl {
    id: "remote-worker-database",
    severity: crate::check::finding::Severity::Error,
    scope: super::Scope::RepoWide,
    summary: "a remote worker that links a database driver (directly, through a workspace crate, or through the runtime's sqlite/postgres features) or reads a database setting",
    severity_note: "",
    finds: "a `remote = true` worker linking a database driver (directly, through a workspace crate or the runtime's `sqlite`/`postgres` features) or with a database setting",
};
pub const ID: &str = RULE.id;

/// Packages that talk to a database (or embed one).
const DRIVERS: &[&str] = &[
    "bb8-postgres",
    "bb8-redis",
    "cdrs-tokio",
    "deadpool-postgres",
    "deadpool-redis",
    "deadpool-sqlite",
    "diesel",
    "diesel-async",
    "duckdb",
    "fred",
    "libsql",
    "libsqlite3-sys",
    "mongodb",
    "mysql",
    "mysql_async",
    "postgres",
    "pq-sys",
    "r2d2_postgres",
    "r2d2_sqlite",
    "redis",
    "rusqlite",
    "scylla",
    "sea-orm",
    "sqlite",
    "sqlx",
    "sqlx-mysql",
    "sqlx-postgres",
    "sqlx-sqlite",
    "surrealdb",
    "tiberius",
    "tokio-postgres",
    "tokio-rusqlite",
];

/// The runtime's package, and the features of it that link a database driver.
const RUNTIME: &str = "scaffold-runtime";
const RUNTIME_DATABASE_FEATURES: &[&str] = &["sqlite", "postgres"];

/// How deep a chain of workspace crates is followed.
const MAX_DEPTH: usize = 64;

pub fn run(ctx: &Context<'_>, sink: &mut Sink) {
    let ws = &ctx.repo.workspace;
    let remote: Vec<usize> = ws
        .crates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.remote.is_some())
        .map(|(i, _)| i)
        .collect();
    if remote.is_empty() {
        return;
    }
    for &i in &remote {
        let c = &ws.crates[i];
        for d in linked(c) {
            let mut seen = BTreeSet::from([i]);
            let Some(chain) = database_in(ws, d, &mut seen, 0) else {
                continue;
            };
            sink.push(
                Finding::new(ID, c.manifest.path.clone(), d.loc)
                    .message(format!(
                        "remote worker `{}` links a database: {}",
                        c.package, chain.said
                    ))
                    .label(chain.label)
                    .help(chain.help),
            );
        }
    }
    for f in settings::fields(ctx) {
        if !remote.contains(&f.krate) || !database_setting(&f.key) {
            continue;
        }
        let package = &ws.crates[f.krate].package;
        sink.push(
            Finding::new(ID, f.path.clone(), f.at)
                .message(format!(
                    "remote worker `{package}` has a database setting `{}`",
                    f.field
                ))
                .label("a database setting")
                .help(
                    "a remote worker holds no database credentials: remove the setting; it reaches the queue through the coordinator (its coordinator URL, token file, state directory and CA file)",
                ),
        );
    }
}

/// The dependencies linked into a crate's binary: normal ones, on any target.
fn linked(c: &Crate) -> impl Iterator<Item = &Dep> {
    c.deps.iter().filter(|d| d.kind == DepKind::Normal)
}

/// What a dependency brings in, said three ways.
struct Chain {
    said: String,
    label: String,
    help: String,
}

/// Whether `d` links a database: itself a driver, the runtime with a database feature, or
/// a workspace crate that links one (followed at most [`MAX_DEPTH`] deep, each once).
fn database_in(ws: &Workspace, d: &Dep, seen: &mut BTreeSet<usize>, depth: usize) -> Option<Chain> {
    if DRIVERS.contains(&d.package.as_str()) {
        return Some(Chain {
            said: format!("it depends on the driver `{}`", d.package),
            label: format!("database driver `{}`", d.package),
            help: format!(
                "remove `{}`: a remote worker reaches the queue through the coordinator and holds no database",
                d.key
            ),
        });
    }
    if d.package == RUNTIME {
        let on = runtime_database_features(d);
        if !on.is_empty() {
            let how = if d.default_features && !d.features.iter().any(|f| on.contains(&f.as_str()))
            {
                "default features on"
            } else {
                "features"
            };
            return Some(Chain {
                said: format!(
                    "it builds `{RUNTIME}` with its {how} ({}, each a database driver)",
                    on.iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
                label: format!("{RUNTIME} with {}", on.join(", ")),
                help: format!(
                    "write `{} = {{ …, default-features = false, features = [\"remote\"] }}` (with `workspace = true`, the `[workspace.dependencies]` entry needs `default-features = false` too, or cargo keeps the defaults)",
                    d.key
                ),
            });
        }
        return None;
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    let next = d.path.as_deref().and_then(|p| ws.by_dir(p))?;
    if !seen.insert(next) {
        return None;
    }
    let inner = &ws.crates[next];
    for dd in linked(inner) {
        if let Some(found) = database_in(ws, dd, seen, depth + 1) {
            return Some(Chain {
                said: format!(
                    "through `{}`, {}",
                    inner.package,
                    found.said.replacen("it ", "which ", 1)
                ),
                label: format!("links a database through `{}`", inner.package),
                help: format!(
                    "depend on a crate that links no database, or move what `{}` needs of the database behind the coordinator; {}",
                    inner.package, found.help
                ),
            });
        }
    }
    None
}

/// The runtime's database features `d` turns on (its defaults are both).
fn runtime_database_features(d: &Dep) -> Vec<&'static str> {
    RUNTIME_DATABASE_FEATURES
        .iter()
        .copied()
        .filter(|f| d.default_features || d.features.iter().any(|x| x == f || x == "default"))
        .collect()
}

/// Whether a setting's key names a database.
fn database_setting(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    k.contains("database")
        || k.contains("db_url")
        || k == "dsn"
        || k.ends_with("_dsn")
        || k.starts_with("pg")
        || k.contains("postgres")
        || k.contains("sqlite")
        || k.contains("mysql")
        || k.contains("redis_url")
        || k.contains("mongo")
}

#[cfg(test)]
mod tests {
    use super::database_setting;

    #[test]
    fn database_settings_are_named_for_a_database() {
        for yes in [
            "database_url",
            "DATABASE-URL",
            "queue_db_url",
            "dsn",
            "pg_host",
            "postgres_password",
            "sqlite_path",
            "redis_url",
            "mongo_uri",
        ] {
            assert!(database_setting(yes), "{yes}");
        }
        for no in [
            "coordinator_url",
            "token_file",
            "state_dir",
            "ca_file",
            "concurrency",
            "lane",
            "dbg_level",
        ] {
            assert!(!database_setting(no), "{no}");
        }
    }
}
