//! What `CtldRequest::Stats` answers (`/metrics` in restd): job counts
//! from the engine, histograms of the scheduling passes and the journal's
//! commits (kept by the engine task), the accounting writer's backlog and
//! the watch stream's state.

use proto::stats::{CtldStats, Histogram};

/// Bucket bounds (µs) of both histograms: 50 µs to 10 s.
const BOUNDS_US: &[u64] = &[
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 10_000_000,
];

/// The engine task's histograms, since the controller started.
pub struct Histograms {
    /// Each tick that ran a scheduling pass (timers and the pass).
    pub sched_pass: Histogram,
    /// Each commit of a batch's journal records (write and fsync).
    pub journal_commit: Histogram,
}

impl Histograms {
    /// Empty histograms.
    pub fn new() -> Histograms {
        Histograms {
            sched_pass: Histogram::new(BOUNDS_US),
            journal_commit: Histogram::new(BOUNDS_US),
        }
    }
}

/// The answer to `Stats`.
pub fn stats(
    engine: &engine::Engine,
    hists: &Histograms,
    acct: &crate::acct::AcctWriter,
    hub: &crate::watch::Hub,
) -> CtldStats {
    let (jobs, pending_reasons) = engine.job_counts();
    CtldStats {
        jobs,
        pending_reasons,
        sched_pass: hists.sched_pass.clone(),
        journal_commit: hists.journal_commit.clone(),
        acct_backlog: acct.backlog(),
        watchers: hub.watchers(),
        watch_ring: hub.ring_len(),
        watch_events: hub.events(),
    }
}
