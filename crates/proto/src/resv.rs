//! Advance reservations (`scontrol create|update|delete|show reservation`):
//! what a command asks for and what the controller shows.

use model::Timestamp;
use serde::{Deserialize, Serialize};

/// `scontrol create reservation` / `scontrol update ReservationName=...`:
/// the keys given, as typed where the controller resolves them (node
/// lists, users, accounts, flags). `None`: not given. Appended fields are
/// `#[serde(default)]` (positional binary form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResvSpec {
    /// `ReservationName=`; empty on create: the controller names it.
    pub name: String,
    /// `StartTime=` (the command resolves it against its clock).
    pub start: Option<Timestamp>,
    /// `StartTime=now`: the controller's now.
    pub start_now: bool,
    /// `EndTime=`.
    pub end: Option<Timestamp>,
    /// `Duration=` in minutes (`None`: not given).
    pub duration_mins: Option<u64>,
    /// `Nodes=`: a hostlist expression, or `ALL`.
    pub nodes: Option<String>,
    /// `NodeCnt=`.
    pub node_cnt: Option<u32>,
    /// `PartitionName=`.
    pub partition: Option<String>,
    /// `Users=`: `u1,u2`, `-u1` (all but), `+u`/`-u` on update.
    pub users: Option<String>,
    /// `Accounts=`, the same forms.
    pub accounts: Option<String>,
    /// `Flags=`: comma-separated, as typed (`-FLAG` removes on update).
    pub flags: Option<String>,
}

/// One reservation as `scontrol show reservation` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResvInfo {
    /// Its name.
    pub name: String,
    /// When it starts.
    pub start: Timestamp,
    /// When it ends.
    pub end: Timestamp,
    /// Its nodes, compressed (`node[1-2]`).
    pub nodes: String,
    /// How many nodes.
    pub node_cnt: u32,
    /// How many cores (sockets times cores per socket of each node).
    pub core_cnt: u32,
    /// How many CPUs (`TRES=cpu=`: threads where a core has several).
    pub cpu_cnt: u32,
    /// `PartitionName=`.
    pub partition: Option<String>,
    /// Its flags, Slurm's names joined by commas (empty: none).
    pub flags: String,
    /// `Users=` as shown (`(null)` where empty is the printer's).
    pub users: String,
    /// `Accounts=` as shown.
    pub accounts: String,
    /// In its window now.
    pub active: bool,
}

/// One reservation window as accounting keeps it (`sacctmgr show
/// reservation`, `sreport reservation utilization`): written when it is
/// made or changed and again when it ends or is deleted; keyed by
/// (cluster, name, start), so a recurring reservation leaves one record
/// per window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcctResv {
    /// ClusterName.
    pub cluster: String,
    /// Its name.
    pub name: String,
    /// When the window starts.
    pub start: Timestamp,
    /// When it ends (or ended, where deleted early).
    pub end: Timestamp,
    /// Its nodes, compressed.
    pub nodes: String,
    /// Its TRES (`cpu=N`).
    pub tres: String,
    /// Its flags as `scontrol show reservation` prints them.
    pub flags: String,
    /// Its CPUs.
    pub cpus: u32,
    /// CPU-seconds its jobs used in the window, so far.
    pub used_cpu_secs: u64,
    /// Slurm's UnusedWall: seconds of the window so far not used by its
    /// jobs, each job's time counted by its share of the CPUs.
    pub unused_wall: f64,
}
