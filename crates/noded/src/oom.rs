//! Out-of-memory kills of a step: the memory cgroups' `oom_kill` counters
//! and Slurm's line for the step's stderr (cgroup.conf's memory keys are
//! conf's `Config::memory_constraints`).
//!
//! ```text
//!   v1: <memory>/.../step_S/memory.oom_control  `oom_kill N`  (local: the
//!       victim's cgroup counts it, so step + every task_T/ are summed)
//!   v2: <root>/.../step_S/memory.events         `oom_kill N`  (hierarchical)
//!   count > 0 --> "slurmstepd: error: Detected N oom_kill event(s) ..." on
//!                 the step's stderr, and the end report carries the count
//! ```
//!
//! The parsing is pure and unit-tested on fake files; reading is one small
//! function per cgroup version. TODO(#37): the cgroup layer's
//! `oom_kills(step)` replaces `StepCgroup::oom_kills` once the gathering
//! cgroups go.

use std::path::Path;

/// The wait status Slurm reports for a task the OOM killer hit
/// (`SIG_OOM`): read as a wait status, signal 125, which no real signal is;
/// sacct prints it `0:125` and srun `Out Of Memory`.
pub const SIG_OOM_STATUS: i32 = 253;

/// The `oom_kill N` line of a v1 `memory.oom_control` or a v2
/// `memory.events` file (None: no such line, a kernel before 4.13).
pub fn parse_oom_kill(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("oom_kill"))
            .then(|| words.next()?.parse().ok())
            .flatten()
    })
}

fn read_count(file: &Path) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| parse_oom_kill(&t))
        .unwrap_or(0)
}

/// cgroup v1: the kills counted in the step's memory cgroup `step_dir` and
/// in every task cgroup below it (v1 counts a kill only where its victim
/// lived, so Slurm adds them up).
pub fn v1_oom_kills(step_dir: &Path) -> u64 {
    let mut total = read_count(&step_dir.join("memory.oom_control"));
    if let Ok(entries) = std::fs::read_dir(step_dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                total += read_count(&e.path().join("memory.oom_control"));
            }
        }
    }
    total
}

/// cgroup v2: the kills in the step's cgroup `step_dir` and below
/// (`memory.events` counts its whole subtree).
pub fn v2_oom_kills(step_dir: &Path) -> u64 {
    read_count(&step_dir.join("memory.events"))
}

/// slurmstepd's line for a step the OOM killer hit, as Slurm 22.05 writes
/// it to the step's stderr (`step` is `12.0`, or `12.batch` for the batch
/// step; more than one kill makes it `events`).
pub fn detected_line(kills: u64, step: &str) -> String {
    let plural = if kills == 1 { "" } else { "s" };
    format!(
        "slurmstepd: error: Detected {kills} oom_kill event{plural} in StepId={step}. \
         Some of the step tasks have been OOM Killed.\n"
    )
}

#[cfg(test)]
mod tests;
