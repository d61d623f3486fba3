//! What the controller keeps across restarts: a snapshot of the dynamic
//! state (jobs, node states, the next job id), and what it must redo after
//! replaying its journal.

use crate::{Command, Engine, Job, Node};
use model::{JobState, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The engine's state as stored in a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PersistentState {
    /// Node names in configuration order, to check the configuration still matches.
    pub node_names: Vec<String>,
    /// Partition names in configuration order.
    pub partition_names: Vec<String>,
    /// Nodes with their dynamic state.
    pub nodes: Vec<Node>,
    /// Every job still held.
    pub jobs: Vec<Box<Job>>,
    /// Each distinct environment once.
    pub envs: Vec<Arc<Vec<(String, String)>>>,
    /// Each distinct script once.
    pub scripts: Vec<Arc<str>>,
    /// For each job (same order as `jobs`), its index in `envs` and `scripts`.
    pub job_text: Vec<(u32, u32)>,
    /// Next job id to give.
    pub next_job_id: u32,
    /// Submissions so far (priority tie-break).
    pub n_submitted: u32,
    /// How purged jobs ended, for dependencies on them.
    #[serde(default)]
    pub outcomes: Vec<(model::JobId, crate::deps::Outcome)>,
    /// The association database last pushed by the controller.
    #[serde(default)]
    pub assoc_tables: Option<proto::acctdb::AcctTables>,
    /// Fair-share usage per (account, user), decayed.
    #[serde(default)]
    pub usage: Vec<(String, String, f64)>,
    /// When usage was last accrued (PriorityCalcPeriod).
    #[serde(default)]
    pub prio_last_calc: Timestamp,
}

/// Why a snapshot cannot be used with the current configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Nodes or partitions were added, removed or reordered.
    #[error(
        "the saved state was written for nodes {saved_nodes:?} and partitions {saved_parts:?}, \
         but slurm.conf now has nodes {nodes:?} and partitions {parts:?}; restore the old \
         configuration or start with an empty StateSaveLocation"
    )]
    ConfigChanged {
        /// Nodes in the saved state.
        saved_nodes: Vec<String>,
        /// Partitions in the saved state.
        saved_parts: Vec<String>,
        /// Nodes now.
        nodes: Vec<String>,
        /// Partitions now.
        parts: Vec<String>,
    },
}

impl Engine {
    /// The state to write into a snapshot.
    pub fn persistent_state(&self) -> PersistentState {
        // Each distinct environment and script once, numbered in the order
        // the jobs first use them.
        let mut envs: Vec<Arc<Vec<(String, String)>>> = Vec::new();
        let mut scripts: Vec<Arc<str>> = Vec::new();
        let mut env_idx: BTreeMap<*const Vec<(String, String)>, u32> = BTreeMap::new();
        let mut script_idx: BTreeMap<*const u8, u32> = BTreeMap::new();
        let mut job_text = Vec::with_capacity(self.jobs.len());
        for j in self.jobs.values() {
            let e = *env_idx.entry(Arc::as_ptr(&j.env)).or_insert_with(|| {
                envs.push(j.env.clone());
                envs.len() as u32 - 1
            });
            let sc = *script_idx
                .entry(Arc::as_ptr(&j.script) as *const u8)
                .or_insert_with(|| {
                    scripts.push(j.script.clone());
                    scripts.len() as u32 - 1
                });
            job_text.push((e, sc));
        }
        PersistentState {
            envs,
            scripts,
            job_text,
            node_names: self.nodes.iter().map(|n| n.conf.name.clone()).collect(),
            partition_names: self.parts.iter().map(|p| p.conf.name.clone()).collect(),
            nodes: self.nodes.clone(),
            jobs: self.jobs.values().cloned().collect(),
            next_job_id: self.next_job_id,
            outcomes: self.outcomes(),
            n_submitted: self.n_submitted,
            assoc_tables: self.assoc.as_deref().cloned(),
            usage: self
                .usage
                .iter()
                .map(|((a, u), v)| (a.clone(), u.clone(), *v))
                .collect(),
            prio_last_calc: self.prio_last_calc,
        }
    }

    /// Rebuilds the engine from a snapshot under the current configuration.
    /// Node definitions come from slurm.conf; their dynamic state and every
    /// job come from the snapshot; node usage is recomputed from the jobs.
    pub fn restore(
        cfg: &conf::Config,
        state: PersistentState,
        boot_time: Timestamp,
    ) -> Result<Engine, RestoreError> {
        let mut e = Engine::new(cfg, boot_time);
        let nodes: Vec<String> = e.nodes.iter().map(|n| n.conf.name.clone()).collect();
        let parts: Vec<String> = e.parts.iter().map(|p| p.conf.name.clone()).collect();
        if nodes != state.node_names || parts != state.partition_names {
            return Err(RestoreError::ConfigChanged {
                saved_nodes: state.node_names,
                saved_parts: state.partition_names,
                nodes,
                parts,
            });
        }
        for (n, saved) in e.nodes.iter_mut().zip(state.nodes) {
            n.daemon_addr = saved.daemon_addr;
            n.port = saved.port;
            n.state = saved.state;
            n.registered = saved.registered;
            n.reason = saved.reason;
            n.reason_user = saved.reason_user;
            n.reason_time = saved.reason_time;
            n.report = saved.report;
            n.last_busy = saved.last_busy;
            n.last_response = saved.last_response;
        }
        e.touch();
        e.next_job_id = state.next_job_id;
        e.n_submitted = state.n_submitted;
        e.assoc = state.assoc_tables.map(Arc::new);
        e.usage = state
            .usage
            .into_iter()
            .map(|(a, u, v)| ((a, u), v))
            .collect();
        if state.prio_last_calc > 0 {
            e.prio_last_calc = state.prio_last_calc;
        }
        // The snapshot stores each environment and script once: pool those
        // and share them, rather than copying one per job.
        let envs: Vec<_> = state
            .envs
            .into_iter()
            .map(|env| {
                let env = Arc::unwrap_or_clone(env);
                e.intern_env(env)
            })
            .collect();
        let scripts: Vec<_> = state
            .scripts
            .iter()
            .map(|s| e.intern_script(s.to_string()))
            .collect();
        for (mut job, (env, script)) in state.jobs.into_iter().zip(state.job_text) {
            let id = job.id;
            job.env = envs[env as usize].clone();
            job.script = scripts[script as usize].clone();
            job.desc = e.intern_desc(job.desc);
            let alloc = job.alloc.clone();
            e.jobs.insert(id, job);
            if let Some(a) = alloc {
                e.take_resources(id, &a, boot_time);
            }
        }
        e.set_outcomes(state.outcomes);
        e.reindex_arrays();
        Ok(e)
    }

    /// Redoes what may have been lost with the previous controller process:
    /// launches of running jobs (a node daemon ignores a launch it already
    /// has), terminations of ending jobs; and gives every node a full
    /// SlurmdTimeout to answer before it is judged silent.
    pub fn after_recovery(&mut self, now: Timestamp) {
        self.touch();
        // PriorityUsageResetPeriod=NOW clears the usage at every start.
        if self.settings.priority.usage_reset_period == "NOW" {
            self.usage.clear();
        }
        for n in self.nodes.iter_mut() {
            if n.registered {
                n.last_response = Some(now);
            }
        }
        let ids: Vec<_> = self.jobs.keys().copied().collect();
        for id in ids {
            let job = &self.jobs[&id];
            let Some(alloc) = &job.alloc else { continue };
            let batch = alloc.nodes[0].node;
            if job.state == JobState::Running && !job.completing && !job.desc.alloc_only {
                let launch = self.batch_launch(id);
                let n = &self.nodes[batch.0 as usize];
                self.outbox.push(Command::LaunchBatch {
                    node: n.conf.name.clone(),
                    addr: n.daemon_addr.clone(),
                    launch: Box::new(launch),
                });
            } else if job.completing {
                let run = if job.state == JobState::Pending {
                    job.restarts.saturating_sub(1)
                } else {
                    job.restarts
                };
                self.node_command_terminate(batch, id, run);
            }
        }
    }
}
