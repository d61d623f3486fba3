//! What the controller keeps across restarts: a snapshot of the dynamic
//! state (jobs, node states, the next job id), and what it must redo after
//! replaying its journal. The snapshot's types are its own, one module
//! per format version (`v1`), converted to and from the engine's here;
//! the journal's records are too (`journal_v1`), and the wire payloads
//! both hold are mirrored once, for both (`payload_v1`).

use crate::{Command, Engine};
use model::{JobState, Timestamp};
use proto::JobDesc;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub mod journal_v1;
pub mod payload_v1;
pub mod resv_v1;
pub mod v1;

use v1::Desc;

/// The engine's state as stored in a snapshot: the current version of the
/// snapshot's own types.
pub type PersistentState = v1::Snapshot;

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
    /// A job gives its description by a number the snapshot's table does
    /// not have.
    #[error(transparent)]
    UnknownDesc(#[from] v1::UnknownDesc),
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
fn remap_partitions(job: &mut v1::Job, map: &[Option<usize>]) -> Result<(), Vec<usize>> {
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
        // Each distinct description is copied into its mirror once, and
        // the jobs that share it share the copy.
        let mut descs: Vec<Arc<v1::JobDesc<'static>>> = Vec::new();
        let mut desc_idx: HashMap<*const JobDesc, u32> = HashMap::new();
        let mut jobs = Vec::with_capacity(self.jobs.len());
        let mut job_text = Vec::with_capacity(self.jobs.len());
        for j in self.jobs.values() {
            let d = *desc_idx.entry(Arc::as_ptr(&j.desc)).or_insert_with(|| {
                descs.push(Arc::new(v1::JobDesc::from(&*j.desc).into_owned()));
                descs.len() as u32 - 1
            });
            jobs.push(v1::Job::from_engine(j, descs[d as usize].clone()));
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
            nodes: self.nodes.iter().map(v1::Node::from).collect(),
            jobs,
            next_job_id: self.next_job_id,
            outcomes: self
                .outcomes()
                .into_iter()
                .map(|(id, o)| (id, o.into()))
                .collect(),
            n_submitted: self.n_submitted,
            assoc_tables: self.assoc.as_deref().cloned(),
            usage: self
                .usage
                .iter()
                .map(|((a, u), v)| (a.clone(), u.clone(), *v))
                .collect(),
            prio_last_calc: self.prio_last_calc,
            submit_tokens: self.submit_tokens.saved(),
            partitions: if self.parts_changed {
                self.cfg
                    .partitions
                    .iter()
                    .map(v1::Partition::from)
                    .collect()
            } else {
                Vec::new()
            },
            reservations: self.saved_resvs(),
            resv_next_id: self.resvs.next_id,
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
        state: PersistentState,
        boot_time: Timestamp,
    ) -> Result<Engine, RestoreError> {
        Engine::restore_with(cfg, state, boot_time, false)
    }

    /// [`Engine::restore`]; with `keep_partitions` (`slurmctld -R`) the
    /// partitions as `scontrol update/create/delete partition` left them
    /// (the snapshot's, where it has them) replace slurm.conf's, as Slurm
    /// recovers partition state only with `-R`. Without it, a partition
    /// created at runtime that jobs still name is kept beside slurm.conf's.
    pub fn restore_with(
        cfg: &conf::Config,
        mut state: PersistentState,
        boot_time: Timestamp,
        keep_partitions: bool,
    ) -> Result<Engine, RestoreError> {
        let saved_parts = std::mem::take(&mut state.partitions);
        let mut changed = false;
        let mut owned;
        let cfg = if saved_parts.is_empty() {
            cfg
        } else {
            owned = cfg.clone();
            if keep_partitions {
                owned.partitions = saved_parts
                    .into_iter()
                    .map(conf::PartitionConf::from)
                    .collect();
                changed = true;
            } else {
                // Partitions slurm.conf lacks that a job still names (made
                // by `scontrol create partition`, or kept by a reconfigure
                // while jobs used them) stay until the jobs are gone.
                let named: std::collections::BTreeSet<&String> = state
                    .jobs
                    .iter()
                    .flat_map(|j| j.partitions.iter().chain(std::iter::once(&j.partition)))
                    .filter_map(|&p| state.partition_names.get(p))
                    .collect();
                for p in saved_parts {
                    if named.contains(&p.name) && owned.partition(&p.name).is_none() {
                        owned.partitions.push(p.into());
                        changed = true;
                    }
                }
            }
            let known: Vec<String> = owned.nodes.iter().map(|n| n.name.clone()).collect();
            for p in owned.partitions.iter_mut() {
                p.nodes.retain(|n| known.contains(n));
            }
            &owned
        };
        let mut e = Engine::new(cfg, boot_time);
        e.parts_changed = changed;
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
            n.report = saved.report.map(Into::into);
            n.last_busy = saved.last_busy;
            n.last_response = saved.last_response;
            // REBOOT_ISSUED is not part of the state's encoding: the
            // reboot's record says it.
            n.reboot = saved.reboot.map(Into::into);
            n.state.reboot = n.reboot.as_ref().is_some_and(|r| r.issued.is_none());
            n.state.reboot_issued = n.reboot.as_ref().is_some_and(|r| r.issued.is_some());
        }
        e.any_reboot = e.nodes.iter().any(|n| n.reboot.is_some());
        e.touch();
        e.next_job_id = state.next_job_id;
        e.n_submitted = state.n_submitted;
        e.submit_tokens = crate::tokens::SubmitTokens::restored(state.submit_tokens);
        e.restore_resvs(state.reservations, state.resv_next_id);
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
        // Jobs read with a table share its descriptions: convert and pool
        // each once (the read copy is kept while the loop runs, so its
        // address stays its own). A description of one job alone (older
        // snapshots) is moved, not copied.
        type Read = Arc<v1::JobDesc<'static>>;
        let mut pooled: HashMap<*const v1::JobDesc<'static>, (Read, Arc<JobDesc>)> = HashMap::new();
        for (mut saved, (env, script)) in state.jobs.into_iter().zip(state.job_text) {
            let id = saved.id;
            let desc = std::mem::replace(&mut saved.desc, Desc::Number(0)).resolve(&state.descs)?;
            let ptr = Arc::as_ptr(&desc);
            let desc = match pooled.get(&ptr) {
                Some((_, d)) => d.clone(),
                None if Arc::strong_count(&desc) > 1 => {
                    let d = e.intern_desc(Arc::new(JobDesc::from((*desc).clone())));
                    pooled.insert(ptr, (desc, d.clone()));
                    d
                }
                None => {
                    let read = Arc::try_unwrap(desc).unwrap_or_else(|d| (*d).clone());
                    e.intern_desc(Arc::new(JobDesc::from(read)))
                }
            };
            let job = Box::new(saved.into_engine(
                desc,
                scripts[script as usize].clone(),
                envs[env as usize].clone(),
            ));
            let alloc = job.alloc.clone();
            e.jobs.insert(id, job);
            if let Some(mut a) = alloc {
                // Ids as saved; a snapshot of an older build has none, and
                // its running jobs get the lowest free ones in id order.
                e.take_resources(id, &mut a, boot_time);
                if let Some(j) = e.jobs.get_mut(&id) {
                    j.alloc = Some(a);
                }
            }
        }
        e.set_outcomes(
            state
                .outcomes
                .into_iter()
                .map(|(id, o)| (id, o.into()))
                .collect(),
        );
        e.reindex_arrays();
        // The first pass looks for them.
        e.may_depend = true;
        e.may_complete = true;
        e.may_resume = true;
        e.resvs.ever |= e.jobs.values().any(|j| j.desc.reservation.is_some());
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
            if job.state == JobState::Running && job.configuring && !job.completing {
                // Its PrologSlurmctld never reported: it runs again.
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.configuring = false;
                }
                self.ctld_prolog(id);
            } else if job.state == JobState::Running && !job.completing && !job.desc.alloc_only {
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
