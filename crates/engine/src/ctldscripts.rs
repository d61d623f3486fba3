//! `PrologSlurmctld` and `EpilogSlurmctld` (slurm.conf(5)): programs the
//! controller runs on its own host around each job. The engine decides
//! when; the controller runs them off its engine task
//! ([`Command::CtldScript`]) and hands a prolog's end back as an input
//! (`Input::PrologSlurmctldEnded`), journaled like any other.
//!
//! ```text
//!  start_job --PrologSlurmctld set--> RUNNING + configuring (CONFIGURING),
//!      |                              CtldScript{prolog} -> ctld runs it
//!      |   PrologSlurmctldEnded ok  --> LaunchBatch (and the extern step)
//!      |   PrologSlurmctldEnded bad --> batch job that may requeue: requeued
//!      |                                held (launch failed requeued held);
//!      |                                else (salloc, srun, --no-requeue):
//!      |                                cancelled
//!  allocation ends (script exit, cancel, time limit, node failure,
//!  requeue) --EpilogSlurmctld set--> CtldScript{epilog}: its failure is
//!                                    only logged
//! ```
//!
//! Never in the simulator: it runs no programs (`Engine::simulated`).

use crate::{Command, Engine};
use model::{JobId, JobState, PendingReason, Timestamp};

/// The job's variables a controller script gets, as Slurm passes them
/// (slurm.conf "Prolog and Epilog Scripts").
const SCRIPT_VARS: &[&str] = &[
    "SLURM_CLUSTER_NAME",
    "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_CONSTRAINTS",
    "SLURM_JOB_GID",
    "SLURM_JOB_GROUP",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_QOS",
    "SLURM_JOB_UID",
    "SLURM_JOB_USER",
    "SLURM_JOB_RESERVATION",
];

impl Engine {
    /// The environment of a controller script for job `id` (which holds
    /// its allocation): its `SLURM_JOB_*` variables, and
    /// `SLURM_SCRIPT_CONTEXT` (`prolog_slurmctld` or `epilog_slurmctld`).
    fn ctld_script_env(&self, id: JobId, context: &str) -> Vec<(String, String)> {
        let Some(job) = self.jobs.get(&id) else {
            return Vec::new();
        };
        let mut env: Vec<(String, String)> = self
            .batch_env(job)
            .into_iter()
            .filter(|(k, _)| SCRIPT_VARS.contains(&k.as_str()))
            .collect();
        if !env.iter().any(|(k, _)| k == "SLURM_JOB_ID") {
            env.push(("SLURM_JOB_ID".into(), id.0.to_string()));
        }
        if context == "epilog_slurmctld" {
            // The job's end as a wait status and as `code:signal`.
            let (code, sig) = (job.exit.code, job.exit.signal);
            env.push((
                "SLURM_JOB_EXIT_CODE".into(),
                ((code & 0xff) << 8 | (sig & 0x7f)).to_string(),
            ));
            env.push(("SLURM_JOB_EXIT_CODE2".into(), format!("{code}:{sig}")));
        }
        env.push(("SLURM_SCRIPT_CONTEXT".into(), context.into()));
        env
    }

    /// Holds a job that just started in CONFIGURING and asks for its
    /// `PrologSlurmctld`; false where there is none (launch it now).
    pub(crate) fn ctld_prolog(&mut self, id: JobId) -> bool {
        if self.simulated || !self.settings.prolog_slurmctld {
            return false;
        }
        let env = self.ctld_script_env(id, "prolog_slurmctld");
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        job.configuring = true;
        let run = job.restarts;
        self.outbox.push(Command::CtldScript {
            job_id: id,
            run,
            prolog: true,
            env,
        });
        true
    }

    /// Asks for the `EpilogSlurmctld` of a job whose allocation ends (it
    /// still holds it). A job whose PrologSlurmctld never ended runs none.
    pub(crate) fn ctld_epilog(&mut self, id: JobId) {
        if self.simulated || !self.settings.epilog_slurmctld {
            return;
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if job.alloc.is_none() {
            return;
        }
        let run = job.restarts;
        let env = self.ctld_script_env(id, "epilog_slurmctld");
        self.outbox.push(Command::CtldScript {
            job_id: id,
            run,
            prolog: false,
            env,
        });
    }

    /// The PrologSlurmctld of run `run` of job `id` ended (`ok`: exit 0).
    /// Success launches the batch script; failure requeues a batch job held
    /// (`launch failed requeued held`) where it may be requeued, and
    /// cancels any other job (Slurm: "requeued (where possible) or
    /// killed"). An end for a run that is no longer configuring (the job
    /// was cancelled or requeued meanwhile) changes nothing.
    pub fn on_prolog_slurmctld_ended(&mut self, id: JobId, run: u32, ok: bool, now: Timestamp) {
        self.touch();
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if !job.configuring || job.restarts != run || job.state != JobState::Running {
            return;
        }
        job.configuring = false;
        if ok {
            if !job.desc.alloc_only {
                self.launch_batch(id);
            }
            return;
        }
        if !job.desc.alloc_only && job.requeue {
            self.requeue_job(id, PendingReason::LaunchFailRequeueHold, now);
            if let Some(job) = self.jobs.get_mut(&id) {
                job.held = Some(false);
                job.priority = 0;
                job.reason = PendingReason::LaunchFailRequeueHold;
            }
        } else {
            self.end_job(id, JobState::Cancelled, now);
        }
    }

    /// The commands that start a running job's batch script.
    pub(crate) fn launch_batch(&mut self, id: JobId) {
        let Some(batch) = self
            .jobs
            .get(&id)
            .and_then(|j| j.alloc.as_ref())
            .map(|a| a.nodes[0].node)
        else {
            return;
        };
        let launch = self.batch_launch(id);
        let n = &self.nodes[batch.0 as usize];
        self.outbox.push(Command::LaunchBatch {
            node: n.conf.name.clone(),
            addr: n.daemon_addr.clone(),
            launch: Box::new(launch),
        });
        self.extern_command(id, true);
    }
}
