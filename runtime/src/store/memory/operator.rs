//! An operator's actions on the in-memory backend's items: retrying and discarding dead
//! items, cancelling a live one, releasing a worker's leases. The `Backend` impl delegates
//! to these.

use super::MemoryBackend;
use crate::error::StoreError;
use crate::item::{ItemId, ItemState, WorkerState};
use crate::store::{BoxFuture, StoreResult};
use crate::time::Timestamp;

impl MemoryBackend {
    pub(super) fn retry_dead_item(
        &self,
        id: ItemId,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let out = match st.items.get(&id).map(|r| (r.state, r.dedupe_key.clone())) {
            None => Err(StoreError::NotFound(id)),
            Some((ItemState::Dead, key)) => {
                let kind = st
                    .items
                    .get(&id)
                    .map(|r| r.kind.clone())
                    .unwrap_or_default();
                match key.as_deref().and_then(|k| st.live_id_for_key(&kind, k)) {
                    Some(other) => Err(StoreError::Task(format!(
                        "dedupe key of item {id} is held by live item {other}"
                    ))),
                    None => {
                        if let Some(r) = st.items.get_mut(&id) {
                            r.state = ItemState::Available;
                            r.attempt = 0;
                            r.run_at = now;
                            r.updated_at = now;
                        }
                        Ok(())
                    }
                }
            }
            Some((state, _)) => Err(StoreError::WrongState {
                id,
                state,
                expected: "dead",
            }),
        };
        drop(st);
        self.ready(out)
    }

    pub(super) fn retry_dead_items(
        &self,
        kind: Option<String>,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        let dead: Vec<(ItemId, String, Option<String>)> = st
            .items
            .values()
            .filter(|r| r.state == ItemState::Dead && kind.as_ref().is_none_or(|k| r.kind == *k))
            .map(|r| (r.id, r.kind.clone(), r.dedupe_key.clone()))
            .take(limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX)))
            .collect();
        let mut n = 0;
        for (id, kind, key) in dead {
            if key
                .as_deref()
                .and_then(|k| st.live_id_for_key(&kind, k))
                .is_some()
            {
                continue;
            }
            if let Some(r) = st.items.get_mut(&id) {
                r.state = ItemState::Available;
                r.attempt = 0;
                r.run_at = now;
                r.updated_at = now;
                n += 1;
            }
        }
        drop(st);
        self.ready(Ok(n))
    }

    pub(super) fn discard_dead_item(&self, id: ItemId) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let out = match st.items.get(&id).map(|r| r.state) {
            None => Err(StoreError::NotFound(id)),
            Some(ItemState::Dead) => {
                st.forget(&std::iter::once(id).collect());
                Ok(())
            }
            Some(state) => Err(StoreError::WrongState {
                id,
                state,
                expected: "dead",
            }),
        };
        drop(st);
        self.ready(out)
    }

    pub(super) fn cancel_live_item(
        &self,
        id: ItemId,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let out = match st.items.get(&id).map(|r| r.state) {
            None => Err(StoreError::NotFound(id)),
            Some(state) if state.is_live() => {
                st.end_running(id, |r| {
                    r.state = ItemState::Dead;
                    r.last_error = Some("cancelled by an operator".to_owned());
                    r.lease_owner = None;
                    r.lease_expires_at = None;
                    r.parked_on = None;
                    r.updated_at = now;
                });
                Ok(())
            }
            Some(state) => Err(StoreError::WrongState {
                id,
                state,
                expected: "live (available, running, failed or parked)",
            }),
        };
        drop(st);
        self.ready(out)
    }

    pub(super) fn release_leases_of(
        &self,
        owner: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        let held: Vec<ItemId> = st
            .items
            .values()
            .filter(|r| {
                r.state == ItemState::Running && r.lease_owner.as_deref() == Some(owner.as_str())
            })
            .map(|r| r.id)
            .collect();
        for id in &held {
            st.end_running(*id, |r| {
                r.state = ItemState::Available;
                r.run_at = now;
                r.lease_owner = None;
                r.lease_expires_at = None;
                r.last_error = Some("released by an operator".to_owned());
                r.updated_at = now;
            });
        }
        let n = held.len() as u64;
        if let Some(w) = st.workers.get_mut(&owner) {
            w.state = WorkerState::Offline;
        }
        drop(st);
        self.ready(Ok(n))
    }
}
