//! The PostgreSQL backend (`postgres://…`): one queue shared by worker processes on many
//! hosts.
//!
//! - **Driver and pool**: `tokio-postgres` (async, binary protocol, statement pipelining,
//!   no compile-time database) behind a `deadpool-postgres` pool with cached prepared
//!   statements. The pool's "fast" recycling drops a connection whose socket closed (for
//!   instance one cut by `pg_terminate_backend`), so the next call reconnects.
//! - **Claims** are one statement: `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)`, which
//!   sets the lease and increments the fence of every row it takes; concurrent claimers skip
//!   each other's rows instead of waiting.
//! - **Completions** are batched in one `UPDATE … FROM unnest($ids, $fences)` that still
//!   matches each row's own fence, state and lease.
//! - **Producer transactions** ([`crate::Store::transaction`]) take a synchronous body: the
//!   backend takes a pooled connection, opens the transaction, and runs the body on tokio's
//!   blocking pool, where the outbox insert blocks on the runtime's handle
//!   (`Handle::block_on`) while the connection's own task keeps running on the runtime's
//!   workers. No second runtime or driver is needed, and the async paths stay async.
//! - **One sweeper and one relay at a time** across all hosts: each pass runs in a
//!   transaction that first takes `pg_advisory_xact_lock` on a key derived from the schema,
//!   so passes are serialised; a later pass finds (through the lease index) little left to
//!   do. A transaction-scoped lock has no holder to fail over from: when a host dies
//!   mid-pass its transaction aborts, the lock is freed and the next pass goes ahead. (A
//!   `try` lock that skips the pass was tried and dropped: a skipped `sweep()` could return
//!   while a pass with an earlier `now` left just-expired leases in place.)
//! - **Wake-ups**: every write that makes items claimable sends `pg_notify` on the schema's
//!   channel (payload: the lane, or `*`), delivered at commit; an idle claimer waits on a
//!   dedicated `LISTEN` connection (opened by the first waiter, re-opened with backoff) and
//!   the work loop's poll interval is only the fallback (items whose `run_at` or backoff
//!   comes due are found by it).
//! - Tables live in the schema named by `?schema=NAME` (default `public`): tests isolate
//!   each run in a fresh schema.
//! - **TLS** with rustls: `sslmode=disable|prefer|require|verify-ca|verify-full` and
//!   `sslrootcert=FILE`, as libpq spells them (see `tls`).
//! - **Clock**: the backend writes the times the [`crate::Store`] hands it; `Store::open`
//!   hands it the server's clock ([`crate::DatabaseClock`]), measured by
//!   [`PostgresBackend::sync_clock`].

mod coordinator;
mod dashboard;
mod listen;
mod ops;
mod schema;
mod tls;

pub use tls::{SslMode, TlsSettings};

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use serde_json::Value;

use crate::error::StoreError;
use crate::item::{
    AttemptRecord, Claimed, EffectRecord, EffectStart, Enqueued, Finish, Held, ItemId, ItemRecord,
    ListFilter, NewItem, OutboxStats, WorkerRecord, WorkerState,
};
use crate::store::{
    Backend, BoxFuture, ClaimRequest, Counts, LaneAges, RelayReport, StoreResult, TxBody,
};
use crate::time::Timestamp;

pub(crate) use ops::insert_outbox_in;

/// Connections a backend keeps at most unless `?pool_size=N` says otherwise.
pub const DEFAULT_POOL_SIZE: usize = 10;

/// Planner settings of every session the backend opens.
///
/// The claim must walk `work_items_claim` in order and stop after `n` rows. Without this,
/// the planner picks a bitmap scan of the lane plus a sort of **every** claimable row
/// whenever its estimates say the index is small (always on a fresh table, whose partial
/// indexes report 0 tuples until a vacuum; and after any analyze that caught the queue
/// nearly empty): each claim then sorts the whole backlog (measured: 35–60 ms per claim of
/// 500 on a 100k backlog, spilling to disk). Worse, a bitmap scan never marks dead index
/// entries as dead, so between vacuums every claim re-reads every row version claimed since
/// the last one: the retention soak lost 60% of its throughput in 12 rounds that way. A
/// plain index scan marks them as it passes and later claims skip them. No query of the
/// runtime needs a bitmap scan (they are point, ordered or whole-table reads).
const CLAIM_PLANNER_SETTINGS: &str =
    "-c enable_bitmapscan=off -c plan_cache_mode=force_custom_plan";

/// Where the queue lives: the server, the schema and the pool size, parsed from a URL.
#[derive(Debug, Clone)]
pub struct PgTarget {
    pub config: tokio_postgres::Config,
    pub schema: String,
    pub pool_size: usize,
    pub tls: TlsSettings,
}

impl PgTarget {
    /// Parses `postgres://user@host:port/db?schema=NAME&pool_size=N` (any other query
    /// parameter goes to the driver). The schema name must be a plain identifier.
    pub fn parse(url: &str) -> StoreResult<PgTarget> {
        let bad = |parameter: &str, value: Option<&str>, allowed: &str| {
            crate::store::url::bad_parameter(url, parameter, value, allowed)
        };
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut schema = "public".to_owned();
        let mut pool_size = DEFAULT_POOL_SIZE;
        let mut tls = TlsSettings::default();
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("schema", v)) => schema = v.to_owned(),
                Some(("pool_size", v)) => {
                    pool_size = v
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad("pool_size", Some(v), POOL_SIZES))?;
                }
                // TLS is ours (rustls), not the driver's: it knows neither verify modes
                // nor sslrootcert.
                Some(("sslmode", v)) => {
                    tls.mode =
                        SslMode::parse(v).ok_or_else(|| bad("sslmode", Some(v), SSL_MODES))?;
                }
                Some(("sslrootcert", v)) => {
                    let path = percent_encoding::percent_decode_str(v)
                        .decode_utf8()
                        .map_err(|_| {
                            bad("sslrootcert", None, "a file's path, percent-encoded UTF-8")
                        })?;
                    tls.root_cert = Some(std::path::PathBuf::from(path.as_ref()));
                }
                Some(("sslcert" | "sslkey" | "sslcrl" | "sslpassword", _)) => {
                    return Err(StoreError::PostgresTls {
                        message: "client certificates (sslcert, sslkey) and sslcrl are not supported; authenticate with a password or the server's trust rules".to_owned(),
                    });
                }
                _ => rest.push(pair),
            }
        }
        if !is_identifier(&schema) {
            return Err(bad("schema", Some(&schema), SCHEMAS));
        }
        let driver_url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config =
            tokio_postgres::Config::from_str(&driver_url).map_err(|e| driver_refused(url, &e))?;
        config.ssl_mode(tls.mode.driver());
        // No bitmap scans on the queue's sessions (see `CLAIM_PLANNER_SETTINGS`).
        config.options(format!("-c search_path={schema} {CLAIM_PLANNER_SETTINGS}"));
        if config.get_application_name().is_none() {
            config.application_name("scaffold-runtime");
        }
        config.connect_timeout(Duration::from_secs(10));
        Ok(PgTarget {
            config,
            schema,
            pool_size,
            tls,
        })
    }
}

impl PgTarget {
    /// `host:port/database` (no user, no password), for messages.
    pub fn describe(&self) -> String {
        let host = self
            .config
            .get_hosts()
            .first()
            .map(|h| match h {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_else(|| "localhost".to_owned());
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let db = self.config.get_dbname().unwrap_or("");
        format!("{host}:{port}/{db}")
    }
}

/// One connection to the server `url` names, read with the queue's URL grammar (`schema=`
/// becomes the search path and is created when missing; `sslmode=`/`sslrootcert=` as for
/// the queue): for a worker's own tables on the queue's server, such as a projection.
/// The connection's driver runs on a task of its own until the client is dropped.
pub async fn connect_client(url: &str) -> StoreResult<tokio_postgres::Client> {
    let target = PgTarget::parse(url)?;
    let connector = tls::connector(&target.tls)?;
    let (client, connection) =
        target
            .config
            .connect(connector)
            .await
            .map_err(|e| StoreError::PostgresConnect {
                target: Some(target.describe()),
                cause: crate::error::describe_postgres(&e),
            })?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "a PostgreSQL connection closed");
        }
    });
    // `schema` is checked to be a plain identifier when the URL is parsed.
    client
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{}\"",
            target.schema
        ))
        .await?;
    Ok(client)
}

pub use crate::store::url::redact_password;

/// What `pool_size=` takes.
const POOL_SIZES: &str = "a whole number of connections, at least 1";
/// What `sslmode=` takes.
const SSL_MODES: &str = "one of disable, prefer, require, verify-ca, verify-full";
/// What `schema=` takes.
const SCHEMAS: &str = "a plain identifier: lower-case ASCII letters, digits and _, not starting with a digit, at most 54 bytes (its wake-up channel scaffold_<schema> must fit PostgreSQL's 63)";

/// The driver's refusal of the rest of the URL, naming the parameter where it names one
/// (its other messages may quote a character of the URL, a password's among them: those
/// are not repeated).
fn driver_refused(url: &str, e: &tokio_postgres::Error) -> StoreError {
    let cause = std::error::Error::source(e)
        .map(ToString::to_string)
        .unwrap_or_default();
    let named = |prefix: &str| {
        cause
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('`'))
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name.to_owned())
    };
    if let Some(name) = named("invalid value for option ") {
        return crate::store::url::bad_parameter(url, &name, None, "a value libpq accepts for it");
    }
    if let Some(name) = named("unknown option ") {
        return crate::store::url::bad_parameter(
            url,
            &name,
            None,
            "nothing: it is not a parameter the queue knows (schema, pool_size, sslmode, sslrootcert) \
             nor one libpq does (application_name, connect_timeout, keepalives, …)",
        );
    }
    StoreError::InvalidUrl {
        url: redact_password(url),
    }
}

/// A plain lower-case SQL identifier: lower-case ASCII letters, digits and `_`, not starting
/// with a digit. Lower case only: the search path names the schema unquoted, which folds it
/// to lower case, while `CREATE SCHEMA` quotes it, so `Queue` would create one schema and
/// search another.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.len() <= MAX_SCHEMA_LEN
}

/// The longest schema name: its wake-up channel, `scaffold_<schema>`, must fit in
/// PostgreSQL's 63-byte identifiers.
pub const MAX_SCHEMA_LEN: usize = 63 - "scaffold_".len();

/// A pool of at most `size` connections to `target`, recycled fast (a closed socket is
/// dropped and the next call reconnects).
fn pool_of(
    target: &PgTarget,
    connector: tokio_postgres_rustls::MakeRustlsConnect,
    size: usize,
) -> StoreResult<Pool> {
    let mgr = Manager::from_config(
        target.config.clone(),
        connector,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(mgr)
        .max_size(size)
        .build()
        .map_err(|e| StoreError::Task(format!("building the PostgreSQL pool: {e}")))
}

/// The PostgreSQL backend.
#[derive(Debug, Clone)]
pub struct PostgresBackend {
    pub(crate) pool: Pool,
    pub(crate) target: Arc<PgTarget>,
    pub(crate) keys: LockKeys,
    channel: Arc<str>,
    pub(crate) wake: Arc<listen::Wakeups>,
    /// Rows retention purged since this backend last vacuumed `work_items`.
    pub(crate) purged_since_vacuum: Arc<AtomicU64>,
    /// Items this backend completed since it last vacuumed `work_items` behind a drain.
    pub(crate) finished_since_vacuum: Arc<AtomicU64>,
    /// Whether that vacuum is running.
    pub(crate) vacuuming: Arc<std::sync::atomic::AtomicBool>,
}

/// Advisory lock keys of one schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockKeys {
    pub migrate: i64,
    pub sweep: i64,
    pub relay: i64,
}

/// FNV-1a: a stable 64-bit hash (advisory lock keys must agree across hosts and builds).
fn stable_key(s: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

impl PostgresBackend {
    /// Connects to the server `url` names (one connection is opened to check it), and
    /// refuses a schema newer than this runtime writes.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        let target = PgTarget::parse(url)?;
        let connector = tls::connector(&target.tls)?;
        let pool = pool_of(&target, connector.clone(), target.pool_size)?;
        let schema = target.schema.clone();
        let backend = PostgresBackend {
            pool,
            keys: LockKeys {
                migrate: stable_key(&format!("scaffold:{schema}:migrate")),
                sweep: stable_key(&format!("scaffold:{schema}:sweep")),
                relay: stable_key(&format!("scaffold:{schema}:relay")),
            },
            channel: Arc::from(format!("scaffold_{schema}")),
            wake: Arc::new(listen::Wakeups::new(
                target.config.clone(),
                connector,
                format!("scaffold_{schema}"),
            )),
            target: Arc::new(target),
            purged_since_vacuum: Arc::default(),
            finished_since_vacuum: Arc::default(),
            vacuuming: Arc::default(),
        };
        let conn = backend.conn().await.map_err(|e| match e {
            StoreError::PostgresConnect { cause, .. } => StoreError::PostgresConnect {
                target: Some(backend.target.describe()),
                cause,
            },
            other => other,
        })?;
        let found = schema::version(&conn).await?;
        if found > schema::LATEST_VERSION {
            return Err(StoreError::SchemaTooNew {
                found,
                supported: schema::LATEST_VERSION,
            });
        }
        Ok(backend)
    }

    /// This backend over a pool of its own of `size` connections, opened on first use by
    /// whichever runtime then calls (none is opened here).
    pub fn sibling(&self, size: usize) -> StoreResult<Self> {
        let connector = tls::connector(&self.target.tls)?;
        Ok(PostgresBackend {
            pool: pool_of(&self.target, connector, size)?,
            ..self.clone()
        })
    }

    /// The schema the queue's tables live in.
    pub fn schema(&self) -> &str {
        &self.target.schema
    }

    /// The channel `pg_notify` wakes this schema's workers on (the payload is the lane, or
    /// `*` for any lane).
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Measures `clock`'s offset from the server's clock (`clock_timestamp()`, read in one
    /// round trip on a pooled connection whose statement is already prepared).
    pub async fn sync_clock(&self, clock: &crate::time::DatabaseClock) -> StoreResult<()> {
        let conn = self.conn().await?;
        let stmt = conn
            .prepare_cached("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8")
            .await?;
        // The sample with the shortest round trip: a slow one would shift the offset by
        // up to half of it.
        let mut best: Option<(Timestamp, Timestamp, Timestamp)> = None;
        for _ in 0..3 {
            let sent = clock.host().now();
            let row = conn.query_one(&stmt, &[]).await?;
            let received = clock.host().now();
            let server = Timestamp::from_millis(row.try_get(0)?);
            let rtt = received.millis_since(sent);
            if best.is_none_or(|(s, _, r)| rtt < r.millis_since(s)) {
                best = Some((sent, server, received));
            }
        }
        if let Some((sent, server, received)) = best {
            clock.record(sent, server, received);
        }
        Ok(())
    }

    /// A pooled connection.
    pub(crate) async fn conn(&self) -> StoreResult<Object> {
        Ok(self.pool.get().await?)
    }
}

impl Backend for PostgresBackend {
    fn coordinator(&self) -> Option<&dyn crate::store::coordinator::CoordinatorStore> {
        Some(self)
    }

    fn dashboard(&self) -> Option<&dyn crate::store::dashboard::DashboardStore> {
        Some(self)
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn postgres_schema(&self) -> Option<&str> {
        Some(&self.target.schema)
    }

    fn migrate(&self) -> BoxFuture<'_, StoreResult<i64>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            schema::migrate(&mut conn, &self.target.schema, self.keys.migrate).await
        })
    }

    fn schema_version(&self) -> BoxFuture<'_, StoreResult<i64>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            schema::version(&conn).await
        })
    }

    fn enqueue_many(
        &self,
        items: Vec<NewItem>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Enqueued>>> {
        Box::pin(async move { ops::enqueue_many(self, &items, now).await })
    }

    fn claim(&self, req: ClaimRequest, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<Claimed>>> {
        Box::pin(async move { ops::claim(self, &req, now).await })
    }

    fn heartbeat(
        &self,
        held: Held,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Timestamp>> {
        Box::pin(async move { ops::heartbeat(self, &held, lease_until, now).await })
    }

    fn checkpoint(
        &self,
        held: Held,
        state: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::checkpoint(self, &held, state, now).await })
    }

    fn finish_many(
        &self,
        batch: std::sync::Arc<[Finish]>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<StoreResult<()>>>> {
        Box::pin(async move { ops::finish_many(self, &batch, now).await })
    }

    fn sweep(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move { ops::sweep(self, now).await })
    }

    fn retry(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::retry(self, id, now).await })
    }

    fn retry_all_dead(
        &self,
        kind: Option<String>,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move { ops::retry_all_dead(self, kind.as_deref(), limit, now).await })
    }

    fn purge_completed(&self, before: Timestamp, limit: usize) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move { ops::purge_completed(self, before, limit).await })
    }

    fn discard(&self, id: ItemId) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::discard(self, id).await })
    }

    fn signal(
        &self,
        signal: String,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move { ops::signal(self, &signal, limit, now).await })
    }

    fn get(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Option<ItemRecord>>> {
        Box::pin(async move { ops::get(self, id).await })
    }

    fn list(&self, filter: ListFilter) -> BoxFuture<'_, StoreResult<Vec<ItemRecord>>> {
        Box::pin(async move { ops::list(self, &filter).await })
    }

    fn effect(&self, id: ItemId, key: String) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        Box::pin(async move { ops::effect(self, id, &key).await })
    }

    fn begin_effect(
        &self,
        held: Held,
        key: String,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<EffectStart>> {
        Box::pin(async move { ops::begin_effect(self, &held, &key, lease_until, now).await })
    }

    fn record_effect(
        &self,
        held: Held,
        key: String,
        output: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::record_effect(self, &held, &key, output, now).await })
    }

    fn attempts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<AttemptRecord>>> {
        Box::pin(async move { ops::attempts(self, id).await })
    }

    fn store_id(&self) -> BoxFuture<'_, StoreResult<String>> {
        Box::pin(async move { ops::store_id(self).await })
    }

    fn transaction(&self, body: TxBody, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::transaction(self, body, now).await })
    }

    fn relay_outbox(
        &self,
        limit: usize,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<RelayReport>> {
        Box::pin(async move { ops::relay_outbox(self, limit, now).await })
    }

    fn mark_silent_workers(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        Box::pin(async move { ops::mark_silent_workers(self, now).await })
    }

    fn effects(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<EffectRecord>>> {
        Box::pin(async move { ops::effects(self, id).await })
    }

    fn cancel(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::cancel(self, id, now).await })
    }

    fn release_worker(&self, owner: String, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move { ops::release_worker(self, &owner, now).await })
    }

    fn outbox_stats(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<OutboxStats>> {
        Box::pin(async move { ops::outbox_stats(self, now).await })
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        Box::pin(async move { ops::counts(self).await })
    }

    fn fold_counts(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::fold_counts(self).await })
    }

    fn ages(
        &self,
        lanes: Vec<String>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<LaneAges>>> {
        Box::pin(async move { ops::ages(self, &lanes, now).await })
    }

    fn lease_backend(&self) -> Option<Arc<dyn Backend>> {
        // Its own small pool: connections it opens are driven on the lease keeper's
        // runtime, so a heartbeat never waits on a worker thread a handler holds.
        match self.sibling(2) {
            Ok(b) => Some(Arc::new(b)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot build the lease keeper's pool; heartbeats share the loop's");
                None
            }
        }
    }

    fn purge_retained(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<(u64, u64)>> {
        Box::pin(async move { ops::purge_retained(self, before, limit).await })
    }

    fn put_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move { ops::put_worker(self, &worker).await })
    }

    fn touch_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<WorkerState>> {
        Box::pin(async move { ops::touch_worker(self, &worker).await })
    }

    fn drain_worker(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(async move { ops::drain_worker(self, &id).await })
    }

    fn workers(&self) -> BoxFuture<'_, StoreResult<Vec<WorkerRecord>>> {
        Box::pin(async move { ops::workers(self).await })
    }

    fn wait_for_work(&self, lane: String, max: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.wake.wait(&lane, max).await })
    }
}

#[cfg(test)]
mod tests {
    use super::redact_password;

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            redact_password("postgres://app:s3cr%40t@db:5432/q?sslmode=allow"),
            "postgres://app:***@db:5432/q?sslmode=allow"
        );
        assert_eq!(
            redact_password("postgres://app@db/q"),
            "postgres://app@db/q"
        );
        assert_eq!(
            redact_password("postgres://db/q?x=a@b"),
            "postgres://db/q?x=a@b"
        );
        let err = super::PgTarget::parse("postgres://app:hunter2@db/q?sslmode=allow")
            .expect_err("allow is refused");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
