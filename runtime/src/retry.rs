//! Retry backoff: exponential with jitter, capped.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How transient failures are spaced out. Attempt `n` (1-based) waits a random time in
/// `[d/2, d]` where `d = min(cap, base * 2^(n-1))` ("equal jitter": retries of items that
/// failed together spread out, and none waits less than half its step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base: Duration,
    pub cap: Duration,
}

impl RetryPolicy {
    /// 1 s doubling up to 1 h.
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(3600),
    };

    /// The step before jitter for attempt `attempt`.
    pub fn step(&self, attempt: i32) -> Duration {
        let exp = u32::try_from(attempt.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        self.base.saturating_mul(1u32 << exp).min(self.cap)
    }

    /// The delay before retrying after attempt `attempt`, jitter included.
    pub fn delay(&self, attempt: i32) -> Duration {
        let step = self.step(attempt);
        let half = step / 2;
        let spread = u64::try_from((step - half).as_millis()).unwrap_or(u64::MAX);
        let jitter = if spread == 0 {
            0
        } else {
            random_u64() % (spread + 1)
        };
        half + Duration::from_millis(jitter)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A random number from the standard library's per-process random hasher keys: enough for
/// jitter, no extra dependency.
pub(crate) fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}
