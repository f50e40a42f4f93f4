//! The dashboard's tables on PostgreSQL (see [`crate::store::dashboard`]). Coordinators
//! sharing one queue share them: an operator signed in on one is signed in on all.

use std::collections::BTreeMap;

use tokio_postgres::Row;

use super::PostgresBackend;
use crate::item::ItemId;
use crate::store::dashboard::{
    Activity, DashboardStore, FAILED_OUTCOMES, Operator, OperatorAction,
};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

const ACTION_COLS: &str = "at, operator, action, item_id, target, changed, detail";

fn action(r: &Row) -> StoreResult<OperatorAction> {
    Ok(OperatorAction {
        at: Timestamp::from_millis(r.try_get(0)?),
        operator: r.try_get(1)?,
        action: r.try_get(2)?,
        item_id: r.try_get(3)?,
        target: r.try_get(4)?,
        changed: u64::try_from(r.try_get::<_, i64>(5)?).unwrap_or(0),
        detail: r.try_get(6)?,
    })
}

impl DashboardStore for PostgresBackend {
    fn add_operator(
        &self,
        name: String,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let n = conn
                .execute(
                    "INSERT INTO operators (name, token_sha256, created_at) VALUES ($1, $2, $3) \
                     ON CONFLICT DO NOTHING",
                    &[&name, &token_sha256, &now.as_millis()],
                )
                .await?;
            Ok(n == 1)
        })
    }

    fn remove_operator(&self, name: String) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            tx.execute(
                "DELETE FROM operator_sessions WHERE operator = $1",
                &[&name],
            )
            .await?;
            let n = tx
                .execute("DELETE FROM operators WHERE name = $1", &[&name])
                .await?;
            tx.commit().await?;
            Ok(n == 1)
        })
    }

    fn operators(&self) -> BoxFuture<'_, StoreResult<Vec<Operator>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let rows = conn
                .query("SELECT name, created_at FROM operators ORDER BY name", &[])
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(Operator {
                        name: r.try_get(0)?,
                        created_at: Timestamp::from_millis(r.try_get(1)?),
                    })
                })
                .collect()
        })
    }

    fn open_operator_session(
        &self,
        token_sha256: String,
        session_sha256: String,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let name: Option<String> = tx
                .query_opt(
                    "SELECT name FROM operators WHERE token_sha256 = $1",
                    &[&token_sha256],
                )
                .await?
                .map(|r| r.try_get(0))
                .transpose()?;
            if let Some(name) = &name {
                tx.execute(
                    "INSERT INTO operator_sessions (token_sha256, operator, created_at, expires_at) \
                     VALUES ($1, $2, $3, $4)",
                    &[&session_sha256, name, &now.as_millis(), &expires_at.as_millis()],
                )
                .await?;
                // Sessions past their end go as new ones are made.
                tx.execute(
                    "DELETE FROM operator_sessions WHERE expires_at <= $1",
                    &[&now.as_millis()],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(name)
        })
    }

    fn operator_session(
        &self,
        session_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.query_opt(
                "SELECT s.operator FROM operator_sessions s JOIN operators o ON o.name = s.operator \
                 WHERE s.token_sha256 = $1 AND s.expires_at > $2",
                &[&session_sha256, &now.as_millis()],
            )
            .await?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(Into::into)
        })
    }

    fn close_operator_session(&self, session_sha256: String) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.execute(
                "DELETE FROM operator_sessions WHERE token_sha256 = $1",
                &[&session_sha256],
            )
            .await?;
            Ok(())
        })
    }

    fn record_action(&self, a: OperatorAction) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            conn.execute(
                &format!(
                    "INSERT INTO operator_actions ({ACTION_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                ),
                &[
                    &a.at.as_millis(),
                    &a.operator,
                    &a.action,
                    &a.item_id,
                    &a.target,
                    &i64::try_from(a.changed).unwrap_or(i64::MAX),
                    &a.detail,
                ],
            )
            .await?;
            Ok(())
        })
    }

    fn item_actions(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let rows = conn
                .query(
                    &format!(
                        "SELECT {ACTION_COLS} FROM operator_actions WHERE item_id = $1 ORDER BY id"
                    ),
                    &[&id],
                )
                .await?;
            rows.iter().map(action).collect()
        })
    }

    fn recent_actions(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let rows = conn
                .query(
                    &format!(
                        "SELECT {ACTION_COLS} FROM operator_actions ORDER BY id DESC LIMIT $1"
                    ),
                    &[&i64::try_from(limit).unwrap_or(i64::MAX)],
                )
                .await?;
            rows.iter().map(action).collect()
        })
    }

    fn activity(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<(String, Activity)>>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let (from, to) = (from.as_millis(), to.as_millis());
            let mut lanes: BTreeMap<String, Activity> = BTreeMap::new();
            for r in conn
                .query(
                    "SELECT lane, count(*) FROM work_items \
                     WHERE state = 'completed' AND updated_at >= $1 AND updated_at < $2 \
                     GROUP BY lane",
                    &[&from, &to],
                )
                .await?
            {
                let n: i64 = r.try_get(1)?;
                lanes.entry(r.try_get(0)?).or_default().completed = u64::try_from(n).unwrap_or(0);
            }
            let outcomes: Vec<&str> = FAILED_OUTCOMES.to_vec();
            for r in conn
                .query(
                    "SELECT i.lane, count(*) FROM work_attempts a JOIN work_items i ON i.id = a.item_id \
                     WHERE a.finished_at >= $1 AND a.finished_at < $2 AND a.outcome = ANY($3) \
                     GROUP BY i.lane",
                    &[&from, &to, &outcomes],
                )
                .await?
            {
                let n: i64 = r.try_get(1)?;
                lanes.entry(r.try_get(0)?).or_default().failed = u64::try_from(n).unwrap_or(0);
            }
            Ok(lanes.into_iter().collect())
        })
    }
}
