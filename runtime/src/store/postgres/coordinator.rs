//! The coordinator's tables on PostgreSQL (see [`crate::store::coordinator`]). Coordinators
//! sharing one queue share these rows: a session made on one is honoured by all.

use tokio_postgres::Row;
use tokio_postgres::types::Json;

use super::PostgresBackend;
use crate::error::StoreError;
use crate::item::{ArtifactRef, Held, ItemId};
use crate::store::coordinator::{
    ArtifactRole, CoordinatorStore, ItemArtifact, NewDevice, NewEnrollment, Redeemed, RemoteWorker,
    SessionRecord,
};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

/// The columns [`remote_worker`] decodes.
const WORKER_COLS: &str = "id, name, account, kinds, public_key, protocol, enrolled_at, revoked_at";

fn remote_worker(r: &Row) -> StoreResult<RemoteWorker> {
    remote_worker_at(r, 0)
}

/// A worker from [`WORKER_COLS`] starting at column `at`.
fn remote_worker_at(r: &Row, at: usize) -> StoreResult<RemoteWorker> {
    Ok(RemoteWorker {
        id: r.try_get(at)?,
        name: r.try_get(at + 1)?,
        account: r.try_get(at + 2)?,
        kinds: r
            .try_get::<_, Option<Json<Vec<String>>>>(at + 3)?
            .map(|j| j.0),
        public_key: r.try_get(at + 4)?,
        protocol: r.try_get(at + 5)?,
        enrolled_at: Timestamp::from_millis(r.try_get(at + 6)?),
        revoked_at: r
            .try_get::<_, Option<i64>>(at + 7)?
            .map(Timestamp::from_millis),
    })
}

impl CoordinatorStore for PostgresBackend {
    fn create_enrollment(&self, e: NewEnrollment) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.execute(
                "INSERT INTO remote_enrollments (token_sha256, worker_name, account, kinds, \
                 created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &e.token_sha256,
                    &e.worker_name,
                    &e.account,
                    &e.kinds.as_ref().map(Json),
                    &e.created_at.as_millis(),
                    &e.expires_at.as_millis(),
                ],
            )
            .await?;
            Ok(())
        })
    }

    fn redeem_enrollment(
        &self,
        token_sha256: String,
        device: NewDevice,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Redeemed>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let n = now.as_millis();
            // Single use: one update that only a live, unused token passes; two coordinators
            // redeeming it at once serialise on its row, and the second finds it used.
            let spent = tx
                .query_opt(
                    "UPDATE remote_enrollments SET used_at = $2, worker_id = $3 \
                     WHERE token_sha256 = $1 AND used_at IS NULL AND expires_at > $2 \
                     RETURNING worker_name, account, kinds",
                    &[&token_sha256, &n, &device.id],
                )
                .await?;
            let Some(row) = spent else {
                let found = tx
                    .query_opt(
                        "SELECT used_at, worker_id FROM remote_enrollments WHERE token_sha256 = $1",
                        &[&token_sha256],
                    )
                    .await?;
                let Some(r) = found else {
                    return Ok(Redeemed::Unknown);
                };
                let used: Option<i64> = r.try_get(0)?;
                let by: Option<String> = r.try_get(1)?;
                return Ok(match (used, by) {
                    (Some(_), None) => Redeemed::Revoked,
                    (Some(_), Some(_)) => Redeemed::Spent,
                    (None, _) => Redeemed::Expired,
                });
            };
            let name: String = row.try_get(0)?;
            let account: String = row.try_get(1)?;
            let kinds: Option<Json<Vec<String>>> = row.try_get(2)?;
            tx.execute(
                "INSERT INTO remote_workers (id, name, account, kinds, public_key, protocol, \
                 enrolled_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &device.id,
                    &name,
                    &account,
                    &kinds,
                    &device.public_key,
                    &device.protocol,
                    &n,
                ],
            )
            .await?;
            tx.execute(
                "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
                 VALUES ($1, '', 'REGISTERED', $2, $2, 30000)",
                &[&device.id, &n],
            )
            .await?;
            tx.commit().await?;
            Ok(Redeemed::Enrolled(RemoteWorker {
                id: device.id,
                name,
                account,
                kinds: kinds.map(|j| j.0),
                public_key: Some(device.public_key),
                protocol: device.protocol,
                enrolled_at: now,
                revoked_at: None,
            }))
        })
    }

    fn remote_worker(&self, id: String) -> BoxFuture<'_, StoreResult<Option<RemoteWorker>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let stmt = conn
                .prepare_cached(&format!(
                    "SELECT {WORKER_COLS} FROM remote_workers WHERE id = $1"
                ))
                .await?;
            conn.query_opt(&stmt, &[&id])
                .await?
                .as_ref()
                .map(remote_worker)
                .transpose()
        })
    }

    fn remote_workers(&self) -> BoxFuture<'_, StoreResult<Vec<RemoteWorker>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let rows = conn
                .query(
                    &format!("SELECT {WORKER_COLS} FROM remote_workers ORDER BY id"),
                    &[],
                )
                .await?;
            rows.iter().map(remote_worker).collect()
        })
    }

    fn revoke(&self, who: String, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let rows = tx
                .query(
                    "UPDATE remote_workers SET public_key = NULL, revoked_at = $2 \
                     WHERE (id = $1 OR name = $1) AND revoked_at IS NULL RETURNING id",
                    &[&who, &now.as_millis()],
                )
                .await?;
            let ids: Vec<String> = rows
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            // Tokens made for the name and not used yet die with it (used, by no worker).
            tx.execute(
                "UPDATE remote_enrollments SET used_at = $2 WHERE worker_name = $1 \
                 AND used_at IS NULL",
                &[&who, &now.as_millis()],
            )
            .await?;
            for table in ["remote_nonces"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE worker_id = ANY($1)"),
                    &[&ids],
                )
                .await?;
            }
            tx.execute("DELETE FROM workers WHERE id = ANY($1)", &[&ids])
                .await?;
            tx.commit().await?;
            Ok(ids)
        })
    }

    fn put_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.execute(
                "INSERT INTO remote_nonces (nonce_sha256, worker_id, expires_at) \
                 VALUES ($1, $2, $3)",
                &[&nonce_sha256, &worker_id, &expires_at.as_millis()],
            )
            .await?;
            Ok(())
        })
    }

    fn take_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let taken = conn
                .query_opt(
                    "DELETE FROM remote_nonces WHERE nonce_sha256 = $1 \
                     RETURNING worker_id, expires_at",
                    &[&nonce_sha256],
                )
                .await?;
            Ok(match taken {
                Some(r) => {
                    r.try_get::<_, String>(0)? == worker_id
                        && r.try_get::<_, i64>(1)? > now.as_millis()
                }
                None => false,
            })
        })
    }

    fn put_session(
        &self,
        token_sha256: String,
        worker_id: String,
        protocol: i64,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.execute(
                "INSERT INTO remote_sessions (token_sha256, worker_id, protocol, created_at, \
                 expires_at) VALUES ($1, $2, $3, $4, $5)",
                &[
                    &token_sha256,
                    &worker_id,
                    &protocol,
                    &now.as_millis(),
                    &expires_at.as_millis(),
                ],
            )
            .await?;
            Ok(())
        })
    }

    fn session(
        &self,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<(SessionRecord, RemoteWorker)>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let stmt = conn
                .prepare_cached(&format!(
                    "SELECT s.worker_id, s.protocol, s.expires_at, {} \
                     FROM remote_sessions AS s JOIN remote_workers AS w ON w.id = s.worker_id \
                     WHERE s.token_sha256 = $1 AND s.expires_at > $2",
                    WORKER_COLS
                        .split(", ")
                        .map(|c| format!("w.{c}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .await?;
            let row = conn
                .query_opt(&stmt, &[&token_sha256, &now.as_millis()])
                .await?;
            row.map(|r| {
                let session = SessionRecord {
                    worker_id: r.try_get(0)?,
                    protocol: r.try_get(1)?,
                    expires_at: Timestamp::from_millis(r.try_get(2)?),
                };
                Ok((session, remote_worker_at(&r, 3)?))
            })
            .transpose()
        })
    }

    fn live_sessions(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let n: i64 = conn
                .query_one(
                    "SELECT count(*) FROM remote_sessions WHERE expires_at > $1",
                    &[&now.as_millis()],
                )
                .await?
                .try_get(0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn mark_upgrade_required(&self, id: String) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.execute(
                "UPDATE workers SET state = 'UPGRADE_REQUIRED' WHERE id = $1",
                &[&id],
            )
            .await?;
            Ok(())
        })
    }

    fn put_artifact(
        &self,
        account: String,
        sha256: String,
        bytes: Vec<u8>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
            conn.execute(
                "INSERT INTO artifacts (account, sha256, size, bytes, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[&account, &sha256, &size, &bytes, &now.as_millis()],
            )
            .await?;
            Ok(())
        })
    }

    fn get_artifact(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let row = conn
                .query_opt(
                    "SELECT bytes FROM artifacts WHERE account = $1 AND sha256 = $2",
                    &[&account, &sha256],
                )
                .await?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
    }

    fn artifact_size(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let row = conn
                .query_opt(
                    "SELECT size FROM artifacts WHERE account = $1 AND sha256 = $2",
                    &[&account, &sha256],
                )
                .await?;
            Ok(row
                .map(|r| r.try_get::<_, i64>(0))
                .transpose()?
                .map(|s| u64::try_from(s).unwrap_or(0)))
        })
    }

    fn record_outputs(
        &self,
        held: Held,
        account: String,
        outputs: Vec<(String, String)>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let holds = tx
                .query_opt(
                    &format!(
                        "SELECT id FROM work_items WHERE {} FOR SHARE",
                        super::ops::HELD
                    ),
                    &[&held.id, &held.fence, &held.owner, &now.as_millis()],
                )
                .await?;
            if holds.is_none() {
                return Err(StoreError::StaleLease {
                    id: held.id,
                    fence: held.fence,
                });
            }
            for (name, sha256) in outputs {
                let size = tx
                    .query_opt(
                        "SELECT size FROM artifacts WHERE account = $1 AND sha256 = $2",
                        &[&account, &sha256],
                    )
                    .await?;
                let Some(size) = size else {
                    return Err(StoreError::ArtifactMissing { account, sha256 });
                };
                let size: i64 = size.try_get(0)?;
                tx.execute(
                    "INSERT INTO item_artifacts (item_id, fence, role, name, sha256, size) \
                     VALUES ($1, $2, 'output', $3, $4, $5) \
                     ON CONFLICT (item_id, role, fence, name) \
                     DO UPDATE SET sha256 = excluded.sha256, size = excluded.size",
                    &[&held.id, &held.fence, &name, &sha256, &size],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn item_artifacts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<ItemArtifact>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let rows = conn
                .query(
                    "SELECT role, fence, name, sha256, size FROM item_artifacts \
                     WHERE item_id = $1 ORDER BY role = 'output', fence, name",
                    &[&id],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    let role: String = r.try_get(0)?;
                    Ok(ItemArtifact {
                        role: ArtifactRole::parse(&role).ok_or_else(|| {
                            StoreError::Task(format!("unknown artifact role {role}"))
                        })?,
                        fence: r.try_get(1)?,
                        artifact: ArtifactRef {
                            name: r.try_get(2)?,
                            sha256: r.try_get(3)?,
                            size: u64::try_from(r.try_get::<_, i64>(4)?).unwrap_or(0),
                        },
                    })
                })
                .collect()
        })
    }

    fn purge_artifacts(&self, before: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            Ok(conn
                .execute(
                    "DELETE FROM artifacts a WHERE a.created_at < $1 AND NOT EXISTS \
                     (SELECT 1 FROM item_artifacts i WHERE i.sha256 = a.sha256)",
                    &[&before.as_millis()],
                )
                .await?)
        })
    }

    fn purge_credentials(
        &self,
        now: Timestamp,
        before: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let n = now.as_millis();
            let mut gone = tx
                .execute("DELETE FROM remote_sessions WHERE expires_at <= $1", &[&n])
                .await?;
            gone += tx
                .execute("DELETE FROM remote_nonces WHERE expires_at <= $1", &[&n])
                .await?;
            gone += tx
                .execute(
                    "DELETE FROM remote_enrollments WHERE expires_at < $1",
                    &[&before.as_millis()],
                )
                .await?;
            tx.commit().await?;
            Ok(gone)
        })
    }

    fn has_due(
        &self,
        lane: String,
        account: Option<String>,
        kinds: Option<Vec<String>>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let stmt = conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM work_items WHERE lane = $1 \
                     AND state IN ('available', 'failed', 'parked') AND run_at <= $2 \
                     AND ($3::text[] IS NULL OR kind = ANY($3)) \
                     AND ($4::text IS NULL OR coalesce(account, 'default') = $4))",
                )
                .await?;
            Ok(conn
                .query_one(&stmt, &[&lane, &now.as_millis(), &kinds, &account])
                .await?
                .try_get(0)?)
        })
    }
}
