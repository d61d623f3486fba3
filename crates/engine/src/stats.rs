//! Counts of what the scheduling passes did, for `sdiag` (the controller
//! adds the clock's side: how long each pass took). Counts only: they are
//! not journalled, so they start from zero with each controller process.

/// What the passes did since the engine was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    /// Passes that tried at least one job.
    pub passes: u64,
    /// Jobs the last such pass tried (its depth).
    pub last_depth: u32,
    /// Jobs started by passes.
    pub started: u64,
    /// Jobs started ahead of a higher-priority job that had to wait
    /// (backfilled).
    pub backfilled: u64,
    /// Jobs the last pass backfilled.
    pub last_backfilled: u32,
}

impl PassStats {
    /// Notes a pass's decisions, in the order the pass tried the jobs.
    pub(crate) fn note_pass<'a>(&mut self, decisions: impl Iterator<Item = &'a sched::Decision>) {
        let mut depth = 0u32;
        let mut started = 0u32;
        let mut backfilled = 0u32;
        let mut waited = false;
        for d in decisions {
            depth += 1;
            match d {
                sched::Decision::Start(_) => {
                    started += 1;
                    if waited {
                        backfilled += 1;
                    }
                }
                sched::Decision::Wait(_) => waited = true,
            }
        }
        self.passes += 1;
        self.last_depth = depth;
        self.started += u64::from(started);
        self.backfilled += u64::from(backfilled);
        self.last_backfilled = backfilled;
    }
}

impl crate::Engine {
    /// What the scheduling passes did since the engine was made (`sdiag`).
    pub fn pass_stats(&self) -> &PassStats {
        &self.pass_stats
    }
}
