//! `/metrics` of the coordinator, in Prometheus text: requests by route and status, jobs
//! handed out, refusals by reason, and the open sessions and sockets.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    refusals: Mutex<BTreeMap<&'static str, u64>>,
    pub claimed: AtomicU64,
}

impl Metrics {
    pub(crate) fn request(&self, route: &str, status: u16, refusal: Option<&'static str>) {
        let mut r = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *r.entry((route.to_owned(), status)).or_default() += 1;
        drop(r);
        if let Some(reason) = refusal {
            *self
                .refusals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(reason)
                .or_default() += 1;
        }
    }

    pub(crate) fn refused(&self, reason: &'static str) {
        *self
            .refusals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(reason)
            .or_default() += 1;
    }

    pub(crate) fn render(&self, sessions: u64, sockets: usize) -> String {
        let mut out = String::new();
        out.push_str("# TYPE scaffold_coordinator_requests_total counter\n");
        for ((route, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            let _ = writeln!(
                out,
                "scaffold_coordinator_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str("# TYPE scaffold_coordinator_claimed_jobs_total counter\n");
        let _ = writeln!(
            out,
            "scaffold_coordinator_claimed_jobs_total {}",
            self.claimed.load(Ordering::Relaxed)
        );
        out.push_str("# TYPE scaffold_coordinator_refusals_total counter\n");
        for (reason, n) in self
            .refusals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            let _ = writeln!(
                out,
                "scaffold_coordinator_refusals_total{{reason=\"{reason}\"}} {n}"
            );
        }
        out.push_str("# TYPE scaffold_coordinator_sessions_open gauge\n");
        let _ = writeln!(out, "scaffold_coordinator_sessions_open {sessions}");
        out.push_str("# TYPE scaffold_coordinator_sockets_open gauge\n");
        let _ = writeln!(out, "scaffold_coordinator_sockets_open {sockets}");
        out
    }
}
