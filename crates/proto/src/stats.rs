//! `CtldRequest::Stats`: what `/metrics` needs of the controller beyond
//! sdiag's statistics (`diag`): the jobs counted by state and partition
//! (so a scrape does not list every job), histograms of the scheduling
//! passes and of the journal's commits, the accounting writer's backlog
//! and the watch stream's state.

use serde::{Deserialize, Serialize};

/// A histogram with fixed buckets, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// Upper bounds of the buckets (µs), ascending; the `+Inf` bucket is
    /// `count`.
    pub bounds: Vec<u64>,
    /// Observations at or below each bound (cumulative, as Prometheus'
    /// `le` buckets).
    pub cumulative: Vec<u64>,
    /// Observations.
    pub count: u64,
    /// Their sum (µs).
    pub sum: u64,
}

impl Histogram {
    /// An empty histogram over `bounds` (µs, ascending).
    pub fn new(bounds: &[u64]) -> Histogram {
        Histogram {
            bounds: bounds.to_vec(),
            cumulative: vec![0; bounds.len()],
            count: 0,
            sum: 0,
        }
    }

    /// Counts one observation of `us` microseconds.
    pub fn observe(&mut self, us: u64) {
        for (b, c) in self.bounds.iter().zip(self.cumulative.iter_mut()) {
            if us <= *b {
                *c += 1;
            }
        }
        self.count += 1;
        self.sum = self.sum.saturating_add(us);
    }
}

/// The controller's answer to `Stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtldStats {
    /// Jobs by (state as Slurm writes it, partition): a pending job of
    /// several partitions counts in each.
    pub jobs: Vec<(String, String, u64)>,
    /// Pending jobs by reason (Slurm's text).
    pub pending_reasons: Vec<(String, u64)>,
    /// Scheduling passes (each batch's timers and pass), µs.
    pub sched_pass: Histogram,
    /// Journal commits (write and fsync of one batch's records), µs.
    pub journal_commit: Histogram,
    /// Accounting records handed to the writer and not yet stored.
    pub acct_backlog: u64,
    /// Open watch streams.
    pub watchers: u64,
    /// Changes the watch ring holds.
    pub watch_ring: u64,
    /// Changes numbered since the controller started (0 while nobody
    /// has watched).
    pub watch_events: u64,
}
