//! Prolog and Epilog on the nodes of a job other than its batch node (and
//! on every node of an allocation without a batch script): as in Slurm the
//! Prolog runs at the job's first step on the node, the Epilog when the
//! controller says the job ended (`EndExtern`, sent to every node of a job
//! when `Prolog` or `Epilog` is set). The batch node's run with the batch
//! script (`shell::launch_batch`, `shell::start_report`).
//!
//! Failures are reported as the job's end from this node with
//! `script_failed`, which the controller turns into a drain (and, for a
//! batch job's failed Prolog, a requeue held).
//!
//! `PrologFlags=RunInJob` (with `ProctrackType=proctrack/cgroup`): every
//! Prolog and Epilog here ([`run_job_script`]) joins a cgroup of its own in
//! the job's (`job_J/step_prolog`, `job_J/step_epilog`) before it execs,
//! so the job's limits hold it and its use counts with the job; what it
//! leaves behind is killed and the cgroup removed when it ends. Slurm runs
//! them in the extern step's stepd; a cgroup of their own keeps the extern
//! step's end from killing an Epilog that runs meanwhile. Without
//! proctrack/cgroup there is no job cgroup: they run as without the flag.

use crate::daemon::link::NodeLink;
use crate::hooks::{HookSettings, Outcome};
use model::{ExitCode, JobId};
use proto::{CtldRequest, CtldResponse, NodeScript, StepLaunch};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tracing::warn;

/// Where a job's Prolog ran here.
#[derive(Clone, Debug)]
enum Ran {
    /// With its batch script: the Epilog runs after it.
    Batch,
    /// For its first step here: the Epilog, with this environment, when
    /// the job ends.
    Step(Vec<(String, String)>),
}

/// The node's Prolog and Epilog, and which jobs' Prolog ran here.
pub struct NodeScripts {
    /// slurm.conf's settings.
    pub hooks: HookSettings,
    ran: Mutex<HashMap<JobId, Ran>>,
    /// One step Prolog decision at a time: a job's second step waits for
    /// the first one's Prolog.
    once: tokio::sync::Mutex<()>,
}

impl NodeScripts {
    /// Nothing ran yet.
    pub fn new(hooks: HookSettings) -> NodeScripts {
        NodeScripts {
            hooks,
            ran: Mutex::default(),
            once: tokio::sync::Mutex::const_new(()),
        }
    }

    fn active(&self) -> bool {
        self.hooks.prolog.is_some() || self.hooks.epilog.is_some()
    }

    fn ran(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Ran>> {
        self.ran.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job's batch script is launched here: its Prolog runs with it.
    pub fn batch_launched(&self, job_id: JobId) {
        if self.active() {
            self.ran().insert(job_id, Ran::Batch);
        }
    }
}

/// Before a step's tasks start here: the job's Prolog, if this is its first
/// step on the node and its batch script does not run here. Err: it
/// failed (reported to the controller); the step must not start.
pub async fn before_step(link: &Arc<NodeLink>, launch: &StepLaunch) -> Result<(), String> {
    let scripts = &link.scripts;
    if !scripts.active() {
        return Ok(());
    }
    let _one = scripts.once.lock().await;
    if scripts.ran().contains_key(&launch.job_id) {
        return Ok(());
    }
    let mut env = crate::hooks::job_env(
        &launch.env,
        &launch.gpus,
        &link.node_name,
        &link.conf_path.to_string_lossy(),
        "prolog_slurmd",
    );
    for (k, v) in [
        ("SLURM_JOB_ID", launch.job_id.to_string()),
        ("SLURM_JOB_USER", launch.user.clone()),
        ("SLURM_JOB_UID", launch.uid.to_string()),
        ("SLURM_JOB_GID", launch.gid.to_string()),
    ] {
        if !env.iter().any(|(n, _)| n == k) {
            env.push((k.to_string(), v));
        }
    }
    if let Some(prolog) = scripts.hooks.prolog.clone() {
        let outcome =
            run_job_script(link, &scripts.hooks, &prolog, &env, launch.job_id, "prolog").await;
        if !outcome.ok {
            warn!(job = %launch.job_id, "prolog failed: {}", outcome.why);
            report(link, launch.job_id, NodeScript::Prolog).await;
            return Err("Prolog error".into());
        }
    }
    let epilog_env: Vec<(String, String)> = env
        .into_iter()
        .map(|(k, v)| {
            if k == "SLURM_SCRIPT_CONTEXT" {
                (k, "epilog_slurmd".to_string())
            } else {
                (k, v)
            }
        })
        .collect();
    scripts.ran().insert(launch.job_id, Ran::Step(epilog_env));
    Ok(())
}

/// The controller says the job ended: the Epilog of a job whose Prolog ran
/// here for a step (in the background).
pub fn job_ended(link: &Arc<NodeLink>, job_id: JobId) {
    let ran = link.scripts.ran().remove(&job_id);
    let Some(Ran::Step(env)) = ran else {
        return;
    };
    let Some(epilog) = link.scripts.hooks.epilog.clone() else {
        return;
    };
    let link = link.clone();
    tokio::spawn(async move {
        let outcome =
            run_job_script(&link, &link.scripts.hooks, &epilog, &env, job_id, "epilog").await;
        if !outcome.ok {
            warn!(job = %job_id, "epilog failed: {}", outcome.why);
            report(&link, job_id, NodeScript::Epilog).await;
        }
    });
}

/// Runs job `job_id`'s Prolog or Epilog (`step`: `prolog`, `epilog`) with
/// `hooks`' settings; with `PrologFlags=RunInJob` in the job's cgroup.
pub async fn run_job_script(
    link: &NodeLink,
    hooks: &HookSettings,
    spec: &str,
    env: &[(String, String)],
    job_id: JobId,
    step: &str,
) -> Outcome {
    let cgroup = if hooks.run_in_job {
        link.cgroup
            .as_ref()
            .and_then(|settings| job_cgroup(settings, job_id, env, step))
    } else {
        None
    };
    let outcome = hooks
        .run_job_script_in(spec, env, cgroup.as_ref().map(|c| &c.join))
        .await;
    if let Some(c) = cgroup {
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(e) = crate::cgroup::end_step(&*c.driver, &c.step, c.settle) {
                warn!(job = %job_id, "cannot remove the {} cgroup: {e}", c.step_name());
            }
        })
        .await;
    }
    outcome
}

/// A Prolog's or Epilog's cgroup in its job's (`PrologFlags=RunInJob`).
struct ScriptCgroup {
    driver: Box<dyn crate::cgroup::Driver>,
    step: crate::cgroup::CgPath,
    join: crate::cgroup::TaskJoin,
    settle: std::time::Duration,
}

impl ScriptCgroup {
    fn step_name(&self) -> &str {
        self.step.step.as_deref().unwrap_or("")
    }
}

/// Makes the cgroup `step` (with its task 0, where the script goes) in
/// job `job_id`'s, of the user `SLURM_JOB_UID` of `env` (else the user of
/// the job's cgroup here). None, logged, where it cannot be made.
fn job_cgroup(
    settings: &crate::cgroup::CgroupSettings,
    job_id: JobId,
    env: &[(String, String)],
    step: &str,
) -> Option<ScriptCgroup> {
    let driver = settings.driver();
    let uid = env
        .iter()
        .find(|(k, _)| k == "SLURM_JOB_UID")
        .and_then(|(_, v)| v.parse::<u32>().ok())
        .or_else(|| {
            driver
                .jobs()
                .into_iter()
                .find(|c| c.job == job_id.0)
                .map(|c| c.uid)
        });
    let Some(uid) = uid else {
        warn!(job = %job_id, "{step} not run in the job's cgroup: the job's user is unknown");
        return None;
    };
    let step = crate::cgroup::CgPath::job(uid, job_id.0).step(step);
    let made = driver
        .create_step(&step)
        .and_then(|()| driver.create_task(&step.task(0)));
    match made {
        Ok(dirs) => Some(ScriptCgroup {
            join: crate::cgroup::TaskJoin::new(&dirs.procs),
            driver,
            step,
            settle: settings.settle,
        }),
        Err(e) => {
            warn!(job = %job_id, "not run in the job's cgroup: {e}");
            let _ = driver.remove(&step);
            None
        }
    }
}

/// Reports a failed script as the job's end from this node.
async fn report(link: &NodeLink, job_id: JobId, script: NodeScript) {
    let request = CtldRequest::JobExited {
        job_id,
        node: link.node_name.clone(),
        exit: ExitCode { code: 1, signal: 0 },
        launch_failed: (script == NodeScript::Prolog).then(|| "Prolog error".to_string()),
        usage: None,
        oom_kills: 0,
        script_failed: Some(script),
    };
    match link
        .ctld
        .call_until_answered(|| request.clone(), "site script failure")
        .await
    {
        CtldResponse::Ok => {}
        other => warn!(job = %job_id, "controller refused the script failure report: {other:?}"),
    }
}
