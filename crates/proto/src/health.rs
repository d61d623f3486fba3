//! `HealthCheckProgram`'s runs as node daemons report them
//! (`CtldRequest::HealthCheckRan`) and the controller hands them out
//! (`CtldRequest::HealthChecks`): the dashboard's node page shows the
//! recent ones. Slurm keeps no such record (`scontrol show node` has no
//! field for it), so nothing of Slurm's output carries these.

use model::Timestamp;
use serde::{Deserialize, Serialize};

/// What the node daemon itself did after a run
/// (`HealthCheckParameters=drain_on_failure`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HealthCheckAction {
    /// Nothing: the check passed, or the daemon does not act on failures
    /// (Slurm's default: the program drains the node itself), or the node
    /// was already drained.
    #[default]
    None,
    /// The daemon drained the node with the program's first output line.
    Drained,
    /// The check passed again: the daemon resumed the node it drained.
    Resumed,
    /// The program reported a fatal GPU Xid: the node was quarantined
    /// (drained `GPU Xid N`).
    GpuXid,
}

impl HealthCheckAction {
    /// A word for pages and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            HealthCheckAction::None => "none",
            HealthCheckAction::Drained => "drained the node",
            HealthCheckAction::Resumed => "resumed the node",
            HealthCheckAction::GpuXid => "GPU Xid: drained the node",
        }
    }
}

/// One run of a node's `HealthCheckProgram`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheckRun {
    /// The node it ran on.
    pub node: String,
    /// When it started.
    pub start: Timestamp,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// It exited 0 (every program of a glob).
    pub ok: bool,
    /// Its exit code; None where it did not exit by itself (killed by a
    /// signal, timed out, could not be started).
    pub exit_code: Option<i32>,
    /// Why it failed, for people (`/etc/nhc exited with exit status: 1`,
    /// `... timed out after 60 s`); empty when it passed.
    pub why: String,
    /// The first line of its output (at most [`OUTPUT_MAX`] bytes).
    pub output: String,
    /// What the node daemon did after it.
    pub action: HealthCheckAction,
    /// Whether the node was drained when the controller got the report
    /// (filled in by the controller: a program that drains the node
    /// itself, NHC's way, shows here).
    pub drained: bool,
    /// The node's reason at that moment, if any (filled in by the
    /// controller).
    pub reason: Option<String>,
}

/// The most of a run's output line a report carries.
pub const OUTPUT_MAX: usize = 256;

/// `s` cut to at most `max` bytes, on a character boundary.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}
