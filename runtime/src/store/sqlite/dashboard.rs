//! The dashboard's tables on SQLite (see [`crate::store::dashboard`]).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};

use super::SqliteBackend;
use super::ops::write;
use crate::item::ItemId;
use crate::store::dashboard::{
    Activity, DashboardStore, FAILED_OUTCOMES, Operator, OperatorAction,
};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

const ACTION_COLS: &str = "at, operator, action, item_id, target, changed, detail";

fn action(r: &rusqlite::Row<'_>) -> rusqlite::Result<OperatorAction> {
    Ok(OperatorAction {
        at: Timestamp::from_millis(r.get(0)?),
        operator: r.get(1)?,
        action: r.get(2)?,
        item_id: r.get(3)?,
        target: r.get(4)?,
        changed: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
        detail: r.get(6)?,
    })
}

impl DashboardStore for SqliteBackend {
    fn add_operator(
        &self,
        name: String,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            let n = c.execute(
                "INSERT INTO operators (name, token_sha256, created_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
                params![name, token_sha256, now.as_millis()],
            )?;
            Ok(n == 1)
        })
    }

    fn remove_operator(&self, name: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            let tx = write(c)?;
            tx.execute("DELETE FROM operator_sessions WHERE operator = ?1", [&name])?;
            let n = tx.execute("DELETE FROM operators WHERE name = ?1", [&name])?;
            tx.commit()?;
            Ok(n == 1)
        })
    }

    fn operators(&self) -> BoxFuture<'_, StoreResult<Vec<Operator>>> {
        self.run(move |c| {
            let mut stmt = c.prepare("SELECT name, created_at FROM operators ORDER BY name")?;
            let rows = stmt.query_map([], |r| {
                Ok(Operator {
                    name: r.get(0)?,
                    created_at: Timestamp::from_millis(r.get(1)?),
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    fn open_operator_session(
        &self,
        token_sha256: String,
        session_sha256: String,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>> {
        self.run(move |c| {
            let tx = write(c)?;
            let name: Option<String> = tx
                .query_row(
                    "SELECT name FROM operators WHERE token_sha256 = ?1",
                    [&token_sha256],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(name) = &name {
                tx.execute(
                    "INSERT INTO operator_sessions (token_sha256, operator, created_at, expires_at) \
                     VALUES (?1, ?2, ?3, ?4)",
                    params![session_sha256, name, now.as_millis(), expires_at.as_millis()],
                )?;
                // Sessions past their end go as new ones are made.
                tx.execute(
                    "DELETE FROM operator_sessions WHERE expires_at <= ?1",
                    [now.as_millis()],
                )?;
            }
            tx.commit()?;
            Ok(name)
        })
    }

    fn operator_session(
        &self,
        session_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>> {
        self.run(move |c| {
            Ok(c.query_row(
                "SELECT s.operator FROM operator_sessions s JOIN operators o ON o.name = s.operator \
                 WHERE s.token_sha256 = ?1 AND s.expires_at > ?2",
                params![session_sha256, now.as_millis()],
                |r| r.get(0),
            )
            .optional()?)
        })
    }

    fn close_operator_session(&self, session_sha256: String) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            c.execute(
                "DELETE FROM operator_sessions WHERE token_sha256 = ?1",
                [&session_sha256],
            )?;
            Ok(())
        })
    }

    fn record_action(&self, a: OperatorAction) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            c.execute(
                &format!("INSERT INTO operator_actions ({ACTION_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                params![
                    a.at.as_millis(),
                    a.operator,
                    a.action,
                    a.item_id,
                    a.target,
                    i64::try_from(a.changed).unwrap_or(i64::MAX),
                    a.detail
                ],
            )?;
            Ok(())
        })
    }

    fn item_actions(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {ACTION_COLS} FROM operator_actions WHERE item_id = ?1 ORDER BY id"
            ))?;
            let rows = stmt.query_map([id], action)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    fn recent_actions(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {ACTION_COLS} FROM operator_actions ORDER BY id DESC LIMIT ?1"
            ))?;
            let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], action)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    fn activity(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<(String, Activity)>>> {
        self.run(move |c| {
            let (from, to) = (from.as_millis(), to.as_millis());
            let mut lanes: BTreeMap<String, Activity> = BTreeMap::new();
            let mut stmt = c.prepare(
                "SELECT lane, count(*) FROM work_items INDEXED BY work_items_completed \
                 WHERE state = 'completed' AND updated_at >= ?1 AND updated_at < ?2 GROUP BY lane",
            )?;
            for row in stmt.query_map([from, to], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })? {
                let (lane, n) = row?;
                lanes.entry(lane).or_default().completed = u64::try_from(n).unwrap_or(0);
            }
            let mut stmt = c.prepare(
                "SELECT i.lane, count(*) FROM work_attempts a INDEXED BY work_attempts_finished \
                 JOIN work_items i ON i.id = a.item_id \
                 WHERE a.finished_at >= ?1 AND a.finished_at < ?2 AND a.outcome IN (?3, ?4, ?5) \
                 GROUP BY i.lane",
            )?;
            let [f1, f2, f3] = FAILED_OUTCOMES;
            for row in stmt.query_map(params![from, to, f1, f2, f3], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })? {
                let (lane, n) = row?;
                lanes.entry(lane).or_default().failed = u64::try_from(n).unwrap_or(0);
            }
            Ok(lanes.into_iter().collect())
        })
    }
}
