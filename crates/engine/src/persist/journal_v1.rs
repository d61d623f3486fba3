//! Version 1 of the journal record: the on-disk shape of one input to the
//! engine as every release up to issue 36 wrote it (MessagePack with field
//! names after [`RECORD_MAGIC`], or a JSON document in older builds). These
//! types are made for the disk and converted to and from the engine's and
//! the wire's (`proto::CtldRequest` and its payloads), so that a field added
//! to a wire request does not change what a record holds.
//!
//! ```text
//! write: Input/CtldRequest --Request::from_ctld (borrows)--> Record --> bytes
//! read:  bytes --> Record --CtldRequest::from (moves)--> Input
//! ```
//!
//! The shape mirrors `proto::CtldRequest` and its payloads exactly, for the
//! requests that are journaled only: variant names, field names, their
//! order, `serde` defaults and skips. The write side borrows what it writes
//! ([`Cow::Borrowed`]): a submission's description is not copied to be
//! journaled. The read side owns it ([`Cow::Owned`]) and moves it out.
//!
//! Kept as they are, because each is a vocabulary value whose encoding is
//! itself a stable on-disk form: `model`'s `JobId`, `JobState`, `ExitCode`, `Gres`,
//! `TimeLimit`, `Timestamp` and `array::TaskSet`, `proto::Distribution`
//! (a plain enum of names), and `proto::acctdb::AcctTables` (the
//! association database, whose format `sacctmgr` and the accounting store
//! already pin).
//!
//! The payloads a snapshot holds too (`JobDesc`, `NodeRegistration`,
//! `StepUsage`, with `SignalSpec`) are mirrored once, in `payload_v1`,
//! and re-exported here.
//!
//! To add a field to a record: give the field here `#[serde(default)]`
//! (and `skip_serializing_if` where its absence is the old meaning), so
//! that this version still reads every record written before; a change
//! that an old build must not misread, or that changes a field's meaning,
//! is a new module (`journal_v2`) beside this one, and this one stays
//! readable. A field added to `proto::JobDesc` (or another payload) is not
//! journaled until it is added here too.

use model::array::TaskSet;
use model::{ExitCode, Gres, JobId, JobState, TimeLimit, Timestamp};
use proto::acctdb::AcctTables;
use proto::{CtldRequest, Distribution};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use super::payload_v1::{owned, text};
pub use super::payload_v1::{JobDesc, NodeRegistration, SignalSpec, StepUsage};

/// First byte of a binary journal record: MessagePack with field names
/// (self-describing, so a newer build reads an older build's records;
/// fields it lacks take their serde defaults) of a [`Body`]. Records of
/// builds before it are JSON documents of a [`Record`] and start with `{`.
pub const RECORD_MAGIC: u8 = 0xB7;

/// A binary record's body: the record, with a submission's environment
/// taken out of its description (left empty there) into `env`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Body<'a> {
    /// The record.
    pub entry: Record<'a>,
    /// The submission's environment, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Env<'a>>,
}

/// A submission's environment in a binary record: in full the first time
/// since the last snapshot, then by the id it was given.
#[derive(Debug, Serialize, Deserialize)]
pub enum Env<'a> {
    /// The variables, and the id later records refer to them by.
    Full {
        /// The id.
        id: u64,
        /// The variables, in order.
        vars: Cow<'a, [(String, String)]>,
    },
    /// The variables of the `Full` record with this id.
    Same {
        /// The id.
        id: u64,
    },
}

/// One input to the engine as the journal records it, with the time it was
/// applied.
// A record lives only while it is written or read, one at a time: a
// box around its largest payload would be an allocation per submission.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, Deserialize)]
pub enum Record<'a> {
    /// A request that may change state.
    Request {
        /// The request.
        req: Request<'a>,
        /// Who sent it.
        who: Identity<'a>,
        /// When it was applied.
        now: Timestamp,
    },
    /// A launch could not be delivered.
    LaunchFailed {
        /// The job.
        job_id: JobId,
        /// The node.
        node: Cow<'a, str>,
        /// When.
        now: Timestamp,
    },
    /// A node no longer runs a job it was told to end.
    JobGone {
        /// The job.
        job_id: JobId,
        /// The node.
        node: Cow<'a, str>,
        /// The run that was ended.
        run: u32,
        /// When.
        now: Timestamp,
    },
    /// A ping's outcome.
    Ping {
        /// The node.
        node: Cow<'a, str>,
        /// Whether it answered.
        ok: bool,
        /// When.
        now: Timestamp,
    },
    /// The association database changed (sacctmgr), or was read at start.
    AssocTables {
        /// The whole database.
        tables: Cow<'a, AcctTables>,
    },
    /// The end of a batch: timers and a scheduling pass.
    Tick {
        /// When.
        now: Timestamp,
    },
    /// A job's PrologSlurmctld ended. (Added after `Tick`.)
    PrologSlurmctld {
        /// The job.
        job_id: JobId,
        /// The run it was for.
        run: u32,
        /// It exited 0.
        ok: bool,
        /// When.
        now: Timestamp,
    },
}

impl<'a> Record<'a> {
    /// The submitted description, if this is a submission (whose
    /// environment a binary record gives in [`Body::env`]).
    pub fn submitted_desc(&mut self) -> Option<&mut JobDesc<'a>> {
        match self {
            Record::Request {
                req: Request::Submit(d),
                ..
            } => Some(d),
            _ => None,
        }
    }
}

/// Who sent a request (`proto::Identity`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Identity<'a> {
    /// Numeric user id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// User name.
    pub user: Cow<'a, str>,
    /// The host the request came from.
    pub host: Cow<'a, str>,
}

impl<'a> From<&'a proto::Identity> for Identity<'a> {
    fn from(w: &'a proto::Identity) -> Self {
        Identity {
            uid: w.uid,
            gid: w.gid,
            user: Cow::Borrowed(&w.user),
            host: Cow::Borrowed(&w.host),
        }
    }
}

impl From<Identity<'_>> for proto::Identity {
    fn from(w: Identity<'_>) -> Self {
        proto::Identity {
            uid: w.uid,
            gid: w.gid,
            user: w.user.into_owned(),
            host: w.host.into_owned(),
        }
    }
}

/// A journaled request: the variants of `proto::CtldRequest` that change
/// state, in its shape.
// A record lives only while it is written or read, one at a time: a
// box around its largest payload would be an allocation per submission.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, Deserialize)]
pub enum Request<'a> {
    /// sbatch.
    Submit(JobDesc<'a>),
    /// scancel one job.
    Cancel {
        /// The job.
        job_id: JobId,
        /// A signal to send instead of cancelling.
        signal: Option<i32>,
        /// `-b`.
        batch_only: bool,
        /// `-f`.
        full: bool,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// `scontrol update JobId=...`.
    UpdateJob {
        /// The job.
        job_id: JobId,
        /// The changes.
        update: JobUpdate<'a>,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// `scontrol update NodeName=...`.
    UpdateNode {
        /// Expanded node names.
        nodes: Cow<'a, [String]>,
        /// New state, if any.
        state: Option<NodeStateRequest>,
        /// `Reason=`.
        reason: Option<Cow<'a, str>>,
    },
    /// `scontrol hold`.
    Hold {
        /// The job.
        job_id: JobId,
        /// Hold as user rather than admin.
        user: bool,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// `scontrol release`.
    Release {
        /// The job.
        job_id: JobId,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// `scontrol requeue`.
    Requeue {
        /// The job.
        job_id: JobId,
        /// `requeuehold`.
        hold: bool,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// `scontrol suspend`.
    Suspend {
        /// The job.
        job_id: JobId,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// `scontrol resume`.
    Resume {
        /// The job.
        job_id: JobId,
        /// Only these tasks of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Cow<'a, TaskSet>>,
    },
    /// A node daemon starts and reports what it has.
    RegisterNode(NodeRegistration<'a>),
    /// A batch job's script ended.
    JobExited {
        /// The job.
        job_id: JobId,
        /// The node.
        node: Cow<'a, str>,
        /// How it ended.
        exit: ExitCode,
        /// The node could not start it.
        launch_failed: Option<Cow<'a, str>>,
        /// What the script and its children used.
        #[serde(default)]
        usage: Option<StepUsage<'a>>,
        /// Processes of the batch step the OOM killer killed (absent in
        /// records before it was reported: none).
        #[serde(default, skip_serializing_if = "proto::is_zero_u64")]
        oom_kills: u64,
        /// The node's Prolog or Epilog failed for the job (absent in
        /// records before site scripts ran: none). Written always, as the
        /// wire request writes it.
        #[serde(default)]
        script_failed: Option<proto::NodeScript>,
    },
    /// salloc and a standalone srun ended.
    CompleteAllocation {
        /// The job.
        job_id: JobId,
        /// How the command ended.
        exit: ExitCode,
    },
    /// srun: create a step of a running job.
    CreateStep(StepRequest<'a>),
    /// A node's share of a step ended.
    StepExited(StepNodeEnd<'a>),
    /// What a job's extern step used on a node.
    ExternEnded {
        /// The job.
        job_id: JobId,
        /// The node.
        node: Cow<'a, str>,
        /// What it used.
        usage: StepUsage<'a>,
    },
    /// scancel 123.4.
    CancelStep {
        /// The job.
        job_id: JobId,
        /// The step.
        step_id: u32,
        /// A signal to send instead of cancelling.
        signal: Option<i32>,
    },
    /// A request of a session (journaled as it came, though the daemon
    /// journals the request inside it).
    InSession {
        /// Its number on its connection.
        seq: u64,
        /// The request.
        request: Box<Request<'a>>,
    },
    /// `scontrol top`.
    Top {
        /// The job.
        job_id: JobId,
    },
    /// A filtered scancel: every job `select` matches (when applied).
    /// (Added after `Top`; builds before it never wrote it.)
    CancelJobs {
        /// Which jobs.
        select: JobSelect<'a>,
        /// A signal to send instead of cancelling.
        signal: Option<i32>,
        /// `-b`.
        batch_only: bool,
        /// `-f`.
        full: bool,
    },
    /// `scontrol update PartitionName=...`. (Added after `CancelJobs`.)
    UpdatePartition(PartitionUpdate),
    /// `scontrol create partition`.
    CreatePartition(PartitionUpdate),
    /// `scontrol delete PartitionName=...`.
    DeletePartition {
        /// The partition.
        name: String,
    },
    /// `scontrol create reservation`. (Added after `CancelJobs`.)
    CreateReservation(super::resv_v1::ResvSpec),
    /// `scontrol update ReservationName=...`.
    UpdateReservation(super::resv_v1::ResvSpec),
    /// `scontrol delete ReservationName=...`.
    DeleteReservation {
        /// The reservation.
        name: Cow<'a, str>,
    },
    /// `scontrol reboot`. (Added after `DeleteReservation`.)
    RebootNodes {
        /// Expanded node names.
        nodes: Cow<'a, [String]>,
        /// `ASAP`.
        asap: bool,
        /// `nextstate=`.
        next_state: Option<RebootNextState>,
        /// `reason=`.
        reason: Option<Cow<'a, str>>,
    },
    /// `scontrol cancel_reboot`.
    CancelReboot {
        /// Expanded node names.
        nodes: Cow<'a, [String]>,
    },
    /// A node's fatal GPU Xid (`proto::CtldRequest::GpuXid`). (Added
    /// after `CancelReboot`.)
    GpuXid {
        /// The node.
        node: Cow<'a, str>,
        /// The Xid.
        xid: u32,
        /// The GPU, where known.
        #[serde(default)]
        gpu: Option<u32>,
        /// The PCI bus id.
        #[serde(default)]
        pci: Cow<'a, str>,
    },
}

/// What `scontrol update/create partition` changes
/// (`proto::PartitionUpdate`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PartitionUpdate {
    /// `PartitionName`.
    pub name: String,
    /// `Nodes=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
    /// `Default=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// `MaxTime=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<TimeLimit>,
    /// `DefaultTime=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_time: Option<Option<TimeLimit>>,
    /// `MaxNodes=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<Option<u32>>,
    /// `MinNodes=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_nodes: Option<u32>,
    /// `State=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// `PriorityTier=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_tier: Option<u32>,
    /// `PriorityJobFactor=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_job_factor: Option<u32>,
    /// `AllowAccounts=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_accounts: Option<Option<Vec<String>>>,
    /// `AllowGroups=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_groups: Option<Option<Vec<String>>>,
    /// `OverSubscribe=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oversubscribe: Option<String>,
    /// Other keys as text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<(String, String)>,
}

impl From<&proto::PartitionUpdate> for PartitionUpdate {
    fn from(u: &proto::PartitionUpdate) -> Self {
        PartitionUpdate {
            name: u.name.clone(),
            nodes: u.nodes.clone(),
            default: u.default,
            max_time: u.max_time,
            default_time: u.default_time,
            max_nodes: u.max_nodes,
            min_nodes: u.min_nodes,
            state: u.state.clone(),
            priority_tier: u.priority_tier,
            priority_job_factor: u.priority_job_factor,
            allow_accounts: u.allow_accounts.clone(),
            allow_groups: u.allow_groups.clone(),
            oversubscribe: u.oversubscribe.clone(),
            other: u.other.clone(),
        }
    }
}

impl From<PartitionUpdate> for proto::PartitionUpdate {
    fn from(u: PartitionUpdate) -> Self {
        proto::PartitionUpdate {
            name: u.name,
            nodes: u.nodes,
            default: u.default,
            max_time: u.max_time,
            default_time: u.default_time,
            max_nodes: u.max_nodes,
            min_nodes: u.min_nodes,
            state: u.state,
            priority_tier: u.priority_tier,
            priority_job_factor: u.priority_job_factor,
            allow_accounts: u.allow_accounts,
            allow_groups: u.allow_groups,
            oversubscribe: u.oversubscribe,
            other: u.other,
        }
    }
}

/// scancel's filters (`proto::JobSelect`), states by their Slurm names.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct JobSelect<'a> {
    /// Ids typed beside the filters.
    #[serde(default, skip_serializing_if = "<[JobId]>::is_empty")]
    pub job_ids: Cow<'a, [JobId]>,
    /// Whether ids were typed at all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_id: bool,
    /// `--me`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub me: bool,
    /// `-u`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Cow<'a, str>>,
    /// `-n`.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub names: Cow<'a, [String]>,
    /// `-p`.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub partitions: Cow<'a, [String]>,
    /// `-A`.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub accounts: Cow<'a, [String]>,
    /// `-q`.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub qos: Cow<'a, [String]>,
    /// `-t` (a `model` vocabulary value, as snapshots store it too).
    #[serde(default, skip_serializing_if = "<[JobState]>::is_empty")]
    pub states: Cow<'a, [JobState]>,
    /// `-w`.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub nodes: Cow<'a, [String]>,
}

impl<'a> From<&'a proto::JobSelect> for JobSelect<'a> {
    fn from(s: &'a proto::JobSelect) -> Self {
        JobSelect {
            job_ids: Cow::Borrowed(&s.job_ids),
            by_id: s.by_id,
            me: s.me,
            user: s.user.as_deref().map(Cow::Borrowed),
            names: Cow::Borrowed(&s.names),
            partitions: Cow::Borrowed(&s.partitions),
            accounts: Cow::Borrowed(&s.accounts),
            qos: Cow::Borrowed(&s.qos),
            states: Cow::Borrowed(&s.states),
            nodes: Cow::Borrowed(&s.nodes),
        }
    }
}

impl From<JobSelect<'_>> for proto::JobSelect {
    fn from(s: JobSelect<'_>) -> Self {
        proto::JobSelect {
            job_ids: s.job_ids.into_owned(),
            by_id: s.by_id,
            me: s.me,
            user: s.user.map(Cow::into_owned),
            names: s.names.into_owned(),
            partitions: s.partitions.into_owned(),
            accounts: s.accounts.into_owned(),
            qos: s.qos.into_owned(),
            states: s.states.into_owned(),
            nodes: s.nodes.into_owned(),
        }
    }
}

impl<'a> Request<'a> {
    /// The record of a journaled request, borrowing from it; None for a
    /// request that is not journaled (it changes nothing).
    pub fn from_ctld(req: &'a CtldRequest) -> Option<Request<'a>> {
        let tasks = |t: &'a Option<TaskSet>| t.as_ref().map(Cow::Borrowed);
        Some(match req {
            CtldRequest::Submit(d) => Request::Submit(JobDesc::from(&**d)),
            CtldRequest::Cancel {
                job_id,
                signal,
                batch_only,
                full,
                tasks: t,
            } => Request::Cancel {
                job_id: *job_id,
                signal: *signal,
                batch_only: *batch_only,
                full: *full,
                tasks: tasks(t),
            },
            CtldRequest::UpdateJob {
                job_id,
                update,
                tasks: t,
            } => Request::UpdateJob {
                job_id: *job_id,
                update: JobUpdate::from(update),
                tasks: tasks(t),
            },
            CtldRequest::UpdateNode {
                nodes,
                state,
                reason,
            } => Request::UpdateNode {
                nodes: Cow::Borrowed(nodes),
                state: state.as_ref().map(NodeStateRequest::from),
                reason: reason.as_deref().map(Cow::Borrowed),
            },
            CtldRequest::Hold {
                job_id,
                user,
                tasks: t,
            } => Request::Hold {
                job_id: *job_id,
                user: *user,
                tasks: tasks(t),
            },
            CtldRequest::Release { job_id, tasks: t } => Request::Release {
                job_id: *job_id,
                tasks: tasks(t),
            },
            CtldRequest::Requeue {
                job_id,
                hold,
                tasks: t,
            } => Request::Requeue {
                job_id: *job_id,
                hold: *hold,
                tasks: tasks(t),
            },
            CtldRequest::Suspend { job_id, tasks: t } => Request::Suspend {
                job_id: *job_id,
                tasks: tasks(t),
            },
            CtldRequest::Resume { job_id, tasks: t } => Request::Resume {
                job_id: *job_id,
                tasks: tasks(t),
            },
            CtldRequest::RegisterNode(r) => Request::RegisterNode(NodeRegistration::from(r)),
            CtldRequest::JobExited {
                job_id,
                node,
                exit,
                launch_failed,
                usage,
                oom_kills,
                script_failed,
            } => Request::JobExited {
                job_id: *job_id,
                node: Cow::Borrowed(node),
                exit: *exit,
                launch_failed: launch_failed.as_deref().map(Cow::Borrowed),
                usage: usage.as_ref().map(StepUsage::from),
                oom_kills: *oom_kills,
                script_failed: *script_failed,
            },
            CtldRequest::CompleteAllocation { job_id, exit } => Request::CompleteAllocation {
                job_id: *job_id,
                exit: *exit,
            },
            CtldRequest::CreateStep(s) => Request::CreateStep(StepRequest::from(&**s)),
            CtldRequest::StepExited(e) => Request::StepExited(StepNodeEnd::from(e)),
            CtldRequest::ExternEnded {
                job_id,
                node,
                usage,
            } => Request::ExternEnded {
                job_id: *job_id,
                node: Cow::Borrowed(node),
                usage: StepUsage::from(usage),
            },
            CtldRequest::CancelStep {
                job_id,
                step_id,
                signal,
            } => Request::CancelStep {
                job_id: *job_id,
                step_id: *step_id,
                signal: *signal,
            },
            CtldRequest::InSession { seq, request } => Request::InSession {
                seq: *seq,
                request: Box::new(Request::from_ctld(request)?),
            },
            CtldRequest::Top { job_id } => Request::Top { job_id: *job_id },
            CtldRequest::CancelJobs {
                select,
                signal,
                batch_only,
                full,
            } => Request::CancelJobs {
                select: JobSelect::from(&**select),
                signal: *signal,
                batch_only: *batch_only,
                full: *full,
            },
            CtldRequest::UpdatePartition(u) => Request::UpdatePartition((&**u).into()),
            CtldRequest::CreatePartition(u) => Request::CreatePartition((&**u).into()),
            CtldRequest::DeletePartition { name } => {
                Request::DeletePartition { name: name.clone() }
            }
            CtldRequest::CreateReservation(r) => Request::CreateReservation(r.into()),
            CtldRequest::UpdateReservation(r) => Request::UpdateReservation(r.into()),
            CtldRequest::DeleteReservation { name } => Request::DeleteReservation {
                name: Cow::Borrowed(name),
            },
            CtldRequest::RebootNodes {
                nodes,
                asap,
                next_state,
                reason,
            } => Request::RebootNodes {
                nodes: Cow::Borrowed(nodes),
                asap: *asap,
                next_state: next_state.map(RebootNextState::from),
                reason: reason.as_deref().map(Cow::Borrowed),
            },
            CtldRequest::CancelReboot { nodes } => Request::CancelReboot {
                nodes: Cow::Borrowed(nodes),
            },
            CtldRequest::GpuXid {
                node,
                xid,
                gpu,
                pci,
            } => Request::GpuXid {
                node: Cow::Borrowed(node),
                xid: *xid,
                gpu: *gpu,
                pci: Cow::Borrowed(pci),
            },
            CtldRequest::Ping
            | CtldRequest::ListJobs
            | CtldRequest::QueryJobs(_)
            | CtldRequest::Priorities
            | CtldRequest::JobPriorities { .. }
            | CtldRequest::Shares
            | CtldRequest::ListNodes
            | CtldRequest::ListPartitions
            | CtldRequest::ListLicenses
            | CtldRequest::ListReservations
            | CtldRequest::ShowTopology { .. }
            | CtldRequest::Watch(_)
            | CtldRequest::Stats
            | CtldRequest::FabricReports
            | CtldRequest::HealthCheckRan(_)
            | CtldRequest::HealthChecks { .. }
            | CtldRequest::GetConfig
            | CtldRequest::ShowConfig
            | CtldRequest::Explain { .. }
            | CtldRequest::Shutdown
            | CtldRequest::AcctQuery(_)
            | CtldRequest::AcctTables
            | CtldRequest::AcctAdmin(_)
            | CtldRequest::AcctUsage(_)
            | CtldRequest::AcctReservations { .. }
            | CtldRequest::AcctDecayedUsage
            | CtldRequest::AllocationInfo { .. }
            | CtldRequest::ListSteps
            | CtldRequest::StepStat { .. }
            | CtldRequest::OpenSession
            | CtldRequest::Notify { .. }
            | CtldRequest::Diag { .. }
            // Answered or unwrapped by the controller's connection,
            // never journaled as they are.
            | CtldRequest::Token { .. }
            | CtldRequest::OnBehalf { .. } => return None,
            | CtldRequest::Reconfigure
            | CtldRequest::ShutdownController => return None,
        })
    }
}

impl From<Request<'_>> for CtldRequest {
    fn from(req: Request<'_>) -> Self {
        let tasks = |t: Option<Cow<'_, TaskSet>>| t.map(Cow::into_owned);
        match req {
            Request::Submit(d) => CtldRequest::Submit(Box::new(d.into())),
            Request::Cancel {
                job_id,
                signal,
                batch_only,
                full,
                tasks: t,
            } => CtldRequest::Cancel {
                job_id,
                signal,
                batch_only,
                full,
                tasks: tasks(t),
            },
            Request::UpdateJob {
                job_id,
                update,
                tasks: t,
            } => CtldRequest::UpdateJob {
                job_id,
                update: update.into(),
                tasks: tasks(t),
            },
            Request::UpdateNode {
                nodes,
                state,
                reason,
            } => CtldRequest::UpdateNode {
                nodes: nodes.into_owned(),
                state: state.map(Into::into),
                reason: reason.map(Cow::into_owned),
            },
            Request::Hold {
                job_id,
                user,
                tasks: t,
            } => CtldRequest::Hold {
                job_id,
                user,
                tasks: tasks(t),
            },
            Request::Release { job_id, tasks: t } => CtldRequest::Release {
                job_id,
                tasks: tasks(t),
            },
            Request::Requeue {
                job_id,
                hold,
                tasks: t,
            } => CtldRequest::Requeue {
                job_id,
                hold,
                tasks: tasks(t),
            },
            Request::Suspend { job_id, tasks: t } => CtldRequest::Suspend {
                job_id,
                tasks: tasks(t),
            },
            Request::Resume { job_id, tasks: t } => CtldRequest::Resume {
                job_id,
                tasks: tasks(t),
            },
            Request::RegisterNode(r) => CtldRequest::RegisterNode(r.into()),
            Request::JobExited {
                job_id,
                node,
                exit,
                launch_failed,
                usage,
                oom_kills,
                script_failed,
            } => CtldRequest::JobExited {
                job_id,
                node: node.into_owned(),
                exit,
                launch_failed: launch_failed.map(Cow::into_owned),
                usage: usage.map(Into::into),
                oom_kills,
                script_failed,
            },
            Request::CompleteAllocation { job_id, exit } => {
                CtldRequest::CompleteAllocation { job_id, exit }
            }
            Request::CreateStep(s) => CtldRequest::CreateStep(Box::new(s.into())),
            Request::StepExited(e) => CtldRequest::StepExited(e.into()),
            Request::ExternEnded {
                job_id,
                node,
                usage,
            } => CtldRequest::ExternEnded {
                job_id,
                node: node.into_owned(),
                usage: usage.into(),
            },
            Request::CancelStep {
                job_id,
                step_id,
                signal,
            } => CtldRequest::CancelStep {
                job_id,
                step_id,
                signal,
            },
            Request::InSession { seq, request } => CtldRequest::InSession {
                seq,
                request: Box::new((*request).into()),
            },
            Request::Top { job_id } => CtldRequest::Top { job_id },
            Request::CancelJobs {
                select,
                signal,
                batch_only,
                full,
            } => CtldRequest::CancelJobs {
                select: Box::new(select.into()),
                signal,
                batch_only,
                full,
            },
            Request::UpdatePartition(u) => CtldRequest::UpdatePartition(Box::new(u.into())),
            Request::CreatePartition(u) => CtldRequest::CreatePartition(Box::new(u.into())),
            Request::DeletePartition { name } => CtldRequest::DeletePartition { name },
            Request::CreateReservation(r) => CtldRequest::CreateReservation(r.into()),
            Request::UpdateReservation(r) => CtldRequest::UpdateReservation(r.into()),
            Request::DeleteReservation { name } => CtldRequest::DeleteReservation {
                name: name.into_owned(),
            },
            Request::RebootNodes {
                nodes,
                asap,
                next_state,
                reason,
            } => CtldRequest::RebootNodes {
                nodes: nodes.into_owned(),
                asap,
                next_state: next_state.map(Into::into),
                reason: reason.map(Cow::into_owned),
            },
            Request::CancelReboot { nodes } => CtldRequest::CancelReboot {
                nodes: nodes.into_owned(),
            },
            Request::GpuXid {
                node,
                xid,
                gpu,
                pci,
            } => CtldRequest::GpuXid {
                node: node.into_owned(),
                xid,
                gpu,
                pci: pci.into_owned(),
            },
        }
    }
}

/// Changes `scontrol update JobId=...` makes (`proto::JobUpdate`).
#[derive(Debug, Serialize, Deserialize)]
pub struct JobUpdate<'a> {
    /// `TimeLimit=`.
    pub time_limit: Option<TimeLimit>,
    /// `TimeMin=`.
    pub time_min: Option<TimeLimit>,
    /// `Partition=`.
    pub partitions: Option<Cow<'a, [String]>>,
    /// `NumNodes=` min.
    pub min_nodes: Option<u32>,
    /// `NumNodes=` max.
    pub max_nodes: Option<u32>,
    /// `NumTasks=`.
    pub ntasks: Option<u32>,
    /// `Features=`.
    pub constraint: Option<Cow<'a, str>>,
    /// `JobName=`.
    pub name: Option<Cow<'a, str>>,
    /// `Comment=`.
    pub comment: Option<Cow<'a, str>>,
    /// `Nice=`.
    pub nice: Option<i32>,
    /// `ReqNodeList=`.
    pub nodelist: Option<Cow<'a, [String]>>,
    /// `ExcNodeList=`.
    pub exclude: Option<Cow<'a, [String]>>,
    /// `Account=`.
    pub account: Option<Cow<'a, str>>,
    /// `QOS=`.
    pub qos: Option<Cow<'a, str>>,
    /// `Priority=`.
    pub priority: Option<u32>,
    /// `MinMemoryNode=`.
    pub mem_per_node: Option<u64>,
    /// `MinMemoryCPU=`.
    pub mem_per_cpu: Option<u64>,
    /// `Gres=`.
    pub gres: Option<Cow<'a, [Gres]>>,
    /// `Dependency=`.
    pub dependency: Option<Cow<'a, str>>,
    /// `StartTime=`.
    pub begin_time: Option<Timestamp>,
    /// `Requeue=`.
    pub requeue: Option<bool>,
    /// `ArrayTaskThrottle=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_throttle: Option<u32>,
}

impl<'a> From<&'a proto::JobUpdate> for JobUpdate<'a> {
    fn from(u: &'a proto::JobUpdate) -> Self {
        let list = |v: &'a Option<Vec<String>>| v.as_deref().map(Cow::Borrowed);
        JobUpdate {
            time_limit: u.time_limit,
            time_min: u.time_min,
            partitions: list(&u.partitions),
            min_nodes: u.min_nodes,
            max_nodes: u.max_nodes,
            ntasks: u.ntasks,
            constraint: text(&u.constraint),
            name: text(&u.name),
            comment: text(&u.comment),
            nice: u.nice,
            nodelist: list(&u.nodelist),
            exclude: list(&u.exclude),
            account: text(&u.account),
            qos: text(&u.qos),
            priority: u.priority,
            mem_per_node: u.mem_per_node,
            mem_per_cpu: u.mem_per_cpu,
            gres: u.gres.as_deref().map(Cow::Borrowed),
            dependency: text(&u.dependency),
            begin_time: u.begin_time,
            requeue: u.requeue,
            array_throttle: u.array_throttle,
        }
    }
}

impl From<JobUpdate<'_>> for proto::JobUpdate {
    fn from(u: JobUpdate<'_>) -> Self {
        proto::JobUpdate {
            time_limit: u.time_limit,
            time_min: u.time_min,
            partitions: u.partitions.map(Cow::into_owned),
            min_nodes: u.min_nodes,
            max_nodes: u.max_nodes,
            ntasks: u.ntasks,
            constraint: owned(u.constraint),
            name: owned(u.name),
            comment: owned(u.comment),
            nice: u.nice,
            nodelist: u.nodelist.map(Cow::into_owned),
            exclude: u.exclude.map(Cow::into_owned),
            account: owned(u.account),
            qos: owned(u.qos),
            priority: u.priority,
            mem_per_node: u.mem_per_node,
            mem_per_cpu: u.mem_per_cpu,
            gres: u.gres.map(Cow::into_owned),
            dependency: owned(u.dependency),
            begin_time: u.begin_time,
            requeue: u.requeue,
            array_throttle: u.array_throttle,
        }
    }
}

/// `scontrol reboot nextstate=` (`proto::RebootNextState`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum RebootNextState {
    /// `RESUME`.
    Resume,
    /// `DOWN`.
    Down,
}

impl From<proto::RebootNextState> for RebootNextState {
    fn from(s: proto::RebootNextState) -> Self {
        match s {
            proto::RebootNextState::Resume => RebootNextState::Resume,
            proto::RebootNextState::Down => RebootNextState::Down,
        }
    }
}

impl From<RebootNextState> for proto::RebootNextState {
    fn from(s: RebootNextState) -> Self {
        match s {
            RebootNextState::Resume => proto::RebootNextState::Resume,
            RebootNextState::Down => proto::RebootNextState::Down,
        }
    }
}

/// What `scontrol update NodeName=...` asks for (`proto::NodeStateRequest`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum NodeStateRequest {
    /// `State=DRAIN`.
    Drain,
    /// `State=RESUME`.
    Resume,
    /// `State=DOWN`.
    Down,
    /// `State=UNDRAIN`.
    Undrain,
    /// `State=IDLE`.
    Idle,
}

impl From<&proto::NodeStateRequest> for NodeStateRequest {
    fn from(s: &proto::NodeStateRequest) -> Self {
        match s {
            proto::NodeStateRequest::Drain => NodeStateRequest::Drain,
            proto::NodeStateRequest::Resume => NodeStateRequest::Resume,
            proto::NodeStateRequest::Down => NodeStateRequest::Down,
            proto::NodeStateRequest::Undrain => NodeStateRequest::Undrain,
            proto::NodeStateRequest::Idle => NodeStateRequest::Idle,
        }
    }
}

impl From<NodeStateRequest> for proto::NodeStateRequest {
    fn from(s: NodeStateRequest) -> Self {
        match s {
            NodeStateRequest::Drain => proto::NodeStateRequest::Drain,
            NodeStateRequest::Resume => proto::NodeStateRequest::Resume,
            NodeStateRequest::Down => proto::NodeStateRequest::Down,
            NodeStateRequest::Undrain => proto::NodeStateRequest::Undrain,
            NodeStateRequest::Idle => proto::NodeStateRequest::Idle,
        }
    }
}

/// Where a task's standard input comes from (`proto::StdinMode`).
#[derive(Debug, Serialize, Deserialize)]
pub enum StdinMode<'a> {
    /// Task 0 only.
    Task0,
    /// `-i N`.
    Task(u32),
    /// `-i all`.
    All,
    /// `--input none`.
    None,
    /// `-i PATTERN`.
    File(Cow<'a, str>),
}

impl<'a> From<&'a proto::StdinMode> for StdinMode<'a> {
    fn from(m: &'a proto::StdinMode) -> Self {
        match m {
            proto::StdinMode::Task0 => StdinMode::Task0,
            proto::StdinMode::Task(n) => StdinMode::Task(*n),
            proto::StdinMode::All => StdinMode::All,
            proto::StdinMode::None => StdinMode::None,
            proto::StdinMode::File(p) => StdinMode::File(Cow::Borrowed(p)),
        }
    }
}

impl From<StdinMode<'_>> for proto::StdinMode {
    fn from(m: StdinMode<'_>) -> Self {
        match m {
            StdinMode::Task0 => proto::StdinMode::Task0,
            StdinMode::Task(n) => proto::StdinMode::Task(n),
            StdinMode::All => proto::StdinMode::All,
            StdinMode::None => proto::StdinMode::None,
            StdinMode::File(p) => proto::StdinMode::File(p.into_owned()),
        }
    }
}

/// srun's request for a step (`proto::StepRequest`).
#[derive(Debug, Serialize, Deserialize)]
pub struct StepRequest<'a> {
    /// The job the step belongs to.
    pub job_id: JobId,
    /// `-J`.
    pub name: Cow<'a, str>,
    /// The command and its arguments.
    pub argv: Cow<'a, [String]>,
    /// `-n`.
    pub ntasks: Option<u32>,
    /// `-N` minimum.
    pub min_nodes: Option<u32>,
    /// `-N` maximum.
    pub max_nodes: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-c`.
    pub cpus_per_task: Option<u32>,
    /// `--mem` in MB per node.
    pub mem_per_node: Option<u64>,
    /// `--gres`, per node.
    pub gres: Cow<'a, [Gres]>,
    /// `--gpus`.
    #[serde(default)]
    pub gpus: Option<u64>,
    /// `-w`, expanded.
    pub nodelist: Cow<'a, [String]>,
    /// `-x`, expanded.
    pub exclude: Cow<'a, [String]>,
    /// `-m`.
    pub distribution: Distribution,
    /// `--exclusive`.
    pub exclusive: bool,
    /// `--exact`.
    #[serde(default)]
    pub exact: bool,
    /// `--overlap`.
    pub overlap: bool,
    /// `-O/--overcommit`.
    pub overcommit: bool,
    /// `-t`.
    pub time_limit: Option<TimeLimit>,
    /// The tasks' environment.
    pub env: Cow<'a, [(String, String)]>,
    /// `-D`.
    pub work_dir: Cow<'a, str>,
    /// Address srun listens on.
    pub srun_host: Cow<'a, str>,
    /// Port srun listens on.
    pub srun_port: u16,
    /// srun's pid.
    pub srun_pid: u32,
    /// The secret the supervisors present to srun.
    pub token: Cow<'a, str>,
    /// `-o` pattern.
    pub stdout: Option<Cow<'a, str>>,
    /// `-e` pattern.
    pub stderr: Option<Cow<'a, str>>,
    /// `-i`.
    pub stdin: StdinMode<'a>,
    /// `--mpi`.
    pub mpi: Cow<'a, str>,
    /// `--acctg-freq`.
    #[serde(default)]
    pub acctg_freq: Option<Cow<'a, str>>,
    /// `--gpus-per-task`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_task: Option<u64>,
    /// `--ntasks-per-gpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks_per_gpu: Option<u32>,
    /// `--gpu-bind`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_bind: Option<Cow<'a, str>>,
    /// `--cpu-bind`, as written (absent before task/affinity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_bind: Option<Cow<'a, str>>,
    /// `--task-prolog` (absent before issue 39; written always, as the wire
    /// request writes it).
    #[serde(default)]
    pub task_prolog: Option<Cow<'a, str>>,
    /// `--task-epilog` (absent before issue 39; written always, as the wire
    /// request writes it).
    #[serde(default)]
    pub task_epilog: Option<Cow<'a, str>>,
    /// `--gres-flags` given to srun (absent in records written before
    /// it; written null when None, as the wire form writes it).
    #[serde(default)]
    pub gres_flags: Option<Cow<'a, str>>,
    /// `--pty`: task 0's terminal size (absent before srun --pty).
    #[serde(default)]
    pub pty: Option<(u16, u16)>,
    /// `--multi-prog`: the configuration file's text.
    #[serde(default)]
    pub multi_prog: Option<Cow<'a, str>>,
    /// pyxis's container options (absent before them).
    #[serde(default)]
    pub container: Cow<'a, [(String, String)]>,
}

impl<'a> From<&'a proto::StepRequest> for StepRequest<'a> {
    fn from(s: &'a proto::StepRequest) -> Self {
        StepRequest {
            job_id: s.job_id,
            name: Cow::Borrowed(&s.name),
            argv: Cow::Borrowed(&s.argv),
            ntasks: s.ntasks,
            min_nodes: s.min_nodes,
            max_nodes: s.max_nodes,
            ntasks_per_node: s.ntasks_per_node,
            cpus_per_task: s.cpus_per_task,
            mem_per_node: s.mem_per_node,
            gres: Cow::Borrowed(&s.gres),
            gpus: s.gpus,
            nodelist: Cow::Borrowed(&s.nodelist),
            exclude: Cow::Borrowed(&s.exclude),
            distribution: s.distribution,
            exclusive: s.exclusive,
            exact: s.exact,
            overlap: s.overlap,
            overcommit: s.overcommit,
            time_limit: s.time_limit,
            env: Cow::Borrowed(&s.env),
            work_dir: Cow::Borrowed(&s.work_dir),
            srun_host: Cow::Borrowed(&s.srun_host),
            srun_port: s.srun_port,
            srun_pid: s.srun_pid,
            token: Cow::Borrowed(&s.token),
            stdout: text(&s.stdout),
            stderr: text(&s.stderr),
            stdin: StdinMode::from(&s.stdin),
            mpi: Cow::Borrowed(&s.mpi),
            acctg_freq: text(&s.acctg_freq),
            gpus_per_task: s.gpus_per_task,
            ntasks_per_gpu: s.ntasks_per_gpu,
            gpu_bind: text(&s.gpu_bind),
            cpu_bind: text(&s.cpu_bind),
            task_prolog: text(&s.task_prolog),
            task_epilog: text(&s.task_epilog),
            gres_flags: text(&s.gres_flags),
            pty: s.pty,
            multi_prog: text(&s.multi_prog),
            container: Cow::Borrowed(&s.container[..]),
        }
    }
}

impl From<StepRequest<'_>> for proto::StepRequest {
    fn from(s: StepRequest<'_>) -> Self {
        proto::StepRequest {
            job_id: s.job_id,
            name: s.name.into_owned(),
            argv: s.argv.into_owned(),
            ntasks: s.ntasks,
            min_nodes: s.min_nodes,
            max_nodes: s.max_nodes,
            ntasks_per_node: s.ntasks_per_node,
            cpus_per_task: s.cpus_per_task,
            mem_per_node: s.mem_per_node,
            gres: s.gres.into_owned(),
            gpus: s.gpus,
            nodelist: s.nodelist.into_owned(),
            exclude: s.exclude.into_owned(),
            distribution: s.distribution,
            exclusive: s.exclusive,
            exact: s.exact,
            overlap: s.overlap,
            overcommit: s.overcommit,
            time_limit: s.time_limit,
            env: s.env.into_owned(),
            work_dir: s.work_dir.into_owned(),
            srun_host: s.srun_host.into_owned(),
            srun_port: s.srun_port,
            srun_pid: s.srun_pid,
            token: s.token.into_owned(),
            stdout: owned(s.stdout),
            stderr: owned(s.stderr),
            stdin: s.stdin.into(),
            mpi: s.mpi.into_owned(),
            acctg_freq: owned(s.acctg_freq),
            gpus_per_task: s.gpus_per_task,
            ntasks_per_gpu: s.ntasks_per_gpu,
            gpu_bind: owned(s.gpu_bind),
            cpu_bind: owned(s.cpu_bind),
            task_prolog: owned(s.task_prolog),
            task_epilog: owned(s.task_epilog),
            gres_flags: owned(s.gres_flags),
            pty: s.pty,
            multi_prog: owned(s.multi_prog),
            container: s.container.into_owned(),
        }
    }
}

/// How one node's share of a step ended (`proto::StepNodeEnd`).
#[derive(Debug, Serialize, Deserialize)]
pub struct StepNodeEnd<'a> {
    /// The job.
    pub job_id: JobId,
    /// The step.
    pub step_id: u32,
    /// The node.
    pub node: Cow<'a, str>,
    /// The highest exit of its tasks.
    pub exit: ExitCode,
    /// What its tasks used.
    pub usage: Option<StepUsage<'a>>,
    /// Processes the OOM killer killed (absent in older records: none).
    #[serde(default, skip_serializing_if = "proto::is_zero_u64")]
    pub oom_kills: u64,
}

impl<'a> From<&'a proto::StepNodeEnd> for StepNodeEnd<'a> {
    fn from(e: &'a proto::StepNodeEnd) -> Self {
        StepNodeEnd {
            job_id: e.job_id,
            step_id: e.step_id,
            node: Cow::Borrowed(&e.node),
            exit: e.exit,
            usage: e.usage.as_ref().map(StepUsage::from),
            oom_kills: e.oom_kills,
        }
    }
}

impl From<StepNodeEnd<'_>> for proto::StepNodeEnd {
    fn from(e: StepNodeEnd<'_>) -> Self {
        proto::StepNodeEnd {
            job_id: e.job_id,
            step_id: e.step_id,
            node: e.node.into_owned(),
            exit: e.exit,
            usage: e.usage.map(Into::into),
            oom_kills: e.oom_kills,
        }
    }
}
