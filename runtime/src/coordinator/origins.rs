//! Where each job this coordinator handed out was claimed from (lane, kind, the state it
//! left), kept until its attempt ends here: a finish that carries its claim's origin is
//! counted from it, as a local loop's is, instead of reading the rows it changed back
//! (PostgreSQL's batch completion does an eighth more work without it). A finish this
//! process did not hand out (another coordinator's claim, or one forgotten) goes without,
//! and is counted from the rows; nothing is trusted from the worker.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::item::{ClaimOrigin, Fence, ItemId};

/// The most origins kept; past it, those older than a few leases are dropped, then all.
const KEPT: usize = 65_536;

#[derive(Debug, Default)]
pub(crate) struct Origins {
    kept: Mutex<HashMap<(ItemId, Fence), (ClaimOrigin, Instant)>>,
}

impl Origins {
    /// Keeps the origin of the job (`id`, `fence`) a claim handed out; `lease` bounds how
    /// long one whose attempt never ends here is worth keeping.
    pub(crate) fn remember(
        &self,
        id: ItemId,
        fence: Fence,
        origin: Option<ClaimOrigin>,
        lease: Duration,
    ) {
        let (Some(origin), Ok(mut kept)) = (origin, self.kept.lock()) else {
            return;
        };
        if kept.len() >= KEPT {
            let stale = lease.saturating_mul(4);
            kept.retain(|_, (_, at)| at.elapsed() < stale);
            if kept.len() >= KEPT {
                kept.clear();
            }
        }
        kept.insert((id, fence), (origin, Instant::now()));
    }

    /// The origin of (`id`, `fence`), forgotten: its attempt is ending.
    pub(crate) fn take(&self, id: ItemId, fence: Fence) -> Option<ClaimOrigin> {
        self.kept.lock().ok()?.remove(&(id, fence)).map(|(o, _)| o)
    }
}
