//! The job table: which batch jobs this node runs, their process ids, and
//! terminations asked for while a job was still starting.
//!
//! Pure: no processes, no clock. The daemon shell performs what these
//! functions decide (signals, kills, reports).
//!
//! ```text
//!   begin_launch --> Starting --started()--> Running --finished()--> (gone)
//!                       |                     ^
//!                       +--abort_launch()     +--reattach() (found after a restart)
//!                             --> (gone)
//! ```
//!
//! At shutdown `stop` refuses every later launch and marks the jobs still
//! starting to be killed once their process exists (`started` says so), so
//! that a launch in flight when the daemon is told to stop leaves nothing
//! running.

use model::JobId;
use std::collections::BTreeMap;

/// Where a job is in its life on this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The launch request is being handled; no process exists yet.
    Starting,
    /// The batch script runs.
    Running {
        /// The batch script's process id (`SLURM_TASK_PID`).
        pid: i32,
        /// Its process group, which is also its session.
        pgid: i32,
    },
}

/// One job on this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobEntry {
    /// Starting or running.
    pub phase: Phase,
    /// A `Terminate` arrived: its `kill_wait`. Kept so that a terminate that
    /// arrives while the job is still starting is applied once it runs.
    pub terminate: Option<u32>,
}

/// Who receives a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalTarget {
    /// Only the batch shell (`scancel -b`): `kill(pid)`.
    Process(i32),
    /// Every process of the job: `kill(-pgid)`.
    Group(i32),
}

impl SignalTarget {
    /// The pid argument of kill(2): negative for a process group.
    pub fn kill_arg(self) -> i32 {
        match self {
            SignalTarget::Process(pid) => pid,
            SignalTarget::Group(pgid) => -pgid,
        }
    }
}

/// Why a request about a job was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The node does not run this job.
    NoSuchJob,
    /// The job has no process yet.
    Starting,
    /// A launch for a job that is already here.
    AlreadyHere,
    /// A launch after `stop`.
    Stopping,
}

impl Refusal {
    /// The text of the `Failed` answer.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::NoSuchJob => "no such job",
            Refusal::Starting => "job is still starting",
            Refusal::AlreadyHere => "job is already running on this node",
            Refusal::Stopping => "the node daemon is shutting down",
        }
    }
}

/// What the shell does once a started job's process exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterStart {
    /// Nothing: let it run.
    Run,
    /// A terminate arrived meanwhile: terminate it with this kill_wait.
    Terminate(u32),
    /// The daemon is stopping (`JobTable::stop`): kill it.
    Kill,
}

/// What the shell does for a `Terminate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminateAction {
    /// SIGCONT + SIGTERM the group now; SIGKILL it after `kill_wait` seconds
    /// if the same process still runs.
    Signal {
        /// The batch script's pid, to recognise it after the wait.
        pid: i32,
        /// The group.
        pgid: i32,
        /// Seconds before SIGKILL.
        kill_wait: u32,
    },
    /// The job is still starting: remembered, applied by `started`.
    Deferred,
}

/// Every job this node runs, by id.
#[derive(Clone, Debug, Default)]
pub struct JobTable {
    jobs: BTreeMap<JobId, JobEntry>,
    /// `stop` was called.
    stopping: bool,
}

impl JobTable {
    /// An empty table.
    pub fn new() -> JobTable {
        JobTable::default()
    }

    /// Reserves `job_id` for a launch; refused if the job is already here
    /// (a repeated launch must not start the script twice).
    pub fn begin_launch(&mut self, job_id: JobId) -> Result<(), Refusal> {
        if self.stopping {
            return Err(Refusal::Stopping);
        }
        if self.jobs.contains_key(&job_id) {
            return Err(Refusal::AlreadyHere);
        }
        self.jobs.insert(
            job_id,
            JobEntry {
                phase: Phase::Starting,
                terminate: None,
            },
        );
        Ok(())
    }

    /// The launch failed before a process existed: forget the job.
    pub fn abort_launch(&mut self, job_id: JobId) {
        if let Some(entry) = self.jobs.get(&job_id) {
            if entry.phase == Phase::Starting {
                self.jobs.remove(&job_id);
            }
        }
    }

    /// The batch script runs as `pid` in group `pgid`.
    pub fn started(&mut self, job_id: JobId, pid: i32, pgid: i32) -> AfterStart {
        let entry = self.jobs.entry(job_id).or_insert(JobEntry {
            phase: Phase::Starting,
            terminate: None,
        });
        debug_assert_eq!(entry.phase, Phase::Starting, "job {job_id} started twice");
        entry.phase = Phase::Running { pid, pgid };
        if self.stopping {
            return AfterStart::Kill;
        }
        match entry.terminate {
            Some(kill_wait) => AfterStart::Terminate(kill_wait),
            None => AfterStart::Run,
        }
    }

    /// A job found running after a daemon restart: its script runs as
    /// `pid` in group `pgid`. Refused if the job is already here.
    pub fn reattach(&mut self, job_id: JobId, pid: i32, pgid: i32) -> Result<(), Refusal> {
        if self.jobs.contains_key(&job_id) {
            return Err(Refusal::AlreadyHere);
        }
        self.jobs.insert(
            job_id,
            JobEntry {
                phase: Phase::Running { pid, pgid },
                terminate: None,
            },
        );
        Ok(())
    }

    /// The batch script `pid` ended: forget the job and return its
    /// entry. A stale pid (not the job's) changes nothing.
    pub fn finished(&mut self, job_id: JobId, pid: i32) -> Option<JobEntry> {
        match self.jobs.get(&job_id) {
            Some(entry) if matches!(entry.phase, Phase::Running { pid: p, .. } if p == pid) => {
                self.jobs.remove(&job_id)
            }
            _ => None,
        }
    }

    /// True when the job is here, starting or running.
    pub fn contains(&self, job_id: JobId) -> bool {
        self.jobs.contains_key(&job_id)
    }

    /// Who gets a `Signal` request.
    pub fn signal_target(&self, job_id: JobId, batch_only: bool) -> Result<SignalTarget, Refusal> {
        match self.jobs.get(&job_id) {
            None => Err(Refusal::NoSuchJob),
            Some(JobEntry {
                phase: Phase::Starting,
                ..
            }) => Err(Refusal::Starting),
            Some(JobEntry {
                phase: Phase::Running { pid, pgid },
                ..
            }) => Ok(if batch_only {
                SignalTarget::Process(*pid)
            } else {
                SignalTarget::Group(*pgid)
            }),
        }
    }

    /// Records a `Terminate` and says what to do now. A second terminate
    /// keeps the shorter kill_wait.
    pub fn terminate(&mut self, job_id: JobId, kill_wait: u32) -> Result<TerminateAction, Refusal> {
        let entry = self.jobs.get_mut(&job_id).ok_or(Refusal::NoSuchJob)?;
        let kill_wait = entry.terminate.map_or(kill_wait, |k| k.min(kill_wait));
        entry.terminate = Some(kill_wait);
        Ok(match entry.phase {
            Phase::Starting => TerminateAction::Deferred,
            Phase::Running { pid, pgid } => TerminateAction::Signal {
                pid,
                pgid,
                kill_wait,
            },
        })
    }

    /// True while `pid` is still the job's batch script (not yet reaped).
    pub fn is_running(&self, job_id: JobId, pid: i32) -> bool {
        matches!(
            self.jobs.get(&job_id),
            Some(JobEntry { phase: Phase::Running { pid: p, .. }, .. }) if *p == pid
        )
    }

    /// The daemon stops: later launches are refused, the jobs still
    /// starting are killed once they run (`started`). Returns the process
    /// groups of the running jobs, to kill now.
    pub fn stop(&mut self) -> Vec<(JobId, i32)> {
        self.stopping = true;
        self.running_groups()
    }

    /// Process groups of every running job.
    pub fn running_groups(&self) -> Vec<(JobId, i32)> {
        self.jobs
            .iter()
            .filter_map(|(id, e)| match e.phase {
                Phase::Running { pgid, .. } => Some((*id, pgid)),
                Phase::Starting => None,
            })
            .collect()
    }

    /// Ids of every job here, starting or running, in id order.
    pub fn job_ids(&self) -> Vec<JobId> {
        self.jobs.keys().copied().collect()
    }

    /// How many jobs are here.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// True when no job is here.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

#[cfg(test)]
mod tests;
