//! The job lifecycle: submission (and its feasibility checks), cancel,
//! signals, updates, holds and releases, requeue, a job's start, the end
//! of its batch script and its end. The scheduling pass that decides
//! which pending job starts is `pass`.

use crate::steps::OOM_EXIT;
use crate::views::{shape, FitShape};
use crate::{Command, Engine, Job, BASE_PRIORITY};
use model::{ExitCode, JobId, JobState, PendingReason, TimeLimit, Timestamp};
use proto::{Identity, JobDesc, JobUpdate, SignalScope, SlurmError, SubmitReply, TestOnlyEstimate};
use sched::{Constraint, NodeIdx, NodeView};
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
        self.check_licenses(&mut desc)?;
        if self.settings.enforce.associations {
            let part_names: Vec<String> = partitions
                .iter()
                .map(|&p| self.parts[p].conf.name.clone())
                .collect();
            self.apply_association(&mut desc, &part_names)?;
        }
        for &p in &partitions {
            self.part_access(&self.parts[p].conf, &desc, who)?;
        }
        self.check_job_resv(&desc, &who.user)?;
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
            configuring: false,
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
            limit_mailed: 0,
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
            containers: !desc.container.is_empty(),
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
            let mut req = self.request_for(&job);
            self.resv_exclude_others(&job, &mut req);
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
        self.check_segment(job)?;
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
        job.configuring = false;
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
        self.ctld_epilog(id);
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
        job.configuring = false;
        if was_running {
            self.ctld_epilog(id);
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
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
        job.limit_mailed = 0;
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

    /// A node daemon reports that a batch script ended; `exit` is
    /// [`OOM_EXIT`] when the OOM killer killed a process of its batch step
    /// (`Engine::apply` makes it so from the report's count).
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
        let was_running = job.state == JobState::Running;
        match job.state {
            JobState::Running => {
                job.exit = exit;
                job.end_time = Some(now);
                job.state = if exit == OOM_EXIT && launch_failed.is_none() {
                    JobState::OutOfMemory
                } else if launch_failed.is_some() || !exit.is_success() {
                    JobState::Failed
                } else {
                    JobState::Completed
                };
                job.reason = if launch_failed.is_some() {
                    PendingReason::LaunchFailRequeueHold
                } else if job.state == JobState::OutOfMemory {
                    PendingReason::OutOfMemory
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
        if was_running {
            self.ctld_epilog(id);
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

    /// A node's Prolog or Epilog failed for a job (slurm.conf "Prolog and
    /// Epilog Scripts"). The node is drained, "Prolog error" or "Epilog
    /// error", as SlurmUser. After a failed Prolog the script never ran:
    /// the job goes back to the queue held, `launch failed requeued held`
    /// (Slurm requeues it whatever `--no-requeue` says). After a failed
    /// Epilog the job ends as its script did.
    pub fn on_node_script_failed(
        &mut self,
        id: JobId,
        node: &str,
        exit: ExitCode,
        script: proto::NodeScript,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        let idx = self.node_idx(node).ok_or(SlurmError::InvalidNodeName)?;
        let reason = match script {
            proto::NodeScript::Prolog => "Prolog error",
            proto::NodeScript::Epilog => "Epilog error",
        };
        {
            let slurm_user = self.settings.slurm_user.clone();
            let n = &mut self.nodes[idx.0 as usize];
            n.state.drain = true;
            n.reason = Some(reason.into());
            n.reason_user = Some(slurm_user);
            n.reason_time = Some(now);
        }
        if script == proto::NodeScript::Prolog {
            let batch_here = self.jobs.get(&id).is_some_and(|j| {
                j.state == JobState::Running
                    && j.alloc
                        .as_ref()
                        .is_some_and(|a| a.nodes.first().is_some_and(|n| n.node == idx))
            });
            // A step's Prolog on another node of a batch job: requeued
            // the same way (its script is ended). An allocation's
            // (salloc, srun) runs on; its step there failed.
            let elsewhere = !batch_here
                && self.jobs.get(&id).is_some_and(|j| {
                    j.state == JobState::Running
                        && !j.desc.alloc_only
                        && j.alloc
                            .as_ref()
                            .is_some_and(|a| a.nodes.iter().any(|n| n.node == idx))
                });
            if batch_here || elsewhere {
                self.requeue_job(id, PendingReason::LaunchFailRequeueHold, now);
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.held = Some(false);
                    job.priority = 0;
                    job.reason = PendingReason::LaunchFailRequeueHold;
                }
            }
            // Pending now: its share is given back as any requeued job's.
            return self.on_job_exited(id, node, exit, None, now);
        }
        self.on_job_exited(id, node, exit, None, now)
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
    /// With a `Prolog` or `Epilog` the end goes to every node of every job
    /// (allocations too): a node that ran a step's Prolog runs the Epilog.
    pub(crate) fn extern_command(&mut self, id: JobId, start: bool) {
        if self.simulated {
            return;
        }
        let contain = self.settings.prolog_contain;
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        // The nodes drop a job's named containers when they hear of its end.
        let epilog = !start && (self.settings.node_scripts || job.containers);
        if !contain && !epilog {
            return;
        }
        let Some(alloc) = job
            .alloc
            .as_ref()
            .filter(|_| epilog || !job.desc.alloc_only)
        else {
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
    /// same run still holds resources there (or the run just requeued,
    /// while the job waits for its end), its processes are gone: release
    /// them. A later run of the job (after a requeue) is not touched.
    pub fn on_job_gone(&mut self, id: JobId, node: &str, run: u32, now: Timestamp) {
        // The run the node was told to end is the current one, or the one
        // just requeued (still completing): a job requeued before its node
        // got anything (its PrologSlurmctld failed) is gone there at once.
        let current = self.jobs.get(&id).is_some_and(|j| {
            j.restarts == run
                || (j.state == JobState::Pending && j.completing && j.restarts == run + 1)
        });
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
        let admin = self.is_operator(who);
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
        if !own && !self.is_operator(who) {
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
        let admin = self.is_operator(who);
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
        let admin = self.is_operator(who);
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

    pub(crate) fn start_job(&mut self, id: JobId, mut alloc: sched::Allocation, now: Timestamp) {
        self.request_cache.remove(&id);
        self.take_resources(id, &mut alloc, now);
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
        // PrologSlurmctld first, where there is one (`ctldscripts`); salloc
        // and srun hold the allocation themselves: no script.
        if !self.ctld_prolog(id) && !self.jobs[&id].desc.alloc_only {
            self.launch_batch(id);
        }
        self.record(id, now);
    }
}
