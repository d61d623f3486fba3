//! The daemon's side of job steps: one supervisor (`taskd`) per step on
//! this node, its control lines (signals, termination) and the report of
//! the step's end to the controller.
//!
//! ```text
//!   LaunchStep --spawn `noded --step-tasks`, spec line--> supervisor
//!   SignalStep / Signal / Terminate --control line--> supervisor stdin
//!   supervisor's result line (exit, usage) --StepExited (retried)--> ctld
//! ```
//!
//! Steps are not recorded in the spool. A daemon that stops ends them with
//! the batch jobs (`StepTable::stop`: their supervisors run in sessions of
//! their own, out of the batch jobs' process groups), and one that dies
//! without stopping does not re-attach to them (their srun still sees them
//! end).

use crate::daemon::link::NodeLink;
use crate::spool::ProcId;
use crate::taskd::{TaskdControl, TaskdReport, TaskdResult, TaskdSpec};
use model::{ExitCode, JobId};
use proto::{CtldRequest, CtldResponse, NodeResponse, StepLaunch, StepNodeEnd};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tracing::{info, warn};

/// The steps running on this node, with the way to reach each supervisor.
#[derive(Default)]
pub struct StepTable {
    map: Mutex<BTreeMap<(JobId, u32), mpsc::UnboundedSender<TaskdControl>>>,
    /// Each running step's user (who may `sattach` to it).
    owners: Mutex<BTreeMap<(JobId, u32), u32>>,
    /// Set, under `map`'s lock, when the daemon stops (`stop`): a step
    /// entered after is ended at once.
    stopping: AtomicBool,
    /// Supervisors whose end (their tasks') has not been read yet.
    live: AtomicUsize,
}

/// What a daemon that stops sends every step: the tasks are killed at once
/// (SIGCONT, SIGTERM, SIGKILL), as the batch jobs are.
const AT_STOP: TaskdControl = TaskdControl::Terminate(0);

impl StepTable {
    /// Ends every step here and refuses new ones: the daemon is stopping.
    /// How many steps were told.
    pub fn stop(&self) -> usize {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        self.stopping.store(true, Ordering::SeqCst);
        for tx in map.values() {
            let _ = tx.send(AT_STOP);
        }
        map.len()
    }

    /// Whether every supervisor started here has ended (its tasks gone).
    pub fn all_ended(&self) -> bool {
        self.live.load(Ordering::SeqCst) == 0
    }

    fn senders(
        &self,
        job_id: JobId,
        step: Option<u32>,
    ) -> Vec<mpsc::UnboundedSender<TaskdControl>> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|((j, s), _)| *j == job_id && step.iter().all(|want| *want == *s))
            .map(|(_, tx)| tx.clone())
            .collect()
    }

    /// The user of step `job_id.step_id`, when it runs here.
    pub fn owner(&self, job_id: JobId, step_id: u32) -> Option<u32> {
        let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        owners.get(&(job_id, step_id)).copied()
    }

    /// The steps of `job_id` running here.
    pub fn running(&self, job_id: JobId) -> Vec<u32> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.keys()
            .filter(|(j, _)| *j == job_id)
            .map(|(_, s)| *s)
            .collect()
    }

    /// The jobs with a step running here.
    pub fn job_ids(&self) -> Vec<JobId> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<JobId> = map.keys().map(|(j, _)| *j).collect();
        ids.dedup();
        ids
    }

    /// Sends `ctl` to one step (`Some`) or every step of a job; how many got it.
    pub fn control(&self, job_id: JobId, step: Option<u32>, ctl: TaskdControl) -> usize {
        let senders = self.senders(job_id, step);
        for tx in &senders {
            let _ = tx.send(ctl.clone());
        }
        senders.len()
    }
}

/// Where the supervisor of step `job_id.step_id` publishes its usage.
pub fn live_path(spool_dir: &std::path::Path, job_id: JobId, step_id: u32) -> std::path::PathBuf {
    spool_dir.join(format!("step{}.{step_id}.live", job_id.0))
}

/// Starts this node's share of a step.
pub async fn launch(
    node: &Arc<NodeLink>,
    steps: &Arc<StepTable>,
    launch: StepLaunch,
) -> NodeResponse {
    let key = (launch.job_id, launch.step_id);
    let uid = launch.uid;
    if steps.stopping.load(Ordering::SeqCst) {
        return NodeResponse::Failed("the node daemon is shutting down".into());
    }
    let switch_user = launch.uid != node.daemon_uid;
    if switch_user && node.daemon_uid != 0 {
        return NodeResponse::Failed(
            "cannot run steps for other users unless the node daemon runs as root".into(),
        );
    }
    // The job's Prolog, at its first step here (where no batch script of
    // it runs).
    if let Err(why) = crate::daemon::scripts::before_step(node, &launch).await {
        return NodeResponse::Failed(why);
    }
    let live = live_path(&node.spool_dir, launch.job_id, launch.step_id);
    let spec = TaskdSpec {
        live_path: Some(live.clone()),
        launch,
        node_name: node.node_name.clone(),
        conf_path: node.conf_path.to_string_lossy().into_owned(),
        switch_user,
        gather: node.gather.clone(),
        gpus: node.gpus.clone(),
        cgroup: node.cgroup.clone(),
        task_affinity: node.task_affinity,
        topology_addr: node.topology_addr.clone(),
        task_prolog: node.task_scripts.0.clone(),
        task_epilog: node.task_scripts.1.clone(),
        cpu_threads: node.cpu_threads,
        default_cpu_bind: node.default_cpu_bind.clone(),
    };
    let Ok(mut line) = serde_json::to_vec(&spec) else {
        return NodeResponse::Failed("cannot encode the step".into());
    };
    line.push(b'\n');
    let mut cmd = tokio::process::Command::new(&node.stepd_program);
    cmd.arg0("muster")
        .arg("noded")
        .arg("--step-tasks")
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(false);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return NodeResponse::Failed(format!("cannot start the step supervisor: {e}")),
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.start_kill();
        return NodeResponse::Failed("the step supervisor has no stdio".into());
    };
    if let Err(e) = stdin.write_all(&line).await {
        let _ = child.start_kill();
        return NodeResponse::Failed(format!("cannot hand the step to its supervisor: {e}"));
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<TaskdControl>();
    steps.live.fetch_add(1, Ordering::SeqCst);
    {
        let mut map = steps.map.lock().unwrap_or_else(|p| p.into_inner());
        // Started while the daemon began to stop (`StepTable::stop` has
        // told the others): ended as they are.
        if steps.stopping.load(Ordering::SeqCst) {
            let _ = tx.send(AT_STOP);
        }
        map.insert(key, tx);
        steps
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, uid);
    }
    info!(job = %key.0, step = key.1, "step started");
    let control = tx_for_report(steps, key);
    tokio::spawn(async move {
        while let Some(ctl) = rx.recv().await {
            let Ok(mut l) = serde_json::to_vec(&ctl) else {
                continue;
            };
            l.push(b'\n');
            if stdin.write_all(&l).await.is_err() {
                return;
            }
        }
    });
    let node = node.clone();
    let steps = steps.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut started = Vec::new();
        let mut ended = None;
        while let Ok(Some(line)) = lines.next_line().await {
            match serde_json::from_str::<TaskdReport>(&line) {
                Ok(TaskdReport::Started(task)) => started.push(task),
                Ok(TaskdReport::Ended(result)) => {
                    ended = Some(*result);
                    break;
                }
                Err(_) => {}
            }
        }
        let result = ended.unwrap_or_else(|| {
            warn!(job = %key.0, step = key.1, "the step supervisor died; killing its tasks");
            kill_orphans(&started);
            TaskdResult {
                exit: ExitCode { code: 0, signal: 9 },
                usage: Default::default(),
                oom_kills: 0,
            }
        });
        info!(job = %key.0, step = key.1, "step ended with {}", result.exit);
        steps.live.fetch_sub(1, Ordering::SeqCst);
        node.progress.notify_waiters();
        let end = StepNodeEnd {
            job_id: key.0,
            step_id: key.1,
            node: node.node_name.clone(),
            exit: result.exit,
            usage: Some(result.usage),
            oom_kills: result.oom_kills,
        };
        match node
            .ctld
            .call_until_answered(|| CtldRequest::StepExited(end.clone()), "step end")
            .await
        {
            CtldResponse::Ok => {}
            other => {
                warn!(job = %key.0, step = key.1, "controller refused the step end: {other:?}")
            }
        }
        if let Some(tx) = control {
            let _ = tx.send(TaskdControl::Reported);
        }
        let _ = child.wait().await;
        // A supervisor killed before its own cleanup leaves its last sample.
        let _ = std::fs::remove_file(&live);
        steps
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        steps
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
    });
    NodeResponse::Ok
}

/// Kills what is left of tasks whose supervisor died: each task leads its
/// own process group. A pid now held by another process is left alone; a
/// pid no process holds cannot have been reused, so its group (if any
/// member is left) is still the task's.
fn kill_orphans(tasks: &[ProcId]) {
    for task in tasks {
        if matches!(ProcId::of(task.pid), Some(now) if now.start != task.start) {
            continue;
        }
        // SAFETY: kill(2) on a process group, checked above to be the task's.
        unsafe { libc::kill(-task.pid, libc::SIGKILL) };
    }
}

fn tx_for_report(
    steps: &StepTable,
    key: (JobId, u32),
) -> Option<mpsc::UnboundedSender<TaskdControl>> {
    steps
        .map
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .cloned()
}

/// Signals one step, or ends it: with KillWait (`signal` None), or, with
/// a reason and a signal, at once (`scancel J.S`: SIGKILL); `time_limit`:
/// its own time limit passed, and it ends alone.
pub fn signal(
    steps: &StepTable,
    job_id: JobId,
    step_id: u32,
    signal: Option<i32>,
    kill_wait: u32,
    time_limit: bool,
    reason: Option<proto::EndReason>,
) -> NodeResponse {
    let ctl = match (signal, reason) {
        (Some(s), None) => TaskdControl::Signal(s),
        (Some(_), Some(reason)) => TaskdControl::End {
            reason,
            step: true,
            kill_wait: None,
        },
        (None, Some(reason)) => TaskdControl::End {
            reason,
            step: time_limit,
            kill_wait: Some(kill_wait),
        },
        (None, None) if time_limit => TaskdControl::End {
            reason: proto::EndReason::TimeLimit,
            step: true,
            kill_wait: Some(kill_wait),
        },
        (None, None) => TaskdControl::Terminate(kill_wait),
    };
    if steps.control(job_id, Some(step_id), ctl) == 0 {
        return NodeResponse::Failed(format!("no step {job_id}.{step_id} on this node"));
    }
    NodeResponse::Ok
}
