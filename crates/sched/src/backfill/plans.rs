//! What a pass is given and what it decides: the cluster view, the
//! running jobs, the plan with its planned starts, and the units a pass
//! counts in (`FOREVER`, `limit_secs`, `demand_cpus`).

use crate::ordering::Decision;
use crate::placement::{Allocation, JobRequest, NodeView, PartView};
use crate::NodeIdx;
use model::{JobId, TimeLimit, Timestamp};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A time far enough away to stand for "never" (an unlimited job's end)
/// while leaving room to add durations to it.
pub const FOREVER: Timestamp = i64::MAX / 4;

/// A job holding resources, and when it is expected to give them back.
/// The allocation may be borrowed from the caller's own job table (the
/// controller passes every running job at every pass: a copy of each
/// allocation per pass would cost an allocation per running job).
#[derive(Clone, Debug, PartialEq)]
pub struct RunningJob<'a> {
    /// The job.
    pub job_id: JobId,
    /// Expected end: start plus time limit (`FOREVER` for no limit).
    pub end: Timestamp,
    /// What it holds.
    pub alloc: Cow<'a, Allocation>,
    /// The caller's count of changes to this job's allocation, where it
    /// keeps one (the engine does): the same version as at the last pass
    /// means the same allocation, so a kept timeline need not compare
    /// them. `None`: the allocations are compared.
    pub version: Option<u64>,
}

/// Everything one pass looks at.
#[derive(Clone, Copy, Debug)]
pub struct ClusterView<'a> {
    /// The nodes, with what running jobs use of them now.
    pub nodes: &'a [NodeView],
    /// The partitions.
    pub parts: &'a [PartView],
    /// Eligible pending jobs (not held, begin time reached), in any order.
    pub jobs: &'a [JobRequest],
    /// Jobs holding resources (their use is already in `nodes`).
    pub running: &'a [RunningJob<'a>],
}

/// Where and when a job that cannot start now is planned to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Expected start.
    pub start: Timestamp,
    /// What it is planned to take, on which nodes.
    pub alloc: Allocation,
}

impl Planned {
    /// The nodes it is planned on.
    pub fn nodes(&self) -> Vec<NodeIdx> {
        self.alloc.nodes.iter().map(|n| n.node).collect()
    }
}

/// A scheduling pass's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// One decision per job passed in, in the order the jobs were tried.
    pub decisions: Vec<(JobId, Decision)>,
    /// Planned starts of jobs that wait.
    pub planned: BTreeMap<JobId, Planned>,
    /// Jobs started with less than their limit (`--time-min`): the limit
    /// they run with, in minutes.
    pub time_limits: BTreeMap<JobId, u32>,
    /// FCFS only: the pass stopped trying jobs at `default_queue_depth`
    /// before a job of theirs blocked some partition, so jobs it did not
    /// try may fit now (Slurm tries the whole queue every `sched_interval`
    /// for them).
    pub depth_reached: bool,
}

/// Seconds of a time limit (`FOREVER` for none).
pub fn limit_secs(limit: TimeLimit) -> i64 {
    match limit {
        TimeLimit::Minutes(m) => i64::from(m) * 60,
        TimeLimit::Unlimited => FOREVER,
    }
}

/// CPUs a job needs at the least (a quick necessary test before placing).
pub fn demand_cpus(job: &JobRequest) -> i64 {
    let cpt = i64::from(job.cpus_per_task.max(1));
    let tasks = match job.ntasks_per_node {
        Some(tpn) => i64::from(tpn) * i64::from(job.min_nodes.max(1)),
        None => i64::from(job.ntasks.max(1)),
    };
    if job.exclusive {
        i64::from(job.min_nodes.max(1))
    } else {
        tasks * cpt
    }
}
