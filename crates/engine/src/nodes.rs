//! Node events: registration, administrator updates, and the bookkeeping of
//! resources that jobs take and give back.

use crate::{Command, Engine, Node, Settings};
use model::{JobState, NodeBase, NodeState, PendingReason, Timestamp};
use proto::{Identity, NodeRegistration, NodeStateRequest, SlurmError};
use sched::{Allocation, GresPool, NodeIdx};
use std::collections::BTreeSet;

/// Slurm's reason for a node that stopped answering.
pub const NOT_RESPONDING: &str = "Not responding";
/// The reason of a node whose host booted while the controller was not
/// looking (its jobs died with it).
pub const UNEXPECTEDLY_REBOOTED: &str = "Node unexpectedly rebooted";
/// How much later a node's boot time may read before it counts as a new
/// boot (the kernel's boot time follows the wall clock's steps).
const REBOOT_SLACK_SECS: Timestamp = 5;

/// The controller's record of a configured node, before it registers.
pub(crate) fn new_node(nc: &conf::NodeConf, cfg: &conf::Config, settings: &Settings) -> Node {
    let port = nc.port.unwrap_or(settings.slurmd_port);
    // GPU indexes count up across the node's pools in configuration order,
    // as the devices of gres.conf `File=` lines do.
    let mut gres = Vec::new();
    let mut next_index: std::collections::BTreeMap<String, u32> = Default::default();
    let near = gres_cores(cfg, &nc.name);
    // gres.conf `Cores=` names cores: each stands for its threads' ids.
    let t = crate::hw_threads(nc);
    let near: std::collections::BTreeMap<(String, u32), Vec<u32>> = near
        .into_iter()
        .map(|(k, cores)| {
            let ids = cores.iter().flat_map(|c| c * t..(c + 1) * t).collect();
            (k, ids)
        })
        .collect();
    for g in &nc.gres {
        let start = *next_index.get(&g.name).unwrap_or(&0);
        let n = g.count as u32;
        next_index.insert(g.name.clone(), start + n);
        let indexes: Vec<u32> = (start..start + n).collect();
        let cores: Vec<Vec<u32>> = indexes
            .iter()
            .map(|i| near.get(&(g.name.clone(), *i)).cloned().unwrap_or_default())
            .collect();
        gres.push(GresPool {
            name: g.name.clone(),
            type_: g.type_.clone(),
            indexes,
            used: vec![false; n as usize],
            cores: if cores.iter().all(Vec::is_empty) {
                Vec::new()
            } else {
                cores
            },
        });
    }
    let base = match nc.state.as_deref() {
        Some("FUTURE") => NodeBase::Future,
        Some("DOWN") => NodeBase::Down,
        _ => NodeBase::Unknown,
    };
    let mut state = NodeState::new(base);
    state.drain = matches!(nc.state.as_deref(), Some("DRAIN"));
    Node {
        daemon_addr: format!("{}:{}", nc.addr, port),
        port,
        state,
        registered: false,
        reason: nc.reason.clone(),
        reason_user: nc.reason.as_ref().map(|_| "slurm".to_string()),
        reason_time: None,
        alloc_cpus: 0,
        alloc_mem: 0,
        cpu_ids_in_use: BTreeSet::new(),
        gres,
        jobs: Default::default(),
        exclusive_in_use: false,
        partitions: Vec::new(),
        report: None,
        last_busy: None,
        last_response: None,
        reboot: None,
        conf: nc.clone(),
    }
}

/// gres.conf `Cores=` of `node`'s devices, by (name, the node's index):
/// indexes count up over the node's lines of each name in file order, as
/// the node daemon counts them. The controller reads gres.conf beside
/// slurm.conf, as Slurm's does, for `--gres-flags=enforce-binding`.
fn gres_cores(
    cfg: &conf::Config,
    node: &str,
) -> std::collections::BTreeMap<(String, u32), Vec<u32>> {
    let mut out = std::collections::BTreeMap::new();
    let mut next: std::collections::BTreeMap<&str, u32> = Default::default();
    for line in cfg.gres_for_node(node) {
        let start = *next.get(line.name.as_str()).unwrap_or(&0);
        let n = u32::try_from(line.count).unwrap_or(u32::MAX);
        next.insert(line.name.as_str(), start.saturating_add(n));
        if let Some(list) = line.cores.as_deref().and_then(conf::parse_id_list) {
            for i in start..start.saturating_add(n) {
                out.insert((line.name.clone(), i), list.clone());
            }
        }
    }
    out
}

impl Engine {
    pub(crate) fn node_idx(&self, name: &str) -> Option<NodeIdx> {
        self.node_by_name.get(name).copied()
    }

    /// A node daemon started and reported its resources.
    pub fn on_node_registered(
        &mut self,
        reg: NodeRegistration,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let idx = self
            .node_idx(&reg.name)
            .ok_or(SlurmError::InvalidNodeName)?;
        let n = &mut self.nodes[idx.0 as usize];
        // When the controller last heard from the node (before now).
        let last_heard = n.last_response;
        // The daemon may listen elsewhere than configured (port 0 in tests).
        n.daemon_addr = format!("{}:{}", reg.addr, reg.port);
        n.port = reg.port;
        n.registered = true;
        n.state.not_responding = false;
        n.last_response = Some(now);
        // Slurm drains a node that reports less than its configuration, so
        // jobs are never placed on resources that are not there.
        let low_cpus = reg.cpus < n.conf.cpus;
        let low_mem = reg.real_memory < n.conf.real_memory;
        let drain_reason = if low_cpus {
            Some("Low socket*core*thread count, Low CPUs".to_string())
        } else if low_mem {
            Some(format!(
                "Low RealMemory (reported:{} < 100.00% of configured:{})",
                reg.real_memory, n.conf.real_memory
            ))
        } else {
            None
        };
        if let Some(reason) = drain_reason {
            n.state.drain = true;
            n.reason = Some(reason);
            n.reason_user = Some(self.settings.slurm_user.clone());
            n.reason_time = Some(now);
        }
        if n.state.base == NodeBase::Unknown {
            n.state.base = NodeBase::Idle;
        }
        let running = reg.running_jobs.clone();
        // The host started again since the controller last heard from it
        // (Slurm's test: a boot time later than the last contact, which a
        // clock step cannot fake the way it moves the boot time the kernel
        // reports) and since its last registration: whatever ran there
        // died with it, whatever its daemon's spool kept (the spool is not
        // flushed to disk, see noded's `spool`).
        let rebooted = n.report.as_ref().is_some_and(|old| {
            reg.boot_time > old.boot_time + REBOOT_SLACK_SECS
                && last_heard.is_some_and(|last| reg.boot_time > last)
        });
        let (boot_id, boot_time) = (reg.boot_id.clone(), reg.boot_time);
        n.report = Some(reg);
        // A reboot the controller issued: the host back is no surprise
        // (it ran nothing), nor is a daemon restarted meanwhile.
        if n.state.reboot_issued {
            self.reboot_registered(idx, &boot_id, boot_time);
        } else if rebooted {
            // Slurm takes such a node out of service unless ReturnToService=2
            // says any registration with a valid configuration brings it back.
            // A node already DOWN keeps its reason (its jobs were lost then).
            let n = &mut self.nodes[idx.0 as usize];
            if self.settings.return_to_service != 2 && n.state.base != NodeBase::Down {
                n.state.base = NodeBase::Down;
                n.reason = Some(UNEXPECTEDLY_REBOOTED.to_string());
                n.reason_user = Some(self.settings.slurm_user.clone());
                n.reason_time = Some(now);
            }
            self.lose_jobs(idx, &running, now);
        }
        self.maybe_return_to_service(idx);
        // Jobs the node still runs but that the controller ended or moved
        // (it was DOWN meanwhile) are orphans: end them there.
        for job_id in running {
            let ours = self.jobs.get(&job_id).is_some_and(|j| {
                j.alloc
                    .as_ref()
                    .is_some_and(|a| a.nodes.iter().any(|na| na.node == idx))
            });
            if !ours {
                self.node_command_terminate(idx, job_id, u32::MAX);
            }
        }
        self.refresh_node_state(idx);
        Ok(())
    }

    /// A DOWN node that answers again becomes usable as ReturnToService
    /// says: 1 when it was DOWN only for not responding, 2 whatever the
    /// reason, 0 never (an administrator resumes it).
    fn maybe_return_to_service(&mut self, idx: NodeIdx) {
        let rts = self.settings.return_to_service;
        let n = &mut self.nodes[idx.0 as usize];
        // A node rebooting comes back by registering after its reboot.
        if n.state.base != NodeBase::Down || n.state.reboot_issued {
            return;
        }
        let not_responding = n.reason.as_deref() == Some(NOT_RESPONDING);
        let low_resources =
            n.state.drain && n.reason.as_deref().is_some_and(|r| r.starts_with("Low "));
        if (rts == 1 && not_responding) || (rts == 2 && !low_resources) {
            n.state.base = NodeBase::Idle;
            n.reason = None;
            n.reason_user = None;
            n.reason_time = None;
        }
    }

    /// The shell pinged a node's daemon; `ok` says whether it answered.
    pub fn on_node_ping(&mut self, name: &str, ok: bool, now: Timestamp) {
        let Some(idx) = self.node_idx(name) else {
            return;
        };
        let n = &mut self.nodes[idx.0 as usize];
        if ok {
            if n.state.not_responding || n.state.base == NodeBase::Down {
                self.touch();
            }
            let n = &mut self.nodes[idx.0 as usize];
            n.last_response = Some(now);
            n.state.not_responding = false;
            self.maybe_return_to_service(idx);
            self.refresh_node_state(idx);
        } else if n.registered {
            // `*` at once; DOWN only after SlurmdTimeout of silence.
            n.state.not_responding = true;
        }
    }

    /// Nodes silent for SlurmdTimeout are set DOWN "Not responding".
    pub(crate) fn check_node_timeouts(&mut self, now: Timestamp) {
        let timeout = self.settings.slurmd_timeout as i64;
        if timeout == 0 {
            return;
        }
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            let silent = n.last_response.is_some_and(|t| now >= t + timeout);
            if !silent || n.state.base == NodeBase::Down {
                continue;
            }
            let n = &mut self.nodes[i];
            n.state.not_responding = true;
            n.reason = Some(NOT_RESPONDING.to_string());
            n.reason_user = Some(self.settings.slurm_user.clone());
            n.reason_time = Some(now);
            self.node_down(NodeIdx(i as u32), now);
        }
    }

    /// A node daemon saw a fatal GPU Xid (docs/admin-hooks.md, "GPU Xid
    /// quarantine"): the node is drained with reason `GPU Xid N` as
    /// SlurmUser. The jobs running on GPU `gpu` there (every running job
    /// of the node where the GPU is not known, or where a job's GPUs are
    /// not) may not come back to the node: it joins their excluded nodes
    /// (`ExcNodeList`). One that may be requeued (`--requeue`,
    /// `JobRequeue=1`) goes back to the queue once, for this fault; one
    /// that may not ends NODE_FAIL, as with a node failure. Jobs on the
    /// node's other GPUs run on: a drain lets them end.
    pub fn on_gpu_xid(
        &mut self,
        node: &str,
        xid: u32,
        gpu: Option<u32>,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let idx = self.node_idx(node).ok_or(SlurmError::InvalidNodeName)?;
        {
            let slurm_user = self.settings.slurm_user.clone();
            let n = &mut self.nodes[idx.0 as usize];
            n.state.drain = true;
            n.reason = Some(format!("GPU Xid {xid}"));
            n.reason_user = Some(slurm_user);
            n.reason_time = Some(now);
        }
        let name = self.nodes[idx.0 as usize].conf.name.clone();
        let pools = &self.nodes[idx.0 as usize].gres;
        let hit: Vec<model::JobId> = self.nodes[idx.0 as usize]
            .jobs
            .iter()
            .copied()
            .filter(|id| {
                let Some(job) = self.jobs.get(id) else {
                    return false;
                };
                if job.state != JobState::Running {
                    return false;
                }
                let Some(share) = job
                    .alloc
                    .as_ref()
                    .and_then(|a| a.nodes.iter().find(|na| na.node == idx))
                else {
                    return false;
                };
                let gpus: Vec<u32> = share
                    .gres
                    .iter()
                    .filter(|(p, _)| pools.get(*p).is_some_and(|p| p.name == "gpu"))
                    .flat_map(|(_, i)| i.iter().copied())
                    .collect();
                match gpu {
                    Some(g) if !gpus.is_empty() => gpus.contains(&g),
                    _ => true,
                }
            })
            .collect();
        for id in hit {
            let Some(job) = self.jobs.get_mut(&id) else {
                continue;
            };
            if !job.desc.exclude.contains(&name) {
                std::sync::Arc::make_mut(&mut job.desc)
                    .exclude
                    .push(name.clone());
            }
            if job.requeue && !job.desc.alloc_only {
                self.requeue_job(id, PendingReason::None, now);
            } else {
                self.end_job(id, JobState::NodeFail, now);
            }
        }
        self.refresh_node_state(idx);
        Ok(())
    }

    /// `scontrol update NodeName=... State=... Reason=...`.
    pub fn on_update_node(
        &mut self,
        names: &[String],
        state: Option<NodeStateRequest>,
        reason: Option<String>,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        if !self.is_super(who) {
            return Err(SlurmError::InvalidUserId);
        }
        let idxs: Vec<NodeIdx> = names
            .iter()
            .map(|n| self.node_idx(n).ok_or(SlurmError::InvalidNodeName))
            .collect::<Result<_, _>>()?;
        for idx in idxs {
            match state {
                Some(NodeStateRequest::Drain) => {
                    let n = &mut self.nodes[idx.0 as usize];
                    n.state.drain = true;
                    self.set_reason(idx, reason.clone(), who, now);
                }
                Some(NodeStateRequest::Down) => {
                    self.set_reason(idx, reason.clone(), who, now);
                    self.node_down(idx, now);
                }
                Some(NodeStateRequest::Resume) | Some(NodeStateRequest::Idle) => {
                    self.forget_reboot(idx);
                    let n = &mut self.nodes[idx.0 as usize];
                    n.state.drain = false;
                    n.state.fail = false;
                    if n.state.base == NodeBase::Down {
                        n.state.base = if n.registered {
                            NodeBase::Idle
                        } else {
                            NodeBase::Unknown
                        };
                    }
                    n.reason = None;
                    n.reason_user = None;
                    n.reason_time = None;
                    self.refresh_node_state(idx);
                }
                Some(NodeStateRequest::Undrain) => {
                    let n = &mut self.nodes[idx.0 as usize];
                    n.state.drain = false;
                    if n.state.base != NodeBase::Down {
                        n.reason = None;
                        n.reason_user = None;
                        n.reason_time = None;
                    }
                }
                None => {
                    if reason.is_some() {
                        self.set_reason(idx, reason.clone(), who, now);
                    }
                }
            }
        }
        Ok(())
    }

    fn set_reason(&mut self, idx: NodeIdx, reason: Option<String>, who: &Identity, now: Timestamp) {
        let n = &mut self.nodes[idx.0 as usize];
        n.reason = reason;
        n.reason_user = Some(who.user.clone());
        n.reason_time = Some(now);
    }

    /// Takes a node out of service: its jobs end NODE_FAIL, or go back to
    /// the queue when they may be requeued.
    pub(crate) fn node_down(&mut self, idx: NodeIdx, now: Timestamp) {
        self.nodes[idx.0 as usize].state.base = NodeBase::Down;
        self.lose_jobs(idx, &[], now);
    }

    /// The jobs on a node that is down or rebooted, except those it says it
    /// still runs (`kept`), are gone: they end NODE_FAIL, or go back to the
    /// queue when they may be requeued.
    fn lose_jobs(&mut self, idx: NodeIdx, kept: &[model::JobId], now: Timestamp) {
        self.suspended_node_down(idx, now);
        let jobs: Vec<_> = self.nodes[idx.0 as usize]
            .jobs
            .iter()
            .copied()
            .filter(|id| !kept.contains(id))
            .collect();
        for id in jobs {
            let job = &self.jobs[&id];
            if job.state == JobState::Running {
                if job.requeue {
                    self.requeue_job(id, PendingReason::None, now);
                } else {
                    self.end_job(id, JobState::NodeFail, now);
                }
            }
            // Whatever ran on the down node is gone with it: its share is free.
            self.release_node_share(id, idx);
        }
        self.refresh_node_state(idx);
    }

    /// Takes `alloc`'s resources on every node it names, and gives each
    /// node's share its CPU ids: those it names where they are all free
    /// (a snapshot's, a suspended job's), else the node's lowest free ones.
    pub(crate) fn take_resources(
        &mut self,
        job: model::JobId,
        alloc: &mut Allocation,
        now: Timestamp,
    ) {
        self.alloc_versions += 1;
        self.holding.insert(job, self.alloc_versions);
        self.running_changed.insert(job);
        let enforce = self.jobs.get(&job).is_some_and(|j| {
            crate::views::enforce_binding(&self.settings, j.desc.gres_flags.as_deref())
        });
        let whole_cores = self.settings.whole_cores;
        for na in &mut alloc.nodes {
            let n = &mut self.nodes[na.node.0 as usize];
            n.alloc_cpus += na.cpus;
            n.alloc_mem += na.mem;
            let near = if enforce {
                near_cpus(&n.gres, &na.gres)
            } else {
                Vec::new()
            };
            let threads = crate::node_threads(whole_cores, &n.conf);
            na.cpu_ids = pick_cpu_ids(
                &n.cpu_ids_in_use,
                n.conf.cpus,
                na.cpus,
                &na.cpu_ids,
                &near,
                threads,
            );
            n.cpu_ids_in_use.extend(na.cpu_ids.iter().copied());
            n.jobs.insert(job);
            n.last_busy = Some(now);
            if alloc.exclusive {
                n.exclusive_in_use = true;
            }
            for (pool, idxs) in &na.gres {
                let pool = &mut n.gres[*pool];
                for idx in idxs {
                    if let Some(k) = pool.indexes.iter().position(|i| i == idx) {
                        pool.used[k] = true;
                    }
                }
            }
            self.refresh_node_state(na.node);
        }
    }

    /// Gives back a job's share of one node and forgets that node in its allocation.
    pub(crate) fn release_node_share(&mut self, job: model::JobId, idx: NodeIdx) {
        let Some(j) = self.jobs.get_mut(&job) else {
            return;
        };
        let Some(alloc) = j.alloc.as_mut() else {
            return;
        };
        // From the end (`release_all` takes the last); a node appears once.
        let Some(pos) = alloc.nodes.iter().rposition(|na| na.node == idx) else {
            return;
        };
        let na = alloc.nodes.remove(pos);
        let exclusive = alloc.exclusive;
        if alloc.nodes.is_empty() {
            j.alloc = None;
            j.completing = false;
            self.holding.remove(&job);
        } else {
            self.alloc_versions += 1;
            self.holding.insert(job, self.alloc_versions);
        }
        self.running_changed.insert(job);
        let n = &mut self.nodes[idx.0 as usize];
        n.alloc_cpus -= na.cpus;
        n.alloc_mem -= na.mem;
        for id in &na.cpu_ids {
            n.cpu_ids_in_use.remove(id);
        }
        n.jobs.remove(&job);
        if exclusive {
            n.exclusive_in_use = false;
        }
        for (pool, idxs) in &na.gres {
            let pool = &mut n.gres[*pool];
            for idx in idxs {
                if let Some(k) = pool.indexes.iter().position(|i| i == idx) {
                    pool.used[k] = false;
                }
            }
        }
        self.refresh_node_state(idx);
    }

    /// Gives back every node of a job's allocation.
    pub(crate) fn release_all(&mut self, job: model::JobId) {
        // From the last node back: each share leaves the end of the list
        // (no list of nodes made, none moved up). The order changes
        // nothing: each node's release is its own, and the allocation's
        // version counts one per node either way.
        while let Some(idx) = self
            .jobs
            .get(&job)
            .and_then(|j| j.alloc.as_ref())
            .and_then(|a| a.nodes.last())
            .map(|n| n.node)
        {
            self.release_node_share(job, idx);
        }
    }

    /// Ends run `run` of a job on a node (`u32::MAX`: whatever runs there).
    pub(crate) fn node_command_terminate(&mut self, idx: NodeIdx, job_id: model::JobId, run: u32) {
        self.node_command_end(idx, job_id, run, None);
    }

    /// Ends run `run` of a job on a node, for `reason` (the banner the
    /// job's log gets; None: none).
    pub(crate) fn node_command_end(
        &mut self,
        idx: NodeIdx,
        job_id: model::JobId,
        run: u32,
        reason: Option<proto::EndReason>,
    ) {
        let n = &self.nodes[idx.0 as usize];
        self.outbox.push(Command::TerminateJob {
            node: n.conf.name.clone(),
            addr: n.daemon_addr.clone(),
            job_id,
            kill_wait: self.settings.kill_wait,
            run,
            reason,
        });
    }
}

/// The CPU ids a share of `want` CPUs gets on a node of `n_cpus` CPUs
/// where `in_use` are taken: `asked` when it names `want` free ids, else
/// whole free cores of `threads` ids each (core `c`: ids `c*threads ..`;
/// one id per core with `CR_CPU` or one thread per core), those holding
/// an id of `near` first (`--gres-flags=enforce-binding`: the cores of the
/// share's GPUs), then the lowest free others; lowest free ids where
/// whole cores ran out (fewer only where the node has fewer free, which
/// the CPU counts rule out).
pub(crate) fn pick_cpu_ids(
    in_use: &BTreeSet<u32>,
    n_cpus: u32,
    want: u32,
    asked: &[u32],
    near: &[u32],
    threads: u32,
) -> Vec<u32> {
    let top = n_cpus.max(want);
    if asked.len() == want as usize && asked.iter().all(|id| *id < top && !in_use.contains(id)) {
        return asked.to_vec();
    }
    let t = threads.max(1);
    let ids_of = |c: u32| c * t..((c + 1) * t).min(top);
    let is_near = |c: &u32| ids_of(*c).any(|id| near.binary_search(&id).is_ok());
    let n_cores = top.div_ceil(t);
    let order = (0..n_cores)
        .filter(is_near)
        .chain((0..n_cores).filter(|c| !is_near(c)));
    let mut out: Vec<u32> = Vec::with_capacity(want as usize);
    for c in order {
        if out.len() >= want as usize {
            break;
        }
        if ids_of(c).all(|id| !in_use.contains(&id)) {
            out.extend(ids_of(c));
        }
    }
    if out.len() < want as usize {
        let taken: BTreeSet<u32> = out.iter().copied().collect();
        let more: Vec<u32> = (0..top)
            .filter(|id| !in_use.contains(id) && !taken.contains(id))
            .take(want as usize - out.len())
            .collect();
        out.extend(more);
    }
    out.truncate(want as usize);
    out.sort_unstable();
    out
}

/// The CPU ids near GPUs `gpus` (the node's GPU indexes) of `pools`:
/// `near_cpus` of the pools that hold them.
pub(crate) fn near_gpu_indexes(pools: &[GresPool], gpus: &[u32]) -> Vec<u32> {
    let taken: Vec<(usize, Vec<u32>)> = pools
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name == "gpu")
        .map(|(pi, p)| {
            let mine = p.indexes.iter().copied().filter(|i| gpus.contains(i));
            (pi, mine.collect())
        })
        .filter(|(_, v): &(usize, Vec<u32>)| !v.is_empty())
        .collect();
    if taken.is_empty() {
        return Vec::new();
    }
    near_cpus(pools, &taken)
}

/// The CPU ids near a share's GPUs (`taken`: pool, indexes): the union of
/// their gres.conf `Cores=`, ascending; empty where one has none (near
/// every CPU) or none is known.
fn near_cpus(pools: &[GresPool], taken: &[(usize, Vec<u32>)]) -> Vec<u32> {
    let mut out = Vec::new();
    for (pi, idxs) in taken {
        let Some(pool) = pools.get(*pi) else { continue };
        if pool.name != "gpu" {
            continue;
        }
        for idx in idxs {
            let k = pool.indexes.iter().position(|i| i == idx);
            match k.and_then(|k| pool.cores.get(k)) {
                Some(c) if !c.is_empty() => out.extend_from_slice(c),
                _ => return Vec::new(),
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
