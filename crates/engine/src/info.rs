//! Views of the tables for the commands: `JobInfo`, `NodeInfo`,
//! `PartitionInfo`, the effective configuration, and the rows of a brief
//! job listing (`proto::JobRowSource`: the engine hands out each job's
//! row; `proto` builds and encodes the answer from them).

use crate::privacy::{SeenBy, Sight};
use crate::{Engine, Job};
use model::units::format_memory_mb;
use model::{Gres, JobState, TimeLimit, Timestamp};
use proto::{ConfigInfo, Interner, JobFilter, JobInfo, JobList, JobRow, NodeInfo, PartitionInfo};

/// `OverSubscribe=EXCLUSIVE` as the configuration stores it.
pub const OVERSUBSCRIBE_EXCLUSIVE: &str = "EXCLUSIVE";

/// Slurm's TRES string: `cpu=4,mem=2000M,node=2,billing=4,gres/gpu=2`.
fn tres_string(cpus: u32, mem: u64, nodes: u32, gpus: u64) -> String {
    let mut s = String::new();
    write_tres(&mut s, cpus, mem, nodes, gpus);
    s
}

/// [`tres_string`] appended to `out`.
fn write_tres(out: &mut String, cpus: u32, mem: u64, nodes: u32, gpus: u64) {
    use std::fmt::Write as _;
    let _ = write!(out, "cpu={cpus}");
    if mem > 0 {
        let _ = write!(out, ",mem={}", format_memory_mb(mem));
    }
    let _ = write!(out, ",node={nodes},billing={cpus}");
    if gpus > 0 {
        let _ = write!(out, ",gres/gpu={gpus}");
    }
}

/// `dst` set to `names`, reusing the strings it held.
fn set_names<'a>(dst: &mut Vec<String>, names: impl Iterator<Item = &'a str>) {
    let mut n = 0;
    for name in names {
        match dst.get_mut(n) {
            Some(s) => {
                s.clear();
                s.push_str(name);
            }
            None => dst.push(name.to_string()),
        }
        n += 1;
    }
    dst.truncate(n);
}

fn gres_spec(prefix: &str, g: &[Gres]) -> Option<String> {
    (!g.is_empty()).then(|| {
        g.iter()
            .map(|g| format!("{prefix}{g}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

impl Engine {
    /// (CPUs, memory in MB, GPUs) a job asks for in all.
    /// Read from the job as `request_for` reads it, without building the
    /// whole request (a job listing asks this of every pending job).
    pub(crate) fn requested_counts(&self, job: &Job) -> (u32, u64, u64) {
        let d = &job.desc;
        let cpus = job.ntasks * d.cpus_per_task.unwrap_or(1).max(1);
        let mem = match self.mem_request(job) {
            (Some(m), _) => m * job.min_nodes as u64,
            (None, Some(m)) => m * cpus as u64,
            _ => 0,
        };
        let gpus = d
            .gres
            .iter()
            .chain(&d.gpus_per_node)
            .filter(|g| g.name == "gpu")
            .map(|g| g.count * job.min_nodes as u64)
            .sum::<u64>()
            + d.gpus.as_ref().map_or(0, |g| g.count);
        (cpus, mem, gpus)
    }

    /// The GPUs an allocation holds.
    pub(crate) fn alloc_gpus(&self, alloc: &sched::Allocation) -> u64 {
        alloc
            .nodes
            .iter()
            .map(|n| {
                let node = &self.nodes[n.node.0 as usize];
                n.gres
                    .iter()
                    .filter(|(p, _)| node.gres[*p].name == "gpu")
                    .map(|(_, i)| i.len() as u64)
                    .sum::<u64>()
            })
            .sum()
    }

    /// The TRES a job asks for (`ReqTRES`).
    pub(crate) fn requested_tres(&self, job: &Job) -> String {
        let (cpus, mem, gpus) = self.requested_counts(job);
        tres_string(cpus, mem, job.min_nodes, gpus)
    }

    pub(crate) fn job_info(&self, job: &Job, now: Timestamp) -> JobInfo {
        self.job_info_with(job, now, &Keep::ALL)
    }

    /// `job_info`, leaving out [`JobInfo::BRIEF_OMITS`] when `keep.brief`
    /// and the text fields `keep` drops.
    fn job_info_with(&self, job: &Job, now: Timestamp, keep: &Keep) -> JobInfo {
        let mut info = JobInfo::default();
        self.fill_job_info(job, now, keep, &mut info);
        info
    }

    /// Writes `job`'s [`JobInfo`] over `out`, reusing the buffers of the
    /// texts and lists it held (a listing fills one `JobInfo` job after
    /// job instead of allocating and freeing some twenty strings a job).
    /// Every field is written: `out` is taken apart whole, so a field
    /// added to `JobInfo` does not compile until it is written here.
    pub(crate) fn fill_job_info(&self, job: &Job, now: Timestamp, keep: &Keep, out: &mut JobInfo) {
        let JobInfo {
            job_id,
            name,
            user,
            uid,
            group,
            gid,
            account,
            qos,
            partition,
            state,
            completing,
            reason,
            priority,
            nice,
            submit_time,
            eligible_time,
            start_time,
            end_time,
            run_time,
            time_limit,
            time_min,
            nodes,
            batch_host,
            num_nodes,
            max_nodes,
            num_cpus,
            num_tasks,
            cpus_per_task,
            ntasks_per_node,
            cpus_per_node,
            cpu_ids_per_node,
            gres_idx_per_node,
            mem_per_cpu,
            mem_per_node,
            tres_per_node,
            tres_per_job,
            tres_per_task,
            tres,
            req_nodes,
            exc_nodes,
            features,
            exclusive,
            work_dir,
            command,
            stdout,
            stderr,
            stdin,
            exit_code,
            requeue,
            restarts,
            dependency,
            comment,
            alloc_node,
            alloc_sid,
            scheduler,
            last_sched_eval,
            suspend_time,
            secs_pre_suspend,
            signal,
            begin_time,
            submit_line,
            sched_nodes,
            array_job_id,
            array_task_id,
            array_task_str,
            array_max_tasks,
            deadline,
            stdout_pattern,
            stderr_pattern,
            licenses,
            mail_type,
            mail_user,
            reservation,
            configuring,
            container,
        } = out;
        let brief = keep.brief;
        let d = &job.desc;
        // Copies a detail only the full form carries (emptied otherwise).
        fn detail<T: Clone + Default>(brief: bool, dst: &mut T, v: &T) {
            if brief {
                *dst = T::default();
            } else {
                dst.clone_from(v);
            }
        }
        // A text kept when `kept`, emptied otherwise.
        fn put(dst: &mut String, kept: bool, v: &str) {
            dst.clear();
            if kept {
                dst.push_str(v);
            }
        }
        let node_name = |i: usize| self.nodes[i].conf.name.as_str();

        *job_id = job.id;
        put(name, keep.name, &d.name);
        put(user, keep.user, &d.user);
        *uid = d.uid;
        put(group, keep.group, &d.user);
        *gid = d.gid;
        put(
            account,
            keep.account,
            d.account.as_deref().unwrap_or("(null)"),
        );
        put(qos, keep.qos, d.qos.as_deref().unwrap_or("normal"));
        partition.clear();
        if !keep.partition {
        } else if job.state == JobState::Pending && job.partitions.len() > 1 {
            *partition = self.partition_list(job);
        } else {
            partition.push_str(&self.parts[job.partition].conf.name);
        }
        *state = job.state;
        *completing = job.completing;
        *configuring = job.configuring;
        *reason = job.reason;
        *priority = job.priority;
        *nice = d.nice;
        *submit_time = job.submit_time;
        *eligible_time = shown_eligible_time(job);

        let cpt = d.cpus_per_task.unwrap_or(1).max(1);
        let (per_node, per_cpu) = self.mem_request(job);
        *mem_per_node = per_node;
        *mem_per_cpu = per_cpu;
        *cpus_per_task = cpt;
        // Where it runs (or ran), and the TRES it holds (or asks for).
        let (alloc_nodes, cpus, mem, n, gpus): (Vec<usize>, &[u32], u64, u32, u64);
        let alloc_cpus: Vec<u32>;
        match &job.alloc {
            Some(a) => {
                alloc_nodes = a.nodes.iter().map(|n| n.node.0 as usize).collect();
                alloc_cpus = a.nodes.iter().map(|n| n.cpus).collect();
                cpus = &alloc_cpus;
                mem = a.nodes.iter().map(|n| n.mem).sum();
                n = a.nodes.len() as u32;
                gpus = self.alloc_gpus(a);
                *num_cpus = cpus.iter().sum();
            }
            None => {
                let (asked_cpus, asked_mem, asked_gpus) = if brief {
                    (job.ntasks * cpt, 0, 0)
                } else {
                    self.requested_counts(job)
                };
                mem = asked_mem;
                gpus = asked_gpus;
                if job.ran_on.is_empty() {
                    alloc_nodes = Vec::new();
                    cpus = &[];
                    n = job.min_nodes;
                    *num_cpus = asked_cpus;
                } else {
                    // Ended: show where it ran, as Slurm keeps NodeList.
                    alloc_nodes = job.ran_on.iter().map(|i| i.0 as usize).collect();
                    cpus = &job.ran_cpus;
                    n = job.ran_on.len() as u32;
                    *num_cpus = cpus.iter().sum();
                }
            }
        }
        *num_nodes = n;
        set_names(
            nodes,
            alloc_nodes
                .iter()
                .filter(|_| keep.nodes)
                .map(|&i| node_name(i)),
        );
        tres.clear();
        if !brief {
            write_tres(tres, *num_cpus, mem, n, gpus);
        }
        cpus_per_node.clear();
        if !brief {
            cpus_per_node.extend_from_slice(cpus);
        }
        match nodes.first() {
            Some(first) if !brief => batch_host.clone_from(&Some(first.clone())),
            _ => *batch_host = None,
        }

        *run_time = Self::run_time(job, now);
        let (start, end, plan) = self.start_end(job);
        *start_time = start;
        *end_time = end;
        set_names(
            sched_nodes,
            plan.filter(|_| keep.sched_nodes)
                .into_iter()
                .flat_map(|p| p.alloc.nodes.iter().map(|n| node_name(n.node.0 as usize))),
        );
        *time_limit = job.time_limit;
        *time_min = d.time_min;
        *max_nodes = Some(job.max_nodes);
        *num_tasks = job.ntasks;
        *ntasks_per_node = d.ntasks_per_node;
        match &job.alloc {
            Some(a) if !brief => {
                cpu_ids_per_node.truncate(a.nodes.len());
                for (i, n) in a.nodes.iter().enumerate() {
                    match cpu_ids_per_node.get_mut(i) {
                        Some(ids) => ids.clone_from(&n.cpu_ids),
                        None => cpu_ids_per_node.push(n.cpu_ids.clone()),
                    }
                }
            }
            _ => cpu_ids_per_node.clear(),
        }
        *gres_idx_per_node = match &job.alloc {
            Some(a) if !brief && a.nodes.iter().any(|n| !n.gres.is_empty()) => {
                a.nodes.iter().map(|n| self.gres_idx_text(n)).collect()
            }
            _ => Vec::new(),
        };
        *tres_per_node = if brief {
            None
        } else {
            let mut per_node: Vec<Gres> = d.gres.clone();
            if let Some(g) = &d.gpus_per_node {
                per_node.push(g.clone());
            }
            gres_spec("gres:", &per_node)
        };
        *tres_per_job = d
            .gpus
            .as_ref()
            .filter(|_| !brief)
            .map(|g| format!("gres:{g}"));
        *tres_per_task = d
            .gpus_per_task
            .as_ref()
            .filter(|_| !brief)
            .map(|g| format!("gres:{g}"));
        detail(brief, req_nodes, &d.nodelist);
        detail(brief, exc_nodes, &d.exclude);
        detail(brief, features, &d.constraint);
        *exclusive = d.exclusive;
        detail(brief, work_dir, &d.work_dir);
        detail(brief, command, &d.command);
        // A batch job's paths as Slurm's job query shows them, from
        // submission on; an allocation (salloc, srun) has no script to
        // write them.
        if brief {
            stdout.clear();
            stderr.clear();
        } else if d.alloc_only {
            stdout.clone_from(&job.stdout);
            stderr.clone_from(&job.stderr);
        } else {
            (*stdout, *stderr) = crate::env::shown_paths(job);
        }
        (*stdout_pattern, *stderr_pattern) = if brief || d.alloc_only {
            (None, None)
        } else {
            let (o, e) = crate::env::squeue_paths(job);
            (o.filter(|p| p != stdout), e.filter(|p| p != stderr))
        };
        put(stdin, !brief, d.stdin.as_deref().unwrap_or("/dev/null"));
        *exit_code = job.exit;
        *requeue = job.requeue;
        *restarts = job.restarts;
        *dependency = if brief {
            None
        } else {
            self.dependency_text(job)
        };
        detail(brief, comment, &d.comment);
        detail(brief, alloc_node, &d.submit_host);
        *alloc_sid = d.alloc_sid;
        put(scheduler, keep.scheduler, "Main");
        *last_sched_eval = job.last_sched_eval;
        *suspend_time = job.suspend_time;
        *secs_pre_suspend = job.secs_pre_suspend.max(0) as u64;
        detail(brief, signal, &d.signal);
        *begin_time = d.begin_time;
        detail(brief, submit_line, &d.submit_line);
        *array_job_id = job.array.as_ref().map(|a| a.array_job_id.0);
        *array_task_id = job.array.as_ref().and_then(|a| a.task_id);
        *array_task_str = self::array_task_str(job);
        *array_max_tasks = self.array_max_tasks(job);
        *deadline = d.deadline;
        licenses.clone_from(&d.licenses);
        *mail_type = d.mail_type;
        *mail_user =
            (d.mail_type != 0).then(|| d.mail_user.clone().unwrap_or_else(|| d.user.clone()));
        reservation.clone_from(&d.reservation);
        *container = proto::container::ContainerOptions::shown(&d.container);
    }

    /// How many jobs the controller holds (any state).
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// Every job, by id, with run times as of `now`.
    pub fn job_list(&self, now: Timestamp) -> JobList {
        JobList {
            now,
            jobs: self.jobs.values().map(|j| self.job_info(j, now)).collect(),
        }
    }

    /// The jobs `filter` selects, by id, with run times as of `now`.
    pub fn job_query(&self, filter: &JobFilter, now: Timestamp) -> JobList {
        self.job_query_seen(filter, now, &Sight::everything())
    }

    /// [`Engine::job_query`] as `sight` may see it (`PrivateData=jobs`).
    pub fn job_query_seen(&self, filter: &JobFilter, now: Timestamp, sight: &Sight) -> JobList {
        let keep = Keep::of(filter);
        let jobs = self
            .jobs
            .values()
            .filter(|j| self.job_passes(j, filter, sight))
            .map(|j| self.job_info_with(j, now, &keep))
            .collect();
        JobList { now, jobs }
    }

    /// Calls `each` with the `JobInfo` of every job `filter` selects and
    /// `sight` may see, in the answer's order. One `JobInfo` is lent,
    /// written over for each job (`fill_job_info`), so an answer encoded
    /// job by job (`proto::JobWires`) neither holds the whole table nor
    /// allocates a job's texts afresh.
    pub(crate) fn each_job_info_seen(
        &self,
        filter: &JobFilter,
        now: Timestamp,
        sight: &Sight,
        mut each: impl FnMut(&JobInfo),
    ) {
        let keep = Keep::of(filter);
        let mut info = JobInfo::default();
        // Ahead of the job read, as `each_job_row_seen` does.
        let mut ahead = self.jobs.values().skip(2);
        for j in self.jobs.values() {
            if let Some(next) = ahead.next() {
                proto::prefetch(&**next);
            }
            if self.job_passes(j, filter, sight) {
                self.fill_job_info(j, now, &keep, &mut info);
                each(&info);
            }
        }
    }

    fn job_row<'a>(
        &'a self,
        job: &'a Job,
        now: Timestamp,
        keep: &Keep,
        strings: &mut Interner<'a>,
        node_names: &mut [u32],
    ) -> JobRow {
        let d = &job.desc;
        let cpus_per_task = d.cpus_per_task.unwrap_or(1).max(1);
        let (mem_per_node, mem_per_cpu) = self.mem_request(job);
        let mut node = |strings: &mut Interner<'a>, i: usize| {
            if node_names[i] == u32::MAX {
                node_names[i] = strings.intern(&self.nodes[i].conf.name);
            }
            node_names[i]
        };
        let (nodes, num_cpus, num_nodes) = match &job.alloc {
            Some(a) => (
                if keep.nodes {
                    a.nodes
                        .iter()
                        .map(|n| node(strings, n.node.0 as usize))
                        .collect()
                } else {
                    Vec::new()
                },
                a.nodes.iter().map(|n| n.cpus).sum(),
                a.nodes.len() as u32,
            ),
            None if job.ran_on.is_empty() => {
                (Vec::new(), job.ntasks * cpus_per_task, job.min_nodes)
            }
            None => (
                if keep.nodes {
                    job.ran_on
                        .iter()
                        .map(|i| node(strings, i.0 as usize))
                        .collect()
                } else {
                    Vec::new()
                },
                job.ran_cpus.iter().sum(),
                job.ran_on.len() as u32,
            ),
        };
        let (start_time, end_time, plan) = self.start_end(job);
        let sched_nodes = match plan {
            Some(p) if keep.sched_nodes => p
                .alloc
                .nodes
                .iter()
                .map(|n| node(strings, n.node.0 as usize))
                .collect(),
            _ => Vec::new(),
        };
        let text = |strings: &mut Interner<'a>, kept: bool, v: &'a str| {
            if kept {
                strings.intern(v)
            } else {
                0
            }
        };
        let partition = if !keep.partition {
            0
        } else if job.state == JobState::Pending && job.partitions.len() > 1 {
            strings.intern_owned(self.partition_list(job))
        } else {
            strings.intern(&self.parts[job.partition].conf.name)
        };
        JobRow {
            job_id: job.id,
            name: text(strings, keep.name, &d.name),
            user: text(strings, keep.user, &d.user),
            uid: d.uid,
            group: text(strings, keep.group, &d.user),
            gid: d.gid,
            account: text(
                strings,
                keep.account,
                d.account.as_deref().unwrap_or("(null)"),
            ),
            qos: text(strings, keep.qos, d.qos.as_deref().unwrap_or("normal")),
            partition,
            state: job.state,
            completing: job.completing,
            configuring: job.configuring,
            reason: job.reason,
            priority: job.priority,
            nice: d.nice,
            submit_time: job.submit_time,
            eligible_time: shown_eligible_time(job),
            start_time,
            end_time,
            run_time: Self::run_time(job, now),
            time_limit: job.time_limit,
            nodes,
            num_nodes,
            num_cpus,
            num_tasks: job.ntasks,
            cpus_per_task,
            mem_per_cpu,
            mem_per_node,
            exclusive: d.exclusive,
            requeue: job.requeue,
            restarts: job.restarts,
            last_sched_eval: job.last_sched_eval,
            sched_nodes,
            array_job_id: job.array.as_ref().map(|a| a.array_job_id.0),
            array_task_id: job.array.as_ref().and_then(|a| a.task_id),
            array_task_str: array_task_str(job),
            array_max_tasks: self.array_max_tasks(job),
        }
    }

    /// A job's run time as of `now` (time suspended is not run time:
    /// squeue TIME, RunTime).
    fn run_time(job: &Job, now: Timestamp) -> u64 {
        match (job.start_time, job.state) {
            (Some(_), JobState::Running | JobState::Suspended) => job.run_secs(now) as u64,
            (Some(s), _) => (job.end_time.unwrap_or(now) - s - job.suspended_secs).max(0) as u64,
            _ => 0,
        }
    }

    /// A job's start and end times as the commands show them: a pending
    /// job shows the backfill plan's expected start (and that plan), as
    /// Slurm's StartTime, EndTime and SchedNodeList do.
    fn start_end(
        &self,
        job: &Job,
    ) -> (
        Option<Timestamp>,
        Option<Timestamp>,
        Option<&sched::Planned>,
    ) {
        let plan = (job.state == JobState::Pending)
            .then(|| self.plans.get(&job.id))
            .flatten();
        match plan {
            Some(p) => (
                Some(p.start),
                match job.time_limit {
                    TimeLimit::Minutes(m) => Some(p.start + i64::from(m) * 60),
                    TimeLimit::Unlimited => None,
                },
                Some(p),
            ),
            // A job waiting for its --begin time is expected to start
            // then (Slurm's StartTime=, squeue --start and %S show it).
            None if job.state == JobState::Pending
                && job.reason == model::PendingReason::BeginTime
                && job.start_time.is_none() =>
            {
                (Some(job.eligible_time), None, None)
            }
            None => (job.start_time, job.end_time, None),
        }
    }

    /// A pending job's partitions, comma separated.
    fn partition_list(&self, job: &Job) -> String {
        job.partitions
            .iter()
            .map(|p| self.parts[*p].conf.name.clone())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn job_passes(&self, job: &Job, filter: &JobFilter, sight: &Sight) -> bool {
        if !sight.job(job.desc.uid) {
            return false;
        }
        let active = job.completing
            || matches!(
                job.state,
                JobState::Pending | JobState::Running | JobState::Suspended
            );
        if filter.active_only && !active {
            return false;
        }
        if !filter.job_ids.is_empty()
            && !filter.job_ids.contains(&job.id.0)
            && !job
                .array
                .as_ref()
                .is_some_and(|a| filter.job_ids.contains(&a.array_job_id.0))
        {
            return false;
        }
        let mut names = String::new();
        if !filter.partitions.is_empty() {
            let parts = if job.state == JobState::Pending {
                &job.partitions[..]
            } else {
                std::slice::from_ref(&job.partition)
            };
            for p in parts {
                if !names.is_empty() {
                    names.push(',');
                }
                names.push_str(&self.parts[*p].conf.name);
            }
        }
        filter.passes(&job.desc.user, job.desc.uid, &names, active)
    }

    /// Every node, in configuration order.
    pub fn node_infos(&self) -> Vec<NodeInfo> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let used: Vec<Gres> = n
                    .gres
                    .iter()
                    .map(|p| Gres {
                        name: p.name.clone(),
                        type_: p.type_.clone(),
                        count: p.used.iter().filter(|u| **u).count() as u64,
                    })
                    .collect();
                let r = n.report.as_ref();
                NodeInfo {
                    name: n.conf.name.clone(),
                    addr: n.conf.addr.clone(),
                    hostname: n.conf.hostname.clone(),
                    port: n.port,
                    state: n.state,
                    cpus: n.conf.cpus,
                    boards: n.conf.boards,
                    sockets: n.conf.sockets,
                    cores_per_socket: n.conf.cores_per_socket,
                    threads_per_core: n.conf.threads_per_core,
                    real_memory: n.conf.real_memory,
                    tmp_disk: n.conf.tmp_disk,
                    weight: n.conf.weight,
                    alloc_cpus: n.alloc_cpus,
                    alloc_mem: n.alloc_mem,
                    free_mem: r.map(|r| r.free_memory),
                    cpu_load: r.map(|r| r.cpu_load),
                    gres: n.conf.gres.clone(),
                    gres_used: used,
                    features: n.conf.features.clone(),
                    partitions: n.partitions.clone(),
                    reason: n.reason.clone(),
                    reason_user: n.reason_user.clone(),
                    reason_time: n.reason_time,
                    boot_time: r.map(|r| r.boot_time),
                    slurmd_start_time: r.map(|r| r.start_time),
                    last_busy: n.last_busy,
                    version: r.map(|r| r.version.clone()),
                    os: r.map(|r| r.os.clone()),
                    arch: r.map(|r| r.arch.clone()),
                    resv: match self.node_resv(sched::NodeIdx(i as u32), self.resv_now) {
                        Some((_, true)) => 2,
                        Some((_, false)) => 1,
                        None => 0,
                    },
                    reboot_issued: n.state.reboot_issued,
                    next_state: n.reboot.as_ref().and_then(|r| r.next_state),
                }
            })
            .collect()
    }

    /// Every partition, in configuration order.
    pub fn partition_infos(&self) -> Vec<PartitionInfo> {
        self.parts
            .iter()
            .map(|p| {
                let members: Vec<&crate::Node> =
                    p.nodes.iter().map(|i| &self.nodes[i.0 as usize]).collect();
                let cpus: u32 = members.iter().map(|n| n.conf.cpus).sum();
                let mem: u64 = members.iter().map(|n| n.conf.real_memory).sum();
                let gpus: u64 = members
                    .iter()
                    .flat_map(|n| n.conf.gres.iter())
                    .filter(|g| g.name == "gpu")
                    .map(|g| g.count)
                    .sum();
                PartitionInfo {
                    name: p.conf.name.clone(),
                    default: p.conf.default,
                    nodes: p.conf.nodes.clone(),
                    state: p.conf.state.clone(),
                    max_time: p.conf.max_time,
                    default_time: p.conf.default_time,
                    max_nodes: p.conf.max_nodes,
                    min_nodes: p.conf.min_nodes,
                    priority_tier: p.conf.priority_tier,
                    priority_job_factor: p.conf.priority_job_factor,
                    oversubscribe: p.conf.oversubscribe.clone(),
                    allow_accounts: p.conf.allow_accounts.clone(),
                    allow_groups: p.conf.allow_groups.clone(),
                    def_mem_per_cpu: p.conf.def_mem_per_cpu,
                    max_mem_per_node: p.conf.max_mem_per_node,
                    total_cpus: cpus,
                    total_nodes: members.len() as u32,
                    tres: tres_string(cpus, mem, members.len() as u32, gpus),
                    access: [
                        "AllowQos",
                        "DenyAccounts",
                        "DenyQos",
                        "RootOnly",
                        "DisableRootJobs",
                        "ExclusiveUser",
                        "GraceTime",
                        "LLN",
                        "MaxCPUsPerNode",
                    ]
                    .iter()
                    .filter_map(|k| {
                        let (_, v) = p.conf.other.get(&k.to_ascii_lowercase())?;
                        Some((k.to_string(), v.clone()))
                    })
                    .collect(),
                }
            })
            .collect()
    }

    /// `scontrol show config`: the configuration's entries with the values
    /// only the running controller knows. `boot_time` is the controller's
    /// start time, already formatted in local time by the shell.
    pub fn config_info(&self, cfg: &conf::Config, now: Timestamp, boot_time: &str) -> ConfigInfo {
        let mut entries = cfg.show_config_entries();
        conf::override_entry(&mut entries, "BOOT_TIME", boot_time);
        conf::override_entry(&mut entries, "NEXT_JOB_ID", self.next_job_id.to_string());
        ConfigInfo { now, entries }
    }
}

/// The rows of a brief listing (`JobFilter::rows`): the engine hands out
/// the rows; `proto` encodes them into the answer.
impl proto::JobRowSource for Engine {
    fn each_job_row<'a>(
        &'a self,
        filter: &JobFilter,
        now: Timestamp,
        each: impl FnMut(&JobRow, &mut Interner<'a>),
    ) -> Interner<'a> {
        self.each_job_row_seen(filter, now, &Sight::everything(), each)
    }

    fn row_unencodable(&self, row: &JobRow, error: proto::RowEncodeError) {
        tracing::error!("job {}: its row cannot be encoded: {error}", row.job_id);
    }
}

/// The rows of a brief listing as one requester may see them
/// (`Engine::seen_by`).
impl proto::JobRowSource for SeenBy<'_> {
    fn each_job_row<'a>(
        &'a self,
        filter: &JobFilter,
        now: Timestamp,
        each: impl FnMut(&JobRow, &mut Interner<'a>),
    ) -> Interner<'a> {
        self.engine
            .each_job_row_seen(filter, now, &self.sight, each)
    }

    fn row_unencodable(&self, row: &JobRow, error: proto::RowEncodeError) {
        self.engine.row_unencodable(row, error);
    }
}

impl Engine {
    fn each_job_row_seen<'a>(
        &'a self,
        filter: &JobFilter,
        now: Timestamp,
        sight: &Sight,
        // A reference: the row is 282 bytes, built here and dropped after.
        mut each: impl FnMut(&JobRow, &mut Interner<'a>),
    ) -> Interner<'a> {
        let keep = Keep::of(filter);
        let mut strings = Interner::new();
        // Node names by node index, interned once each.
        let mut node_names: Vec<u32> = vec![u32::MAX; self.nodes.len()];
        // Each job is a box of its own: the first touch of every one was
        // half of this walk's time. Ask for the job two places ahead
        // while this one is read.
        let mut ahead = self.jobs.values().skip(2);
        for j in self.jobs.values() {
            if let Some(next) = ahead.next() {
                proto::prefetch(&**next);
            }
            if self.job_passes(j, filter, sight) {
                let row = self.job_row(j, now, &keep, &mut strings, &mut node_names);
                each(&row, &mut strings);
            }
        }
        strings
    }
}

/// What one `job_info_with` fills in: the full view, or a `QueryJobs`
/// filter's brief view less the text fields it omits.
pub(crate) struct Keep {
    brief: bool,
    name: bool,
    user: bool,
    group: bool,
    account: bool,
    qos: bool,
    partition: bool,
    nodes: bool,
    sched_nodes: bool,
    scheduler: bool,
}

impl Keep {
    const ALL: Keep = Keep {
        brief: false,
        name: true,
        user: true,
        group: true,
        account: true,
        qos: true,
        partition: true,
        nodes: true,
        sched_nodes: true,
        scheduler: true,
    };

    pub(crate) fn of(filter: &JobFilter) -> Keep {
        use proto::JobField as F;
        Keep {
            brief: filter.brief,
            name: filter.keeps(F::Name),
            user: filter.keeps(F::User),
            group: filter.keeps(F::Group),
            account: filter.keeps(F::Account),
            qos: filter.keeps(F::Qos),
            partition: filter.keeps(F::Partition),
            nodes: filter.keeps(F::Nodes),
            sched_nodes: filter.keeps(F::SchedNodes),
            scheduler: filter.keeps(F::Scheduler),
        }
    }
}

/// A pending array's unstarted task ids (`[5-9]`): only its meta job has them.
fn array_task_str(job: &Job) -> Option<String> {
    job.array
        .as_ref()
        .filter(|a| a.is_meta())
        .map(|a| a.pending.to_string())
}

impl Engine {
    /// A node share's GRES as `scontrol show job -d` writes them:
    /// `gpu:a100:1(IDX:0)`, pools joined by commas; empty without any.
    fn gres_idx_text(&self, na: &sched::NodeAlloc) -> String {
        let pools = &self.nodes[na.node.0 as usize].gres;
        na.gres
            .iter()
            .filter_map(|(pi, idxs)| {
                let pool = pools.get(*pi)?;
                let name = match &pool.type_ {
                    Some(t) => format!("{}:{t}", pool.name),
                    None => pool.name.clone(),
                };
                Some(format!(
                    "{name}:{}(IDX:{})",
                    idxs.len(),
                    proto::cpu_list(idxs)
                ))
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// An array's `%` throttle, when it has one, for each of its records
    /// (Slurm's scontrol shows `ArrayTaskThrottle=` on the running tasks
    /// too): the pending record's, which `scontrol update
    /// ArrayTaskThrottle=` changes, while there is one.
    fn array_max_tasks(&self, job: &Job) -> Option<u32> {
        let part = job.array.as_ref()?;
        let meta = self
            .jobs
            .get(&part.array_job_id)
            .and_then(|j| j.array.as_ref())
            .filter(|a| a.is_meta());
        let throttle = meta.map_or(part.throttle, |m| m.throttle);
        (throttle > 0).then_some(throttle)
    }
}

/// `EligibleTime=` as Slurm shows it: Unknown (0) while a hold is on the
/// job (Slurm's hold clears the time), except after `requeuehold`, which
/// keeps the time the requeue set.
fn shown_eligible_time(job: &Job) -> Timestamp {
    if job.held.is_some() && job.reason != model::PendingReason::JobRequeuedHeld {
        0
    } else {
        job.eligible_time
    }
}
