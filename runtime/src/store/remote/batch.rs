//! Heartbeats in batches: every renewal asked while one batch call is out goes in the next
//! (`POST /v1/jobs/heartbeat`), each answered on its own. Items claimed together come due
//! together, so a worker holding a hundred jobs renews them in a call or two, not a hundred.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use tokio::sync::{mpsc, oneshot};

use super::client::{Client, Reply};
use crate::error::StoreError;
use crate::item::Held;
use crate::protocol::{BatchAnswer, BatchHeartbeat, BatchHeartbeatItem, job_name};
use crate::store::StoreResult;
use crate::time::Timestamp;

/// The most jobs one heartbeat call carries.
const MAX_BATCH: usize = 100;

type Ask = (Held, Timestamp, oneshot::Sender<StoreResult<Timestamp>>);

/// The batcher of one client: its task starts with the first renewal, on the runtime that
/// asks (the lease keeper's).
#[derive(Default)]
pub(crate) struct Heartbeats {
    tx: OnceLock<mpsc::UnboundedSender<Ask>>,
}

impl Heartbeats {
    /// Renews `held`'s lease; the new end on this store's clock: `now` (when it was asked)
    /// plus what the coordinator says is left.
    pub(super) async fn beat(
        &self,
        client: &Client,
        held: Held,
        now: Timestamp,
    ) -> StoreResult<Timestamp> {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(run(client.clone(), rx));
            tx
        });
        let (answer_tx, answer_rx) = oneshot::channel();
        tx.send((held, now, answer_tx))
            .map_err(|_| StoreError::Task("the heartbeat batcher stopped".to_owned()))?;
        answer_rx
            .await
            .map_err(|_| StoreError::Task("the heartbeat batcher stopped".to_owned()))?
    }
}

async fn run(client: Client, mut rx: mpsc::UnboundedReceiver<Ask>) {
    let mut batch: Vec<Ask> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(a) => batch.push(a),
                Err(_) => break,
            }
        }
        send(&client, std::mem::take(&mut batch)).await;
    }
}

/// A copy of a call's error for each job of its batch.
fn each(e: &StoreError) -> StoreError {
    match e {
        StoreError::Revoked => StoreError::Revoked,
        StoreError::UpgradeRequired { min, max, speaks } => StoreError::UpgradeRequired {
            min: *min,
            max: *max,
            speaks: *speaks,
        },
        StoreError::Unreachable { origin, cause } => StoreError::Unreachable {
            origin: origin.clone(),
            cause: cause.clone(),
        },
        StoreError::Refused { call, status, code } => StoreError::Refused {
            call: call.clone(),
            status: *status,
            code: code.clone(),
        },
        other => StoreError::Task(other.to_string()),
    }
}

async fn send(client: &Client, batch: Vec<Ask>) {
    let path = "/v1/jobs/heartbeat";
    let body = BatchHeartbeat {
        jobs: batch
            .iter()
            .map(|(h, _, _)| BatchHeartbeatItem {
                job: job_name(h.id, h.fence),
                fence: h.fence,
            })
            .collect(),
    };
    let answer = match client.call(Method::POST, path, &body, Duration::ZERO).await {
        Ok(reply) if reply.status.is_success() => reply.parse::<BatchAnswer>(path),
        Ok(reply) => Err(client.refused(path, &reply)),
        Err(e) => Err(e),
    };
    let mut results = match answer {
        Ok(a) => a
            .results
            .into_iter()
            .map(|r| (r.job.clone(), r))
            .collect::<std::collections::HashMap<_, _>>(),
        Err(e) => {
            for (_, _, tx) in batch {
                let _ = tx.send(Err(each(&e)));
            }
            return;
        }
    };
    for (held, now, tx) in batch {
        let stale = || StoreError::StaleLease {
            id: held.id,
            fence: held.fence,
        };
        let out = match results.remove(&job_name(held.id, held.fence)) {
            Some(r) if r.status == 200 => match r.lease {
                Some(lease) => Ok(now.plus(Duration::from_millis(lease.lease_ms))),
                None => Err(stale()),
            },
            Some(r) if r.status == 409 => Err(stale()),
            Some(r) => Err(client.refused(
                path,
                &Reply {
                    status: StatusCode::from_u16(r.status)
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    body: r.error.unwrap_or(serde_json::Value::Null),
                },
            )),
            None => Err(StoreError::Refused {
                call: path.to_owned(),
                status: 200,
                code: "the batch answer left this job out".to_owned(),
            }),
        };
        let _ = tx.send(out);
    }
}
