//! The vocabulary of muster: job and node identities, states, pending reasons,
//! exit codes, GRES requests and Slurm's time and memory units.
//!
//! Pure: no I/O, no clock. Every enum that Slurm prints has `as_slurm_str()`
//! returning Slurm's exact spelling, because scripts parse it.
#![warn(missing_docs)]

pub mod array;
pub mod depend;
pub mod filename;
pub mod hash;
pub mod licenses;
pub mod mail;
pub mod units;

use serde::{Deserialize, Serialize};
use std::fmt;

pub use units::{TimeLimit, UnitError};

/// Seconds since the Unix epoch. The pure crates never read the clock: the
/// shell passes `now` in.
pub type Timestamp = i64;

/// A job's numeric id, as Slurm prints it (`SLURM_JOB_ID`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct JobId(pub u32);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The base state of a job (`squeue -t`, `JobState=` in `scontrol show job`).
/// The COMPLETING flag is kept separately, as Slurm does: a job that ended
/// but whose processes are still being cleaned up is shown as COMPLETING.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum JobState {
    /// Queued, waiting for resources or for a reason.
    #[default]
    Pending,
    /// Allocated and running.
    Running,
    /// Suspended by an administrator or by preemption.
    Suspended,
    /// All processes ended with exit code 0.
    Completed,
    /// Cancelled by a user or an administrator.
    Cancelled,
    /// Ended with a nonzero exit code or a signal.
    Failed,
    /// Reached its time limit.
    Timeout,
    /// A node of the allocation failed.
    NodeFail,
    /// Preempted by a higher-priority job.
    Preempted,
    /// A node could not boot.
    BootFail,
    /// Reached its deadline.
    Deadline,
    /// Killed by the out-of-memory handler.
    OutOfMemory,
    /// An earlier run of a job that was requeued (accounting history).
    Requeued,
}

impl JobState {
    /// Slurm's long spelling (`PENDING`, `RUNNING`, ...).
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Suspended => "SUSPENDED",
            JobState::Completed => "COMPLETED",
            JobState::Cancelled => "CANCELLED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Requeued => "REQUEUED",
        }
    }

    /// Slurm's compact spelling for `squeue %t` (`PD`, `R`, ...).
    pub fn as_short_str(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Suspended => "S",
            JobState::Completed => "CD",
            JobState::Cancelled => "CA",
            JobState::Failed => "F",
            JobState::Timeout => "TO",
            JobState::NodeFail => "NF",
            JobState::Preempted => "PR",
            JobState::BootFail => "BF",
            JobState::Deadline => "DL",
            JobState::OutOfMemory => "OOM",
            JobState::Requeued => "RQ",
        }
    }

    /// Parses a state as `squeue -t` and `scancel -t` accept it: long or
    /// short form, any case.
    pub fn parse(s: &str) -> Option<JobState> {
        let up = s.to_ascii_uppercase();
        ALL_JOB_STATES
            .iter()
            .copied()
            .find(|st| st.as_slurm_str() == up || st.as_short_str() == up)
    }

    /// True once the job has ended (it will never run again unless requeued).
    pub fn is_finished(self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Suspended
        )
    }
}

/// Every job state, in Slurm's order.
pub const ALL_JOB_STATES: [JobState; 13] = [
    JobState::Pending,
    JobState::Running,
    JobState::Suspended,
    JobState::Completed,
    JobState::Cancelled,
    JobState::Failed,
    JobState::Timeout,
    JobState::NodeFail,
    JobState::Preempted,
    JobState::BootFail,
    JobState::Deadline,
    JobState::OutOfMemory,
    JobState::Requeued,
];

/// Why a pending job is not running (`squeue %r`, `Reason=`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum PendingReason {
    /// No reason (running jobs, or not yet evaluated).
    #[default]
    None,
    /// Waits behind higher-priority jobs.
    Priority,
    /// Waits for resources to free.
    Resources,
    /// Waits for a dependency.
    Dependency,
    /// Held by the user (`scontrol hold`, `sbatch -H`).
    JobHeldUser,
    /// Held by an administrator.
    JobHeldAdmin,
    /// Its `--begin` time has not arrived.
    BeginTime,
    /// The request exceeds the partition's configuration (nodes, size).
    PartitionConfig,
    /// The request exceeds the partition's node limits.
    PartitionNodeLimit,
    /// The request exceeds the partition's time limit.
    PartitionTimeLimit,
    /// The partition is DOWN.
    PartitionDown,
    /// The partition is INACTIVE.
    PartitionInactive,
    /// Every node that could run it is down, drained or reserved.
    NodesDown,
    /// A node listed with `-w` is not available.
    ReqNodeNotAvail,
    /// The constraint (`-C`) cannot be met by any node.
    BadConstraints,
    /// The job's dependency can never be satisfied.
    DependencyNeverSatisfied,
    /// Requeued and held after a failure launching.
    JobHoldMaxRequeue,
    /// Launch failed on the node; held for the administrator.
    LaunchFailRequeueHold,
    /// Ended: the script exited nonzero.
    NonZeroExitCode,
    /// Ended: a signal killed the script (the number is kept).
    RaisedSignal(u8),
    /// Ended: it reached its time limit.
    TimeLimit,
    /// Ended: a node of the allocation failed.
    NodeDown,
    /// Ended: the kernel's OOM killer killed a process of its batch step
    /// (Slurm's `OutOfMemory`).
    OutOfMemory,
    /// An array waits: as many of its tasks run as its `%N` limit allows.
    JobArrayTaskLimit,
    /// A QOS or association limit holds the job ([`LimitReason`]).
    Limit(LimitReason),
    /// Held by `scontrol requeuehold`: Slurm's user hold with the
    /// description "job requeued in held state", which squeue shows as is
    /// and scontrol with underscores (`job_requeued_in_held_state`).
    /// Last, so the variants before it keep their numbers on disk.
    JobRequeuedHeld,
    /// The licenses it asks for (`-L`) are in use by other jobs, or kept
    /// for a higher-priority job that asks for them too. After
    /// `JobRequeuedHeld`, so the variants before it keep their numbers.
    Licenses,
    /// Its reservation (`--reservation`) has not begun. After `Licenses`.
    Reservation,
    /// A maintenance reservation holds the nodes it could run on within
    /// its time limit (Slurm's `ReqNodeNotAvail, Reserved for
    /// maintenance`). After `Reservation`.
    ReservedForMaint,
}

/// Declares [`LimitReason`] from its table: variant => Slurm's reason text.
macro_rules! limit_reasons {
    ($($variant:ident => $text:literal,)*) => {
        /// The QOS and association limits that hold a pending job, with
        /// Slurm's reason text. Slurm's names follow one template,
        /// `{Assoc|QOS}{Grp|Max}{TRES}{Limit|PerJob|PerUser|...}`; this is the
        /// part of that table the scheduler enforces.
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        pub enum LimitReason {
            $(
                #[doc = $text]
                $variant,
            )*
        }

        impl LimitReason {
            /// Every limit reason, in table order.
            pub const ALL: &'static [LimitReason] = &[$(LimitReason::$variant,)*];

            /// Slurm's reason text.
            pub fn as_slurm_str(self) -> &'static str {
                match self {
                    $(LimitReason::$variant => $text,)*
                }
            }
        }
    };
}

limit_reasons! {
    AssocGrpCpu => "AssocGrpCpuLimit",
    AssocGrpNode => "AssocGrpNodeLimit",
    AssocGrpMem => "AssocGrpMemLimit",
    AssocGrpJobs => "AssocGrpJobsLimit",
    AssocMaxJobs => "AssocMaxJobsLimit",
    AssocMaxCpuPerJob => "AssocMaxCpuPerJobLimit",
    AssocMaxNodePerJob => "AssocMaxNodePerJobLimit",
    AssocMaxMemPerJob => "AssocMaxMemPerJob",
    AssocMaxWall => "AssocMaxWallDurationPerJobLimit",
    AssocGrpGres => "AssocGrpGRES",
    AssocGrpSubmitJobs => "AssocGrpSubmitJobsLimit",
    AssocMaxSubmitJobs => "AssocMaxSubmitJobLimit",
    AssocMaxGresPerJob => "AssocMaxGRESPerJob",
    QosGrpCpu => "QOSGrpCpuLimit",
    QosGrpNode => "QOSGrpNodeLimit",
    QosGrpMem => "QOSGrpMemLimit",
    QosGrpJobs => "QOSGrpJobsLimit",
    QosMaxJobsPerUser => "QOSMaxJobsPerUserLimit",
    QosMaxCpuPerJob => "QOSMaxCpuPerJobLimit",
    QosMaxNodePerJob => "QOSMaxNodePerJobLimit",
    QosMaxMemPerJob => "QOSMaxMemoryPerJob",
    QosMaxCpuPerUser => "QOSMaxCpuPerUserLimit",
    QosMaxNodePerUser => "QOSMaxNodePerUserLimit",
    QosMaxMemPerUser => "QOSMaxMemoryPerUser",
    QosMaxWall => "QOSMaxWallDurationPerJobLimit",
    QosGrpGres => "QOSGrpGRES",
    QosGrpSubmitJobs => "QOSGrpSubmitJobsLimit",
    QosMaxSubmitJobsPerUser => "QOSMaxSubmitJobPerUserLimit",
    QosMaxGresPerJob => "QOSMaxGRESPerJob",
    QosMaxGresPerUser => "QOSMaxGRESPerUser",
}

impl PendingReason {
    /// Slurm's spelling, as squeue prints it inside the parentheses.
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            PendingReason::None => "None",
            PendingReason::Priority => "Priority",
            PendingReason::Resources => "Resources",
            PendingReason::Dependency => "Dependency",
            PendingReason::JobHeldUser => "JobHeldUser",
            PendingReason::JobHeldAdmin => "JobHeldAdmin",
            PendingReason::JobRequeuedHeld => "job requeued in held state",
            PendingReason::BeginTime => "BeginTime",
            PendingReason::PartitionConfig => "PartitionConfig",
            PendingReason::PartitionNodeLimit => "PartitionNodeLimit",
            PendingReason::PartitionTimeLimit => "PartitionTimeLimit",
            PendingReason::PartitionDown => "PartitionDown",
            PendingReason::PartitionInactive => "PartitionInactive",
            PendingReason::NodesDown => {
                "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
            }
            PendingReason::ReqNodeNotAvail => "ReqNodeNotAvail",
            PendingReason::BadConstraints => "BadConstraints",
            PendingReason::DependencyNeverSatisfied => "DependencyNeverSatisfied",
            PendingReason::JobHoldMaxRequeue => "JobHoldMaxRequeue",
            PendingReason::LaunchFailRequeueHold => "launch failed requeued held",
            PendingReason::NonZeroExitCode => "NonZeroExitCode",
            PendingReason::RaisedSignal(sig) => raised_signal_str(sig),
            PendingReason::TimeLimit => "TimeLimit",
            PendingReason::NodeDown => "NodeDown",
            PendingReason::OutOfMemory => "OutOfMemory",
            PendingReason::JobArrayTaskLimit => "JobArrayTaskLimit",
            PendingReason::Limit(l) => l.as_slurm_str(),
            PendingReason::Licenses => "Licenses",
            PendingReason::Reservation => "Reservation",
            PendingReason::ReservedForMaint => "ReqNodeNotAvail, Reserved for maintenance",
        }
    }

    /// True for the hold reasons, which only `scontrol release` clears.
    pub fn is_hold(self) -> bool {
        matches!(
            self,
            PendingReason::JobHeldUser
                | PendingReason::JobHeldAdmin
                | PendingReason::JobRequeuedHeld
        )
    }
}

/// Slurm's `RaisedSignal:<n>(<strsignal text>)` for the signals jobs die of.
fn raised_signal_str(sig: u8) -> &'static str {
    match sig {
        1 => "RaisedSignal:1(Hangup)",
        2 => "RaisedSignal:2(Interrupt)",
        3 => "RaisedSignal:3(Quit)",
        4 => "RaisedSignal:4(Illegal instruction)",
        5 => "RaisedSignal:5(Trace/breakpoint trap)",
        6 => "RaisedSignal:6(Aborted)",
        7 => "RaisedSignal:7(Bus error)",
        8 => "RaisedSignal:8(Floating point exception)",
        9 => "RaisedSignal:9(Killed)",
        10 => "RaisedSignal:10(User defined signal 1)",
        11 => "RaisedSignal:11(Segmentation fault)",
        12 => "RaisedSignal:12(User defined signal 2)",
        13 => "RaisedSignal:13(Broken pipe)",
        14 => "RaisedSignal:14(Alarm clock)",
        15 => "RaisedSignal:15(Terminated)",
        24 => "RaisedSignal:24(CPU time limit exceeded)",
        25 => "RaisedSignal:25(File size limit exceeded)",
        _ => "RaisedSignal",
    }
}

/// A job's exit status as Slurm shows it: `code:signal` (`0:0`, `1:0`, `0:9`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitCode {
    /// The exit status the process returned (0 when killed by a signal).
    pub code: i32,
    /// The signal that ended the process (0 when it exited).
    pub signal: i32,
}

impl ExitCode {
    /// Decodes a wait(2) status word.
    pub fn from_wait_status(status: i32) -> ExitCode {
        let signal = status & 0x7f;
        if signal == 0 {
            ExitCode {
                code: (status >> 8) & 0xff,
                signal: 0,
            }
        } else {
            ExitCode { code: 0, signal }
        }
    }

    /// True when the process exited 0 and no signal ended it.
    pub fn is_success(self) -> bool {
        self.code == 0 && self.signal == 0
    }
}

impl fmt::Display for ExitCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.code, self.signal)
    }
}

/// The base state of a node, before flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum NodeBase {
    /// Not yet registered since the controller started.
    Unknown,
    /// Down: not responding, or set DOWN by an administrator.
    Down,
    /// Up and running nothing.
    Idle,
    /// All CPUs allocated.
    Allocated,
    /// Some CPUs allocated.
    Mixed,
    /// Defined for the future, not in use.
    Future,
}

/// A node's state: a base state and Slurm's flags, shown in long form
/// (`MIXED+DRAIN` in `scontrol show node`, `draining` in `sinfo -l`) or
/// short form (`drng`, `idle*`) by the renderers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeState {
    /// The base state.
    pub base: NodeBase,
    /// DRAIN flag: accepts no new jobs.
    pub drain: bool,
    /// COMPLETING flag: jobs on it are being cleaned up.
    pub completing: bool,
    /// NOT_RESPONDING flag (`*` suffix).
    pub not_responding: bool,
    /// REBOOT_REQUESTED: `scontrol reboot` asked for a reboot that has not
    /// been issued yet (it waits for the node to be idle).
    pub reboot: bool,
    /// Powered down (`~`).
    pub powered_down: bool,
    /// Powering up (`#`).
    pub powering_up: bool,
    /// Powering down (`%`).
    pub powering_down: bool,
    /// Failing (`FAIL` flag).
    pub fail: bool,
    /// REBOOT_ISSUED: the node was told to reboot and has not come back.
    /// Never encoded (`NodeState` sits inside wire and snapshot types whose
    /// encodings are fixed): the controller sends it as
    /// `proto::NodeInfo::reboot_issued` and keeps it in its own record.
    #[serde(skip)]
    pub reboot_issued: bool,
}

impl NodeState {
    /// A node in `base` with no flags.
    pub fn new(base: NodeBase) -> NodeState {
        NodeState {
            base,
            drain: false,
            completing: false,
            not_responding: false,
            reboot: false,
            powered_down: false,
            powering_up: false,
            powering_down: false,
            fail: false,
            reboot_issued: false,
        }
    }

    /// Whether the scheduler may start new jobs here.
    pub fn is_schedulable(&self) -> bool {
        matches!(
            self.base,
            NodeBase::Idle | NodeBase::Mixed | NodeBase::Allocated
        ) && !self.drain
            && !self.not_responding
            && !self.fail
    }

    /// `scontrol show node` `State=` form, e.g. `MIXED+DRAIN`, `IDLE+COMPLETING`, `DOWN+NOT_RESPONDING`.
    pub fn scontrol_string(&self) -> String {
        let mut s = String::from(match self.base {
            NodeBase::Unknown => "UNKNOWN",
            NodeBase::Down => "DOWN",
            NodeBase::Idle => "IDLE",
            NodeBase::Allocated => "ALLOCATED",
            NodeBase::Mixed => "MIXED",
            NodeBase::Future => "FUTURE",
        });
        if self.completing {
            s.push_str("+COMPLETING");
        }
        if self.drain {
            s.push_str("+DRAIN");
        }
        if self.fail {
            s.push_str("+FAIL");
        }
        // Slurm's flag order: POWERED_DOWN, REBOOT_REQUESTED,
        // REBOOT_ISSUED, then NOT_RESPONDING.
        if self.powered_down {
            s.push_str("+POWERED_DOWN");
        }
        if self.reboot {
            s.push_str("+REBOOT_REQUESTED");
        }
        if self.reboot_issued {
            s.push_str("+REBOOT_ISSUED");
        }
        if self.not_responding {
            s.push_str("+NOT_RESPONDING");
        }
        s
    }

    /// The word sinfo prints (`%T` long, `%t` short) before the suffix.
    /// Slurm folds DRAIN into the base: DRAINING while jobs still run,
    /// DRAINED once idle; COMPLETING wins over IDLE.
    fn sinfo_word(&self, long: bool) -> &'static str {
        let busy = matches!(self.base, NodeBase::Allocated | NodeBase::Mixed);
        let (l, s) = if (self.reboot || self.reboot_issued) && !busy {
            // A node waiting for its reboot, or rebooting, reads `boot`
            // whatever else it is, unless jobs still run there
            // (sinfo(1) REBOOT_REQUESTED, REBOOT_ISSUED).
            ("reboot", "boot")
        } else if self.drain {
            match self.base {
                NodeBase::Allocated | NodeBase::Mixed => ("draining", "drng"),
                NodeBase::Down => ("down", "down"),
                _ if self.completing => ("draining", "drng"),
                _ => ("drained", "drain"),
            }
        } else if self.completing {
            ("completing", "comp")
        } else {
            match self.base {
                NodeBase::Unknown => ("unknown", "unk"),
                NodeBase::Down => ("down", "down"),
                NodeBase::Idle => ("idle", "idle"),
                NodeBase::Allocated => ("allocated", "alloc"),
                NodeBase::Mixed => ("mixed", "mix"),
                NodeBase::Future => ("future", "futr"),
            }
        };
        if long {
            l
        } else {
            s
        }
    }

    /// The suffix sinfo appends: `*` not responding, `~` powered down,
    /// `#` powering up, `%` powering down, `!` pending power down, `@` reboot
    /// requested, `^` reboot issued (those two before the others, as Slurm
    /// checks them).
    fn sinfo_suffix(&self) -> &'static str {
        let busy = matches!(self.base, NodeBase::Allocated | NodeBase::Mixed);
        if (self.reboot || self.reboot_issued) && !busy {
            // `boot^` issued, `boot*` silent, `boot` waiting.
            return if self.reboot_issued {
                "^"
            } else if self.not_responding {
                "*"
            } else {
                ""
            };
        }
        if self.reboot_issued {
            "^"
        } else if self.reboot {
            "@"
        } else if self.not_responding {
            "*"
        } else if self.powered_down {
            "~"
        } else if self.powering_up {
            "#"
        } else if self.powering_down {
            "%"
        } else {
            ""
        }
    }

    /// `sinfo %t` (e.g. `idle`, `alloc`, `drng`, `down*`).
    pub fn sinfo_short(&self) -> String {
        format!("{}{}", self.sinfo_word(false), self.sinfo_suffix())
    }

    /// `sinfo %T` (e.g. `idle`, `allocated`, `draining`, `down*`).
    pub fn sinfo_long(&self) -> String {
        format!("{}{}", self.sinfo_word(true), self.sinfo_suffix())
    }
}

/// One generic resource request or inventory entry: `gpu`, `gpu:2`,
/// `gpu:a100:4`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Gres {
    /// The GRES name, such as `gpu`.
    pub name: String,
    /// The type, such as `a100`, when one is given.
    pub type_: Option<String>,
    /// How many.
    pub count: u64,
}

/// Why a GRES string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid GRES specification {spec:?}")]
pub struct GresError {
    /// The text that was refused.
    pub spec: String,
}

impl Gres {
    /// Parses one `name[:type][:count]` element (count defaults to 1).
    /// A `gres/` prefix is accepted, as `--gres=gres/gpu:2` is.
    pub fn parse(spec: &str) -> Result<Gres, GresError> {
        let err = || GresError {
            spec: spec.to_string(),
        };
        let s = spec.trim();
        let s = s.strip_prefix("gres/").unwrap_or(s);
        let s = s.strip_prefix("gres:").unwrap_or(s);
        let parts: Vec<&str> = s.split(':').collect();
        let valid_word = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        };
        let parse_count = |w: &str| -> Option<u64> { units::parse_count(w) };
        match parts.as_slice() {
            [name] if valid_word(name) => Ok(Gres {
                name: name.to_string(),
                type_: None,
                count: 1,
            }),
            [name, second] if valid_word(name) => {
                if let Some(n) = parse_count(second) {
                    Ok(Gres {
                        name: name.to_string(),
                        type_: None,
                        count: n,
                    })
                } else if valid_word(second) {
                    Ok(Gres {
                        name: name.to_string(),
                        type_: Some(second.to_string()),
                        count: 1,
                    })
                } else {
                    Err(err())
                }
            }
            [name, ty, count] if valid_word(name) && valid_word(ty) => Ok(Gres {
                name: name.to_string(),
                type_: Some(ty.to_string()),
                count: parse_count(count).ok_or_else(err)?,
            }),
            _ => Err(err()),
        }
    }

    /// Parses a comma-separated list (`gpu:2,nic:1`).
    pub fn parse_list(spec: &str) -> Result<Vec<Gres>, GresError> {
        if spec.trim().is_empty() || spec.eq_ignore_ascii_case("none") || spec == "(null)" {
            return Ok(Vec::new());
        }
        spec.split(',').map(Gres::parse).collect()
    }
}

impl fmt::Display for Gres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.type_ {
            Some(t) => write!(f, "{}:{}:{}", self.name, t, self.count),
            None => write!(f, "{}:{}", self.name, self.count),
        }
    }
}

#[cfg(test)]
mod tests;
