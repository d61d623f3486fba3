//! Job steps: srun's parallel launches inside a job's allocation.
//!
//! ```text
//!  CreateStep --on_create_step--> layout (nodes, task ids) --> Command::LaunchStep per node
//!  StepExited (per node) --on_step_exited--> all nodes reported: step ends, accounting
//!  CancelStep --on_cancel_step--> Command::SignalStep per node
//!  job ends ------end_steps------> Command::SignalStep (end) for every running step
//! ```
//!
//! A step takes CPUs inside its job's allocation (never from the node
//! tables: the job already holds them): with `--exact` (or `-c`) those its
//! tasks need, else all of the job's CPUs on each of its nodes (srun(1)
//! `--exact`). Steps without `--overlap` do not
//! share CPUs with each other; one that does not fit now is refused with
//! `NodesBusy` (srun retries), one that could never fit with
//! `TooManyRequestedCpus`. The batch script does not count against steps,
//! as in Slurm.

use crate::{Command, Engine, Job};
use model::{ExitCode, JobId, JobState, TimeLimit, Timestamp};
use proto::{
    AcctStep, Distribution, Identity, SlurmError, StepCreated, StepId, StepInfo, StepLaunch,
    StepList, StepNodeEnd, StepRequest,
};
use sched::NodeIdx;
use std::collections::BTreeSet;

/// One step of a job.
#[derive(Clone, Debug)]
pub struct Step {
    /// Its id within the job.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// RUNNING, then COMPLETED, FAILED or CANCELLED.
    pub state: JobState,
    /// Its nodes, in step order.
    pub nodes: Vec<NodeIdx>,
    /// Global task ids on each node.
    pub tasks: Vec<Vec<u32>>,
    /// CPUs on each node.
    pub cpus: Vec<u32>,
    /// Memory per node (MB), as asked.
    pub mem: u64,
    /// Memory (MB) over all its nodes, as its TRES show it: what `--mem`
    /// asked for, else the job's on those nodes (srun(1) `--exact`: a step
    /// may use all of it, but does not keep it from other steps). 0 in
    /// records of older builds: `mem` per node then.
    pub tres_mem: u64,
    /// GPUs (device indexes) on each node that the step asked for with
    /// `--gres=gpu`/`--gpus` (empty when it asked for none and sees all
    /// of the job's): not given to another step without `--overlap`.
    pub gpus: Vec<Vec<u32>>,
    /// The CPU ids (the node's, among the job's there) it runs on, on
    /// each node: with `--exact`, the lowest of the job's that no other
    /// step holds; else all of the job's. Empty in records of older
    /// builds.
    pub cpu_ids: Vec<Vec<u32>>,
    /// `--overlap`: its CPUs are not its own.
    pub overlap: bool,
    /// Task layout.
    pub distribution: Distribution,
    /// Start time.
    pub start_time: Timestamp,
    /// End time.
    pub end_time: Option<Timestamp>,
    /// Time limit.
    pub time_limit: TimeLimit,
    /// srun gave the step a limit of its own (`-t`): only then does the
    /// step's limit end it (else the job's does; a suspended job's end
    /// moves, which a step's copy of the limit would not follow).
    pub own_limit: bool,
    /// Highest exit over the nodes reported so far.
    pub exit: ExitCode,
    /// Nodes that have not reported the step's end yet.
    pub pending: BTreeSet<NodeIdx>,
    /// Usage summed over the nodes.
    pub usage: proto::StepUsage,
    /// `host:pid` of srun.
    pub srun: String,
    /// The container it runs in (`ContainerOptions::shown`), for sacct.
    pub container: Option<String>,
}

impl Step {
    fn n_tasks(&self) -> u32 {
        self.tasks.iter().map(|t| t.len() as u32).sum()
    }

    /// Memory over all its nodes for its TRES (see `tres_mem`).
    fn tres_mem(&self) -> u64 {
        if self.tres_mem > 0 {
            self.tres_mem
        } else {
            self.mem * self.nodes.len() as u64
        }
    }

    /// When its time limit ends it, while it runs (`srun -t`).
    pub(crate) fn limit_end(&self) -> Option<Timestamp> {
        match self.time_limit {
            TimeLimit::Minutes(m)
                if self.own_limit
                    && self.state == JobState::Running
                    && !self.pending.is_empty() =>
            {
                Some(self.start_time + i64::from(m) * 60)
            }
            _ => None,
        }
    }
}

/// The exit of a step or batch job the kernel's OOM killer hit, as sacct
/// prints it (`0:125`): Slurm reports it as the wait status 253
/// (`SIG_OOM`), whose low seven bits read as signal 125. No real signal has
/// that number, so the value means OUT_OF_MEMORY and nothing else; it is
/// also the worst exit there is ([`worse_exit`]).
pub const OOM_EXIT: ExitCode = ExitCode {
    code: 0,
    signal: 125,
};

/// The worse of two exits, as srun reports a step's: a signal beats a
/// code, then the higher value wins.
pub fn worse_exit(a: ExitCode, b: ExitCode) -> ExitCode {
    let key = |e: ExitCode| (e.signal != 0, e.signal, e.code);
    if key(b) > key(a) {
        b
    } else {
        a
    }
}

/// Where the tasks of a step go: for each chosen node (by position in
/// `caps`), its global task ids. `caps` is how many tasks each candidate
/// node can hold; `n_nodes` how many nodes to use (the first ones).
/// Returns None when the tasks do not fit (and `overcommit` is off).
pub fn layout(
    caps: &[u32],
    n_nodes: usize,
    ntasks: u32,
    per_node: Option<u32>,
    dist: Distribution,
    overcommit: bool,
) -> Option<Vec<Vec<u32>>> {
    let n_nodes = n_nodes.min(caps.len());
    if n_nodes == 0 || ntasks < n_nodes as u32 {
        return None;
    }
    let caps = &caps[..n_nodes];
    // How many tasks each node gets.
    let mut counts = vec![0u32; n_nodes];
    if let Some(tpn) = per_node {
        if tpn * n_nodes as u32 != ntasks && ntasks > tpn * n_nodes as u32 {
            return None;
        }
        let mut left = ntasks;
        for c in counts.iter_mut() {
            *c = tpn.min(left);
            left -= *c;
        }
    } else {
        counts.iter_mut().for_each(|c| *c = 1);
        let mut left = ntasks - n_nodes as u32;
        match dist {
            Distribution::Block => {
                for (c, cap) in counts.iter_mut().zip(caps) {
                    let add = cap.saturating_sub(*c).min(left);
                    *c += add;
                    left -= add;
                }
            }
            Distribution::Cyclic | Distribution::Plane(_) => {
                let chunk = match dist {
                    Distribution::Plane(p) => p,
                    _ => 1,
                };
                let mut progress = true;
                while left > 0 && progress {
                    progress = false;
                    for (c, cap) in counts.iter_mut().zip(caps) {
                        let add = cap.saturating_sub(*c).min(chunk).min(left);
                        if add > 0 {
                            *c += add;
                            left -= add;
                            progress = true;
                        }
                    }
                }
            }
        }
        if left > 0 {
            if !overcommit {
                return None;
            }
            let mut i = 0;
            while left > 0 {
                counts[i % n_nodes] += 1;
                left -= 1;
                i += 1;
            }
        }
    }
    if !overcommit && counts.iter().zip(caps).any(|(c, cap)| c > cap) {
        return None;
    }
    // Which task ids each node gets.
    let mut tasks: Vec<Vec<u32>> = vec![Vec::new(); n_nodes];
    match dist {
        Distribution::Block => {
            let mut next = 0;
            for (t, c) in tasks.iter_mut().zip(&counts) {
                t.extend(next..next + c);
                next += c;
            }
        }
        Distribution::Cyclic | Distribution::Plane(_) => {
            let chunk = match dist {
                Distribution::Plane(p) => p,
                _ => 1,
            };
            let mut next = 0;
            while next < ntasks {
                for (t, c) in tasks.iter_mut().zip(&counts) {
                    let room = c - t.len() as u32;
                    let take = room.min(chunk).min(ntasks - next);
                    t.extend(next..next + take);
                    next += take;
                }
            }
        }
    }
    Some(tasks)
}

/// GPU indexes on each node of a step, in step order.
type NodeGpus = Vec<Vec<u32>>;

/// A step's node and task counts, (nodes, tasks), from -N, -n and
/// --ntasks-per-node over `n_candidates` nodes, `required` of them named.
fn step_counts(
    req: &StepRequest,
    n_candidates: usize,
    required: usize,
) -> Result<(usize, u32), SlurmError> {
    let (min_nodes, ntasks) = match (req.min_nodes, req.ntasks, req.ntasks_per_node) {
        (Some(n), Some(t), _) => (n, t),
        (Some(n), None, Some(tpn)) => (n, n * tpn),
        (Some(n), None, None) => (n, n),
        (None, Some(t), Some(tpn)) => (t.div_ceil(tpn).max(required as u32), t),
        (None, Some(t), None) => (t.min(n_candidates as u32).max(required as u32), t),
        (None, None, Some(tpn)) => (n_candidates as u32, n_candidates as u32 * tpn),
        (None, None, None) => (n_candidates as u32, n_candidates as u32),
    };
    let n_nodes = (min_nodes as usize).max(required);
    if min_nodes == 0 || ntasks == 0 || n_nodes > n_candidates || ntasks < n_nodes as u32 {
        return Err(SlurmError::RequestedNodeConfigUnavailable);
    }
    Ok((n_nodes, ntasks))
}

/// The task ids of a step on each of its first `n_nodes` candidates
/// (`order`, places in `alloc`), laid out over the CPUs free of other
/// steps (all of the job's with --overlap).
fn step_tasks(
    job: &Job,
    alloc: &sched::Allocation,
    req: &StepRequest,
    order: &[usize],
    n_nodes: usize,
    ntasks: u32,
    cpt: u32,
) -> Result<Vec<Vec<u32>>, SlurmError> {
    // CPUs each candidate has: in all, and free of other steps.
    let in_use = |pos: usize| -> u32 {
        let idx = alloc.nodes[pos].node;
        job.steps
            .iter()
            .filter(|s| s.state == JobState::Running && !s.overlap)
            .flat_map(|s| s.nodes.iter().zip(&s.cpus))
            .filter(|(n, _)| **n == idx)
            .map(|(_, c)| *c)
            .sum()
    };
    let total: Vec<u32> = order.iter().map(|p| alloc.nodes[*p].cpus / cpt).collect();
    // Without --exact a step takes every CPU of the job on its nodes,
    // so a node where another step holds any is not free for it.
    let free: Vec<u32> = order
        .iter()
        .map(|p| {
            let used = in_use(*p);
            if req.exact || used == 0 {
                alloc.nodes[*p].cpus.saturating_sub(used) / cpt
            } else {
                0
            }
        })
        .collect();
    let caps = if req.overlap { &total } else { &free };
    let per_node = req.ntasks_per_node;
    match layout(
        caps,
        n_nodes,
        ntasks,
        per_node,
        req.distribution,
        req.overcommit,
    ) {
        Some(t) => Ok(t),
        None => {
            let fits_at_all = layout(
                &total,
                n_nodes,
                ntasks,
                per_node,
                req.distribution,
                req.overcommit,
            )
            .is_some();
            Err(if fits_at_all {
                SlurmError::NodesBusy
            } else {
                SlurmError::TooManyRequestedCpus
            })
        }
    }
}

/// The CPU ids a new step runs on, per node: the job's there, or with
/// `--exact` (fewer CPUs than the job's) the lowest of them that no other
/// running step holds (those of `near` there first: its GPUs' cores under
/// `--gres-flags=enforce-binding`), topped up from the held ones where
/// too few are free (an `--overlap` step may share).
fn step_cpu_ids(
    job: &Job,
    req: &StepRequest,
    nodes: &[NodeIdx],
    job_cpu_ids: &[Vec<u32>],
    cpus: &[u32],
    near: &[Vec<u32>],
) -> Vec<Vec<u32>> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let all = &job_cpu_ids[i];
            let want = cpus[i] as usize;
            if want >= all.len() {
                return all.clone();
            }
            let taken: BTreeSet<u32> = other_steps(job, req)
                .filter_map(|s| {
                    let k = s.nodes.iter().position(|n| n == node)?;
                    s.cpu_ids.get(k)
                })
                .flatten()
                .copied()
                .collect();
            let near = near.get(i).map_or(&[][..], Vec::as_slice);
            let is_near = |c: &u32| near.binary_search(c).is_ok();
            let mut ids: Vec<u32> = all
                .iter()
                .copied()
                .filter(is_near)
                .chain(all.iter().copied().filter(|c| !is_near(c)))
                .filter(|c| !taken.contains(c))
                .take(want)
                .collect();
            let short = want - ids.len();
            ids.extend(
                all.iter()
                    .copied()
                    .filter(|c| taken.contains(c))
                    .take(short),
            );
            ids.sort_unstable();
            ids
        })
        .collect()
}

/// The running steps of `job` a new step (`req`) does not share with.
fn other_steps<'a>(job: &'a Job, req: &StepRequest) -> impl Iterator<Item = &'a Step> {
    let overlap = req.overlap;
    job.steps
        .iter()
        .filter(move |s| s.state == JobState::Running && !s.overlap && !overlap)
}

/// --mem: per node, within the job's share there, less what other
/// steps asked for.
fn check_step_memory(
    job: &Job,
    alloc: &sched::Allocation,
    req: &StepRequest,
    chosen: &[usize],
    nodes: &[NodeIdx],
) -> Result<(), SlurmError> {
    let mem = req.mem_per_node.unwrap_or(0);
    if mem > 0 {
        for (i, p) in chosen.iter().enumerate() {
            let na = &alloc.nodes[*p];
            if na.mem == 0 {
                continue;
            }
            if mem > na.mem {
                return Err(SlurmError::InvalidTaskMemory);
            }
            let used: u64 = other_steps(job, req)
                .filter(|s| s.nodes.contains(&nodes[i]))
                .map(|s| s.mem)
                .sum();
            if mem > na.mem.saturating_sub(used) {
                return Err(SlurmError::NodesBusy);
            }
        }
    }
    Ok(())
}

impl Engine {
    /// srun: creates a step of a running job and tells its nodes to start it.
    pub fn on_create_step(
        &mut self,
        req: StepRequest,
        who: &Identity,
        now: Timestamp,
    ) -> Result<StepCreated, SlurmError> {
        let job = self.jobs.get(&req.job_id).ok_or(SlurmError::InvalidJobId)?;
        let alloc = self.step_allocation(job, who)?;
        let (order, required) = self.step_candidates(alloc, &req)?;
        let (n_nodes, ntasks) = step_counts(&req, order.len(), required)?;
        let cpt = req.cpus_per_task.unwrap_or(1).max(1);
        let tasks = step_tasks(job, alloc, &req, &order, n_nodes, ntasks, cpt)?;
        let chosen: Vec<usize> = order[..n_nodes].to_vec();
        let nodes: Vec<NodeIdx> = chosen.iter().map(|p| alloc.nodes[*p].node).collect();
        check_step_memory(job, alloc, &req, &chosen, &nodes)?;
        self.check_step_gres(alloc, &req, &chosen)?;
        let (step_gpus, gpus) = self.step_gpus(job, alloc, &req, &chosen, &nodes, &tasks)?;
        let gpu_bind = proto::GpuBind::of_step(
            req.gpu_bind.as_deref(),
            req.gpus_per_task,
            req.ntasks_per_gpu,
        );
        let cpus: Vec<u32> = tasks
            .iter()
            .zip(&chosen)
            .map(|(t, p)| {
                if req.exact {
                    (t.len() as u32 * cpt).min(alloc.nodes[*p].cpus).max(1)
                } else {
                    alloc.nodes[*p].cpus
                }
            })
            .collect();
        let job_cpu_ids: Vec<Vec<u32>> = chosen
            .iter()
            .map(|p| alloc.nodes[*p].cpu_ids.clone())
            .collect();
        // --gres-flags=enforce-binding (the step's, else the job's): the
        // step's CPUs near its GPUs first.
        let enforce = crate::views::enforce_binding(
            &self.settings,
            req.gres_flags.as_deref().or(job.desc.gres_flags.as_deref()),
        );
        let near: Vec<Vec<u32>> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| match (enforce, step_gpus.get(i)) {
                (true, Some(g)) => {
                    crate::nodes::near_gpu_indexes(&self.nodes[n.0 as usize].gres, g)
                }
                _ => Vec::new(),
            })
            .collect();
        let cpu_ids = step_cpu_ids(job, &req, &nodes, &job_cpu_ids, &cpus, &near);
        let names: Vec<String> = nodes
            .iter()
            .map(|n| self.nodes[n.0 as usize].conf.name.clone())
            .collect();
        let mems: Vec<u64> = chosen
            .iter()
            .map(|p| match req.mem_per_node {
                Some(m) if m > 0 => m,
                _ => alloc.nodes[*p].mem,
            })
            .collect();
        let tres_mem: u64 = mems.iter().sum();
        // The job's own share of each node: its memory cgroup's limit.
        let job_mems: Vec<u64> = chosen.iter().map(|p| alloc.nodes[*p].mem).collect();
        let step_id = job.next_step_id;
        let env = self.step_env(job, &req, step_id, &names, &tasks);
        // Shards and MPS shares name their GPU per node (a job holding
        // GPUs themselves gets its GPUs from the node instead).
        let share_env: Vec<Vec<(String, String)>> = chosen
            .iter()
            .map(|p| {
                let na = &alloc.nodes[*p];
                crate::env::sharing_env(&self.nodes[na.node.0 as usize].gres, &na.gres)
            })
            .collect();
        let job = self.jobs.get_mut(&req.job_id).expect("checked above");
        job.next_step_id += 1;
        job.containers |= !req.container.is_empty();
        job.steps.push(Step {
            id: step_id,
            name: req.name.clone(),
            state: JobState::Running,
            nodes: nodes.clone(),
            tasks: tasks.clone(),
            cpus: cpus.clone(),
            mem: req.mem_per_node.unwrap_or(0),
            tres_mem,
            gpus: step_gpus,
            cpu_ids: cpu_ids.clone(),
            overlap: req.overlap,
            distribution: req.distribution,
            start_time: now,
            end_time: None,
            time_limit: req.time_limit.unwrap_or(job.time_limit),
            own_limit: req.time_limit.is_some(),
            exit: ExitCode::default(),
            pending: nodes.iter().copied().collect(),
            usage: proto::StepUsage::default(),
            srun: format!("{}:{}", req.srun_host, req.srun_pid),
            container: proto::container::ContainerOptions::shown(&req.container),
        });
        let (uid, gid, user) = (job.desc.uid, job.desc.gid, job.desc.user.clone());
        for (i, idx) in nodes.iter().enumerate() {
            let n = &self.nodes[idx.0 as usize];
            let launch = StepLaunch {
                job_id: req.job_id,
                step_id,
                uid,
                gid,
                user: user.clone(),
                argv: req.argv.clone(),
                env: env.iter().chain(&share_env[i]).cloned().collect(),
                work_dir: req.work_dir.clone(),
                node_index: i as u32,
                nodes: names.clone(),
                tasks: tasks.clone(),
                cpus: cpus[i],
                mem: mems[i],
                job_mem: job_mems[i],
                gpus: gpus[i].clone(),
                cpu_ids: cpu_ids[i].clone(),
                job_cpu_ids: job_cpu_ids[i].clone(),
                cpu_bind: req.cpu_bind.clone(),
                srun_addr: format!("{}:{}", req.srun_host, req.srun_port),
                token: req.token.clone(),
                stdout: req.stdout.clone(),
                stderr: req.stderr.clone(),
                stdin: req.stdin.clone(),
                mpi: req.mpi.clone(),
                acctg_freq: req.acctg_freq.clone(),
                gpu_bind: gpu_bind.clone(),
                task_prolog: req.task_prolog.clone(),
                task_epilog: req.task_epilog.clone(),
                pty: req.pty,
                multi_prog: req.multi_prog.clone(),
                container: req.container.clone(),
            };
            self.outbox.push(Command::LaunchStep {
                node: n.conf.name.clone(),
                addr: n.daemon_addr.clone(),
                launch: Box::new(launch),
            });
        }
        self.record(req.job_id, now);
        Ok(StepCreated {
            step_id,
            nodes: names,
            tasks,
            cpus,
        })
    }

    /// The allocation a step of `job` is made in: `who` may act on the
    /// job, and it is running.
    fn step_allocation<'a>(
        &self,
        job: &'a Job,
        who: &Identity,
    ) -> Result<&'a sched::Allocation, SlurmError> {
        if !self.may_modify(who, job) {
            return Err(SlurmError::AccessDenied);
        }
        if job.state != JobState::Running || job.completing {
            return Err(if job.state == JobState::Pending {
                SlurmError::JobNotRunning
            } else {
                SlurmError::AlreadyDone
            });
        }
        job.alloc.as_ref().ok_or(SlurmError::AlreadyDone)
    }

    /// Candidate nodes, as places in `alloc`: -w first, in the order
    /// given, then the rest of the allocation in its order; -x removed.
    /// Also how many -w named (the first ones).
    fn step_candidates(
        &self,
        alloc: &sched::Allocation,
        req: &StepRequest,
    ) -> Result<(Vec<usize>, usize), SlurmError> {
        let mut order: Vec<usize> = Vec::new();
        for name in &req.nodelist {
            let idx = self
                .node_idx(name)
                .ok_or(SlurmError::RequestedNodeConfigUnavailable)?;
            let pos = alloc
                .nodes
                .iter()
                .position(|na| na.node == idx)
                .ok_or(SlurmError::RequestedNodeConfigUnavailable)?;
            if !order.contains(&pos) {
                order.push(pos);
            }
        }
        let required = order.len();
        for pos in 0..alloc.nodes.len() {
            if !order.contains(&pos) {
                order.push(pos);
            }
        }
        order.retain(|pos| {
            let name = &self.nodes[alloc.nodes[*pos].node.0 as usize].conf.name;
            !req.exclude.contains(name)
        });
        Ok((order, required))
    }

    /// --gres/--gpus: each node's GPUs taken from the job's there, not
    /// from another step's.
    fn check_step_gres(
        &self,
        alloc: &sched::Allocation,
        req: &StepRequest,
        chosen: &[usize],
    ) -> Result<(), SlurmError> {
        for g in &req.gres {
            for p in chosen {
                let na = &alloc.nodes[*p];
                let node = &self.nodes[na.node.0 as usize];
                let held: u64 = na
                    .gres
                    .iter()
                    .filter(|(pool, _)| {
                        let pool = &node.gres[*pool];
                        pool.name == g.name
                            && g.type_
                                .as_ref()
                                .is_none_or(|t| pool.type_.as_ref() == Some(t))
                    })
                    .map(|(_, idx)| idx.len() as u64)
                    .sum();
                if g.count > held {
                    return Err(SlurmError::InvalidGres);
                }
            }
        }
        Ok(())
    }

    /// The GPUs of the step on each of its nodes (`nodes`, at places
    /// `chosen` of `alloc`, with `tasks` there), and the GPUs its tasks
    /// see there: those it asked for (--gres=gpu, --gpus, --gpus-per-task
    /// times its tasks there, one per --ntasks-per-gpu tasks), free of
    /// other steps, else all of the job's there.
    fn step_gpus(
        &self,
        job: &Job,
        alloc: &sched::Allocation,
        req: &StepRequest,
        chosen: &[usize],
        nodes: &[NodeIdx],
        tasks: &[Vec<u32>],
    ) -> Result<(NodeGpus, NodeGpus), SlurmError> {
        let n_nodes = chosen.len();
        let gres_gpu = req.gres.iter().find(|g| g.name == "gpu");
        let per_task = req.gpus_per_task.filter(|n| *n > 0);
        let per_gpu = req.ntasks_per_gpu.filter(|n| *n > 0);
        let gpu_want: Option<Vec<u64>> = match (gres_gpu, req.gpus) {
            (None, None) if per_task.is_some() || per_gpu.is_some() => Some(
                tasks
                    .iter()
                    .map(|t| {
                        let n = t.len() as u64;
                        match (per_task, per_gpu) {
                            (Some(g), _) => n * g,
                            (None, Some(k)) => n.div_ceil(u64::from(k)),
                            (None, None) => 0,
                        }
                    })
                    .collect(),
            ),
            (Some(g), _) => Some(vec![g.count; n_nodes]),
            (None, Some(total)) => {
                let n = n_nodes as u64;
                Some(
                    (0..n)
                        .map(|i| total / n + u64::from(i < total % n))
                        .collect(),
                )
            }
            (None, None) => None,
        };
        let job_gpus: Vec<Vec<u32>> = chosen
            .iter()
            .map(|p| {
                let na = &alloc.nodes[*p];
                let node = &self.nodes[na.node.0 as usize];
                na.gres
                    .iter()
                    .filter(|(pool, _)| node.gres[*pool].name == "gpu")
                    .flat_map(|(_, idx)| idx.iter().copied())
                    .collect()
            })
            .collect();
        let mut step_gpus: Vec<Vec<u32>> = Vec::new();
        if let Some(want) = &gpu_want {
            for (i, all) in job_gpus.iter().enumerate() {
                let want = want[i] as usize;
                if want > all.len() {
                    return Err(SlurmError::InvalidGres);
                }
                let taken: BTreeSet<u32> = other_steps(job, req)
                    .filter_map(|s| {
                        let k = s.nodes.iter().position(|n| *n == nodes[i])?;
                        s.gpus.get(k)
                    })
                    .flatten()
                    .copied()
                    .collect();
                let free: Vec<u32> = all
                    .iter()
                    .copied()
                    .filter(|g| !taken.contains(g))
                    .take(want)
                    .collect();
                if free.len() < want {
                    return Err(SlurmError::NodesBusy);
                }
                step_gpus.push(free);
            }
        }
        let gpus: Vec<Vec<u32>> = if gpu_want.is_some() {
            step_gpus.clone()
        } else {
            job_gpus
        };
        Ok((step_gpus, gpus))
    }

    /// The variables every task of a step gets (srun's environment, then
    /// the step's; the node adds its own and each task's).
    fn step_env(
        &self,
        job: &Job,
        req: &StepRequest,
        step_id: u32,
        names: &[String],
        tasks: &[Vec<u32>],
    ) -> Vec<(String, String)> {
        let counts: Vec<u32> = tasks.iter().map(|t| t.len() as u32).collect();
        let ntasks: u32 = counts.iter().sum();
        let per_node = crate::env::rle_counts(&counts);
        let step_nodes = hostlist::compress(names);
        let job_names: Vec<String> = job
            .alloc
            .as_ref()
            .map(|a| {
                a.nodes
                    .iter()
                    .map(|n| self.nodes[n.node.0 as usize].conf.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        let job_nodes = hostlist::compress(&job_names);
        let mut slurm: Vec<(String, String)> = Vec::new();
        let mut set = |k: &str, v: String| slurm.push((k.to_string(), v));
        set("SLURM_CLUSTER_NAME", self.settings.cluster_name.clone());
        if let Some(c) = req.cpus_per_task {
            set("SLURM_CPUS_PER_TASK", c.to_string());
        }
        if req.distribution != Distribution::Block {
            let d = match req.distribution {
                Distribution::Plane(_) => "plane",
                _ => "cyclic",
            };
            set("SLURM_DISTRIBUTION", d.to_string());
        }
        set("SLURM_JOBID", job.id.to_string());
        set("SLURM_JOB_GID", job.desc.gid.to_string());
        set("SLURM_JOB_ID", job.id.to_string());
        set("SLURM_JOB_NODELIST", job_nodes.clone());
        set("SLURM_JOB_NUM_NODES", job_names.len().to_string());
        set("SLURM_JOB_UID", job.desc.uid.to_string());
        set("SLURM_JOB_USER", job.desc.user.clone());
        set("SLURM_LAUNCH_NODE_IPADDR", req.srun_host.clone());
        set("SLURM_NNODES", names.len().to_string());
        set("SLURM_NODELIST", job_nodes);
        set("SLURM_NPROCS", ntasks.to_string());
        set("SLURM_NTASKS", ntasks.to_string());
        set("SLURM_SRUN_COMM_HOST", req.srun_host.clone());
        set("SLURM_SRUN_COMM_PORT", req.srun_port.to_string());
        set("SLURM_STEPID", step_id.to_string());
        set("SLURM_STEP_ID", step_id.to_string());
        set("SLURM_STEP_LAUNCHER_PORT", req.srun_port.to_string());
        set("SLURM_STEP_NODELIST", step_nodes);
        set("SLURM_STEP_NUM_NODES", names.len().to_string());
        set("SLURM_STEP_NUM_TASKS", ntasks.to_string());
        set("SLURM_STEP_TASKS_PER_NODE", per_node.clone());
        set("SLURM_TASKS_PER_NODE", per_node);
        set(
            "SLURM_WORKING_CLUSTER",
            format!(
                "{}:{}:{}:9728:109",
                self.settings.cluster_name, self.settings.ctld_addr, self.settings.ctld_port
            ),
        );
        let mut env: Vec<(String, String)> = req
            .env
            .iter()
            .filter(|(k, _)| !slurm.iter().any(|(s, _)| s == k))
            .cloned()
            .collect();
        env.extend(slurm);
        env.sort();
        env
    }

    /// A node reports that its share of a step ended.
    pub fn on_step_exited(&mut self, end: StepNodeEnd, now: Timestamp) -> Result<(), SlurmError> {
        let idx = self
            .node_idx(&end.node)
            .ok_or(SlurmError::InvalidNodeName)?;
        let Some(job) = self.jobs.get_mut(&end.job_id) else {
            return Ok(());
        };
        let Some(step) = job.steps.iter_mut().find(|s| s.id == end.step_id) else {
            return Ok(());
        };
        if !step.pending.remove(&idx) {
            return Ok(());
        }
        // The OOM killer's victim died of SIGKILL: the step's end says why.
        let exit = if end.oom_kills > 0 {
            OOM_EXIT
        } else {
            end.exit
        };
        step.exit = worse_exit(step.exit, exit);
        if let Some(mut u) = end.usage {
            // A report without node names (an older daemon) is this node's.
            for name in [
                &mut u.max_rss_node,
                &mut u.max_vmsize_node,
                &mut u.max_pages_node,
                &mut u.min_cpu_node,
            ] {
                if name.is_none() {
                    *name = Some(end.node.clone());
                }
            }
            step.usage.merge(&u);
        }
        if step.pending.is_empty() {
            // A task killed by a signal makes the step CANCELLED (sacct
            // `CANCELLED 0:9` for SIGKILL), as in Slurm; an exit code FAILED.
            if step.state == JobState::Running {
                step.state = if step.exit.is_success() {
                    JobState::Completed
                } else if step.exit == OOM_EXIT {
                    JobState::OutOfMemory
                } else if step.exit.signal != 0 {
                    JobState::Cancelled
                } else {
                    JobState::Failed
                };
            }
            step.end_time = Some(now);
        }
        self.record(end.job_id, now);
        Ok(())
    }

    /// scancel 123.4: signals or cancels one step.
    pub fn on_cancel_step(
        &mut self,
        job_id: JobId,
        step_id: u32,
        signal: Option<i32>,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        let job = self.jobs.get(&job_id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::AccessDenied);
        }
        let step = job
            .steps
            .iter()
            .find(|s| s.id == step_id)
            .ok_or(SlurmError::InvalidJobId)?;
        if step.state != JobState::Running || step.pending.is_empty() {
            return Err(SlurmError::AlreadyDone);
        }
        // scancel J.S kills the step's tasks at once (sacct: CANCELLED
        // 0:9), as Slurm does; the job's end gives them KillWait instead.
        match signal {
            Some(sig) => self.signal_step(job_id, step_id, Some(sig), None, false),
            None => self.signal_step(
                job_id,
                step_id,
                Some(SIGKILL),
                Some(proto::EndReason::Cancelled),
                false,
            ),
        }
        if signal.is_none() {
            if let Some(step) = self
                .jobs
                .get_mut(&job_id)
                .and_then(|j| j.steps.iter_mut().find(|s| s.id == step_id))
            {
                step.state = JobState::Cancelled;
            }
            self.record(job_id, now);
        }
        Ok(())
    }

    fn signal_step(
        &mut self,
        job_id: JobId,
        step_id: u32,
        signal: Option<i32>,
        reason: Option<proto::EndReason>,
        time_limit: bool,
    ) {
        let Some(step) = self
            .jobs
            .get(&job_id)
            .and_then(|j| j.steps.iter().find(|s| s.id == step_id))
        else {
            return;
        };
        for idx in step.pending.iter() {
            let n = &self.nodes[idx.0 as usize];
            self.outbox.push(Command::SignalStep {
                node: n.conf.name.clone(),
                addr: n.daemon_addr.clone(),
                job_id,
                step_id,
                signal,
                kill_wait: self.settings.kill_wait,
                time_limit,
                reason,
            });
        }
    }

    /// Ends the job's running steps whose own time limit (`srun -t`) has
    /// passed: their nodes end them with slurmstepd's time limit banner,
    /// and they count as TIMEOUT.
    pub(crate) fn end_timed_out_steps(&mut self, job_id: JobId, now: Timestamp) {
        let due: Vec<u32> = self
            .jobs
            .get(&job_id)
            .map(|j| {
                j.steps
                    .iter()
                    .filter(|s| s.limit_end().is_some_and(|end| now >= end))
                    .map(|s| s.id)
                    .collect()
            })
            .unwrap_or_default();
        for &step_id in &due {
            self.signal_step(
                job_id,
                step_id,
                None,
                Some(proto::EndReason::TimeLimit),
                true,
            );
            if let Some(step) = self
                .jobs
                .get_mut(&job_id)
                .and_then(|j| j.steps.iter_mut().find(|s| s.id == step_id))
            {
                step.state = JobState::Timeout;
            }
        }
        if !due.is_empty() {
            self.record(job_id, now);
        }
    }

    /// The job is ending: its running steps end too (their nodes are told
    /// to kill them; they count as cancelled).
    pub(crate) fn end_steps(&mut self, job_id: JobId, now: Timestamp) {
        let running: Vec<u32> = self
            .jobs
            .get(&job_id)
            .map(|j| {
                j.steps
                    .iter()
                    .filter(|s| !s.pending.is_empty())
                    .map(|s| s.id)
                    .collect()
            })
            .unwrap_or_default();
        let reason = self.jobs.get(&job_id).and_then(|j| end_reason(j.state));
        for step_id in running {
            self.signal_step(job_id, step_id, None, reason, false);
            if let Some(step) = self
                .jobs
                .get_mut(&job_id)
                .and_then(|j| j.steps.iter_mut().find(|s| s.id == step_id))
            {
                // Still running when its job ended: SIGTERM ends it, as
                // sacct shows (CANCELLED 0:15) for Slurm's.
                if step.state == JobState::Running {
                    step.state = JobState::Cancelled;
                    step.exit = worse_exit(
                        step.exit,
                        ExitCode {
                            code: 0,
                            signal: 15,
                        },
                    );
                }
                step.pending.clear();
                step.end_time = Some(now);
            }
        }
    }

    /// salloc and standalone srun: the allocation's command ended.
    pub fn on_complete_allocation(
        &mut self,
        job_id: JobId,
        exit: ExitCode,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let job = self.jobs.get(&job_id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::AccessDenied);
        }
        if job.state.is_finished() {
            return Err(SlurmError::AlreadyDone);
        }
        if job.state == JobState::Pending {
            // The client gave up before the allocation was granted.
            if let Some(j) = self.jobs.get_mut(&job_id) {
                j.cancelled_by = Some(who.uid);
            }
            self.end_job(job_id, JobState::Cancelled, now);
            return Ok(());
        }
        // A standalone srun whose step the OOM killer hit ends with its
        // exit, 0:125: the job is OUT_OF_MEMORY too, as in Slurm.
        let state = if exit.is_success() {
            JobState::Completed
        } else if exit == OOM_EXIT {
            JobState::OutOfMemory
        } else {
            JobState::Failed
        };
        if let Some(j) = self.jobs.get_mut(&job_id) {
            j.exit = exit;
        }
        self.end_job(job_id, state, now);
        if let Some(j) = self.jobs.get_mut(&job_id) {
            j.reason = if exit == OOM_EXIT {
                model::PendingReason::OutOfMemory
            } else if exit.signal != 0 {
                model::PendingReason::RaisedSignal(exit.signal.clamp(0, 255) as u8)
            } else if exit.code != 0 {
                model::PendingReason::NonZeroExitCode
            } else {
                model::PendingReason::None
            };
        }
        Ok(())
    }

    /// salloc and srun: the job's state and its allocation's variables.
    pub fn allocation_info(&self, job_id: JobId) -> Result<proto::AllocationInfo, SlurmError> {
        let job = self.jobs.get(&job_id).ok_or(SlurmError::InvalidJobId)?;
        // While its PrologSlurmctld runs, salloc and srun still wait.
        let running = job.state == JobState::Running && job.alloc.is_some() && !job.configuring;
        let (nodes, env) = if running {
            let alloc = job.alloc.as_ref().expect("checked");
            let nodes = alloc
                .nodes
                .iter()
                .map(|n| self.nodes[n.node.0 as usize].conf.name.clone())
                .collect();
            // The batch variables without those of the batch script's own
            // process and node, and without the user's; salloc's own
            // environment has none of the job's owner, priority and cluster
            // address either (its steps get them: `step_env`), nor the
            // memory the job did not ask for.
            const NOT_FOR_ALLOCATIONS: &[&str] = &[
                "ENVIRONMENT",
                "SLURM_CPUS_ON_NODE",
                "SLURM_GTIDS",
                "SLURM_LOCALID",
                "SLURM_NODEID",
                "SLURM_PROCID",
                "SLURM_JOB_GPUS",
                "SLURM_GPUS_ON_NODE",
                "CUDA_VISIBLE_DEVICES",
                "GPU_DEVICE_ORDINAL",
                "TMPDIR",
                "SLURM_JOB_GID",
                "SLURM_JOB_UID",
                "SLURM_JOB_USER",
                "SLURM_PRIO_PROCESS",
                "SLURM_WORKING_CLUSTER",
            ];
            let asked = |k: &str| match k {
                "SLURM_MEM_PER_CPU" => job.desc.mem_per_cpu.is_some(),
                "SLURM_MEM_PER_NODE" => job.desc.mem_per_node.is_some(),
                _ => true,
            };
            let env = self
                .batch_env(job)
                .into_iter()
                .filter(|(k, _)| !NOT_FOR_ALLOCATIONS.contains(&k.as_str()) && asked(k))
                .filter(|(k, _)| k.starts_with("SLURM_"))
                .filter(|kv| !job.env.contains(kv) || kv.0.starts_with("SLURM_JOB"))
                .collect();
            (nodes, env)
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(proto::AllocationInfo {
            job_id,
            state: if job.state == JobState::Running && job.completing {
                JobState::Completed
            } else if job.configuring {
                JobState::Pending
            } else {
                job.state
            },
            reason: job.reason,
            nodes,
            env,
        })
    }

    /// squeue -s, scontrol show step: every running step (with the batch
    /// steps of running batch jobs).
    pub fn step_list(&self, now: Timestamp) -> StepList {
        let mut steps = Vec::new();
        for job in self.jobs.values() {
            if job.state != JobState::Running {
                continue;
            }
            let partition = self.parts[job.partition].conf.name.clone();
            let base = |step: StepId, name: String| StepInfo {
                job_id: job.id,
                step,
                name,
                user: job.desc.user.clone(),
                uid: job.desc.uid,
                partition: partition.clone(),
                state: JobState::Running,
                start_time: job.start_time.unwrap_or(now),
                time_limit: job.time_limit,
                nodes: Vec::new(),
                ntasks: 1,
                cpus: 0,
                tres: String::new(),
                distribution: Distribution::Block,
                srun_host_pid: String::new(),
                node_addrs: Vec::new(),
            };
            if !job.desc.alloc_only {
                if let Some(alloc) = &job.alloc {
                    let na = &alloc.nodes[0];
                    let mut info = base(StepId::Batch, "batch".into());
                    info.nodes = vec![self.nodes[na.node.0 as usize].conf.name.clone()];
                    info.cpus = na.cpus;
                    info.tres = step_tres(na.cpus, na.mem, 1);
                    steps.push(info);
                    // PrologFlags=Contain: the extern step holds every node.
                    if self.settings.prolog_contain {
                        let mut info = base(StepId::Extern, "extern".into());
                        info.nodes = alloc
                            .nodes
                            .iter()
                            .map(|n| self.nodes[n.node.0 as usize].conf.name.clone())
                            .collect();
                        info.ntasks = alloc.nodes.len() as u32;
                        info.cpus = alloc.nodes.iter().map(|n| n.cpus).sum();
                        info.tres = step_tres(
                            info.cpus,
                            alloc.nodes.iter().map(|n| n.mem).sum(),
                            alloc.nodes.len(),
                        );
                        steps.push(info);
                    }
                }
            }
            for s in job.steps.iter().filter(|s| s.state == JobState::Running) {
                let mut info = base(StepId::Numbered(s.id), s.name.clone());
                info.start_time = s.start_time;
                info.time_limit = s.time_limit;
                info.nodes = s
                    .nodes
                    .iter()
                    .map(|n| self.nodes[n.0 as usize].conf.name.clone())
                    .collect();
                info.ntasks = s.n_tasks();
                info.cpus = s.cpus.iter().sum();
                info.tres = step_tres(info.cpus, s.tres_mem(), s.nodes.len());
                info.distribution = s.distribution;
                info.srun_host_pid = s.srun.clone();
                steps.push(info);
            }
        }
        for info in &mut steps {
            info.node_addrs = info
                .nodes
                .iter()
                .map(|name| {
                    self.node(name)
                        .map(|n| format!("{}:{}", n.conf.addr, n.port))
                        .unwrap_or_default()
                })
                .collect();
        }
        StepList { now, steps }
    }

    /// Accounting records of a job's numbered steps.
    pub(crate) fn step_records(&self, job: &Job) -> Vec<AcctStep> {
        job.steps
            .iter()
            .map(|s| {
                let names: Vec<String> = s
                    .nodes
                    .iter()
                    .map(|n| self.nodes[n.0 as usize].conf.name.clone())
                    .collect();
                let cpus: u32 = s.cpus.iter().sum();
                AcctStep {
                    step: StepId::Numbered(s.id),
                    name: s.name.clone(),
                    state: s.state,
                    exit_code: s.exit,
                    start_time: Some(s.start_time),
                    end_time: s.end_time,
                    nodes: hostlist::compress(&names),
                    n_nodes: names.len() as u32,
                    n_cpus: cpus,
                    n_tasks: s.n_tasks(),
                    alloc_tres: step_tres(cpus, s.tres_mem(), names.len()),
                    usage: s.usage.clone(),
                    container: s.container.clone(),
                }
            })
            .collect()
    }
}

/// The banner a job ended in `state` gets (None: a job that ended by
/// itself gets none).
pub(crate) fn end_reason(state: JobState) -> Option<proto::EndReason> {
    match state {
        JobState::Cancelled => Some(proto::EndReason::Cancelled),
        JobState::Timeout => Some(proto::EndReason::TimeLimit),
        JobState::Preempted => Some(proto::EndReason::Preempted),
        _ => None,
    }
}

/// SIGKILL's number (the engine has no libc: Linux's 9 everywhere muster
/// runs).
const SIGKILL: i32 = 9;

/// `cpu=3,mem=1500M,node=2` (memory left out when not known).
fn step_tres(cpus: u32, mem: u64, nodes: usize) -> String {
    let mut t = format!("cpu={cpus}");
    if mem > 0 {
        t.push_str(&format!(",mem={}", model::units::format_memory_mb(mem)));
    }
    t.push_str(&format!(",node={nodes}"));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_fills_each_node_before_the_next() {
        let t = layout(&[1, 2], 2, 3, None, Distribution::Block, false).unwrap();
        assert_eq!(t, vec![vec![0], vec![1, 2]]);
        let t = layout(&[2, 2], 2, 4, None, Distribution::Block, false).unwrap();
        assert_eq!(t, vec![vec![0, 1], vec![2, 3]]);
        let t = layout(&[4, 4], 2, 3, None, Distribution::Block, false).unwrap();
        assert_eq!(t, vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn cyclic_and_plane_deal_tasks_round_robin() {
        let t = layout(&[2, 2], 2, 4, None, Distribution::Cyclic, false).unwrap();
        assert_eq!(t, vec![vec![0, 2], vec![1, 3]]);
        let t = layout(&[4, 4], 2, 8, None, Distribution::Plane(2), false).unwrap();
        assert_eq!(t, vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
    }

    #[test]
    fn too_many_tasks_do_not_fit_unless_overcommitted() {
        assert_eq!(
            layout(&[2, 2], 2, 5, None, Distribution::Block, false),
            None
        );
        let t = layout(&[2, 2], 2, 5, None, Distribution::Block, true).unwrap();
        assert_eq!(t.iter().map(Vec::len).sum::<usize>(), 5);
        assert_eq!(
            layout(&[2, 2], 2, 4, Some(3), Distribution::Block, false),
            None
        );
        let t = layout(&[2, 2], 2, 4, Some(2), Distribution::Block, false).unwrap();
        assert_eq!(t, vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn a_signal_is_worse_than_any_code() {
        let code = |c| ExitCode { code: c, signal: 0 };
        let sig = |s| ExitCode { code: 0, signal: s };
        assert_eq!(worse_exit(code(3), code(1)), code(3));
        assert_eq!(worse_exit(code(3), sig(9)), sig(9));
        assert_eq!(worse_exit(ExitCode::default(), code(2)), code(2));
    }
}
