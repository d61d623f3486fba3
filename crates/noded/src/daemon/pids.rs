//! `scontrol listpids`: the processes of the jobs on this node, read from
//! /proc. A job's process is one whose environment names the job
//! (`SLURM_JOB_ID`, inherited by everything its tasks start); the step is
//! `SLURM_STEP_ID` (none: the batch script). A task is such a process
//! whose parent is not one of the same step (the supervisor or the daemon
//! started it): it shows its `SLURM_LOCALID` and `SLURM_PROCID`; the
//! processes it started show `-`, as in Slurm's listing. Only processes
//! that descend from this daemon (its supervisors) or from one of its
//! batch scripts count: another daemon's job of the same id on the same
//! host (several node daemons, as in the tests) is not this one's.

use std::collections::BTreeMap;

use model::JobId;
use proto::{JobProcess, NodeResponse};

/// What /proc says of one process.
struct Proc {
    ppid: u32,
    uid: u32,
    /// `SLURM_JOB_ID`, for a job's process.
    job: Option<u32>,
    step: Option<u32>,
    local: Option<u32>,
    global: Option<u32>,
}

/// The processes of `jobs` (those of this node) under `roots` (the
/// daemon's pid and its batch scripts'), narrowed to one job and step,
/// and to the processes of user `owner` when given.
pub fn list(
    jobs: &[JobId],
    roots: &[u32],
    job_id: Option<JobId>,
    step_id: Option<u32>,
    owner: Option<u32>,
) -> NodeResponse {
    let mut procs: BTreeMap<u32, Proc> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return NodeResponse::Pids(Vec::new());
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(p) = read_proc(pid) {
            procs.insert(pid, p);
        }
    }
    // Whether `pid` is one of `roots` or descends from one (a bounded
    // walk: pid 1 and loops end it).
    let under_roots = |mut pid: u32| {
        for _ in 0..256 {
            if roots.contains(&pid) {
                return true;
            }
            match procs.get(&pid) {
                Some(p) if p.ppid > 1 && p.ppid != pid => pid = p.ppid,
                _ => return false,
            }
        }
        false
    };
    let mut out: Vec<JobProcess> = Vec::new();
    for (&pid, p) in &procs {
        let Some(job) = p.job.map(JobId) else {
            continue;
        };
        if !jobs.contains(&job)
            || job_id.is_some_and(|j| j != job)
            || step_id.is_some_and(|s| p.step != Some(s))
            || owner.is_some_and(|u| u != p.uid)
            || !under_roots(pid)
        {
            continue;
        }
        let task = procs
            .get(&p.ppid)
            .map_or(true, |parent| parent.job != p.job || parent.step != p.step);
        out.push(JobProcess {
            pid,
            job_id: job,
            step: p
                .step
                .map_or_else(|| "batch".to_string(), |s| s.to_string()),
            local_id: if task {
                Some(p.local.unwrap_or(0))
            } else {
                None
            },
            global_id: if task {
                Some(p.global.unwrap_or(0))
            } else {
                None
            },
        });
    }
    // By job, then step (the batch script first), then pid.
    out.sort_by_key(|r| {
        (
            r.job_id,
            r.step != "batch",
            r.step.parse::<u32>().ok(),
            r.pid,
        )
    });
    NodeResponse::Pids(out)
}

fn read_proc(pid: u32) -> Option<Proc> {
    // Unreadable (a kernel thread, a process gone meanwhile): no job's.
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let mut job = None;
    let (mut step, mut local, mut global) = (None, None, None);
    for var in environ.split(|b| *b == 0) {
        let Ok(var) = std::str::from_utf8(var) else {
            continue;
        };
        let Some((k, v)) = var.split_once('=') else {
            continue;
        };
        match k {
            "SLURM_JOB_ID" => job = v.parse().ok(),
            "SLURM_STEP_ID" => step = v.parse().ok(),
            "SLURM_LOCALID" => local = v.parse().ok(),
            "SLURM_PROCID" => global = v.parse().ok(),
            _ => {}
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u32>().ok())
    };
    Some(Proc {
        ppid: field("PPid:")?,
        uid: field("Uid:")?,
        job,
        step,
        local,
        global,
    })
}
