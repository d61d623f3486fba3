//! The daemon's side of confinement (proctrack/cgroup): `scontrol suspend`
//! and preemption SUSPEND freeze a job's cgroups instead of sending
//! SIGSTOP, resume and every end thaw them first (a signal sent to a
//! frozen process waits for the thaw), and the cgroups of jobs that are
//! gone are removed (after a job ends, and after a restart).
//!
//! The supervisors make and remove their steps' cgroups; this covers what
//! they could not (a supervisor killed, a daemon away meanwhile).

use crate::cgroup::{CgPath, CgroupError, CgroupSettings, Driver};
use model::JobId;
use std::time::Duration;
use tracing::{info, warn};

/// The job's cgroup on this node, where jobs are confined and it has one.
pub fn job_cgroup(
    settings: Option<&CgroupSettings>,
    job_id: JobId,
) -> Option<(Box<dyn Driver>, CgPath)> {
    let driver = settings?.driver();
    let cg = driver.jobs().into_iter().find(|c| c.job == job_id.0)?;
    Some((driver, cg))
}

/// Freezes the job's processes; `None` where it has no cgroup here (the
/// caller then signals, as without cgroups).
pub fn freeze_job(
    settings: Option<&CgroupSettings>,
    job_id: JobId,
) -> Option<Result<(), CgroupError>> {
    let (driver, cg) = job_cgroup(settings, job_id)?;
    let res = driver.freeze(&cg);
    match &res {
        Ok(()) => info!(job = %job_id, "suspended: froze {}", driver.dir(&cg).display()),
        Err(e) => warn!(job = %job_id, "cannot suspend: {e}"),
    }
    Some(res)
}

/// Thaws the job's processes (resume, and before any end); nothing where
/// it has no cgroup here.
pub fn thaw_job(settings: Option<&CgroupSettings>, job_id: JobId) {
    if let Some((driver, cg)) = job_cgroup(settings, job_id) {
        if let Err(e) = driver.thaw(&cg) {
            warn!(job = %job_id, "cannot thaw: {e}");
        }
    }
}

/// After the job ended here (its batch script and its steps): kills what
/// is left in its cgroups and removes them.
pub fn end_job(settings: Option<&CgroupSettings>, job_id: JobId) {
    let Some((driver, cg)) = job_cgroup(settings, job_id) else {
        return;
    };
    let settle = settings.map_or(Duration::from_secs(5), |s| s.settle);
    let _ = driver.thaw(&cg);
    if let Err(e) = crate::cgroup::end_step(&*driver, &cg, settle) {
        warn!(job = %job_id, "cannot remove the job's cgroup: {e}");
    }
}

/// At a stop in order: removes the node's own cgroup directories where no
/// job is left in them.
pub fn release(settings: Option<&CgroupSettings>) {
    if let Some(settings) = settings {
        settings.driver().release();
    }
}

/// After a restart: removes the cgroups of jobs this daemon no longer has
/// (`known` says which it has) where nothing runs in them any more. One
/// with processes left stays: a step supervisor that outlived the daemon
/// removes its own.
pub fn remove_gone(settings: Option<&CgroupSettings>, known: &dyn Fn(u32) -> bool) {
    let Some(settings) = settings else {
        return;
    };
    let driver = settings.driver();
    for cg in driver.jobs() {
        if known(cg.job) || !driver.is_empty(&cg) {
            continue;
        }
        match driver.remove(&cg) {
            Ok(()) => info!(job = cg.job, "removed the cgroup of a job that is gone"),
            Err(e) => warn!(
                job = cg.job,
                "cannot remove the cgroup of a job that is gone: {e}"
            ),
        }
    }
}
