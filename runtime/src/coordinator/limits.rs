//! The gates in front of the coordinator's work: enrollment and challenge calls per source
//! address per minute, one open claim per (session, lane), one WebSocket per session, and a
//! bounded number of artifact uploads in memory. In one coordinator's memory: several
//! coordinators each keep their own (README.md#remote-workers-scaffold-queue-serve says what that allows).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::error::ApiError;

/// The most source addresses the rate limiter remembers; past it the oldest windows go.
const ADDRESSES: usize = 100_000;

#[derive(Debug)]
pub(crate) struct Gates {
    per_minute: u32,
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    claims: Arc<Mutex<HashSet<(String, String)>>>,
    sockets: Arc<Mutex<HashSet<String>>>,
    pub uploads: Arc<tokio::sync::Semaphore>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Gates {
    pub(crate) fn new(per_minute: u32, uploads: usize) -> Self {
        Gates {
            per_minute: per_minute.max(1),
            windows: Mutex::default(),
            claims: Arc::default(),
            sockets: Arc::default(),
            uploads: Arc::new(tokio::sync::Semaphore::new(uploads.max(1))),
        }
    }

    /// Counts one enrollment or challenge call from `ip`: a fixed one-minute window.
    pub(crate) fn rate(&self, ip: IpAddr) -> Result<(), ApiError> {
        let now = Instant::now();
        let mut w = lock(&self.windows);
        if w.len() >= ADDRESSES {
            w.retain(|_, (start, _)| now.duration_since(*start) < Duration::from_secs(60));
            if w.len() >= ADDRESSES {
                return Err(ApiError::too_many("rate_limited", 60));
            }
        }
        let (start, n) = w.entry(ip).or_insert((now, 0));
        if now.duration_since(*start) >= Duration::from_secs(60) {
            *start = now;
            *n = 0;
        }
        if *n >= self.per_minute {
            let left = 60u64.saturating_sub(now.duration_since(*start).as_secs());
            return Err(ApiError::too_many("rate_limited", left));
        }
        *n += 1;
        Ok(())
    }

    /// Opens the one claim `session` may have open on `lane`; closed when dropped.
    pub(crate) fn claim(&self, session: &str, lane: &str) -> Result<Held, ApiError> {
        let key = (session.to_owned(), lane.to_owned());
        if !lock(&self.claims).insert(key.clone()) {
            return Err(ApiError::too_many("claim_open", 1).with("lane", lane.to_owned()));
        }
        let set = Arc::clone(&self.claims);
        Ok(Held(Box::new(move || {
            lock(&set).remove(&key);
        })))
    }

    /// Opens the one WebSocket `session` may have; closed when dropped.
    pub(crate) fn socket(&self, session: &str) -> Result<Held, ApiError> {
        let key = session.to_owned();
        if !lock(&self.sockets).insert(key.clone()) {
            return Err(ApiError::too_many("socket_open", 5));
        }
        let set = Arc::clone(&self.sockets);
        Ok(Held(Box::new(move || {
            lock(&set).remove(&key);
        })))
    }

    /// How many sockets are open.
    pub(crate) fn sockets_open(&self) -> usize {
        lock(&self.sockets).len()
    }
}

/// A gate held open: it closes when dropped.
pub(crate) struct Held(Box<dyn FnMut() + Send>);

impl Drop for Held {
    fn drop(&mut self) {
        (self.0)();
    }
}
