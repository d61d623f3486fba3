//! The extern step (PrologFlags=Contain): on every node of a batch job's
//! allocation, a holder process (`sleep`, as in Slurm) started at the job's
//! start, in the extern step's cgroup where cgroups gather usage, and
//! killed at the job's end. It is measured like any step (the same
//! sampler, a live sample for sstat), and what it used is reported to the
//! controller (`ExternEnded`) for the job's `.extern` record. Processes put
//! into its cgroup (what pam_slurm_adopt does) are counted with it and
//! killed with it. With proctrack/cgroup (`crate::cgroup`) the holder is in
//! the job's `step_extern/task_0` cgroup, and what is left in it is killed
//! and the cgroup removed when the holder ends.
//!
//! ```text
//!   StartExtern --spawn sleep (own group, cgroup step_extern/task_N)--> holder
//!                 Sampler thread --every JobAcctGatherFrequency--> Gather, extern<J>.live
//!   EndExtern / Terminate --SIGKILL the group and the cgroup, wait4--> usage
//!                 --ExternEnded (retried until answered)--> ctld
//! ```
//!
//! Each holder is recorded in the spool (`extern<J>.holder`: its pid and
//! start time, its task index, `--acctg-freq`), so a daemon restarted while
//! the job runs re-attaches to it: it samples it again (from the restart
//! on: the samples before it are lost) and still kills it at the job's end
//! and reports the extern step's end. A re-attached holder is no longer the
//! daemon's child: its end is awaited in /proc, and its CPU time is the
//! sampler's, not wait4's.

use crate::daemon::link::NodeLink;
use crate::gather::{
    parse_frequency, Gather, GatherType, Publish, Sampler, StepCgroup, TaskCgroup, TaskSource,
};
use crate::spool::ProcId;
use model::JobId;
use proto::{CtldRequest, CtldResponse, NodeResponse};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tracing::{debug, info, warn};

/// How long the holder sleeps: longer than any job (Slurm's is the same).
const HOLD_SECS: &str = "100000000";

/// One job's holder on this node.
struct Holder {
    pid: i32,
    /// Started by this daemon (reaped with wait4), not re-attached.
    child: bool,
    record: PathBuf,
    gather: Arc<Mutex<Gather>>,
    sampler: Sampler,
    cgroup: Option<StepCgroup>,
    task: Option<TaskCgroup>,
    /// proctrack/cgroup: the extern step's cgroup in the job's.
    confined: Option<Confined>,
    live: PathBuf,
}

/// The extern step's cgroup of the confinement layer.
struct Confined {
    driver: Box<dyn crate::cgroup::Driver>,
    step: crate::cgroup::CgPath,
    settle: std::time::Duration,
}

/// The holders running here, by job.
#[derive(Default)]
pub struct HolderTable {
    map: Mutex<BTreeMap<JobId, Holder>>,
}

impl HolderTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<JobId, Holder>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `job_id` has a holder here (sstat reads its live file).
    pub fn running(&self, job_id: JobId) -> bool {
        self.lock().contains_key(&job_id)
    }
}

/// Where the holder of `job_id` publishes its usage for sstat.
pub fn live_path(spool_dir: &std::path::Path, job_id: JobId) -> PathBuf {
    spool_dir.join(format!("extern{}.live", job_id.0))
}

/// What the spool keeps of a holder, for a restarted daemon.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct HolderRecord {
    proc_id: ProcId,
    node_index: u32,
    acctg_freq: Option<String>,
}

/// Where the holder of `job_id` is recorded.
fn record_path(spool_dir: &Path, job_id: JobId) -> PathBuf {
    spool_dir.join(format!("extern{}.holder", job_id.0))
}

/// The job of a holder record's file name (`extern<J>.holder`).
fn parse_record_name(name: &str) -> Option<JobId> {
    name.strip_prefix("extern")?
        .strip_suffix(".holder")?
        .parse()
        .ok()
        .map(JobId)
}

/// Starts the holder of `job_id` (a second start changes nothing).
pub fn start(
    node: &NodeLink,
    holders: &HolderTable,
    job_id: JobId,
    uid: u32,
    gid: u32,
    node_index: u32,
    acctg_freq: Option<&str>,
) -> NodeResponse {
    if holders.lock().contains_key(&job_id) {
        return NodeResponse::Ok;
    }
    let switch_user = uid != node.daemon_uid;
    if switch_user && node.daemon_uid != 0 {
        return NodeResponse::Failed(
            "cannot run the extern step for other users unless the node daemon runs as root".into(),
        );
    }
    let (settings, cgroup, task, join, confined) =
        gather_settings(node, job_id, Some(uid), node_index, acctg_freq);
    let mut cmd = std::process::Command::new("sleep");
    cmd.arg(HOLD_SECS)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: only async-signal-safe system calls (setsid, open/write/close
    // on paths made before fork, setgroups/setgid/setuid) between fork and
    // exec. The cgroup is joined first, while the child is still root.
    unsafe {
        cmd.pre_exec(move || {
            // Its own session (so its own group): the job's signals and the
            // daemon's never reach it by accident, its end kills the group,
            // and /proc gathering finds it by its session, as it finds a
            // task (also after a restart, where there is no wait4).
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(cg) = &join {
                cg.join_self();
            }
            if switch_user
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let pid = match cmd.spawn() {
        // Reaped by pid (wait4, for its rusage) at the end; dropping the
        // handle neither waits nor kills.
        Ok(child) => child.id() as i32,
        Err(e) => {
            if let Some(c) = &cgroup {
                c.remove();
            }
            if let Some(c) = &confined {
                let _ = c.driver.remove(&c.step);
            }
            return NodeResponse::Failed(format!("cannot start the extern step: {e}"));
        }
    };
    // A node that never ran a batch script has no spool directory yet.
    let _ = std::fs::create_dir_all(&node.spool_dir);
    let record = record_path(&node.spool_dir, job_id);
    let written = ProcId::of(pid)
        .ok_or_else(|| std::io::Error::other("gone"))
        .and_then(|proc_id| {
            let rec = HolderRecord {
                proc_id,
                node_index,
                acctg_freq: acctg_freq.map(str::to_owned),
            };
            let bytes = serde_json::to_vec(&rec).map_err(std::io::Error::other)?;
            crate::spool::write_atomic(&record, &bytes)
        });
    if let Err(e) = written {
        warn!(job = %job_id, "extern step holder {pid} not recorded in the spool: {e}");
    }
    attach(
        node, holders, job_id, pid, true, node_index, settings, cgroup, task, confined,
    );
    NodeResponse::Ok
}

type Cgroups = (
    crate::gather::GatherSettings,
    Option<StepCgroup>,
    Option<TaskCgroup>,
    Option<TaskCgroup>,
    Option<Confined>,
);

/// The gathering settings of a holder (`--acctg-freq` over the node's), its
/// cgroups where cgroups gather (made if missing), the cgroup the holder
/// joins, and with proctrack/cgroup the extern step's cgroup in the job's
/// (`uid`: the job's user; `None` after a restart: found among the node's
/// job cgroups).
fn gather_settings(
    node: &NodeLink,
    job_id: JobId,
    uid: Option<u32>,
    node_index: u32,
    acctg_freq: Option<&str>,
) -> Cgroups {
    let mut settings = node.gather.clone();
    if let Some(n) = acctg_freq.and_then(parse_frequency) {
        settings.freq_secs = n;
    }
    if let Some(confined) = node.cgroup.as_ref().and_then(|s| confine(s, job_id, uid)) {
        let join = confined
            .driver
            .create_task(&confined.step.task(0))
            .map(|dirs| {
                TaskCgroup::from_dirs(
                    confined.driver.version() == crate::cgroup::Version::V2,
                    dirs.memory,
                    dirs.cpu,
                    &dirs.procs,
                )
            });
        match join {
            Ok(join) => {
                // Usage comes from the cgroup only where JobAcctGatherType
                // says so.
                let task = (settings.kind == GatherType::Cgroup).then(|| join.clone());
                return (settings, None, task, Some(join), Some(confined));
            }
            Err(e) => warn!(job = %job_id, "extern step not confined: {e}"),
        }
    }
    let cgroup = (settings.kind == GatherType::Cgroup)
        .then(|| StepCgroup::create(&settings, job_id.0, "extern"))
        .flatten();
    let task = cgroup.as_ref().and_then(|c| c.task(node_index));
    let join = task.clone();
    (settings, cgroup, task, join, None)
}

/// The extern step's cgroup of job `job_id` (made if missing).
fn confine(
    settings: &crate::cgroup::CgroupSettings,
    job_id: JobId,
    uid: Option<u32>,
) -> Option<Confined> {
    let driver = settings.driver();
    let job = match uid {
        Some(uid) => crate::cgroup::CgPath::job(uid, job_id.0),
        None => driver.jobs().into_iter().find(|c| c.job == job_id.0)?,
    };
    let step = job.step("extern");
    if let Err(e) = driver.create_step(&step) {
        warn!(job = %job_id, "extern step not confined: {e}");
        return None;
    }
    Some(Confined {
        driver,
        step,
        settle: settings.settle,
    })
}

/// Starts sampling the holder `pid` and enters it in the table.
#[allow(clippy::too_many_arguments)]
fn attach(
    node: &NodeLink,
    holders: &HolderTable,
    job_id: JobId,
    pid: i32,
    child: bool,
    node_index: u32,
    settings: crate::gather::GatherSettings,
    cgroup: Option<StepCgroup>,
    task: Option<TaskCgroup>,
    confined: Option<Confined>,
) {
    let gather = Arc::new(Mutex::new(Gather::new(&node.node_name, &[node_index])));
    let source = match &task {
        Some(cg) => TaskSource::Cgroup(cg.clone()),
        None => TaskSource::Session(pid),
    };
    let live = live_path(&node.spool_dir, job_id);
    let sampler = Sampler::start(
        &settings,
        gather.clone(),
        vec![(0, source)],
        Some(Publish {
            path: live.clone(),
            step: proto::StepId::Extern,
            pids: vec![pid as u32],
        }),
    );
    debug!(job = %job_id, pid, child, "extern step holder attached");
    holders.lock().insert(
        job_id,
        Holder {
            pid,
            child,
            record: record_path(&node.spool_dir, job_id),
            gather,
            sampler,
            cgroup,
            task,
            confined,
            live,
        },
    );
}

/// At start-up: re-attaches to the holders recorded in the spool that still
/// run (the same pid and start time), and forgets the others.
pub fn recover(node: &NodeLink, holders: &HolderTable) {
    let Ok(dir) = std::fs::read_dir(&node.spool_dir) else {
        return;
    };
    for entry in dir.flatten() {
        let Some(job_id) = parse_record_name(&entry.file_name().to_string_lossy()) else {
            continue;
        };
        let rec: Option<HolderRecord> = std::fs::read(entry.path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        match rec {
            Some(rec) if rec.proc_id.is_alive() => {
                let (settings, cgroup, task, _join, confined) = gather_settings(
                    node,
                    job_id,
                    None,
                    rec.node_index,
                    rec.acctg_freq.as_deref(),
                );
                let pid = rec.proc_id.pid;
                attach(
                    node,
                    holders,
                    job_id,
                    pid,
                    false,
                    rec.node_index,
                    settings,
                    cgroup,
                    task,
                    confined,
                );
                info!(job = %job_id, pid, "re-attached to the extern step's holder");
            }
            _ => {
                debug!(job = %job_id, "extern step holder gone while the daemon was away");
                let _ = std::fs::remove_file(entry.path());
                let _ = std::fs::remove_file(live_path(&node.spool_dir, job_id));
            }
        }
    }
}

/// Ends the holder of `job_id`, if one runs here: kills it and whatever
/// joined its cgroup, and reports what it used in the background.
pub fn end(node: &Arc<NodeLink>, holders: &HolderTable, job_id: JobId) -> NodeResponse {
    let Some(h) = holders.lock().remove(&job_id) else {
        return NodeResponse::Ok;
    };
    let link = node.clone();
    tokio::spawn(async move {
        let node = link.node_name.clone();
        let usage = tokio::task::spawn_blocking(move || finish(h))
            .await
            .unwrap_or_default();
        let request = CtldRequest::ExternEnded {
            job_id,
            node,
            usage,
        };
        match link
            .ctld
            .call_until_answered(|| request.clone(), "extern step end")
            .await
        {
            CtldResponse::Ok => debug!(job = %job_id, "extern step end reported"),
            other => warn!(job = %job_id, "controller refused the extern step report: {other:?}"),
        }
    });
    NodeResponse::Ok
}

/// Kills the holder's group and cgroup, reaps it and returns its usage.
fn finish(h: Holder) -> proto::StepUsage {
    // SAFETY: kill(2) on the holder's process group; no memory involved.
    unsafe { libc::kill(-h.pid, libc::SIGKILL) };
    if let Some(cg) = &h.task {
        for pid in cg.pids() {
            // SAFETY: as above, on each process adopted into the cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    let ru = if h.child {
        reap(h.pid)
    } else {
        // Not this daemon's child (re-attached after a restart): its new
        // parent reaps it; wait until it is gone.
        let id = ProcId::of(h.pid);
        for _ in 0..250 {
            if !id.is_some_and(ProcId::is_alive) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    };
    h.sampler.stop();
    let usage = {
        let mut g = h.gather.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ru) = ru {
            g.finish_task(0, ru, h.task.as_ref());
        }
        g.usage()
    };
    if let Some(c) = &h.cgroup {
        c.remove();
    }
    if let Some(c) = &h.confined {
        // What joined the extern step (pam_slurm_adopt's way) ends with it.
        if let Err(e) = crate::cgroup::end_step(&*c.driver, &c.step, c.settle) {
            warn!("extern step: {e}");
        }
    }
    let _ = std::fs::remove_file(&h.live);
    let _ = std::fs::remove_file(&h.record);
    usage
}

/// Waits for the killed holder; its rusage (user and system CPU in
/// microseconds, largest RSS in KiB).
fn reap(pid: i32) -> Option<(u64, u64, u64)> {
    crate::stepd::supervisor::reap(pid).map(|(_, usage)| usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_records_are_named_by_job() {
        let p = record_path(Path::new("/spool"), JobId(42));
        assert_eq!(p, Path::new("/spool/extern42.holder"));
        assert_eq!(parse_record_name("extern42.holder"), Some(JobId(42)));
        assert_eq!(parse_record_name("extern42.live"), None);
        assert_eq!(parse_record_name("extern42.holder.tmp"), None);
        assert_eq!(parse_record_name("job42"), None);
    }
}
