//! The dashboard's tables in memory (see [`crate::store::dashboard`]).

use std::collections::BTreeMap;

use super::MemoryBackend;
use crate::item::ItemId;
use crate::store::dashboard::{
    Activity, DashboardStore, FAILED_OUTCOMES, Operator, OperatorAction,
};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

#[derive(Debug, Default)]
pub(super) struct DashboardState {
    /// Each operator's token SHA-256 and when it was added, by name.
    operators: BTreeMap<String, (String, Timestamp)>,
    /// Each session's operator and end, by the session token's SHA-256.
    sessions: BTreeMap<String, (String, Timestamp)>,
    actions: Vec<OperatorAction>,
}

impl DashboardStore for MemoryBackend {
    fn add_operator(
        &self,
        name: String,
        token_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let mut st = self.lock();
        let d = &mut st.dashboard;
        let added = !d.operators.contains_key(&name)
            && !d.operators.values().any(|(t, _)| *t == token_sha256);
        if added {
            d.operators.insert(name, (token_sha256, now));
        }
        self.ready(Ok(added))
    }

    fn remove_operator(&self, name: String) -> BoxFuture<'_, StoreResult<bool>> {
        let mut st = self.lock();
        let d = &mut st.dashboard;
        let removed = d.operators.remove(&name).is_some();
        d.sessions.retain(|_, (operator, _)| *operator != name);
        self.ready(Ok(removed))
    }

    fn operators(&self) -> BoxFuture<'_, StoreResult<Vec<Operator>>> {
        let st = self.lock();
        let all = st
            .dashboard
            .operators
            .iter()
            .map(|(name, (_, created_at))| Operator {
                name: name.clone(),
                created_at: *created_at,
            })
            .collect();
        self.ready(Ok(all))
    }

    fn open_operator_session(
        &self,
        token_sha256: String,
        session_sha256: String,
        _now: Timestamp,
        expires_at: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>> {
        let mut st = self.lock();
        let d = &mut st.dashboard;
        let name = d
            .operators
            .iter()
            .find(|(_, (t, _))| *t == token_sha256)
            .map(|(name, _)| name.clone());
        if let Some(name) = &name {
            d.sessions
                .insert(session_sha256, (name.clone(), expires_at));
        }
        self.ready(Ok(name))
    }

    fn operator_session(
        &self,
        session_sha256: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<String>>> {
        let st = self.lock();
        let d = &st.dashboard;
        let name = d
            .sessions
            .get(&session_sha256)
            .filter(|(name, expires_at)| *expires_at > now && d.operators.contains_key(name))
            .map(|(name, _)| name.clone());
        self.ready(Ok(name))
    }

    fn close_operator_session(&self, session_sha256: String) -> BoxFuture<'_, StoreResult<()>> {
        self.lock().dashboard.sessions.remove(&session_sha256);
        self.ready(Ok(()))
    }

    fn record_action(&self, action: OperatorAction) -> BoxFuture<'_, StoreResult<()>> {
        self.lock().dashboard.actions.push(action);
        self.ready(Ok(()))
    }

    fn item_actions(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>> {
        let st = self.lock();
        let of_item = st
            .dashboard
            .actions
            .iter()
            .filter(|a| a.item_id == Some(id))
            .cloned()
            .collect();
        self.ready(Ok(of_item))
    }

    fn recent_actions(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<OperatorAction>>> {
        let st = self.lock();
        let recent = st
            .dashboard
            .actions
            .iter()
            .rev()
            .take(limit)
            .cloned()
            .collect();
        self.ready(Ok(recent))
    }

    fn activity(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<(String, Activity)>>> {
        let st = self.lock();
        let within = |t: Timestamp| t >= from && t < to;
        let mut lanes: BTreeMap<String, Activity> = BTreeMap::new();
        for item in st.items.values() {
            if item.state == crate::item::ItemState::Completed && within(item.updated_at) {
                lanes.entry(item.lane.clone()).or_default().completed += 1;
            }
        }
        for (id, attempts) in &st.attempts {
            let Some(item) = st.items.get(id) else {
                continue;
            };
            let failed = attempts
                .iter()
                .filter(|a| within(a.finished_at) && FAILED_OUTCOMES.contains(&a.outcome.as_str()))
                .count() as u64;
            if failed > 0 {
                lanes.entry(item.lane.clone()).or_default().failed += failed;
            }
        }
        self.ready(Ok(lanes.into_iter().collect()))
    }
}
