//! `sdiag`: the statistics the controller keeps about itself, since its
//! start or the last `sdiag --reset` (sdiag(1)).
//!
//! ```text
//! engine task: each request  -> Stats::begin .. Stats::finish (by type, by user)
//!              each tick      -> Stats::note_tick (pass length, from the clock;
//!                                what it did, from Engine::pass_stats)
//!              each record    -> Stats::observe (job counts, by state)
//!              CtldRequest::Diag -> Stats::report / Stats::reset
//! ```
//!
//! Times are what the engine task spent on a request, in µs: a request
//! answered elsewhere (sacct, sstat) counts only the handing over.
//! Slurm's agent threads have no counterpart here: their counts are 0.

use engine::{Engine, PassStats};
use model::{JobId, JobState, Timestamp};
use proto::diag::{BackfillStats, DiagStats, RpcTypeStat, RpcUserStat, SchedStats};
use proto::{CtldRequest, Identity};
use std::collections::BTreeMap;
use std::time::Instant;

/// Slurm's message type (name and number, slurm_protocol_defs) that a
/// request stands for. Requests Slurm's controller does not take (the
/// accounting ones go to slurmdbd there) carry muster's own name and 0.
pub fn rpc_type(req: &CtldRequest) -> (&'static str, u32) {
    match req {
        CtldRequest::Ping => ("REQUEST_PING", 1008),
        CtldRequest::Submit(_) => ("REQUEST_SUBMIT_BATCH_JOB", 4003),
        CtldRequest::ListJobs | CtldRequest::QueryJobs(_) => ("REQUEST_JOB_INFO", 2003),
        CtldRequest::Priorities | CtldRequest::JobPriorities { .. } => {
            ("REQUEST_PRIORITY_FACTORS", 2026)
        }
        CtldRequest::Shares => ("REQUEST_SHARE_INFO", 2022),
        CtldRequest::ListNodes => ("REQUEST_NODE_INFO", 2007),
        CtldRequest::ListPartitions => ("REQUEST_PARTITION_INFO", 2009),
        CtldRequest::ShowConfig => ("REQUEST_BUILD_INFO", 2001),
        CtldRequest::Explain { .. } => ("MUSTER_EXPLAIN", 0),
        CtldRequest::Cancel { .. } => ("REQUEST_KILL_JOB", 5032),
        CtldRequest::UpdateJob { .. } | CtldRequest::Hold { .. } | CtldRequest::Release { .. } => {
            ("REQUEST_UPDATE_JOB", 3001)
        }
        CtldRequest::UpdateNode { .. } => ("REQUEST_UPDATE_NODE", 3002),
        CtldRequest::Requeue { .. } => ("REQUEST_JOB_REQUEUE", 5023),
        CtldRequest::Suspend { .. } | CtldRequest::Resume { .. } => ("REQUEST_SUSPEND", 5014),
        CtldRequest::RegisterNode(_) => ("MESSAGE_NODE_REGISTRATION_STATUS", 1002),
        CtldRequest::JobExited { .. } => ("REQUEST_COMPLETE_BATCH_SCRIPT", 5018),
        CtldRequest::Shutdown | CtldRequest::ShutdownController => ("REQUEST_SHUTDOWN", 1005),
        CtldRequest::Reconfigure => ("REQUEST_RECONFIGURE", 1003),
        CtldRequest::CreatePartition(_) => ("REQUEST_CREATE_PARTITION", 3003),
        CtldRequest::DeletePartition { .. } => ("REQUEST_DELETE_PARTITION", 3004),
        CtldRequest::UpdatePartition(_) => ("REQUEST_UPDATE_PARTITION", 3005),
        CtldRequest::AcctQuery(_) => ("MUSTER_ACCT_QUERY", 0),
        CtldRequest::AcctTables => ("MUSTER_ACCT_TABLES", 0),
        CtldRequest::AcctAdmin(_) => ("MUSTER_ACCT_ADMIN", 0),
        CtldRequest::AcctUsage(_) => ("MUSTER_ACCT_USAGE", 0),
        CtldRequest::AcctReservations { .. } => ("MUSTER_ACCT_RESERVATIONS", 0),
        CtldRequest::AcctDecayedUsage => ("MUSTER_ACCT_DECAYED_USAGE", 0),
        CtldRequest::AllocationInfo { .. } => ("REQUEST_JOB_ALLOCATION_INFO", 4014),
        CtldRequest::CompleteAllocation { .. } => ("REQUEST_COMPLETE_JOB_ALLOCATION", 5017),
        CtldRequest::CreateStep(_) => ("REQUEST_JOB_STEP_CREATE", 5001),
        CtldRequest::StepExited(_) => ("REQUEST_STEP_COMPLETE", 5016),
        CtldRequest::ExternEnded { .. } => ("MUSTER_EXTERN_ENDED", 0),
        CtldRequest::CancelStep { .. } => ("REQUEST_CANCEL_JOB_STEP", 5005),
        CtldRequest::ListSteps => ("REQUEST_JOB_STEP_INFO", 2005),
        CtldRequest::StepStat { .. } => ("REQUEST_JOB_STEP_STAT", 5019),
        CtldRequest::OpenSession => ("MUSTER_OPEN_SESSION", 0),
        CtldRequest::InSession { request, .. } => rpc_type(request),
        CtldRequest::Top { .. } => ("REQUEST_TOP_JOB", 5038),
        CtldRequest::Notify { .. } => ("REQUEST_JOB_NOTIFY", 4022),
        CtldRequest::Diag { .. } => ("REQUEST_STATS_INFO", 2035),
        // Slurm 22.05's scancel sends one kill per job; a filtered cancel
        // in one request has no message type there.
        CtldRequest::CancelJobs { .. } => ("MUSTER_CANCEL_JOBS", 0),
        CtldRequest::ListLicenses => ("REQUEST_LICENSE_INFO", 1021),
        CtldRequest::GetConfig => ("MUSTER_GET_CONFIG", 0),
        CtldRequest::Token { .. } => ("REQUEST_AUTH_TOKEN", 5039),
        CtldRequest::OnBehalf { request, .. } => rpc_type(request),
        CtldRequest::CreateReservation(_) => ("REQUEST_CREATE_RESERVATION", 3006),
        CtldRequest::DeleteReservation { .. } => ("REQUEST_DELETE_RESERVATION", 3008),
        CtldRequest::UpdateReservation(_) => ("REQUEST_UPDATE_RESERVATION", 3009),
        CtldRequest::ListReservations => ("REQUEST_RESERVATION_INFO", 2024),
        CtldRequest::RebootNodes { .. } => ("REQUEST_REBOOT_NODES", 1015),
        // Slurm sends cancel_reboot as a node update (State=CANCEL_REBOOT).
        CtldRequest::CancelReboot { .. } => ("REQUEST_UPDATE_NODE", 3002),
        CtldRequest::GpuXid { .. } => ("MUSTER_GPU_XID", 0),
        CtldRequest::ShowTopology { .. } => ("REQUEST_TOPO_INFO", 2018),
        CtldRequest::Watch(_) => ("MUSTER_WATCH", 0),
        CtldRequest::Stats => ("MUSTER_STATS", 0),
        CtldRequest::FabricReports => ("MUSTER_FABRIC", 0),
        CtldRequest::HealthCheckRan(_) => ("MUSTER_HEALTH_CHECK_RAN", 0),
        CtldRequest::HealthChecks { .. } => ("MUSTER_HEALTH_CHECKS", 0),
    }
}

/// A request being handled: what `Stats::finish` books.
pub struct Pending {
    name: &'static str,
    id: u32,
    uid: u32,
    user: String,
    started: Instant,
}

/// One row of a by-type or by-user table: (count, total µs).
type Tally = (u32, u64);

/// What the engine task keeps for `sdiag`.
#[derive(Debug, Default)]
pub struct Stats {
    since: Timestamp,
    by_type: BTreeMap<(&'static str, u32), Tally>,
    by_user: BTreeMap<u32, (String, Tally)>,
    submitted: u32,
    started: u32,
    completed: u32,
    canceled: u32,
    failed: u32,
    /// Every job not yet ended, by its last recorded state.
    live: BTreeMap<JobId, JobState>,
    /// How many of `live` are pending and running (kept as they change,
    /// so a tick does not count a long queue).
    n_pending: u32,
    n_running: u32,
    schedule: SchedStats,
    backfill: BackfillStats,
    /// The engine's pass counts at the last reset (they count from its start).
    pass_base: PassStats,
}

impl Stats {
    /// Statistics starting at `now`.
    pub fn new(now: Timestamp) -> Stats {
        Stats {
            since: now,
            ..Stats::default()
        }
    }

    /// Starts timing a request.
    pub fn begin(req: &CtldRequest, who: &Identity) -> Pending {
        let (name, id) = rpc_type(req);
        Pending {
            name,
            id,
            uid: who.uid,
            user: who.user.clone(),
            started: Instant::now(),
        }
    }

    /// Books a request begun with `begin`.
    pub fn finish(&mut self, pending: Option<Pending>) {
        let Some(p) = pending else {
            return;
        };
        let us = p.started.elapsed().as_micros() as u64;
        let t = self.by_type.entry((p.name, p.id)).or_default();
        t.0 += 1;
        t.1 += us;
        let u = self
            .by_user
            .entry(p.uid)
            .or_insert_with(|| (p.user, (0, 0)));
        u.1 .0 += 1;
        u.1 .1 += us;
    }

    /// Follows a job's accounting record: its first (pending) record
    /// counts a submission, a start and an end count as such. `count`
    /// false: only learn the state (the records re-sent after a restart).
    pub fn observe(&mut self, job_id: JobId, state: JobState, count: bool) {
        let before = self.live.get(&job_id).copied();
        if before == Some(state) {
            return;
        }
        if count {
            match (before, state) {
                (None, JobState::Pending) => self.submitted += 1,
                (None, _) if !state.is_finished() => self.submitted += 1,
                _ => {}
            }
            if state == JobState::Running && before != Some(JobState::Suspended) {
                self.started += 1;
            }
            if before.is_some() {
                match state {
                    JobState::Completed => self.completed += 1,
                    JobState::Cancelled => self.canceled += 1,
                    JobState::Failed
                    | JobState::Timeout
                    | JobState::NodeFail
                    | JobState::OutOfMemory
                    | JobState::BootFail
                    | JobState::Deadline => self.failed += 1,
                    _ => {}
                }
            }
        }
        self.tally(before, -1);
        // A requeued job comes back: it stays followed.
        if state.is_finished() && !matches!(state, JobState::Requeued | JobState::Preempted) {
            self.live.remove(&job_id);
        } else {
            self.live.insert(job_id, state);
            self.tally(Some(state), 1);
        }
    }

    /// Adds `by` to the count of jobs in `state`.
    fn tally(&mut self, state: Option<JobState>, by: i32) {
        let n = match state {
            Some(JobState::Pending) => &mut self.n_pending,
            Some(JobState::Running) => &mut self.n_running,
            _ => return,
        };
        *n = n.saturating_add_signed(by);
    }

    /// Books a tick of the engine (timers and the scheduling pass) that
    /// took `elapsed`: a scheduling cycle where the pass tried a job, a
    /// backfill cycle where it backfilled one.
    pub fn note_tick(&mut self, before: &PassStats, after: &PassStats, us: u64, now: Timestamp) {
        if after.passes == before.passes {
            return;
        }
        let queue = self.n_pending;
        let s = &mut self.schedule;
        s.last_cycle = us;
        s.max_cycle = s.max_cycle.max(us);
        s.total_cycles += 1;
        s.cycle_sum += us;
        s.depth_sum += u64::from(after.last_depth);
        s.last_queue_length = queue;
        if after.backfilled > before.backfilled {
            let b = &mut self.backfill;
            b.total_cycles += 1;
            b.last_cycle_when = now;
            b.last_cycle = us;
            b.max_cycle = b.max_cycle.max(us);
            b.cycle_sum += us;
            b.last_depth = after.last_depth;
            b.depth_sum += u64::from(after.last_depth);
            b.last_queue_length = queue;
            b.queue_length_sum += u64::from(queue);
        }
    }

    /// Starts the statistics afresh at `now` (`sdiag --reset`); the jobs
    /// followed and the backfill total since the start stay.
    pub fn reset(&mut self, engine: &Engine, now: Timestamp) {
        let live = std::mem::take(&mut self.live);
        *self = Stats {
            since: now,
            live,
            n_pending: self.n_pending,
            n_running: self.n_running,
            pass_base: engine.pass_stats().clone(),
            ..Stats::default()
        };
    }

    /// What `sdiag` prints.
    pub fn report(&self, engine: &Engine, now: Timestamp) -> DiagStats {
        let pass = engine.pass_stats();
        let mut backfill = self.backfill.clone();
        backfill.backfilled_jobs = pass.backfilled as u32;
        backfill.last_backfilled_jobs = (pass.backfilled - self.pass_base.backfilled) as u32;
        let mut rpc_by_type: Vec<RpcTypeStat> = self
            .by_type
            .iter()
            .map(|((name, id), (count, total))| RpcTypeStat {
                name: (*name).to_string(),
                id: *id,
                count: *count,
                total_time: *total,
            })
            .collect();
        rpc_by_type.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
        let mut rpc_by_user: Vec<RpcUserStat> = self
            .by_user
            .iter()
            .map(|(uid, (user, (count, total)))| RpcUserStat {
                user: user.clone(),
                uid: *uid,
                count: *count,
                total_time: *total,
            })
            .collect();
        rpc_by_user.sort_by(|a, b| b.count.cmp(&a.count).then(a.uid.cmp(&b.uid)));
        DiagStats {
            req_time: now,
            req_time_start: self.since,
            server_thread_count: process_threads(),
            agent_queue_size: 0,
            agent_count: 0,
            agent_thread_count: 0,
            dbd_agent_queue_size: 0,
            jobs_submitted: self.submitted,
            jobs_started: self.started,
            jobs_completed: self.completed,
            jobs_canceled: self.canceled,
            jobs_failed: self.failed,
            job_states_ts: now,
            jobs_pending: self.n_pending,
            jobs_running: self.n_running,
            schedule: self.schedule.clone(),
            backfill,
            rpc_by_type,
            rpc_by_user,
        }
    }
}

/// The controller process's threads (`Threads:` of /proc/self/status).
fn process_threads() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
