//! Why an item is where it is, in words: what none of the peers' dashboards says (who holds
//! it and until when, what it waits for, whether any worker serves its lane).

use crate::item::{ItemRecord, ItemState, WorkerRecord, WorkerState};
use crate::time::Timestamp;

use super::view::{relative, utc};

/// One sentence (or two) on why `item` is, or is not, running now.
pub(super) fn why(item: &ItemRecord, workers: &[WorkerRecord], now: Timestamp) -> String {
    let serving: Vec<&WorkerRecord> = workers
        .iter()
        .filter(|w| w.lanes.contains(&item.lane))
        .collect();
    let online = serving
        .iter()
        .filter(|w| matches!(w.state, WorkerState::Online | WorkerState::Registered))
        .count();
    let draining = serving
        .iter()
        .filter(|w| w.state == WorkerState::Draining)
        .count();
    let workers_say = || match (online, draining) {
        (0, 0) => format!(
            "No worker serves lane `{}`: start one with `serve --lane {}` (or check that its workers are up).",
            item.lane, item.lane
        ),
        (0, d) => format!(
            "Every worker of lane `{}` is draining ({d}); none will claim it until one starts.",
            item.lane
        ),
        (n, _) => format!(
            "{n} online worker{} serve{} lane `{}`.",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" },
            item.lane
        ),
    };
    match item.state {
        ItemState::Available if item.run_at > now => {
            let wait = if item.attempt > 0 {
                format!(
                    "Waiting out its retry back-off after attempt {} of {}",
                    item.attempt, item.max_attempts
                )
            } else {
                "Scheduled".to_owned()
            };
            format!(
                "{wait}: due at {} ({}). {}",
                utc(item.run_at),
                relative(item.run_at, now),
                workers_say()
            )
        }
        ItemState::Available => format!(
            "Due {} and waiting to be claimed (priority {}). {}",
            relative(item.run_at, now),
            item.priority,
            workers_say()
        ),
        ItemState::Running => {
            let holder = item.lease_owner.as_deref().unwrap_or("an unknown worker");
            match item.lease_expires_at {
                Some(end) if end > now => format!(
                    "Running on {holder} under fence {}; its lease ends at {} ({}) unless renewed.",
                    item.fence,
                    utc(end),
                    relative(end, now)
                ),
                Some(end) => format!(
                    "Its lease (held by {holder}, fence {}) ran out at {} ({}): the holder is gone or stalled; the sweeper will make it available again, and any late write under fence {} is refused.",
                    item.fence,
                    utc(end),
                    relative(end, now),
                    item.fence
                ),
                None => format!("Running on {holder} under fence {}.", item.fence),
            }
        }
        ItemState::Failed => format!(
            "Attempt {} of {} failed{}; it runs again at {} ({}). {}",
            item.attempt,
            item.max_attempts,
            item.last_error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default(),
            utc(item.run_at),
            relative(item.run_at, now),
            workers_say()
        ),
        ItemState::Parked => match &item.parked_on {
            Some(signal) => format!(
                "Parked until the signal `{signal}` (`scaffold queue signal {signal}`){}.",
                if item.run_at == Timestamp::MAX {
                    String::new()
                } else {
                    format!(" or {}", utc(item.run_at))
                }
            ),
            None => format!(
                "Parked until {} ({}).",
                utc(item.run_at),
                relative(item.run_at, now)
            ),
        },
        ItemState::Dead => format!(
            "Dead {}{}: it runs again only if an operator retries it.",
            if item.attempt == 0 {
                "before any attempt".to_owned()
            } else {
                format!("after {} of {} attempts", item.attempt, item.max_attempts)
            },
            item.last_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ),
        ItemState::Completed => format!(
            "Completed at {} ({}); nothing is left to run.",
            utc(item.updated_at),
            relative(item.updated_at, now)
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item(state: ItemState) -> ItemRecord {
        ItemRecord {
            id: 7,
            kind: "NOTIFY_SHIPMENT".into(),
            lane: "mail".into(),
            payload: json!({}),
            state,
            priority: 0,
            attempt: 1,
            max_attempts: 5,
            run_at: Timestamp::from_millis(10_000),
            lease_owner: Some("w-1".into()),
            lease_expires_at: Some(Timestamp::from_millis(40_000)),
            fence: 3,
            dedupe_key: None,
            checkpoint: None,
            last_error: Some("carrier timed out".into()),
            parked_on: None,
            created_at: Timestamp::from_millis(1_000),
            updated_at: Timestamp::from_millis(9_000),
            claimed_at: Some(Timestamp::from_millis(10_000)),
            account: "default".into(),
        }
    }

    #[test]
    fn says_who_holds_it_and_what_it_waits_for() {
        let now = Timestamp::from_millis(20_000);
        let running = why(&item(ItemState::Running), &[], now);
        assert!(
            running.contains("Running on w-1 under fence 3"),
            "{running}"
        );
        assert!(running.contains("in 20s"), "{running}");
        let late = why(
            &item(ItemState::Running),
            &[],
            Timestamp::from_millis(50_000),
        );
        assert!(late.contains("ran out"), "{late}");
        let waiting = why(&item(ItemState::Available), &[], now);
        assert!(
            waiting.contains("No worker serves lane `mail`"),
            "{waiting}"
        );
        let dead = why(&item(ItemState::Dead), &[], now);
        assert!(dead.contains("carrier timed out"), "{dead}");
    }
}
