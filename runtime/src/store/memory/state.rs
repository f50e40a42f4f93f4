//! What the in-memory backend holds (items, effects, outbox rows, workers, the id mark)
//! and the transitions several operations share: insert, the fence check, finishing.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::StoreError;
use crate::item::{
    AttemptRecord, Fence, Finish, Held, ItemId, ItemRecord, ItemState, NewItem, Outcome,
    WorkerRecord,
};
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
    /// The ended attempts of each item, oldest first.
    pub(super) attempts: BTreeMap<ItemId, Vec<AttemptRecord>>,
    /// The high-water mark of ids handed out: only ever grows.
    pub(super) next_id: ItemId,
    /// The store's id, minted with it.
    pub(super) store_id: String,
    /// The coordinator's tables.
    pub(super) remote: super::coordinator::RemoteState,
    /// The dashboard's tables.
    pub(super) dashboard: super::dashboard::DashboardState,
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
                claimed_at: None,
                account: item.account.clone(),
            },
        );
        self.next_id = self.next_id.max(id + 1);
        Ok(id)
    }

    /// The item, when `held` is its current claim: the fence is current, the owner is the
    /// lease's, it is running and its lease has not expired.
    pub(super) fn held(&mut self, held: &Held, now: Timestamp) -> StoreResult<&mut ItemRecord> {
        match self.items.get_mut(&held.id) {
            Some(r)
                if r.fence == held.fence
                    && r.lease_owner.as_deref() == Some(held.owner.as_str())
                    && r.state == ItemState::Running
                    && r.lease_expires_at.is_some_and(|t| t > now) =>
            {
                Ok(r)
            }
            _ => Err(StoreError::StaleLease {
                id: held.id,
                fence: held.fence,
            }),
        }
    }

    /// Records the attempt that ended when item `before` (a running item) became `after`,
    /// as the SQL backends' triggers do.
    pub(super) fn ended(&mut self, before: &ItemRecord, after: &ItemRecord) {
        let expired = before
            .lease_expires_at
            .is_some_and(|t| t <= after.updated_at);
        let outcome = match after.state {
            ItemState::Completed => "completed",
            _ if expired => "expired",
            ItemState::Failed => "failed",
            ItemState::Dead => "dead",
            ItemState::Parked => "parked",
            _ => "released",
        };
        let error = (matches!(after.state, ItemState::Failed | ItemState::Dead) || expired)
            .then(|| after.last_error.clone())
            .flatten();
        let list = self.attempts.entry(before.id).or_default();
        list.retain(|a| a.fence != before.fence);
        list.push(AttemptRecord {
            attempt: before.attempt,
            fence: before.fence,
            holder: before.lease_owner.clone(),
            claimed_at: before.claimed_at,
            finished_at: after.updated_at,
            outcome: outcome.to_owned(),
            error,
        });
    }

    /// Moves running item `id` with `change`, recording the attempt it ends.
    pub(super) fn end_running(&mut self, id: ItemId, change: impl FnOnce(&mut ItemRecord)) {
        let Some(r) = self.items.get_mut(&id) else {
            return;
        };
        let before = r.clone();
        change(r);
        let after = r.clone();
        if before.state == ItemState::Running && after.state != ItemState::Running {
            self.ended(&before, &after);
        }
    }

    pub(super) fn finish(&mut self, f: &Finish, now: Timestamp) -> StoreResult<()> {
        // Completion repeated by its holder with the same fence is success; under another's
        // name it is refused like any other write (the holder is the completed attempt's).
        if matches!(f.outcome, Outcome::Complete)
            && f.repeat_is_success
            && let Some(r) = self.items.get(&f.id)
            && r.state == ItemState::Completed
            && r.fence == f.fence
            && self.attempts.get(&f.id).is_some_and(|list| {
                list.iter()
                    .any(|a| a.fence == f.fence && a.holder.as_deref() == Some(f.owner.as_str()))
            })
        {
            return Ok(());
        }
        let held = Held::new(f.id, f.fence, f.owner.clone());
        let before = self.held(&held, now)?.clone();
        let r = self.held(&held, now)?;
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
        let after = r.clone();
        self.ended(&before, &after);
        Ok(())
    }

    /// Forgets the items `gone` (deleted by retention or a discard): their effects and
    /// attempts go with them.
    pub(super) fn forget(&mut self, gone: &std::collections::BTreeSet<ItemId>) {
        for id in gone {
            self.items.remove(id);
            self.attempts.remove(id);
            self.remote.item_artifacts.remove(id);
        }
        self.effects.retain(|(item, _), _| !gone.contains(item));
    }
}
