//! The recent runs of each node's `HealthCheckProgram`, as its daemon
//! reports them (`CtldRequest::HealthCheckRan`), for the dashboard's node
//! page (`CtldRequest::HealthChecks`).
//!
//! Memory only, by choice: the runs are a diagnostic, not state. They are
//! not journaled, so a restarted controller starts with none and the next
//! interval's runs fill it again. The engine task owns the log (it is
//! touched only there, between batches), stamps each report with the
//! node's drain state and reason at its arrival (a program that drains
//! the node itself, NHC's way, shows there), and keeps the last
//! [`KEEP`] runs of each node the engine knows.

use proto::health::{clip, HealthCheckRun, OUTPUT_MAX};
use std::collections::{BTreeMap, VecDeque};

/// Runs kept per node.
pub const KEEP: usize = 20;

/// The log: each node's last runs, oldest first.
#[derive(Debug, Default)]
pub struct HealthLog {
    by_node: BTreeMap<String, VecDeque<HealthCheckRun>>,
}

impl HealthLog {
    /// Records `run`, reported by `node`'s daemon, with the node's drain
    /// state and reason as the controller holds them now; the oldest run
    /// of the node goes when it has [`KEEP`].
    pub fn record(&mut self, mut run: HealthCheckRun, drained: bool, reason: Option<String>) {
        run.drained = drained;
        run.reason = reason;
        // A report is a daemon's, but its text is still bounded here.
        run.output = clip(&run.output, OUTPUT_MAX);
        run.why = clip(&run.why, OUTPUT_MAX);
        let runs = self.by_node.entry(run.node.clone()).or_default();
        if runs.len() >= KEEP {
            runs.pop_front();
        }
        runs.push_back(run);
    }

    /// The runs of `node` (every node's where None), by node name, each
    /// node's oldest first.
    pub fn runs(&self, node: Option<&str>) -> Vec<HealthCheckRun> {
        match node {
            Some(n) => self
                .by_node
                .get(n)
                .map(|r| r.iter().cloned().collect())
                .unwrap_or_default(),
            None => self.by_node.values().flatten().cloned().collect(),
        }
    }

    /// Forgets the nodes `known` no longer names (after a reconfigure).
    pub fn retain(&mut self, known: impl Fn(&str) -> bool) {
        self.by_node.retain(|n, _| known(n));
    }
}

#[cfg(test)]
mod tests;
