//! What the controller keeps across restarts: a snapshot of the dynamic
//! state (jobs, node states, the next job id), and what it must redo after
//! replaying its journal.

use crate::{Command, Engine, Job, Node};
use model::{JobState, Timestamp};
use proto::JobDesc;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

thread_local! {
    /// While a snapshot is written ([`with_desc_numbers`]): the number of
    /// each distinct description, by address.
    static DESC_OUT: RefCell<Option<HashMap<*const JobDesc, u32>>> = const { RefCell::new(None) };
    /// While a snapshot is read ([`with_desc_table`]): the descriptions
    /// its jobs refer to by number.
    static DESC_IN: RefCell<Option<Vec<Arc<JobDesc>>>> = const { RefCell::new(None) };
}

/// Serializes `f`'s jobs with each description written as its index in
/// `state.descs` (which the caller writes before the state) instead of in
/// full: a queue of 100,000 jobs from one script holds one description,
/// not 100,000 copies to write, read and pool again.
pub fn with_desc_numbers<R>(state: &PersistentState, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DESC_OUT.with(|m| *m.borrow_mut() = None);
        }
    }
    let numbers = state
        .descs
        .iter()
        .enumerate()
        .map(|(i, d)| (Arc::as_ptr(d), i as u32))
        .collect();
    DESC_OUT.with(|m| *m.borrow_mut() = Some(numbers));
    let _reset = Reset;
    f()
}

/// Deserializes `f`'s jobs with description numbers ([`with_desc_numbers`])
/// taken from `descs`. Jobs with a description in full (snapshots of
/// builds before the numbers) are read as before.
pub fn with_desc_table<R>(descs: Vec<Arc<JobDesc>>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DESC_IN.with(|m| *m.borrow_mut() = None);
        }
    }
    DESC_IN.with(|m| *m.borrow_mut() = Some(descs));
    let _reset = Reset;
    f()
}

/// `Job::desc` in serde: a number while a snapshot is written or read
/// with a description table, the description in full otherwise.
pub(crate) mod desc_serde {
    use super::{DESC_IN, DESC_OUT};
    use proto::JobDesc;
    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde::{Serialize, Serializer};
    use std::sync::Arc;

    pub fn serialize<S: Serializer>(d: &Arc<JobDesc>, s: S) -> Result<S::Ok, S::Error> {
        let n = DESC_OUT.with(|m| {
            m.borrow()
                .as_ref()
                .and_then(|m| m.get(&Arc::as_ptr(d)).copied())
        });
        match n {
            Some(n) => s.serialize_u32(n),
            None => (**d).serialize(s),
        }
    }

    struct DescVisitor;

    impl<'de> Visitor<'de> for DescVisitor {
        type Value = Arc<JobDesc>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a job description or its number in the snapshot's table")
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            DESC_IN.with(|t| {
                t.borrow()
                    .as_ref()
                    .and_then(|t| t.get(n as usize).cloned())
                    .ok_or_else(|| {
                        E::custom(format_args!(
                            "job description {n} is not in the snapshot's table"
                        ))
                    })
            })
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            match u64::try_from(n) {
                Ok(n) => self.visit_u64(n),
                Err(_) => Err(E::custom("a negative job description number")),
            }
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            JobDesc::deserialize(de::value::MapAccessDeserializer::new(map)).map(Arc::new)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            JobDesc::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Arc::new)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<JobDesc>, D::Error> {
        d.deserialize_any(DescVisitor)
    }
}

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
    /// Each distinct job description once, in the order the jobs first
    /// use them. Not part of the state's own encoding: a snapshot writes
    /// them ahead of it and the jobs by number ([`with_desc_numbers`]).
    #[serde(skip)]
    pub descs: Vec<Arc<JobDesc>>,
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
    /// The recent submissions' tokens, oldest first (`tokens`).
    #[serde(default)]
    pub submit_tokens: Vec<crate::SavedToken>,
}

/// Why a snapshot cannot be used with the current configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Nodes were removed, renamed or reordered (nodes added after the
    /// last one are taken as they are).
    #[error(
        "the saved state was written for nodes {saved_nodes:?}, but slurm.conf now has nodes \
         {nodes:?}; nodes may only be added after the last one: restore the old node lines \
         or start with an empty StateSaveLocation"
    )]
    NodesChanged {
        /// Nodes in the saved state.
        saved_nodes: Vec<String>,
        /// Nodes now.
        nodes: Vec<String>,
    },
    /// Jobs the controller still holds (pending, running or recently
    /// ended) belong to partitions that slurm.conf no longer has.
    #[error(
        "jobs {jobs:?} belong to partitions {parts:?}, which slurm.conf no longer has; \
         restore those partitions until the jobs are gone, or start with an empty \
         StateSaveLocation"
    )]
    PartitionsGone {
        /// The jobs.
        jobs: Vec<model::JobId>,
        /// The partitions gone that they name.
        parts: Vec<String>,
    },
}

/// Where each saved partition is now (`None`: gone), by name.
fn partition_map(saved: &[String], now: &[String]) -> Vec<Option<usize>> {
    saved
        .iter()
        .map(|name| now.iter().position(|n| n == name))
        .collect()
}

/// A job's partition indexes under the current configuration; `Err` with
/// the saved indexes that are gone (repeats allowed).
fn remap_partitions(job: &mut Job, map: &[Option<usize>]) -> Result<(), Vec<usize>> {
    let at = |p: usize| map.get(p).copied().flatten();
    let gone: Vec<usize> = job
        .partitions
        .iter()
        .chain(std::iter::once(&job.partition))
        .chain(job.alloc.iter().map(|a| &a.partition))
        .chain(job.suspend.iter().map(|s| &s.alloc.partition))
        .copied()
        .filter(|&p| at(p).is_none())
        .collect();
    if !gone.is_empty() {
        return Err(gone);
    }
    let new = |p: &mut usize| *p = at(*p).expect("checked above");
    job.partitions.iter_mut().for_each(new);
    new(&mut job.partition);
    if let Some(a) = job.alloc.as_mut() {
        new(&mut a.partition);
    }
    if let Some(s) = job.suspend.as_mut() {
        new(&mut s.alloc.partition);
    }
    Ok(())
}

impl Engine {
    /// The node and partition names in configuration order, as a snapshot
    /// records them (`PersistentState::node_names`, `partition_names`).
    pub fn layout(&self) -> (Vec<String>, Vec<String>) {
        (
            self.nodes.iter().map(|n| n.conf.name.clone()).collect(),
            self.parts.iter().map(|p| p.conf.name.clone()).collect(),
        )
    }

    /// The state to write into a snapshot.
    pub fn persistent_state(&self) -> PersistentState {
        // Each distinct environment and script once, numbered in the order
        // the jobs first use them.
        let mut envs: Vec<Arc<Vec<(String, String)>>> = Vec::new();
        let mut scripts: Vec<Arc<str>> = Vec::new();
        let mut env_idx: BTreeMap<*const Vec<(String, String)>, u32> = BTreeMap::new();
        let mut script_idx: BTreeMap<*const u8, u32> = BTreeMap::new();
        let mut descs: Vec<Arc<JobDesc>> = Vec::new();
        let mut desc_idx: HashMap<*const JobDesc, u32> = HashMap::new();
        let mut job_text = Vec::with_capacity(self.jobs.len());
        for j in self.jobs.values() {
            desc_idx.entry(Arc::as_ptr(&j.desc)).or_insert_with(|| {
                descs.push(j.desc.clone());
                descs.len() as u32 - 1
            });
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
        let (node_names, partition_names) = self.layout();
        PersistentState {
            descs,
            envs,
            scripts,
            job_text,
            node_names,
            partition_names,
            nodes: self.nodes.to_vec(),
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
            submit_tokens: self.submit_tokens.saved(),
        }
    }

    /// Rebuilds the engine from a snapshot under the current configuration.
    /// Node definitions come from slurm.conf; their dynamic state and every
    /// job come from the snapshot; node usage is recomputed from the jobs.
    ///
    /// slurm.conf may have changed since, as an administrator changes it:
    /// partitions added, removed, reordered or changed (jobs follow their
    /// partitions by name; refused while a job the controller holds names
    /// one that is gone), and nodes added after the last one (new nodes
    /// start unregistered; refused for any other change to the nodes,
    /// whose places the jobs' allocations name).
    pub fn restore(
        cfg: &conf::Config,
        mut state: PersistentState,
        boot_time: Timestamp,
    ) -> Result<Engine, RestoreError> {
        let mut e = Engine::new(cfg, boot_time);
        let (nodes, parts) = e.layout();
        if !nodes.starts_with(&state.node_names) {
            return Err(RestoreError::NodesChanged {
                saved_nodes: state.node_names,
                nodes,
            });
        }
        if parts != state.partition_names {
            let map = partition_map(&state.partition_names, &parts);
            let (mut jobs, mut gone) = (Vec::new(), Vec::new());
            for job in state.jobs.iter_mut() {
                if let Err(lost) = remap_partitions(job, &map) {
                    jobs.push(job.id);
                    gone.extend(lost);
                }
            }
            if !jobs.is_empty() {
                gone.sort_unstable();
                gone.dedup();
                return Err(RestoreError::PartitionsGone {
                    jobs,
                    parts: gone
                        .into_iter()
                        .filter_map(|p| state.partition_names.get(p).cloned())
                        .collect(),
                });
            }
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
        e.submit_tokens = crate::tokens::SubmitTokens::restored(state.submit_tokens);
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
            .map(|env| e.intern_env(env))
            .collect();
        let scripts: Vec<_> = state
            .scripts
            .iter()
            .map(|s| e.intern_script(Arc::from(&**s)))
            .collect();
        // Jobs read with a table share its descriptions: pool each once
        // (the read copy is kept while the loop runs, so its address
        // stays its own).
        let mut pooled: HashMap<*const JobDesc, (Arc<JobDesc>, Arc<JobDesc>)> = HashMap::new();
        for (mut job, (env, script)) in state.jobs.into_iter().zip(state.job_text) {
            let id = job.id;
            job.env = envs[env as usize].clone();
            job.script = scripts[script as usize].clone();
            let ptr = Arc::as_ptr(&job.desc);
            job.desc = match pooled.get(&ptr) {
                Some((_, d)) => d.clone(),
                None if Arc::strong_count(&job.desc) > 1 => {
                    let read = job.desc.clone();
                    let d = e.intern_desc(job.desc);
                    pooled.insert(ptr, (read, d.clone()));
                    d
                }
                None => e.intern_desc(job.desc),
            };
            let alloc = job.alloc.clone();
            e.jobs.insert(id, job);
            if let Some(a) = alloc {
                e.take_resources(id, &a, boot_time);
            }
        }
        e.set_outcomes(state.outcomes);
        e.reindex_arrays();
        // The first pass looks for them.
        e.may_depend = true;
        e.may_complete = true;
        e.may_resume = true;
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
