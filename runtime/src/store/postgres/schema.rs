//! The PostgreSQL schema's versioned migrations.

use deadpool_postgres::Object;

use crate::store::StoreResult;
use crate::time::{Clock, SystemClock};

/// The migrations, in order: (version, SQL). Never edit one that has shipped; add the next.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!("../../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        include_str!("../../../migrations/postgres/0002_ids_dedupe_workers.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/postgres/0003_attempts_counts_meta.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/postgres/0004_remote_workers.sql"),
    ),
    (
        5,
        include_str!("../../../migrations/postgres/0005_has_inputs.sql"),
    ),
    (
        6,
        include_str!("../../../migrations/postgres/0006_operators.sql"),
    ),
    (
        7,
        include_str!("../../../migrations/postgres/0007_state_predicates.sql"),
    ),
];

/// The schema version this runtime writes.
pub(super) const LATEST_VERSION: i64 = crate::store::SCHEMA_VERSION;

/// The schema version in force; 0 before the first migration (or when the schema does not
/// exist yet).
pub(crate) async fn version(conn: &Object) -> StoreResult<i64> {
    let row = conn
        .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])
        .await?;
    if !row.try_get::<_, bool>(0)? {
        return Ok(0);
    }
    let row = conn
        .query_one("SELECT COALESCE(max(version), 0) FROM schema_version", &[])
        .await?;
    Ok(row.try_get(0)?)
}

/// Creates the schema when missing and applies the migrations not applied yet, in one
/// transaction; concurrent migrators wait on an advisory lock, so each step runs once.
pub(crate) async fn migrate(conn: &mut Object, schema: &str, lock_key: i64) -> StoreResult<i64> {
    let tx = conn.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key])
        .await?;
    // `schema` is checked to be a plain identifier when the URL is parsed.
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
         CREATE TABLE IF NOT EXISTS schema_version (
             version    BIGINT PRIMARY KEY,
             applied_at BIGINT NOT NULL
         )"
    ))
    .await?;
    let current: i64 = tx
        .query_one("SELECT COALESCE(max(version), 0) FROM schema_version", &[])
        .await?
        .try_get(0)?;
    crate::store::sql::refuse_newer(current)?;
    let now = SystemClock.now().as_millis();
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)",
            &[v, &now],
        )
        .await?;
        tracing::info!(version = v, schema, "applied queue migration");
    }
    tx.commit().await?;
    Ok(LATEST_VERSION)
}
