//! The in-memory twin: the same semantics as SQLite over maps behind one mutex. Tests and
//! `testing::MemoryContainer` run on it; the conformance suite holds the two to each other.
//!
//! The backend and the queue's own operations are here; the state they share (and its
//! transitions) is in `state`, an operator's actions on items in `operator`.

mod coordinator;
mod dashboard;
mod operator;
mod state;

pub use state::PendingOutbox;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use crate::error::StoreError;
use crate::item::{
    AttemptRecord, Claimed, EffectRecord, EffectStart, Enqueued, Finish, Held, ItemId, ItemRecord,
    ItemState, ListFilter, NewItem, OutboxStats, WorkerRecord, WorkerState,
};
use crate::outbox::Tx;
use crate::store::{
    Backend, BoxFuture, ClaimRequest, Counts, LaneAges, RelayReport, StoreResult, TxBody,
};
use crate::time::Timestamp;
use state::{NotInserted, OutboxRow, State};

use crate::store::SILENCE_CAP_MS;

/// The in-memory backend (`memory://`).
#[derive(Debug, Clone, Default)]
pub struct MemoryBackend {
    state: Arc<Mutex<State>>,
}

impl MemoryBackend {
    /// An empty, migrated store.
    pub fn new() -> Self {
        let state = State {
            next_id: 1,
            store_id: format!(
                "{:016x}{:016x}",
                crate::retry::random_u64(),
                crate::retry::random_u64()
            ),
            ..State::default()
        };
        MemoryBackend {
            state: Arc::new(Mutex::new(state)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn ready<T: Send + 'static>(&self, value: StoreResult<T>) -> BoxFuture<'_, StoreResult<T>> {
        Box::pin(std::future::ready(value))
    }
}

impl Backend for MemoryBackend {
    fn coordinator(&self) -> Option<&dyn crate::store::coordinator::CoordinatorStore> {
        Some(self)
    }

    fn dashboard(&self) -> Option<&dyn crate::store::dashboard::DashboardStore> {
        Some(self)
    }

    fn name(&self) -> &'static str {
        "memory"
    }

    fn migrate(&self) -> BoxFuture<'_, StoreResult<i64>> {
        self.ready(Ok(crate::store::SCHEMA_VERSION))
    }

    fn schema_version(&self) -> BoxFuture<'_, StoreResult<i64>> {
        self.ready(Ok(crate::store::SCHEMA_VERSION))
    }

    fn enqueue_many(
        &self,
        items: Vec<NewItem>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Enqueued>>> {
        let mut st = self.lock();
        // Inputs are checked before anything is inserted: the batch is all or nothing.
        if let Err(e) = items.iter().try_for_each(|i| st.remote.check_inputs(i)) {
            drop(st);
            return self.ready(Err(e));
        }
        let out = items
            .iter()
            .map(|item| {
                let id = st.next_id;
                st.next_id += 1;
                match st.insert(id, item, now) {
                    Ok(id) => {
                        st.remote.attach_inputs(id, item);
                        Ok(Enqueued::new(id))
                    }
                    Err(NotInserted::Duplicate(existing)) => Ok(Enqueued::duplicate_of(existing)),
                    Err(NotInserted::IdTaken) => Err(StoreError::Task(format!(
                        "fresh id {id} is taken by a row this runtime did not write"
                    ))),
                }
            })
            .collect();
        drop(st);
        self.ready(out)
    }

    fn claim(&self, req: ClaimRequest, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<Claimed>>> {
        let mut st = self.lock();
        if let Some(session) = &req.session
            && !st.remote.session_live(session, now)
        {
            drop(st);
            return self.ready(Ok(Vec::new()));
        }
        let mut due: Vec<(i32, Timestamp, ItemId)> = st
            .items
            .values()
            .filter(|r| {
                r.lane == req.lane
                    && matches!(
                        r.state,
                        ItemState::Available | ItemState::Failed | ItemState::Parked
                    )
                    && r.run_at <= now
                    && req.kinds.as_ref().is_none_or(|k| k.contains(&r.kind))
                    && req.account.as_ref().is_none_or(|a| *a == r.account)
            })
            .map(|r| (-r.priority, r.run_at, r.id))
            .collect();
        due.sort_unstable();
        let mut claimed = Vec::new();
        for (_, _, id) in due.into_iter().take(req.n) {
            let inputs = if req.with_inputs {
                st.remote.inputs_of(id)
            } else {
                Vec::new()
            };
            if let Some(r) = st.items.get_mut(&id) {
                let from = r.state;
                r.state = ItemState::Running;
                r.fence += 1;
                r.attempt += 1;
                r.lease_owner = Some(req.owner.clone());
                r.lease_expires_at = Some(req.lease_until);
                r.parked_on = None;
                r.updated_at = now;
                r.claimed_at = Some(now);
                claimed.push(Claimed {
                    item: r.clone(),
                    fence: r.fence,
                    lease_expires_at: req.lease_until,
                    claimed_from: Some(from),
                    inputs,
                });
            }
        }
        drop(st);
        self.ready(Ok(claimed))
    }

    fn heartbeat(
        &self,
        held: Held,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Timestamp>> {
        let mut st = self.lock();
        let out = st.held(&held, now).map(|r| {
            r.lease_expires_at = Some(lease_until);
            r.updated_at = now;
            lease_until
        });
        drop(st);
        self.ready(out)
    }

    fn checkpoint(
        &self,
        held: Held,
        state: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let out = st.held(&held, now).map(|r| {
            r.checkpoint = Some(state);
            r.updated_at = now;
        });
        drop(st);
        self.ready(out)
    }

    fn finish_many(
        &self,
        batch: std::sync::Arc<[Finish]>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<StoreResult<()>>>> {
        let mut st = self.lock();
        let out = batch.iter().map(|f| st.finish(f, now)).collect();
        drop(st);
        self.ready(Ok(out))
    }

    fn sweep(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        let expired: Vec<ItemId> = st
            .items
            .values()
            .filter(|r| {
                r.state == ItemState::Running && r.lease_expires_at.is_some_and(|t| t <= now)
            })
            .map(|r| r.id)
            .collect();
        for id in &expired {
            st.end_running(*id, |r| {
                r.state = if r.attempt >= r.max_attempts {
                    ItemState::Dead
                } else {
                    ItemState::Available
                };
                r.last_error = Some("lease expired".to_owned());
                r.lease_owner = None;
                r.lease_expires_at = None;
                r.run_at = now;
                r.updated_at = now;
            });
        }
        drop(st);
        self.ready(Ok(expired.len() as u64))
    }

    fn retry(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.retry_dead_item(id, now)
    }

    fn retry_all_dead(
        &self,
        kind: Option<String>,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.retry_dead_items(kind, limit, now)
    }

    fn purge_completed(&self, before: Timestamp, limit: usize) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        // The oldest completions first, as the SQL stores take them.
        let mut old: Vec<(Timestamp, ItemId)> = st
            .items
            .values()
            .filter(|r| r.state == ItemState::Completed && r.updated_at < before)
            .map(|r| (r.updated_at, r.id))
            .collect();
        old.sort_unstable();
        let gone: Vec<ItemId> = old.into_iter().take(limit).map(|(_, id)| id).collect();
        let set: std::collections::BTreeSet<ItemId> = gone.iter().copied().collect();
        st.forget(&set);
        drop(st);
        self.ready(Ok(gone.len() as u64))
    }

    fn discard(&self, id: ItemId) -> BoxFuture<'_, StoreResult<()>> {
        self.discard_dead_item(id)
    }

    fn signal(
        &self,
        signal: String,
        limit: Option<u64>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let mut st = self.lock();
        let mut n = 0;
        for r in st.items.values_mut() {
            if limit.is_some_and(|l| n >= l) {
                break;
            }
            if r.state == ItemState::Parked && r.parked_on.as_deref() == Some(signal.as_str()) {
                r.state = ItemState::Available;
                r.run_at = now;
                r.parked_on = None;
                r.updated_at = now;
                n += 1;
            }
        }
        drop(st);
        self.ready(Ok(n))
    }

    fn get(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Option<ItemRecord>>> {
        let out = self.lock().items.get(&id).cloned();
        self.ready(Ok(out))
    }

    fn list(&self, filter: ListFilter) -> BoxFuture<'_, StoreResult<Vec<ItemRecord>>> {
        let st = self.lock();
        let matching = |r: &&ItemRecord| {
            filter.state.is_none_or(|s| r.state == s)
                && filter.lane.as_deref().is_none_or(|l| r.lane == l)
                && filter.kind.as_deref().is_none_or(|k| r.kind == k)
                && filter
                    .dedupe_key
                    .as_deref()
                    .is_none_or(|k| r.dedupe_key.as_deref() == Some(k))
                && filter.after.is_none_or(|after| {
                    if filter.newest_first {
                        r.id < after
                    } else {
                        r.id > after
                    }
                })
        };
        let limit = filter.limit.unwrap_or(usize::MAX);
        let out = if filter.newest_first {
            st.items
                .values()
                .rev()
                .filter(matching)
                .take(limit)
                .cloned()
                .collect()
        } else {
            st.items
                .values()
                .filter(matching)
                .take(limit)
                .cloned()
                .collect()
        };
        drop(st);
        self.ready(Ok(out))
    }

    fn effect(&self, id: ItemId, key: String) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        let out = self.lock().effects.get(&(id, key)).map(|e| e.0.clone());
        self.ready(Ok(out))
    }

    fn begin_effect(
        &self,
        held: Held,
        key: String,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<EffectStart>> {
        let mut st = self.lock();
        let out = match st.effects.get(&(held.id, key)) {
            Some((output, _, _)) => Ok(EffectStart::Recorded(output.clone())),
            None => st.held(&held, now).map(|r| {
                r.lease_expires_at = Some(lease_until);
                r.updated_at = now;
                EffectStart::Run {
                    lease_expires_at: lease_until,
                    verified_at: now,
                }
            }),
        };
        drop(st);
        self.ready(out)
    }

    fn record_effect(
        &self,
        held: Held,
        key: String,
        output: Value,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let out = st.held(&held, now).map(|_| ());
        if out.is_ok() {
            st.effects
                .entry((held.id, key))
                .or_insert((output, held.fence, now));
        }
        drop(st);
        self.ready(out)
    }

    fn attempts(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<AttemptRecord>>> {
        let out = self.lock().attempts.get(&id).cloned().unwrap_or_default();
        self.ready(Ok(out))
    }

    fn store_id(&self) -> BoxFuture<'_, StoreResult<String>> {
        let out = self.lock().store_id.clone();
        self.ready(Ok(out))
    }

    fn transaction(&self, body: TxBody, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let pending = std::cell::RefCell::new(PendingOutbox {
            rows: Vec::new(),
            next_id: st.next_id,
        });
        let result = {
            let mut tx = Tx::new(&pending, now);
            body(&mut tx)
        };
        let pending = pending.into_inner();
        // Ids a rolled-back transaction took stay taken (as on PostgreSQL, whose sequence
        // does not roll back; SQLite's mark rolls back with the transaction, which is as
        // safe: no committed row ever had those ids).
        st.next_id = st.next_id.max(pending.next_id);
        if result.is_ok() {
            for (id, item) in pending.rows {
                st.outbox.insert(
                    id,
                    OutboxRow {
                        item,
                        created_at: now,
                        relayed_at: None,
                        relay_error: None,
                    },
                );
            }
        }
        drop(st);
        self.ready(result)
    }

    fn relay_outbox(
        &self,
        limit: usize,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<RelayReport>> {
        let mut st = self.lock();
        let pending: Vec<(ItemId, NewItem)> = st
            .outbox
            .iter()
            .filter(|(_, row)| row.relayed_at.is_none() && row.relay_error.is_none())
            .take(limit)
            .map(|(id, row)| (*id, row.item.clone()))
            .collect();
        let mut report = RelayReport::default();
        for (id, item) in &pending {
            let refused = match st.insert(*id, item, now) {
                // A row whose dedupe key a live item of its kind holds is that duplicate.
                Ok(_) | Err(NotInserted::Duplicate(_)) => None,
                // The row's own item (relayed before, its stamp lost): a no-op.
                Err(NotInserted::IdTaken)
                    if st
                        .items
                        .get(id)
                        .is_some_and(|r| r.kind == item.kind && r.payload == item.payload) =>
                {
                    None
                }
                Err(NotInserted::IdTaken) => Some(format!("id {id} is already another item's")),
            };
            if let Some(row) = st.outbox.get_mut(id) {
                match refused {
                    None => {
                        row.relayed_at = Some(now);
                        report.relayed += 1;
                    }
                    Some(reason) => {
                        row.relay_error = Some(reason.clone());
                        report.refused.push((*id, reason));
                    }
                }
            }
        }
        drop(st);
        self.ready(Ok(report))
    }

    fn effects(&self, id: ItemId) -> BoxFuture<'_, StoreResult<Vec<EffectRecord>>> {
        let out = self
            .lock()
            .effects
            .range((id, String::new())..)
            .take_while(|((item, _), _)| *item == id)
            .map(|((_, key), (output, fence, at))| EffectRecord {
                key: key.clone(),
                output: output.clone(),
                fence: *fence,
                recorded_at: *at,
            })
            .collect();
        self.ready(Ok(out))
    }

    fn cancel(&self, id: ItemId, now: Timestamp) -> BoxFuture<'_, StoreResult<()>> {
        self.cancel_live_item(id, now)
    }

    fn release_worker(&self, owner: String, now: Timestamp) -> BoxFuture<'_, StoreResult<u64>> {
        self.release_leases_of(owner, now)
    }

    fn outbox_stats(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<OutboxStats>> {
        let st = self.lock();
        let mut stats = OutboxStats::default();
        for row in st.outbox.values().filter(|r| r.relayed_at.is_none()) {
            if row.relay_error.is_some() {
                stats.refused += 1;
            } else {
                stats.pending += 1;
            }
        }
        let oldest = st
            .outbox
            .values()
            .filter(|r| r.relayed_at.is_none() && r.relay_error.is_none())
            .map(|r| r.created_at)
            .min();
        stats.oldest_pending_age_ms = oldest.map_or(0, |t| now.millis_since(t));
        drop(st);
        self.ready(Ok(stats))
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        let mut counts: BTreeMap<(String, String, ItemState), u64> = BTreeMap::new();
        for r in self.lock().items.values() {
            *counts
                .entry((r.lane.clone(), r.kind.clone(), r.state))
                .or_default() += 1;
        }
        let out = counts
            .into_iter()
            .map(|((lane, kind, state), n)| (lane, kind, state, n))
            .collect();
        self.ready(Ok(out))
    }

    fn ages(
        &self,
        lanes: Vec<String>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<LaneAges>>> {
        let st = self.lock();
        let mut by_lane: BTreeMap<String, LaneAges> = lanes
            .into_iter()
            .map(|l| (l.clone(), LaneAges::new(l)))
            .collect();
        for r in st.items.values() {
            let Some(ages) = by_lane.get_mut(&r.lane) else {
                continue;
            };
            let since = match r.state {
                ItemState::Available if r.run_at > now => {
                    ages.scheduled += 1;
                    continue;
                }
                ItemState::Available => r.run_at,
                ItemState::Completed => r.updated_at,
                _ => r.created_at,
            };
            let i = ItemState::ALL
                .iter()
                .position(|s| *s == r.state)
                .unwrap_or_default();
            let slot = &mut ages.oldest[i];
            *slot = Some(slot.map_or(since, |t| t.min(since)));
        }
        drop(st);
        self.ready(Ok(by_lane.into_values().collect()))
    }

    fn mark_silent_workers(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        let mut st = self.lock();
        let mut ids = Vec::new();
        for w in st.workers.values_mut() {
            let silence = now.as_millis().saturating_sub(w.last_seen_at.as_millis());
            if w.state != WorkerState::Offline && silence > 3 * w.lease_ms.min(SILENCE_CAP_MS) {
                w.state = WorkerState::Offline;
                ids.push(w.id.clone());
            }
        }
        drop(st);
        self.ready(Ok(ids))
    }

    fn purge_retained(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<(u64, u64)>> {
        let mut st = self.lock();
        let mut relayed: Vec<(Timestamp, ItemId)> = st
            .outbox
            .iter()
            .filter_map(|(id, row)| row.relayed_at.filter(|t| *t < before).map(|t| (t, *id)))
            .collect();
        relayed.sort_unstable();
        relayed.truncate(limit);
        for (_, id) in &relayed {
            st.outbox.remove(id);
        }
        let before_workers = st.workers.len();
        st.workers
            .retain(|_, w| !(w.state == WorkerState::Offline && w.last_seen_at < before));
        let workers = (before_workers - st.workers.len()) as u64;
        drop(st);
        self.ready(Ok((relayed.len() as u64, workers)))
    }

    fn put_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<()>> {
        let mut st = self.lock();
        let started = st.workers.get(&worker.id).map(|w| w.started_at);
        let mut worker = worker;
        if let Some(started) = started {
            worker.started_at = started;
        }
        st.workers.insert(worker.id.clone(), worker);
        drop(st);
        self.ready(Ok(()))
    }

    fn touch_worker(&self, worker: WorkerRecord) -> BoxFuture<'_, StoreResult<WorkerState>> {
        let mut st = self.lock();
        let state = match st.workers.get_mut(&worker.id) {
            Some(w) => {
                w.lanes = worker.lanes;
                w.lease_ms = worker.lease_ms;
                w.last_seen_at = worker.last_seen_at;
                if !matches!(
                    w.state,
                    WorkerState::Draining | WorkerState::UpgradeRequired
                ) {
                    w.state = worker.state;
                }
                w.state
            }
            None => {
                let state = worker.state;
                st.workers.insert(worker.id.clone(), worker);
                state
            }
        };
        drop(st);
        self.ready(Ok(state))
    }

    fn drain_worker(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        let mut st = self.lock();
        let changed = match st.workers.get_mut(&id) {
            Some(w) if w.state != WorkerState::Offline => {
                w.state = WorkerState::Draining;
                true
            }
            _ => false,
        };
        drop(st);
        self.ready(Ok(changed))
    }

    fn workers(&self) -> BoxFuture<'_, StoreResult<Vec<WorkerRecord>>> {
        let out = self.lock().workers.values().cloned().collect();
        self.ready(Ok(out))
    }
}
