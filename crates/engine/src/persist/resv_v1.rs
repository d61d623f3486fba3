//! Reservations as the journal and snapshots keep them (version 1): the
//! request a command sent (`proto::resv::ResvSpec`) and the engine's table.

use model::Timestamp;
use serde::{Deserialize, Serialize};

/// `proto::resv::ResvSpec`, in the journal's own shape.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ResvSpec {
    /// `ReservationName=`.
    pub name: String,
    /// `StartTime=`.
    pub start: Option<Timestamp>,
    /// `StartTime=now`.
    pub start_now: bool,
    /// `EndTime=`.
    pub end: Option<Timestamp>,
    /// `Duration=` in minutes.
    pub duration_mins: Option<u64>,
    /// `Nodes=`.
    pub nodes: Option<String>,
    /// `NodeCnt=`.
    pub node_cnt: Option<u32>,
    /// `PartitionName=`.
    pub partition: Option<String>,
    /// `Users=`.
    pub users: Option<String>,
    /// `Accounts=`.
    pub accounts: Option<String>,
    /// `Flags=`.
    pub flags: Option<String>,
}

impl From<&proto::resv::ResvSpec> for ResvSpec {
    fn from(s: &proto::resv::ResvSpec) -> Self {
        ResvSpec {
            name: s.name.clone(),
            start: s.start,
            start_now: s.start_now,
            end: s.end,
            duration_mins: s.duration_mins,
            nodes: s.nodes.clone(),
            node_cnt: s.node_cnt,
            partition: s.partition.clone(),
            users: s.users.clone(),
            accounts: s.accounts.clone(),
            flags: s.flags.clone(),
        }
    }
}

impl From<ResvSpec> for proto::resv::ResvSpec {
    fn from(s: ResvSpec) -> Self {
        proto::resv::ResvSpec {
            name: s.name,
            start: s.start,
            start_now: s.start_now,
            end: s.end,
            duration_mins: s.duration_mins,
            nodes: s.nodes,
            node_cnt: s.node_cnt,
            partition: s.partition,
            users: s.users,
            accounts: s.accounts,
            flags: s.flags,
        }
    }
}

/// One reservation in a snapshot (`crate::resv::Resv`), nodes by name.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Resv {
    /// Its name.
    pub name: String,
    /// When it starts.
    pub start: Timestamp,
    /// When it ends.
    pub end: Timestamp,
    /// Its nodes by name.
    pub nodes: Vec<String>,
    /// `PartitionName=`.
    pub partition: Option<String>,
    /// Its flags (`crate::resv::Flags` bits).
    pub flags: u32,
    /// Users allowed (or, with `users_except`, refused).
    pub users: Vec<String>,
    /// `Users=-...`.
    pub users_except: bool,
    /// Accounts allowed (or refused).
    pub accounts: Vec<String>,
    /// `Accounts=-...`.
    pub accounts_except: bool,
    /// `PURGE_COMP=` in seconds (absent before it: 0).
    #[serde(default)]
    pub purge_secs: i64,
    /// When a job last named it (absent before PURGE_COMP: 0).
    #[serde(default)]
    pub last_job: Timestamp,
}
