//! Time as the queue sees it: milliseconds since the Unix epoch, read from an injectable
//! [`Clock`] so tests (and the in-memory twin) can move time by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time, in whole milliseconds since the Unix epoch (UTC).
///
/// Every timestamp the store writes (`run_at`, `lease_expires_at`, …) is one of these, taken
/// from the store's [`Clock`]: on PostgreSQL by default a [`DatabaseClock`] (the server's
/// time, so every host reads one clock), elsewhere the system clock; a test injects a
/// [`ManualClock`] on any backend and it drives lease expiry on every backend alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The latest representable time; a parked item waiting for a signal runs at this time.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// From milliseconds since the Unix epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This time plus `d` (saturating).
    pub fn plus(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_add(duration_ms(d)))
    }

    /// Milliseconds from `earlier` to `self`, zero when `earlier` is later.
    pub fn millis_since(self, earlier: Timestamp) -> u64 {
        u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0)
    }

    /// The duration from `now` until this time, zero when it has passed.
    pub fn duration_from(self, now: Timestamp) -> Duration {
        Duration::from_millis(self.millis_since(now))
    }
}

impl From<SystemTime> for Timestamp {
    fn from(t: SystemTime) -> Self {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp(duration_ms(d)),
            Err(e) => Timestamp(-duration_ms(e.duration())),
        }
    }
}

/// Whole milliseconds of `d`, saturating at `i64::MAX`.
pub(crate) fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Where the store reads "now".
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from(SystemTime::now())
    }
}

/// The process's wall clock read once at start and carried forward on the monotonic clock:
/// it never steps when NTP or an operator sets the system time, so a [`DatabaseClock`] over
/// it stays within its last sync's error until the next.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    anchor: Timestamp,
    started: std::time::Instant,
}

impl MonotonicClock {
    /// Anchored at the system time now.
    pub fn new() -> Self {
        MonotonicClock {
            anchor: SystemClock.now(),
            started: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Timestamp {
        self.anchor.plus(self.started.elapsed())
    }
}

/// The database server's clock as this host reads it: a host clock plus the offset last
/// measured against the server (half the round trip is the error). Hosts sharing a
/// PostgreSQL queue each read it, so their leases, `run_at`s and sweeps agree however far
/// their own clocks are apart; the store re-measures the offset periodically.
#[derive(Debug)]
pub struct DatabaseClock {
    host: Arc<dyn Clock>,
    offset_ms: AtomicI64,
}

impl DatabaseClock {
    /// Over `host`, offset zero until the first [`DatabaseClock::set_offset`].
    pub fn new(host: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(DatabaseClock {
            host,
            offset_ms: AtomicI64::new(0),
        })
    }

    /// The host clock it reads.
    pub fn host(&self) -> &Arc<dyn Clock> {
        &self.host
    }

    /// The server's time minus the host's, as last measured.
    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::SeqCst)
    }

    /// Records a measurement: the host read `sent` before asking the server, the server
    /// answered `server`, the host read `received` after.
    pub fn record(&self, sent: Timestamp, server: Timestamp, received: Timestamp) {
        let midpoint = sent.as_millis() + (received.as_millis() - sent.as_millis()) / 2;
        self.offset_ms
            .store(server.as_millis() - midpoint, Ordering::SeqCst);
    }
}

impl Clock for DatabaseClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.host.now().0.saturating_add(self.offset_ms()))
    }
}

/// A clock that only moves when told to: tests expire leases and reach `run_at` with it.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Arc<Self> {
        Arc::new(ManualClock {
            now: AtomicI64::new(start.as_millis()),
        })
    }

    /// A clock standing at the current system time.
    pub fn starting_now() -> Arc<Self> {
        Self::new(SystemClock.now())
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.now.fetch_add(duration_ms(d), Ordering::SeqCst);
    }

    /// Sets the clock to `t`.
    pub fn set(&self, t: Timestamp) {
        self.now.store(t.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now.load(Ordering::SeqCst))
    }
}
