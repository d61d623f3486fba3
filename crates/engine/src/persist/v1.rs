//! Version 1 of the snapshot: the on-disk shape of the engine's state as
//! every release up to issue 36 wrote it (MessagePack or JSON with field
//! names). These types are made for the disk and converted to and from the
//! engine's (`crate::Job`, `crate::Node`), so that an engine field can change
//! without changing what a snapshot holds: a change to this shape is a new
//! version beside this one, and this one stays readable.
//!
//! The scheduler's and the configuration's types a snapshot holds
//! (`sched::Allocation`, `GresPool`, `conf::NodeConf`) have their mirrors
//! here too. The wire payloads it holds (`proto`'s `JobDesc`, `StepUsage`,
//! `NodeRegistration` and `PriorityFactors`) are written through the
//! mirrors the journal's records use too (`payload_v1`, re-exported
//! here), owned (`'static`): a field added to a wire type does not change
//! a snapshot until it is added there. Each distinct description is
//! copied into its mirror once per snapshot, not once per job.
//!
//! Kept as they are, because each is a vocabulary value whose encoding is
//! itself a stable on-disk form: `model`'s values (ids, states, units,
//! `array::TaskSet`, `depend::Dependency`), `sched::NodeIdx` (a plain
//! index), `proto::Distribution` (a plain enum of names) and
//! `proto::acctdb::AcctTables` (the association database, whose format
//! `sacctmgr` and the accounting store already pin), as `journal_v1`
//! keeps them.
//!
//! ```text
//! Engine --persistent_state--> Snapshot --number_descs--> bytes (ctld)
//! bytes --> Snapshot --resolve_descs--> Engine::restore
//! ```

use model::array::TaskSet;
use model::{ExitCode, JobId, JobState, NodeState, PendingReason, TimeLimit, Timestamp};
use proto::Distribution;
use sched::NodeIdx;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

pub use super::payload_v1::{JobDesc, NodeRegistration, PriorityFactors, SignalSpec, StepUsage};

/// The engine's state as stored in a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// Node names in configuration order, to check the configuration still matches.
    pub node_names: Vec<String>,
    /// Partition names in configuration order.
    pub partition_names: Vec<String>,
    /// Nodes with their dynamic state.
    pub nodes: Vec<Node>,
    /// Every job still held.
    pub jobs: Vec<Job>,
    /// Each distinct job description once, in the order the jobs first
    /// use them. Not part of the state's own encoding: a snapshot writes
    /// them ahead of it, and its jobs by number ([`Snapshot::number_descs`]).
    #[serde(skip)]
    pub descs: Vec<Arc<JobDesc<'static>>>,
    /// Each distinct environment once.
    pub envs: Vec<Arc<Vec<(String, String)>>>,
    /// Each distinct script once.
    pub scripts: Vec<Arc<str>>,
    /// For each job (same order as `jobs`), its index in `envs` and `scripts`.
    pub job_text: Vec<(u32, u32)>,
    /// Next job id to give.
    pub next_job_id: u32,
    /// Submissions so far (priority tie-break).
    pub n_submitted: u32,
    /// How purged jobs ended, for dependencies on them.
    #[serde(default)]
    pub outcomes: Vec<(JobId, Outcome)>,
    /// The association database last pushed by the controller.
    #[serde(default)]
    pub assoc_tables: Option<proto::acctdb::AcctTables>,
    /// Fair-share usage per (account, user), decayed.
    #[serde(default)]
    pub usage: Vec<(String, String, f64)>,
    /// When usage was last accrued (PriorityCalcPeriod).
    #[serde(default)]
    pub prio_last_calc: Timestamp,
    /// The recent submissions' tokens, oldest first (`tokens`).
    #[serde(default)]
    pub submit_tokens: Vec<crate::SavedToken>,
    /// The partition table as `scontrol update/create/delete partition`
    /// left it; empty (and not written) while the partitions are
    /// slurm.conf's. Read back with `slurmctld -R` (`muster ctld -R`),
    /// and for partitions created at runtime that jobs still name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<Partition>,
    /// Advance reservations (absent in files written before them, and
    /// left out where none, so such snapshots keep their bytes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<super::resv_v1::Resv>,
    /// The number the last unnamed reservation got (left out where 0).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub resv_next_id: u32,
}

/// For `skip_serializing_if`.
fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// A partition's definition (`conf::PartitionConf`'s mirror).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    /// `PartitionName`.
    pub name: String,
    /// `Nodes`, expanded.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `Default=YES`.
    #[serde(default)]
    pub default: bool,
    /// `MaxTime`.
    pub max_time: TimeLimit,
    /// `DefaultTime`.
    #[serde(default)]
    pub default_time: Option<TimeLimit>,
    /// `MaxNodes`; `None` is UNLIMITED.
    #[serde(default)]
    pub max_nodes: Option<u32>,
    /// `MinNodes`.
    #[serde(default)]
    pub min_nodes: u32,
    /// `State`.
    pub state: String,
    /// `PriorityTier`.
    pub priority_tier: u32,
    /// `PriorityJobFactor`.
    pub priority_job_factor: u32,
    /// `OverSubscribe`.
    pub oversubscribe: String,
    /// `AllowAccounts`; `None` is ALL.
    #[serde(default)]
    pub allow_accounts: Option<Vec<String>>,
    /// `AllowGroups`; `None` is ALL.
    #[serde(default)]
    pub allow_groups: Option<Vec<String>>,
    /// `DefMemPerCPU`.
    #[serde(default)]
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode`.
    #[serde(default)]
    pub max_mem_per_node: Option<u64>,
    /// Other keys as text, by lowercase key: (key as written, value).
    #[serde(default)]
    pub other: BTreeMap<String, (String, String)>,
    /// Its line in slurm.conf; 0 for one `scontrol create partition` made.
    #[serde(default)]
    pub line: usize,
}

impl From<&conf::PartitionConf> for Partition {
    fn from(p: &conf::PartitionConf) -> Partition {
        Partition {
            name: p.name.clone(),
            nodes: p.nodes.clone(),
            default: p.default,
            max_time: p.max_time,
            default_time: p.default_time,
            max_nodes: p.max_nodes,
            min_nodes: p.min_nodes,
            state: p.state.clone(),
            priority_tier: p.priority_tier,
            priority_job_factor: p.priority_job_factor,
            oversubscribe: p.oversubscribe.clone(),
            allow_accounts: p.allow_accounts.clone(),
            allow_groups: p.allow_groups.clone(),
            def_mem_per_cpu: p.def_mem_per_cpu,
            max_mem_per_node: p.max_mem_per_node,
            other: p.other.clone(),
            line: p.line,
        }
    }
}

impl From<Partition> for conf::PartitionConf {
    fn from(p: Partition) -> conf::PartitionConf {
        conf::PartitionConf {
            name: p.name,
            nodes: p.nodes,
            default: p.default,
            max_time: p.max_time,
            default_time: p.default_time,
            max_nodes: p.max_nodes,
            min_nodes: p.min_nodes,
            state: p.state,
            priority_tier: p.priority_tier,
            priority_job_factor: p.priority_job_factor,
            oversubscribe: p.oversubscribe,
            allow_accounts: p.allow_accounts,
            allow_groups: p.allow_groups,
            def_mem_per_cpu: p.def_mem_per_cpu,
            max_mem_per_node: p.max_mem_per_node,
            other: p.other,
            line: p.line,
        }
    }
}

/// A job's description refers to a number that is not in the snapshot's
/// table of descriptions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job description {number} is not in the snapshot's table")]
pub struct UnknownDesc {
    /// The number.
    pub number: u32,
}

impl Snapshot {
    /// Leaves out the CPU ids of every allocation and step: the state as
    /// builds before per-CPU allocation wrote it (those builds' files are
    /// checked byte for byte against what this build writes, less them).
    pub fn forget_cpu_ids(&mut self) {
        for job in &mut self.jobs {
            let allocs = job
                .alloc
                .iter_mut()
                .chain(job.suspend.iter_mut().map(|s| &mut s.alloc));
            for alloc in allocs {
                for node in &mut alloc.nodes {
                    node.cpu_ids.clear();
                }
            }
            for step in &mut job.steps {
                step.cpu_ids.clear();
            }
        }
    }

    /// Gives each job's description as its index in `descs` instead of in
    /// full, as a snapshot writes them after the table: a queue of 100,000
    /// jobs from one script holds one description, not 100,000 copies to
    /// write, read and pool again. A description missing from `descs` stays
    /// in full.
    pub fn number_descs(&mut self) {
        let numbers: HashMap<*const JobDesc<'static>, u32> = self
            .descs
            .iter()
            .enumerate()
            .map(|(i, d)| (Arc::as_ptr(d), i as u32))
            .collect();
        for job in &mut self.jobs {
            if let Desc::Full(d) = &job.desc {
                if let Some(&n) = numbers.get(&Arc::as_ptr(d)) {
                    job.desc = Desc::Number(n);
                }
            }
        }
    }

    /// Gives each job's description in full again, from `descs` (the jobs
    /// that share a number share one copy).
    pub fn resolve_descs(&mut self) -> Result<(), UnknownDesc> {
        for job in &mut self.jobs {
            if let Desc::Number(n) = job.desc {
                job.desc = Desc::Number(n).resolve(&self.descs).map(Desc::Full)?;
            }
        }
        Ok(())
    }
}

/// A job's description in a snapshot: its number in the snapshot's table,
/// or in full (older snapshots, and the state's other encodings).
#[derive(Clone, Debug)]
pub enum Desc {
    /// Its index in [`Snapshot::descs`].
    Number(u32),
    /// The description itself.
    Full(Arc<JobDesc<'static>>),
}

impl Desc {
    /// The description, from `table` when given by number.
    pub fn resolve(
        self,
        table: &[Arc<JobDesc<'static>>],
    ) -> Result<Arc<JobDesc<'static>>, UnknownDesc> {
        match self {
            Desc::Full(d) => Ok(d),
            Desc::Number(n) => table
                .get(n as usize)
                .cloned()
                .ok_or(UnknownDesc { number: n }),
        }
    }
}

impl Serialize for Desc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Desc::Number(n) => s.serialize_u32(*n),
            Desc::Full(d) => (**d).serialize(s),
        }
    }
}

struct DescVisitor;

impl<'de> Visitor<'de> for DescVisitor {
    type Value = Desc;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a job description or its number in the snapshot's table")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Desc, E> {
        u32::try_from(n).map(Desc::Number).map_err(|_| {
            E::custom(format_args!(
                "job description {n} is not in the snapshot's table"
            ))
        })
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Desc, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::custom("a negative job description number")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Desc, A::Error> {
        JobDesc::<'static>::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|d| Desc::Full(Arc::new(d)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Desc, A::Error> {
        JobDesc::<'static>::deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(|d| Desc::Full(Arc::new(d)))
    }
}

impl<'de> Deserialize<'de> for Desc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Desc, D::Error> {
        d.deserialize_any(DescVisitor)
    }
}

/// A job in a snapshot (its script and environment are in the snapshot's
/// tables, `Snapshot::job_text`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// Its submission: in a snapshot, its number in the table written
    /// ahead of the state; in full in older snapshots and in the
    /// state's other encodings.
    pub desc: Desc,
    /// Base state.
    pub state: JobState,
    /// Processes still being cleaned up on its batch host.
    pub completing: bool,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    /// End time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<Allocation>,
    /// The nodes it last ran on (kept after it ends, for `squeue`/`scontrol`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran_on: Vec<NodeIdx>,
    /// CPUs it had on each of those nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran_cpus: Vec<u32>,
    /// Exit status.
    pub exit: ExitCode,
    /// Times requeued.
    pub restarts: u32,
    /// Requeue allowed.
    pub requeue: bool,
    /// The `--signal` warning has been sent.
    pub warned: bool,
    /// Resolved stdout path.
    pub stdout: String,
    /// Resolved stderr path.
    pub stderr: String,
    /// Last scheduling pass that looked at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sched_eval: Option<Timestamp>,
    /// Held, and by whom (user hold when true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<bool>,
    /// Priority set by an administrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_priority: Option<u32>,
    /// Who cancelled it (`CANCELLED by <uid>` in sacct).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<u32>,
    /// What its batch script used, as its node measured it (boxed: about
    /// 300 bytes that only ended jobs have, in every job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_usage: Option<Box<StepUsage<'static>>>,
    /// What its extern step used, merged over the nodes that reported
    /// (boxed, as `batch_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extern_usage: Option<Box<StepUsage<'static>>>,
    /// Its weighted priority factors when multifactor priority last set
    /// its priority (sprio). Boxed: 88 bytes that priority/basic (the
    /// default) never sets, in every job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio_factors: Option<Box<PriorityFactors>>,
    /// Its place in a job array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<ArrayPart>,
    /// The conditions of its dependency still to be met (satisfied ones
    /// are dropped, as Slurm does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depend: Option<model::depend::Dependency>,
    /// Where its dependency stands.
    #[serde(default)]
    pub dep_status: DepStatus,
    /// Its steps (srun), in creation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// The id the next step gets.
    #[serde(default)]
    pub next_step_id: u32,
    /// While SUSPENDED: its shares and who suspended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<Box<Suspension>>,
    /// Seconds it has spent suspended in this run (not counted toward its
    /// time limit).
    #[serde(default)]
    pub suspended_secs: i64,
    /// When it was last suspended or resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_time: Option<Timestamp>,
    /// Seconds it ran before its last suspension.
    #[serde(default)]
    pub secs_pre_suspend: i64,
    /// Requeued by preemption for this job: it does not start again while
    /// that job still waits for the resources it gave up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_by: Option<JobId>,
    /// Running while `PrologSlurmctld` runs (Slurm's CONFIGURING flag).
    /// (Added after `preempted_by`.) Left out when false, so that a
    /// snapshot of jobs without it is written as before it existed (the
    /// release fixtures compare byte for byte); MessagePack with names.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub configuring: bool,
    /// A step ran in a pyxis container (absent before them, and when
    /// false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub containers: bool,
}

/// A node in a snapshot. Only its dynamic state is read back: the rest
/// comes from slurm.conf and the jobs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Node {
    /// Its configuration.
    pub conf: NodeConf,
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
    /// GRES pools with their use.
    pub gres: Vec<GresPool>,
    /// Jobs holding resources here.
    pub jobs: BTreeSet<JobId>,
    /// An exclusive job runs here.
    pub exclusive_in_use: bool,
    /// Partitions containing it.
    pub partitions: Vec<String>,
    /// What it last reported.
    pub report: Option<NodeRegistration<'static>>,
    /// Last time a job ran here.
    pub last_busy: Option<Timestamp>,
    /// Last time its daemon answered (registration or ping).
    pub last_response: Option<Timestamp>,
    /// The reboot it waits for or is in (`scontrol reboot`). Absent in
    /// files of builds before it, and left out where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot: Option<Reboot>,
}

/// A node's reboot in a snapshot (`crate::reboot::Reboot`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reboot {
    /// `ASAP`.
    pub asap: bool,
    /// `nextstate=`: `RESUME`, `DOWN`, or None.
    pub next_state: Option<String>,
    /// When it was issued; None while requested.
    pub issued: Option<Timestamp>,
    /// The node's boot id when it was issued.
    #[serde(default)]
    pub boot_id: String,
}

impl From<&crate::reboot::Reboot> for Reboot {
    fn from(r: &crate::reboot::Reboot) -> Reboot {
        Reboot {
            asap: r.asap,
            next_state: r.next_state.map(|s| s.as_slurm_str().to_string()),
            issued: r.issued,
            boot_id: r.boot_id.clone(),
        }
    }
}

impl From<Reboot> for crate::reboot::Reboot {
    fn from(r: Reboot) -> crate::reboot::Reboot {
        crate::reboot::Reboot {
            asap: r.asap,
            next_state: match r.next_state.as_deref() {
                Some("RESUME") => Some(proto::RebootNextState::Resume),
                Some("DOWN") => Some(proto::RebootNextState::Down),
                _ => None,
            },
            issued: r.issued,
            boot_id: r.boot_id,
        }
    }
}

impl Job {
    /// The snapshot's job for the engine's `j`, whose description is
    /// `desc` (its copy in the snapshot's table, [`Snapshot::descs`]).
    pub(crate) fn from_engine(j: &crate::Job, desc: Arc<JobDesc<'static>>) -> Job {
        // Every field named: a field added to the engine's type must be
        // given its place on disk (or left out) here.
        let crate::Job {
            id,
            desc: _,
            state,
            completing,
            configuring,
            reason,
            priority,
            base_priority,
            submit_time,
            eligible_time,
            start_time,
            end_time,
            partitions,
            partition,
            time_limit,
            min_nodes,
            max_nodes,
            ntasks,
            alloc,
            ran_on,
            ran_cpus,
            exit,
            restarts,
            requeue,
            warned,
            stdout,
            stderr,
            last_sched_eval,
            held,
            admin_priority,
            cancelled_by,
            batch_usage,
            extern_usage,
            prio_factors,
            array,
            depend,
            dep_status,
            steps,
            next_step_id,
            suspend,
            suspended_secs,
            suspend_time,
            secs_pre_suspend,
            preempted_by,
            containers,
            script: _,
            env: _,
            limit_mailed: _,
        } = j;
        Job {
            desc: Desc::Full(desc),
            id: *id,
            state: *state,
            completing: *completing,
            configuring: *configuring,
            reason: *reason,
            priority: *priority,
            base_priority: *base_priority,
            submit_time: *submit_time,
            eligible_time: *eligible_time,
            start_time: *start_time,
            end_time: *end_time,
            partitions: partitions.clone(),
            partition: *partition,
            time_limit: *time_limit,
            min_nodes: *min_nodes,
            max_nodes: *max_nodes,
            ntasks: *ntasks,
            alloc: alloc.as_ref().map(Allocation::from),
            ran_on: ran_on.clone(),
            ran_cpus: ran_cpus.clone(),
            exit: *exit,
            restarts: *restarts,
            requeue: *requeue,
            warned: *warned,
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            last_sched_eval: *last_sched_eval,
            held: *held,
            admin_priority: *admin_priority,
            cancelled_by: *cancelled_by,
            batch_usage: batch_usage
                .as_deref()
                .map(|u| Box::new(StepUsage::from(u).into_owned())),
            extern_usage: extern_usage
                .as_deref()
                .map(|u| Box::new(StepUsage::from(u).into_owned())),
            prio_factors: prio_factors
                .as_deref()
                .map(|p| Box::new(PriorityFactors::from(p))),
            array: array.clone().map(ArrayPart::from),
            depend: depend.clone(),
            dep_status: (*dep_status).into(),
            steps: steps.iter().map(Step::from).collect(),
            next_step_id: *next_step_id,
            suspend: suspend
                .as_deref()
                .map(|s| Box::new(Suspension::from(s.clone()))),
            suspended_secs: *suspended_secs,
            suspend_time: *suspend_time,
            secs_pre_suspend: *secs_pre_suspend,
            preempted_by: *preempted_by,
            containers: *containers,
        }
    }
}

impl Job {
    /// The engine's job, with its description (resolved: see
    /// [`Snapshot::resolve_descs`]), script and environment.
    pub(crate) fn into_engine(
        self,
        desc: Arc<proto::JobDesc>,
        script: Arc<str>,
        env: Arc<Vec<(String, String)>>,
    ) -> crate::Job {
        crate::Job {
            desc,
            script,
            env,
            id: self.id,
            state: self.state,
            completing: self.completing,
            configuring: self.configuring,
            reason: self.reason,
            priority: self.priority,
            base_priority: self.base_priority,
            submit_time: self.submit_time,
            eligible_time: self.eligible_time,
            start_time: self.start_time,
            end_time: self.end_time,
            partitions: self.partitions,
            partition: self.partition,
            time_limit: self.time_limit,
            min_nodes: self.min_nodes,
            max_nodes: self.max_nodes,
            ntasks: self.ntasks,
            alloc: self.alloc.map(Into::into),
            ran_on: self.ran_on,
            ran_cpus: self.ran_cpus,
            exit: self.exit,
            restarts: self.restarts,
            requeue: self.requeue,
            warned: self.warned,
            limit_mailed: 0,
            stdout: self.stdout,
            stderr: self.stderr,
            last_sched_eval: self.last_sched_eval,
            held: self.held,
            admin_priority: self.admin_priority,
            cancelled_by: self.cancelled_by,
            batch_usage: self.batch_usage.map(|u| Box::new((*u).into())),
            extern_usage: self.extern_usage.map(|u| Box::new((*u).into())),
            prio_factors: self.prio_factors.map(|p| Box::new((*p).into())),
            array: self.array.map(crate::ArrayPart::from),
            depend: self.depend,
            dep_status: self.dep_status.into(),
            steps: self.steps.into_iter().map(crate::Step::from).collect(),
            next_step_id: self.next_step_id,
            suspend: self.suspend.map(|s| Box::new(crate::Suspension::from(*s))),
            suspended_secs: self.suspended_secs,
            suspend_time: self.suspend_time,
            secs_pre_suspend: self.secs_pre_suspend,
            preempted_by: self.preempted_by,
            containers: self.containers,
        }
    }
}

impl From<&crate::Node> for Node {
    fn from(n: &crate::Node) -> Node {
        // Every field named: a field added to the engine's type must be
        // given its place on disk (or left out) here.
        let crate::Node {
            conf,
            daemon_addr,
            port,
            state,
            registered,
            reason,
            reason_user,
            reason_time,
            alloc_cpus,
            alloc_mem,
            // Derived from the jobs' allocations when they are loaded.
            cpu_ids_in_use: _,
            gres,
            jobs,
            exclusive_in_use,
            partitions,
            report,
            last_busy,
            last_response,
            reboot,
        } = n;
        Node {
            conf: NodeConf::from(conf),
            daemon_addr: daemon_addr.clone(),
            port: *port,
            state: *state,
            registered: *registered,
            reason: reason.clone(),
            reason_user: reason_user.clone(),
            reason_time: *reason_time,
            alloc_cpus: *alloc_cpus,
            alloc_mem: *alloc_mem,
            gres: gres.iter().map(GresPool::from).collect(),
            jobs: jobs.clone(),
            exclusive_in_use: *exclusive_in_use,
            partitions: partitions.clone(),
            report: report
                .as_ref()
                .map(|r| NodeRegistration::from(r).into_owned()),
            last_busy: *last_busy,
            last_response: *last_response,
            reboot: reboot.as_ref().map(Reboot::from),
        }
    }
}

/// A step of a job in a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Step {
    /// Its id within the job.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// RUNNING, then COMPLETED, FAILED or CANCELLED.
    pub state: JobState,
    /// Its nodes, in step order.
    pub nodes: Vec<NodeIdx>,
    /// Global task ids on each node.
    pub tasks: Vec<Vec<u32>>,
    /// CPUs on each node.
    pub cpus: Vec<u32>,
    /// Memory per node (MB), as asked.
    pub mem: u64,
    /// Memory (MB) over all its nodes, as its TRES show it: what `--mem`
    /// asked for, else the job's on those nodes (srun(1) `--exact`: a step
    /// may use all of it, but does not keep it from other steps). 0 in
    /// records of older builds: `mem` per node then.
    #[serde(default)]
    pub tres_mem: u64,
    /// GPUs (device indexes) on each node that the step asked for with
    /// `--gres=gpu`/`--gpus` (empty when it asked for none and sees all
    /// of the job's): not given to another step without `--overlap`.
    #[serde(default)]
    pub gpus: Vec<Vec<u32>>,
    /// The CPU ids (the node's) it runs on, on each node. Absent in files
    /// of builds before per-CPU allocation, and left out where empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_ids: Vec<Vec<u32>>,
    /// `--overlap`: its CPUs are not its own.
    pub overlap: bool,
    /// Task layout.
    pub distribution: Distribution,
    /// Start time.
    pub start_time: Timestamp,
    /// End time.
    pub end_time: Option<Timestamp>,
    /// Time limit.
    pub time_limit: TimeLimit,
    /// srun gave the step a limit of its own (`-t`): only then does the
    /// step's limit end it (else the job's does; a suspended job's end
    /// moves, which a step's copy of the limit would not follow).
    #[serde(default)]
    pub own_limit: bool,
    /// Highest exit over the nodes reported so far.
    pub exit: ExitCode,
    /// Nodes that have not reported the step's end yet.
    pub pending: BTreeSet<NodeIdx>,
    /// Usage summed over the nodes.
    pub usage: StepUsage<'static>,
    /// `host:pid` of srun.
    pub srun: String,
    /// The container it runs in, for sacct (absent in files of builds
    /// before it was kept, and left out where there is none, so a
    /// snapshot without containers keeps the release's bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}
/// A job's place in an array, in a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArrayPart {
    /// The array's job id (`SLURM_ARRAY_JOB_ID`).
    pub array_job_id: JobId,
    /// This record's task, once it is one task.
    pub task_id: Option<u32>,
    /// Tasks still pending in this record (the array's own record only).
    pub pending: TaskSet,
    /// `%N`: at most this many tasks run at once (0: no limit).
    pub throttle: u32,
    /// Tasks in the whole array (`SLURM_ARRAY_TASK_COUNT`).
    pub count: u32,
    /// Smallest index (`SLURM_ARRAY_TASK_MIN`).
    pub min: u32,
    /// Largest index (`SLURM_ARRAY_TASK_MAX`).
    pub max: u32,
    /// Step between indexes (`SLURM_ARRAY_TASK_STEP`).
    pub step: u32,
}
/// A suspended job's shares, in a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Suspension {
    /// When it was suspended.
    pub since: Timestamp,
    /// By `scontrol suspend`: it waits for `scontrol resume`. Otherwise it
    /// was preempted and resumes once its shares are free.
    pub by_admin: bool,
    /// The shares it had and takes back on resume.
    pub alloc: Allocation,
    /// The job it was suspended for: only that job may use its shares
    /// meanwhile.
    #[serde(default)]
    pub preemptor: Option<JobId>,
}
/// How a purged job ended, in a snapshot.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// Its final state.
    pub state: JobState,
    /// When it started.
    pub start: Option<Timestamp>,
    /// When it ended.
    pub end: Option<Timestamp>,
    /// Its array, for a task.
    pub array_job_id: Option<JobId>,
    /// Its index, for a task.
    pub task: Option<u32>,
}
/// Where a job's dependency stands, in a snapshot.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub enum DepStatus {
    /// Nothing to wait for.
    #[default]
    Clear,
    /// Some condition is not met yet.
    Waiting,
    /// It can never be met.
    Never,
}
impl From<&crate::Step> for Step {
    fn from(x: &crate::Step) -> Step {
        Step {
            id: x.id,
            name: x.name.clone(),
            state: x.state,
            nodes: x.nodes.clone(),
            tasks: x.tasks.clone(),
            cpus: x.cpus.clone(),
            mem: x.mem,
            tres_mem: x.tres_mem,
            gpus: x.gpus.clone(),
            cpu_ids: x.cpu_ids.clone(),
            overlap: x.overlap,
            distribution: x.distribution,
            start_time: x.start_time,
            end_time: x.end_time,
            time_limit: x.time_limit,
            own_limit: x.own_limit,
            exit: x.exit,
            pending: x.pending.clone(),
            usage: StepUsage::from(&x.usage).into_owned(),
            srun: x.srun.clone(),
            container: x.container.clone(),
        }
    }
}

impl From<Step> for crate::Step {
    fn from(x: Step) -> crate::Step {
        crate::Step {
            id: x.id,
            name: x.name,
            state: x.state,
            nodes: x.nodes,
            tasks: x.tasks,
            cpus: x.cpus,
            mem: x.mem,
            tres_mem: x.tres_mem,
            gpus: x.gpus,
            cpu_ids: x.cpu_ids,
            overlap: x.overlap,
            distribution: x.distribution,
            start_time: x.start_time,
            end_time: x.end_time,
            time_limit: x.time_limit,
            own_limit: x.own_limit,
            exit: x.exit,
            pending: x.pending,
            usage: x.usage.into(),
            srun: x.srun,
            container: x.container,
        }
    }
}

impl From<crate::ArrayPart> for ArrayPart {
    fn from(x: crate::ArrayPart) -> ArrayPart {
        ArrayPart {
            array_job_id: x.array_job_id,
            task_id: x.task_id,
            pending: x.pending,
            throttle: x.throttle,
            count: x.count,
            min: x.min,
            max: x.max,
            step: x.step,
        }
    }
}

impl From<ArrayPart> for crate::ArrayPart {
    fn from(x: ArrayPart) -> crate::ArrayPart {
        crate::ArrayPart {
            array_job_id: x.array_job_id,
            task_id: x.task_id,
            pending: x.pending,
            throttle: x.throttle,
            count: x.count,
            min: x.min,
            max: x.max,
            step: x.step,
        }
    }
}

impl From<crate::Suspension> for Suspension {
    fn from(x: crate::Suspension) -> Suspension {
        Suspension {
            since: x.since,
            by_admin: x.by_admin,
            alloc: Allocation::from(&x.alloc),
            preemptor: x.preemptor,
        }
    }
}

impl From<Suspension> for crate::Suspension {
    fn from(x: Suspension) -> crate::Suspension {
        crate::Suspension {
            since: x.since,
            by_admin: x.by_admin,
            alloc: x.alloc.into(),
            preemptor: x.preemptor,
        }
    }
}

impl From<crate::Outcome> for Outcome {
    fn from(x: crate::Outcome) -> Outcome {
        Outcome {
            state: x.state,
            start: x.start,
            end: x.end,
            array_job_id: x.array_job_id,
            task: x.task,
        }
    }
}

impl From<Outcome> for crate::Outcome {
    fn from(x: Outcome) -> crate::Outcome {
        crate::Outcome {
            state: x.state,
            start: x.start,
            end: x.end,
            array_job_id: x.array_job_id,
            task: x.task,
        }
    }
}

impl From<crate::DepStatus> for DepStatus {
    fn from(x: crate::DepStatus) -> DepStatus {
        match x {
            crate::DepStatus::Clear => DepStatus::Clear,
            crate::DepStatus::Waiting => DepStatus::Waiting,
            crate::DepStatus::Never => DepStatus::Never,
        }
    }
}

impl From<DepStatus> for crate::DepStatus {
    fn from(x: DepStatus) -> crate::DepStatus {
        match x {
            DepStatus::Clear => crate::DepStatus::Clear,
            DepStatus::Waiting => crate::DepStatus::Waiting,
            DepStatus::Never => crate::DepStatus::Never,
        }
    }
}

/// Where a job runs, in a snapshot (`sched::Allocation`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Allocation {
    /// Index of the partition it runs in.
    pub partition: usize,
    /// Per-node shares, in node order.
    pub nodes: Vec<NodeAlloc>,
    /// The whole nodes are the job's.
    pub exclusive: bool,
}

/// What one node gives a job, in a snapshot (`sched::NodeAlloc`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeAlloc {
    /// The node.
    pub node: NodeIdx,
    /// CPUs.
    pub cpus: u32,
    /// Memory (MB).
    pub mem: u64,
    /// Tasks placed here.
    pub tasks: u32,
    /// GRES taken: (pool index on the node, device indexes).
    pub gres: Vec<(usize, Vec<u32>)>,
    /// The node's CPU ids the job holds. Absent in files of builds before
    /// per-CPU allocation (and left out where empty, so that what those
    /// builds wrote reads and writes back byte for byte).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_ids: Vec<u32>,
}

impl From<&sched::Allocation> for Allocation {
    fn from(a: &sched::Allocation) -> Allocation {
        let sched::Allocation {
            partition,
            nodes,
            exclusive,
        } = a;
        Allocation {
            partition: *partition,
            nodes: nodes
                .iter()
                .map(|n| {
                    let sched::NodeAlloc {
                        node,
                        cpus,
                        mem,
                        tasks,
                        gres,
                        cpu_ids,
                    } = n;
                    NodeAlloc {
                        node: *node,
                        cpus: *cpus,
                        mem: *mem,
                        tasks: *tasks,
                        gres: gres.clone(),
                        cpu_ids: cpu_ids.clone(),
                    }
                })
                .collect(),
            exclusive: *exclusive,
        }
    }
}

impl From<Allocation> for sched::Allocation {
    fn from(a: Allocation) -> sched::Allocation {
        sched::Allocation {
            partition: a.partition,
            nodes: a
                .nodes
                .into_iter()
                .map(|n| sched::NodeAlloc {
                    node: n.node,
                    cpus: n.cpus,
                    mem: n.mem,
                    tasks: n.tasks,
                    gres: n.gres,
                    cpu_ids: n.cpu_ids,
                })
                .collect(),
            exclusive: a.exclusive,
        }
    }
}

/// A node's pool of one generic resource, in a snapshot
/// (`sched::GresPool`). Written as the node held it; a restore builds the
/// pools again from slurm.conf and the jobs' allocations.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GresPool {
    /// GRES name (`gpu`).
    pub name: String,
    /// Type (`a100`), if configured.
    pub type_: Option<String>,
    /// Node-local device indexes of this pool.
    pub indexes: Vec<u32>,
    /// Which of `indexes` are in use.
    pub used: Vec<bool>,
}

impl From<&sched::GresPool> for GresPool {
    fn from(g: &sched::GresPool) -> GresPool {
        let sched::GresPool {
            name,
            type_,
            indexes,
            used,
            cores: _,
        } = g;
        GresPool {
            name: name.clone(),
            type_: type_.clone(),
            indexes: indexes.clone(),
            used: used.clone(),
        }
    }
}

/// A node's slurm.conf line, in a snapshot (`conf::NodeConf`). Written as
/// the configuration stood; a restore takes it from slurm.conf.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeConf {
    /// `NodeName`.
    pub name: String,
    /// `NodeAddr`.
    pub addr: String,
    /// `NodeHostname`.
    pub hostname: String,
    /// `Port`.
    pub port: Option<u16>,
    /// `CPUs`.
    pub cpus: u32,
    /// `Boards`.
    pub boards: u32,
    /// `Sockets`.
    pub sockets: u32,
    /// `CoresPerSocket`.
    pub cores_per_socket: u32,
    /// `ThreadsPerCore`.
    pub threads_per_core: u32,
    /// `RealMemory` in MB.
    pub real_memory: u64,
    /// `TmpDisk` in MB.
    pub tmp_disk: u64,
    /// `Gres`.
    pub gres: Vec<model::Gres>,
    /// `Features`.
    pub features: Vec<String>,
    /// `Weight`.
    pub weight: u32,
    /// `State`.
    pub state: Option<String>,
    /// `Reason`.
    pub reason: Option<String>,
    /// Other node keys, by lowercase key: (key as written, value).
    pub other: BTreeMap<String, (String, String)>,
    /// Line of the `NodeName=` entry in its file.
    pub line: usize,
}

impl From<&conf::NodeConf> for NodeConf {
    fn from(c: &conf::NodeConf) -> NodeConf {
        let conf::NodeConf {
            name,
            addr,
            hostname,
            port,
            cpus,
            boards,
            sockets,
            cores_per_socket,
            threads_per_core,
            real_memory,
            tmp_disk,
            gres,
            features,
            weight,
            state,
            reason,
            other,
            line,
        } = c;
        NodeConf {
            name: name.clone(),
            addr: addr.clone(),
            hostname: hostname.clone(),
            port: *port,
            cpus: *cpus,
            boards: *boards,
            sockets: *sockets,
            cores_per_socket: *cores_per_socket,
            threads_per_core: *threads_per_core,
            real_memory: *real_memory,
            tmp_disk: *tmp_disk,
            gres: gres.clone(),
            features: features.clone(),
            weight: *weight,
            state: state.clone(),
            reason: reason.clone(),
            other: other.clone(),
            line: *line,
        }
    }
}
