//! What an operator reads of a queue, in one place: `scaffold queue status --format json`,
//! `scaffold queue workers` and the dashboard all ask these, so their numbers cannot differ.

use serde::Serialize;

use crate::item::{ItemId, ItemState, LaneStats, ListFilter, OutboxStats, WorkerRecord};
use crate::store::{Store, StoreResult};

/// The queue's status: every lane's counts and ages, and the outbox's backlog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueStatus {
    pub lanes: Vec<LaneStatus>,
    pub outbox: OutboxStats,
}

/// One lane's items by state (`available` counts due items only; `scheduled` the rest) and
/// how long the oldest due item has waited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaneStatus {
    pub lane: String,
    pub available: u64,
    pub running: u64,
    pub completed: u64,
    pub failed: u64,
    pub dead: u64,
    pub parked: u64,
    pub scheduled: u64,
    pub oldest_available_age_ms: u64,
}

impl LaneStatus {
    /// The figures of one lane's [`LaneStats`].
    pub fn of(l: &LaneStats) -> LaneStatus {
        LaneStatus {
            lane: l.lane.clone(),
            available: l.get(ItemState::Available).count,
            running: l.get(ItemState::Running).count,
            completed: l.get(ItemState::Completed).count,
            failed: l.get(ItemState::Failed).count,
            dead: l.get(ItemState::Dead).count,
            parked: l.get(ItemState::Parked).count,
            scheduled: l.scheduled,
            oldest_available_age_ms: l.get(ItemState::Available).oldest_age_ms,
        }
    }

    /// The count of `state`.
    pub fn count(&self, state: ItemState) -> u64 {
        match state {
            ItemState::Available => self.available,
            ItemState::Running => self.running,
            ItemState::Completed => self.completed,
            ItemState::Failed => self.failed,
            ItemState::Dead => self.dead,
            ItemState::Parked => self.parked,
        }
    }
}

/// A worker and the items it holds now (running under its name), lowest id first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerStatus {
    pub worker: WorkerRecord,
    pub held: Vec<ItemId>,
}

impl Store {
    /// The queue's status (see [`Store::stats`]: counters and indexes, never a scan).
    pub async fn status(&self) -> StoreResult<QueueStatus> {
        Ok(self.status_and_kinds().await?.0)
    }

    /// The status and the counts by kind then state ([`Store::kind_counts`]) from one read
    /// of the counters (the dashboard's lanes page shows both).
    pub async fn status_and_kinds(
        &self,
    ) -> StoreResult<(QueueStatus, Vec<(String, ItemState, u64)>)> {
        let counts = self.backend.counts().await?;
        let lanes = self.stats_of(&counts).await?;
        let status = QueueStatus {
            lanes: lanes.iter().map(LaneStatus::of).collect(),
            outbox: self.outbox_stats().await?,
        };
        Ok((status, super::kinds_of(&counts)))
    }

    /// Every worker with the items it holds. Running items are as many as the workers run
    /// at once (read through the lease index), never the table.
    pub async fn worker_status(&self) -> StoreResult<Vec<WorkerStatus>> {
        let workers = self.workers().await?;
        let running = self
            .list(ListFilter {
                state: Some(ItemState::Running),
                ..ListFilter::default()
            })
            .await?;
        Ok(workers
            .into_iter()
            .map(|worker| {
                let held = running
                    .iter()
                    .filter(|r| r.lease_owner.as_deref() == Some(worker.id.as_str()))
                    .map(|r| r.id)
                    .collect();
                WorkerStatus { worker, held }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::item::{NewItem, WorkerState};
    use crate::time::ManualClock;

    #[tokio::test]
    async fn status_is_the_counters_and_workers_hold_their_running_items() {
        // A clock that stands still, so two reads agree to the millisecond.
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock("memory://", clock.clone())
            .await
            .expect("memory store");
        for lane in ["default", "default", "mail"] {
            let mut item = NewItem::new("NOTIFY_SHIPMENT", json!({}));
            item.lane = lane.to_owned();
            store.enqueue(item).await.expect("enqueued");
        }
        let claimed = store
            .claim_as("w-1", "default", 1, Duration::from_secs(30))
            .await
            .expect("claimed");
        clock.advance(Duration::from_secs(5));
        let now = store.now();
        store
            .put_worker(WorkerRecord {
                id: "w-1".into(),
                lanes: vec!["default".into()],
                state: WorkerState::Online,
                started_at: now,
                last_seen_at: now,
                lease_ms: 30_000,
            })
            .await
            .expect("worker");

        let status = store.status().await.expect("status");
        let lanes: Vec<(&str, u64, u64)> = status
            .lanes
            .iter()
            .map(|l| (l.lane.as_str(), l.available, l.running))
            .collect();
        assert_eq!(lanes, [("default", 1, 1), ("mail", 1, 0)]);
        let stats = store.stats().await.expect("stats");
        assert_eq!(
            status.lanes,
            stats.iter().map(LaneStatus::of).collect::<Vec<_>>()
        );
        assert_eq!(
            serde_json::to_value(&status.lanes[0]).expect("json"),
            json!({"lane": "default", "available": 1, "running": 1, "completed": 0,
                   "failed": 0, "dead": 0, "parked": 0, "scheduled": 0,
                   "oldest_available_age_ms": 5000})
        );

        let workers = store.worker_status().await.expect("workers");
        assert_eq!(workers.len(), 1);
        assert_eq!(workers[0].held, [claimed[0].item.id]);
    }
}
