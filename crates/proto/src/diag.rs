//! `sdiag`: the controller's statistics since its start or the last
//! `sdiag --reset`, as sdiag(1) prints them (and, later, as slurmrestd's
//! `/diag` serves them). Values muster has no counterpart for are 0; the
//! field docs say which.

use serde::{Deserialize, Serialize};

/// Everything `sdiag` prints.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagStats {
    /// When the controller answered (seconds since the epoch).
    pub req_time: i64,
    /// Start of the statistics: the controller's start or the last reset.
    pub req_time_start: i64,
    /// "Server thread count": the controller process's threads.
    pub server_thread_count: u32,
    /// "Agent queue size": always 0 (node commands go through per-node
    /// queues that are not counted).
    pub agent_queue_size: u32,
    /// "Agent count": always 0 (muster has no agent threads).
    pub agent_count: u32,
    /// "Agent thread count": always 0.
    pub agent_thread_count: u32,
    /// "DBD Agent queue size": always 0 (the accounting writer's queue is
    /// not counted).
    pub dbd_agent_queue_size: u32,
    /// Jobs submitted since the start of the statistics.
    pub jobs_submitted: u32,
    /// Jobs started.
    pub jobs_started: u32,
    /// Jobs that ended COMPLETED.
    pub jobs_completed: u32,
    /// Jobs that ended CANCELLED.
    pub jobs_canceled: u32,
    /// Jobs that ended FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL
    /// or DEADLINE.
    pub jobs_failed: u32,
    /// When the job counts below were taken.
    pub job_states_ts: i64,
    /// Pending jobs now.
    pub jobs_pending: u32,
    /// Running jobs now.
    pub jobs_running: u32,
    /// The main scheduler's (every scheduling pass's) statistics.
    pub schedule: SchedStats,
    /// The backfill part of those passes.
    pub backfill: BackfillStats,
    /// Requests by Slurm message type, most called first.
    pub rpc_by_type: Vec<RpcTypeStat>,
    /// Requests by user, most calls first.
    pub rpc_by_user: Vec<RpcUserStat>,
}

/// "Main schedule statistics (microseconds)".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedStats {
    /// Last cycle's length, µs.
    pub last_cycle: u64,
    /// Longest cycle, µs.
    pub max_cycle: u64,
    /// Cycles since the start of the statistics.
    pub total_cycles: u32,
    /// Sum of the cycles' lengths, µs (the mean is this over the count).
    pub cycle_sum: u64,
    /// Sum of the jobs each cycle tried.
    pub depth_sum: u64,
    /// Pending jobs when the last cycle ran.
    pub last_queue_length: u32,
}

/// "Backfilling stats": in muster backfill is part of every pass; a job
/// counts as backfilled when it starts ahead of a higher-priority job that
/// must wait.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillStats {
    /// Jobs backfilled since the controller started.
    pub backfilled_jobs: u32,
    /// Jobs backfilled since the start of the statistics.
    pub last_backfilled_jobs: u32,
    /// Passes that backfilled at least one job.
    pub total_cycles: u32,
    /// When the last of those ran (0: never).
    pub last_cycle_when: i64,
    /// Its length, µs.
    pub last_cycle: u64,
    /// Longest, µs.
    pub max_cycle: u64,
    /// Sum of lengths, µs.
    pub cycle_sum: u64,
    /// Jobs the last one tried.
    pub last_depth: u32,
    /// Sum of jobs tried.
    pub depth_sum: u64,
    /// Pending jobs when the last one ran.
    pub last_queue_length: u32,
    /// Sum of those queue lengths.
    pub queue_length_sum: u64,
    /// "Last table size" and "Mean table size": always 0, since muster's
    /// backfill keeps no table of node-space records as Slurm's does.
    pub table_size: u32,
}

/// One line of "Remote Procedure Call statistics by message type".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcTypeStat {
    /// Slurm's message type name, e.g. `REQUEST_SUBMIT_BATCH_JOB`.
    pub name: String,
    /// Slurm's message type number (slurm_protocol_defs), e.g. 4003.
    pub id: u32,
    /// Calls.
    pub count: u32,
    /// Time the controller spent on them, µs.
    pub total_time: u64,
}

/// One line of "Remote Procedure Call statistics by user".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcUserStat {
    /// User name.
    pub user: String,
    /// Uid.
    pub uid: u32,
    /// Calls.
    pub count: u32,
    /// Time the controller spent on them, µs.
    pub total_time: u64,
}

/// A mean, 0 for no samples (as sdiag prints it).
pub fn mean(sum: u64, n: u64) -> u64 {
    sum.checked_div(n).unwrap_or(0)
}

#[cfg(test)]
mod tests;
