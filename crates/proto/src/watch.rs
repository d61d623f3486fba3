//! The watch stream (`CtldRequest::Watch`): the controller's job and node
//! changes as they happen, for `GET /muster/v1/watch` (restd) and any
//! other front-end.
//!
//! ```text
//!  Watch(WatchRequest) --> controller: WatchEvents(WatchBatch) ... (one per
//!                          applied batch with matching changes, an empty
//!                          one every WATCH_HEARTBEAT_SECS) until either
//!                          side closes the connection
//! ```
//!
//! Every change has a number (`WatchEvent::seq`), consecutive within one
//! controller process (`WatchBatch::epoch` names the process). A watcher
//! that reconnects names the last number it saw (`WatchRequest::after`)
//! and gets the changes it missed, as far as the controller's ring of
//! recent changes goes; when it does not go that far back (or the epoch
//! is another process's), the first batch says `reset` and the stream
//! goes on from the present: the watcher must read the state afresh.

use model::{ExitCode, JobId, JobState, Timestamp};
use serde::{Deserialize, Serialize};

/// Seconds between the empty batches a quiet stream carries, so that both
/// ends notice a peer that went away.
pub const WATCH_HEARTBEAT_SECS: u64 = 15;

/// What a watcher wants (`CtldRequest::Watch`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchRequest {
    /// Resume after this change (`None`: from now on).
    pub after: Option<WatchPosition>,
    /// Job changes.
    pub jobs: bool,
    /// Node changes.
    pub nodes: bool,
    /// Only the jobs of this user (name, or uid in decimal); node changes
    /// are not filtered by user.
    pub user: Option<String>,
    /// Only this job (or the tasks of this array); node changes are not
    /// filtered by job.
    pub job: Option<u32>,
    /// Only jobs in this partition (a pending job's partitions: any of
    /// them) and nodes in it.
    pub partition: Option<String>,
}

/// A place in a controller's stream of changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchPosition {
    /// The controller process (`WatchBatch::epoch`).
    pub epoch: u64,
    /// The last change seen.
    pub seq: u64,
}

/// Changes, in order (`CtldResponse::WatchEvents`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchBatch {
    /// The controller process: its start, in milliseconds since the epoch.
    pub epoch: u64,
    /// Set on the first batch of a resumed watch whose position the
    /// controller no longer holds (older than its ring, or another
    /// process's): changes were missed and the watcher must read the state
    /// afresh; the stream goes on from the present.
    pub reset: bool,
    /// The number of the newest change the controller had made when it
    /// sent this batch (the position to resume from when `events` is empty).
    pub last: u64,
    /// The changes the watcher asked for, oldest first.
    pub events: Vec<WatchEvent>,
}

/// One change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// Its number in the controller's stream.
    pub seq: u64,
    /// When the controller applied it.
    pub time: Timestamp,
    /// What changed.
    pub change: WatchChange,
}

/// What changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WatchChange {
    /// A job.
    Job(JobChange),
    /// A node.
    Node(NodeChange),
}

/// What happened to a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobEvent {
    /// It was accepted (state PENDING).
    Submitted,
    /// It started (PENDING to RUNNING).
    Started,
    /// Any other change of state that is not an end (suspended, resumed,
    /// requeued, held back to PENDING).
    StateChanged,
    /// It ended (a final state), with its exit code.
    Ended,
}

impl JobEvent {
    /// The name the REST stream uses.
    pub fn as_str(self) -> &'static str {
        match self {
            JobEvent::Submitted => "submitted",
            JobEvent::Started => "started",
            JobEvent::StateChanged => "state_changed",
            JobEvent::Ended => "ended",
        }
    }
}

/// A job's change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobChange {
    /// What happened.
    pub event: JobEvent,
    /// The job.
    pub job_id: JobId,
    /// Its array, for an array task.
    pub array_job_id: Option<u32>,
    /// Its index, for an array task.
    pub array_task_id: Option<u32>,
    /// Its name.
    pub name: String,
    /// Its user.
    pub user: String,
    /// Its uid.
    pub uid: u32,
    /// Its partition (a pending job's: every one it may run in, comma
    /// separated).
    pub partition: String,
    /// Its state now.
    pub state: JobState,
    /// Its state before (None for a submission).
    pub previous: Option<JobState>,
    /// Why it waits (Slurm's reason text), `None` otherwise.
    pub reason: String,
    /// The nodes it holds or held (a hostlist), empty before it starts.
    pub nodes: String,
    /// How it ended (`Ended` only).
    pub exit_code: Option<ExitCode>,
}

/// A node's change of state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeChange {
    /// The node.
    pub name: String,
    /// Its state now, as scontrol writes it (`IDLE`, `MIXED`, `DOWN*`,
    /// `IDLE+DRAIN`).
    pub state: String,
    /// Its state before.
    pub previous: String,
    /// The reason an administrator (or the controller) gave, if any.
    pub reason: Option<String>,
    /// Its partitions.
    pub partitions: Vec<String>,
}

impl WatchRequest {
    /// Whether `change` is one this watcher asked for.
    pub fn wants(&self, change: &WatchChange) -> bool {
        match change {
            WatchChange::Job(j) => {
                self.jobs
                    && self
                        .user
                        .as_deref()
                        .is_none_or(|u| u == j.user || u == j.uid.to_string())
                    && self
                        .job
                        .is_none_or(|id| id == j.job_id.0 || j.array_job_id == Some(id))
                    && self
                        .partition
                        .as_deref()
                        .is_none_or(|p| j.partition.split(',').any(|q| q == p))
            }
            WatchChange::Node(n) => {
                self.nodes
                    && self
                        .partition
                        .as_deref()
                        .is_none_or(|p| n.partitions.iter().any(|q| q == p))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(user: &str, part: &str) -> WatchChange {
        WatchChange::Job(JobChange {
            event: JobEvent::Submitted,
            job_id: JobId(7),
            array_job_id: None,
            array_task_id: None,
            name: "x".into(),
            user: user.into(),
            uid: 1000,
            partition: part.into(),
            state: JobState::Pending,
            previous: None,
            reason: "None".into(),
            nodes: String::new(),
            exit_code: None,
        })
    }

    #[test]
    fn filters_select_jobs_and_nodes() {
        let all = WatchRequest {
            jobs: true,
            nodes: true,
            ..Default::default()
        };
        assert!(all.wants(&job("ann", "debug")));
        let by_user = WatchRequest {
            user: Some("1000".into()),
            ..all.clone()
        };
        assert!(by_user.wants(&job("ann", "debug")));
        let other = WatchRequest {
            user: Some("bob".into()),
            ..all.clone()
        };
        assert!(!other.wants(&job("ann", "debug")));
        let part = WatchRequest {
            partition: Some("gpu".into()),
            ..all.clone()
        };
        assert!(part.wants(&job("ann", "debug,gpu")));
        assert!(!part.wants(&job("ann", "debug")));
        let node = WatchChange::Node(NodeChange {
            name: "n1".into(),
            state: "IDLE".into(),
            previous: "MIXED".into(),
            reason: None,
            partitions: vec!["debug".into()],
        });
        assert!(other.wants(&node));
        assert!(!part.wants(&node));
        let jobs_only = WatchRequest {
            nodes: false,
            ..all
        };
        assert!(!jobs_only.wants(&node));
    }

    #[test]
    fn batches_round_trip_in_binary() {
        let b = WatchBatch {
            epoch: 5,
            reset: false,
            last: 9,
            events: vec![WatchEvent {
                seq: 9,
                time: 1,
                change: job("ann", "debug"),
            }],
        };
        let bytes = postcard::to_allocvec(&b).unwrap();
        assert_eq!(postcard::from_bytes::<WatchBatch>(&bytes).unwrap(), b);
    }
}
