//! Wire messages between the commands, the controller and the node daemons.
//!
//! This crate is the only place wire compatibility lives (API boundary): every
//! message is a plain serde struct, framed by `rpc` as a length-prefixed JSON
//! document inside an [`Envelope`] that carries [`PROTOCOL_VERSION`] and the
//! caller's identity. Sans-io: no sockets here.
//!
//! # Performance notes: job listings
//!
//! Job listings and submissions between the commands and the controller travel
//! as binary frames (`Encoding::Binary`: a magic byte, then postcard,
//! positional and compact); commands and controller must be of one build, and a
//! binary frame of another protocol version is refused as such before its body
//! is read.
//!
//! squeue's `JobFilter` says which text fields its format, sort keys and
//! filters never read (`omit`), and the controller leaves them empty. When
//! squeue reads nothing beyond a brief job it asks for `rows`: a `JobRows`
//! answer of compact rows, built straight from the job table (prefetching the
//! boxed job two places ahead) and encoded as they are built. Each chunk of
//! rows travels as one byte string with its row count in front, so no row is
//! kept or copied. The rows are postcard's bytes written and read by hand in
//! `rows`, not through serde: written into room reserved per row, with the
//! state, reason and time limit written only when they differ from the row
//! before. The receiver decodes them into `PackedRow` (160 bytes: optional
//! numbers as a value and a flag, node lists and task list boxed only when
//! present) instead of the 282-byte `JobRow`. Texts are indexes into one string
//! table per answer, looked up by address first, since jobs sharing a
//! description hand in the same texts.
//!
//! With `stream` set the answer comes in parts: `CtldResponse::JobRowsPart`,
//! one chunk of 2,048 rows and the texts it adds to the table, sent as soon as
//! the controller has built it, then the last part as `JobRows`
//! (`Client::query_job_rows` appends them with `JobRows::append`), so squeue
//! decodes rows while the controller builds the next ones. Parts leave at once
//! only while nothing of the controller's batch waits for the journal;
//! otherwise the whole answer is one frame after the commit.
#![warn(missing_docs)]

pub mod acctdb;
pub mod container;
pub mod diag;
pub mod health;
pub mod resv;
pub mod stats;
pub mod watch;

use model::{ExitCode, Gres, JobId, JobState, NodeState, PendingReason, TimeLimit, Timestamp};
use serde::{Deserialize, Serialize};

mod cancel;
mod cpu_bind;
mod gpus;
pub mod multi_prog;
mod row_source;
mod rows;
mod steps;
mod wires;
pub use cancel::{CancelOutcome, JobSelect, SelectFacts};
pub use cpu_bind::{mask_hex, CpuBind, CpuBindError, CpuBindType};
pub use gpus::GpuBind;
pub use row_source::{JobRowSource, RowEncodeError};
pub use rows::{prefetch, Interner, JobRow, JobRows, PackedRow};
pub use steps::process_mapping;
pub use steps::{
    AllocationInfo, Distribution, SrunToStepd, StdinMode, StepCreated, StepInfo, StepLaunch,
    StepList, StepNodeEnd, StepRequest, StepdToSrun,
};
pub use wires::{JobWire, JobWires};

/// Version of the messages in this crate. Bumped on any incompatible change;
/// a receiver refuses a frame whose version it does not support.
pub const PROTOCOL_VERSION: u32 = 1;

/// Oldest version this build still reads.
pub const MIN_PROTOCOL_VERSION: u32 = 1;

/// Largest frame a receiver accepts, so a hostile peer cannot make it
/// allocate without bound.
pub const MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// Largest answer a command accepts from the controller (a job listing of
/// hundreds of thousands of jobs). Only the controller sends frames this
/// large, and only to the command that asked; every daemon keeps reading
/// requests under [`MAX_FRAME_BYTES`] or less.
pub const MAX_RESPONSE_BYTES: u32 = 1024 * 1024 * 1024;

/// Largest request the controller reads: a quarter of [`MAX_FRAME_BYTES`].
/// The controller journals every request as one record of at most 64 MiB
/// (`journal::MAX_RECORD_LEN`), and re-encoding a request can make it
/// larger than it arrived (omitted optional fields come back as nulls, by
/// well under 2x). The client library checks each request against it
/// before sending (`client::ClientError::TooLarge`); the controller answers
/// a larger one with [`SlurmError::RequestTooLarge`] and closes the
/// connection (docs/limits.md).
pub const MAX_REQUEST_BYTES: u32 = MAX_FRAME_BYTES / 4;

/// Who is asking. Asserted by the sender; the receiver checks it against
/// the envelope's credential.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Numeric user id of the caller.
    pub uid: u32,
    /// Primary group id of the caller.
    pub gid: u32,
    /// The caller's user name.
    pub user: String,
    /// The host the request came from.
    pub host: String,
}

/// One framed message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope<T> {
    /// The sender's [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The sender's identity, as the sender claims it. Receivers act on the
    /// identity the credential proves (crate `auth`), and refuse a request
    /// whose claim and credential disagree.
    pub identity: Identity,
    /// The credential proving `identity` (`auth/muster` or MUNGE text).
    /// Every request must carry one; answers do not. Absent from frames of
    /// builds before authentication, which are refused as unauthenticated.
    #[serde(default)]
    pub credential: Option<String>,
    /// The message itself.
    pub body: T,
}

/// A job's environment variables, in order, shared ([`JobDesc::env`]).
pub type Env = std::sync::Arc<Vec<(String, String)>>;

/// Decodes [`JobDesc::env`] without an allocation per variable when it
/// equals the environment this thread decoded last (the usual case for a
/// controller under a burst of submissions from one program: decoding each
/// environment's dozens of strings, and freeing them once the engine had
/// pooled the job's environment, was over a third of its CPU). The
/// variables are read borrowed from the frame where the format allows it
/// (postcard, JSON without escapes, MessagePack), compared with the last
/// environment, and copied only when they differ. The result is the same
/// value either way.
pub mod env_de {
    use super::Env;
    use serde::de::{Deserialize, Deserializer, Error, Visitor};
    use std::borrow::Cow;
    use std::cell::RefCell;
    use std::sync::Arc;

    thread_local! {
        static LAST: RefCell<Option<Env>> = const { RefCell::new(None) };
    }

    /// A string, borrowed from the input where it can be.
    struct Text<'de>(Cow<'de, str>);

    impl<'de> Deserialize<'de> for Text<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Text<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Borrowed(v)))
                }
                fn visit_str<E: Error>(self, v: &str) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: Error>(self, v: String) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Owned(v)))
                }
            }
            d.deserialize_str(V)
        }
    }

    /// `#[serde(deserialize_with)]` for [`JobDesc::env`](super::JobDesc::env).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Env, D::Error> {
        let vars: Vec<(Text<'de>, Text<'de>)> = Vec::deserialize(d)?;
        if vars.is_empty() {
            return Ok(Env::default());
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            if let Some(env) = &*last {
                let same = env.len() == vars.len()
                    && env
                        .iter()
                        .zip(&vars)
                        .all(|((k, v), (a, b))| *k == *a.0 && *v == *b.0);
                if same {
                    return Ok(env.clone());
                }
            }
            let env: Env = Arc::new(
                vars.into_iter()
                    .map(|(k, v)| (k.0.into_owned(), v.0.into_owned()))
                    .collect(),
            );
            *last = Some(env.clone());
            Ok(env)
        })
    }
}

/// `--signal=[B:]SIG@SECS`: send `signal` `secs` seconds before the time limit.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SignalSpec {
    /// Signal number.
    pub signal: i32,
    /// Seconds before the end of the time limit.
    pub secs: u32,
    /// `B:`: signal only the batch shell, not its children.
    pub batch_only: bool,
}

impl SignalSpec {
    /// Who gets the warning signal: the batch shell alone with `B:`, else
    /// the job's steps (Slurm signals the steps, not the batch shell).
    pub fn scope(&self) -> SignalScope {
        if self.batch_only {
            SignalScope::Batch
        } else {
            SignalScope::Steps
        }
    }
}

/// Which of a running job's processes a job signal reaches (`scancel
/// --signal` with `-b`/`-f` or neither, sbatch `--signal=[B:]`). The
/// extern step is never signalled: it is muster's holder process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SignalScope {
    /// The job's steps (srun's), not the batch shell: `scancel --signal`
    /// alone. A job without steps gets nothing.
    Steps,
    /// The batch shell's process alone, not its children nor the steps:
    /// `scancel -b`, sbatch `--signal=B:`. On the batch host only.
    Batch,
    /// The batch shell, its children (its process group) and every step:
    /// `scancel -f`, and suspend/resume's SIGSTOP/SIGCONT.
    Full,
}

impl SignalScope {
    /// scancel's `-b` and `-f`: `-f` wins when both are given (it
    /// includes the batch shell).
    pub fn of_flags(batch: bool, full: bool) -> SignalScope {
        match (batch, full) {
            (_, true) => SignalScope::Full,
            (true, false) => SignalScope::Batch,
            (false, false) => SignalScope::Steps,
        }
    }
}

/// A batch job submission, as sbatch resolved it from its options,
/// `#SBATCH` lines and `SBATCH_*` variables.

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobDesc {
    /// `-J`; defaults to the script's file name, or `wrap`/`sbatch`.
    pub name: String,
    /// The full script text, starting with `#!`.
    pub script: String,
    /// Arguments passed to the script.
    pub argv: Vec<String>,
    /// The script's path when it came from a file (`Command=` in `scontrol show job`).
    #[serde(default)]
    pub command: Option<String>,
    /// Working directory (`-D`, default the submit directory).
    pub work_dir: String,
    /// The directory sbatch ran in (`SLURM_SUBMIT_DIR`).
    pub submit_dir: String,
    /// Host sbatch ran on (`SLURM_SUBMIT_HOST`).
    pub submit_host: String,
    /// The command line as typed, for accounting.
    pub submit_line: String,
    /// Environment for the job, already resolved from `--export`. Shared:
    /// a receiver that decodes the same environment again and again (the
    /// controller, a program submitting many jobs) gets the copy it
    /// decoded last instead of another ([`env_de`]); change it with
    /// `Arc::make_mut`.
    #[serde(deserialize_with = "env_de::deserialize")]
    pub env: Env,
    /// `-p`: candidate partitions, in order; empty means the default partition.
    pub partitions: Vec<String>,
    /// `-N` minimum (None: not given).
    pub min_nodes: Option<u32>,
    /// `-N` maximum.
    pub max_nodes: Option<u32>,
    /// `-n`.
    pub ntasks: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-c`.
    pub cpus_per_task: Option<u32>,
    /// `--mem` in MB (0 means all of each node's memory).
    pub mem_per_node: Option<u64>,
    /// `--mem-per-cpu` in MB.
    pub mem_per_cpu: Option<u64>,
    /// `--mem-per-gpu` in MB.
    pub mem_per_gpu: Option<u64>,
    /// `--gres`: per node.
    pub gres: Vec<Gres>,
    /// `-G/--gpus`: total for the job.
    pub gpus: Option<Gres>,
    /// `--gpus-per-node`.
    pub gpus_per_node: Option<Gres>,
    /// `--gpus-per-task`.
    pub gpus_per_task: Option<Gres>,
    /// `--cpus-per-gpu`.
    pub cpus_per_gpu: Option<u32>,
    /// `-t`.
    pub time_limit: Option<TimeLimit>,
    /// `--time-min`.
    pub time_min: Option<TimeLimit>,
    /// `-o` pattern (unexpanded; the node expands `%N`, ctld the rest).
    pub stdout: Option<String>,
    /// `-e` pattern.
    pub stderr: Option<String>,
    /// `-i`.
    pub stdin: Option<String>,
    /// `--open-mode=append`.
    pub open_append: bool,
    /// `--exclusive`.
    pub exclusive: bool,
    /// `-w`, expanded.
    pub nodelist: Vec<String>,
    /// `-x`, expanded.
    pub exclude: Vec<String>,
    /// `-C`.
    pub constraint: Option<String>,
    /// `-H`.
    pub hold: bool,
    /// `-b`.
    pub begin_time: Option<Timestamp>,
    /// `--signal`.
    pub signal: Option<SignalSpec>,
    /// `--requeue` / `--no-requeue` (None: the cluster default, which is requeue).
    pub requeue: Option<bool>,
    /// `--comment`.
    pub comment: Option<String>,
    /// `--acctg-freq` (`N` or `task=N`): the usage sampling interval of
    /// the job's steps, instead of JobAcctGatherFrequency.
    #[serde(default)]
    pub acctg_freq: Option<String>,
    /// `-A`.
    pub account: Option<String>,
    /// `-q`.
    pub qos: Option<String>,
    /// `--nice`.
    pub nice: i32,
    /// `-d`, stored as typed (enforced by a later issue).
    pub dependency: Option<String>,
    /// `--test-only`: validate and estimate, do not queue.
    pub test_only: bool,
    /// The user's numeric id and primary group, filled by the client.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// The submitting user's name.
    pub user: String,
    /// sbatch's own pid, for `AllocNode:Sid`.
    pub alloc_sid: u32,
    /// `-a/--array`, as typed (`0-9`, `1,3,5-7`, `0-15:4%2`).
    #[serde(default)]
    pub array: Option<String>,
    /// `--kill-on-invalid-dep=yes`: cancel the job once its dependency can
    /// never be satisfied (None: the cluster default, which keeps it pending).
    #[serde(default)]
    pub kill_on_invalid_dep: Option<bool>,
    /// `--deadline`: cancel the job (state DEADLINE) if it cannot end by then.
    #[serde(default)]
    pub deadline: Option<Timestamp>,
    /// salloc and a standalone srun: an allocation without a batch script,
    /// held until its client completes it (`CompleteAllocation`).
    #[serde(default)]
    pub alloc_only: bool,
    /// The submission's token, chosen by the client (32 hexadecimal
    /// digits: 128 random bits; [`SubmitToken`]). A submission whose answer
    /// was lost (the connection failed after it was sent) is sent again
    /// with the same token, and the controller answers a token it has
    /// seen with the job it made for it instead of making another, so a
    /// lost answer is neither a lost nor a doubled job. None: every
    /// submission makes a job (older clients, hand-made ones).
    #[serde(default)]
    pub submit_token: Option<String>,
    /// `-L`/`--licenses` as given (`foo:2,bar`; `model::licenses::parse`).
    /// None: no licenses. (Never skipped: the binary form is positional.)
    #[serde(default)]
    pub licenses: Option<String>,
    /// `--gres-flags`, lowercase as the command checked it
    /// (`enforce-binding`, `disable-binding`, comma separated): with
    /// `enforce-binding` the job's CPUs on a node are those gres.conf
    /// `Cores=` name for its GPUs there. None: not given. Never skipped
    /// when serialized: submissions travel positionally (`rpc`'s binary
    /// encoding).
    #[serde(default)]
    pub gres_flags: Option<String>,
    /// `--mail-type` (`model::mail` bits; 0: none). Never skipped when
    /// serialized (positional binary form).
    #[serde(default)]
    pub mail_type: u16,
    /// `--mail-user`; None: the submitting user. Never skipped.
    #[serde(default)]
    pub mail_user: Option<String>,
    /// The submitter's groups (names) as the controller looked them up,
    /// for partitions' `AllowGroups`: the controller replaces whatever a
    /// client sends. Empty where no partition restricts groups. Never
    /// skipped (positional binary form).
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// `--hint` as given (`nomultithread`, `multithread`, `compute_bound`,
    /// `memory_bound`): `nomultithread` allocates one task per core on
    /// nodes that give whole cores. Never skipped (positional binary form).
    #[serde(default)]
    pub hint: Option<String>,
    /// `--threads-per-core`: threads of each allocated core the tasks use
    /// (1: one CPU per core, the job holds whole cores). Never skipped.
    #[serde(default)]
    pub threads_per_core: Option<u32>,
    /// `--ntasks-per-core`: at most this many tasks on one core. Never
    /// skipped.
    #[serde(default)]
    pub ntasks_per_core: Option<u32>,
    /// `--reservation`: the reservation the job runs in. Never skipped.
    #[serde(default)]
    pub reservation: Option<String>,
    /// `--switches=N[@max-time]`: at most N leaf switches (topology/tree)
    /// or blocks. Never skipped.
    #[serde(default)]
    pub switches: Option<u32>,
    /// The `@max-time` of `--switches`, in seconds (None: the cluster's
    /// `max_switch_wait`). Never skipped.
    #[serde(default)]
    pub switch_wait: Option<u32>,
    /// `--segment=N`: the nodes in groups of N, each within one block
    /// (topology/block). Never skipped.
    #[serde(default)]
    pub segment: Option<u32>,
    /// pyxis's container options (`container::OPTIONS`) as `(option,
    /// value)` pairs: the batch script runs in that container. Never
    /// skipped.
    #[serde(default)]
    pub container: Vec<(String, String)>,
}

/// A submission token as the controller keeps it: [`JobDesc::submit_token`]
/// parsed (1 to 32 hexadecimal digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubmitToken(pub u128);

impl SubmitToken {
    /// A token's text, as [`JobDesc::submit_token`] carries it; None for
    /// text that is not 1 to 32 hexadecimal digits.
    pub fn parse(text: &str) -> Option<SubmitToken> {
        if text.is_empty() || text.len() > 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(text, 16).ok().map(SubmitToken)
    }

    /// The token from 16 random bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> SubmitToken {
        SubmitToken(u128::from_be_bytes(bytes))
    }

    /// The token's text: 32 lowercase hexadecimal digits.
    pub fn text(self) -> String {
        format!("{:032x}", self.0)
    }
}

/// Changes `scontrol update JobId=...` may make to a pending job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobUpdate {
    /// `TimeLimit=`.
    pub time_limit: Option<TimeLimit>,
    /// `TimeMin=`.
    pub time_min: Option<TimeLimit>,
    /// `Partition=`.
    pub partitions: Option<Vec<String>>,
    /// `NumNodes=` min.
    pub min_nodes: Option<u32>,
    /// `NumNodes=` max.
    pub max_nodes: Option<u32>,
    /// `NumTasks=`.
    pub ntasks: Option<u32>,
    /// `Features=`.
    pub constraint: Option<String>,
    /// `JobName=`.
    pub name: Option<String>,
    /// `Comment=`.
    pub comment: Option<String>,
    /// `Nice=`.
    pub nice: Option<i32>,
    /// `ReqNodeList=`.
    pub nodelist: Option<Vec<String>>,
    /// `ExcNodeList=`.
    pub exclude: Option<Vec<String>>,
    /// `Account=`.
    pub account: Option<String>,
    /// `QOS=`.
    pub qos: Option<String>,
    /// `Priority=`.
    pub priority: Option<u32>,
    /// `MinMemoryNode=`.
    pub mem_per_node: Option<u64>,
    /// `MinMemoryCPU=`.
    pub mem_per_cpu: Option<u64>,
    /// `Gres=` / `TresPerNode=`.
    pub gres: Option<Vec<Gres>>,
    /// `Dependency=`.
    pub dependency: Option<String>,
    /// `StartTime=` (begin time).
    pub begin_time: Option<Timestamp>,
    /// `Requeue=`.
    pub requeue: Option<bool>,
    /// `ArrayTaskThrottle=` (0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_throttle: Option<u32>,
}

/// What `scontrol update NodeName=...` asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeStateRequest {
    /// `State=DRAIN`: take no new jobs; DRAINED once idle.
    Drain,
    /// `State=RESUME`: clear DRAIN and DOWN.
    Resume,
    /// `State=DOWN`: kill its jobs and take it out of service.
    Down,
    /// `State=UNDRAIN`: clear DRAIN only.
    Undrain,
    /// `State=IDLE`: as RESUME.
    Idle,
}

/// Requests from the commands (and, for registration and job ends, from
/// node daemons) to the controller.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum CtldRequest {
    /// Liveness check.
    Ping,
    /// sbatch.
    Submit(Box<JobDesc>),
    /// Every job the controller still holds (filtering is the caller's).
    ListJobs,
    /// The jobs a filter selects, in full or brief (answered with `Jobs`).
    QueryJobs(JobFilter),
    /// `sprio`: every pending job's priority factors.
    Priorities,
    /// `sshare`: the fair-share tree.
    Shares,
    /// Every node.
    ListNodes,
    /// Every partition.
    ListPartitions,
    /// `scontrol show config`.
    ShowConfig,
    /// `muster explain JOBID`: where a job stands and why.
    Explain {
        /// The job.
        job_id: JobId,
    },
    /// scancel one job: `signal` None means cancel (SIGTERM then SIGKILL and CANCELLED).
    Cancel {
        /// The job.
        job_id: JobId,
        /// A signal to send instead of cancelling.
        signal: Option<i32>,
        /// `-b`: signal only the batch shell (not its children nor the
        /// steps); without `-b` or `-f` a signal reaches the steps alone.
        batch_only: bool,
        /// `-f`: signal every process of the job: the batch shell, its
        /// children and the steps.
        full: bool,
        /// Only these tasks of the array `job_id` names (`123_4`, `123_[1-3]`);
        /// None: the job, or every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// `scontrol update JobId=...`.
    UpdateJob {
        /// The job.
        job_id: JobId,
        /// The changes.
        update: JobUpdate,
        /// Only these tasks of the array `job_id` names (`123_4`, `123_[1-3]`);
        /// None: the job, or every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// `scontrol update NodeName=...`.
    UpdateNode {
        /// Expanded node names.
        nodes: Vec<String>,
        /// New state, if any.
        state: Option<NodeStateRequest>,
        /// `Reason=`.
        reason: Option<String>,
    },
    /// `scontrol hold` (`user`: `scontrol uhold` or a user's own hold).
    Hold {
        /// The job.
        job_id: JobId,
        /// Hold as user (JobHeldUser) rather than admin (JobHeldAdmin).
        user: bool,
        /// Only these tasks of the array `job_id` names (`123_4`, `123_[1-3]`);
        /// None: the job, or every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// `scontrol release`.
    Release {
        /// The job.
        job_id: JobId,
        /// Only these tasks of the array `job_id` names (`123_4`, `123_[1-3]`);
        /// None: the job, or every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// `scontrol requeue`.
    Requeue {
        /// The job.
        job_id: JobId,
        /// `requeuehold`.
        hold: bool,
        /// Only these tasks of the array `job_id` names (`123_4`, `123_[1-3]`);
        /// None: the job, or every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// `scontrol suspend` (administrators only).
    Suspend {
        /// The job.
        job_id: JobId,
        /// Only these tasks of the array `job_id` names; None: the job, or
        /// every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// `scontrol resume` (administrators only).
    Resume {
        /// The job.
        job_id: JobId,
        /// Only these tasks of the array `job_id` names; None: the job, or
        /// every task of the array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<model::array::TaskSet>,
    },
    /// A node daemon starts and reports what it has.
    RegisterNode(NodeRegistration),
    /// A node daemon reports that a batch job's script ended.
    JobExited {
        /// The job.
        job_id: JobId,
        /// The node.
        node: String,
        /// How it ended.
        exit: ExitCode,
        /// The node could not start it (missing working directory, bad user, ...).
        launch_failed: Option<String>,
        /// What the script and its children used, from the kernel (wait4).
        #[serde(default)]
        usage: Option<StepUsage>,
        /// How many processes of the batch step the kernel's OOM killer
        /// killed (its memory cgroup's counters): the job then ends
        /// OUT_OF_MEMORY. 0 where no cgroup counts them.
        #[serde(default, skip_serializing_if = "is_zero_u64")]
        oom_kills: u64,
        /// A site script of the node failed for this job: `Prolog` (the
        /// script never started; the node is drained "Prolog error" and
        /// the job requeued held) or `Epilog` (after the end; the node is
        /// drained "Epilog error").
        #[serde(default)]
        script_failed: Option<NodeScript>,
    },
    /// `scontrol shutdown`.
    Shutdown,
    /// sacct: job records from the accounting store.
    AcctQuery(AcctQuery),
    /// `sacctmgr show ...`: the whole association database.
    AcctTables,
    /// `sacctmgr add/modify/delete ...`.
    AcctAdmin(acctdb::AdminRequest),
    /// `sreport`: usage summed over a window.
    AcctUsage(acctdb::UsageQuery),
    /// Every association's decayed usage (fair-share, `sshare`).
    AcctDecayedUsage,
    /// salloc and srun: a job's state and, once running, its allocation's
    /// variables.
    AllocationInfo {
        /// The job.
        job_id: JobId,
    },
    /// salloc and a standalone srun: the allocation's command ended with
    /// `exit`; the job ends and its resources are released.
    CompleteAllocation {
        /// The job.
        job_id: JobId,
        /// How the command (or the step) ended.
        exit: ExitCode,
    },
    /// srun: create a step of a running job.
    CreateStep(Box<StepRequest>),
    /// A node daemon reports that its share of a step ended.
    StepExited(StepNodeEnd),
    /// A node daemon reports what the job's extern step (its holder
    /// process, and what was adopted into it) used there, once ended.
    ExternEnded {
        /// The job.
        job_id: JobId,
        /// The node.
        node: String,
        /// What it used.
        usage: StepUsage,
    },
    /// scancel 123.4: cancel (or signal) one step.
    CancelStep {
        /// The job.
        job_id: JobId,
        /// The step.
        step_id: u32,
        /// A signal to send instead of cancelling.
        signal: Option<i32>,
    },
    /// squeue -s, scontrol show step: every running step.
    ListSteps,
    /// sstat: the live usage of a running job's steps, asked of the nodes
    /// that run them (the owner's jobs, or any job for administrators).
    StepStat {
        /// The job.
        job_id: JobId,
    },
    /// Opens an authenticated session on this connection (the client
    /// library's kept connections): the envelope's credential is verified
    /// once, and the identity it proves is the caller of every later
    /// `InSession` request on the connection, which carries no credential
    /// (ARCHITECTURE.md, "Client sessions"). Answered `Ok`; refused, and
    /// the connection closed, when the credential fails or a session is
    /// already open.
    OpenSession,
    /// A request on a connection opened with `OpenSession`: `seq` counts
    /// from 1 and must grow by exactly one per request, so a frame repeated
    /// or dropped within the connection ends it; the envelope's claimed
    /// uid must be the session's. Refused, and the connection closed,
    /// on a connection without a session.
    InSession {
        /// This request's number on its connection.
        seq: u64,
        /// The request.
        request: Box<CtldRequest>,
    },
    /// `scontrol top`: the job first among its user's pending jobs of the
    /// same partitions, account and QOS. (Added after `InSession`: the
    /// variants before keep their numbers; an older controller refuses it.)
    Top {
        /// The job.
        job_id: JobId,
    },
    /// `scontrol notify`: a message for a running job, written to its
    /// batch script's stderr as slurmstepd writes it. Changes nothing.
    Notify {
        /// The job.
        job_id: JobId,
        /// The text.
        message: String,
    },
    /// A filtered `scancel` (`-u`, `-n`, `-p`, ...): cancels (or signals)
    /// every job `select` matches, each as `Cancel` of that job alone
    /// would, in one request (answered `Cancelled`). (Added after
    /// `Notify`: the variants before keep their numbers; an older
    /// controller refuses it, and scancel then lists and cancels job by
    /// job.)
    CancelJobs {
        /// Which jobs.
        select: Box<JobSelect>,
        /// A signal to send instead of cancelling.
        signal: Option<i32>,
        /// `-b`: signal only the batch shell.
        batch_only: bool,
        /// `-f`: signal every process of the job.
        full: bool,
    },
    /// `sdiag`: the controller's statistics; `reset` (`sdiag --reset`,
    /// operators only) starts them afresh instead. (Last: the variants
    /// before keep their numbers; an older controller refuses it.)
    Diag {
        /// Reset instead of report.
        reset: bool,
    },
    /// `scontrol show licenses`: every license slurm.conf configures, with
    /// what the running jobs use (answered with `Licenses`). Added after
    /// the first release of protocol version 1.
    ListLicenses,
    /// Configless mode (`SlurmctldParameters=enable_configless`): slurm.conf
    /// and the files beside it, for a node daemon started with
    /// `--conf-server` (answered with `ConfigFiles`; refused with
    /// `ConfiglessDisabled` when the controller does not serve them).
    /// Slurm's REQUEST_CONFIG. Added after the first release of protocol
    /// version 1: an older controller refuses it.
    GetConfig,
    /// `scontrol token [username=U] [lifespan=S]`: a JWT (HS256, signed
    /// with `AuthAltParameters=jwt_key=`) for the caller, or for
    /// `username` where the caller is root or SlurmUser (answered with
    /// `Token`). Answered by the controller, which holds the key.
    /// (Appended: the variants before keep their numbers.)
    Token {
        /// The user the token names; None: the caller.
        username: Option<String>,
        /// Seconds the token is valid; None: the default (1800).
        lifespan: Option<u64>,
    },
    /// A request made on behalf of `user` by a trusted front-end (the REST
    /// daemon, which proved who `user` is by a JWT or a Unix socket's peer
    /// credentials): accepted only from root or SlurmUser (the credential
    /// of the envelope, or the session's), and then handled exactly as
    /// `request` sent by `user` with a credential of its own (every check:
    /// ownership, admin rights, daemons-only requests). Never nested, and
    /// never around `OpenSession`/`InSession`. (Appended.)
    OnBehalf {
        /// Whom the request acts as.
        user: Identity,
        /// The request.
        request: Box<CtldRequest>,
    },
    /// `scontrol reconfigure` (and SIGHUP): the controller reads its
    /// configuration files again and applies what can change while it
    /// runs (answered `Reconfigured`, or `ReconfigureRefused` with the
    /// files' error). Operators only. Added after `ListLicenses`.
    Reconfigure,
    /// `scontrol update PartitionName=...`. Operators only.
    UpdatePartition(Box<PartitionUpdate>),
    /// `scontrol create partition PartitionName=...`. Operators only.
    CreatePartition(Box<PartitionUpdate>),
    /// `scontrol delete PartitionName=NAME`: refused while jobs use it.
    DeletePartition {
        /// The partition.
        name: String,
    },
    /// `scontrol shutdown slurmctld`: the controller alone stops (the
    /// node daemons keep running); `Shutdown` stops them too.
    ShutdownController,
    /// `scontrol create reservation` (answered `ReservationCreated`).
    /// Added after the first release of protocol version 1.
    CreateReservation(resv::ResvSpec),
    /// `scontrol update ReservationName=...`.
    UpdateReservation(resv::ResvSpec),
    /// `scontrol delete ReservationName=...`.
    DeleteReservation {
        /// The reservation.
        name: String,
    },
    /// `scontrol show reservation`: every reservation (answered with
    /// `Reservations`).
    ListReservations,
    /// `scontrol reboot [ASAP] [nextstate=...] [reason=...] NODES`:
    /// reboot each node with its daemon's RebootProgram once it is idle.
    /// Operators only. Added after `ListReservations`.
    RebootNodes {
        /// Expanded node names (every node for `ALL`).
        nodes: Vec<String>,
        /// `ASAP`: drain the nodes so that no new job starts there.
        asap: bool,
        /// `nextstate=`: the state after the reboot (None: as before).
        next_state: Option<RebootNextState>,
        /// `reason=`.
        reason: Option<String>,
    },
    /// `scontrol cancel_reboot NODES`: forget reboots not issued yet.
    CancelReboot {
        /// Expanded node names.
        nodes: Vec<String>,
    },
    /// A node daemon saw a fatal NVIDIA Xid error (the kernel log, or its
    /// health check's verdict): the node is drained `GPU Xid N`, and the
    /// job on that GPU (every job of the node where the GPU is not known)
    /// is requeued away from the node, or ends NODE_FAIL. Daemons only.
    /// Added after `CancelReboot`.
    GpuXid {
        /// The node.
        node: String,
        /// The Xid number.
        xid: u32,
        /// The GPU (the node's index, as gres.conf numbers them) where its
        /// PCI bus id maps to one; None: unknown, the whole node.
        gpu: Option<u32>,
        /// The PCI bus id as the driver wrote it (`0000:3b:00`), for the
        /// log.
        pci: String,
    },
    /// `sacctmgr show reservation`, `sreport reservation utilization`: the
    /// reservation windows accounting holds that meet `[start, end)`
    /// (`None`: open), of this cluster (answered `AcctReservations`).
    AcctReservations {
        /// Window start.
        start: Option<model::Timestamp>,
        /// Window end.
        end: Option<model::Timestamp>,
    },
    /// `scontrol show topology [NODE]`: the switches (or blocks), as
    /// Slurm prints them (answered with `Topology`). (Appended.)
    ShowTopology {
        /// Only the switches over this node.
        node: Option<String>,
    },
    /// Opens a watch stream on this connection (`watch`): answered with
    /// `WatchEvents` batches until either side closes it; the connection
    /// carries nothing else afterwards. (Appended.)
    Watch(watch::WatchRequest),
    /// `/metrics`: job counts and the controller's histograms (answered
    /// with `Stats`). (Appended.)
    Stats,
    /// What each node daemon reported of the network fabric when it
    /// registered (`NodeRegistration::fabric`), for `muster check-config
    /// --fabric` (answered with `Fabric`). (Appended.)
    FabricReports,
    /// A node daemon ran its `HealthCheckProgram` (`health`): the
    /// controller keeps the last few runs of each node in memory (not
    /// journaled; a restarted controller starts with none). Daemons only;
    /// answered `Ok`. (Appended.)
    HealthCheckRan(Box<health::HealthCheckRun>),
    /// The recent health-check runs the controller holds, of one node or
    /// of all (answered `HealthChecks`). (Appended.)
    HealthChecks {
        /// Only this node's.
        node: Option<String>,
    },
    /// `Priorities` of these pending jobs alone (answered `Priorities`,
    /// with the weights): a page about one job asks for its factors
    /// without the whole queue's. (Appended.)
    JobPriorities {
        /// The jobs.
        job_ids: Vec<u32>,
    },
}

/// `scontrol reboot nextstate=`: what a rebooted node becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RebootNextState {
    /// `RESUME`: IDLE, its DRAIN and reason cleared.
    Resume,
    /// `DOWN`: DOWN, with the reboot's reason.
    Down,
}

impl RebootNextState {
    /// The word `scontrol show node` prints after `NextState=`.
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            RebootNextState::Resume => "RESUME",
            RebootNextState::Down => "DOWN",
        }
    }
}

/// What `scontrol update PartitionName=...` (or `create partition`)
/// changes; `None` leaves a key as it is (for `create`, its default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionUpdate {
    /// `PartitionName`.
    pub name: String,
    /// `Nodes=`, expanded (empty: no nodes).
    #[serde(default)]
    pub nodes: Option<Vec<String>>,
    /// `Default=YES|NO`.
    #[serde(default)]
    pub default: Option<bool>,
    /// `MaxTime=`.
    #[serde(default)]
    pub max_time: Option<TimeLimit>,
    /// `DefaultTime=` (`Some(None)`: NONE).
    #[serde(default)]
    pub default_time: Option<Option<TimeLimit>>,
    /// `MaxNodes=` (`Some(None)`: UNLIMITED).
    #[serde(default)]
    pub max_nodes: Option<Option<u32>>,
    /// `MinNodes=`.
    #[serde(default)]
    pub min_nodes: Option<u32>,
    /// `State=UP|DOWN|DRAIN|INACTIVE`, upper case.
    #[serde(default)]
    pub state: Option<String>,
    /// `PriorityTier=` (`Priority=` sets both).
    #[serde(default)]
    pub priority_tier: Option<u32>,
    /// `PriorityJobFactor=`.
    #[serde(default)]
    pub priority_job_factor: Option<u32>,
    /// `AllowAccounts=` (`Some(None)`: ALL).
    #[serde(default)]
    pub allow_accounts: Option<Option<Vec<String>>>,
    /// `AllowGroups=` (`Some(None)`: ALL).
    #[serde(default)]
    pub allow_groups: Option<Option<Vec<String>>>,
    /// `OverSubscribe=` upper case (`NO`, `EXCLUSIVE`, `YES[:n]`, `FORCE[:n]`).
    #[serde(default)]
    pub oversubscribe: Option<String>,
    /// Access keys kept as text (`DenyAccounts`, `AllowQos`, `DenyQos`,
    /// `RootOnly`, `ExclusiveUser`), by the key as written.
    #[serde(default)]
    pub other: Vec<(String, String)>,
}

/// What `scontrol reconfigure` did ([`CtldResponse::Reconfigured`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconfigureReport {
    /// The changes applied, one line each (`PartitionName=gpu: added`).
    pub applied: Vec<String>,
    /// The changes that need a restart and were not applied, one line each.
    pub restart: Vec<String>,
}

/// Index of [`CtldRequest::InSession`] among its variants, for
/// [`InSessionRef`] (a unit test checks it against the derived encoding).
const IN_SESSION_VARIANT: u32 = 35;

/// [`CtldRequest::InSession`] borrowing its request, so a sender that
/// keeps the request (to send it again on another connection) need not
/// copy it: serialized exactly as the owned form, in JSON and in postcard.
pub struct InSessionRef<'a> {
    /// The request's number on its connection.
    pub seq: u64,
    /// The request.
    pub request: &'a CtldRequest,
}

impl Serialize for InSessionRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        let mut v =
            s.serialize_struct_variant("CtldRequest", IN_SESSION_VARIANT, "InSession", 2)?;
        v.serialize_field("seq", &self.seq)?;
        v.serialize_field("request", self.request)?;
        v.end()
    }
}

/// What a node daemon reports when it registers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeRegistration {
    /// Its NodeName.
    pub name: String,
    /// The address and port it listens on.
    pub addr: String,
    /// Its listening port.
    pub port: u16,
    /// CPUs found.
    pub cpus: u32,
    /// Boards.
    pub boards: u32,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Threads per core.
    pub threads_per_core: u32,
    /// Memory in MB.
    pub real_memory: u64,
    /// Free memory in MB.
    pub free_memory: u64,
    /// Load average.
    pub cpu_load: f64,
    /// GRES found.
    pub gres: Vec<Gres>,
    /// `uname -r -v`.
    pub os: String,
    /// `uname -m`.
    pub arch: String,
    /// Host boot time.
    pub boot_time: Timestamp,
    /// When this daemon started.
    pub start_time: Timestamp,
    /// Jobs it is still running (after a restart).
    pub running_jobs: Vec<JobId>,
    /// This build's version string.
    pub version: String,
    /// The host's boot id (`/proc/sys/kernel/random/boot_id`, or the
    /// daemon's `MUSTER_BOOT_ID`): a new one after an issued reboot says
    /// the host came back. Empty from older daemons. (Appended.)
    #[serde(default)]
    pub boot_id: String,
    /// What the node sees of the network fabric (muster's own: a site
    /// script, InfiniBand ports, LLDP neighbours); None from older
    /// daemons. The controller keeps the last one per node in memory for
    /// `FabricReports` (the engine does not read it). (Appended.)
    #[serde(default)]
    pub fabric: Option<FabricReport>,
}

/// What a node daemon sees of the network fabric at start (muster's own;
/// `noded`'s `fabric` module says how it is found).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricReport {
    /// Where `switches` come from: `MusterTopologyProbe` (the site
    /// script) or `lldp`; empty where nothing named a switch.
    pub source: String,
    /// The switches over the node, leaf first (a block name under
    /// topology/block).
    pub switches: Vec<String>,
    /// The InfiniBand ports found in sysfs.
    pub ib_ports: Vec<IbPort>,
    /// The LLDP neighbours `lldpctl` knows.
    pub lldp: Vec<LldpNeighbor>,
    /// Why the probe said nothing (the script failed, ...); empty when
    /// it did not fail.
    pub error: String,
}

/// One InfiniBand port as sysfs shows it
/// (`/sys/class/infiniband/DEV/ports/N/`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPort {
    /// The device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `state` (`4: ACTIVE`).
    pub state: String,
    /// `rate` (`200 Gb/sec (4X HDR)`).
    pub rate: String,
    /// `link_layer` (`InfiniBand` or `Ethernet`).
    pub link_layer: String,
    /// `lid` (`0x1a`).
    pub lid: String,
    /// `sm_lid`: the subnet manager's LID.
    pub sm_lid: String,
    /// The subnet prefix: the first four groups of `gids/0`.
    pub subnet_prefix: String,
    /// The device's `node_guid`.
    pub node_guid: String,
}

/// One LLDP neighbour (`lldpctl -f json0`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LldpNeighbor {
    /// The local interface.
    pub interface: String,
    /// The neighbour's system name.
    pub chassis: String,
    /// The neighbour's port id.
    pub port: String,
}

/// A refusal, with Slurm's message text (`slurm_strerror`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlurmError {
    /// ESLURM_INVALID_JOB_ID.
    InvalidJobId,
    /// ESLURM_INVALID_PARTITION_NAME.
    InvalidPartitionName,
    /// ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE.
    RequestedNodeConfigUnavailable,
    /// ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE.
    RequestedPartConfigUnavailable,
    /// Memory request larger than any node.
    MemoryNotSatisfiable,
    /// ESLURM_ACCESS_DENIED.
    AccessDenied,
    /// ESLURM_USER_ID_MISSING.
    InvalidUserId,
    /// ESLURM_ALREADY_DONE.
    AlreadyDone,
    /// ESLURM_JOB_NOT_PENDING.
    JobNotPending,
    /// ESLURM_INVALID_TIME_LIMIT.
    InvalidTimeLimit,
    /// ESLURM_INVALID_NODE_NAME.
    InvalidNodeName,
    /// ESLURM_INVALID_GRES.
    InvalidGres,
    /// ESLURM_INVALID_FEATURE.
    InvalidFeature,
    /// ESLURM_INVALID_ACCOUNT.
    InvalidAccount,
    /// ESLURM_INVALID_QOS.
    InvalidQos,
    /// ESLURM_REACHED_MAX_JOB_COUNT... (`MaxJobCount` reached).
    TooManyJobs,
    /// ESLURM_DISABLED: requeue of a job that does not allow it.
    Disabled,
    /// ESLURM_JOB_NOT_RUNNING.
    JobNotRunning,
    /// ESLURM_TRANSITION_STATE_NO_UPDATE.
    TransitionStateNoUpdate,
    /// An unknown node state in `scontrol update`.
    InvalidNodeState,
    /// ESLURM_PROTOCOL_VERSION_ERROR.
    ProtocolVersion,
    /// ESLURM_BAD_DIST etc.: the request is not valid.
    InvalidRequest,
    /// `AccountingStorageType=accounting_storage/none`.
    AccountingDisabled,
    /// The accounting database did not answer.
    AccountingUnavailable,
    /// SLURM_PROTOCOL_AUTHENTICATION_ERROR: the request's credential is
    /// missing, forged, expired or replayed.
    ProtocolAuthentication,
    /// ESLURM_INVALID_ARRAY: a malformed `--array`, or one beyond MaxArraySize.
    InvalidArray,
    /// ESLURM_DEPENDENCY: a malformed or impossible `--dependency`
    /// (a cycle, or `afterburstbuffer`).
    Dependency,
    /// ESLURM_CIRCULAR_DEPENDENCY.
    CircularDependency,
    /// ESLURM_TOO_MANY_REQUESTED_CPUS: a step asks for more CPUs than its
    /// job holds.
    TooManyRequestedCpus,
    /// ESLURM_NODES_BUSY: a step's CPUs are in use by other steps (srun waits).
    NodesBusy,
    /// ESLURM_INVALID_TASK_MEMORY: a step asks for more memory than its
    /// job holds on a node.
    InvalidTaskMemory,
    /// ESLURM_ACCOUNTING_POLICY: a submission past a MaxSubmitJobs or
    /// GrpSubmitJobs limit, which one named (sbatch prints it first).
    AccountingPolicy(model::LimitReason),
    /// The controller cannot write its state (StateSaveLocation): the change
    /// was refused without being made. The controller keeps answering
    /// queries and takes changes again once it can write; try again later.
    /// Added after the first release of protocol version 1 (an older
    /// command reading it fails to decode the answer).
    StateSaveFailed(SaveFailure),
    /// A request above [`MAX_REQUEST_BYTES`]: the controller answers it
    /// so and closes the connection (the client library never sends one,
    /// it reports `client::ClientError::TooLarge` with the size instead).
    RequestTooLarge,
    /// ESLURM_JOB_FINISHED: a change to a job that has ended. Added after
    /// the first release of protocol version 1, as `NotSupported`.
    JobFinished,
    /// ESLURM_NOT_SUPPORTED: e.g. a running job's node count changed.
    NotSupported,
    /// ESLURM_JOB_HELD: a change that needs the job released first.
    JobHeld,
    /// ESLURM_INVALID_LICENSES: `-L` names a license slurm.conf does not
    /// configure, asks for more than its total, or does not parse. Added
    /// after the first release of protocol version 1.
    InvalidLicenses,
    /// ESLURM_CONFIGLESS_DISABLED: `GetConfig` from a controller without
    /// `SlurmctldParameters=enable_configless`. Added after the first
    /// release of protocol version 1.
    ConfiglessDisabled,
    /// ESLURM_PARTITION_IN_USE: a partition jobs still use cannot be deleted.
    PartitionInUse,
    /// ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP: `AllowGroups` of the
    /// partition names none of the submitter's groups.
    PartitionGroupRequired,
    /// ESLURM_RESERVATION_INVALID: no reservation of that name.
    ReservationInvalid,
    /// ESLURM_RESERVATION_ACCESS: the job's user and account are not
    /// among the reservation's.
    ReservationAccess,
    /// ESLURM_RESERVATION_NAME_DUP.
    ReservationNameDup,
    /// ESLURM_RESERVATION_OVERLAP: its nodes and window meet another
    /// reservation's (without OVERLAP).
    ReservationOverlap,
    /// ESLURM_INVALID_TIME_VALUE.
    InvalidTimeValue,
    /// ESLURM_RESERVATION_EMPTY: neither users nor accounts given.
    ReservationEmpty,
    /// ESLURM_RESERVATION_BUSY: jobs still run in it.
    ReservationBusy,
    /// ESLURM_REBOOT_IN_PROGRESS: `cancel_reboot` of a node whose reboot
    /// was already issued. (Appended.)
    RebootInProgress,
    /// ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE: a `--segment` that does
    /// not divide the job's node count, or is larger than the base block
    /// (`BlockSizes`). (Appended.)
    RequestedTopoConfigUnavailable,
}

/// Why the controller could not write its state, as the operating system
/// said it ([`SlurmError::StateSaveFailed`]): the causes a full, read-only
/// or failing state directory gives, with the C library's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaveFailure {
    /// ENOSPC.
    NoSpace,
    /// EDQUOT.
    QuotaExceeded,
    /// EROFS.
    ReadOnlyFileSystem,
    /// EPERM (an immutable file, `chattr +i`).
    NotPermitted,
    /// EACCES.
    PermissionDenied,
    /// EIO.
    Io,
    /// EFBIG.
    FileTooLarge,
    /// ENOENT (the directory was removed).
    NotFound,
    /// Anything else; the controller's log has the details.
    Other,
}

impl SaveFailure {
    /// The C library's text for the cause (`strerror`).
    pub fn as_str(self) -> &'static str {
        match self {
            SaveFailure::NoSpace => "No space left on device",
            SaveFailure::QuotaExceeded => "Disk quota exceeded",
            SaveFailure::ReadOnlyFileSystem => "Read-only file system",
            SaveFailure::NotPermitted => "Operation not permitted",
            SaveFailure::PermissionDenied => "Permission denied",
            SaveFailure::Io => "Input/output error",
            SaveFailure::FileTooLarge => "File too large",
            SaveFailure::NotFound => "No such file or directory",
            SaveFailure::Other => "Unexpected error",
        }
    }
}

impl SlurmError {
    /// Slurm's message text.
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            SlurmError::InvalidJobId => "Invalid job id specified",
            SlurmError::InvalidPartitionName => "Invalid partition name specified",
            SlurmError::RequestedNodeConfigUnavailable | SlurmError::MemoryNotSatisfiable => {
                "Requested node configuration is not available"
            }
            SlurmError::RequestedPartConfigUnavailable => {
                "Requested partition configuration not available now"
            }
            SlurmError::AccessDenied => "Access/permission denied",
            SlurmError::InvalidUserId => "Invalid user id",
            SlurmError::AlreadyDone => "Job/step already completing or completed",
            SlurmError::JobNotPending => "Job is no longer pending execution",
            SlurmError::InvalidTimeLimit => {
                "Requested time limit is invalid (missing or exceeds some limit)"
            }
            SlurmError::InvalidNodeName => "Invalid node name specified",
            SlurmError::InvalidGres => "Invalid generic resource (gres) specification",
            SlurmError::InvalidFeature => "Invalid feature specification",
            SlurmError::InvalidAccount => {
                "Invalid account or account/partition combination specified"
            }
            SlurmError::InvalidQos => "Invalid qos specification",
            SlurmError::TooManyJobs => {
                "Slurm temporarily unable to accept job, sleeping and retrying"
            }
            SlurmError::Disabled => "Requested operation is presently disabled",
            SlurmError::JobNotRunning => "Job is pending execution",
            SlurmError::TransitionStateNoUpdate => {
                "Requested operation not supported on this job state"
            }
            SlurmError::InvalidNodeState => "Invalid node state specified",
            SlurmError::ProtocolVersion => "Protocol version has changed, re-link your code",
            SlurmError::InvalidRequest => "Unexpected message received",
            SlurmError::AccountingDisabled => "Slurm accounting storage is disabled",
            SlurmError::AccountingUnavailable => "Unable to contact slurm database",
            SlurmError::ProtocolAuthentication => "Protocol authentication error",
            SlurmError::InvalidArray => "Invalid job array specification",
            SlurmError::Dependency => "Job dependency problem",
            SlurmError::CircularDependency => "Circular job dependency",
            SlurmError::TooManyRequestedCpus => "More processors requested than permitted",
            SlurmError::NodesBusy => "Requested nodes are busy",
            SlurmError::InvalidTaskMemory => "Memory required by task is not available",
            SlurmError::AccountingPolicy(_) => {
                "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
            }
            SlurmError::JobFinished => "Job has already finished",
            SlurmError::NotSupported => "Requested operation not supported on this system",
            SlurmError::JobHeld => "Job is in held state, pending scheduler release",
            SlurmError::InvalidLicenses => "Invalid license specification",
            SlurmError::ConfiglessDisabled => "ConfigLess mode is disabled in slurm configuration.",
            SlurmError::PartitionInUse => "Partition is in use",
            SlurmError::PartitionGroupRequired => {
                "User's group not permitted to use this partition"
            }
            SlurmError::ReservationInvalid => "Requested reservation is invalid",
            SlurmError::ReservationAccess => "Access denied to requested reservation",
            SlurmError::ReservationNameDup => "Duplicate reservation name",
            SlurmError::ReservationOverlap => "Requested reservation overlaps with another reservation",
            SlurmError::InvalidTimeValue => "Invalid time specified",
            SlurmError::ReservationEmpty => "Reservation request lacks users or accounts",
            SlurmError::ReservationBusy => "Reservation is busy",
            SlurmError::RebootInProgress => "Reboot already in progress",
            SlurmError::RequestedTopoConfigUnavailable => {
                "Requested topology configuration is not available"
            }
            SlurmError::StateSaveFailed(cause) => match cause {
                SaveFailure::NoSpace => {
                    "Slurm controller state save failed: No space left on device"
                }
                SaveFailure::QuotaExceeded => {
                    "Slurm controller state save failed: Disk quota exceeded"
                }
                SaveFailure::ReadOnlyFileSystem => {
                    "Slurm controller state save failed: Read-only file system"
                }
                SaveFailure::NotPermitted => {
                    "Slurm controller state save failed: Operation not permitted"
                }
                SaveFailure::PermissionDenied => {
                    "Slurm controller state save failed: Permission denied"
                }
                SaveFailure::Io => "Slurm controller state save failed: Input/output error",
                SaveFailure::FileTooLarge => "Slurm controller state save failed: File too large",
                SaveFailure::NotFound => {
                    "Slurm controller state save failed: No such file or directory"
                }
                SaveFailure::Other => "Slurm controller state save failed: Unexpected error",
            },
            SlurmError::RequestTooLarge => "Request too large (limit 16 MiB)",
        }
    }
}

/// Answers from the controller.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum CtldResponse {
    /// Done.
    Ok,
    /// A job was queued (or, with `--test-only`, would start as described).
    Submitted(SubmitReply),
    /// `ListJobs`.
    Jobs(JobList),
    /// `ListNodes`.
    Nodes(Vec<NodeInfo>),
    /// `Priorities`.
    Priorities(PriorityList),
    /// `Shares`.
    Shares(Vec<ShareRow>),
    /// `ListPartitions`.
    Partitions(Vec<PartitionInfo>),
    /// `ShowConfig`.
    Config(ConfigInfo),
    /// `Explain`.
    Explanation(Box<JobExplanation>),
    /// `AcctQuery`.
    AcctJobs(Vec<AcctJob>),
    /// `AcctTables`.
    AcctTables(acctdb::AcctTables),
    /// `AcctAdmin`.
    AcctAdmin(acctdb::AdminReply),
    /// `AcctUsage`.
    AcctUsage(acctdb::UsageReport),
    /// `AcctDecayedUsage`.
    AcctDecayedUsage(Vec<acctdb::DecayedUsage>),
    /// `AllocationInfo`.
    Allocation(AllocationInfo),
    /// `CreateStep`.
    StepCreated(StepCreated),
    /// `ListSteps`.
    Steps(StepList),
    /// `StepStat`: the job's running steps with their usage so far.
    StepStats(Vec<LiveStepStat>),
    /// Refused.
    Error(SlurmError),
    /// `QueryJobs` with `rows`: the selected jobs as compact rows (with
    /// `stream`: the last part, see [`JobRows::append`]).
    JobRows(JobRows),
    /// `QueryJobs` with `rows` and `stream`: a part of the answer, more to
    /// follow on the same connection (see [`JobRows::append`]).
    JobRowsPart(JobRows),
    /// `CancelJobs`: each selected job with its outcome, in job order.
    Cancelled(Vec<CancelOutcome>),
    /// `Diag`.
    Diag(Box<diag::DiagStats>),
    /// `ListLicenses`: each license in name order.
    Licenses(Vec<LicenseInfo>),
    /// `GetConfig`: slurm.conf first, then the files beside it.
    ConfigFiles(Vec<ConfigFile>),
    /// `Token`: the JWT, without `SLURM_JWT=`. (Appended.)
    Token(String),
    /// `Reconfigure`: the new configuration is in force.
    Reconfigured(ReconfigureReport),
    /// `Reconfigure`: the files were refused (the error, `file:line: ...`);
    /// the configuration in force is unchanged.
    ReconfigureRefused(String),
    /// `CreateReservation`: the name it was given.
    ReservationCreated(String),
    /// `ListReservations`: each reservation by start time, then name.
    Reservations(Vec<resv::ResvInfo>),
    /// `AcctReservations`: the windows, by start then name.
    AcctReservations(Vec<resv::AcctResv>),
    /// `ShowTopology`: the lines to print; None without a topology
    /// plugin. (Appended.)
    Topology(Option<String>),
    /// `Watch`: changes, in order (an empty batch is a heartbeat).
    WatchEvents(watch::WatchBatch),
    /// `Stats`.
    Stats(Box<stats::CtldStats>),
    /// `FabricReports`: node name and report, by name, for the nodes that
    /// sent one since the controller started. (Appended.)
    Fabric(Vec<(String, FabricReport)>),
    /// `HealthChecks`: by node name, each node's runs oldest first.
    /// (Appended.)
    HealthChecks(Vec<health::HealthCheckRun>),
    /// `QueryJobs` with `wire`: the selected jobs, each in its own bytes
    /// (with `stream`: the last part). (Appended.)
    JobWires(JobWires),
    /// `QueryJobs` with `wire` and `stream`: a part of the answer, more to
    /// follow ([`JobWires::append`]). (Appended.)
    JobWiresPart(JobWires),
}

/// One configuration file a controller serves in configless mode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    /// Its name relative to slurm.conf's directory (`slurm.conf`,
    /// `gres.conf`, or the relative path of an `Include`d file).
    pub name: String,
    /// Its contents.
    pub text: String,
}

/// Where a node daemon in configless mode links its cache of the
/// controller's configuration files (`<SlurmdSpoolDir>/conf-cache`), so
/// that commands run on the node find slurm.conf there when `SLURM_CONF`
/// is unset (as Slurm's clients fall back to `/run/slurm/conf`).
pub const CONF_CACHE_LINK: &str = "/run/muster/conf";

/// One license as `scontrol show licenses` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenseInfo {
    /// `LicenseName=`.
    pub name: String,
    /// `Total=`: the count slurm.conf gives it.
    pub total: u32,
    /// `Used=`: what running (and completing) jobs hold.
    pub used: u32,
    /// `Reserved=`: held by advance reservations (always 0: muster's
    /// reservations take no licenses).
    pub reserved: u32,
}

/// `muster explain`: where a job stands in the queue and why, with the
/// numbers behind it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobExplanation {
    /// The job.
    pub job_id: JobId,
    /// Its owner.
    pub user: String,
    /// Its partition(s), comma separated while pending.
    pub partition: String,
    /// Its state.
    pub state: JobState,
    /// Why it waits (Slurm's reason code).
    pub reason: PendingReason,
    /// Its priority.
    pub priority: u32,
    /// 1-based place among the jobs the scheduler tries, in priority
    /// order (the jobs that can only backfill are tried shortest first
    /// with `bf_order=shortest`, after the others); None when it is not
    /// one of them (held, begin time, not pending).
    pub position: Option<u32>,
    /// How many jobs the scheduler tries.
    pub n_queued: u32,
    /// The job tried just before it, with its priority.
    pub ahead: Option<(JobId, u32)>,
    /// The first job tried, with its priority.
    pub first: Option<(JobId, u32)>,
    /// What it asks for, in words (`2 nodes, 8 CPUs, 1000M memory per CPU`).
    pub request: String,
    /// Its time limit.
    pub time_limit: TimeLimit,
    /// Its start (running) or planned start (pending).
    pub start_time: Option<Timestamp>,
    /// The nodes of the plan (pending) or of the allocation (running).
    pub planned_nodes: Vec<String>,
    /// The running jobs on the planned nodes that end by the planned start:
    /// (job, expected end), the last of them first.
    pub waits_for: Vec<(JobId, Timestamp)>,
    /// The nodes its partitions offer it.
    pub candidates: Vec<ExplainNode>,
    /// The reservations it waits for: its own (not begun), or those that
    /// hold nodes it could use within its time limit. Never skipped.
    #[serde(default)]
    pub reservations: Vec<String>,
}

/// A node as `muster explain` describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainNode {
    /// NodeName.
    pub name: String,
    /// State as sinfo's long form (`idle`, `mixed`, `drained`).
    pub state: String,
    /// Configured CPUs.
    pub cpus: u32,
    /// CPUs in use.
    pub alloc_cpus: u32,
    /// Jobs running here, with their expected ends (None: no limit).
    pub jobs: Vec<(JobId, Option<Timestamp>)>,
}

/// The answer to a submission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmitReply {
    /// The new job's id (for `--test-only`, the id it would get).
    pub job_id: JobId,
    /// For `--test-only`: the estimated start time and nodes.
    pub test_only: Option<TestOnlyEstimate>,
    /// The partition the job landed in (sbatch `--parsable` with clusters prints it).
    pub partition: String,
}

/// `sbatch --test-only`'s estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestOnlyEstimate {
    /// When it would start.
    pub start_time: Timestamp,
    /// How many processors.
    pub cpus: u32,
    /// On which nodes (compressed hostlist).
    pub nodes: String,
    /// In which partition.
    pub partition: String,
}

/// The job table and the controller's clock at the time of the answer,
/// so renderers compute run times without reading the local clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobList {
    /// The controller's time when it answered.
    pub now: Timestamp,
    /// The jobs, in the controller's order.
    pub jobs: Vec<JobInfo>,
}

/// A job's weighted priority factors (multifactor), as sprio shows them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriorityFactors {
    /// Site factor.
    pub site: f64,
    /// Age factor times PriorityWeightAge.
    pub age: f64,
    /// Association factor times PriorityWeightAssoc.
    pub assoc: f64,
    /// Fair-share factor times PriorityWeightFairshare.
    pub fairshare: f64,
    /// Job size factor times PriorityWeightJobSize.
    pub jobsize: f64,
    /// Partition factor times PriorityWeightPartition.
    pub partition: f64,
    /// QOS factor times PriorityWeightQOS.
    pub qos: f64,
    /// The job's nice value (subtracted).
    pub nice: i32,
    /// Each PriorityWeightTRES entry's weighted factor.
    pub tres: Vec<(String, f64)>,
}

/// One pending job for sprio.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPriority {
    /// The job.
    pub job_id: JobId,
    /// Its partition.
    pub partition: String,
    /// Owner name.
    pub user: String,
    /// Owner uid.
    pub uid: u32,
    /// Priority.
    pub priority: u32,
    /// Its factors.
    pub factors: PriorityFactors,
}

/// What sprio shows: the weights and the pending jobs' factors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriorityList {
    /// `PriorityType=priority/multifactor`.
    pub multifactor: bool,
    /// The weights as factors of 1 (`sprio -w`).
    pub weights: PriorityFactors,
    /// Pending jobs, by id.
    pub jobs: Vec<JobPriority>,
}

/// One row of sshare: an account or a user association.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShareRow {
    /// Account.
    pub account: String,
    /// User; empty for an account row.
    pub user: String,
    /// Depth in the tree (root 0).
    pub depth: u32,
    /// `Fairshare=` shares (None for root).
    pub raw_shares: Option<u32>,
    /// Shares over the siblings' shares.
    pub norm_shares: f64,
    /// Decayed usage in CPU-seconds.
    pub raw_usage: f64,
    /// Usage over the siblings' usage.
    pub effective_usage: f64,
    /// The fair-share factor (users only).
    pub fairshare: Option<f64>,
}

/// Which jobs a `QueryJobs` returns, and how much of each. Every filter is
/// a pre-selection: a command may filter the answer further, so a filter
/// here must never drop a job the command would show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFilter {
    /// Only jobs of these users, by name or by numeric uid (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// Only jobs that may run in one of these partitions (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    /// Only pending, running, suspended and completing jobs.
    #[serde(default)]
    pub active_only: bool,
    /// Leave out what only detailed views show ([`JobInfo::BRIEF_OMITS`]).
    #[serde(default)]
    pub brief: bool,
    /// With `brief`: more fields the command will not read (its format,
    /// sort keys and filters need none of them), left empty in the answer
    /// so the controller builds and the command decodes less per job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omit: Vec<JobField>,
    /// With `brief`: answer with compact rows (`CtldResponse::JobRows`)
    /// instead of a `JobInfo` per job.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rows: bool,
    /// With `rows`: the controller may send the rows in parts as it
    /// builds them (`CtldResponse::JobRowsPart` frames, then the last
    /// part as `CtldResponse::JobRows`), so the command decodes while the
    /// controller walks its jobs. A controller that does not stream (an
    /// older one, or one whose answer must wait for the journal) sends
    /// the whole answer as one `JobRows`, as without this flag. With
    /// `wire`, the same in `JobWiresPart` and `JobWires`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Only these jobs (empty: all), and the tasks of the arrays among
    /// them (as `scontrol show job` and slurmrestd's `job/{id}` take an
    /// array's id): a page about one job asks for it alone rather than
    /// for the whole table.
    #[serde(default)]
    pub job_ids: Vec<u32>,
    /// Answer with each job's `JobInfo` in its own bytes
    /// (`CtldResponse::JobWires`), for a receiver that compares them with
    /// the last listing's before decoding; with `stream`, in parts as for
    /// `rows`. Not with `rows`. A controller that does not know it answers
    /// `Jobs`.
    #[serde(default)]
    pub wire: bool,
}

/// A text field of [`JobInfo`] that [`JobFilter::omit`] can leave empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobField {
    /// `name`.
    Name,
    /// `user`.
    User,
    /// `group`.
    Group,
    /// `account`.
    Account,
    /// `qos`.
    Qos,
    /// `partition`.
    Partition,
    /// `nodes`.
    Nodes,
    /// `sched_nodes`.
    SchedNodes,
    /// `scheduler`.
    Scheduler,
}

impl JobField {
    /// Every field `omit` may name.
    pub const ALL: [JobField; 9] = [
        JobField::Name,
        JobField::User,
        JobField::Group,
        JobField::Account,
        JobField::Qos,
        JobField::Partition,
        JobField::Nodes,
        JobField::SchedNodes,
        JobField::Scheduler,
    ];
}

impl JobFilter {
    /// Whether the answer carries `field`: always unless `brief` and
    /// `omit` names it.
    pub fn keeps(&self, field: JobField) -> bool {
        !(self.brief && self.omit.contains(&field))
    }

    /// Empties in `job` the text fields this filter omits, as the
    /// controller leaves them (tests compare what commands print from a
    /// full job and from the projected one).
    pub fn strip(&self, job: &mut JobInfo) {
        for f in JobField::ALL.into_iter().filter(|f| !self.keeps(*f)) {
            match f {
                JobField::Name => job.name.clear(),
                JobField::User => job.user.clear(),
                JobField::Group => job.group.clear(),
                JobField::Account => job.account.clear(),
                JobField::Qos => job.qos.clear(),
                JobField::Partition => job.partition.clear(),
                JobField::Nodes => job.nodes.clear(),
                JobField::SchedNodes => job.sched_nodes.clear(),
                JobField::Scheduler => job.scheduler.clear(),
            }
        }
    }
}

impl JobFilter {
    /// Whether a job owned by `user`/`uid`, in `partitions` (a comma list
    /// while pending with several), in state `state`, passes.
    pub fn passes(&self, user: &str, uid: u32, partitions: &str, active: bool) -> bool {
        if self.active_only && !active {
            return false;
        }
        if !self.users.is_empty()
            && !self
                .users
                .iter()
                .any(|u| u == user || u.parse::<u32>().is_ok_and(|n| n == uid))
        {
            return false;
        }
        self.partitions.is_empty()
            || partitions
                .split(',')
                .any(|p| self.partitions.iter().any(|q| q == p))
    }
}

/// Everything the commands show about a job.
///
/// Sent to the commands in rpc's positional binary form (`QueryJobs`): no
/// field here may be skipped when serializing (`serde(default)` is fine).

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    /// The id.
    pub job_id: JobId,
    /// `-J`.
    pub name: String,
    /// Submitting user name.
    pub user: String,
    /// Submitting user id.
    pub uid: u32,
    /// Group name.
    pub group: String,
    /// Group id.
    pub gid: u32,
    /// Account (`-A`, or the cluster default).
    pub account: String,
    /// QOS (`-q`, or `normal`).
    pub qos: String,
    /// The partition it runs or would run in (comma list while pending with several).
    pub partition: String,
    /// Base state.
    pub state: JobState,
    /// COMPLETING flag.
    pub completing: bool,
    /// Why it waits, or why it ended (`None` otherwise).
    pub reason: PendingReason,
    /// Priority.
    pub priority: u32,
    /// Nice.
    pub nice: i32,
    /// Submission time.
    pub submit_time: Timestamp,
    /// When it became eligible.
    pub eligible_time: Timestamp,
    /// When it started, or the estimated start while pending.
    #[serde(default)]
    pub start_time: Option<Timestamp>,
    /// When it ended, or the expected end while running.
    #[serde(default)]
    pub end_time: Option<Timestamp>,
    /// Seconds it has run.
    pub run_time: u64,
    /// Effective time limit.
    pub time_limit: TimeLimit,
    /// `--time-min`.
    #[serde(default)]
    pub time_min: Option<TimeLimit>,
    /// Allocated nodes, in order (empty while pending).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// The node that runs the batch script.
    #[serde(default)]
    pub batch_host: Option<String>,
    /// Allocated node count, or the requested minimum while pending.
    pub num_nodes: u32,
    /// Requested maximum nodes.
    #[serde(default)]
    pub max_nodes: Option<u32>,
    /// Allocated CPUs, or the requested count while pending.
    pub num_cpus: u32,
    /// Tasks.
    pub num_tasks: u32,
    /// `-c`.
    pub cpus_per_task: u32,
    /// `--ntasks-per-node`.
    #[serde(default)]
    pub ntasks_per_node: Option<u32>,
    /// CPUs allocated on each node, in node order.
    #[serde(default)]
    pub cpus_per_node: Vec<u32>,
    /// The CPU ids (each node's own) allocated on each node, in node
    /// order (`scontrol show job -d` `CPU_IDs=`). Empty from controllers
    /// that only counted CPUs. Always written: listings travel in binary
    /// (postcard is positional), where a skipped field misreads the rest.
    #[serde(default)]
    pub cpu_ids_per_node: Vec<Vec<u32>>,
    /// The GRES allocated on each node with their indexes, in node order
    /// (`scontrol show job -d` `GRES=gpu:a100:1(IDX:0)`). Empty from
    /// controllers before it, or where the job has none.
    #[serde(default)]
    pub gres_idx_per_node: Vec<String>,
    /// Memory per CPU in MB, when the request was per CPU.
    #[serde(default)]
    pub mem_per_cpu: Option<u64>,
    /// Memory per node in MB, when the request was per node.
    #[serde(default)]
    pub mem_per_node: Option<u64>,
    /// Requested GRES per node, Slurm's `TresPerNode` (`gres:gpu:2`).
    #[serde(default)]
    pub tres_per_node: Option<String>,
    /// Requested GPUs for the job (`-G`), `TresPerJob`.
    #[serde(default)]
    pub tres_per_job: Option<String>,
    /// Requested GPUs per task, `TresPerTask`.
    #[serde(default)]
    pub tres_per_task: Option<String>,
    /// Allocated TRES (`cpu=4,mem=2000M,node=2,billing=4`), or requested while pending.
    #[serde(default)]
    pub tres: String,
    /// `-w`.
    #[serde(default)]
    pub req_nodes: Vec<String>,
    /// `-x`.
    #[serde(default)]
    pub exc_nodes: Vec<String>,
    /// `-C`.
    #[serde(default)]
    pub features: Option<String>,
    /// `--exclusive`: OverSubscribe=NO, otherwise OK.
    pub exclusive: bool,
    /// Working directory.
    #[serde(default)]
    pub work_dir: String,
    /// The script path or `(null)` for `--wrap` and stdin.
    #[serde(default)]
    pub command: Option<String>,
    /// Resolved stdout path.
    #[serde(default)]
    pub stdout: String,
    /// Resolved stderr path.
    #[serde(default)]
    pub stderr: String,
    /// Resolved stdin path.
    #[serde(default)]
    pub stdin: String,
    /// Exit code (`code:signal`).
    pub exit_code: ExitCode,
    /// Requeue allowed.
    pub requeue: bool,
    /// How many times it was requeued.
    pub restarts: u32,
    /// Stored dependency string.
    #[serde(default)]
    pub dependency: Option<String>,
    /// `--comment`.
    #[serde(default)]
    pub comment: Option<String>,
    /// `AllocNode:Sid`.
    #[serde(default)]
    pub alloc_node: String,
    /// sbatch pid.
    pub alloc_sid: u32,
    /// `Main` or `Backfill`: which pass started it.
    #[serde(default)]
    pub scheduler: String,
    /// Last time the scheduler looked at it.
    #[serde(default)]
    pub last_sched_eval: Option<Timestamp>,
    /// When it was last suspended or resumed (`SuspendTime`).
    #[serde(default)]
    pub suspend_time: Option<Timestamp>,
    /// Seconds it ran before its last suspension (`SecsPreSuspend`).
    #[serde(default)]
    pub secs_pre_suspend: u64,
    /// `--signal`.
    #[serde(default)]
    pub signal: Option<SignalSpec>,
    /// `-b` begin time, when later than submission.
    #[serde(default)]
    pub begin_time: Option<Timestamp>,
    /// Submit line.
    #[serde(default)]
    pub submit_line: String,
    /// Pending: the nodes the backfill plan expects it to start on
    /// (`SchedNodeList`, squeue's `%Y`).
    #[serde(default)]
    pub sched_nodes: Vec<String>,
    /// For an array's records: the array's job id (`ArrayJobId=`).
    #[serde(default)]
    pub array_job_id: Option<u32>,
    /// For one task of an array: its index.
    #[serde(default)]
    pub array_task_id: Option<u32>,
    /// For an array's pending record: the tasks it still holds (`5-9`).
    #[serde(default)]
    pub array_task_str: Option<String>,
    /// For an array's pending record: its `%N` limit (`ArrayTaskThrottle=`).
    #[serde(default)]
    pub array_max_tasks: Option<u32>,
    /// `--deadline`.
    #[serde(default)]
    pub deadline: Option<Timestamp>,
    /// `squeue -O STDOUT` where it differs from `stdout`: Slurm's squeue
    /// shows the pattern as submitted (anchored at the working directory,
    /// no code expanded), while scontrol's `StdOut=` expands `%A %a %j %u
    /// %x`; both show the default (`slurm-%j.out`) expanded.
    #[serde(default)]
    pub stdout_pattern: Option<String>,
    /// `squeue -O STDERR`, as `stdout_pattern`.
    #[serde(default)]
    pub stderr_pattern: Option<String>,
    /// The licenses it asks for, Slurm's spelling (`foo:1,bar:2`;
    /// `Licenses=` in `scontrol show job`, squeue `%W`). None: none.
    #[serde(default)]
    pub licenses: Option<String>,
    /// `--mail-type` (`model::mail` bits; 0: none).
    #[serde(default)]
    pub mail_type: u16,
    /// Who is mailed: `--mail-user`, else the job's user.
    #[serde(default)]
    pub mail_user: Option<String>,
    /// `--reservation`. Never skipped.
    #[serde(default)]
    pub reservation: Option<String>,
    /// CONFIGURING flag: running, but its PrologSlurmctld has not ended
    /// (nothing launched yet). Added after `reservation`.
    #[serde(default)]
    pub configuring: bool,
    /// pyxis's `--container-image` (else `--container-name`): the
    /// `Container=` of `scontrol show job`. Never skipped.
    #[serde(default)]
    pub container: Option<String>,
}

impl JobInfo {
    /// The id as squeue and scontrol print it: `123`, `123_4` for a task,
    /// `123_[5-9%2]` for an array's pending tasks, `123_5` when that is a
    /// single task (as Slurm shows a throttled array's last one).
    pub fn display_id(&self) -> String {
        match (self.array_job_id, self.array_task_id, &self.array_task_str) {
            (Some(a), Some(t), _) => format!("{a}_{t}"),
            (Some(a), None, Some(list)) if list.parse::<u32>().is_ok() => format!("{a}_{list}"),
            (Some(a), None, Some(list)) => match self.array_max_tasks {
                Some(n) if n > 0 => format!("{a}_[{list}%{n}]"),
                _ => format!("{a}_[{list}]"),
            },
            _ => self.job_id.to_string(),
        }
    }
}

impl JobInfo {
    /// What a brief `JobInfo` leaves empty: the request's details, paths,
    /// TRES strings and submit line (`scontrol show job` and `squeue`
    /// formats such as `%Z`, `%o`, `%E` need the full form).
    pub const BRIEF_OMITS: &'static [&'static str] = &[
        "tres",
        "tres_per_node",
        "tres_per_job",
        "tres_per_task",
        "req_nodes",
        "exc_nodes",
        "features",
        "work_dir",
        "command",
        "stdout",
        "stderr",
        "stdin",
        "stdout_pattern",
        "stderr_pattern",
        "dependency",
        "comment",
        "alloc_node",
        "submit_line",
        "signal",
        "cpus_per_node",
        "cpu_ids_per_node",
        "gres_idx_per_node",
    ];
}

/// Everything the commands show about a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// NodeName.
    pub name: String,
    /// NodeAddr.
    pub addr: String,
    /// NodeHostname.
    pub hostname: String,
    /// Port the node daemon listens on.
    pub port: u16,
    /// State with flags.
    pub state: NodeState,
    /// Configured CPUs.
    pub cpus: u32,
    /// Boards.
    pub boards: u32,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Threads per core.
    pub threads_per_core: u32,
    /// RealMemory (MB).
    pub real_memory: u64,
    /// TmpDisk (MB).
    pub tmp_disk: u64,
    /// Weight.
    pub weight: u32,
    /// CPUs allocated to jobs.
    pub alloc_cpus: u32,
    /// Memory allocated to jobs (MB).
    pub alloc_mem: u64,
    /// Free memory reported by the node.
    pub free_mem: Option<u64>,
    /// Load average reported by the node.
    pub cpu_load: Option<f64>,
    /// Configured GRES.
    pub gres: Vec<Gres>,
    /// GRES in use.
    pub gres_used: Vec<Gres>,
    /// Features.
    pub features: Vec<String>,
    /// Partitions containing it.
    pub partitions: Vec<String>,
    /// Drain/down reason.
    pub reason: Option<String>,
    /// Who set the reason.
    pub reason_user: Option<String>,
    /// When the reason was set.
    pub reason_time: Option<Timestamp>,
    /// Host boot time.
    pub boot_time: Option<Timestamp>,
    /// When its daemon started.
    pub slurmd_start_time: Option<Timestamp>,
    /// Last time it was busy.
    pub last_busy: Option<Timestamp>,
    /// Version its daemon reported.
    pub version: Option<String>,
    /// OS its daemon reported.
    pub os: Option<String>,
    /// Architecture its daemon reported.
    pub arch: Option<String>,
    /// In an active reservation: 0 none, 1 (`RESERVED`), 2 a MAINT one
    /// (sinfo's `resv` and `maint`). Never skipped.
    #[serde(default)]
    pub resv: u8,
    /// REBOOT_ISSUED (`NodeState::reboot_issued` is not encoded; the
    /// client library copies this into it). (Appended.)
    #[serde(default)]
    pub reboot_issued: bool,
    /// `NextState=` of a pending or issued reboot. (Appended.)
    #[serde(default)]
    pub next_state: Option<RebootNextState>,
}

/// Everything the commands show about a partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionInfo {
    /// PartitionName.
    pub name: String,
    /// Default=YES.
    pub default: bool,
    /// Member nodes, in configuration order.
    pub nodes: Vec<String>,
    /// State=UP/DOWN/DRAIN/INACTIVE.
    pub state: String,
    /// MaxTime.
    pub max_time: TimeLimit,
    /// DefaultTime.
    pub default_time: Option<TimeLimit>,
    /// MaxNodes.
    pub max_nodes: Option<u32>,
    /// MinNodes.
    pub min_nodes: u32,
    /// PriorityTier.
    pub priority_tier: u32,
    /// PriorityJobFactor.
    pub priority_job_factor: u32,
    /// OverSubscribe as written (NO, EXCLUSIVE, YES:4, FORCE:4).
    pub oversubscribe: String,
    /// AllowAccounts (None: ALL).
    pub allow_accounts: Option<Vec<String>>,
    /// AllowGroups (None: ALL).
    pub allow_groups: Option<Vec<String>>,
    /// DefMemPerCPU.
    pub def_mem_per_cpu: Option<u64>,
    /// MaxMemPerNode.
    pub max_mem_per_node: Option<u64>,
    /// Sum of member CPUs.
    pub total_cpus: u32,
    /// Member count.
    pub total_nodes: u32,
    /// Partition TRES (`cpu=8,mem=16000M,node=4,billing=8,gres/gpu=4`).
    pub tres: String,
    /// The access keys slurm.conf or scontrol set, as text, by the key as
    /// Slurm spells it (`AllowQos`, `DenyAccounts`, `DenyQos`, `RootOnly`,
    /// `DisableRootJobs`, `ExclusiveUser`, `GraceTime`, `LLN`,
    /// `MaxCPUsPerNode`); absent ones are Slurm's defaults. (Added at the
    /// end: positional binary form.)
    #[serde(default)]
    pub access: Vec<(String, String)>,
}

/// `scontrol show config`: effective settings in display order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigInfo {
    /// The controller's time when it answered.
    pub now: Timestamp,
    /// `Key`, `Value` pairs as `scontrol show config` prints them.
    pub entries: Vec<(String, String)>,
}

/// Requests from the controller to a node daemon.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum NodeRequest {
    /// Liveness check.
    Ping,
    /// Start a batch script.
    LaunchBatch(Box<BatchLaunch>),
    /// Send a signal to a job's processes.
    Signal {
        /// The job.
        job_id: JobId,
        /// Signal number.
        signal: i32,
        /// Which processes.
        scope: SignalScope,
    },
    /// End a job: SIGCONT+SIGTERM, then SIGKILL after `kill_wait` seconds.
    Terminate {
        /// The job.
        job_id: JobId,
        /// Seconds between SIGTERM and SIGKILL.
        kill_wait: u32,
        /// Why, when the user's log gets slurmstepd's banner for it.
        #[serde(default)]
        reason: Option<EndReason>,
    },
    /// The controller is shutting down with `muster down`: stop too.
    Shutdown,
    /// Start this node's tasks of a step.
    LaunchStep(Box<StepLaunch>),
    /// Start the job's extern step here (PrologFlags=Contain): a holder
    /// process in the step's cgroup for the job's life, measured like any
    /// step.
    StartExtern {
        /// The job.
        job_id: JobId,
        /// User to run it as.
        uid: u32,
        /// Group to run it as.
        gid: u32,
        /// This node's index in the allocation: the extern step's task id
        /// here (one task a node).
        node_index: u32,
        /// `--acctg-freq`, if given: the usage sampling interval.
        acctg_freq: Option<String>,
    },
    /// End the job's extern step here: kill the holder and report its
    /// usage (`CtldRequest::ExternEnded`). Nothing to do when none runs.
    EndExtern {
        /// The job.
        job_id: JobId,
    },
    /// The live usage of a job's steps on this node (sstat).
    StepStat {
        /// The job.
        job_id: JobId,
    },
    /// Opens a kept connection (the controller's, one per node): the
    /// envelope's credential authenticates the controller once, and the
    /// daemon's answer carries the daemon's own credential, which the
    /// controller checks in turn. What follows on the same connection are
    /// `InSession` requests without credentials (ARCHITECTURE.md,
    /// "Kept node connections").
    OpenSession,
    /// A request on a connection opened with `OpenSession`: `seq` counts
    /// from 1 and must grow by exactly one per request, so a frame repeated
    /// or dropped within the connection ends it. Refused on any other
    /// connection (it carries no credential of its own).
    InSession {
        /// This request's number on its connection.
        seq: u64,
        /// The request.
        request: Box<NodeRequest>,
    },
    /// Signal the tasks of a step (`kill_wait`: SIGTERM now, SIGKILL after
    /// that many seconds, when `signal` is None).
    SignalStep {
        /// The job.
        job_id: JobId,
        /// The step.
        step_id: u32,
        /// The signal, or None to end the step.
        signal: Option<i32>,
        /// KillWait for ending it.
        kill_wait: u32,
        /// Ending it because its own time limit passed: the supervisor
        /// says so with slurmstepd's banner.
        #[serde(default)]
        time_limit: bool,
        /// Set when the step is being ended (by `scancel J.S`, with
        /// SIGKILL, or with its job, with `signal` None): the banner its
        /// srun prints, and srun is told.
        #[serde(default)]
        reason: Option<EndReason>,
    },
    /// `scontrol notify`: write `slurmstepd-<node>: error: <message>` to
    /// the batch script's stderr. (Added last: the variants before keep
    /// their numbers; an older daemon refuses it.)
    Notify {
        /// The job.
        job_id: JobId,
        /// The text.
        message: String,
    },
    /// `scontrol listpids`: the processes of the jobs here (one job, one
    /// of its steps), the caller's own unless root or SlurmUser asks.
    /// Anyone authenticated may send it.
    ListPids {
        /// Only this job.
        job_id: Option<JobId>,
        /// Only this numbered step of it.
        step_id: Option<u32>,
    },
    /// `scontrol reboot`: run RebootProgram (slurm.conf) as the daemon's
    /// user (root). The host comes back with a new boot id and
    /// registers again. (Appended.)
    Reboot,
    /// `sattach`: the step's supervisor here connects to `addr`, says
    /// `StepdToSrun::Hello` with `token`, and from then on copies its
    /// tasks' output there too and takes stdin and signals from there.
    /// Anyone authenticated may send it; the daemon lets only the step's
    /// owner (or root and SlurmUser) attach. (Appended.)
    Attach {
        /// The job.
        job_id: JobId,
        /// The step.
        step_id: u32,
        /// `host:port` sattach listens on.
        addr: String,
        /// sattach's secret, which the supervisor's Hello carries.
        token: String,
    },
    /// `scontrol reconfigure` ran: a configless daemon (`--conf-server`)
    /// fetches the files again and refreshes its cache, as slurmd does.
    /// (Added last; an older daemon refuses it.)
    Reconfigure,
}

/// One process of a job on a node (`scontrol listpids`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobProcess {
    /// Its pid.
    pub pid: u32,
    /// The job.
    pub job_id: JobId,
    /// The step: `batch` or its number.
    pub step: String,
    /// A task's local id (`SLURM_LOCALID`); None for the processes a task
    /// started.
    pub local_id: Option<u32>,
    /// A task's global id (`SLURM_PROCID`); None as `local_id`.
    pub global_id: Option<u32>,
}

/// Why the controller ends a job's or a step's processes: what the banner
/// slurmstepd writes into the user's log says
/// (`*** JOB 12 ON node1 CANCELLED AT 2026-12-06T14:20:24 DUE TO TIME LIMIT ***`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndReason {
    /// scancel, or an allocation given back.
    Cancelled,
    /// The time limit passed.
    TimeLimit,
    /// A higher-priority job preempted it.
    Preempted,
}

impl EndReason {
    /// What follows the time in the banner.
    pub fn banner_suffix(self) -> &'static str {
        match self {
            EndReason::Cancelled => "",
            EndReason::TimeLimit => " DUE TO TIME LIMIT",
            EndReason::Preempted => " DUE TO PREEMPTION",
        }
    }

    /// slurmstepd's banner for `what` (`JOB 12`, `STEP 12.0`) on `node`,
    /// ended at `time` (Slurm's local `2026-12-06T14:20:24`), newline
    /// included.
    pub fn banner(self, what: &str, node: &str, time: &str) -> String {
        format!(
            "slurmstepd: error: *** {what} ON {node} CANCELLED AT {time}{} ***\n",
            self.banner_suffix()
        )
    }
}

/// A node's site script (slurm.conf "Prolog and Epilog Scripts").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeScript {
    /// `Prolog`.
    Prolog,
    /// `Epilog`.
    Epilog,
}

/// Everything a node needs to start a batch script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchLaunch {
    /// The job.
    pub job_id: JobId,
    /// User to run as.
    pub uid: u32,
    /// Group to run as.
    pub gid: u32,
    /// User name (for the supplementary groups).
    pub user: String,
    /// Script text.
    pub script: String,
    /// Script arguments.
    pub argv: Vec<String>,
    /// Complete environment except what only the node knows
    /// (`SLURMD_NODENAME`, `SLURM_TASK_PID`, ...).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub work_dir: String,
    /// stdout path, already expanded.
    pub stdout: String,
    /// stderr path, already expanded (equal to stdout when not split).
    pub stderr: String,
    /// stdin path.
    pub stdin: String,
    /// Append rather than truncate.
    pub open_append: bool,
    /// CPUs allocated on this node.
    pub cpus: u32,
    /// Memory allocated on this node (MB).
    pub mem: u64,
    /// GPU indexes allocated on this node.
    pub gpus: Vec<u32>,
    /// The CPU ids (the node's) the job holds here (cgroup.conf
    /// `ConstrainCores`). Empty from older controllers: not confined.
    #[serde(default)]
    pub cpu_ids: Vec<u32>,
    /// `--signal` to deliver before the limit: handled by the controller, kept for the node's log.
    pub time_limit_secs: Option<u64>,
    /// `--acctg-freq`, if given: the usage sampling interval.
    #[serde(default)]
    pub acctg_freq: Option<String>,
    /// Which run of the job this is (`SLURM_RESTART_COUNT`): a node that
    /// saw run N end refuses a late copy of run N's launch, never run N+1.
    #[serde(default)]
    pub restarts: u32,
    /// The job's container options (`JobDesc::container`): the script
    /// runs in that container.
    #[serde(default)]
    pub container: Vec<(String, String)>,
}

/// Answers from a node daemon.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum NodeResponse {
    /// Done.
    Ok,
    /// Could not do it, with the reason.
    Failed(String),
    /// `StepStat`: this node's share of each of the job's running steps.
    StepStats(Vec<NodeStepStat>),
    /// `ListPids`: the processes found, by job, step and pid.
    Pids(Vec<JobProcess>),
}

/// One node's share of a running step, as its supervisor last sampled it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeStepStat {
    /// The step.
    pub step: StepId,
    /// What its tasks on this node used so far.
    pub usage: StepUsage,
    /// The pids of its tasks on this node.
    pub pids: Vec<u32>,
}

/// sstat's view of one running step: its nodes' reports merged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveStepStat {
    /// The job.
    pub job_id: JobId,
    /// The step.
    pub step: StepId,
    /// Its nodes, in step order.
    pub nodes: Vec<String>,
    /// Its tasks.
    pub ntasks: u32,
    /// What it used so far, merged over the nodes that answered.
    pub usage: StepUsage,
    /// Each answering node's task pids.
    pub pids: Vec<(String, Vec<u32>)>,
}

/// A list of CPU ids as Slurm and the kernel's cpusets write it: ranges
/// joined by commas (`0-1,4`), ascending; empty for none.
pub fn cpu_list(ids: &[u32]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_usage_merges_nodes_reports() {
        let node = |name: &str, rss, task, cpu, tasks| StepUsage {
            user_cpu_usec: Some(cpu),
            sys_cpu_usec: Some(0),
            max_rss_kib: Some(rss),
            max_rss_node: Some(name.into()),
            max_rss_task: Some(task),
            ave_rss_kib: Some(rss / 2),
            min_cpu_usec: Some(cpu),
            min_cpu_node: Some(name.into()),
            min_cpu_task: Some(task),
            ave_cpu_usec: Some(cpu),
            n_tasks: Some(tasks),
            ..StepUsage::default()
        };
        let mut u = StepUsage::default();
        u.merge(&node("n1", 100, 0, 10, 1));
        u.merge(&node("n2", 300, 3, 5, 3));
        assert_eq!(u.max_rss_kib, Some(300));
        assert_eq!(u.max_rss_node.as_deref(), Some("n2"));
        assert_eq!(u.max_rss_task, Some(3));
        assert_eq!(u.min_cpu_usec, Some(5));
        assert_eq!(u.min_cpu_task, Some(3));
        assert_eq!(u.user_cpu_usec, Some(15));
        // (50 * 1 + 150 * 3) / 4
        assert_eq!(u.ave_rss_kib, Some(125));
        assert_eq!(u.n_tasks, Some(4));
        // Absent values are left out of the record.
        let text = serde_json::to_string(&StepUsage::default()).unwrap();
        assert_eq!(text, "{}");
    }

    #[test]
    fn a_state_save_failure_reads_as_slurm_words_its_cause_and_round_trips() {
        let all = [
            SaveFailure::NoSpace,
            SaveFailure::QuotaExceeded,
            SaveFailure::ReadOnlyFileSystem,
            SaveFailure::NotPermitted,
            SaveFailure::PermissionDenied,
            SaveFailure::Io,
            SaveFailure::FileTooLarge,
            SaveFailure::NotFound,
            SaveFailure::Other,
        ];
        for cause in all {
            let err = SlurmError::StateSaveFailed(cause);
            assert_eq!(
                err.as_slurm_str(),
                format!("Slurm controller state save failed: {}", cause.as_str())
            );
            let resp = CtldResponse::Error(err);
            let json = serde_json::to_string(&resp).unwrap();
            let back: CtldResponse = serde_json::from_str(&json).unwrap();
            assert!(matches!(back, CtldResponse::Error(e) if e == err), "{json}");
            let bin = postcard::to_allocvec(&resp).unwrap();
            let back: CtldResponse = postcard::from_bytes(&bin).unwrap();
            assert!(matches!(back, CtldResponse::Error(e) if e == err));
        }
        // Appended: the variants before it keep their binary numbers.
        let bin = postcard::to_allocvec(&SlurmError::InvalidJobId).unwrap();
        assert_eq!(bin, [0]);
    }

    /// `QueryJobs` answers travel positionally: a pending job (no CPU
    /// ids, no licenses) and a running one with both decode as sent.
    #[test]
    fn job_infos_round_trip_in_binary_with_and_without_optional_fields() {
        let pending = JobInfo::default();
        let running = JobInfo {
            cpu_ids_per_node: vec![vec![0, 1]],
            licenses: Some("matlab:1".into()),
            ..JobInfo::default()
        };
        for job in [pending, running] {
            let bin = postcard::to_allocvec(&job).unwrap();
            let back: JobInfo = postcard::from_bytes(&bin).unwrap();
            assert_eq!(back.cpu_ids_per_node, job.cpu_ids_per_node);
            assert_eq!(back.licenses, job.licenses);
        }
    }

    #[test]
    fn submit_tokens_are_32_hex_digits_and_older_descriptions_have_none() {
        let t = SubmitToken::from_bytes([0xab; 16]);
        assert_eq!(t.text(), "ab".repeat(16));
        assert_eq!(SubmitToken::parse(&t.text()), Some(t));
        assert_eq!(SubmitToken::parse("0F"), Some(SubmitToken(15)));
        for bad in ["", "x", &"1".repeat(33), "+1", " 1"] {
            assert_eq!(SubmitToken::parse(bad), None, "{bad:?}");
        }
        // A description from a client before tokens decodes without one.
        let mut old = serde_json::to_value(JobDesc::default()).unwrap();
        old.as_object_mut().unwrap().remove("submit_token");
        let back: JobDesc = serde_json::from_value(old).unwrap();
        assert_eq!(back.submit_token, None);
    }

    #[test]
    fn job_desc_round_trips_through_json() {
        let desc = JobDesc {
            name: "x".into(),
            gres: vec![Gres::parse("gpu:a100:2").unwrap()],
            time_limit: Some(TimeLimit::Minutes(5)),
            ..JobDesc::default()
        };
        let env = Envelope {
            version: PROTOCOL_VERSION,
            identity: Identity {
                uid: 1,
                gid: 1,
                user: "u".into(),
                host: "h".into(),
            },
            credential: Some("c.d".into()),
            body: CtldRequest::Submit(Box::new(desc.clone())),
        };
        let text = serde_json::to_string(&env).unwrap();
        let back: Envelope<CtldRequest> = serde_json::from_str(&text).unwrap();
        assert_eq!(back.credential.as_deref(), Some("c.d"));
        match back.body {
            CtldRequest::Submit(d) => assert_eq!(*d, desc),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn in_session_ref_encodes_as_the_owned_form() {
        let req = CtldRequest::Submit(Box::new(JobDesc {
            name: "x".into(),
            env: vec![("A".into(), "1".into())].into(),
            ..JobDesc::default()
        }));
        let by_ref = InSessionRef {
            seq: 7,
            request: &req,
        };
        let owned = CtldRequest::InSession {
            seq: 7,
            request: Box::new(req.clone()),
        };
        assert_eq!(
            serde_json::to_string(&by_ref).unwrap(),
            serde_json::to_string(&owned).unwrap()
        );
        let bytes = postcard::to_allocvec(&by_ref).unwrap();
        assert_eq!(bytes, postcard::to_allocvec(&owned).unwrap());
        match postcard::from_bytes::<CtldRequest>(&bytes).unwrap() {
            CtldRequest::InSession { seq: 7, request } => {
                assert!(matches!(*request, CtldRequest::Submit(ref d) if d.name == "x"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn an_environment_decoded_again_is_shared_and_equal() {
        let desc = |vars: &[(&str, &str)]| JobDesc {
            env: std::sync::Arc::new(
                vars.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..JobDesc::default()
        };
        let a = desc(&[("A", "1"), ("PATH", "/bin:/usr/bin")]);
        let b = desc(&[("A", "1"), ("PATH", "/bin")]);
        let quoted = desc(&[("Q", "say \"hi\"\n\u{e9}")]);
        let bin = |d: &JobDesc| postcard::to_allocvec(d).unwrap();
        let a1: JobDesc = postcard::from_bytes(&bin(&a)).unwrap();
        let a2: JobDesc = postcard::from_bytes(&bin(&a)).unwrap();
        assert_eq!(a1, a);
        assert!(std::sync::Arc::ptr_eq(&a1.env, &a2.env));
        let b1: JobDesc = postcard::from_bytes(&bin(&b)).unwrap();
        assert_eq!(b1, b);
        assert!(!std::sync::Arc::ptr_eq(&a1.env, &b1.env));
        // JSON, escapes (not borrowed) and all; an empty environment.
        let text = serde_json::to_string(&quoted).unwrap();
        let q1: JobDesc = serde_json::from_str(&text).unwrap();
        let q2: JobDesc = serde_json::from_reader(text.as_bytes()).unwrap();
        assert_eq!(q1, quoted);
        assert_eq!(q2, quoted);
        let empty: JobDesc = postcard::from_bytes(&bin(&JobDesc::default())).unwrap();
        assert!(empty.env.is_empty());
    }

    #[test]
    fn envelope_without_a_credential_still_decodes() {
        let text =
            r#"{"version":1,"identity":{"uid":1,"gid":1,"user":"u","host":"h"},"body":"Ping"}"#;
        let env: Envelope<CtldRequest> = serde_json::from_str(text).unwrap();
        assert_eq!(env.credential, None);
    }
}

/// Which step of a job an accounting record describes (sacct's `JobID`
/// suffix: `123.batch`, `123.extern`, `123.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum StepId {
    /// The batch script (`.batch`).
    Batch,
    /// The extern step (`.extern`).
    Extern,
    /// A numbered step from srun (`.0`, `.1`, ...).
    Numbered(u32),
}

impl StepId {
    /// The suffix sacct prints after the job id and a dot.
    pub fn as_slurm_string(self) -> String {
        match self {
            StepId::Batch => "batch".into(),
            StepId::Extern => "extern".into(),
            StepId::Numbered(n) => n.to_string(),
        }
    }
}

/// Usage measured for a step by the node daemons (all optional: a step that
/// never ran, or ran before usage gathering existed, has none). Absent
/// values are left out of the encoding, which keeps accounting records of
/// steps without usage small.
///
/// Memory figures are per task (a task's RSS is the sum over its
/// processes), as Slurm's jobacct_gather keeps them: `max_*` is the largest
/// value any task reached, with the node and the task (global task id) where
/// it was seen; `ave_*` is the mean over the step's tasks of each task's
/// mean over its samples. CPU figures come from the kernel's rusage of the
/// reaped tasks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepUsage {
    /// User CPU time in microseconds, summed over the step's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_cpu_usec: Option<u64>,
    /// System CPU time in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sys_cpu_usec: Option<u64>,
    /// Largest resident set size of any task, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
    /// Average resident set size over the tasks, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_rss_kib: Option<u64>,
    /// Largest virtual memory size of any task, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vmsize_kib: Option<u64>,
    /// The node where MaxRSS was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_node: Option<String>,
    /// The task where MaxRSS was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_task: Option<u32>,
    /// The node where MaxVMSize was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vmsize_node: Option<String>,
    /// The task where MaxVMSize was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_vmsize_task: Option<u32>,
    /// Average virtual memory size over the tasks, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_vmsize_kib: Option<u64>,
    /// Most major page faults of any task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages: Option<u64>,
    /// The node where MaxPages was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages_node: Option<String>,
    /// The task where MaxPages was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages_task: Option<u32>,
    /// Average major page faults over the tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_pages: Option<u64>,
    /// Least CPU time (user + system) of any task, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_usec: Option<u64>,
    /// The node of MinCPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_node: Option<String>,
    /// The task of MinCPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_task: Option<u32>,
    /// Average CPU time over the tasks, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ave_cpu_usec: Option<u64>,
    /// How many tasks the averages are over (to merge nodes' reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_tasks: Option<u32>,
    /// The step's container start-up, in microseconds: from the node's
    /// step supervisor starting until its container was ready (the image's
    /// import or pull included), the slowest node's; None for a step
    /// without a container (sacct's and sstat's `ContainerStart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_start_usec: Option<u64>,
}

impl StepUsage {
    /// Folds another node's report of the same step into this one: sums of
    /// CPU time, maxima and minima with where they were seen, averages
    /// weighted by the tasks behind them.
    pub fn merge(&mut self, other: &StepUsage) {
        if *self == StepUsage::default() {
            *self = other.clone();
            return;
        }
        fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            }
        }
        fn max_at<N: Clone, T: Copy>(
            v: &mut Option<u64>,
            node: &mut Option<N>,
            task: &mut Option<T>,
            o: Option<u64>,
            onode: &Option<N>,
            otask: Option<T>,
            less: bool,
        ) {
            let better = match (*v, o) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(a), Some(b)) => {
                    if less {
                        b < a
                    } else {
                        b > a
                    }
                }
            };
            if better {
                *v = o;
                *node = onode.clone();
                *task = otask;
            }
        }
        let (na, nb) = (
            u64::from(self.n_tasks.unwrap_or(1)),
            u64::from(other.n_tasks.unwrap_or(1)),
        );
        let ave = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (Some(a), None) => Some(a),
            (None, Some(b)) => Some(b),
            (Some(a), Some(b)) => Some((a * na + b * nb) / (na + nb)),
        };
        self.ave_rss_kib = ave(self.ave_rss_kib, other.ave_rss_kib);
        self.ave_vmsize_kib = ave(self.ave_vmsize_kib, other.ave_vmsize_kib);
        self.ave_pages = ave(self.ave_pages, other.ave_pages);
        self.ave_cpu_usec = ave(self.ave_cpu_usec, other.ave_cpu_usec);
        self.user_cpu_usec = add(self.user_cpu_usec, other.user_cpu_usec);
        self.sys_cpu_usec = add(self.sys_cpu_usec, other.sys_cpu_usec);
        max_at(
            &mut self.max_rss_kib,
            &mut self.max_rss_node,
            &mut self.max_rss_task,
            other.max_rss_kib,
            &other.max_rss_node,
            other.max_rss_task,
            false,
        );
        max_at(
            &mut self.max_vmsize_kib,
            &mut self.max_vmsize_node,
            &mut self.max_vmsize_task,
            other.max_vmsize_kib,
            &other.max_vmsize_node,
            other.max_vmsize_task,
            false,
        );
        max_at(
            &mut self.max_pages,
            &mut self.max_pages_node,
            &mut self.max_pages_task,
            other.max_pages,
            &other.max_pages_node,
            other.max_pages_task,
            false,
        );
        max_at(
            &mut self.min_cpu_usec,
            &mut self.min_cpu_node,
            &mut self.min_cpu_task,
            other.min_cpu_usec,
            &other.min_cpu_node,
            other.min_cpu_task,
            true,
        );
        if self.n_tasks.is_some() || other.n_tasks.is_some() {
            self.n_tasks = Some((na + nb) as u32);
        }
        self.container_start_usec = self.container_start_usec.max(other.container_start_usec);
    }
}

/// One step of a job as the accounting store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AcctStep {
    /// Which step.
    pub step: StepId,
    /// Step name (`batch`, `extern`, or the command for numbered steps).
    pub name: String,
    /// State (`RUNNING`, `COMPLETED`, `CANCELLED`, ...).
    pub state: JobState,
    /// Exit status.
    pub exit_code: ExitCode,
    /// Start time.
    pub start_time: Option<Timestamp>,
    /// End time.
    pub end_time: Option<Timestamp>,
    /// Nodes (compressed hostlist).
    pub nodes: String,
    /// Node count.
    pub n_nodes: u32,
    /// CPUs.
    pub n_cpus: u32,
    /// Tasks.
    pub n_tasks: u32,
    /// Allocated TRES (`cpu=1,mem=500M,node=1`).
    pub alloc_tres: String,
    /// Measured usage.
    pub usage: StepUsage,
    /// pyxis's `--container-image` (else `--container-name`) the step ran
    /// in: sacct's `Container`.
    #[serde(default)]
    pub container: Option<String>,
}

/// One job (or array task) as the accounting store keeps it. Written as the
/// job moves (submit, eligible, start, end); every write for the same
/// (cluster, job id, submit time) replaces the previous one, so writes are
/// idempotent and can be replayed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AcctJob {
    /// ClusterName.
    pub cluster: String,
    /// The job id (`JobIDRaw`).
    pub job_id: JobId,
    /// For an array task: the array's job id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_job_id: Option<u32>,
    /// For an array task: its index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_task_id: Option<u32>,
    /// For an array's record that never split into tasks: the tasks it
    /// held (`0-3`, with `%N` when throttled), printed as `123_[0-3]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_task_str: Option<String>,
    /// Job name.
    pub name: String,
    /// User name.
    pub user: String,
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// Account.
    pub account: String,
    /// QOS.
    pub qos: String,
    /// Partition.
    pub partition: String,
    /// State.
    pub state: JobState,
    /// For CANCELLED: the uid that cancelled it (`CANCELLED by <uid>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<u32>,
    /// Reason (`None`, `NonZeroExitCode`, `TimeLimit`, ...).
    pub reason: String,
    /// Exit status.
    pub exit_code: ExitCode,
    /// Priority at the last write.
    pub priority: u32,
    /// Submission time.
    pub submit_time: Timestamp,
    /// Eligible time.
    pub eligible_time: Option<Timestamp>,
    /// Start time.
    pub start_time: Option<Timestamp>,
    /// End time.
    pub end_time: Option<Timestamp>,
    /// Time limit.
    pub time_limit: TimeLimit,
    /// Nodes (compressed hostlist; `None assigned` while pending).
    pub nodes: String,
    /// Node count.
    pub n_nodes: u32,
    /// Allocated CPUs (requested while pending).
    pub n_cpus: u32,
    /// Requested memory as sacct's ReqMem shows it (`500M`, `4G`).
    pub req_mem: String,
    /// Requested TRES (`billing=1,cpu=1,mem=500M,node=1`).
    pub req_tres: String,
    /// Allocated TRES.
    pub alloc_tres: String,
    /// Working directory.
    pub work_dir: String,
    /// The submit command line.
    pub submit_line: String,
    /// `--comment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Seconds it spent suspended (sacct's `Suspended`; not in `Elapsed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub suspended_secs: i64,
    /// Steps, in order.
    pub steps: Vec<AcctStep>,
    /// pyxis's `--container-image` (else `--container-name`) given to
    /// sbatch or salloc: sacct's `Container` (as `scontrol show job`'s).
    #[serde(default)]
    pub container: Option<String>,
}

/// For `skip_serializing_if`: a count left at its default.
pub fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// Which job records sacct asks for; empty lists match everything.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcctQuery {
    /// Only this cluster (None: the controller's own).
    #[serde(default)]
    pub cluster: Option<String>,
    /// Only these job ids.
    #[serde(default)]
    pub job_ids: Vec<u32>,
    /// Only these users.
    #[serde(default)]
    pub users: Vec<String>,
    /// Only these accounts.
    #[serde(default)]
    pub accounts: Vec<String>,
    /// Only jobs in these states.
    #[serde(default)]
    pub states: Vec<JobState>,
    /// Only jobs with these names.
    #[serde(default)]
    pub names: Vec<String>,
    /// Only these partitions.
    #[serde(default)]
    pub partitions: Vec<String>,
    /// Jobs eligible or running at or after this time.
    #[serde(default)]
    pub start: Option<Timestamp>,
    /// Jobs eligible or running at or before this time.
    #[serde(default)]
    pub end: Option<Timestamp>,
}
