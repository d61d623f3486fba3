//! Job events: submission, cancel, updates, holds, requeue, the end of a
//! batch script, and the scheduling pass that starts jobs.

use crate::{Command, Engine, Job, BASE_PRIORITY};
use model::{ExitCode, JobId, JobState, PendingReason, TimeLimit, Timestamp};
use proto::{Identity, JobDesc, JobUpdate, SignalScope, SlurmError, SubmitReply, TestOnlyEstimate};
use sched::{Constraint, Decision, JobRequest, NodeIdx, NodeView, PartView};
use std::sync::Arc;

impl Engine {
    /// Candidate partitions for a submission: the ones named, else the default.
    fn resolve_partitions(&self, names: &[String]) -> Result<Vec<usize>, SlurmError> {
        if names.is_empty() {
            return self
                .parts
                .iter()
                .position(|p| p.conf.default)
                .map(|i| vec![i])
                .ok_or(SlurmError::InvalidPartitionName);
        }
        names
            .iter()
            .map(|n| {
                self.parts
                    .iter()
                    .position(|p| &p.conf.name == n)
                    .ok_or(SlurmError::InvalidPartitionName)
            })
            .collect()
    }

    fn resolve_nodes(&self, names: &[String]) -> Result<Vec<NodeIdx>, SlurmError> {
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
        self.request_with(job, job.partitions.clone())
    }

    /// `request_for` with `partitions` in place of the job's.
    fn request_with(&self, job: &Job, partitions: Vec<usize>) -> JobRequest {
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
        }
    }

    pub(crate) fn node_views(&self) -> Vec<NodeView> {
        self.nodes
            .iter()
            .map(|n| NodeView {
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
            })
            .collect()
    }

    /// `node_views`, from the views the last pass used: a node's name,
    /// size, features and GRES pools never change, so only what is in use
    /// and whether it may take jobs are copied again. Notes the nodes
    /// whose views changed since (`view_hint`), where the last pass's
    /// views were these ones (no suspended job's shares laid on them).
    fn refreshed_node_views(&mut self) -> Vec<NodeView> {
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
            for (vp, np) in v.gres.iter_mut().zip(&n.gres) {
                vp.used.clone_from(&np.used);
            }
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

    /// sbatch: validates and queues a job (durability is the shell's job).
    pub fn on_submit(
        &mut self,
        mut desc: JobDesc,
        who: &Identity,
        now: Timestamp,
    ) -> Result<SubmitReply, SlurmError> {
        // The controller trusts the credential, not what the request body says.
        desc.uid = who.uid;
        desc.gid = who.gid;
        desc.user = who.user.clone();
        // Taken out of the description, which is pooled with identical
        // ones (a token is unique to its submission).
        let token = match desc.submit_token.take() {
            Some(text) if !desc.test_only => {
                Some(proto::SubmitToken::parse(&text).ok_or(SlurmError::InvalidRequest)?)
            }
            _ => None,
        };
        if let Some(token) = token {
            // A submission sent again (its answer was lost): the job it
            // made, nothing new (`tokens`).
            self.submit_tokens.forget_expired(now);
            if let Some(seen) = self.submit_tokens.get(token) {
                if seen.uid != who.uid {
                    return Err(SlurmError::AccessDenied);
                }
                return Ok(SubmitReply {
                    job_id: seen.job_id,
                    test_only: None,
                    partition: seen.partition.to_string(),
                });
            }
        }
        if self.jobs.len() as u32 >= self.settings.max_job_count {
            return Err(SlurmError::TooManyJobs);
        }
        let partitions = self.resolve_partitions(&desc.partitions)?;
        self.resolve_nodes(&desc.nodelist)?;
        self.resolve_nodes(&desc.exclude)?;
        let all_gres = desc
            .gres
            .iter()
            .chain(desc.gpus.iter())
            .chain(desc.gpus_per_node.iter())
            .chain(desc.gpus_per_task.iter());
        for g in all_gres {
            if !self.settings.gres_types.iter().any(|t| t == &g.name) {
                return Err(SlurmError::InvalidGres);
            }
        }
        if let Some(c) = &desc.constraint {
            // As Slurm: a malformed expression, or a feature no node has.
            let parsed = Constraint::parse(c).ok_or(SlurmError::InvalidFeature)?;
            let known = |f: &String| self.nodes.iter().any(|n| n.conf.features.contains(f));
            if !parsed.any_of.iter().flatten().all(known) {
                return Err(SlurmError::InvalidFeature);
            }
        }
        if self.settings.enforce.associations {
            let part_names: Vec<String> = partitions
                .iter()
                .map(|&p| self.parts[p].conf.name.clone())
                .collect();
            self.apply_association(&mut desc, &part_names)?;
        }
        if let Some(a) = &desc.account {
            for &p in &partitions {
                if let Some(allowed) = &self.parts[p].conf.allow_accounts {
                    if !allowed.iter().any(|x| x == a) {
                        return Err(SlurmError::InvalidAccount);
                    }
                }
            }
        }
        // `--time=0` means no limit (sbatch(1)).
        let requested_limit = match desc.time_limit {
            Some(TimeLimit::Minutes(0)) => Some(TimeLimit::Unlimited),
            other => other,
        };
        let part0 = &self.parts[partitions[0]].conf;
        let time_limit = requested_limit
            .or(part0.default_time)
            .unwrap_or(part0.max_time);
        let (min_nodes, max_nodes, ntasks) = shape(&desc);
        let id = JobId(self.next_job_id);
        // Pooled only once accepted (below), so refusals leave nothing behind.
        // The description keeps no environment of its own: the pooled
        // empty one stands in (no new one made per job).
        let env = std::mem::replace(&mut desc.env, self.empty_env.clone());
        // An identical script already pooled is shared at once.
        let script: Arc<str> = match self.script_pool.get(desc.script.as_str()) {
            Some(pooled) => pooled.clone(),
            None => Arc::from(std::mem::take(&mut desc.script)),
        };
        desc.script = String::new();
        let mut job = Job {
            env,
            script,
            id,
            requeue: desc.requeue.unwrap_or(self.settings.job_requeue),
            state: JobState::Pending,
            completing: false,
            reason: PendingReason::None,
            priority: 0,
            base_priority: 0,
            submit_time: now,
            eligible_time: now,
            start_time: None,
            end_time: None,
            partition: partitions[0],
            partitions,
            time_limit,
            min_nodes,
            max_nodes,
            ntasks,
            alloc: None,
            ran_on: Vec::new(),
            ran_cpus: Vec::new(),
            exit: ExitCode::default(),
            restarts: 0,
            warned: false,
            stdout: String::new(),
            stderr: String::new(),
            last_sched_eval: None,
            held: None,
            admin_priority: None,
            cancelled_by: None,
            batch_usage: None,
            extern_usage: None,
            prio_factors: None,
            array: None,
            depend: None,
            dep_status: crate::DepStatus::Clear,
            steps: Vec::new(),
            next_step_id: 0,
            suspend: None,
            suspended_secs: 0,
            suspend_time: None,
            secs_pre_suspend: 0,
            preempted_by: None,
            desc: Arc::new(desc),
        };
        if let Some(text) = job.desc.array.clone() {
            self.init_array(&mut job, &text)?;
        }
        if let Some(text) = job.desc.dependency.clone() {
            job.depend = self.check_dependency(id, &text)?;
            self.may_depend |= job.depend.is_some();
            if job.depend.is_some() {
                job.dep_status = crate::DepStatus::Waiting;
                job.reason = PendingReason::Dependency;
            }
        }
        // Refuse at once what no partition could ever run, as Slurm does
        // ("Requested node configuration is not available").
        self.check_feasible(&job)?;
        self.check_submit_limits(&job)?;
        let prio = BASE_PRIORITY
            .saturating_sub(self.n_submitted)
            .saturating_sub(job.desc.nice.max(0) as u32)
            .saturating_add((-job.desc.nice).max(0) as u32);
        job.base_priority = prio.max(1);
        if self.settings.priority.multifactor {
            self.prioritize_new(&mut job, now);
        }
        job.priority = job.base_priority;
        if job.desc.hold {
            job.held = Some(true);
            job.priority = 0;
            job.reason = PendingReason::JobHeldUser;
        } else if job.desc.begin_time.is_some_and(|b| b > now) {
            job.reason = PendingReason::BeginTime;
        }
        if let Some(b) = job.desc.begin_time {
            job.eligible_time = b.max(now);
        }
        if job.desc.test_only {
            // A real submission of a request every partition refuses (more
            // nodes than the partition has, ...) is queued to wait for
            // ever; its estimate fails, as Slurm's will-run test does.
            if self.every_partition_refuses(&job) {
                return Err(SlurmError::RequestedNodeConfigUnavailable);
            }
            let req = self.request_for(&job);
            let views = self.node_views();
            let parts = self.part_views();
            let (start, cpus, nodes, partition) = match sched::place(&req, &parts, &views) {
                Ok(a) => (
                    now,
                    a.nodes.iter().map(|n| n.cpus).sum(),
                    hostlist::compress(
                        &a.nodes
                            .iter()
                            .map(|n| self.nodes[n.node.0 as usize].conf.name.clone())
                            .collect::<Vec<_>>(),
                    ),
                    self.parts[a.partition].conf.name.clone(),
                ),
                Err(_) => (
                    now,
                    job.ntasks,
                    String::new(),
                    self.parts[job.partition].conf.name.clone(),
                ),
            };
            return Ok(SubmitReply {
                job_id: id,
                test_only: Some(TestOnlyEstimate {
                    start_time: start,
                    cpus,
                    nodes,
                    partition: partition.clone(),
                }),
                partition,
            });
        }
        self.next_job_id += 1;
        self.n_submitted += 1;
        // A held job changes neither the schedule nor any deadline.
        if !(job.desc.hold && job.desc.begin_time.is_none()) {
            if job.array.is_some() || job.desc.begin_time.is_some() || job.depend.is_some() {
                self.touch();
            } else {
                self.touch_submit(id);
            }
        }
        let partition = self.parts[job.partition].conf.name.clone();
        job.env = self.intern_env(job.env);
        job.script = self.intern_script(job.script);
        job.desc = self.intern_desc(job.desc);
        self.jobs.insert(id, Box::new(job));
        self.record(id, now);
        if let Some(token) = token {
            self.submit_tokens
                .remember(token, id, who.uid, now, &partition);
        }
        Ok(SubmitReply {
            job_id: id,
            test_only: None,
            partition,
        })
    }

    /// Whether every partition of `job` refuses it for a reason of its
    /// own (`sched::placement::partition_refusal`) other than being down.
    fn every_partition_refuses(&self, job: &Job) -> bool {
        let parts = self.part_views();
        let req = self.request_with(job, Vec::new());
        job.partitions.iter().all(|&pi| {
            sched::placement::partition_refusal(&req, &parts[pi])
                .is_some_and(|r| r != PendingReason::PartitionDown)
        })
    }

    fn check_feasible(&mut self, job: &Job) -> Result<(), SlurmError> {
        // Only the nodes' configuration is read here (as if empty and up):
        // the last pass's views do. Before the first pass there are none:
        // made once and kept, not once per submission (a trace's whole
        // queue may come before the first pass).
        if self.node_view_cache.len() != self.nodes.len() {
            self.node_view_cache = self.node_views();
            self.fit_memo.clear();
            // Not the views a pass gave the scheduler: the next pass looks
            // at every node and tells the scheduler nothing of what
            // changed (as after a pass that laid suspended shares on).
            self.views_plain = false;
        }
        let views: &[NodeView] = &self.node_view_cache;
        let parts = self.part_views();
        // Neither `partition_refusal` nor `could_ever_fit` reads the
        // request's partitions (the loop goes over the job's): none copied.
        let req = self.request_with(job, Vec::new());
        let mut any_refusal = false;
        for &pi in &job.partitions {
            if sched::placement::partition_refusal(&req, &parts[pi]).is_some() {
                // Accepted, and left pending with the partition's reason.
                any_refusal = true;
                continue;
            }
            let fits = match FitShape::of(&req) {
                Some(shape) => *self.fit_memo.entry((pi, shape)).or_insert_with(|| {
                    sched::placement::could_ever_fit(&req, pi, &parts[pi], views)
                }),
                None => sched::placement::could_ever_fit(&req, pi, &parts[pi], views),
            };
            debug_assert_eq!(
                fits,
                sched::placement::could_ever_fit(&req, pi, &parts[pi], views),
                "a kept answer of the submission check differs"
            );
            if fits {
                return Ok(());
            }
        }
        if any_refusal {
            return Ok(());
        }
        // More CPUs than a partition has in all is accepted and waits
        // there (PartitionConfig), as Slurm does with `srun -n9` on four
        // nodes of two CPUs; a request no node's shape could ever meet
        // (`-N1 -n4` there) is refused below.
        let cpus_wanted =
            u64::from(req.ntasks.max(req.min_nodes)) * u64::from(req.cpus_per_task.max(1));
        let more_than_any_partition = !job.partitions.is_empty()
            && job.partitions.iter().all(|&pi| {
                let part_cpus: u64 = parts[pi]
                    .nodes
                    .iter()
                    .map(|n| u64::from(views[n.0 as usize].cpus))
                    .sum();
                cpus_wanted > part_cpus
            });
        if more_than_any_partition {
            return Ok(());
        }
        // Tell a memory request no node can satisfy apart from the rest.
        let mut no_mem = req.clone();
        no_mem.mem_per_node = None;
        no_mem.mem_per_cpu = None;
        no_mem.mem_per_gpu = None;
        let fits_without_mem = job
            .partitions
            .iter()
            .any(|&pi| sched::placement::could_ever_fit(&no_mem, pi, &parts[pi], views));
        Err(if fits_without_mem {
            SlurmError::MemoryNotSatisfiable
        } else {
            SlurmError::RequestedNodeConfigUnavailable
        })
    }

    /// scancel: cancels a job, or signals the processes `scope` names
    /// when `signal` is given.
    pub fn on_cancel(
        &mut self,
        id: JobId,
        signal: Option<i32>,
        scope: SignalScope,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::AccessDenied);
        }
        if job.state.is_finished() {
            return Err(SlurmError::AlreadyDone);
        }
        match (signal, job.state) {
            (Some(sig), JobState::Running) => {
                self.signal_job_nodes(id, sig, scope);
                Ok(())
            }
            (Some(_), _) => Err(SlurmError::JobNotRunning),
            (None, _) => {
                if let Some(j) = self.jobs.get_mut(&id) {
                    j.cancelled_by = Some(who.uid);
                }
                self.end_job(id, JobState::Cancelled, now);
                Ok(())
            }
        }
    }

    /// Sends `signal` to the job's processes that `scope` names: the
    /// batch shell lives on the first node, steps on any.
    pub(crate) fn signal_job_nodes(&mut self, id: JobId, signal: i32, scope: SignalScope) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let Some(alloc) = &job.alloc else { return };
        let targets: Vec<NodeIdx> = if scope == SignalScope::Batch {
            alloc.nodes.first().map(|n| n.node).into_iter().collect()
        } else {
            alloc.nodes.iter().map(|n| n.node).collect()
        };
        for idx in targets {
            let n = &self.nodes[idx.0 as usize];
            self.outbox.push(Command::SignalJob {
                node: n.conf.name.clone(),
                addr: n.daemon_addr.clone(),
                job_id: id,
                signal,
                scope,
            });
        }
    }

    /// Ends a job in `state` (CANCELLED, TIMEOUT, NODE_FAIL): pending jobs end
    /// at once, running ones become COMPLETING until their batch host reports.
    pub(crate) fn end_job(&mut self, id: JobId, state: JobState, now: Timestamp) {
        self.end_job_inner(id, state, now);
        self.record(id, now);
    }

    fn end_job_inner(&mut self, id: JobId, state: JobState, now: Timestamp) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let was_running = job.state == JobState::Running;
        let was_suspended = job.state == JobState::Suspended;
        job.state = state;
        job.end_time = Some(now);
        job.reason = match state {
            JobState::Timeout => PendingReason::TimeLimit,
            JobState::NodeFail => PendingReason::NodeDown,
            _ => PendingReason::None,
        };
        if was_suspended {
            self.end_steps(id, now);
            self.end_suspended(id);
            return;
        }
        if !was_running {
            return;
        }
        self.end_steps(id, now);
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if matches!(
            state,
            JobState::Timeout | JobState::Cancelled | JobState::Preempted
        ) {
            job.exit = ExitCode {
                code: 0,
                signal: 15,
            };
        }
        job.completing = true;
        self.may_complete = true;
        self.running_changed.insert(id);
        let job = self.jobs.get_mut(&id).expect("checked");
        let alloc = job.alloc.clone().expect("running job has an allocation");
        let batch = alloc.nodes[0].node;
        // The extern step ends now on every node (the batch host may never
        // report the script's end: a node failure).
        self.extern_command(id, false);
        // Nodes other than the batch host run nothing of a batch job yet:
        // their share is free now; the batch host's when the script is gone.
        for na in alloc.nodes.iter().skip(1) {
            self.release_node_share(id, na.node);
        }
        let run = self.jobs[&id].restarts;
        self.node_command_end(batch, id, run, crate::steps::end_reason(state));
        self.refresh_node_state(batch);
    }

    /// Puts a job back in the queue, same id, restart count incremented.
    pub(crate) fn requeue_job(&mut self, id: JobId, reason: PendingReason, now: Timestamp) {
        self.requeue_job_as(id, reason, JobState::Requeued, now);
    }

    /// Requeues a job whose ended run is recorded in `history` (REQUEUED,
    /// or PREEMPTED when preemption requeued it).
    pub(crate) fn requeue_job_as(
        &mut self,
        id: JobId,
        reason: PendingReason,
        history: JobState,
        now: Timestamp,
    ) {
        self.requeue_job_inner(id, reason, history, now);
        self.record(id, now);
    }

    fn requeue_job_inner(
        &mut self,
        id: JobId,
        reason: PendingReason,
        history: JobState,
        now: Timestamp,
    ) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let was_running = job.state == JobState::Running;
        // The run that ends stays in the accounting history as REQUEUED
        // (`sacct -D`); the next run is a new record from now on.
        if job.start_time.is_some() {
            if let Some(mut old) = self.acct_job(id, now) {
                old.state = history;
                old.end_time = Some(now);
                for s in &mut old.steps {
                    if s.state == JobState::Running {
                        s.state = JobState::Cancelled;
                        s.end_time = Some(now);
                    }
                }
                self.outbox.push(Command::AcctRecord(Box::new(old)));
            }
        }
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        // Accounting keys records by submit time: a requeue within the same
        // second still makes a new record.
        job.submit_time = now.max(job.submit_time + 1);
        job.state = JobState::Pending;
        job.restarts += 1;
        job.reason = reason;
        job.start_time = None;
        job.end_time = None;
        job.warned = false;
        job.batch_usage = None;
        job.extern_usage = None;
        job.exit = ExitCode::default();
        // Not eligible again until the last run's credentials have expired
        // (Slurm's requeue delay, AuthInfo cred_expire).
        let delay = i64::from(self.settings.cred_expire);
        if delay > 0 {
            std::sync::Arc::make_mut(&mut job.desc).begin_time = Some(now + delay);
            if reason == PendingReason::None {
                job.reason = PendingReason::BeginTime;
            }
        }
        job.eligible_time = now + delay;
        job.suspended_secs = 0;
        job.suspend_time = None;
        job.secs_pre_suspend = 0;
        if was_running {
            job.completing = true;
            self.may_complete = true;
            self.running_changed.insert(id);
            let job = self.jobs.get_mut(&id).expect("checked");
            let old_run = job.restarts - 1;
            let alloc = job.alloc.clone().expect("running job has an allocation");
            self.extern_command(id, false);
            for na in alloc.nodes.iter().skip(1) {
                self.release_node_share(id, na.node);
            }
            // The run being ended is the one before this requeue.
            self.node_command_terminate(alloc.nodes[0].node, id, old_run);
        }
    }

    /// A node daemon reports that a batch script ended.
    pub fn on_job_exited(
        &mut self,
        id: JobId,
        node: &str,
        exit: ExitCode,
        launch_failed: Option<String>,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        let kept = self.fresh.take();
        let running_all = self.running_all;
        self.touch();
        let idx = self.node_idx(node).ok_or(SlurmError::InvalidNodeName)?;
        if self.exited_while_suspended(id, idx, exit, now) {
            return Ok(());
        }
        let Some(job) = self.jobs.get_mut(&id) else {
            // Already purged: nothing to record.
            return Ok(());
        };
        // A report from a node that no longer holds the job (its old run,
        // after a requeue moved it elsewhere) changes nothing.
        let holds_it = job
            .alloc
            .as_ref()
            .is_some_and(|a| a.nodes.first().is_some_and(|n| n.node == idx));
        if !holds_it {
            return Ok(());
        }
        // A running job's end only frees resources: the next pass may be
        // the short one (`schedule`). Anything else looks at every job.
        let plain_end = job.state == JobState::Running && launch_failed.is_none();
        match job.state {
            JobState::Running => {
                job.exit = exit;
                job.end_time = Some(now);
                job.state = if launch_failed.is_some() || !exit.is_success() {
                    JobState::Failed
                } else {
                    JobState::Completed
                };
                job.reason = if launch_failed.is_some() {
                    PendingReason::LaunchFailRequeueHold
                } else if exit.signal != 0 {
                    PendingReason::RaisedSignal(exit.signal.clamp(0, 255) as u8)
                } else if exit.code != 0 {
                    PendingReason::NonZeroExitCode
                } else {
                    PendingReason::None
                };
            }
            JobState::Pending => {
                // A requeued job's old processes are gone: it may run again.
            }
            _ => {
                // An allocation's exit is its client's (CompleteAllocation).
                if job.state != JobState::Cancelled
                    && job.state != JobState::Timeout
                    && job.state != JobState::Preempted
                    && !job.desc.alloc_only
                {
                    job.exit = exit;
                }
            }
        }
        // Steps end with their batch script, as in Slurm, the extern step
        // on every node too.
        self.end_steps(id, now);
        self.extern_command(id, false);
        self.release_all(id);
        self.refresh_node_state(idx);
        self.record(id, now);
        if plain_end {
            self.fresh = kept;
            // Its release is in `running_changed`: no other running job
            // changed.
            self.running_all = running_all;
            self.freed = true;
        }
        Ok(())
    }

    /// A node reports what a job's batch script used (just before its end).
    /// Kept only from the node that runs the job's current run.
    pub fn on_batch_usage(&mut self, id: JobId, node: &str, usage: proto::StepUsage) {
        let Some(idx) = self.node_idx(node) else {
            return;
        };
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let batch_here = job
            .alloc
            .as_ref()
            .is_some_and(|a| a.nodes.first().is_some_and(|n| n.node == idx));
        if batch_here {
            job.batch_usage = Some(Box::new(proto::StepUsage {
                max_rss_node: Some(node.to_string()),
                ..usage
            }));
        }
    }

    /// Starts (`start`) or ends the job's extern step on every node of its
    /// allocation, with PrologFlags=Contain; only batch jobs have one.
    pub(crate) fn extern_command(&mut self, id: JobId, start: bool) {
        if !self.settings.prolog_contain || self.simulated {
            return;
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let Some(alloc) = job.alloc.as_ref().filter(|_| !job.desc.alloc_only) else {
            return;
        };
        let mut cmds = Vec::new();
        for (i, na) in alloc.nodes.iter().enumerate() {
            let n = &self.nodes[na.node.0 as usize];
            let (node, addr) = (n.conf.name.clone(), n.daemon_addr.clone());
            cmds.push(if start {
                Command::StartExtern {
                    node,
                    addr,
                    job_id: id,
                    uid: job.desc.uid,
                    gid: job.desc.gid,
                    node_index: i as u32,
                    acctg_freq: job.desc.acctg_freq.clone(),
                }
            } else {
                Command::EndExtern {
                    node,
                    addr,
                    job_id: id,
                }
            });
        }
        self.outbox.extend(cmds);
    }

    /// A node reports what the job's extern step used there; merged with
    /// the other nodes' and recorded.
    pub fn on_extern_ended(
        &mut self,
        id: JobId,
        node: &str,
        usage: proto::StepUsage,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.node_idx(node).ok_or(SlurmError::InvalidNodeName)?;
        let Some(job) = self.jobs.get_mut(&id) else {
            return Ok(());
        };
        job.extern_usage
            .get_or_insert_with(Default::default)
            .merge(&usage);
        self.record(id, now);
        Ok(())
    }

    /// A node answered a Terminate saying it no longer runs the job. If the
    /// same run still holds resources there, its processes are gone: release
    /// them. A later run of the job (after a requeue) is not touched.
    pub fn on_job_gone(&mut self, id: JobId, node: &str, run: u32, now: Timestamp) {
        let current = self.jobs.get(&id).is_some_and(|j| j.restarts == run);
        if current {
            let _ = self.on_job_exited(id, node, ExitCode { code: 0, signal: 9 }, None, now);
        }
    }

    /// The shell could not deliver a launch to the node: the node is set DOWN
    /// and the job requeued (or failed, when it may not be requeued).
    pub fn on_launch_failed(&mut self, id: JobId, node: &str, now: Timestamp) {
        self.touch();
        if let Some(idx) = self.node_idx(node) {
            let n = &mut self.nodes[idx.0 as usize];
            n.state.not_responding = true;
            n.reason = Some(crate::nodes::NOT_RESPONDING.into());
            n.reason_user = Some(self.settings.slurm_user.clone());
            n.reason_time = Some(now);
            self.node_down(idx, now);
        }
        let _ = id;
    }

    /// `scontrol update JobId=...` (pending jobs only, as Slurm for most fields).
    pub fn on_update_job(
        &mut self,
        id: JobId,
        u: JobUpdate,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let admin = self.is_admin(who);
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        // Slurm's messages: "Invalid user id for job N", "Job has already
        // finished for job N".
        if !self.may_modify(who, job) {
            return Err(SlurmError::InvalidUserId);
        }
        if job.state.is_finished() {
            return Err(SlurmError::JobFinished);
        }
        let pending = job.state == JobState::Pending;
        let mut next = job.clone();
        if let Some(t) = u.time_limit {
            // Users may lower a running job's limit; raising it is for admins.
            if !pending && !admin && t > job.time_limit {
                return Err(SlurmError::AccessDenied);
            }
            next.time_limit = t;
            Arc::make_mut(&mut next.desc).time_limit = Some(t);
        }
        let only_running_ok = u.partitions.is_none()
            && u.min_nodes.is_none()
            && u.max_nodes.is_none()
            && u.ntasks.is_none()
            && u.constraint.is_none()
            && u.nodelist.is_none()
            && u.exclude.is_none()
            && u.mem_per_node.is_none()
            && u.mem_per_cpu.is_none()
            && u.gres.is_none()
            && u.begin_time.is_none()
            && u.dependency.is_none();
        if !pending && (u.min_nodes.is_some() || u.max_nodes.is_some()) {
            // Slurm: "Requested operation not supported on this system".
            return Err(SlurmError::NotSupported);
        }
        if !pending && !only_running_ok {
            return Err(SlurmError::JobNotPending);
        }
        if let Some(p) = &u.partitions {
            next.partitions = self.resolve_partitions(p)?;
            next.partition = next.partitions[0];
            Arc::make_mut(&mut next.desc).partitions = p.clone();
        }
        if let Some(n) = u.min_nodes {
            next.min_nodes = n;
            Arc::make_mut(&mut next.desc).min_nodes = Some(n);
            next.max_nodes = u.max_nodes.unwrap_or(n).max(n);
            Arc::make_mut(&mut next.desc).max_nodes = Some(next.max_nodes);
            next.ntasks = next.ntasks.max(n);
        }
        if let Some(n) = u.ntasks {
            next.ntasks = n;
            Arc::make_mut(&mut next.desc).ntasks = Some(n);
        }
        if let Some(c) = u.constraint {
            if !c.is_empty() && Constraint::parse(&c).is_none() {
                return Err(SlurmError::InvalidFeature);
            }
            Arc::make_mut(&mut next.desc).constraint = (!c.is_empty()).then_some(c);
        }
        if let Some(n) = u.name {
            Arc::make_mut(&mut next.desc).name = n;
        }
        if let Some(c) = u.comment {
            Arc::make_mut(&mut next.desc).comment = Some(c);
        }
        if let Some(nice) = u.nice {
            if nice < 0 && !admin {
                return Err(SlurmError::AccessDenied);
            }
            Arc::make_mut(&mut next.desc).nice = nice;
        }
        if let Some(l) = u.nodelist {
            self.resolve_nodes(&l)?;
            Arc::make_mut(&mut next.desc).nodelist = l;
        }
        if let Some(l) = u.exclude {
            self.resolve_nodes(&l)?;
            Arc::make_mut(&mut next.desc).exclude = l;
        }
        let u_account_or_qos = u.account.is_some() || u.qos.is_some();
        if let Some(a) = u.account {
            Arc::make_mut(&mut next.desc).account = Some(a);
        }
        if let Some(q) = u.qos {
            Arc::make_mut(&mut next.desc).qos = Some(q);
        }
        if u_account_or_qos {
            let part = self.parts[next.partition].conf.name.clone();
            self.apply_association(Arc::make_mut(&mut next.desc), &[part])?;
        }
        if let Some(p) = u.priority {
            if !admin {
                return Err(SlurmError::AccessDenied);
            }
            next.admin_priority = Some(p);
            next.base_priority = p;
            if next.held.is_none() {
                next.priority = p;
            }
        }
        if let Some(m) = u.mem_per_node {
            Arc::make_mut(&mut next.desc).mem_per_node = Some(m);
            Arc::make_mut(&mut next.desc).mem_per_cpu = None;
        }
        if let Some(m) = u.mem_per_cpu {
            Arc::make_mut(&mut next.desc).mem_per_cpu = Some(m);
            Arc::make_mut(&mut next.desc).mem_per_node = None;
        }
        if let Some(g) = u.gres {
            for x in &g {
                if !self.settings.gres_types.iter().any(|t| t == &x.name) {
                    return Err(SlurmError::InvalidGres);
                }
            }
            Arc::make_mut(&mut next.desc).gres = g;
        }
        if let Some(d) = u.dependency {
            next.depend = self.check_dependency(id, &d)?;
            self.may_depend |= next.depend.is_some();
            Arc::make_mut(&mut next.desc).dependency = (!d.is_empty()).then_some(d);
            next.dep_status = if next.depend.is_some() {
                crate::DepStatus::Waiting
            } else {
                crate::DepStatus::Clear
            };
            if next.held.is_none() {
                next.reason = if next.depend.is_some() {
                    PendingReason::Dependency
                } else {
                    PendingReason::None
                };
            }
        }
        if let Some(n) = u.array_throttle {
            if let Some(a) = next.array.as_mut() {
                a.throttle = n;
            }
        }
        if let Some(b) = u.begin_time {
            Arc::make_mut(&mut next.desc).begin_time = Some(b);
            next.eligible_time = b.max(now);
            if b > now && next.held.is_none() {
                next.reason = PendingReason::BeginTime;
            }
        }
        if let Some(r) = u.requeue {
            next.requeue = r;
            Arc::make_mut(&mut next.desc).requeue = Some(r);
        }
        if pending {
            if u.min_nodes.is_some() && !self.some_partition_has_cpus_for_nodes(&next) {
                return Err(SlurmError::RequestedPartConfigUnavailable);
            }
            self.check_feasible(&next)?;
        }
        self.jobs.insert(id, next);
        Ok(())
    }

    /// Whether one of the job's partitions has at least a CPU for each
    /// node it asks for. Slurm's update refuses a NumNodes beyond that
    /// ("Requested partition configuration not available now"), while a
    /// count between the partition's nodes and CPUs is accepted and waits
    /// with PartitionNodeLimit, as at submission.
    fn some_partition_has_cpus_for_nodes(&self, job: &Job) -> bool {
        job.partitions.iter().any(|&pi| {
            let cpus: u64 = self.parts[pi]
                .nodes
                .iter()
                .map(|n| u64::from(self.nodes[n.0 as usize].conf.cpus))
                .sum();
            u64::from(job.min_nodes) <= cpus
        })
    }

    /// `scontrol top`: the job moves ahead of its user's other pending jobs
    /// of the same partitions, account and QOS. As in Slurm, it takes the
    /// highest priority among those above it and each of them moves down
    /// one place; the nice values change by as much as the priorities, so
    /// that a later recalculation keeps the order. Operators only, and a
    /// user for their own jobs with `SchedulerParameters=enable_user_top`.
    pub fn on_top(&mut self, id: JobId, who: &Identity) -> Result<(), SlurmError> {
        self.touch();
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        let own = self.settings.enable_user_top && who.uid == job.desc.uid;
        if !self.is_admin(who) && !own {
            return Err(SlurmError::AccessDenied);
        }
        if job.state.is_finished() {
            return Err(SlurmError::JobFinished);
        }
        if job.state != JobState::Pending || job.completing {
            return Err(SlurmError::JobNotPending);
        }
        if job.held.is_some() {
            return Err(SlurmError::JobHeld);
        }
        let same = |j: &Job| {
            j.state == JobState::Pending
                && !j.completing
                && j.held.is_none()
                && j.desc.uid == job.desc.uid
                && j.partitions == job.partitions
                && j.desc.account == job.desc.account
                && j.desc.qos == job.desc.qos
        };
        // The jobs above it, highest first (ties: the older first).
        let mut above: Vec<(u32, JobId)> = self
            .jobs
            .values()
            .filter(|j| j.id != id && same(j) && j.priority > job.priority)
            .map(|j| (j.priority, j.id))
            .collect();
        above.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut order: Vec<JobId> = vec![id];
        let mut prios: Vec<u32> = above.iter().map(|(p, _)| *p).collect();
        prios.push(job.priority);
        order.extend(above.iter().map(|(_, j)| *j));
        for (jid, new) in order.into_iter().zip(prios) {
            let j = self.jobs.get_mut(&jid).expect("listed job exists");
            let delta = i64::from(j.priority) - i64::from(new);
            let nice = i64::from(j.desc.nice) + delta;
            Arc::make_mut(&mut j.desc).nice =
                nice.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
            j.priority = new;
            j.base_priority = new;
            if j.admin_priority.is_some() {
                j.admin_priority = Some(new);
            }
        }
        Ok(())
    }

    /// `scontrol notify`: a message for a running job's batch script, sent
    /// to its batch host. Slurm refuses jobs that do not run ("Requested
    /// operation is presently disabled") and other users' jobs.
    pub fn on_notify(
        &mut self,
        id: JobId,
        message: String,
        who: &Identity,
    ) -> Result<(), SlurmError> {
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::InvalidUserId);
        }
        if job.state != JobState::Running || job.completing {
            return Err(SlurmError::Disabled);
        }
        // An allocation (salloc, srun) has no batch script to write to;
        // Slurm's salloc and srun print the message, which muster's do
        // not yet: refused, not accepted and dropped.
        if job.desc.alloc_only {
            return Err(SlurmError::Disabled);
        }
        let Some(&batch) = job.ran_on.first() else {
            return Err(SlurmError::Disabled);
        };
        let n = &self.nodes[batch.0 as usize];
        self.outbox.push(Command::NotifyJob {
            node: n.conf.name.clone(),
            addr: n.daemon_addr.clone(),
            job_id: id,
            message,
        });
        Ok(())
    }

    /// `scontrol hold` / `uhold`.
    pub fn on_hold(&mut self, id: JobId, user: bool, who: &Identity) -> Result<(), SlurmError> {
        self.touch();
        let admin = self.is_admin(who);
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::InvalidUserId);
        }
        if job.state.is_finished() {
            return Err(SlurmError::JobFinished);
        }
        // A running job may be held too (Slurm: Priority=0, JobHeldAdmin):
        // it runs on, and a requeue leaves it held.
        if job.state != JobState::Pending && job.state != JobState::Running {
            return Err(SlurmError::JobNotPending);
        }
        let job = self.jobs.get_mut(&id).expect("checked");
        let as_user = user || !admin;
        job.held = Some(as_user);
        job.priority = 0;
        job.reason = if as_user {
            PendingReason::JobHeldUser
        } else {
            PendingReason::JobHeldAdmin
        };
        Ok(())
    }

    /// `scontrol release`.
    pub fn on_release(&mut self, id: JobId, who: &Identity) -> Result<(), SlurmError> {
        self.touch();
        let admin = self.is_admin(who);
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::InvalidUserId);
        }
        if job.state.is_finished() {
            return Err(SlurmError::JobFinished);
        }
        if job.state != JobState::Pending && job.state != JobState::Running {
            return Err(SlurmError::JobNotPending);
        }
        // A user may not release an administrator's hold.
        if job.held == Some(false) && !admin {
            return Err(SlurmError::AccessDenied);
        }
        let job = self.jobs.get_mut(&id).expect("checked");
        job.held = None;
        job.priority = job.base_priority;
        job.reason = PendingReason::None;
        Ok(())
    }

    /// `scontrol requeue` / `requeuehold`.
    pub fn on_requeue(
        &mut self,
        id: JobId,
        hold: bool,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        if !self.may_modify(who, job) {
            return Err(SlurmError::AccessDenied);
        }
        if !job.requeue {
            return Err(SlurmError::Disabled);
        }
        match job.state {
            JobState::Pending | JobState::Suspended => {
                return Err(SlurmError::TransitionStateNoUpdate)
            }
            _ if job.completing => return Err(SlurmError::TransitionStateNoUpdate),
            _ => {}
        }
        self.requeue_job(id, PendingReason::None, now);
        if hold {
            let job = self.jobs.get_mut(&id).expect("checked");
            job.held = Some(true);
            job.priority = 0;
            job.reason = PendingReason::JobRequeuedHeld;
        }
        Ok(())
    }

    /// Whether the next `schedule` would start no job and do nothing else
    /// that lasts beyond the next pass: every pending job that is neither
    /// held nor completing asks for more CPUs than the nodes that may run
    /// jobs have free (`demand_cpus`, a lower bound of what it needs; an
    /// array record is never counted out), and none of the pass's other
    /// effects can be due (preemption is off, no job is suspended by it,
    /// no pending job has a dependency, limits are not enforced, it is not
    /// the pass over the whole queue that FCFS owes, `depth_wake`, nor an
    /// FCFS pass that could stop at its depth and so arm one). Such a
    /// pass would only give the waiting jobs their reasons and plans,
    /// which the next pass makes again from the same state, with this
    /// batch's submissions and job ends among its own (they stay noted
    /// until then). The simulator skips these passes; a controller runs
    /// them, since its users read the reasons and plans.
    pub fn pass_starts_nothing(&mut self) -> bool {
        self.free_if_pass_may_start().is_none()
    }

    /// The next `schedule`, unless it would start nothing and could be
    /// skipped (`pass_starts_nothing`): whether it was run. The free CPUs
    /// the test counted are the pass's own (nothing changes in between),
    /// so the nodes are swept once instead of twice.
    pub fn schedule_unless_idle(&mut self, now: Timestamp) -> bool {
        match self.free_if_pass_may_start() {
            None => false,
            Some(free) => {
                self.schedule_counted(now, free);
                true
            }
        }
    }

    /// `None` where the next pass would start nothing
    /// (`pass_starts_nothing`); else `Some` of the free CPUs where the test
    /// counted them (`None` within, where it decided without counting).
    /// Where it counts, no job is suspended by preemption and no
    /// dependency is pending, so `schedule_pass` changes no node before it
    /// counts them: the count is the pass's own until the next event.
    fn free_if_pass_may_start(&mut self) -> Option<Option<u32>> {
        if !self.sched_dirty
            || self.full_passes
            || self.whole_queue_pass
            || self.may_resume
            || self.may_depend
            || self.settings.enforce.limits
            || self.settings.preempt.kind != crate::preempt::PreemptType::None
        {
            return Some(None);
        }
        self.refresh_queue();
        // An FCFS pass that stops at its depth arms the pass over the
        // whole queue (`depth_wake`), which lasts: not to be skipped where
        // it could (more jobs wait than it tries) and none is armed yet.
        let cfg = &self.sched_cfg;
        if cfg.policy == sched::Policy::Fcfs
            && self.depth_wake.is_none()
            && self.queue.len() > cfg.default_queue_depth as usize
        {
            return Some(None);
        }
        let free = self.free_cpus();
        self.queue
            .by_demand(..=(i64::from(free), JobId(u32::MAX)))
            .next()
            .map(|_| Some(free))
    }

    /// One scheduling pass: starts every job that fits, sets the reason of
    /// every job that waits. Called after each batch of events.
    ///
    /// When the only change since the last pass is new submissions that
    /// all come after every job that pass tried (in priority order), the
    /// pass tries only the new jobs and the jobs holding a planned start:
    /// nothing came free, so no other waiting job can start now, and the
    /// plans the new jobs must not delay are the ones re-made here.
    pub fn schedule(&mut self, now: Timestamp) {
        self.schedule_counted(now, None);
    }

    /// `schedule`, with the free CPUs where the caller counted them since
    /// the last change.
    fn schedule_counted(&mut self, now: Timestamp, known_free: Option<u32>) {
        if !self.sched_dirty {
            return;
        }
        // The periodic pass over the whole queue (`on_timer`, after an
        // FCFS pass stopped at `default_queue_depth`) tries every job.
        if std::mem::take(&mut self.whole_queue_pass) {
            let depth = self.sched_cfg.default_queue_depth;
            self.sched_cfg.default_queue_depth = u32::MAX;
            self.schedule_pass(now, known_free);
            self.sched_cfg.default_queue_depth = depth;
        } else {
            self.schedule_pass(now, known_free);
        }
    }

    /// `known_free`: the free CPUs where the caller counted them since the
    /// last change (`free_if_pass_may_start`).
    fn schedule_pass(&mut self, now: Timestamp, known_free: Option<u32>) {
        self.sched_dirty = false;
        let fresh = self.fresh.replace(Vec::new());
        if fresh.is_none() {
            // Something other than submissions and job ends happened.
            self.request_cache.clear();
        }
        let freed = std::mem::take(&mut self.freed);
        self.resume_suspended(now);
        let had_dependencies = self.evaluate_dependencies(now);
        // A job end may meet a dependency: every job is looked at then.
        let fresh = fresh.filter(|_| !freed || !had_dependencies);
        let limited = self.limit_blocked();
        // A job a limit held after the last pass that none holds now (a job
        // let through before it then, counted against it, started or not)
        // must be tried: only a pass over every job does.
        let fresh = fresh.filter(|_| !limited.released);
        let free_cpus = match known_free {
            Some(free) => {
                debug_assert_eq!(free, self.free_cpus());
                free
            }
            None => self.free_cpus(),
        };
        let cfg = &self.sched_cfg;
        // FCFS passes are reduced only to a prefix of the queue (below).
        let fcfs = cfg.policy == sched::Policy::Fcfs;
        let may_reduce = cfg.bf_max_job_test.is_none()
            && cfg.bf_max_job_user.is_none()
            && self.settings.preempt.kind == crate::preempt::PreemptType::None
            && self.last_order_key.is_some()
            && !self.full_passes;
        // After job ends, only with one partition and one planned job (the
        // first blocked one), and no limits that an end could lift: see
        // `freed_pass_holds`.
        let one_reservation = match cfg.policy {
            // None at all: the jobs behind the first blocked one wait.
            sched::Policy::Fcfs => true,
            sched::Policy::Easy => true,
            sched::Policy::Backfill => cfg.bf_job_part_count_reserve == Some(1),
        };
        let may_reduce = may_reduce
            && (!(freed || fcfs)
                || (one_reservation && self.parts.len() == 1 && !self.settings.enforce.limits));
        let parts = self.part_views();
        self.refresh_queue();
        // Plans over the pool (`bf_plan=auto`) only where every job the
        // pass may go on with spreads, and no node, preemption or
        // suspended job holds CPUs the pool would count as coming free.
        // Where that changed since the last pass, its plans were made the
        // other way: a pass over every job makes them again.
        let pool_exact = self.queue.all_spread()
            && self.settings.preempt.kind == crate::preempt::PreemptType::None
            && self.preempt_suspended.is_empty()
            && !self.nodes.any_apart();
        let switched = self.sched_cfg.bf_plan == sched::PlanOn::Auto
            && pool_exact != self.pass_cache.pool_exact;
        self.pass_cache.pool_exact = pool_exact;
        let fresh = fresh.filter(|_| may_reduce && !switched);
        // Every first blocked job holds a plan (else the pass would plan
        // the next one, which a pass over new jobs does not try). A pass
        // over a prefix of the queue after job ends checks what it left
        // out instead.
        let heads_planned = self.heads.iter().all(|h| self.plans.contains_key(h));
        let old_heads = if freed {
            self.heads.clone()
        } else {
            Vec::new()
        };
        let mut reduced = false;
        let mut prefix_check = None;
        let mut pass = match fresh {
            // An FCFS pass after submissions alone goes over a prefix too:
            // its jobs behind the first blocked one wait whatever came.
            Some(ids) if freed || fcfs => {
                // Jobs old enough for a plan of their own (bf_age_reserve)
                // are needed too: a full pass plans them wherever they are
                // in the queue (`freed_prefix` tells them on its way).
                let needed = ids
                    .iter()
                    .chain(self.plans.keys())
                    .chain(&self.heads)
                    .copied();
                let mut bufs = std::mem::take(&mut self.prefix_bufs);
                let prefix = self.freed_prefix(needed, &limited, free_cpus, now, &mut bufs);
                let pass = match prefix {
                    Some(check) => {
                        prefix_check = Some(check);
                        let only = bufs.only.iter().copied();
                        Some(self.collect_requests(Some(only), &limited, free_cpus, now))
                    }
                    None if fcfs || !heads_planned => None,
                    None => {
                        let startable = self.startable_waiting(&ids, free_cpus);
                        let aged = self.aged_waiting(now);
                        let pass = self
                            .short_pass(&ids, startable, aged, &parts, &limited, free_cpus, now);
                        reduced = pass.is_some();
                        pass
                    }
                };
                self.prefix_bufs = bufs;
                pass
            }
            Some(ids) if heads_planned => {
                // Older jobs that the CPUs free now could hold: only they
                // could start where the plans made again now leave room.
                let none_startable = self
                    .startable_waiting_iter(&ids, free_cpus)
                    .next()
                    .is_none();
                // Jobs old enough for a plan of their own (bf_age_reserve):
                // a full pass plans them wherever they are in the queue.
                let aged = self.aged_waiting(now);
                if !freed
                    && none_startable
                    && aged.iter().all(|id| self.plans.contains_key(id))
                    && self.fresh_cannot_start(&ids, &parts, &limited, free_cpus, now)
                {
                    // What the pass would decide, without the pass: every
                    // new job waits behind a planned job of its partitions.
                    for id in &ids {
                        self.jobs.tell_reason(id, PendingReason::Priority, now);
                    }
                    return;
                }
                let startable = if self.older_jobs_wait(now) {
                    Vec::new()
                } else {
                    self.startable_waiting(&ids, free_cpus)
                };
                let pass = self.short_pass(&ids, startable, aged, &parts, &limited, free_cpus, now);
                reduced = pass.is_some();
                pass
            }
            _ => None,
        };
        if pass.is_none() {
            pass = Some(self.collect_requests(ALL_JOBS, &limited, free_cpus, now));
        }
        let Pass {
            requests,
            arrays,
            throttled,
            waiting_to_begin,
            optional,
        } = pass.expect("collected");
        self.mark_throttled(throttled);
        self.mark_waiting_to_begin(waiting_to_begin);
        for (id, limit) in &limited.blocked {
            self.jobs.tell_reason(id, PendingReason::Limit(*limit), now);
        }
        self.plans.clear();
        self.heads.clear();
        if requests.is_empty() && optional.is_empty() {
            return;
        }
        let lowest = requests.iter().map(|r| sched::order_key(r, &parts)).max();
        self.last_order_key = self.last_order_key.max(lowest);
        let mut nodes = self.refreshed_node_views();
        self.hold_suspended_shares(&mut nodes);
        // The views the scheduler gets now are those just refreshed.
        self.views_plain = self.preempt_suspended.is_empty();
        if !self.views_plain {
            self.view_hint = None;
        }
        let mut requests = requests;
        let mut plan = if optional.is_empty() {
            // A pass over a prefix goes on over the jobs it left out
            // (`finish_prefix_pass`): the jobs it defers come after them.
            self.pass_cache.hold_deferred = prefix_check.is_some();
            let plan = self.plan_pass(&nodes, &parts, &requests, now);
            self.pass_cache.hold_deferred = false;
            plan
        } else {
            self.walk_pass(&nodes, &parts, &mut requests, &optional, free_cpus, now)
        };
        let mut arrays = arrays;
        let prefix_failed = match &prefix_check {
            Some(check)
                if check.behind_plan(&plan, fcfs, || {
                    self.holders_endless() && self.pending_endless(&limited, now)
                }) =>
            {
                let mut records = ArrayWalk {
                    arrays: &mut arrays,
                    limited: &limited,
                    free_cpus,
                    throttled: Vec::new(),
                };
                self.finish_prefix_pass(
                    check,
                    &mut plan,
                    &mut requests,
                    &nodes,
                    &parts,
                    &mut records,
                    now,
                );
                let throttled = records.throttled;
                self.mark_throttled(throttled);
                // The jobs left out come after every job tried.
                self.last_order_key = self.last_order_key.max(check.max_left_key);
                false
            }
            Some(_) => true,
            None => false,
        };
        if prefix_failed || (reduced && freed && !freed_pass_holds(&plan, &old_heads)) {
            // A first blocked job started (or lost its plan): the next one
            // in line, which this pass did not try, may need a plan. Look
            // at every job.
            let Pass {
                requests: all,
                arrays: all_arrays,
                throttled,
                waiting_to_begin,
                ..
            } = self.collect_requests(ALL_JOBS, &limited, free_cpus, now);
            self.mark_throttled(throttled);
            self.mark_waiting_to_begin(waiting_to_begin);
            requests = all;
            arrays = all_arrays;
            let lowest = requests.iter().map(|r| sched::order_key(r, &parts)).max();
            self.last_order_key = self.last_order_key.max(lowest);
            plan = self.plan_pass(&nodes, &parts, &requests, now);
        }
        self.node_view_cache = nodes;
        self.view_hint = None;
        if plan.depth_reached && self.depth_wake.is_none() {
            // Slurm tries the whole queue every sched_interval.
            self.depth_wake = Some(now + i64::from(self.sched_cfg.sched_interval.max(1)));
        }
        self.plans = plan.planned;
        for (id, minutes) in plan.time_limits {
            // --time-min: it starts with the limit that fits the gap.
            if let Some(job) = self.jobs.get_mut(&id) {
                job.time_limit = TimeLimit::Minutes(minutes);
            }
        }
        self.heads = self.first_blocked(&plan.decisions, &arrays, parts.len());
        let preemptors = self.preemptors(&plan.decisions, &requests);
        for (id, decision) in plan.decisions {
            let starting = matches!(decision, Decision::Start(_));
            let Some(id) = self.array_decision_target(id, &arrays, starting, now) else {
                continue;
            };
            match decision {
                Decision::Start(alloc) => self.start_job(id, alloc, now),
                Decision::Wait(reason) => self.jobs.tell_reason(&id, reason, now),
            }
        }
        self.preempt_pass(&preemptors, now);
    }

    /// The scheduler's pass over `requests`, given the running jobs that
    /// changed since the last pass (`running_changed`) where nothing else
    /// could have changed since (no `touch` but for plain job ends) and the
    /// pass cache kept the others (`sched::plan_with_changes`), else every
    /// running job.
    fn plan_pass(
        &mut self,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        requests: &[JobRequest],
        now: Timestamp,
    ) -> sched::Plan {
        let mut view = sched::ClusterView {
            nodes,
            parts,
            jobs: requests,
            running: &[],
        };
        // The partitions never change (`Engine::new`); the nodes that did
        // since the last pass are known. Later passes over the same views
        // (the same `schedule_pass`) change none.
        if let Some(changed) = self.view_hint.replace(Vec::new()) {
            self.pass_cache.views_differ_only_on(changed);
        }
        if !self.running_all && !self.full_passes {
            let mut changed = Vec::new();
            let mut gone = Vec::new();
            for id in &self.running_changed {
                let view = self
                    .holding
                    .get(id)
                    .and_then(|v| running_view(self.jobs.get(id)?, *v, now));
                match view {
                    Some(r) => changed.push(r),
                    None => gone.push(*id),
                }
            }
            let cfg = &self.sched_cfg;
            let cache = &mut self.pass_cache;
            if let Some(plan) = sched::plan_with_changes(&view, &changed, &gone, cfg, now, cache) {
                self.running_changed.clear();
                return plan;
            }
        }
        let running = running_views(&self.jobs, &self.holding, now);
        view.running = &running;
        let plan = sched::plan_with(&view, &self.sched_cfg, now, &mut self.pass_cache);
        self.running_changed.clear();
        self.running_all = false;
        plan
    }

    /// Gives jobs whose begin time is still ahead their reason.
    fn mark_waiting_to_begin(&mut self, ids: Vec<JobId>) {
        for id in ids {
            if let Some(job) = self.jobs.get_mut(&id) {
                job.reason = PendingReason::BeginTime;
            }
        }
    }

    /// Ends a pass over a prefix of the queue (`freed_prefix`) whose
    /// blocked, planned job keeps the jobs it left out behind it
    /// (`PrefixCheck::behind_plan`): the pass goes on in order over the
    /// ones that must be tried and those that could use the CPUs left
    /// (`walk`), so that it decides what a pass over every job decides.
    #[allow(clippy::too_many_arguments)]
    fn finish_prefix_pass(
        &mut self,
        check: &PrefixCheck,
        plan: &mut sched::Plan,
        requests: &mut Vec<JobRequest>,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        records: &mut ArrayWalk,
        now: Timestamp,
    ) {
        let left = i64::from(records.free_cpus) - started_cpus(plan);
        // Under FCFS every job left out is behind the blocked one: only
        // those that must be tried are (their reasons may change).
        let fcfs = self.sched_cfg.policy == sched::Policy::Fcfs;
        let shortest = self.sched_cfg.policy == sched::Policy::Backfill
            && self.sched_cfg.bf_order == sched::BackfillOrder::Shortest;
        // With one partition (`freed_prefix`'s), settled already, and
        // `bf_order=shortest`, the walk defers every job that may be left
        // out without a look: it reads them from the queue by time limit
        // (`Queue::by_limit`) only once it tries them, as far as the CPUs
        // left go (`LazyLeftOut`). Otherwise they are read here in order.
        let lazy = !fcfs
            && shortest
            && self.parts.len() == 1
            && self.pass_cache.settled_parts(&self.sched_cfg) & 1 != 0;
        let read;
        let left_out = if fcfs || lazy {
            &check.left_out
        } else {
            let aged = self.aged_test(now);
            read = self
                .queue
                .in_order_after(check.last_taken)
                .filter_map(|q| {
                    self.left_out_fact(q, &check.needed, aged.as_ref(), records.limited, now)
                })
                .filter(|c| c.3 || c.2 <= left)
                .collect::<Vec<_>>();
            &read
        };
        // Sized for all of them at once (grown, a deep queue's would be
        // copied over and over).
        let mut entries: Vec<Walked> = Vec::with_capacity(left_out.len());
        entries.extend(
            left_out
                .iter()
                .filter(|c| c.3 || (!fcfs && c.2 <= left))
                .map(|&(key, id, demand, must, parts, limit)| {
                    (
                        key,
                        id,
                        demand,
                        if must {
                            Try::Must
                        } else {
                            Try::Optional(parts, limit)
                        },
                    )
                }),
        );
        // `left_out` is in order already (`freed_prefix`).
        debug_assert!(entries
            .windows(2)
            .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        // The prefix's jobs its pass deferred, tried after the others.
        let held: Vec<Walked> = self
            .pass_cache
            .take_deferred()
            .into_iter()
            .map(|i| {
                let r = &requests[i];
                let key = sched::order_key(r, parts);
                (key, r.job_id, sched::demand_cpus(r), Try::Given(i))
            })
            .collect();
        let must: Vec<JobId> = {
            let mut ids: Vec<JobId> = entries.iter().map(|e| e.1).collect();
            ids.sort_unstable();
            ids
        };
        let lazy = lazy.then_some(LazyLeftOut {
            after: check.last_taken,
            must,
            now,
        });
        let mut more = Vec::new();
        self.walk(
            &entries,
            held,
            plan,
            requests,
            &mut more,
            nodes,
            parts,
            left,
            Some(records),
            lazy,
        );
        requests.append(&mut more);
    }

    /// A pass over `requests` (which it must try) and the jobs `optional`
    /// (which it may leave out), in order (`walk`), from an empty one:
    /// what a pass over all of them decides.
    fn walk_pass(
        &mut self,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        requests: &mut Vec<JobRequest>,
        optional: &[Optional],
        free_cpus: u32,
        now: Timestamp,
    ) -> sched::Plan {
        let mut entries: Vec<Walked> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let key = sched::order_key(r, parts);
                (key, r.job_id, sched::demand_cpus(r), Try::Given(i))
            })
            .chain(optional.iter().map(|&(key, id, demand, parts, limit)| {
                (key, id, demand, Try::Optional(parts, limit))
            }))
            .collect();
        entries.sort_unstable_by_key(|e| (e.0, e.1));
        let mut plan = self.plan_pass(nodes, parts, &[], now);
        let mut more = Vec::new();
        self.walk(
            &entries,
            Vec::new(),
            &mut plan,
            requests,
            &mut more,
            nodes,
            parts,
            i64::from(free_cpus),
            None,
            None,
        );
        requests.append(&mut more);
        plan
    }

    /// Goes on with the pass last made (`sched::plan_more`) over
    /// `entries`, in order: those that must be tried (`Try::Given`, the
    /// request at that index of `requests`, or `Try::Must`), and those
    /// that may be left out (`Try::Optional`) where they would wait behind
    /// a planned job with reason Priority (`PassCache::settled`) because
    /// they cannot start: they need more CPUs than are left (`left`, free
    /// CPUs less those the pass started), or a job of the pass with their
    /// spread shape, no more tasks and no longer a limit could not start
    /// (`PassCache::cannot_start_as`; the nodes only fill up further along
    /// a pass). Those keep their decision to wait, and their last
    /// evaluation time, without being tried. The jobs the pass defers
    /// (`PassCache::defers`, `bf_order=shortest`), and `held` (the ones
    /// the pass itself deferred), are tried after the others, by time
    /// limit and then in order, as a full pass tries them. Where
    /// preemption is configured, the requests of the jobs it tries that
    /// `requests` does not hold go to `more` (for `preemptors`); their
    /// decisions, plans and limits go to `plan`. An array's pending
    /// record that must be tried is tried as a full pass tries it, as one
    /// request per task that could start (`records`; their requests go to
    /// `more`).
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        entries: &[Walked],
        held: Vec<Walked>,
        plan: &mut sched::Plan,
        requests: &[JobRequest],
        more: &mut Vec<JobRequest>,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        mut left: i64,
        mut records: Option<&mut ArrayWalk>,
        lazy: Option<LazyLeftOut>,
    ) {
        // The queue, read by `lazy` while the walk changes the engine (it
        // does not change the queue).
        let queue = match lazy {
            Some(_) => std::mem::take(&mut self.queue),
            None => crate::queue::Queue::default(),
        };
        let least = queue.least_demand();
        let limited = records.as_ref().map(|r| r.limited);
        // The most CPUs a job read by limit may ask for and not be left
        // out at once (the loop below would leave it out: settled, and
        // more than are left or than one that could not start): set before
        // each read, tested first, so that most jobs read cost one compare.
        let read_up_to = std::cell::Cell::new(i64::MAX);
        let mut lazy_jobs = lazy.as_ref().map(|l| {
            let after = |q: &crate::queue::Queued| l.after.is_none_or(|a| q.key > a);
            let read_up_to = &read_up_to;
            queue
                .by_limit()
                .filter(move |q| {
                    q.demand <= read_up_to.get()
                        && !q.array
                        && q.by_priority
                        && q.ready(l.now)
                        && after(q)
                        && l.must.binary_search(&q.id()).is_err()
                })
                .peekable()
        });
        // The partitions where the pass has settled that later jobs wait,
        // as of the last job tried.
        let mut settled_parts = self.pass_cache.settled_parts(&self.sched_cfg);
        let keep_requests = self.settings.preempt.kind != crate::preempt::PreemptType::None;
        let shortest = self.sched_cfg.policy == sched::Policy::Backfill
            && self.sched_cfg.bf_order == sched::BackfillOrder::Shortest;
        // In a pass over the pool where every pending job spreads
        // (`bf_plan=auto`), whether a job can start now depends only on
        // its CPUs and its limit, and the free CPUs less the plans' only
        // fall along the pass: once the jobs tried by limit (after the
        // others) reach one that could not start, no later one that asks
        // for as many CPUs can (`failed_demand`), and the reading by limit
        // stops once that is the least any pending job asks.
        let pool_spread = self.sched_cfg.bf_plan == sched::PlanOn::Auto
            && self.pass_cache.pool_exact
            && self.pass_cache.last_pooled();
        let mut failed_demand = i64::MAX;
        // The deferred jobs in order (the prefix's come before the jobs it
        // left out), and (time limit, place there) to sort them by: small
        // keys sort faster than whole entries (a queue of 100,000 jobs
        // puts most of them aside), and they are borrowed, not copied.
        let most = held.len() + entries.len();
        let mut deferred: Vec<&Walked> = Vec::with_capacity(most);
        deferred.extend(&held);
        let mut later: Vec<(i64, u32)> = Vec::with_capacity(most);
        later.extend(deferred.iter().enumerate().map(|(k, e)| match e.3 {
            Try::Given(i) => (sched::limit_secs(requests[i].time_limit), k as u32),
            _ => unreachable!("held jobs are the pass's own"),
        }));
        let (mut at, mut deferring) = (0, true);
        loop {
            let (entry, entry_ref) = if deferring {
                if let Some(e) = entries.get(at) {
                    at += 1;
                    (*e, Some(e))
                } else {
                    deferring = false;
                    // Those that may be left out and need more CPUs than
                    // are left would be left out below: CPUs only get
                    // fewer, and where the pass settled it stays settled.
                    debug_assert!(deferred
                        .windows(2)
                        .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
                    later.retain(|&(_, k)| {
                        let e = &deferred[k as usize];
                        !matches!(e.3, Try::Optional(..)) || e.2 <= left
                    });
                    sort_by_limit(&mut later);
                    at = 0;
                    continue;
                }
            } else {
                // The jobs left out that may be, read from the queue by
                // time limit, merged with the deferred ones; none is tried
                // once no job may use the CPUs left (each that may be left
                // out is settled: `finish_prefix_pass`).
                if lazy_jobs.is_some()
                    && settled_parts & 1 != 0
                    && least.is_none_or(|d| left < d || failed_demand <= d)
                {
                    lazy_jobs = None;
                }
                read_up_to.set(if settled_parts & 1 != 0 {
                    left.min(failed_demand.saturating_sub(1))
                } else {
                    i64::MAX
                });
                let next_lazy = lazy_jobs
                    .as_mut()
                    .and_then(|j| j.peek())
                    .map(|q| (sched::limit_secs(q.limit), q.key));
                let next_later = later
                    .get(at)
                    .map(|&(limit, k)| (limit, deferred[k as usize].0));
                match (next_lazy, next_later) {
                    (Some(l), d) if d.is_none_or(|d| l < d) => {
                        let q = lazy_jobs.as_mut().and_then(|j| j.next()).expect("peeked");
                        let may = limited.is_some_and(|l| {
                            !l.blocked.contains_key(&q.id())
                                && !self.preemptor_waits(q.preempted_by)
                        });
                        if !may {
                            continue;
                        }
                        debug_assert_eq!(q.mask(), Some(1));
                        let how = Try::Optional(q.mask(), l.0);
                        ((q.key, q.id(), q.demand, how), None)
                    }
                    (_, Some(_)) => {
                        let e = deferred[later[at].1 as usize];
                        at += 1;
                        (*e, None)
                    }
                    _ => break,
                }
            };
            let (_, id, demand, how) = entry;
            let req = match how {
                Try::Given(i) => &requests[i],
                Try::Must | Try::Optional(..) => {
                    let settled = match how {
                        Try::Optional(Some(mask), _) => mask != 0 && mask & !settled_parts == 0,
                        Try::Optional(None, _) => match self.jobs.get(&id) {
                            Some(job) => self.pass_cache.settled(&job.partitions, &self.sched_cfg),
                            None => continue,
                        },
                        _ => false,
                    };
                    if settled && (demand > left || (!deferring && demand >= failed_demand)) {
                        continue;
                    }
                    // Where the pass has settled, a job that may be left
                    // out (never one due for a plan of its own) is one the
                    // pass defers: put aside without a look at it.
                    if let Try::Optional(_, limit) = how {
                        if deferring && settled && shortest {
                            debug_assert!(self.jobs.get(&id).is_none_or(|j| self
                                .pass_cache
                                .defers(&self.request_for(j), &self.sched_cfg)));
                            later.push((limit, deferred.len() as u32));
                            deferred.push(entry_ref.expect("read in order"));
                            continue;
                        }
                    }
                    let kept = match self.request_cache.get(&id) {
                        Some(kept) => {
                            debug_assert_eq!(
                                Some(&*kept.req),
                                self.jobs.get(&id).map(|j| self.request_for(j)).as_ref(),
                                "kept request of {id}"
                            );
                            kept
                        }
                        None => {
                            let Some(job) = self.jobs.get(&id) else {
                                continue;
                            };
                            let req = self.request_for(job);
                            let probe = self.pass_cache.probe(&req);
                            let kept = crate::KeptRequest {
                                req: Box::new(req),
                                probe,
                            };
                            self.request_cache.entry(id).or_insert(kept)
                        }
                    };
                    if settled && self.pass_cache.cannot_start_as(&kept.probe) {
                        if pool_spread && !deferring {
                            failed_demand = failed_demand.min(demand);
                        }
                        continue;
                    }
                    &kept.req
                }
            };
            if deferring && self.pass_cache.defers(req, &self.sched_cfg) {
                later.push((sched::limit_secs(req.time_limit), deferred.len() as u32));
                deferred.push(entry_ref.expect("read in order"));
                continue;
            }
            let record = match (how, records.as_deref_mut()) {
                (Try::Must, Some(records)) => self
                    .jobs
                    .get(&id)
                    .filter(|j| j.array.as_ref().is_some_and(|a| a.is_meta()))
                    .map(|j| (&**j, records)),
                _ => None,
            };
            if let Some((job, records)) = record {
                // As a full pass does (`collect_requests`): a request for
                // each task that could start now, each standing for the
                // next task.
                let room = records.limited.array_room.get(&id).copied();
                let mut tasks = Vec::new();
                if !self.push_array_requests(
                    job,
                    records.free_cpus,
                    room,
                    &mut tasks,
                    records.arrays,
                ) {
                    records.throttled.push(id);
                    continue;
                }
                for task in tasks {
                    more.push(task);
                    let task = &more[more.len() - 1];
                    let cache = &mut self.pass_cache;
                    if let Some(started) =
                        decide_more(cache, &self.sched_cfg, task, nodes, parts, plan)
                    {
                        left -= started;
                    }
                }
                settled_parts = self.pass_cache.settled_parts(&self.sched_cfg);
                continue;
            }
            // The pass's requests are read after it only to look for
            // preemptors: without preemption a kept request is tried
            // where it is.
            let req = match how {
                Try::Must | Try::Optional(..) if keep_requests => {
                    more.push(req.clone());
                    &more[more.len() - 1]
                }
                _ => req,
            };
            let cache = &mut self.pass_cache;
            match decide_more(cache, &self.sched_cfg, req, nodes, parts, plan) {
                Some(started) => {
                    settled_parts = self.pass_cache.settled_parts(&self.sched_cfg);
                    left -= started;
                }
                // Tried by limit, it could not start (no plan is made there).
                None if pool_spread && !deferring => failed_demand = failed_demand.min(demand),
                None => {}
            }
        }
        drop(lazy_jobs);
        if lazy.is_some() {
            self.queue = queue;
        }
    }

    /// Whether a pass may leave the job of `q` out where it would only
    /// wait: a plain pending job (no array) that a pass would try (not
    /// held, not waiting for a dependency, its begin time, a limit or a
    /// preemptor), already waiting for Priority.
    fn leavable(
        &self,
        q: &crate::queue::Queued,
        limited: &crate::limits::LimitCheck,
        now: Timestamp,
    ) -> bool {
        q.ready(now) && self.may_try(q, limited) && !q.array && q.by_priority
    }

    /// Whether neither a limit nor a preemptor it waits for keeps the
    /// pending job of `q` from a pass.
    fn may_try(&self, q: &crate::queue::Queued, limited: &crate::limits::LimitCheck) -> bool {
        !limited.blocked.contains_key(&q.id()) && !self.preemptor_waits(q.preempted_by)
    }

    /// The requests of a short pass: the new jobs `ids`, the planned and
    /// first blocked ones, and `startable` and `aged` (older jobs that
    /// could use the free CPUs, or are due for a plan of their own); `None`
    /// unless every new job comes after every job the last pass tried.
    #[allow(clippy::too_many_arguments)]
    fn short_pass(
        &self,
        ids: &[JobId],
        startable: Vec<&crate::queue::Queued>,
        aged: Vec<JobId>,
        parts: &[sched::PartView],
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
    ) -> Option<Pass> {
        let mut only: std::collections::BTreeSet<JobId> = ids.iter().copied().collect();
        only.extend(self.plans.keys().copied());
        only.extend(self.heads.iter().copied());
        only.extend(aged);
        // The older jobs that could use the free CPUs are tried only where
        // the pass has not shown they would wait (`walk_pass`), those that
        // a pass may leave out (plain ones waiting for Priority).
        let mut optional = Vec::new();
        for q in startable {
            if !self.walk_passes_off && !only.contains(&q.id()) && self.leavable(q, limited, now) {
                optional.push((
                    q.key,
                    q.id(),
                    q.demand,
                    q.mask(),
                    sched::limit_secs(q.limit),
                ));
            } else {
                only.insert(q.id());
            }
        }
        let mut pass = self.collect_requests(Some(only.iter().copied()), limited, free_cpus, now);
        pass.optional = optional;
        let last = self.last_order_key;
        let after = pass
            .requests
            .iter()
            .filter(|r| ids.contains(&r.job_id))
            .all(|r| Some(sched::order_key(r, parts)) > last);
        after.then_some(pass)
    }

    /// Whether, in a pass after submissions alone (nothing else since the
    /// last pass: no job ended, nothing was touched), the older jobs that
    /// need no more CPUs than are free cannot start either, so that the
    /// pass need not try them: where the last pass planned over the pool
    /// (`sched::PassCache::last_pooled`; this one does too, since
    /// `pool_exact` did not change, else it would go over every job), no
    /// job is ending (`may_complete`: a job being ended is expected gone a
    /// second after each pass, which moves its CPUs with the clock) and no
    /// running job has reached its time limit (the deadline index's first
    /// is later). Then no running job's expected end lies between the
    /// last pass and now (it would have ended or been ended), so neither
    /// does any plan's start (each starts at such an end or at another
    /// plan's end), and the free CPUs less the plans' stayed what they are
    /// now from the last pass to now. An older job that could not start
    /// then (or was shown so: `cannot_start_as`) found fewer CPUs than its
    /// own at some time of its run; as it needs no more than are free, that
    /// time is after now and within its run from now too; the new jobs,
    /// which come after it, only take CPUs away. (Jobs due for a plan of
    /// their own are tried all the same: `aged_waiting`.)
    fn older_jobs_wait(&mut self, now: Timestamp) -> bool {
        if self.may_complete || !self.pass_cache.last_pooled() {
            return false;
        }
        self.sync_deadlines();
        self.deadlines.first().is_none_or(|t| t > now)
    }

    /// Whether a pass could only tell the new jobs `ids` to wait, with
    /// reason Priority, and leave everything else as the last pass left it:
    /// each comes after every job the last pass tried, needs more CPUs than
    /// are free, and each of its partitions already has as many planned
    /// jobs as the policy plans (so it gets no plan of its own); every node
    /// is up (so it waits on busy nodes, not on down ones); every plan
    /// starts after `now` (so a pass would make each again as it is).
    fn fresh_cannot_start(
        &mut self,
        ids: &[JobId],
        parts: &[sched::PartView],
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
    ) -> bool {
        let reserve = match self.sched_cfg.policy {
            sched::Policy::Fcfs => return false,
            sched::Policy::Easy => 1,
            sched::Policy::Backfill => match self.sched_cfg.bf_job_part_count_reserve {
                Some(m) => m.max(1) as usize,
                None => return false,
            },
        };
        if ids.is_empty() || !self.nodes.iter().all(|n| n.takes_jobs()) {
            return false;
        }
        let mut planned = vec![0usize; parts.len()];
        for p in self.plans.values() {
            // A plan that starts by now was made from holds that time
            // moves: a job ending (completing, or past its limit) is
            // expected to be gone a second after each pass. A later plan
            // stays what a pass would make again: the holds that moved
            // are gone by its start either way.
            if p.start <= now {
                return false;
            }
            if let Some(c) = planned.get_mut(p.alloc.partition) {
                *c += 1;
            }
        }
        let mut last = self.last_order_key;
        for id in ids {
            let Some(job) = self.jobs.get(id) else {
                return false;
            };
            let plain = job.state == JobState::Pending
                && !job.completing
                && job.held.is_none()
                && job.dep_status == crate::DepStatus::Clear
                && job.desc.begin_time.is_none_or(|b| b <= now)
                && !limited.blocked.contains_key(id)
                && job.array.is_none()
                && job.preempted_by.is_none();
            if !plain {
                return false;
            }
            let req = self.request_for(job);
            let key = sched::order_key(&req, parts);
            let blocked = req.partitions.iter().all(|p| {
                planned.get(*p).is_some_and(|c| *c >= reserve)
                    && sched::placement::partition_refusal(&req, &parts[*p]).is_none()
            });
            if Some(key) <= last || sched::demand_cpus(&req) <= i64::from(free_cpus) || !blocked {
                return false;
            }
            last = Some(key);
        }
        self.last_order_key = last;
        true
    }

    /// Brings `queue` up to date with the jobs changed since a pass last
    /// read it (and with the partitions, when they changed).
    pub(crate) fn refresh_queue(&mut self) {
        let tiers = self.parts.iter().map(|p| p.conf.priority_tier);
        let sizes = self.part_sizes.iter().copied();
        let consumable = self.settings.memory_consumable;
        // What a job that asks for no memory gets (`mem_request`).
        let no_mem = self.parts.iter().map(|p| {
            !consumable
                && p.conf
                    .def_mem_per_cpu
                    .or(self.settings.def_mem_per_cpu)
                    .is_none()
                && self.settings.def_mem_per_node.is_none_or(|m| m == 0)
        });
        // Compared where they are: built only when they changed.
        let same = self
            .queue
            .has_setting(tiers.clone(), sizes.clone(), consumable, no_mem.clone());
        let setting = (!same).then(|| crate::queue::Setting {
            tiers: tiers.collect(),
            sizes: sizes.collect(),
            memory_consumable: consumable,
            no_mem_spreads: no_mem.collect(),
        });
        self.queue.update(&mut self.jobs, setting);
    }

    /// After job ends (and submissions) only, or under FCFS after
    /// submissions alone, with one partition and the policy's one plan per
    /// partition (none under FCFS): the jobs a pass must try first so
    /// that, gone on with by `finish_prefix_pass`, it decides what a pass
    /// over every job decides. They are the first jobs of the queue in the
    /// order the pass tries jobs, as many as could use the free CPUs, and
    /// one beyond (the next first blocked job). The others are left out
    /// (`PrefixCheck::left_out`), those that must be tried all the same
    /// marked: `needed` (new jobs, planned ones, first blocked ones), the
    /// aged ones (`aged_test`) and the jobs that may not be left out
    /// (arrays, jobs whose reason is not Priority). A pass takes jobs in
    /// that order and a job's decision depends only on the jobs before it,
    /// so the prefix is decided as in a full pass. Only pending jobs a
    /// full pass would try count: held ones, ones waiting on a dependency,
    /// a limit or a preemptor are left out by both; ones waiting for their
    /// begin time are given to the pass (they get no decision). `None`
    /// when no job would be left out. Under FCFS the jobs that may be left
    /// out are never tried after the prefix (every one is behind its
    /// blocked job), so the queue is not walked past the prefix: the jobs
    /// that must be tried are found among `needed` and the queue's notable
    /// ones (`Queue::notable_after`), and the queue's length stands for
    /// the number left out; an FCFS pass over a deep queue then costs what
    /// its head costs, not what its whole queue does.
    fn freed_prefix(
        &self,
        needed: impl Iterator<Item = JobId>,
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
        bufs: &mut PrefixBufs,
    ) -> Option<PrefixCheck> {
        if self.prefix_passes_off {
            return None;
        }
        // Sorted, each once: read by binary search, and in id order.
        let PrefixBufs {
            needed: needed_buf,
            only,
            taken,
        } = bufs;
        needed_buf.clear();
        needed_buf.extend(needed);
        needed_buf.sort_unstable();
        needed_buf.dedup();
        let needed: &[JobId] = needed_buf;
        only.clear();
        taken.clear();
        let aged = self.aged_test(now);
        // Under FCFS the jobs left out that may be (`finish_prefix_pass`)
        // are never tried: past the prefix only the notable ones are
        // looked at (`Queue::notable_after`), not the whole queue.
        let fcfs = self.sched_cfg.policy == sched::Policy::Fcfs;
        taken.reserve(self.queue.len().min(free_cpus as usize + 2));
        // Past the prefix, only the jobs that must be tried are gathered
        // here; `finish_prefix_pass` reads the others it may try from the
        // queue.
        let mut rest: Vec<LeftOut> = Vec::new();
        // The first jobs in order, as many as the free CPUs could hold and
        // one beyond (each job needs a CPU at least: this many are enough):
        // `taken` once `prefix_done`.
        let free = i64::from(free_cpus);
        let (mut demand, mut prefix_done) = (0, false);
        let candidate = |q: &crate::queue::Queued, only: &mut Vec<JobId>| {
            let c = self.left_out_fact(q, needed, aged.as_ref(), limited, now);
            let ahead = q.begin().is_some_and(|b| b > now) && q.free && q.dep_clear;
            if c.is_none() && ahead && self.may_try(q, limited) {
                only.push(q.id());
            }
            c
        };
        // In the order a pass tries jobs (`left_out` must be, for
        // `finish_prefix_pass`).
        let mut n_prefix = 0;
        for q in self.queue.in_order() {
            n_prefix += 1;
            let Some(c) = candidate(q, only) else {
                continue;
            };
            let beyond = demand > free;
            demand += c.2;
            taken.push(c);
            prefix_done = beyond || taken.len() >= free_cpus as usize + 2;
            if prefix_done {
                break;
            }
        }
        let last = taken.last().map(|c| (c.0, c.1));
        // The jobs past the prefix a full pass would try (`n_rest`, as
        // many as decide whether the prefix pass is worth it) and the last
        // of them, counted from the queue's end.
        let (mut n_rest, mut rest_max) = (0, None);
        if prefix_done && !fcfs {
            let after = self
                .queue
                .in_order_back()
                .take(self.queue.len() - n_prefix)
                .filter(|q| q.ready(now) && self.may_try(q, limited));
            for q in after.take(self.prefix_min_left_out.max(1)) {
                rest_max = rest_max.max(Some(q.key));
                n_rest += 1;
            }
        }
        if prefix_done {
            // Those that must be tried: notable or needed, after the prefix.
            let after = |q: &&crate::queue::Queued| last.is_none_or(|l| (q.key, q.id()) > l);
            let notable = self.queue.notable_after(last.map(|l| l.0));
            // Jobs due for a plan of their own must be tried too.
            let aged_ids = if aged.is_some() {
                self.aged_waiting(now)
            } else {
                Vec::new()
            };
            let wanted = needed
                .iter()
                .chain(&aged_ids)
                .filter_map(|id| self.queue.get(*id));
            let mut picked: Vec<&crate::queue::Queued> =
                notable.chain(wanted).filter(after).collect();
            picked.sort_unstable_by_key(|q| (q.key, q.id()));
            picked.dedup_by_key(|q| (q.key, q.id()));
            rest.extend(
                picked
                    .into_iter()
                    .filter_map(|q| candidate(q, only))
                    .filter(|c| c.3),
            );
        }
        let max_left_key = if fcfs && prefix_done {
            // The last job a full pass would try, when it is left out.
            self.queue
                .in_order_back()
                .find(|q| q.ready(now) && self.may_try(q, limited))
                .map(|q| q.key)
                .filter(|k| last.is_none_or(|l| *k > l.0))
        } else {
            rest_max
        };
        // Leaving out a few jobs saves little, and when the check fails
        // the pass is made twice: only a long queue's tail is worth it
        // (under FCFS, where the tail is not walked, the queue's length
        // stands for it).
        let left_out = if fcfs && prefix_done {
            self.queue.len().saturating_sub(taken.len())
        } else {
            n_rest
        };
        if left_out < self.prefix_min_left_out.max(1) {
            return None;
        }
        only.extend(taken.iter().map(|c| c.1));
        only.sort_unstable();
        only.dedup();
        let check = PrefixCheck {
            max_left_key,
            last_taken: last.map(|l| l.0),
            needed: needed.to_vec(),
            left_out: rest,
        };
        Some(check)
    }

    /// What a pass over a prefix of the queue notes of the job of `q`
    /// where it leaves it out (`freed_prefix`): `None` where a full pass
    /// would not try it (completing, held, waiting for a dependency, its
    /// begin time, a limit or a preemptor).
    fn left_out_fact(
        &self,
        q: &crate::queue::Queued,
        needed: &[JobId],
        aged: Option<&impl Fn(&crate::queue::Queued) -> bool>,
        limited: &crate::limits::LimitCheck,
        now: Timestamp,
    ) -> Option<LeftOut> {
        if !q.ready(now) || !self.may_try(q, limited) {
            return None;
        }
        let leavable = !q.array && q.by_priority;
        let must = !leavable || needed.binary_search(&q.id()).is_ok() || aged.is_some_and(|a| a(q));
        Some((
            q.key,
            q.id(),
            q.demand,
            must,
            q.mask(),
            sched::limit_secs(q.limit),
        ))
    }

    /// Whether no pending job a full pass would try has a time limit (nor
    /// a --time-min) (`PrefixCheck::behind_plan`).
    fn pending_endless(&self, limited: &crate::limits::LimitCheck, now: Timestamp) -> bool {
        self.queue
            .in_order()
            .filter(|q| q.ready(now) && self.may_try(q, limited))
            .all(|q| q.endless)
    }

    /// Whether no job holding resources will end by itself: each runs
    /// without a time limit and is not completing.
    fn holders_endless(&self) -> bool {
        self.holding.keys().all(|id| {
            self.jobs.get(id).is_some_and(|j| {
                j.state == JobState::Running && !j.completing && j.limit_end().is_none()
            })
        })
    }

    /// The facts of pending jobs other than `fresh` that need no more CPUs than `free`
    /// (`sched::demand_cpus` of their request; array records always),
    /// neither completing nor held: the only older jobs a pass after
    /// submissions could start.
    fn startable_waiting<'a>(
        &'a self,
        fresh: &'a [JobId],
        free: u32,
    ) -> Vec<&'a crate::queue::Queued> {
        self.startable_waiting_iter(fresh, free).collect()
    }

    /// `startable_waiting`, not collected.
    fn startable_waiting_iter<'a>(
        &'a self,
        fresh: &'a [JobId],
        free: u32,
    ) -> impl Iterator<Item = &'a crate::queue::Queued> {
        self.queue
            .by_demand(..=(i64::from(free), JobId(u32::MAX)))
            .filter(move |q| !fresh.contains(&q.id()))
    }

    /// Pending jobs, neither completing nor held, that have waited at
    /// least `bf_age_reserve` or are due by `bf_slowdown_reserve` (none
    /// when both are off): a pass plans each of them, wherever it is in
    /// the queue.
    fn aged_waiting(&self, now: Timestamp) -> Vec<JobId> {
        let cfg = &self.sched_cfg;
        let Some(aged) = self.aged_test(now) else {
            return Vec::new();
        };
        // By slowdown alone, only jobs asking for at least the width of
        // some partition (CPUs, or nodes for whole-node jobs) can be due;
        // array records (key MIN) are looked at whatever they ask.
        let least = if cfg.bf_age_reserve.is_some() {
            i64::MIN
        } else {
            // The queue's sizes: made for this pass by `refresh_queue`.
            let smallest = self
                .queue
                .sizes()
                .iter()
                .map(|p| p.cpus.min(p.nodes))
                .min()
                .unwrap_or(0);
            smallest.saturating_mul(i64::from(cfg.bf_slowdown_reserve_width)) / 100
        };
        let arrays = self
            .queue
            .by_demand((i64::MIN, JobId(0))..=(i64::MIN, JobId(u32::MAX)));
        let others = self.queue.by_demand((least.max(i64::MIN + 1), JobId(0))..);
        arrays
            .chain(others)
            .filter(|q| aged(q))
            .map(|q| q.id())
            .collect()
    }

    /// Whether a pending job has waited long enough for a plan of its own
    /// (`aged_waiting`), from its facts in the queue; `None` when no
    /// setting gives such plans.
    fn aged_test(&self, now: Timestamp) -> Option<impl Fn(&crate::queue::Queued) -> bool + '_> {
        let cfg = &self.sched_cfg;
        // Only backfill plans a job for its age (FCFS plans none, EASY
        // only the first blocked one).
        if cfg.policy != sched::Policy::Backfill
            || cfg.bf_age_reserve.is_none() && cfg.bf_slowdown_reserve.is_none()
        {
            return None;
        }
        Some(move |q: &crate::queue::Queued| {
            sched::due_reservation(cfg, q.submit(), q.limit, || q.share, now)
        })
    }

    /// The requests of the pending jobs that may run now (of `only`, when
    /// given), and what the pass must tell the others.
    fn collect_requests(
        &self,
        only: Option<impl ExactSizeIterator<Item = JobId>>,
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
    ) -> Pass {
        let mut pass = Pass::default();
        let jobs: Box<dyn Iterator<Item = &Job>> = match only {
            Some(ids) => {
                // Room for all at once: the list grows by moving requests.
                pass.requests.reserve(ids.len());
                Box::new(ids.filter_map(|id| self.jobs.get(&id).map(|j| &**j)))
            }
            None => {
                // Every pending job, arrays' tasks aside.
                pass.requests.reserve(self.queue.len());
                Box::new(self.jobs.values().map(|j| &**j))
            }
        };
        for job in jobs {
            if job.state != JobState::Pending || job.completing || job.held.is_some() {
                continue;
            }
            if job.dep_status != crate::DepStatus::Clear {
                continue;
            }
            if job.desc.begin_time.is_some_and(|b| b > now) {
                pass.waiting_to_begin.push(job.id);
                continue;
            }
            if limited.blocked.contains_key(&job.id) || self.waits_for_preemptor(job) {
                continue;
            }
            if job.array.as_ref().is_some_and(|a| a.is_meta()) {
                let room = limited.array_room.get(&job.id).copied();
                if !self.push_array_requests(
                    job,
                    free_cpus,
                    room,
                    &mut pass.requests,
                    &mut pass.arrays,
                ) {
                    pass.throttled.push(job.id);
                }
                continue;
            }
            let req = self.request_for(job);
            debug_assert!(
                self.queue
                    .get(job.id)
                    .is_none_or(|q| !q.spreads || sched::spreads(&req)),
                "job {} spreads by its queue entry, not by its request",
                job.id
            );
            pass.requests.push(req);
        }
        pass
    }

    pub(crate) fn start_job(&mut self, id: JobId, alloc: sched::Allocation, now: Timestamp) {
        self.request_cache.remove(&id);
        self.take_resources(id, &alloc, now);
        let batch = alloc.nodes[0].node;
        let batch_name = &self.nodes[batch.0 as usize].conf.name;
        {
            let job = self.jobs.get_mut(&id).expect("scheduled job exists");
            job.state = JobState::Running;
            job.reason = PendingReason::None;
            job.start_time = Some(now);
            job.end_time = match job.time_limit {
                TimeLimit::Minutes(m) => Some(now + m as i64 * 60),
                TimeLimit::Unlimited => None,
            };
            job.partition = alloc.partition;
            job.last_sched_eval = Some(now);
            job.ran_on = alloc.nodes.iter().map(|n| n.node).collect();
            job.ran_cpus = alloc.nodes.iter().map(|n| n.cpus).collect();
            job.alloc = Some(alloc);
            let (out_pattern, err_pattern) = crate::env::output_patterns(job);
            let stdout = crate::env::expand_path(out_pattern, job, batch_name);
            job.stderr = if err_pattern == out_pattern {
                // The same pattern gives the same path.
                stdout.clone()
            } else {
                crate::env::expand_path(err_pattern, job, batch_name)
            };
            job.stdout = stdout;
        }
        // salloc and srun hold the allocation themselves: no script.
        if !self.jobs[&id].desc.alloc_only {
            let launch = self.batch_launch(id);
            let n = &self.nodes[batch.0 as usize];
            self.outbox.push(Command::LaunchBatch {
                node: n.conf.name.clone(),
                addr: n.daemon_addr.clone(),
                launch: Box::new(launch),
            });
            self.extern_command(id, true);
        }
        self.record(id, now);
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
}

impl FitShape {
    /// The shape of `req`, where it is plain.
    fn of(req: &JobRequest) -> Option<FitShape> {
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
        })
    }
}

/// Whether `v` shows what is in use on `n` now (the fields
/// `refreshed_node_views` copies again).
fn view_is_of(v: &NodeView, n: &crate::Node) -> bool {
    v.alloc_cpus == n.alloc_cpus
        && v.alloc_mem == n.alloc_mem
        && v.available == n.takes_jobs()
        && v.exclusive_in_use == n.exclusive_in_use
        && v.n_jobs == n.jobs.len() as u32
        && v.gres
            .iter()
            .zip(&n.gres)
            .all(|(vp, np)| vp.used == np.used)
}

/// Sorts the walk's deferred jobs, (time limit, place), which come in
/// the order of their places, by limit and then place: a counting sort
/// over the few distinct limits (a trace has a few dozen or a hundred)
/// instead of comparing every pair, at every pass, on a deep queue.
fn sort_by_limit(later: &mut Vec<(i64, u32)>) {
    debug_assert!(later.windows(2).all(|w| w[0].1 < w[1].1));
    let mut limits: Vec<(i64, usize)> = Vec::new();
    for &(limit, _) in later.iter() {
        match limits.last_mut() {
            Some(last) if last.0 == limit => last.1 += 1,
            _ => limits.push((limit, 1)),
        }
    }
    if limits.len() == 1 {
        return;
    }
    // Many distinct limits (a synthetic load's): by their minutes.
    if limits.len() > 64 {
        if let Some(sorted) = radix_by_minutes(later) {
            *later = sorted;
            debug_assert!(later.windows(2).all(|w| w[0] < w[1]));
            return;
        }
    }
    limits.sort_unstable_by_key(|l| l.0);
    limits.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 += b.1;
        }
        same
    });
    // Where each limit's run starts, then each entry put in its place in
    // the order it comes (places ascending within a limit).
    let mut start = 0;
    for l in &mut limits {
        let n = l.1;
        l.1 = start;
        start += n;
    }
    let mut sorted = vec![(0, 0); later.len()];
    for &e in later.iter() {
        let at = limits.partition_point(|l| l.0 < e.0);
        let slot = &mut limits[at].1;
        sorted[*slot] = e;
        *slot += 1;
    }
    *later = sorted;
    debug_assert!(later.windows(2).all(|w| w[0] < w[1]));
}

/// `later` (in the order of its places) sorted by limit and then place,
/// where every limit is whole minutes or `FOREVER` (`sched::limit_secs`'s
/// values; `None` elsewhere): a radix sort over the minutes, a byte at a
/// time from the lowest, each round keeping the order of the one before.
fn radix_by_minutes(later: &[(i64, u32)]) -> Option<Vec<(i64, u32)>> {
    let mut most = 0u64;
    for &(limit, _) in later {
        if limit == sched::FOREVER {
            continue;
        }
        if limit < 0 || limit % 60 != 0 {
            return None;
        }
        most = most.max((limit / 60) as u64);
    }
    // `FOREVER` after every limit in minutes.
    let key = |limit: i64| {
        if limit == sched::FOREVER {
            most + 1
        } else {
            (limit / 60) as u64
        }
    };
    let bits = u64::BITS - (most + 1).leading_zeros();
    let mut from = later.to_vec();
    let mut to = vec![(0, 0); later.len()];
    let mut shift = 0;
    while shift < bits {
        let digit = |limit: i64| ((key(limit) >> shift) & 0xff) as usize;
        let mut at = [0usize; 257];
        for e in &from {
            at[digit(e.0) + 1] += 1;
        }
        for d in 0..256 {
            at[d + 1] += at[d];
        }
        for &e in &from {
            let d = digit(e.0);
            to[at[d]] = e;
            at[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
        shift += 8;
    }
    Some(from)
}

/// Jobs holding resources, with when they are expected to give them back
/// (start plus time limit), for the backfill timeline; their allocations
/// are borrowed, not copied.
fn running_views<'a>(
    jobs: &'a std::collections::BTreeMap<JobId, Box<Job>>,
    holding: &std::collections::BTreeMap<JobId, u64>,
    now: Timestamp,
) -> Vec<sched::RunningJob<'a>> {
    holding
        .iter()
        .filter_map(|(id, version)| running_view(jobs.get(id)?, *version, now))
        .collect()
}

/// What the scheduler sees of a job holding resources (`None`: it holds
/// none): until its time limit, or `now` for one that is ending or not
/// running.
fn running_view(j: &Job, version: u64, now: Timestamp) -> Option<sched::RunningJob<'_>> {
    let alloc = j.alloc.as_ref()?;
    let end = if j.completing || j.state != JobState::Running {
        now
    } else {
        j.limit_end().unwrap_or(sched::FOREVER)
    };
    Some(sched::RunningJob {
        job_id: j.id,
        end,
        alloc: std::borrow::Cow::Borrowed(alloc),
        version: Some(version),
    })
}

/// Whether a pass after job ends that tried only the jobs that could use
/// the free CPUs (and the new and first blocked ones) decided what a pass
/// over every job decides. With one partition and one planned job, every
/// job it left out needs more CPUs than are free (so cannot start) and
/// waits behind the last pass's first blocked jobs (so gets no plan, and
/// keeps its reason): that holds while each of those is still blocked and
/// planned.
fn freed_pass_holds(plan: &sched::Plan, old_heads: &[JobId]) -> bool {
    old_heads.iter().all(|h| plan.planned.contains_key(h))
}

/// What must hold after a pass over a prefix of the queue
/// (`Engine::freed_prefix`) for the jobs it left out to keep their
/// decisions.
/// `collect_requests` over every pending job.
const ALL_JOBS: Option<std::iter::Empty<JobId>> = None;

/// The lists `Engine::freed_prefix` fills, kept from pass to pass
/// (`Engine::prefix_bufs`) so that none is made again.
#[derive(Clone, Debug, Default)]
pub(crate) struct PrefixBufs {
    /// The jobs the pass must try, sorted.
    needed: Vec<JobId>,
    /// The jobs the pass over the prefix tries, sorted (each once).
    only: Vec<JobId>,
    /// The prefix.
    taken: Vec<LeftOut>,
}

struct PrefixCheck {
    /// The order key of the last job left out.
    max_left_key: Option<sched::OrderKey>,
    /// The order key of the last job of the prefix: the jobs after it are
    /// left out.
    last_taken: Option<sched::OrderKey>,
    /// The jobs the pass must try wherever they are (new, planned, first
    /// blocked ones), sorted.
    needed: Vec<JobId>,
    /// The jobs left out that must be tried all the same, in the order a
    /// pass tries them (`finish_prefix_pass` reads those that may be left
    /// out from the queue).
    left_out: Vec<LeftOut>,
}

/// A job a pass over a prefix of the queue left out: (order key, id, CPUs
/// it needs, whether it must be tried all the same, its `parts_mask`, its
/// time limit in seconds).
type LeftOut = (sched::OrderKey, JobId, i64, bool, Option<u64>, i64);

/// A job a pass may leave out where it has shown it would wait
/// (`Engine::walk_pass`): (order key, id, CPUs it needs, its `parts_mask`,
/// its time limit in seconds).
type Optional = (sched::OrderKey, JobId, i64, Option<u64>, i64);

/// A job's partitions as a bit set (`sched::PassCache::settled_parts`),
/// where every index is below 64: `Engine::walk` reads them without a look
/// at the job.
pub(crate) fn parts_mask(partitions: &[usize]) -> Option<u64> {
    partitions
        .iter()
        .try_fold(0u64, |m, &p| (p < 64).then(|| m | 1 << p))
}

/// The jobs left out of a pass over a prefix of the queue that may be
/// left out (`Engine::finish_prefix_pass`), where `Engine::walk` reads
/// them from the queue by time limit as it tries the jobs it defers: the
/// pending jobs after `after` in the order a pass tries them that a full
/// pass would try, leavable (no array, reason Priority) and not among
/// `must` (the jobs it must try, by id, sorted).
struct LazyLeftOut {
    after: Option<sched::OrderKey>,
    must: Vec<JobId>,
    now: Timestamp,
}

/// A job `Engine::walk` goes over: (order key, id, CPUs it needs, how).
type Walked = (sched::OrderKey, JobId, i64, Try);

/// How `Engine::walk` tries a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Try {
    /// Always, with the caller's request at this index.
    Given(usize),
    /// Always, with its own request.
    Must,
    /// Unless the pass has shown it would wait; with the job's
    /// partitions (`parts_mask`) and time limit in seconds. Never a job
    /// due for a plan of its own (`aged`: those must be tried).
    Optional(Option<u64>, i64),
}

impl PrefixCheck {
    /// True when the jobs left out that cannot start keep their decisions
    /// after `plan`: none gets a plan (one was made, which the policy's one
    /// per partition allows, or none can be) and each is behind a blocked
    /// job (the pass left one waiting for Resources), so its reason is
    /// Priority. Under FCFS (`fcfs`) no job gets a plan and every job
    /// behind a blocked one waits, so a blocked job is enough.
    /// `endless`: whether no job holding resources and no pending job the
    /// pass may start has a time limit (nor a --time-min), so that nothing
    /// comes free later and nothing can be planned (asked only where no
    /// plan was made).
    fn behind_plan(&self, plan: &sched::Plan, fcfs: bool, endless: impl FnOnce() -> bool) -> bool {
        let blocked = plan
            .decisions
            .iter()
            .any(|(_, d)| matches!(d, Decision::Wait(PendingReason::Resources)));
        blocked && (fcfs || !plan.planned.is_empty() || endless())
    }
}

/// Decides `req` after the jobs of the pass `cache` last made
/// (`sched::plan_more`), into `plan`: the CPUs it started, `None` when the
/// cache holds no pass.
fn decide_more(
    cache: &mut sched::PassCache,
    cfg: &sched::SchedConfig,
    req: &JobRequest,
    nodes: &[sched::NodeView],
    parts: &[sched::PartView],
    plan: &mut sched::Plan,
) -> Option<i64> {
    let view = sched::ClusterView {
        nodes,
        parts,
        jobs: std::slice::from_ref(req),
        // The pass's timeline holds the running jobs already.
        running: &[],
    };
    let next = sched::plan_more(&view, cfg, cache)?;
    let started = started_cpus(&next);
    plan.decisions.extend(next.decisions);
    plan.planned.extend(next.planned);
    plan.time_limits.extend(next.time_limits);
    plan.depth_reached |= next.depth_reached;
    Some(started)
}

/// The CPUs of the jobs `plan` starts.
fn started_cpus(plan: &sched::Plan) -> i64 {
    plan.decisions
        .iter()
        .map(|(_, d)| match d {
            Decision::Start(a) => a.nodes.iter().map(|n| i64::from(n.cpus)).sum(),
            Decision::Wait(_) => 0,
        })
        .sum()
}

impl Engine {
    /// The jobs `decisions` left waiting that were the first to block one
    /// of their partitions: each waits for Resources, or for Priority
    /// where another partition of its was blocked before it (a job in two
    /// partitions behind the first blocked job of one is the first blocked
    /// job of the other). A pass over new jobs tries them again, so that
    /// the new jobs of those partitions wait behind them. With one
    /// partition, the job that waits for Resources.
    fn first_blocked(
        &self,
        decisions: &[(JobId, Decision)],
        arrays: &crate::array::ArrayRequests,
        n_parts: usize,
    ) -> Vec<JobId> {
        if n_parts <= 1 {
            return decisions
                .iter()
                .filter(|(_, d)| matches!(d, Decision::Wait(PendingReason::Resources)))
                .map(|(id, _)| *id)
                .collect();
        }
        let mut blocked = vec![false; n_parts];
        let mut open = n_parts;
        let mut heads = Vec::new();
        for (id, d) in decisions {
            if open == 0 {
                break;
            }
            // Only a job that waits on busy nodes blocks its partitions.
            if !matches!(
                d,
                Decision::Wait(PendingReason::Resources | PendingReason::Priority)
            ) {
                continue;
            }
            let Some(job) = self.jobs.get(&arrays.record_of(*id)) else {
                continue;
            };
            let mut first = false;
            for &p in &job.partitions {
                if let Some(b) = blocked.get_mut(p).filter(|b| !**b) {
                    *b = true;
                    open -= 1;
                    first = true;
                }
            }
            if first {
                heads.push(*id);
            }
        }
        heads
    }
}

/// What `Engine::walk` needs to try an array's pending record as a full
/// pass does (`Engine::push_array_requests`): the pass's record of the
/// requests that stand for tasks, the limits' room, the CPUs free before
/// the pass; and the arrays that may start nothing (their reason is then
/// JobArrayTaskLimit, `Engine::mark_throttled`).
struct ArrayWalk<'a> {
    arrays: &'a mut crate::array::ArrayRequests,
    limited: &'a crate::limits::LimitCheck,
    free_cpus: u32,
    throttled: Vec<JobId>,
}

/// What one pass collects before it plans.
#[derive(Default)]
struct Pass {
    requests: Vec<JobRequest>,
    arrays: crate::array::ArrayRequests,
    throttled: Vec<JobId>,
    waiting_to_begin: Vec<JobId>,
    /// Jobs the pass tries only where the pass has not shown that they
    /// would wait (`Engine::walk_pass`): (order key, id, CPUs it needs,
    /// its `parts_mask`).
    optional: Vec<Optional>,
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

/// The fewest jobs a pass over the head of the queue after job ends must
/// leave out to be tried (`Engine::freed_prefix`).
pub(crate) const PREFIX_MIN_LEFT_OUT: usize = 64;

/// A pending job's key in `Engine::queue`'s index by demand: the CPUs it asks for
/// (`demand_cpus`), `i64::MIN` for an array record (each pass may start
/// some of its tasks whatever one asks).
pub(crate) fn pending_key(j: &Job) -> i64 {
    if j.array.is_some() {
        i64::MIN
    } else {
        demand_cpus(j)
    }
}

/// The CPUs a pending job asks for, counted as `sched::demand_cpus` counts
/// its request (nodes for whole-node jobs).
pub(crate) fn demand_cpus(j: &Job) -> i64 {
    let d = &j.desc;
    let cpt = i64::from(d.cpus_per_task.unwrap_or(1).max(1));
    let tasks = match d.ntasks_per_node {
        Some(tpn) => i64::from(tpn) * i64::from(j.min_nodes.max(1)),
        None => i64::from(j.ntasks.max(1)),
    };
    if d.exclusive {
        i64::from(j.min_nodes.max(1))
    } else {
        tasks * cpt
    }
}

/// Every partition as the scheduler sees it.
pub(crate) fn part_views(parts: &[crate::Partition], settings: &crate::Settings) -> Vec<PartView> {
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

#[cfg(test)]
mod tests {
    use super::{parts_mask, sort_by_limit};
    use proptest::prelude::*;

    proptest! {
        /// The counting sort orders as sorting the pairs does.
        #[test]
        fn sort_by_limit_sorts_as_the_pairs_sort(
            limits in proptest::collection::vec(prop_oneof![Just(60i64), Just(3600), Just(i64::MAX / 4), 0..100_000i64], 0..300)
        ) {
            let mut later: Vec<(i64, u32)> =
                limits.iter().enumerate().map(|(k, &l)| (l, k as u32 * 2)).collect();
            let mut want = later.clone();
            want.sort_unstable();
            sort_by_limit(&mut later);
            prop_assert_eq!(later, want);
        }

        /// Also with many distinct limits in minutes (the radix sort).
        #[test]
        fn sort_by_limit_sorts_many_minutes_as_the_pairs_sort(
            minutes in proptest::collection::vec(prop_oneof![Just(None), (0..70_000i64).prop_map(Some)], 0..600)
        ) {
            let mut later: Vec<(i64, u32)> = minutes
                .iter()
                .enumerate()
                .map(|(k, m)| (m.map_or(sched::FOREVER, |m| m * 60), k as u32 * 3))
                .collect();
            let mut want = later.clone();
            want.sort_unstable();
            sort_by_limit(&mut later);
            prop_assert_eq!(later, want);
        }
    }

    #[test]
    fn parts_mask_is_a_bit_per_partition_below_64() {
        assert_eq!(parts_mask(&[]), Some(0));
        assert_eq!(parts_mask(&[0, 2]), Some(0b101));
        assert_eq!(parts_mask(&[2, 0, 2]), Some(0b101));
        assert_eq!(parts_mask(&[63]), Some(1 << 63));
        assert_eq!(parts_mask(&[1, 64]), None);
    }
}
