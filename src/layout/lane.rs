//! What one worker process is told about its lane, wherever it runs (dev.sh, compose,
//! Terraform): a `--lane` flag and the `…_LANE` variables it is started with, and which of
//! them a given worker reads.
//!
//! A generated worker reads its own variable only: the maintenance worker
//! `<NAME>_WORKER_LANE`, any other `<NAME>_<WORKER>_LANE` (seed 001 §5). Unset, it claims on
//! the lanes its kinds' specs name — so a variable of another worker set on its process
//! (dev.sh exports `ACME_WORKER_LANE` to every process it starts) is not its lane.

/// A process's `--lane` and lane variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneSettings {
    /// `--lane L` after `serve`.
    pub flag: Option<String>,
    /// Its `…_LANE` variables in the order they apply (a later one of the same name wins).
    pub vars: Vec<(String, String)>,
}

impl LaneSettings {
    /// Sets variable `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: &str, value: String) {
        self.vars.retain(|(k, _)| k != key);
        self.vars.push((key.to_owned(), value));
    }

    /// Its lane for any worker: `--lane`, else the last lane variable; `None` when there is
    /// neither.
    pub fn lane(&self) -> Option<String> {
        self.flag
            .clone()
            .or_else(|| self.vars.last().map(|(_, v)| v.clone()))
    }

    /// Its lane as worker `worker` reads it: `--lane`, else the worker's own variable;
    /// `None` when neither is set (it then serves the lanes of its kinds' specs).
    pub fn lane_of(&self, worker: &str) -> Option<String> {
        self.flag.clone().or_else(|| {
            self.vars
                .iter()
                .rev()
                .find(|(k, _)| is_own_lane_var(k, worker))
                .map(|(_, v)| v.clone())
        })
    }
}

/// Whether `var` is the lane variable worker `worker` reads: `…_WORKER_LANE` for the
/// maintenance worker, `…_<WORKER>_LANE` (`-` as `_`) for any other.
pub fn is_own_lane_var(var: &str, worker: &str) -> bool {
    if worker == "maintenance" {
        return var.ends_with("_WORKER_LANE");
    }
    let own = format!("_{}_LANE", worker.replace('-', "_").to_ascii_uppercase());
    var.ends_with(&own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_worker_reads_its_own_variable() {
        let mut s = LaneSettings::default();
        s.set("ACME_WORKER_LANE", "default".to_owned());
        s.set("ACME_OUTBOX_RELAY_LANE", "x".to_owned());
        assert_eq!(s.lane_of("maintenance").as_deref(), Some("default"));
        assert_eq!(s.lane_of("outbox-relay").as_deref(), Some("x"));
        assert_eq!(s.lane_of("billing"), None);
        assert_eq!(s.lane().as_deref(), Some("x"));
        s.flag = Some("fast".to_owned());
        assert_eq!(s.lane_of("billing").as_deref(), Some("fast"));
    }
}
