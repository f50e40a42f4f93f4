//! What the in-memory backend holds (items, effects, outbox rows, workers, the id mark)
//! and the transitions several operations share: insert, the fence check, finishing.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::StoreError;
use crate::item::{Fence, Finish, ItemId, ItemRecord, ItemState, NewItem, Outcome, WorkerRecord};
use crate::outbox::OutboxSink;
use crate::store::StoreResult;
use crate::time::Timestamp;

/// Outbox rows written inside an open in-memory transaction; kept only when it commits.
#[derive(Debug)]
pub struct PendingOutbox {
    pub(super) rows: Vec<(ItemId, NewItem)>,
    pub(super) next_id: ItemId,
}

impl PendingOutbox {
    pub(crate) fn push(&mut self, item: NewItem) -> ItemId {
        let id = self.next_id;
        self.next_id += 1;
        self.rows.push((id, item));
        id
    }
}

impl OutboxSink for std::cell::RefCell<PendingOutbox> {
    fn insert(&self, item: &NewItem, _now: Timestamp) -> StoreResult<ItemId> {
        Ok(self.borrow_mut().push(item.clone()))
    }
}

/// One outbox row: the item it asks for, when it was relayed, and why the relay refused it.
#[derive(Debug)]
pub(super) struct OutboxRow {
    pub(super) item: NewItem,
    pub(super) created_at: Timestamp,
    pub(super) relayed_at: Option<Timestamp>,
    pub(super) relay_error: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) items: BTreeMap<ItemId, ItemRecord>,
    /// Each effect's output, and the fence and time it was recorded at.
    pub(super) effects: BTreeMap<(ItemId, String), (Value, Fence, Timestamp)>,
    pub(super) outbox: BTreeMap<ItemId, OutboxRow>,
    pub(super) workers: BTreeMap<String, WorkerRecord>,
    /// The high-water mark of ids handed out: only ever grows.
    pub(super) next_id: ItemId,
}

/// Why [`State::insert`] inserted nothing.
pub(super) enum NotInserted {
    /// A live item of the same kind holds the dedupe key.
    Duplicate(ItemId),
    /// Another item has the id.
    IdTaken,
}

impl State {
    pub(super) fn live_id_for_key(&self, kind: &str, key: &str) -> Option<ItemId> {
        self.items
            .values()
            .find(|r| r.state.is_live() && r.kind == kind && r.dedupe_key.as_deref() == Some(key))
            .map(|r| r.id)
    }

    /// Inserts `item` as `id`.
    pub(super) fn insert(
        &mut self,
        id: ItemId,
        item: &NewItem,
        now: Timestamp,
    ) -> Result<ItemId, NotInserted> {
        if let Some(existing) = item
            .dedupe_key
            .as_deref()
            .and_then(|k| self.live_id_for_key(&item.kind, k))
        {
            return Err(NotInserted::Duplicate(existing));
        }
        if self.items.contains_key(&id) {
            return Err(NotInserted::IdTaken);
        }
        self.items.insert(
            id,
            ItemRecord {
                id,
                kind: item.kind.clone(),
                lane: item.lane.clone(),
                payload: item.payload.clone(),
                state: ItemState::Available,
                priority: item.priority,
                attempt: 0,
                max_attempts: item.max_attempts,
                run_at: item.run_at.unwrap_or(now),
                lease_owner: None,
                lease_expires_at: None,
                fence: 0,
                dedupe_key: item.dedupe_key.clone(),
                checkpoint: None,
                last_error: None,
                parked_on: None,
                created_at: now,
                updated_at: now,
            },
        );
        self.next_id = self.next_id.max(id + 1);
        Ok(id)
    }

    /// The item, when `fence` is current, it is running and its lease has not expired.
    pub(super) fn held(
        &mut self,
        id: ItemId,
        fence: Fence,
        now: Timestamp,
    ) -> StoreResult<&mut ItemRecord> {
        match self.items.get_mut(&id) {
            Some(r)
                if r.fence == fence
                    && r.state == ItemState::Running
                    && r.lease_expires_at.is_some_and(|t| t > now) =>
            {
                Ok(r)
            }
            _ => Err(StoreError::StaleLease { id, fence }),
        }
    }

    pub(super) fn finish(&mut self, f: &Finish, now: Timestamp) -> StoreResult<()> {
        if matches!(f.outcome, Outcome::Complete)
            && let Some(r) = self.items.get(&f.id)
            && r.state == ItemState::Completed
            && r.fence == f.fence
        {
            return Ok(());
        }
        let r = self.held(f.id, f.fence, now)?;
        r.lease_owner = None;
        r.lease_expires_at = None;
        r.updated_at = now;
        match &f.outcome {
            Outcome::Complete => r.state = ItemState::Completed,
            Outcome::Retry { retry_at, error } => {
                r.state = if r.attempt >= r.max_attempts {
                    ItemState::Dead
                } else {
                    ItemState::Failed
                };
                r.run_at = *retry_at;
                r.last_error = Some(error.clone());
            }
            Outcome::Dead { error } => {
                r.state = ItemState::Dead;
                r.last_error = Some(error.clone());
            }
            Outcome::Park { until, signal } => {
                r.state = ItemState::Parked;
                r.run_at = until.unwrap_or(Timestamp::MAX);
                r.parked_on = signal.clone();
                r.attempt = (r.attempt - 1).max(0);
            }
            Outcome::Release => {
                r.state = ItemState::Available;
                r.run_at = now;
                r.attempt = (r.attempt - 1).max(0);
            }
        }
        Ok(())
    }
}
