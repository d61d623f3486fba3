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

use crate::daemon::link::NodeLink;
use crate::hooks::HookSettings;
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
        let outcome = scripts.hooks.run_job_script(&prolog, &env).await;
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
        let outcome = link.scripts.hooks.run_job_script(&epilog, &env).await;
        if !outcome.ok {
            warn!(job = %job_id, "epilog failed: {}", outcome.why);
            report(&link, job_id, NodeScript::Epilog).await;
        }
    });
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
