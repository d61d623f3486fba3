//! The controller's state machine: the job, node and partition tables, and
//! every decision about them.
//!
//! ```text
//!   request / node report / timer        Engine              ctld (shell)
//!   ------------------------------>  apply(input, now) --> take_commands()
//!      (the simulator, the same way)      |                    |  RPCs to node daemons
//!                                    pass (Tick)               v
//! ```
//!
//! Pure: no sockets, no files, no clock (`now` is an argument), no hash
//! order. The same code runs in the controller and in the simulator.
//! Requests answer with `Result<_, SlurmError>` (a refusal is a value, not
//! a failure); effects on node daemons are queued as [`Command`]s.
//!
//! # Entry points
//!
//! One for the daemon and the simulator: [`Engine::apply`] (module `apply`)
//! takes an [`Input`] (a request with its sender, a node report, a tick)
//! and returns the request's answer; journal replay feeds the same inputs.
//! Commands stay queued until `take_commands`, so the controller sends
//! them only after the batch is on disk. Behind it, the handlers:
//! `on_submit`, `on_cancel`, `on_update_job`,
//! `on_update_node`, `on_hold`, `on_release`, `on_requeue`,
//! `on_node_registered` (a node whose boot time is later than both its
//! previous registration's and the controller's last contact with it
//! rebooted, Slurm's test: the jobs it held that it does not list end
//! NODE_FAIL or are requeued, and unless `ReturnToService=2` a node that was
//! not already DOWN goes DOWN "Node unexpectedly rebooted"), `on_job_exited`,
//! `on_timer`, `schedule`; job steps (`steps`: `on_create_step`,
//! `on_step_exited`, `on_cancel_step`, `on_complete_allocation`). Effects
//! are `Command`s; `check_invariants` checks the tables. The job lifecycle
//! (`jobs`) and the scheduling pass (`pass`, over `views` and `requests`;
//! `partial` for passes over part of the queue) are separate modules;
//! snapshots are their own versioned types (`persist`); a brief job listing
//! is handed out as rows (`proto::JobRowSource`), which the controller encodes.
//!
//! # Performance notes: the scheduling pass and its shortcuts
//!
//! `schedule` keeps the last plan's expected starts (`Engine::planned`: squeue
//! `--start`, `scontrol show job` StartTime/SchedNodeList) and `explain`
//! answers `muster explain`. When the only change since the last pass is new
//! plain submissions that come after every job that pass tried, `schedule`
//! tries only them, the planned jobs, the first blocked job of each partition
//! (`first_blocked`: with several partitions, also a job that waits for
//! Priority behind the blocked job of one of its partitions and is the first to
//! block another) and the older jobs that need no more CPUs than are free
//! (nothing came free, so no other waiting job can start; a plan made again may
//! land elsewhere and leave room for such a job); it goes over them in order
//! with `sched::plan_more` (`walk_pass`, `walk`) and leaves out the older ones
//! the pass has already shown would wait behind a planned job
//! (`PassCache::settled` and `cannot_start_as`; the walk's entries carry each
//! job's partitions as a bit set, read against `PassCache::settled_parts`, so a
//! job left out costs no look at the job table; with `bf_order=shortest` the
//! walk puts the jobs the pass defers aside and tries them at its end, by time
//! limit and then in order, as a full pass does; they are put in that order by
//! counting over their few distinct limits, or, past 64 runs of distinct
//! limits, by a radix sort over the limits' minutes; the walk borrows the
//! entries it defers instead of copying them).
//!
//! When there are no such older jobs, each new job needs more CPUs than are
//! free and its partitions already hold their planned jobs, it only marks the
//! new jobs Priority (`fresh_cannot_start`; not while a plan starts by now: a
//! job being ended is expected gone a second after each pass, so a plan behind
//! it moves with the clock).
//!
//! With limits enforced, a pass after submissions is a full one when a job the
//! last pass held at a limit is no longer held (`LimitCheck::released`, found
//! in the limit check's own walk over the pending jobs: jobs let through count
//! against later ones whether they start or not, so the holds can change
//! without an event of the held job's own).
//!
//! After job ends (and submissions, and timers that only purged finished jobs),
//! with one partition, one planned job (EASY, the default) and neither
//! dependencies nor limits pending, the pass is the same short one: the jobs
//! left out need more CPUs than are free and wait behind the planned first
//! blocked job; if that job starts or loses its plan, the pass is done again
//! over every job (`freed_pass_holds`).
//!
//! With one partition, one planned job per partition (EASY, or backfill's
//! default `bf_job_part_count_reserve=1`) and neither dependencies, limits nor
//! preemption, whether or not the first blocked job holds a plan, after job
//! ends the pass first tries only a prefix of the queue in the order a pass
//! tries jobs (`freed_prefix`: as many jobs as the free CPUs could take and one
//! more), read from the queue (below) in that order, without building their
//! requests or looking at the jobs; past the prefix it reads only the jobs that
//! must be tried (the queue's notable ones, the needed and the aged ones) and
//! counts the others from the queue's end only as far as `PREFIX_MIN_LEFT_OUT`,
//! so it does not walk the queue (whether no job a pass would try has a time
//! limit is read only where no plan was made, `Engine::pending_endless`).
//!
//! When a first blocked job waits for Resources in it and a plan was made (or
//! no running or startable job has a time limit, so none can be), the pass goes
//! on in order over the jobs left out (`finish_prefix_pass`, with
//! `sched::plan_more`, which continues the same pass; the prefix's pass holds
//! back the jobs it defers, `hold_deferred`, and the walk tries them with its
//! own deferred ones at its end): it tries the ones that must be tried wherever
//! they are (new, planned, first blocked, aged, arrays, reason not Priority; an
//! array's pending record as a full pass does, one request per task that could
//! start) and the ones that could use the CPUs left, except those the pass has
//! shown cannot start (`sched::PassCache::cannot_start`: an earlier job of the
//! same spread shape with no more tasks and no longer a limit could not, and
//! nodes only fill up along a pass); the others keep their decision to wait
//! behind the plan, with reason Priority, and their last evaluation time.
//!
//! The ones that may be left out are not collected where the pass defers them
//! all (`bf_order=shortest`, the partition settled when the walk starts): the
//! walk reads them, when it tries the deferred jobs, from the queue's index by
//! (time limit, order key) (`Queue::by_limit`, `LazyLeftOut`), merged with the
//! jobs it deferred itself, and stops reading them once the CPUs left are fewer
//! than any pending job asks (`Queue::least_demand`); otherwise
//! `finish_prefix_pass` reads them in order from the queue past the prefix.
//! Otherwise it passes over every job.
//!
//! Under FCFS (`sched/builtin`: no plans, and every job behind the first
//! blocked one waits) the same prefix pass runs after submissions alone too, a
//! blocked job in it is enough, and only the jobs that must be tried are tried
//! after it; those are found among the new, first blocked and planned jobs and
//! the queue's notable ones (`Queue::notable_after`: arrays, jobs whose reason
//! is not Priority, jobs with a begin time, kept in an index by order key), so
//! the queue past the prefix is not walked at all and an FCFS pass costs what
//! the head of its queue costs.
//!
//! An FCFS pass tries at most `default_queue_depth` jobs (Slurm's
//! sched/builtin); where it stopped there before a job blocked
//! (`sched::Plan::depth_reached`), the engine arms a pass over the whole queue
//! `sched_interval` later (`depth_wake`, one of the wake-ups that are no job's
//! own), as Slurm's main scheduler tries the whole queue at that interval, so
//! jobs past the depth start then at the latest instead of waiting for the next
//! event.
//!
//! Pending jobs' requests are kept between passes until the next `touch`
//! (`request_cache`, with each request's `sched::Probe`: only submissions and
//! job ends happened since, and neither changes a pending job's request).
//! Between touches a pass gives the scheduler only the running jobs that took
//! or gave back resources, ended or were suspended since the last pass
//! (`running_changed`, `sched::plan_with_changes`); after a touch, every one.
//! This is what keeps the pass after each end of a stream of short jobs from
//! looking at the whole queue (or twice: the planned head job usually starts).
//!
//! `set_full_passes` turns the shortcuts off, so tests can compare.
//!
//! `pass_starts_nothing` (and `schedule_unless_idle`, which runs the pass
//! unless so, with the free CPUs the test counted) tells a caller that the next
//! pass could start no job (every waiting job, held and completing ones aside,
//! asks for more CPUs than are free, read from the queue's index by demand; an
//! array record always counts; never with preemption, a job it suspended, a
//! pending dependency or enforced limits, nor under FCFS where more jobs wait
//! than `default_queue_depth` and no whole-queue pass is armed: the pass could
//! arm it): the simulator skips such a pass, whose only effect would be reasons
//! and plans that the next pass makes again; the controller does not.
//!
//! Every other change (a node, a timer that ends or warns a job, an update)
//! gives a pass over every job.
//!
//! The engine keeps a `sched::PassCache` between passes (the timeline's memory,
//! the diagnoses of waiting jobs' shapes), an index of the jobs holding
//! allocations with each allocation's version (kept by `take_resources` and
//! `release_node_share`: the running jobs of a pass are listed from it), the
//! queue (`queue::Queue`: every pending job's facts that a pass reads, its
//! order key, the CPUs it asks, its partitions as a bit set, whether it is
//! held, completing, waiting for a dependency or its begin time, its reason,
//! its submit time and limit, in the order passes try jobs and indexed by the
//! CPUs asked and by time limit, and how many of them do not spread
//! (`Queued::spreads`, read off what the job asked for: with `bf_plan=auto` a
//! pass plans over the pool only while none does, while no node that holds
//! running jobs refuses new ones, `NodeTable::any_apart`, and without
//! preemption; where that changed since the last pass the pass goes over every
//! job. Over the pool a pass after submissions alone leaves out the older jobs
//! that fit the free CPUs, `older_jobs_wait`: with no job ended, being ended or
//! past its limit, nothing that could make room for them lies between the last
//! pass and now; and with every pending job spreading, the walk by limit leaves
//! out every job that asks for as many CPUs as one that could not start, and
//! stops reading the queue once that is the least any pending job asks, testing
//! a job's CPUs before anything else of it); the job table (`queue::JobTable`)
//! notes every job changed through it (a pass telling a job the reason it had,
//! `tell_reason`, does not), and a pass brings the queue up to date from those
//! alone (a job whose order and demand keys stay has its facts changed in
//! place, not taken out of the indexes and entered again), or rebuilds it when
//! the partitions' tiers or sizes changed (made once, as the partitions'
//! scheduler views are, in `Engine::new`: partitions never change after it):
//! `freed_prefix`, the short pass's older jobs that fit in the free CPUs and
//! the wide ones due for a plan are read from it, not from the scattered job
//! records), and flags that let a pass skip the look for dependencies and
//! suspended jobs while none can exist; `check_invariants` checks the index of
//! jobs holding allocations, the queue against one built afresh from every
//! pending job, and the deadline index (`deadlines::Deadlines`) against
//! every job's deadline.
//!
//! The node table (`node_table::NodeTable`) notes which nodes changed since
//! each of its two readers last looked (every mutable access marks the node:
//! `IndexMut`, `iter_mut`; reads go through `Deref` to the slice, so the
//! compiler sees every write): `free_cpus` keeps each node's free CPUs and
//! their sum and counts again only the changed nodes, and
//! `refreshed_node_views` compares only those with their views, except after a
//! pass that laid suspended jobs' shares on the views or when the views were
//! made outside a pass (the submission check makes them once,
//! `node_view_cache`, while no pass has kept any: a trace's whole queue may
//! come before the first pass); debug builds check both against a sweep of
//! every node.
#![warn(missing_docs)]

mod acct;
mod apply;
mod array;
mod assoc;
mod ctldscripts;
mod deadlines;
mod deps;
mod env;
mod explain;
mod info;
mod jobs;
mod licenses;
mod limits;
mod node_table;
mod nodes;
mod partial;
mod pass;
mod persist;
mod preempt;
mod priority;
pub mod privacy;
mod queue;
mod reboot;
mod reconf;
mod requests;
mod resv;
mod stats;
mod steps;
mod tokens;
mod topology;
mod views;
mod watch;

use model::{ExitCode, JobId, JobState, NodeBase, NodeState, PendingReason, TimeLimit, Timestamp};
use proto::acctdb::AdminLevel;
use proto::{BatchLaunch, Identity, JobDesc};
use sched::{Allocation, GresPool, NodeIdx};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub use acct::sorted_tres;
pub use apply::{Applied, Input};
pub use array::ArrayPart;
pub use assoc::Enforce;
pub use deps::{DepStatus, Outcome};
pub use info::OVERSUBSCRIBE_EXCLUSIVE;
pub use nodes::NOT_RESPONDING;
pub use persist::{journal_v1, payload_v1, v1 as snapshot_v1, PersistentState, RestoreError};
pub use preempt::{PreemptConf, PreemptMode, PreemptType, Suspension};
pub use stats::PassStats;
pub use steps::{layout, worse_exit, Step, OOM_EXIT};
pub use tokens::{SavedToken, MAX_TOKENS, TOKEN_WINDOW};
pub use watch::JobCounts;

/// The earliest of `times`.
fn min_time(times: impl IntoIterator<Item = Timestamp>) -> Option<Timestamp> {
    times.into_iter().min()
}

/// When a pending job with `--deadline` can no longer end in time: its
/// deadline less its (minimum) time limit. sbatch(1): the job is removed
/// "if no ending is possible before this deadline".
fn deadline_due(job: &Job) -> Option<Timestamp> {
    let d = job.desc.deadline?;
    let limit = job.desc.time_min.unwrap_or(job.time_limit);
    Some(match limit {
        TimeLimit::Minutes(m) => d - m as i64 * 60,
        TimeLimit::Unlimited => d,
    })
}

/// Priority of the first job under the basic priority plugin; each later
/// job gets one less, so submission order breaks ties.
pub const BASE_PRIORITY: u32 = 4_294_901_760;

/// An effect for the shell to carry out.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Run `PrologSlurmctld` (`prolog`) or `EpilogSlurmctld` for a job on
    /// the controller's host; a prolog's end comes back as
    /// `Input::PrologSlurmctldEnded`. Never in the simulator.
    CtldScript {
        /// The job.
        job_id: JobId,
        /// Its run (restart count) the script is for.
        run: u32,
        /// `PrologSlurmctld` (else `EpilogSlurmctld`).
        prolog: bool,
        /// The script's environment (Slurm's `SLURM_JOB_*` variables).
        env: Vec<(String, String)>,
    },
    /// Start a batch script on a node.
    LaunchBatch {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// What to start.
        launch: Box<BatchLaunch>,
    },
    /// Hand a message to a running job's batch host (`scontrol notify`).
    NotifyJob {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// The job.
        job_id: JobId,
        /// The text.
        message: String,
    },
    /// Send a signal to a job's processes on a node.
    SignalJob {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// The job.
        job_id: JobId,
        /// Signal number.
        signal: i32,
        /// Which of the job's processes.
        scope: proto::SignalScope,
    },
    /// End a job's processes on a node (SIGTERM, then SIGKILL after `kill_wait`).
    TerminateJob {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// The job.
        job_id: JobId,
        /// KillWait seconds.
        kill_wait: u32,
        /// Which run of the job (its restart count) this ends.
        run: u32,
        /// Why, when the job's log gets slurmstepd's banner for it.
        reason: Option<proto::EndReason>,
    },
    /// Write (or rewrite) a job's accounting record.
    AcctRecord(Box<proto::AcctJob>),
    /// Start a node's tasks of a step.
    LaunchStep {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// What to start.
        launch: Box<proto::StepLaunch>,
    },
    /// Start a job's extern step on a node (PrologFlags=Contain).
    StartExtern {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// The job.
        job_id: JobId,
        /// Its user.
        uid: u32,
        /// Its group.
        gid: u32,
        /// The node's index in the allocation.
        node_index: u32,
        /// `--acctg-freq`.
        acctg_freq: Option<String>,
    },
    /// End a job's extern step on a node; the node reports its usage.
    EndExtern {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// The job.
        job_id: JobId,
    },
    /// Signal (or, with no signal, end) a step's tasks on a node.
    SignalStep {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
        /// The job.
        job_id: JobId,
        /// The step.
        step_id: u32,
        /// The signal; None ends the step (SIGTERM, SIGKILL after KillWait).
        signal: Option<i32>,
        /// KillWait.
        kill_wait: u32,
        /// The step's own time limit ends it: it ends alone, with KillWait
        /// (not as its job's end, which `reason` alone says).
        time_limit: bool,
        /// Set when the step is being ended: what its banner says.
        reason: Option<proto::EndReason>,
    },
    /// Reboot a node (`scontrol reboot`): its daemon runs RebootProgram.
    RebootNode {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
    },
    /// Mail the job's user (`--mail-type`): ctld runs `MailProg -s SUBJECT USER`.
    Mail {
        /// `--mail-user`, or the job's user name.
        user: String,
        /// The user is the job's user name (`--mail-user` not given):
        /// slurm.conf's `MailDomain` qualifies it.
        default_user: bool,
        /// The subject line (`model::mail::subject`).
        subject: String,
    },
    /// Write (or rewrite) a reservation window's accounting record.
    AcctResv(Box<proto::resv::AcctResv>),
    /// Tell a node daemon that the controller reconfigured (a configless
    /// one fetches the files again).
    ReconfigureNode {
        /// Node name.
        node: String,
        /// `host:port` of its daemon.
        addr: String,
    },
}

/// Settings the engine takes from slurm.conf.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    /// ClusterName.
    pub cluster_name: String,
    /// The controller's host name, for `SLURM_WORKING_CLUSTER`.
    pub ctld_host: String,
    /// The controller's address.
    pub ctld_addr: String,
    /// SlurmctldPort.
    pub ctld_port: u16,
    /// SlurmdPort.
    pub slurmd_port: u16,
    /// SlurmUser: may administer the cluster.
    pub slurm_user: String,
    /// KillWait.
    pub kill_wait: u32,
    /// SlurmdTimeout: a node silent this long is set DOWN.
    pub slurmd_timeout: u32,
    /// MessageTimeout (seconds, default 10): how long the controller waits
    /// for a node daemon's answer.
    pub message_timeout: u32,
    /// ReturnToService (0, 1 or 2).
    pub return_to_service: u32,
    /// JobRequeue: batch jobs are requeued after a node failure by default.
    pub job_requeue: bool,
    /// MinJobAge.
    pub min_job_age: u32,
    /// MaxJobCount.
    pub max_job_count: u32,
    /// FirstJobId.
    pub first_job_id: u32,
    /// DefMemPerCPU.
    pub def_mem_per_cpu: Option<u64>,
    /// DefMemPerNode.
    pub def_mem_per_node: Option<u64>,
    /// MaxMemPerNode.
    pub max_mem_per_node: Option<u64>,
    /// SelectTypeParameters includes memory: memory is consumable.
    pub memory_consumable: bool,
    /// GresTypes.
    pub gres_types: Vec<String>,
    /// Path of slurm.conf (`SLURM_CONF` for jobs).
    pub conf_path: String,
    /// MaxArraySize: array indexes must be below it.
    #[serde(default = "default_max_array_size")]
    pub max_array_size: u32,
    /// DependencyParameters=kill_invalid_depend: cancel jobs whose
    /// dependency can never be satisfied.
    #[serde(default)]
    pub kill_invalid_depend: bool,
    /// SchedulerParameters=enable_user_top: users may `scontrol top`
    /// their own jobs (else only operators may).
    #[serde(default)]
    pub enable_user_top: bool,
    /// AccountingStorageEnforce.
    #[serde(default)]
    pub enforce: Enforce,
    /// PrologFlags=Contain (or RunInJob): every job has an `extern` step.
    #[serde(default)]
    pub prolog_contain: bool,
    /// PriorityType and the multifactor settings.
    #[serde(default)]
    pub priority: conf::PriorityConf,
    /// PreemptType, PreemptMode, PreemptExemptTime.
    #[serde(default)]
    pub preempt: PreemptConf,
    /// `AuthInfo=cred_expire=N`: a step credential's lifetime, and how long
    /// a requeued job waits (reason BeginTime) before it may start again,
    /// so that nothing launched for its last run can still start.
    #[serde(default = "default_cred_expire")]
    pub cred_expire: u32,
    /// `Licenses=`: each license's total.
    #[serde(default)]
    pub licenses: model::licenses::Licenses,
    /// `Prolog` or `Epilog` is set: at a job's end every node of it is
    /// told (`Command::EndExtern`), so that the nodes that ran a step's
    /// Prolog run the Epilog.
    #[serde(default)]
    pub node_scripts: bool,
    /// `SelectTypeParameters=CR_Core` (or `CR_Core_Memory`): cores are
    /// the unit of allocation, a job takes every thread of each core it
    /// gets (`node_threads`); else (`CR_CPU`) each CPU is its own.
    #[serde(default)]
    pub whole_cores: bool,
    /// `whole_cores` and some node has more than one thread per core.
    #[serde(default)]
    pub smt_whole_cores: bool,
    /// `SelectTypeParameters=...,ENFORCE_BINDING_GRES`: every job is as
    /// if submitted with `--gres-flags=enforce-binding` (unless it gave
    /// `disable-binding`).
    #[serde(default)]
    pub enforce_binding_gres: bool,
    /// ResumeTimeout (seconds, default 60): how long a node told to reboot
    /// (`scontrol reboot`) has to come back before it is set DOWN.
    #[serde(default = "default_resume_timeout")]
    pub resume_timeout: u32,
    /// `PrologSlurmctld` is set: a job that starts is CONFIGURING until
    /// the controller ran it (`Command::CtldScript`), and its batch
    /// script is launched only once it succeeded.
    #[serde(default)]
    pub prolog_slurmctld: bool,
    /// `EpilogSlurmctld` is set: the controller runs it when a job's
    /// allocation ends.
    #[serde(default)]
    pub epilog_slurmctld: bool,
    /// `SelectTypeParameters=...,CR_LLN`: every partition places jobs on
    /// the least loaded nodes first, as `LLN=YES` does for one.
    #[serde(default)]
    pub cr_lln: bool,
    /// `PrivateData`: what users who are not operators may not see of
    /// others (`privacy`).
    #[serde(default)]
    pub private_data: conf::PrivateData,
}

fn default_resume_timeout() -> u32 {
    60
}

/// The node's CPUs per core as its ids are numbered: `ThreadsPerCore`
/// where `CPUs` counts every thread (Boards x Sockets x CoresPerSocket x
/// ThreadsPerCore), else 1 (each CPU id a core). Slurm numbers a node's
/// CPUs core by core: core `c` holds ids `c*T .. c*T+T-1`.
pub fn hw_threads(nc: &conf::NodeConf) -> u32 {
    let t = nc.threads_per_core.max(1);
    let all = nc
        .boards
        .max(1)
        .saturating_mul(nc.sockets.max(1))
        .saturating_mul(nc.cores_per_socket.max(1))
        .saturating_mul(t);
    if t > 1 && nc.cpus == all {
        t
    } else {
        1
    }
}

/// The CPUs a job takes together on a node (`sched::NodeView::threads`):
/// a whole core's threads under `CR_Core`, else one.
pub fn node_threads(whole_cores: bool, nc: &conf::NodeConf) -> u32 {
    if whole_cores {
        hw_threads(nc)
    } else {
        1
    }
}

/// Slurm's default `cred_expire`.
fn default_cred_expire() -> u32 {
    120
}

fn default_max_array_size() -> u32 {
    1001
}

impl Settings {
    /// Reads the settings from a parsed slurm.conf.
    pub fn from_config(cfg: &conf::Config) -> Settings {
        let ctld = cfg.slurmctld_host.first();
        let select_params = cfg
            .other
            .get("selecttypeparameters")
            .map(|(_, v)| v.to_ascii_uppercase())
            .unwrap_or_default();
        Settings {
            cluster_name: cfg.cluster_name.clone(),
            ctld_host: ctld.map(|h| h.name.clone()).unwrap_or_default(),
            ctld_addr: ctld
                .map(|h| h.addr.clone().unwrap_or_else(|| h.name.clone()))
                .unwrap_or_default(),
            ctld_port: cfg.slurmctld_port,
            slurmd_port: cfg.slurmd_port,
            slurm_user: cfg.slurm_user.clone(),
            kill_wait: cfg.kill_wait,
            slurmd_timeout: cfg.slurmd_timeout,
            message_timeout: cfg
                .other
                .get("messagetimeout")
                .and_then(|(_, v)| v.trim().parse().ok())
                .filter(|&t: &u32| t > 0)
                .unwrap_or(10),
            return_to_service: cfg.return_to_service,
            job_requeue: cfg
                .other
                .get("jobrequeue")
                .map(|(_, v)| v.trim() != "0")
                .unwrap_or(true),
            min_job_age: cfg.min_job_age,
            max_job_count: cfg.max_job_count,
            first_job_id: cfg.first_job_id.max(1),
            def_mem_per_cpu: cfg.def_mem_per_cpu,
            def_mem_per_node: cfg.def_mem_per_node,
            max_mem_per_node: cfg.max_mem_per_node,
            memory_consumable: select_params.contains("MEMORY"),
            whole_cores: select_params.contains("CR_CORE"),
            smt_whole_cores: select_params.contains("CR_CORE")
                && cfg.nodes.iter().any(|n| hw_threads(n) > 1),
            enforce_binding_gres: select_params.contains("ENFORCE_BINDING_GRES"),
            resume_timeout: cfg
                .other
                .get("resumetimeout")
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or_else(default_resume_timeout),
            cr_lln: select_params.split(',').any(|w| w.trim() == "CR_LLN"),
            gres_types: cfg.gres_types.clone(),
            conf_path: cfg.path.display().to_string(),
            max_array_size: cfg
                .other
                .get("maxarraysize")
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or_else(default_max_array_size),
            kill_invalid_depend: cfg
                .other
                .get("dependencyparameters")
                .is_some_and(|(_, v)| v.to_ascii_lowercase().contains("kill_invalid_depend")),
            enable_user_top: cfg.other.get("schedulerparameters").is_some_and(|(_, v)| {
                v.split(',')
                    .any(|o| o.trim().eq_ignore_ascii_case("enable_user_top"))
            }),
            prolog_contain: cfg.other.get("prologflags").is_some_and(|(_, v)| {
                v.split(',').any(|f| {
                    // RunInJob implies Contain (slurm.conf(5)).
                    let f = f.trim();
                    f.eq_ignore_ascii_case("contain") || f.eq_ignore_ascii_case("runinjob")
                })
            }),
            enforce: Enforce::parse(
                cfg.other
                    .get("accountingstorageenforce")
                    .map_or("", |(_, v)| v.as_str()),
            ),
            priority: cfg.priority.clone(),
            preempt: PreemptConf::from_config(cfg),
            cred_expire: cfg
                .other
                .get("authinfo")
                .and_then(|(_, v)| {
                    v.split(',').find_map(|o| {
                        let (k, v) = o.split_once('=')?;
                        k.trim()
                            .eq_ignore_ascii_case("cred_expire")
                            .then(|| v.trim().parse().ok())?
                    })
                })
                .unwrap_or_else(default_cred_expire),
            licenses: licenses::from_config(cfg),
            node_scripts: ["prolog", "epilog"]
                .iter()
                .any(|k| cfg.other.get(*k).is_some_and(|(_, v)| !v.trim().is_empty())),
            prolog_slurmctld: cfg
                .other
                .get("prologslurmctld")
                .is_some_and(|(_, v)| !v.trim().is_empty()),
            epilog_slurmctld: cfg
                .other
                .get("epilogslurmctld")
                .is_some_and(|(_, v)| !v.trim().is_empty()),
            private_data: conf::PrivateData::of(cfg),
        }
    }
}

/// When the `--mail-type=TIME_LIMIT_50/80/90` mail of `share` percent
/// is due for a running job: that share of its limit run (suspended time
/// left out).
pub(crate) fn limit_share_at(job: &Job, share: u8) -> Option<Timestamp> {
    let end = job.limit_end()?;
    let model::TimeLimit::Minutes(m) = job.time_limit else {
        return None;
    };
    let limit = i64::from(m) * 60;
    Some(end - limit * i64::from(100 - share) / 100)
}

/// The bits of the time-limit shares asked for and not yet mailed whose
/// time has come.
fn limit_shares_passed(job: &Job, now: Timestamp) -> u16 {
    model::mail::LIMIT_SHARES
        .iter()
        .filter(|(bit, _)| job.desc.mail_type & bit != 0 && job.limit_mailed & bit == 0)
        .filter(|(_, share)| limit_share_at(job, *share).is_some_and(|t| now >= t))
        .fold(0, |acc, (bit, _)| acc | bit)
}

/// The mail for the highest time-limit share passed and not yet mailed,
/// if any (one mail, as a timer that comes late passes several at once).
fn limit_mail_due(job: &Job, now: Timestamp) -> Option<model::mail::Event> {
    let passed = limit_shares_passed(job, now);
    let (_, percent) = model::mail::LIMIT_SHARES
        .iter()
        .rev()
        .find(|(bit, _)| passed & bit != 0)?;
    Some(model::mail::Event::ReachedLimit {
        percent: *percent,
        run: job.run_secs(now),
    })
}

/// The earliest time-limit share mail still due for a running job.
pub(crate) fn next_limit_mail(job: &Job) -> Option<Timestamp> {
    model::mail::LIMIT_SHARES
        .iter()
        .filter(|(bit, _)| job.desc.mail_type & bit != 0 && job.limit_mailed & bit == 0)
        .filter_map(|(_, share)| limit_share_at(job, *share))
        .min()
}

/// A node as the controller tracks it.
#[derive(Clone, Debug)]
pub struct Node {
    /// Its configuration.
    pub conf: conf::NodeConf,
    /// `host:port` of its daemon.
    pub daemon_addr: String,
    /// Port of its daemon.
    pub port: u16,
    /// Base state and flags.
    pub state: NodeState,
    /// Has registered since the controller started.
    pub registered: bool,
    /// Drain/down reason.
    pub reason: Option<String>,
    /// Who set the reason.
    pub reason_user: Option<String>,
    /// When the reason was set.
    pub reason_time: Option<Timestamp>,
    /// CPUs allocated.
    pub alloc_cpus: u32,
    /// Memory allocated (MB).
    pub alloc_mem: u64,
    /// CPU ids held by jobs (`NodeAlloc::cpu_ids`): a job takes the lowest
    /// free ones, so two jobs never share a CPU.
    pub cpu_ids_in_use: BTreeSet<u32>,
    /// GRES pools with their use.
    pub gres: Vec<GresPool>,
    /// Jobs holding resources here.
    pub jobs: BTreeSet<JobId>,
    /// An exclusive job runs here.
    pub exclusive_in_use: bool,
    /// Partitions containing it.
    pub partitions: Vec<String>,
    /// What it last reported.
    pub report: Option<proto::NodeRegistration>,
    /// Last time a job ran here.
    pub last_busy: Option<Timestamp>,
    /// Last time its daemon answered (registration or ping).
    pub last_response: Option<Timestamp>,
    /// The reboot it waits for or is in (`scontrol reboot`).
    pub reboot: Option<reboot::Reboot>,
}

impl Node {
    /// Registered and in a state that takes jobs: the scheduler may place
    /// jobs on it.
    pub(crate) fn takes_jobs(&self) -> bool {
        self.registered && self.state.is_schedulable()
    }
}

/// A partition as the controller tracks it.
#[derive(Clone, Debug)]
pub struct Partition {
    /// Its configuration.
    pub conf: conf::PartitionConf,
    /// Member node indexes.
    pub nodes: Vec<NodeIdx>,
}

/// A job as the controller tracks it.
#[derive(Clone, Debug)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// The submission (its `script` and `env` are moved into the two
    /// shared fields below). Identical submissions share one copy (a loop
    /// of sbatch sends the same description every time); changes go
    /// through `Arc::make_mut`, which copies a shared one first.
    /// Snapshots store each distinct description once and give each job
    /// its number instead (`snapshot_v1::Desc`).
    pub desc: Arc<JobDesc>,
    /// The script, shared between jobs that submitted the same text.
    /// Snapshots store each distinct script once (`PersistentState::scripts`).
    pub script: Arc<str>,
    /// The exported environment, shared between jobs with the same one:
    /// a loop of sbatch from one shell stores it once (in memory and in
    /// snapshots, `PersistentState::envs`).
    pub env: Arc<Vec<(String, String)>>,
    /// Base state.
    pub state: JobState,
    /// Processes still being cleaned up on its batch host.
    pub completing: bool,
    /// Running, but `PrologSlurmctld` has not ended yet: nothing is
    /// launched (Slurm's CONFIGURING flag).
    pub configuring: bool,
    /// Why it waits (or why it ended).
    pub reason: PendingReason,
    /// Priority (0 while held).
    pub priority: u32,
    /// Priority it had before a hold.
    pub base_priority: u32,
    /// Submission time.
    pub submit_time: Timestamp,
    /// When it became eligible.
    pub eligible_time: Timestamp,
    /// Start time.
    pub start_time: Option<Timestamp>,
    /// End time.
    pub end_time: Option<Timestamp>,
    /// Candidate partitions (indexes), in the user's order.
    pub partitions: Vec<usize>,
    /// The partition it runs in (or the first candidate while pending).
    pub partition: usize,
    /// Effective time limit.
    pub time_limit: TimeLimit,
    /// Minimum nodes.
    pub min_nodes: u32,
    /// Maximum nodes.
    pub max_nodes: u32,
    /// Tasks.
    pub ntasks: u32,
    /// Allocation while running or completing.
    pub alloc: Option<Allocation>,
    /// The nodes it last ran on (kept after it ends, for `squeue`/`scontrol`).
    pub ran_on: Vec<NodeIdx>,
    /// CPUs it had on each of those nodes.
    pub ran_cpus: Vec<u32>,
    /// Exit status.
    pub exit: ExitCode,
    /// Times requeued.
    pub restarts: u32,
    /// Requeue allowed.
    pub requeue: bool,
    /// The `--signal` warning has been sent.
    pub warned: bool,
    /// The `--mail-type=TIME_LIMIT_50/80/90` mails sent for this run
    /// (their bits; not saved: after a controller restart the share last
    /// passed may be mailed again).
    pub limit_mailed: u16,
    /// Resolved stdout path.
    pub stdout: String,
    /// Resolved stderr path.
    pub stderr: String,
    /// Last scheduling pass that looked at it.
    pub last_sched_eval: Option<Timestamp>,
    /// Held, and by whom (user hold when true).
    pub held: Option<bool>,
    /// Priority set by an administrator.
    pub admin_priority: Option<u32>,
    /// Who cancelled it (`CANCELLED by <uid>` in sacct).
    pub cancelled_by: Option<u32>,
    /// What its batch script used, as its node measured it (boxed: about
    /// 300 bytes that only ended jobs have, in every job).
    pub batch_usage: Option<Box<proto::StepUsage>>,
    /// What its extern step used, merged over the nodes that reported
    /// (boxed, as `batch_usage`).
    pub extern_usage: Option<Box<proto::StepUsage>>,
    /// Its weighted priority factors when multifactor priority last set
    /// its priority (sprio). Boxed: 88 bytes that priority/basic (the
    /// default) never sets, in every job.
    pub prio_factors: Option<Box<proto::PriorityFactors>>,
    /// Its place in a job array.
    pub array: Option<ArrayPart>,
    /// The conditions of its dependency still to be met (satisfied ones
    /// are dropped, as Slurm does).
    pub depend: Option<model::depend::Dependency>,
    /// Where its dependency stands.
    pub dep_status: DepStatus,
    /// Its steps (srun), in creation order.
    pub steps: Vec<Step>,
    /// The id the next step gets.
    pub next_step_id: u32,
    /// While SUSPENDED: its shares and who suspended it.
    pub suspend: Option<Box<Suspension>>,
    /// Seconds it has spent suspended in this run (not counted toward its
    /// time limit).
    pub suspended_secs: i64,
    /// When it was last suspended or resumed.
    pub suspend_time: Option<Timestamp>,
    /// Seconds it ran before its last suspension.
    pub secs_pre_suspend: i64,
    /// Requeued by preemption for this job: it does not start again while
    /// that job still waits for the resources it gave up.
    pub preempted_by: Option<JobId>,
    /// A step (or the batch script) ran in a pyxis container: the nodes
    /// hear of the job's end (`Command::EndExtern`), to drop its named
    /// containers.
    pub containers: bool,
}

/// The controller's state.
#[derive(Clone, Debug)]
pub struct Engine {
    /// The configuration in force: slurm.conf at start, then
    /// `scontrol reconfigure` and runtime partition changes (`reconf`).
    cfg: Arc<conf::Config>,
    /// The partitions differ from slurm.conf's (`scontrol update/create/
    /// delete partition`): snapshots save them (`persist`).
    parts_changed: bool,
    settings: Settings,
    nodes: node_table::NodeTable,
    node_by_name: BTreeMap<String, NodeIdx>,
    parts: Vec<Partition>,
    /// The partitions as the scheduler sees them, made once: partitions
    /// and the settings they read never change after `new`.
    part_views: Arc<[sched::PartView]>,
    /// Each partition's size, in the same order (`views::part_size`).
    part_sizes: Vec<sched::PartSize>,
    jobs: queue::JobTable,
    next_job_id: u32,
    n_submitted: u32,
    /// The recent submissions' tokens and the jobs they made (`tokens`).
    submit_tokens: tokens::SubmitTokens,
    /// Advance reservations (`resv`).
    resvs: resv::Resvs,
    /// The time of the last input applied: what the reservations are
    /// compared with (`resv::resv_restrict`).
    resv_now: Timestamp,
    /// The last time `switch_wait_ended` looked (`topology`).
    switch_checked: Timestamp,
    outbox: Vec<Command>,
    boot_time: Timestamp,
    /// Something changed that may let a pending job start or change its
    /// reason; `schedule` does nothing otherwise.
    sched_dirty: bool,
    /// Interned environments and scripts (see `Job::env`).
    env_pool: BTreeSet<Arc<Vec<(String, String)>>>,
    script_pool: BTreeSet<Arc<str>>,
    /// An empty environment, what each pooled description holds in place
    /// of its own (`on_submit`), shared.
    empty_env: proto::Env,
    /// Interned job descriptions (see `Job::desc`), by hash and, among
    /// those of one hash, a number (no list per hash to make).
    desc_pool: BTreeMap<(u64, u32), Arc<JobDesc>>,
    /// Every job's earliest deadline, in time order (brought up to date
    /// from the job table's notes when read: `sync_deadlines`).
    deadlines: deadlines::Deadlines,
    /// Array id -> task index -> the record of each task that has its own.
    array_tasks: BTreeMap<JobId, BTreeMap<u32, JobId>>,
    /// How purged jobs ended, so a dependency on them still resolves.
    finished: BTreeMap<JobId, deps::Outcome>,
    /// When the earliest `+time` dependency delay ends.
    dep_wake: Option<Timestamp>,
    /// The association database, as the controller last pushed it (`assoc`).
    assoc: Option<Arc<proto::acctdb::AcctTables>>,
    /// Decayed usage (CPU-seconds) per (account, user), for fair-share.
    usage: BTreeMap<(String, String), f64>,
    /// When usage was last accrued and decayed (PriorityCalcPeriod).
    prio_last_calc: Timestamp,
    /// The scheduler's settings (SchedulerType, SchedulerParameters).
    sched_cfg: sched::SchedConfig,
    /// The last pass's planned starts of pending jobs (derived state: the
    /// next pass recomputes it, so it is not persisted).
    plans: BTreeMap<JobId, sched::Planned>,
    /// The scheduler's node views, kept between passes (derived state:
    /// `schedule` refreshes what changes, the rest never does).
    node_view_cache: Vec<sched::NodeView>,
    /// The submission check's answers (`check_feasible`) for plain
    /// requests, by partition and shape (`views::FitShape`): whether the
    /// request could ever fit there. They read only the nodes'
    /// configuration and the partitions, which never change after `new`;
    /// emptied all the same when the views are made again.
    fit_memo: BTreeMap<(usize, views::FitShape), bool>,
    /// Within a pass: the nodes whose views differ from the ones the last
    /// pass gave the scheduler (`refreshed_node_views`), for the next
    /// `plan_pass` to tell `pass_cache`; `None`: not known.
    view_hint: Option<Vec<usize>>,
    /// The last pass's views were `node_view_cache` as refreshed, with no
    /// suspended job's shares laid on (`hold_suspended_shares`).
    views_plain: bool,
    /// What one scheduling pass keeps for the next (derived state: the
    /// timeline's memory and the diagnoses of waiting jobs' shapes).
    pass_cache: sched::PassCache,
    /// The jobs suspended by preemption, as the last `resume_suspended`
    /// left them (derived state, recomputed at each pass).
    preempt_suspended: Vec<JobId>,
    /// The jobs holding an allocation, with the version of it (a count of
    /// every change to any job's allocation, `alloc_versions`): kept by
    /// `take_resources` and `release_node_share`, so that a pass lists
    /// the running jobs without a look at the pending ones, and the
    /// scheduler's kept timeline tells an unchanged allocation by its
    /// version (`sched::RunningJob::version`).
    holding: BTreeMap<JobId, u64>,
    alloc_versions: u64,
    /// A pending job may have a dependency: set wherever one is given,
    /// cleared by a look that finds none (`evaluate_dependencies`), so a
    /// pass with no dependencies anywhere does not look at every job.
    may_depend: bool,
    /// A job may be completing: set wherever one starts to (and on a
    /// restore), never cleared, so that `refresh_node_state` looks at no
    /// node's jobs while none can be (a simulation's jobs never are).
    may_complete: bool,
    /// The jobs the last timer found due (a list kept for the next).
    due_buf: Vec<JobId>,
    /// `Engine::freed_prefix`'s lists, kept for the next pass.
    prefix_bufs: partial::PrefixBufs,
    /// Every pending job's facts that a pass reads, in the order passes
    /// try jobs and by the CPUs each asks for: what a pass after job ends
    /// or submissions reads to find the jobs it must try, and the older
    /// jobs that could use the free CPUs (and the wide ones due for a
    /// plan), without a look at every job. Brought up to date from the
    /// jobs changed since (`JobTable`) where a pass reads it
    /// (`refresh_queue`).
    queue: queue::Queue,
    /// Pending jobs' requests (`request_for`) as the passes since the last
    /// `touch` made them: only submissions and job ends happened since,
    /// and neither changes a pending job's request. Emptied by the first
    /// pass after a `touch`; a job's entry leaves when it starts.
    request_cache: std::collections::HashMap<JobId, KeptRequest, IdHash>,
    /// Jobs that took or gave back resources since the last pass (entered
    /// by `take_resources` and `release_node_share`): the only running
    /// jobs the next pass tells the scheduler about, unless `running_all`
    /// (set by `touch`: anything else may have changed) says to tell it
    /// every one.
    running_changed: BTreeSet<JobId>,
    running_all: bool,
    /// A job may be suspended other than by an administrator (the same
    /// for `resume_suspended`).
    may_resume: bool,
    /// When a running job that the last preemption pass could not take
    /// (within its PreemptExemptTime) first may be preempted (derived).
    exempt_wake: Option<Timestamp>,
    /// When the next pass over the whole queue is due: an FCFS pass
    /// stopped at `default_queue_depth` (`sched::Plan::depth_reached`),
    /// so jobs it did not try may fit; Slurm's main scheduler tries the
    /// whole queue every `sched_interval` for them.
    pub(crate) depth_wake: Option<Timestamp>,
    /// Some node may wait for, or be in, a reboot (`reboot`): the end of
    /// each batch looks at them. Derived from the nodes.
    pub(crate) any_reboot: bool,
    /// The next pass is that one (`depth_wake` came).
    pub(crate) whole_queue_pass: bool,
    /// Local time's offset from UTC (`set_utc_offset`).
    utc_offset: i64,
    /// Driven by the simulator (`set_simulated`): no accounting records
    /// and no environment in batch launches (nobody reads them).
    simulated: bool,
    /// The state each job with `--mail-type` was last recorded in
    /// (`record`): a change from it is an event to mail about. Not kept
    /// across restarts: a job first seen after one is mailed about from
    /// its next change on.
    mail_seen: BTreeMap<JobId, JobState>,
    /// Jobs submitted since the last pass while nothing else changed;
    /// `None` when something else changed (or no pass ran yet): the next
    /// pass then looks at every job (`schedule`).
    fresh: Option<Vec<JobId>>,
    /// The order key (`sched::order_key`) of the lowest-priority job the
    /// last pass tried.
    last_order_key: Option<sched::OrderKey>,
    /// The first blocked job of each partition in the last pass (waiting
    /// for Resources, or for Priority behind a blocked job of another of
    /// its partitions: `first_blocked`): a pass over new jobs only tries
    /// them again, so that the new jobs wait behind them.
    heads: Vec<JobId>,
    /// `set_full_passes`: every pass looks at every job.
    full_passes: bool,
    /// Tests only: no pass over a prefix of the queue after job ends
    /// (`freed_prefix`), the other shortcuts kept.
    pub(crate) prefix_passes_off: bool,
    /// Tests only: short passes after submissions try every older job the
    /// free CPUs could hold (no `walk_pass`).
    pub(crate) walk_passes_off: bool,
    /// The fewest jobs such a pass must leave out to be tried (tests set
    /// it low, to try it on short queues).
    pub(crate) prefix_min_left_out: usize,
    /// Jobs ended since the last pass (their resources came free) and
    /// nothing else changed but submissions (`fresh` is kept): the next
    /// pass may try only the jobs that could use what is free (`schedule`).
    freed: bool,
    /// Jobs purged since the pools were last pruned (`on_timer`).
    purged_since_prune: usize,
    /// What `scontrol show config` needs beyond the tables
    /// (`set_show_config`).
    show_config: Option<apply::ShowConfig>,
    /// What the scheduling passes did (`pass_stats`, for `sdiag`).
    pass_stats: stats::PassStats,
}

/// The scheduler settings slurm.conf asks for, over the scheduler's
/// defaults.
pub fn sched_config(cfg: &conf::Config) -> sched::SchedConfig {
    let p = &cfg.scheduler_params;
    let d = sched::SchedConfig::default();
    sched::SchedConfig {
        policy: match cfg.scheduler_type.as_str() {
            "sched/builtin" => sched::Policy::Fcfs,
            "sched/easy" => sched::Policy::Easy,
            _ => sched::Policy::Backfill,
        },
        bf_window: p.bf_window.unwrap_or(d.bf_window),
        bf_resolution: p.bf_resolution.unwrap_or(d.bf_resolution),
        bf_max_job_test: p.bf_max_job_test.or(d.bf_max_job_test),
        bf_max_job_user: p.bf_max_job_user.filter(|n| *n > 0),
        bf_job_part_count_reserve: match p.bf_job_part_count_reserve {
            Some(0) => None,
            Some(n) => Some(n),
            None => d.bf_job_part_count_reserve,
        },
        bf_age_reserve: match p.bf_age_reserve {
            Some(0) => None,
            Some(n) => Some(n),
            None => d.bf_age_reserve,
        },
        bf_slowdown_reserve: match p.bf_slowdown_reserve {
            Some(0) => None,
            Some(n) => Some(n),
            None => d.bf_slowdown_reserve,
        },
        bf_slowdown_reserve_width: p
            .bf_slowdown_reserve_width
            .unwrap_or(d.bf_slowdown_reserve_width),
        bf_order: match p.bf_order_shortest {
            Some(true) => sched::BackfillOrder::Shortest,
            Some(false) => sched::BackfillOrder::Priority,
            None => d.bf_order,
        },
        bf_plan: match p.bf_plan_pool {
            Some(true) => sched::PlanOn::Pool,
            Some(false) => sched::PlanOn::Nodes,
            None => d.bf_plan,
        },
        bf_continue: p.bf_continue,
        bf_interval: p.bf_interval.unwrap_or(d.bf_interval),
        default_queue_depth: p.default_queue_depth.unwrap_or(d.default_queue_depth),
        sched_interval: p.sched_interval.unwrap_or(d.sched_interval),
    }
}

impl Engine {
    /// Builds the tables from slurm.conf.
    pub fn new(cfg: &conf::Config, now: Timestamp) -> Engine {
        let settings = Settings::from_config(cfg);
        let mut nodes = Vec::new();
        let mut node_by_name = BTreeMap::new();
        for (i, nc) in cfg.nodes.iter().enumerate() {
            node_by_name.insert(nc.name.clone(), NodeIdx(i as u32));
            nodes.push(nodes::new_node(nc, cfg, &settings));
        }
        let mut parts = Vec::new();
        for pc in &cfg.partitions {
            let members: Vec<NodeIdx> = pc
                .nodes
                .iter()
                .filter_map(|n| node_by_name.get(n).copied())
                .collect();
            for m in &members {
                nodes[m.0 as usize].partitions.push(pc.name.clone());
            }
            parts.push(Partition {
                conf: pc.clone(),
                nodes: members,
            });
        }
        let topo = topology::build(cfg, &node_by_name);
        let part_views = views::part_views(&parts, &settings, &topo).into();
        let part_sizes = parts.iter().map(|p| views::part_size(p, &nodes)).collect();
        Engine {
            cfg: Arc::new(cfg.clone()),
            parts_changed: false,
            next_job_id: settings.first_job_id,
            settings,
            nodes: node_table::NodeTable::new(nodes),
            node_by_name,
            parts,
            part_views,
            part_sizes,
            jobs: queue::JobTable::default(),
            n_submitted: 0,
            submit_tokens: tokens::SubmitTokens::default(),
            resvs: resv::Resvs::default(),
            resv_now: now,
            switch_checked: now,
            outbox: Vec::new(),
            boot_time: now,
            sched_dirty: true,
            deadlines: deadlines::Deadlines::default(),
            assoc: None,
            usage: BTreeMap::new(),
            prio_last_calc: now,
            env_pool: BTreeSet::new(),
            script_pool: BTreeSet::new(),
            empty_env: proto::Env::default(),
            desc_pool: BTreeMap::new(),
            array_tasks: BTreeMap::new(),
            finished: BTreeMap::new(),
            dep_wake: None,
            sched_cfg: sched_config(cfg),
            plans: BTreeMap::new(),
            node_view_cache: Vec::new(),
            fit_memo: BTreeMap::new(),
            view_hint: None,
            views_plain: false,
            pass_cache: sched::PassCache::default(),
            preempt_suspended: Vec::new(),
            holding: BTreeMap::new(),
            alloc_versions: 0,
            may_depend: false,
            may_complete: false,
            due_buf: Vec::new(),
            prefix_bufs: partial::PrefixBufs::default(),
            queue: queue::Queue::default(),
            request_cache: std::collections::HashMap::default(),
            running_changed: BTreeSet::new(),
            running_all: true,
            may_resume: false,
            utc_offset: 0,
            exempt_wake: None,
            depth_wake: None,
            any_reboot: false,
            whole_queue_pass: false,
            simulated: false,
            mail_seen: BTreeMap::new(),
            fresh: None,
            last_order_key: None,
            heads: Vec::new(),
            full_passes: false,
            prefix_passes_off: false,
            walk_passes_off: false,
            prefix_min_left_out: partial::PREFIX_MIN_LEFT_OUT,
            freed: false,
            purged_since_prune: 0,
            show_config: None,
            pass_stats: stats::PassStats::default(),
        }
    }

    /// The scheduler settings in force.
    pub fn sched_config(&self) -> &sched::SchedConfig {
        &self.sched_cfg
    }

    /// Replaces the scheduler settings (the simulator's policy switch).
    pub fn set_sched_config(&mut self, cfg: sched::SchedConfig) {
        self.sched_cfg = cfg;
        self.touch();
    }

    /// The last pass's planned start of a pending job, and its nodes.
    pub fn planned(&self, id: JobId) -> Option<&sched::Planned> {
        self.plans.get(&id)
    }

    /// Every planned start of the last pass, by job.
    pub fn plans(&self) -> &BTreeMap<JobId, sched::Planned> {
        &self.plans
    }

    /// The pooled copy of `env`, so identical environments are stored once.
    pub(crate) fn intern_env(&mut self, env: proto::Env) -> proto::Env {
        if let Some(found) = self.env_pool.get(&env) {
            return found.clone();
        }
        self.env_pool.insert(env.clone());
        env
    }

    /// The pooled copy of a script.
    pub(crate) fn intern_script(&mut self, script: Arc<str>) -> Arc<str> {
        if let Some(found) = self.script_pool.get(&*script) {
            return found.clone();
        }
        self.script_pool.insert(script.clone());
        script
    }

    /// The pooled copy of a job description (without script and
    /// environment, which are pooled on their own).
    pub(crate) fn intern_desc(&mut self, desc: Arc<JobDesc>) -> Arc<JobDesc> {
        use std::hash::{Hash, Hasher};
        // A fixed hash: the pool's layout never depends on the run.
        let mut h = model::hash::WordHasher::default();
        desc.hash(&mut h);
        let h = h.finish();
        let mut next = 0;
        for ((_, k), d) in self.desc_pool.range((h, 0)..=(h, u32::MAX)) {
            if *d == desc {
                return d.clone();
            }
            next = k + 1;
        }
        self.desc_pool.insert((h, next), desc.clone());
        desc
    }

    /// Forgets pooled values no job uses any more.
    fn prune_pools(&mut self) {
        self.env_pool.retain(|e| Arc::strong_count(e) > 1);
        self.script_pool.retain(|s| Arc::strong_count(s) > 1);
        self.desc_pool.retain(|_, d| Arc::strong_count(d) > 1);
    }

    /// Records that the state changed: the next scheduling pass must look,
    /// and deadlines must be recomputed.
    pub(crate) fn touch(&mut self) {
        self.sched_dirty = true;
        self.running_all = true;
        self.fresh = None;
    }

    /// With `on`, every pass looks at every job, even after submissions
    /// only: for checking that the shortcut schedules the same.
    pub fn set_full_passes(&mut self, on: bool) {
        self.full_passes = on;
    }

    /// `touch` for a plain submission: the next pass may try only the new
    /// jobs (and the planned ones) when nothing else changed.
    /// Called before the job enters the job table.
    pub(crate) fn touch_submit(&mut self, id: JobId) {
        self.sched_dirty = true;
        if let Some(f) = &mut self.fresh {
            f.push(id);
        }
    }

    /// For the simulator: emit no `Command::AcctRecord`s and leave the
    /// environment out of `Command::LaunchBatch` (the simulator reads only
    /// which job starts where). Scheduling is unchanged.
    pub fn set_simulated(&mut self, on: bool) {
        self.simulated = on;
    }

    /// The local time's offset from UTC in seconds (east positive), for
    /// what happens at local midnight (PriorityUsageResetPeriod). The
    /// engine reads no clock or time zone itself; 0 (UTC) until set.
    pub fn set_utc_offset(&mut self, secs: i64) {
        self.utc_offset = secs;
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// When the controller started.
    pub fn boot_time(&self) -> Timestamp {
        self.boot_time
    }

    /// Effects queued since the last call.
    pub fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.outbox)
    }

    /// A job by id.
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.jobs.get(&id).map(|j| &**j)
    }

    /// A node by name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.node_by_name
            .get(name)
            .map(|i| &self.nodes[i.0 as usize])
    }

    /// (name, `host:port`) of every node daemon that has registered: the
    /// ones the controller pings and tells to stop.
    pub fn registered_daemons(&self) -> Vec<(String, String)> {
        self.nodes
            .iter()
            .filter(|n| n.registered)
            .map(|n| (n.conf.name.clone(), n.daemon_addr.clone()))
            .collect()
    }

    /// True when `who` may administer the cluster (root or SlurmUser).
    pub fn is_admin(&self, who: &Identity) -> bool {
        who.uid == 0 || who.user == self.settings.slurm_user
    }

    /// True when `who` may change anything on the controller: root,
    /// SlurmUser, or AdminLevel Administrator in the association database
    /// (Slurm's "as if they were the SlurmUser or root"): nodes,
    /// partitions, reboots, suspend and resume.
    pub fn is_super(&self, who: &Identity) -> bool {
        self.is_admin(who)
            || self.assoc_tables().is_some_and(|t| {
                t.user(&who.user)
                    .is_some_and(|u| u.admin_level >= AdminLevel::Administrator)
            })
    }

    /// Whether `who` may act on `job`: its owner, or an operator
    /// ([`Engine::is_operator`]: AdminLevel Operator and above act on
    /// every user's jobs, as Slurm's operators do).
    fn may_modify(&self, who: &Identity, job: &Job) -> bool {
        who.uid == job.desc.uid || self.is_operator(who)
    }

    /// The earliest time something must happen without an outside event
    /// (a time limit, a `--signal` warning, a begin time, a purge).
    pub fn next_wakeup(&mut self) -> Option<Timestamp> {
        self.sync_deadlines();
        min_time(self.deadlines.first().into_iter().chain(self.global_wake()))
    }

    /// Brings the deadline index up to date with the jobs changed since.
    fn sync_deadlines(&mut self) {
        let min_age = i64::from(self.settings.min_job_age);
        self.deadlines.update(&mut self.jobs, min_age);
    }

    /// The earliest deadline that is no job's own: dependencies, priority
    /// recalculation, exemptions, node timeouts, the pass over the whole
    /// queue after an FCFS pass stopped at its depth.
    fn global_wake(&self) -> Option<Timestamp> {
        let own = [
            self.dep_wake,
            self.priority_due(),
            self.exempt_wake,
            self.depth_wake,
            self.resv_wake(),
            self.reboot_wake(),
            self.switch_wake(self.switch_checked),
        ];
        let timeout = self.settings.slurmd_timeout as i64;
        let watched: &[Node] = if timeout > 0 { &self.nodes } else { &[] };
        let nodes = watched
            .iter()
            .filter(|n| n.state.base != NodeBase::Down)
            .filter_map(|n| n.last_response.map(|last| last + timeout));
        min_time(own.into_iter().flatten().chain(nodes))
    }

    /// Acts on the passage of time: `--signal` warnings, time limits, begin
    /// times, the purge of old finished jobs and the periodic pass over the
    /// whole queue (`depth_wake`). Call `schedule` after.
    pub fn on_timer(&mut self, now: Timestamp) {
        // Nothing is due before the earliest deadline.
        if self.next_wakeup().is_none_or(|due| now < due) {
            return;
        }
        let switch_ended = self.switch_wait_ended(now);
        let mut other = switch_ended
            || self.settings.slurmd_timeout > 0
            || self.priority_due().is_some_and(|due| now >= due)
            || self.exempt_wake.is_some_and(|t| now >= t)
            || self.dep_wake.is_some_and(|t| now >= t);
        // The list the last timer used, kept.
        let mut ids = std::mem::take(&mut self.due_buf);
        self.deadlines.due(now, &mut ids);
        let purges_only = !other
            && ids.iter().all(|id| {
                self.jobs
                    .get(id)
                    .is_some_and(|j| !matches!(j.state, JobState::Running | JobState::Pending))
            });
        if purges_only {
            // Purging finished jobs changes nothing a pass looks at: a pass
            // after submissions and job ends may still be the short one
            // (`schedule`).
            self.sched_dirty = true;
        } else {
            self.touch();
        }
        if self.depth_wake.is_some_and(|t| now >= t) {
            // Nothing changed but the depth: a pass after submissions and
            // job ends may still be the short one.
            self.depth_wake = None;
            self.whole_queue_pass = true;
            self.sched_dirty = true;
        }
        self.check_node_timeouts(now);
        self.priority_tick(now);
        if other {
            // Node timeouts and priorities may have changed jobs: look again.
            self.sync_deadlines();
            self.deadlines.due(now, &mut ids);
        }
        // Only the jobs with something due now are looked at (nothing done
        // to one job here makes another one due), in job id order.
        let mut purged = 0;
        for &id in &ids {
            let job = &self.jobs[&id];
            match job.state {
                JobState::Running => {
                    if job
                        .steps
                        .iter()
                        .any(|s| s.limit_end().is_some_and(|e| now >= e))
                    {
                        other = true;
                        self.end_timed_out_steps(id, now);
                    }
                    let job = &self.jobs[&id];
                    let Some(end) = job.limit_end() else {
                        continue;
                    };
                    if let (Some(sig), false) = (job.desc.signal.clone(), job.warned) {
                        if now >= end - sig.secs as i64 && now < end {
                            other = true;
                            self.jobs.get_mut(&id).expect("job").warned = true;
                            self.signal_job_nodes(id, sig.signal, sig.scope());
                        }
                    }
                    let job = &self.jobs[&id];
                    if let Some(event) = limit_mail_due(job, now) {
                        let j = self.jobs.get_mut(&id).expect("job");
                        j.limit_mailed |= limit_shares_passed(j, now);
                        self.mail_event(id, event);
                    }
                    let job = &self.jobs[&id];
                    if now >= end {
                        other = true;
                        if job.desc.mail_type & model::mail::TIME_LIMIT != 0 {
                            let run = job.run_secs(now);
                            self.mail_event(
                                id,
                                model::mail::Event::ReachedLimit { percent: 100, run },
                            );
                        }
                        self.end_job(id, JobState::Timeout, now);
                    }
                }
                JobState::Pending => {
                    let begins = job.desc.begin_time.is_some_and(|b| now >= b);
                    if begins && job.reason == PendingReason::BeginTime {
                        other = true;
                    }
                    if deadline_due(job).is_some_and(|d| now >= d) {
                        other = true;
                        self.end_job(id, JobState::Deadline, now);
                    }
                }
                _ => {
                    if let Some(end) = job.end_time {
                        if !job.completing && now >= end + self.settings.min_job_age as i64 {
                            if let Some(gone) = self.jobs.remove(&id) {
                                self.accrue_final(&gone);
                                self.unindex(&gone);
                                self.remember_outcome(&gone);
                            }
                            purged += 1;
                        }
                    }
                }
            }
        }
        debug_assert!(!purges_only || !other, "only purges were due");
        self.due_buf = ids;
        // Pooled values outlive their last job a while: pruning walks every
        // pool, so it waits until as many jobs were purged as there are
        // left (a pool is then at most about twice what is in use).
        self.purged_since_prune += purged;
        if self.purged_since_prune > 0 && self.purged_since_prune >= self.jobs.len().max(64) {
            self.purged_since_prune = 0;
            self.prune_pools();
        }
    }

    /// Checks the tables' internal consistency; returns what is wrong.
    pub fn check_invariants(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.submit_tokens.consistent() {
            problems.push("the submission tokens' table and order disagree".to_string());
        }
        let mut cpus = vec![0u32; self.nodes.len()];
        let mut mem = vec![0u64; self.nodes.len()];
        let mut cpu_ids = vec![BTreeSet::<u32>::new(); self.nodes.len()];
        for job in self.jobs.values() {
            let holds = job.alloc.is_some();
            if holds != (job.state == JobState::Running || job.completing) {
                problems.push(format!(
                    "job {} in state {:?} (completing {}) has allocation {}",
                    job.id, job.state, job.completing, holds
                ));
            }
            if job.completing && !self.may_complete {
                problems.push(format!("job {} is completing unflagged", job.id));
            }
            if let Some(a) = &job.alloc {
                for na in &a.nodes {
                    cpus[na.node.0 as usize] += na.cpus;
                    mem[na.node.0 as usize] += na.mem;
                    for id in &na.cpu_ids {
                        if !cpu_ids[na.node.0 as usize].insert(*id) {
                            problems.push(format!(
                                "CPU {id} of node {} is held by two jobs (one is {})",
                                self.nodes[na.node.0 as usize].conf.name, job.id
                            ));
                        }
                    }
                    // CR_Core: a job holds every thread of each core it
                    // has a thread of, so no core is shared.
                    let node = &self.nodes[na.node.0 as usize];
                    let t = node_threads(self.settings.whole_cores, &node.conf);
                    if t > 1
                        && !na.cpu_ids.is_empty()
                        && na.cpu_ids.iter().any(|id| {
                            (id / t * t..id / t * t + t).any(|x| !na.cpu_ids.contains(&x))
                        })
                    {
                        problems.push(format!(
                            "job {} holds part of a core of node {}: {:?}",
                            job.id, node.conf.name, na.cpu_ids
                        ));
                    }
                }
            }
        }
        for (name, used) in self.licenses_used() {
            let total = self.settings.licenses.get(&name).copied().unwrap_or(0);
            if used > total {
                problems.push(format!("license {name}: {used} held, {total} configured"));
            }
        }
        problems.extend(self.queue.problems(&self.jobs));
        let holders: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.alloc.is_some())
            .map(|j| j.id)
            .collect();
        if !holders.iter().eq(self.holding.keys()) {
            problems.push(format!(
                "jobs holding allocations {:?}, but the index says {:?}",
                holders,
                self.holding.keys().collect::<Vec<_>>()
            ));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.alloc_cpus != cpus[i] || n.alloc_mem != mem[i] {
                problems.push(format!(
                    "node {} accounts {} cpus / {} MB but jobs hold {} / {}",
                    n.conf.name, n.alloc_cpus, n.alloc_mem, cpus[i], mem[i]
                ));
            }
            if n.alloc_cpus > n.conf.cpus {
                problems.push(format!("node {} over-allocated", n.conf.name));
            }
            if n.cpu_ids_in_use != cpu_ids[i] {
                problems.push(format!(
                    "node {} holds CPU ids {:?} but jobs hold {:?}",
                    n.conf.name, n.cpu_ids_in_use, cpu_ids[i]
                ));
            }
        }
        let min_age = i64::from(self.settings.min_job_age);
        problems.extend(self.deadlines.problems(&self.jobs, min_age));
        problems
    }

    fn refresh_node_state(&mut self, idx: NodeIdx) {
        let completing = self.may_complete && {
            let n = &self.nodes[idx.0 as usize];
            n.jobs
                .iter()
                .any(|j| self.jobs.get(j).is_some_and(|j| j.completing))
        };
        let n = &mut self.nodes[idx.0 as usize];
        n.state.completing = completing;
        if matches!(
            n.state.base,
            NodeBase::Idle | NodeBase::Mixed | NodeBase::Allocated
        ) {
            n.state.base = if n.alloc_cpus == 0 {
                NodeBase::Idle
            } else if n.alloc_cpus >= n.conf.cpus {
                NodeBase::Allocated
            } else {
                NodeBase::Mixed
            };
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_arrays;
#[cfg(test)]
mod tests_cancel;
#[cfg(test)]
mod tests_ctldscripts;
#[cfg(test)]
mod tests_licenses;
#[cfg(test)]
mod tests_preempt;
#[cfg(test)]
mod tests_reboot;
#[cfg(test)]
mod tests_reconf;
#[cfg(test)]
mod tests_resv;
#[cfg(test)]
mod tests_smt;
#[cfg(test)]
mod tests_steps;
#[cfg(test)]
mod tests_tokens;
#[cfg(test)]
mod tests_topo;
#[cfg(test)]
mod tests_xid;

/// A pending job's request as `Engine::request_cache` keeps it, with what
/// `sched::PassCache::cannot_start_as` reads of it.
#[derive(Clone, Debug)]
pub(crate) struct KeptRequest {
    /// Boxed: a walk over a deep queue looks up many kept requests only
    /// for their probe, and the map's entries stay small (a third of the
    /// size) so that more of them share the cache.
    pub(crate) req: Box<sched::JobRequest>,
    pub(crate) probe: sched::Probe,
}

/// Hashes a job id with one multiplication (Fibonacci hashing): the ids of
/// `Engine::request_cache` are small sequential numbers, not chosen by an
/// adversary, and a pass looks up hundreds of them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// `IdHash`'s hasher.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
