//! What the scheduler sees of the tables: a job's request
//! (`Engine::request_for`), the node and partition views, and the shapes
//! derived from a job description. Read by submission checks and by every
//! scheduling pass.

use crate::{Engine, Job};
use proto::{JobDesc, SlurmError};
use sched::{Constraint, JobRequest, NodeIdx, NodeView, PartView};
use std::sync::Arc;

impl Engine {
    pub(crate) fn resolve_nodes(&self, names: &[String]) -> Result<Vec<NodeIdx>, SlurmError> {
        names
            .iter()
            .map(|n| self.node_idx(n).ok_or(SlurmError::InvalidNodeName))
            .collect()
    }

    /// The scheduler's view of a job's request.
    /// The job's memory request as (per node, per CPU) in MB, with the
    /// partition's or cluster's default when it asked for none.
    pub(crate) fn mem_request(&self, job: &Job) -> (Option<u64>, Option<u64>) {
        let d = &job.desc;
        let part = &self.parts[job.partition].conf;
        match (d.mem_per_node, d.mem_per_cpu, d.mem_per_gpu) {
            (Some(m), _, _) => (Some(m), None),
            (None, Some(m), _) => (None, Some(m)),
            (None, None, Some(_)) => (None, None),
            (None, None, None) => {
                match (
                    part.def_mem_per_cpu.or(self.settings.def_mem_per_cpu),
                    self.settings.def_mem_per_node,
                ) {
                    (Some(m), _) => (None, Some(m)),
                    (None, Some(m)) => (Some(m), None),
                    // No default at all: the job may use the whole node's memory.
                    (None, None) => (Some(0), None),
                }
            }
        }
    }

    pub(crate) fn request_for(&self, job: &Job) -> JobRequest {
        let mut req = self.request_with(job, job.partitions.clone());
        self.resv_restrict(job, &mut req);
        req
    }

    /// `request_for` with `partitions` in place of the job's.
    pub(crate) fn request_with(&self, job: &Job, partitions: Vec<usize>) -> JobRequest {
        let d = &job.desc;
        let (mem_per_node, mem_per_cpu) = self.mem_request(job);
        let mut gres_per_node = d.gres.clone();
        if let Some(g) = &d.gpus_per_node {
            gres_per_node.push(g.clone());
        }
        JobRequest {
            job_id: job.id,
            priority: job.priority,
            submit_time: job.submit_time,
            partitions,
            min_nodes: job.min_nodes,
            max_nodes: job.max_nodes,
            ntasks: job.ntasks,
            ntasks_per_node: d.ntasks_per_node,
            cpus_per_task: d.cpus_per_task.unwrap_or(1).max(1),
            mem_per_node,
            mem_per_cpu,
            mem_per_gpu: d.mem_per_gpu,
            gres_per_node,
            gpus_total: d.gpus.clone(),
            gpus_per_task: d.gpus_per_task.clone(),
            cpus_per_gpu: d.cpus_per_gpu,
            exclusive: d.exclusive,
            required_nodes: self.resolve_nodes(&d.nodelist).unwrap_or_default(),
            excluded_nodes: self.resolve_nodes(&d.exclude).unwrap_or_default(),
            constraint: d.constraint.as_deref().and_then(Constraint::parse),
            time_limit: job.time_limit,
            time_min: d.time_min,
            user: d.uid,
            memory_consumable: self.settings.memory_consumable,
            enforce_binding: enforce_binding(&self.settings, d.gres_flags.as_deref()),
            threads_per_core: d
                .threads_per_core
                .or_else(|| hint_nomultithread(d.hint.as_deref()).then_some(1)),
            ntasks_per_core: d.ntasks_per_core,
            whole_cores: self.settings.smt_whole_cores,
            max_leaves: self.max_leaves_at(job, self.resv_now),
            segment: d.segment.filter(|_| self.topology().is_some()),
        }
    }

    /// `NodeView::part_cpus` of node `i`: the CPUs the running jobs of
    /// each partition with `MaxCPUsPerNode` hold there (empty where no
    /// partition has the cap).
    fn part_cpus_on(&self, i: usize, n: &crate::Node) -> Vec<(u32, u32)> {
        let mut held = Vec::new();
        if !self
            .part_views
            .iter()
            .any(|p| p.max_cpus_per_node.is_some())
        {
            return held;
        }
        for id in &n.jobs {
            let Some(job) = self.jobs.get(id).filter(|j| j.suspend.is_none()) else {
                continue;
            };
            let capped = self
                .part_views
                .get(job.partition)
                .is_some_and(|p| p.max_cpus_per_node.is_some());
            let share = job.alloc.as_ref().filter(|_| capped).and_then(|a| {
                a.nodes
                    .iter()
                    .find(|na| na.node.0 as usize == i)
                    .map(|na| (a.partition, na.cpus))
            });
            if let Some((part, cpus)) = share {
                sched::placement::add_part_cpus(&mut held, part, cpus);
            }
        }
        held
    }

    pub(crate) fn node_views(&self) -> Vec<NodeView> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeView {
                name: n.conf.name.clone(),
                cpus: n.conf.cpus,
                real_memory: n.conf.real_memory,
                alloc_cpus: n.alloc_cpus,
                alloc_mem: n.alloc_mem,
                gres: n.gres.clone(),
                features: n.conf.features.clone(),
                weight: n.conf.weight,
                available: n.takes_jobs(),
                exclusive_in_use: n.exclusive_in_use,
                n_jobs: n.jobs.len() as u32,
                cpu_ids_in_use: n.cpu_ids_in_use.iter().copied().collect(),
                threads: crate::node_threads(self.settings.whole_cores, &n.conf),
                part_cpus: self.part_cpus_on(i, n),
            })
            .collect()
    }

    /// `node_views`, from the views the last pass used: a node's name,
    /// size, features and GRES pools never change, so only what is in use
    /// and whether it may take jobs are copied again. Notes the nodes
    /// whose views changed since (`view_hint`), where the last pass's
    /// views were these ones (no suspended job's shares laid on them).
    pub(crate) fn refreshed_node_views(&mut self) -> Vec<NodeView> {
        let mut views = std::mem::take(&mut self.node_view_cache);
        // Only the nodes changed since the last look can differ from their
        // views (`NodeTable`), unless the last pass laid suspended jobs'
        // shares on them; `None`: any may.
        let touched = self.nodes.take_view_changes().filter(|_| self.views_plain);
        if views.len() != self.nodes.len() {
            self.view_hint = None;
            if let Some(list) = touched {
                self.nodes.give_back_view_changes(list);
            }
            return self.node_views();
        }
        let mut changed = self.view_hint.take().unwrap_or_default();
        changed.clear();
        let all: Vec<u32>;
        let look_at: &[u32] = match &touched {
            Some(list) => list,
            None => {
                all = (0..self.nodes.len() as u32).collect();
                &all
            }
        };
        for &i in look_at {
            let i = i as usize;
            let (v, n) = (&mut views[i], &self.nodes[i]);
            if view_is_of(v, n) {
                continue;
            }
            changed.push(i);
            v.alloc_cpus = n.alloc_cpus;
            v.alloc_mem = n.alloc_mem;
            v.available = n.takes_jobs();
            v.exclusive_in_use = n.exclusive_in_use;
            v.n_jobs = n.jobs.len() as u32;
            v.cpu_ids_in_use.clear();
            v.cpu_ids_in_use.extend(n.cpu_ids_in_use.iter().copied());
            for (vp, np) in v.gres.iter_mut().zip(&n.gres) {
                vp.used.clone_from(&np.used);
            }
            v.part_cpus = self.part_cpus_on(i, n);
        }
        debug_assert!(
            views.iter().zip(&self.nodes).all(|(v, n)| view_is_of(v, n)),
            "a node changed that the table did not note"
        );
        if let Some(list) = touched {
            self.nodes.give_back_view_changes(list);
        }
        // The last pass's views had shares of suspended jobs laid on
        // (`hold_suspended_shares`): compared with those, the list is not
        // the whole change.
        self.view_hint = self.views_plain.then_some(changed);
        views
    }

    /// The partitions as the scheduler sees them (made once, in `new`).
    pub(crate) fn part_views(&self) -> Arc<[PartView]> {
        self.part_views.clone()
    }
}

/// What `sched::placement::could_ever_fit` reads of a plain request (no
/// GRES or GPUs, no nodes or features named): the key of the submission
/// check's kept answers (`Engine::fit_memo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct FitShape {
    min_nodes: u32,
    max_nodes: u32,
    ntasks: u32,
    ntasks_per_node: Option<u32>,
    cpus_per_task: u32,
    mem_per_node: Option<u64>,
    mem_per_cpu: Option<u64>,
    mem_per_gpu: Option<u64>,
    cpus_per_gpu: Option<u32>,
    exclusive: bool,
    memory_consumable: bool,
    threads_per_core: Option<u32>,
    ntasks_per_core: Option<u32>,
    segment: Option<u32>,
}

impl FitShape {
    /// The shape of `req`, where it is plain.
    pub(crate) fn of(req: &JobRequest) -> Option<FitShape> {
        let plain = sched::placement::plain_candidates(req)
            && req.gres_per_node.is_empty()
            && req.gpus_total.is_none()
            && req.gpus_per_task.is_none();
        plain.then_some(FitShape {
            min_nodes: req.min_nodes,
            max_nodes: req.max_nodes,
            ntasks: req.ntasks,
            ntasks_per_node: req.ntasks_per_node,
            cpus_per_task: req.cpus_per_task,
            mem_per_node: req.mem_per_node,
            mem_per_cpu: req.mem_per_cpu,
            mem_per_gpu: req.mem_per_gpu,
            cpus_per_gpu: req.cpus_per_gpu,
            exclusive: req.exclusive,
            memory_consumable: req.memory_consumable,
            threads_per_core: req.threads_per_core,
            ntasks_per_core: req.ntasks_per_core,
            segment: req.segment,
        })
    }
}

/// Whether a job is bound to its GPUs' cores: `--gres-flags`, over
/// `SelectTypeParameters=ENFORCE_BINDING_GRES` (which `disable-binding`
/// turns off for the job).
pub(crate) fn enforce_binding(settings: &crate::Settings, flags: Option<&str>) -> bool {
    let mut on = settings.enforce_binding_gres;
    for f in flags.unwrap_or_default().split(',') {
        match f.trim() {
            "enforce-binding" => on = true,
            "disable-binding" => on = false,
            _ => {}
        }
    }
    on
}

/// Whether `--hint` asks for one thread per core (`nomultithread`).
pub(crate) fn hint_nomultithread(hint: Option<&str>) -> bool {
    hint.is_some_and(|h| h.split(',').any(|x| x.trim() == "nomultithread"))
}

/// Whether `v` shows what is in use on `n` now (the fields
/// `refreshed_node_views` copies again).
fn view_is_of(v: &NodeView, n: &crate::Node) -> bool {
    v.alloc_cpus == n.alloc_cpus
        && v.alloc_mem == n.alloc_mem
        && v.available == n.takes_jobs()
        && v.exclusive_in_use == n.exclusive_in_use
        && v.n_jobs == n.jobs.len() as u32
        && v.cpu_ids_in_use.iter().eq(n.cpu_ids_in_use.iter())
        && v.gres
            .iter()
            .zip(&n.gres)
            .all(|(vp, np)| vp.used == np.used)
}

/// (min nodes, max nodes, tasks) from the request, with Slurm's defaults:
/// one task per node unless `-n`/`--ntasks-per-node` say otherwise; without
/// `-N` a job may spread its tasks over as many nodes as it has tasks.
pub(crate) fn shape(d: &JobDesc) -> (u32, u32, u32) {
    let min_given = d.min_nodes.map(|n| n.max(1));
    let ntasks = match (d.ntasks, d.ntasks_per_node, min_given) {
        (Some(n), _, _) => n.max(1),
        (None, Some(tpn), Some(nodes)) => tpn.max(1) * nodes,
        (None, Some(tpn), None) => tpn.max(1),
        (None, None, Some(nodes)) => nodes,
        (None, None, None) => 1,
    };
    let min_nodes = match (min_given, d.ntasks_per_node) {
        (Some(n), _) => n,
        (None, Some(tpn)) => ntasks.div_ceil(tpn.max(1)),
        (None, None) => 1,
    };
    let max_nodes = match (d.max_nodes, min_given) {
        (Some(m), _) => m.max(min_nodes),
        (None, Some(n)) => n,
        (None, None) => ntasks.max(min_nodes),
    };
    (min_nodes, max_nodes, ntasks)
}

/// Every partition as the scheduler sees it.
pub(crate) fn part_views(
    parts: &[crate::Partition],
    settings: &crate::Settings,
    topology: &sched::TopoRef,
) -> Vec<PartView> {
    parts
        .iter()
        .map(|p| PartView {
            name: p.conf.name.clone(),
            nodes: p.nodes.clone(),
            up: p.conf.state == "UP",
            max_nodes: p.conf.max_nodes,
            min_nodes: p.conf.min_nodes,
            max_time: p.conf.max_time,
            exclusive: p.conf.oversubscribe == crate::OVERSUBSCRIBE_EXCLUSIVE,
            max_mem_per_node: p.conf.max_mem_per_node.or(settings.max_mem_per_node),
            priority_tier: p.conf.priority_tier,
            max_cpus_per_node: p
                .conf
                .other
                .get("maxcpuspernode")
                .and_then(|(_, v)| v.parse().ok()),
            lln: settings.cr_lln || p.conf.other.get("lln").is_some_and(|(_, v)| v == "YES"),
            topology: topology.clone(),
        })
        .collect()
}

/// A partition's size (`sched::PartSize`), in CPUs and nodes.
pub(crate) fn part_size(p: &crate::Partition, nodes: &[crate::Node]) -> sched::PartSize {
    sched::PartSize {
        cpus: p
            .nodes
            .iter()
            .map(|n| i64::from(nodes[n.0 as usize].conf.cpus))
            .sum(),
        nodes: p.nodes.len() as i64,
    }
}
