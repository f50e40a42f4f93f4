//! The transactional outbox: a producer writes an outbox row in the same transaction as its
//! business write ([`crate::Store::enqueue_in`]); the relay ([`crate::Store::relay_outbox`],
//! or [`Relay`] in the background) turns each row into an item whose id is the row id, so a
//! row relayed twice is inserted once.
//!
//! Outbox row ids and item ids come from one sequence (on SQLite: one past the largest id of
//! either table, allocated inside the write transaction), so a relayed id never collides with
//! an item enqueued directly.

use std::time::Duration;

use crate::error::StoreError;
use crate::item::{ItemId, NewItem};
use crate::store::Store;
use crate::time::Timestamp;

/// A producer's open transaction, handed to the body of [`crate::Store::transaction`], or
/// wrapped around the producer's own `rusqlite` transaction with [`Tx::sqlite`].
#[derive(Debug)]
pub struct Tx<'a> {
    // Borrowed, not boxed: a `Tx` has no destructor, so a producer's own transaction it
    // wraps can be committed while the `Tx` is still in scope.
    sink: &'a (dyn OutboxSink + 'a),
    now: Timestamp,
}

/// Where a transaction's outbox rows go: each backend's open transaction implements it, so
/// [`Tx`] knows no backend.
pub(crate) trait OutboxSink: std::fmt::Debug {
    /// Inserts an outbox row for `item`, stamped `now`; returns the id its item will have.
    fn insert(&self, item: &NewItem, now: Timestamp) -> Result<ItemId, StoreError>;

    /// The SQLite connection the transaction runs on, if it is one.
    #[cfg(feature = "sqlite")]
    fn connection(&self) -> Option<&rusqlite::Connection> {
        None
    }
}

impl<'a> Tx<'a> {
    /// A transaction whose outbox rows go to `sink`, stamped `now`.
    pub(crate) fn new(sink: &'a (dyn OutboxSink + 'a), now: Timestamp) -> Self {
        Tx { sink, now }
    }

    /// Wraps a transaction the producer opened on its own connection to the queue's SQLite
    /// file (the queue tables must be migrated there). `now` stamps the outbox row.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(tx: &'a rusqlite::Transaction<'a>, now: Timestamp) -> Self {
        let conn: &'a rusqlite::Connection = tx;
        Tx::new(conn, now)
    }

    /// The SQLite connection the transaction runs on, for the producer's business writes
    /// (`None` on other backends; on PostgreSQL a producer opens its own transaction and
    /// calls [`crate::Store::enqueue_in_postgres`]).
    #[cfg(feature = "sqlite")]
    pub fn connection(&self) -> Option<&rusqlite::Connection> {
        self.sink.connection()
    }

    /// Inserts an outbox row for `item`; returns the id its item will have.
    pub(crate) fn enqueue(&mut self, item: NewItem) -> Result<ItemId, StoreError> {
        if !item.inputs.is_empty() {
            // An outbox row carries no artifacts; the relay would drop them.
            return Err(StoreError::Unsupported(
                "an item with inputs is enqueued with Store::enqueue, not through the outbox"
                    .to_owned(),
            ));
        }
        self.sink.insert(&item, self.now)
    }
}

/// A background relay: every `interval`, relays outbox rows until none are left.
#[derive(Debug, Clone)]
pub struct Relay {
    store: Store,
    interval: Duration,
    batch: usize,
}

impl Relay {
    /// A relay over `store`, polling every `interval`.
    pub fn new(store: Store, interval: Duration) -> Self {
        Relay {
            store,
            interval,
            batch: 500,
        }
    }

    /// Relays until `shutdown` resolves. Store errors are logged and retried next tick.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            loop {
                match self.store.relay_outbox(self.batch).await {
                    Ok(n) if n as usize >= self.batch => continue,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "outbox relay failed; retrying");
                        break;
                    }
                }
            }
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(self.interval) => {}
            }
        }
    }
}
