//! The scheduler's settings (SchedulerType and SchedulerParameters):
//! which policy runs, and the `bf_*` knobs of a backfill pass.

/// Which scheduler runs: the same pass with more or fewer plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// First come, first served: jobs start in priority order and the
    /// first job of a partition that does not fit stops that partition
    /// (Slurm's sched/builtin).
    Fcfs,
    /// Textbook EASY backfilling: the first blocked job gets a planned
    /// start; any later job may start now if it does not delay it.
    Easy,
    /// Slurm's backfill: the first blocked jobs of each partition
    /// (`bf_job_part_count_reserve`; every blocked job, conservative
    /// backfilling, when that is unset) and those due for one of their own
    /// (`aged`) get a planned start, and no job delays the plan of a
    /// higher-priority one.
    Backfill,
}

/// In which order a backfill pass tries the jobs that can only start now,
/// where they delay no plan (`bf_order`, muster's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackfillOrder {
    /// In priority order, as Slurm does.
    Priority,
    /// Shortest time limit first (ties in priority order), after the jobs
    /// that may get a plan: the first blocked ones of each partition and
    /// those due for one of their own (`aged`). Those are still tried in
    /// priority order, so which jobs get plans is as with `Priority`; what
    /// changes is which jobs take the holes in front of the plans.
    Shortest,
}

/// How a backfill pass plans the jobs it cannot start now (`bf_plan`,
/// muster's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanOn {
    /// On named nodes, as Slurm does: each plan holds particular nodes.
    Nodes,
    /// Over the partition's CPUs counted together (`Timeline::pool`), in
    /// every pass over one partition: exact for jobs whose tasks may go on
    /// any free CPUs, an estimate for the others.
    Pool,
    /// Over the pool where that is exact (`pool_is_exact`: one partition,
    /// every pending job's tasks may go on any free CPUs, no node that
    /// cannot take new jobs holds running ones), on nodes otherwise.
    Auto,
}

/// Scheduler settings (SchedulerType and SchedulerParameters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// Which scheduler.
    pub policy: Policy,
    /// `bf_window` (minutes): how far ahead plans are made. A job that
    /// cannot start within it gets no planned start. Default 43,200 (30
    /// days; Slurm's is 1,440): a queue head beyond the window would get no
    /// reservation and could be starved by backfilled jobs.
    pub bf_window: u32,
    /// `bf_resolution` (seconds): planned times are rounded up to it.
    /// Default 1 (Slurm's is 60, to save time muster does not need to).
    pub bf_resolution: u32,
    /// `bf_max_job_test`: how many jobs one pass tries; `None` is the whole
    /// queue (the default here: the pass is fast enough).
    pub bf_max_job_test: Option<u32>,
    /// `bf_max_job_user`: how many jobs of one user one pass tries.
    pub bf_max_job_user: Option<u32>,
    /// `bf_job_part_count_reserve`: how many of the highest-priority
    /// blocked jobs of each partition get a planned start (a reservation
    /// later jobs must not delay); `None` is every job (Slurm's 0, its
    /// default: conservative backfilling). Default 1 (EASY backfilling):
    /// see docs/simulator.md for why that schedules better.
    pub bf_job_part_count_reserve: Option<u32>,
    /// `bf_age_reserve` (seconds; muster's own): a blocked job that has
    /// waited at least this long since its submission gets a planned start
    /// too, beyond the `bf_job_part_count_reserve` first ones, so later
    /// jobs can no longer delay it (EASY's long waiters get conservative
    /// backfilling's protection). `None` is off.
    pub bf_age_reserve: Option<u32>,
    /// `bf_slowdown_reserve` (muster's own): a blocked job whose expansion
    /// factor, (wait + time limit) / time limit, has reached this value
    /// gets a planned start too (selective reservation), when it asks for
    /// at least `bf_slowdown_reserve_width` percent of a partition; 1 is as
    /// soon as it is blocked. `None` is off. Default 1 (every wide job is
    /// planned as under conservative backfilling): see docs/simulator.md.
    pub bf_slowdown_reserve: Option<u32>,
    /// `bf_slowdown_reserve_width` (percent, muster's own): only jobs that
    /// ask for at least this share of their largest partition's CPUs (of
    /// its nodes, for whole-node jobs) get selective reservation; narrow
    /// jobs find holes under EASY anyway. 0: every job. Default 25.
    pub bf_slowdown_reserve_width: u32,
    /// `bf_order` (muster's own): in which order the jobs that can only
    /// backfill are tried (`BackfillOrder`), backfill policy only.
    /// Default `Shortest`: see docs/simulator.md.
    pub bf_order: BackfillOrder,
    /// `bf_plan=nodes|pool|auto` (muster's own, `PlanOn`): where plans
    /// are made. Default `Auto`: over the partition's CPUs summed (see
    /// `Timeline::pool`) wherever that is exact, which is far cheaper on
    /// big machines, and on named nodes otherwise. Starts are placed on
    /// nodes always.
    pub bf_plan: PlanOn,
    /// `bf_continue`: accepted; a pass here never yields half way, so there
    /// is nothing to continue.
    pub bf_continue: bool,
    /// `bf_interval` (seconds): accepted and range-checked. Slurm plans
    /// at most this often; here a full pass runs at once after every
    /// change (submission, end, update, priority recalculation), and with
    /// nothing changed a pass would decide the same, so there is no
    /// periodic pass.
    pub bf_interval: u32,
    /// `default_queue_depth`: how many jobs the FCFS policy tries per pass.
    pub default_queue_depth: u32,
    /// `sched_interval` (seconds): accepted and checked; passes are driven
    /// by events and `bf_interval`.
    pub sched_interval: u32,
}

impl Default for SchedConfig {
    fn default() -> SchedConfig {
        SchedConfig {
            policy: Policy::Backfill,
            bf_window: 43_200,
            bf_resolution: 1,
            bf_max_job_test: None,
            bf_max_job_user: None,
            bf_job_part_count_reserve: Some(1),
            bf_age_reserve: None,
            bf_slowdown_reserve: Some(1),
            bf_slowdown_reserve_width: 25,
            bf_order: BackfillOrder::Shortest,
            bf_plan: PlanOn::Auto,
            bf_continue: false,
            bf_interval: 30,
            default_queue_depth: 100,
            sched_interval: 60,
        }
    }
}
