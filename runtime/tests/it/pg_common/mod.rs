//! Shared by the PostgreSQL test files: a fresh schema per test, dropped when it ends, and
//! the loud skip when no server is named.

#![allow(dead_code)]

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

pub const ENV: &str = "SCAFFOLD_TEST_DATABASE_URL";

/// Drops the test's schema when the test ends (on a thread of its own: the test's runtime
/// may be shutting down).
pub struct SchemaGuard {
    pub url: String,
    pub schema: String,
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let url = self.url.clone();
        let schema = self.schema.clone();
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .ok()?;
                tokio::spawn(conn);
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                    .await
                    .ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("could not drop test schema {}", self.schema);
        }
    }
}

pub fn unique_schema() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "scaffold_test_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000,
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// Whether a server is named; prints that the test is skipped when not.
pub fn database_named() -> bool {
    let named = std::env::var(ENV).is_ok_and(|url| !url.is_empty());
    if !named {
        // Straight to the process's stderr: the test harness captures `eprintln!` of a
        // passing test, and a skip must not pass silently.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {ENV} is not set; this PostgreSQL conformance test did not run"
        );
    }
    named
}

/// A fresh schema's URL on the named server (with `extra` query parameters), and the guard
/// that drops the schema.
pub fn fresh_url(extra: &str) -> (String, SchemaGuard) {
    let base = std::env::var(ENV).expect("database_named() was checked");
    let schema = unique_schema();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}schema={schema}{extra}");
    (url, SchemaGuard { url: base, schema })
}

/// A client on `guard`'s schema (made here) holding the schema an older runtime left:
/// `migrations` applied in order as versions 1, 2, …, each recorded at `applied_at`.
pub async fn old_schema(
    guard: &SchemaGuard,
    migrations: &[&str],
    applied_at: i64,
) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&guard.url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let schema = &guard.schema;
    client
        .batch_execute(&format!(
            "CREATE SCHEMA \"{schema}\"; SET search_path TO \"{schema}\";
             CREATE TABLE schema_version (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)"
        ))
        .await
        .expect("schema");
    for (v, sql) in migrations.iter().enumerate() {
        client.batch_execute(sql).await.expect("an old migration");
        client
            .execute(
                "INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)",
                &[&(v as i64 + 1), &applied_at],
            )
            .await
            .expect("version");
    }
    client
}
