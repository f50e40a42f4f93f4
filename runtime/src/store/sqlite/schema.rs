//! Opening a SQLite queue file safely, and its versioned migrations.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::StoreError;
use crate::store::StoreResult;
use crate::time::{Clock, SystemClock};

/// The migrations, in order: (version, SQL). Never edit one that has shipped; add the next.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../../migrations/sqlite/0001_init.sql")),
    (
        2,
        include_str!("../../../migrations/sqlite/0002_ids_dedupe_workers.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/sqlite/0003_attempts_counts_meta.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/sqlite/0004_remote_workers.sql"),
    ),
    (
        5,
        include_str!("../../../migrations/sqlite/0005_has_inputs.sql"),
    ),
    (
        6,
        include_str!("../../../migrations/sqlite/0006_operators.sql"),
    ),
    (
        7,
        include_str!("../../../migrations/sqlite/0007_state_predicates.sql"),
    ),
];

/// The schema version this runtime writes.
pub const LATEST_VERSION: i64 = crate::store::SCHEMA_VERSION;

const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// How long a writer waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating when missing) the queue database at `path`. Refuses, without writing a
/// byte, a path that is a directory, a file that does not start with the SQLite header,
/// and a database whose schema is newer than [`LATEST_VERSION`].
pub(crate) fn open(path: &Path) -> StoreResult<Connection> {
    let not_a_db = || StoreError::NotADatabase {
        path: path.to_owned(),
    };
    match fs::metadata(path) {
        // A folder, a device (`/dev/null`: SQLite would then write `/dev/null-journal`
        // beside it), a FIFO: not a database, and nothing is written.
        Ok(meta) if !meta.is_file() => return Err(not_a_db()),
        Ok(meta) if meta.len() > 0 => {
            let mut header = [0u8; 16];
            let mut file = fs::File::open(path).map_err(|source| StoreError::Unwritable {
                path: path.to_owned(),
                source,
            })?;
            if file.read_exact(&mut header).is_err() || &header != SQLITE_HEADER {
                return Err(not_a_db());
            }
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => ensure_parent(path)?,
        Err(source) => {
            return Err(StoreError::Unwritable {
                path: path.to_owned(),
                source,
            });
        }
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| map_open_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| map_open_error(path, e))?;
    // Refuse a newer schema before configuring anything: switching to WAL writes the header.
    let found = version(&conn).map_err(|e| map_open_error(path, e))?;
    crate::store::sql::refuse_newer(found)?;
    configure(&conn).map_err(|e| map_open_error(path, e))?;
    Ok(conn)
}

/// The folder a new database file goes in must exist: a typo in a URL must not create
/// folders anywhere on the machine (`sqlite:///nonexistent/x.db`). The one exception is the
/// default's `.scaffold/`, created (one level, never through a symlink) when its own parent
/// exists.
fn ensure_parent(path: &Path) -> StoreResult<()> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    match fs::symlink_metadata(parent) {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(StoreError::Unwritable {
                path: path.to_owned(),
                source: e,
            });
        }
        Err(_) => {}
    }
    if parent.file_name() == Some(std::ffi::OsStr::new(".scaffold")) {
        return fs::create_dir(parent).map_err(|source| StoreError::Unwritable {
            path: path.to_owned(),
            source,
        });
    }
    Err(StoreError::MissingDirectory {
        path: path.to_owned(),
        dir: parent.to_owned(),
    })
}

fn map_open_error(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotADatabase {
            path: path.to_owned(),
        },
        Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly) => {
            StoreError::Unwritable {
                path: path.to_owned(),
                source: std::io::Error::other(e.to_string()),
            }
        }
        _ => StoreError::Sqlite(e),
    }
}

/// WAL (readers never block the writer), `synchronous=NORMAL` (durable at checkpoints, no
/// fsync per commit: a power cut may lose the last commits, never corrupt), a busy timeout.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    tracing::debug!(journal_mode = %mode, "opened sqlite queue");
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 4000; PRAGMA cache_size = -32000;")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// The schema version in force; 0 before the first migration.
pub(crate) fn version(conn: &Connection) -> rusqlite::Result<i64> {
    let has_table: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(0);
    }
    conn.query_row(
        "SELECT COALESCE(max(version), 0) FROM schema_version",
        [],
        |r| r.get(0),
    )
}

/// Applies the migrations not applied yet, in one write transaction.
pub(crate) fn migrate(conn: &mut Connection) -> StoreResult<i64> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version (
             version    INTEGER PRIMARY KEY,
             applied_at INTEGER NOT NULL
         )",
    )?;
    let current = version(&tx)?;
    crate::store::sql::refuse_newer(current)?;
    let now = SystemClock.now().as_millis();
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
            (v, now),
        )?;
        tracing::info!(version = v, "applied queue migration");
    }
    tx.commit()?;
    Ok(LATEST_VERSION)
}
