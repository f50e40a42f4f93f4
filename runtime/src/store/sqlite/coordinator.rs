//! The coordinator's tables on SQLite (see [`crate::store::coordinator`]).

use rusqlite::{OptionalExtension, params};

use super::SqliteBackend;
use super::ops::write;
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

fn remote_worker(r: &rusqlite::Row<'_>) -> rusqlite::Result<RemoteWorker> {
    remote_worker_at(r, 0)
}

/// [`WORKER_COLS`] each with `prefix`.
fn prefixed(prefix: &str) -> String {
    WORKER_COLS
        .split(", ")
        .map(|c| format!("{prefix}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A worker from [`WORKER_COLS`] starting at column `at`.
fn remote_worker_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<RemoteWorker> {
    let kinds: Option<String> = r.get(at + 3)?;
    Ok(RemoteWorker {
        id: r.get(at)?,
        name: r.get(at + 1)?,
        account: r.get(at + 2)?,
        kinds: kinds.and_then(|k| serde_json::from_str(&k).ok()),
        public_key: r.get(at + 4)?,
        protocol: r.get(at + 5)?,
        enrolled_at: Timestamp::from_millis(r.get(at + 6)?),
        revoked_at: r.get::<_, Option<i64>>(at + 7)?.map(Timestamp::from_millis),
    })
}

impl CoordinatorStore for SqliteBackend {
    fn create_enrollment(&self, e: NewEnrollment) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            let kinds = e.kinds.as_ref().map(serde_json::to_string).transpose()?;
            c.execute(
                "INSERT INTO remote_enrollments (token_sha256, worker_name, account, kinds, \
                 created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    e.token_sha256,
                    e.worker_name,
                    e.account,
                    kinds,
                    e.created_at.as_millis(),
                    e.expires_at.as_millis()
                ],
            )?;
            Ok(())
        })
    }

    fn redeem_enrollment(
        &self,
        token_sha256: String,
        device: NewDevice,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Redeemed>> {
        self.run(move |c| {
            let tx = write(c)?;
            let n = now.as_millis();
            // Single use: one update that only a live, unused token passes.
            let spent: Option<(String, String, Option<String>)> = tx
                .query_row(
                    "UPDATE remote_enrollments SET used_at = ?2, worker_id = ?3 \
                     WHERE token_sha256 = ?1 AND used_at IS NULL AND expires_at > ?2 \
                     RETURNING worker_name, account, kinds",
                    params![token_sha256, n, device.id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let Some((name, account, kinds)) = spent else {
                let found: Option<(Option<i64>, Option<String>)> = tx
                    .query_row(
                        "SELECT used_at, worker_id FROM remote_enrollments WHERE token_sha256 = ?1",
                        [&token_sha256],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                return Ok(match found {
                    None => Redeemed::Unknown,
                    Some((Some(_), None)) => Redeemed::Revoked,
                    Some((Some(_), Some(_))) => Redeemed::Spent,
                    Some((None, _)) => Redeemed::Expired,
                });
            };
            tx.execute(
                "INSERT INTO remote_workers (id, name, account, kinds, public_key, protocol, \
                 enrolled_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    device.id,
                    name,
                    account,
                    kinds,
                    device.public_key,
                    device.protocol,
                    n
                ],
            )?;
            tx.execute(
                "INSERT INTO workers (id, lanes, state, started_at, last_seen_at, lease_ms) \
                 VALUES (?1, '', 'REGISTERED', ?2, ?2, 30000)",
                params![device.id, n],
            )?;
            tx.commit()?;
            Ok(Redeemed::Enrolled(RemoteWorker {
                id: device.id,
                name,
                account,
                kinds: kinds.and_then(|k| serde_json::from_str(&k).ok()),
                public_key: Some(device.public_key),
                protocol: device.protocol,
                enrolled_at: now,
                revoked_at: None,
            }))
        })
    }

    fn remote_worker(&self, id: String) -> BoxFuture<'_, StoreResult<Option<RemoteWorker>>> {
        self.run(move |c| {
            Ok(c.query_row(
                &format!("SELECT {WORKER_COLS} FROM remote_workers WHERE id = ?1"),
                [id],
                remote_worker,
            )
            .optional()?)
        })
    }

    fn remote_workers(&self) -> BoxFuture<'_, StoreResult<Vec<RemoteWorker>>> {
        self.run(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {WORKER_COLS} FROM remote_workers ORDER BY id"
            ))?;
            let rows = stmt.query_map([], remote_worker)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    fn revoke(&self, who: String, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run(move |c| {
            let tx = write(c)?;
            let ids: Vec<String> = {
                let mut stmt = tx.prepare(
                    "UPDATE remote_workers SET public_key = NULL, revoked_at = ?2 \
                     WHERE (id = ?1 OR name = ?1) AND revoked_at IS NULL RETURNING id",
                )?;
                let rows = stmt.query_map(params![who, now.as_millis()], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            // Tokens made for the name and not used yet die with it (used, by no worker).
            tx.execute(
                "UPDATE remote_enrollments SET used_at = ?2 WHERE worker_name = ?1 \
                 AND used_at IS NULL",
                params![who, now.as_millis()],
            )?;
            for id in &ids {
                tx.execute("DELETE FROM remote_nonces WHERE worker_id = ?1", [id])?;
                tx.execute("DELETE FROM workers WHERE id = ?1", [id])?;
            }
            tx.commit()?;
            Ok(ids)
        })
    }

    fn put_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            c.execute(
                "INSERT INTO remote_nonces (nonce_sha256, worker_id, expires_at) \
                 VALUES (?1, ?2, ?3)",
                params![nonce_sha256, worker_id, expires_at.as_millis()],
            )?;
            Ok(())
        })
    }

    fn take_nonce(
        &self,
        nonce_sha256: String,
        worker_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            let taken: Option<(String, i64)> = c
                .query_row(
                    "DELETE FROM remote_nonces WHERE nonce_sha256 = ?1 \
                     RETURNING worker_id, expires_at",
                    [nonce_sha256],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(taken.is_some_and(|(w, e)| w == worker_id && e > now.as_millis()))
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
        self.run(move |c| {
            c.execute(
                "INSERT INTO remote_sessions (token_sha256, worker_id, protocol, created_at, \
                 expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    token_sha256,
                    worker_id,
                    protocol,
                    now.as_millis(),
                    expires_at.as_millis()
                ],
            )?;
            Ok(())
        })
    }

    fn session(
        &self,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<(SessionRecord, RemoteWorker)>>> {
        self.run(move |c| {
            Ok(c.prepare_cached(&format!(
                "SELECT s.worker_id, s.protocol, s.expires_at, {} FROM remote_sessions AS s \
                 JOIN remote_workers AS w ON w.id = s.worker_id \
                 WHERE s.token_sha256 = ?1 AND s.expires_at > ?2",
                prefixed("w.")
            ))?
            .query_row(params![token_sha256, now.as_millis()], |r| {
                let session = SessionRecord {
                    worker_id: r.get(0)?,
                    protocol: r.get(1)?,
                    expires_at: Timestamp::from_millis(r.get(2)?),
                };
                Ok((session, remote_worker_at(r, 3)?))
            })
            .optional()?)
        })
    }

    fn live_sessions(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| {
            let n: i64 = c.query_row(
                "SELECT count(*) FROM remote_sessions WHERE expires_at > ?1",
                [now.as_millis()],
                |r| r.get(0),
            )?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn mark_upgrade_required(&self, id: String) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            c.execute(
                "UPDATE workers SET state = 'UPGRADE_REQUIRED' WHERE id = ?1",
                [id],
            )?;
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
        self.run(move |c| {
            c.execute(
                "INSERT OR IGNORE INTO artifacts (account, sha256, size, bytes, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    account,
                    sha256,
                    i64::try_from(bytes.len()).unwrap_or(i64::MAX),
                    bytes,
                    now.as_millis()
                ],
            )?;
            Ok(())
        })
    }

    fn get_artifact(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>> {
        self.run(move |c| {
            Ok(c.query_row(
                "SELECT bytes FROM artifacts WHERE account = ?1 AND sha256 = ?2",
                [account, sha256],
                |r| r.get(0),
            )
            .optional()?)
        })
    }

    fn artifact_size(
        &self,
        account: String,
        sha256: String,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        self.run(move |c| {
            let size: Option<i64> = c
                .query_row(
                    "SELECT size FROM artifacts WHERE account = ?1 AND sha256 = ?2",
                    [account, sha256],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(size.map(|s| u64::try_from(s).unwrap_or(0)))
        })
    }

    fn record_outputs(
        &self,
        held: Held,
        account: String,
        outputs: Vec<(String, String)>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            let tx = write(c)?;
            let holds: Option<i64> = tx
                .query_row(
                    &format!("SELECT id FROM work_items WHERE {}", super::ops::HELD),
                    params![held.id, held.fence, held.owner, now.as_millis()],
                    |r| r.get(0),
                )
                .optional()?;
            if holds.is_none() {
                return Err(StoreError::StaleLease {
                    id: held.id,
                    fence: held.fence,
                });
            }
            for (name, sha256) in outputs {
                let size: Option<i64> = tx
                    .query_row(
                        "SELECT size FROM artifacts WHERE account = ?1 AND sha256 = ?2",
                        [&account, &sha256],
                        |r| r.get(0),
                    )
                    .optional()?;
                let Some(size) = size else {
                    return Err(StoreError::ArtifactMissing { account, sha256 });
                };
                tx.execute(
                    "INSERT OR REPLACE INTO item_artifacts (item_id, fence, role, name, sha256, size) \
                     VALUES (?1, ?2, 'output', ?3, ?4, ?5)",
                    params![held.id, held.fence, name, sha256, size],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn item_artifacts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<ItemArtifact>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(
                "SELECT role, fence, name, sha256, size FROM item_artifacts WHERE item_id = ?1 \
                 ORDER BY role = 'output', fence, name",
            )?;
            let rows = stmt.query_map([id], |r| {
                let role: String = r.get(0)?;
                Ok((role, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, i64>(4)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (role, fence, name, sha256, size) = row?;
                out.push(ItemArtifact {
                    role: ArtifactRole::parse(&role)
                        .ok_or_else(|| StoreError::Task(format!("unknown artifact role {role}")))?,
                    fence,
                    artifact: ArtifactRef {
                        name,
                        sha256,
                        size: u64::try_from(size).unwrap_or(0),
                    },
                });
            }
            Ok(out)
        })
    }

    fn purge_artifacts(&self, before: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| {
            Ok(c.execute(
                "DELETE FROM artifacts WHERE created_at < ?1 AND NOT EXISTS \
                 (SELECT 1 FROM item_artifacts i WHERE i.sha256 = artifacts.sha256)",
                [before.as_millis()],
            )? as u64)
        })
    }

    fn purge_credentials(
        &self,
        now: Timestamp,
        before: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c| {
            let tx = write(c)?;
            let n = now.as_millis();
            let mut gone = tx.execute("DELETE FROM remote_sessions WHERE expires_at <= ?1", [n])?;
            gone += tx.execute("DELETE FROM remote_nonces WHERE expires_at <= ?1", [n])?;
            gone += tx.execute(
                "DELETE FROM remote_enrollments WHERE expires_at < ?1",
                [before.as_millis()],
            )?;
            tx.commit()?;
            Ok(gone as u64)
        })
    }

    fn has_due(
        &self,
        lane: String,
        account: Option<String>,
        kinds: Option<Vec<String>>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            let kinds = kinds.as_ref().map(serde_json::to_string).transpose()?;
            Ok(c.prepare_cached(&super::ops::has_due_sql())?
                .query_row(params![lane, now.as_millis(), kinds, account], |r| r.get(0))?)
        })
    }
}
