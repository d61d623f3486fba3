//! Job arrays (sbatch(1) `--array`).
//!
//! ```text
//!  submit 0-99999%4 --> one record, id 123, pending tasks {0-99999}
//!  schedule         --> up to (free CPUs + 1, throttle room) requests for it
//!  a request starts --> the lowest pending task splits off as its own record
//!                       (a new job id; the last task keeps id 123) and runs
//! ```
//!
//! A pending array is one record until its tasks start, so a 100,000-task
//! array costs one job's memory. Operations on single pending tasks
//! (`scancel 123_4`, `scontrol hold 123_[1-3]`) split those tasks off first,
//! as Slurm does.

use crate::{Engine, Job};
use model::array::{ArraySpec, TaskSet};
use model::{JobId, JobState, PendingReason, Timestamp};
use proto::SlurmError;
use sched::JobRequest;
use std::collections::BTreeMap;

/// What a record knows of the array it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayPart {
    /// The array's job id (`SLURM_ARRAY_JOB_ID`).
    pub array_job_id: JobId,
    /// This record's task, once it is one task.
    pub task_id: Option<u32>,
    /// Tasks still pending in this record (the array's own record only).
    pub pending: TaskSet,
    /// `%N`: at most this many tasks run at once (0: no limit).
    pub throttle: u32,
    /// Tasks in the whole array (`SLURM_ARRAY_TASK_COUNT`).
    pub count: u32,
    /// Smallest index (`SLURM_ARRAY_TASK_MIN`).
    pub min: u32,
    /// Largest index (`SLURM_ARRAY_TASK_MAX`).
    pub max: u32,
    /// Step between indexes (`SLURM_ARRAY_TASK_STEP`).
    pub step: u32,
}

impl ArrayPart {
    /// The record that still holds pending tasks (not yet one task).
    pub fn is_meta(&self) -> bool {
        self.task_id.is_none()
    }
}

/// Requests the scheduling pass made for arrays: a request id that is not
/// a job's maps to the array record it stands for.
#[derive(Default)]
pub(crate) struct ArrayRequests {
    virtual_ids: BTreeMap<JobId, JobId>,
    next: u32,
}

impl ArrayRequests {
    /// The job a request of the pass is for: the array record a request
    /// standing for a further task stands for, else `id` itself.
    pub(crate) fn record_of(&self, id: JobId) -> JobId {
        self.virtual_ids.get(&id).copied().unwrap_or(id)
    }
}

/// The first id of the requests that stand for an array's further tasks
/// (`ArrayRequests`): far above any job's id (Slurm's MaxJobId is at most
/// 0x03ff0000), so that neither the job a task becomes in the same pass
/// nor one submitted before the next pass shares it, in the plans a pass
/// leaves (`Engine::plans`).
pub(crate) const VIRTUAL_TASK_IDS: u32 = 0xf000_0000;

impl Engine {
    /// Reads `--array` into the record at submission; refuses malformed
    /// specifications and indexes at or beyond MaxArraySize.
    pub(crate) fn init_array(&self, job: &mut Job, text: &str) -> Result<(), SlurmError> {
        let spec = ArraySpec::parse(text).ok_or(SlurmError::InvalidArray)?;
        let max = spec.tasks.last().ok_or(SlurmError::InvalidArray)?;
        if max >= self.settings.max_array_size {
            return Err(SlurmError::InvalidArray);
        }
        job.array = Some(ArrayPart {
            array_job_id: job.id,
            task_id: None,
            count: spec.tasks.len() as u32,
            min: spec.tasks.first().unwrap_or(0),
            max,
            step: spec.tasks.stride(),
            pending: spec.tasks,
            throttle: spec.throttle.unwrap_or(0),
        });
        Ok(())
    }

    /// Every record of the array `array_id`: its own record first, then its
    /// tasks by index.
    pub(crate) fn array_records(&self, array_id: JobId) -> Vec<JobId> {
        let mut out = Vec::new();
        if self
            .jobs
            .get(&array_id)
            .is_some_and(|j| j.array.as_ref().is_some_and(|a| a.array_job_id == array_id))
        {
            out.push(array_id);
        }
        if let Some(tasks) = self.array_tasks.get(&array_id) {
            out.extend(tasks.values().copied().filter(|id| *id != array_id));
        }
        out
    }

    fn index_task(&mut self, array_id: JobId, task: u32, id: JobId) {
        self.array_tasks
            .entry(array_id)
            .or_default()
            .insert(task, id);
    }

    /// Forgets a purged record in the task index.
    pub(crate) fn unindex(&mut self, job: &Job) {
        let Some(a) = &job.array else { return };
        let Some(t) = a.task_id else { return };
        if let Some(m) = self.array_tasks.get_mut(&a.array_job_id) {
            if m.get(&t) == Some(&job.id) {
                m.remove(&t);
            }
            if m.is_empty() {
                self.array_tasks.remove(&a.array_job_id);
            }
        }
    }

    /// Rebuilds the task index from the records (after a restore).
    pub(crate) fn reindex_arrays(&mut self) {
        self.array_tasks.clear();
        let found: Vec<(JobId, u32, JobId)> = self
            .jobs
            .values()
            .filter_map(|j| {
                let a = j.array.as_ref()?;
                Some((a.array_job_id, a.task_id?, j.id))
            })
            .collect();
        for (a, t, id) in found {
            self.index_task(a, t, id);
        }
    }

    /// Takes task `task` out of the array's pending record into a record of
    /// its own (the last pending task keeps the array's record and id).
    /// Returns the task's record.
    pub(crate) fn split_task(
        &mut self,
        array_id: JobId,
        task: u32,
        now: Timestamp,
    ) -> Option<JobId> {
        let meta = self.jobs.get_mut(&array_id)?;
        let part = meta.array.as_mut()?;
        if !part.is_meta() || !part.pending.contains(task) {
            return None;
        }
        if part.pending.len() == 1 {
            part.pending = TaskSet::new();
            part.task_id = Some(task);
            self.index_task(array_id, task, array_id);
            self.touch();
            return Some(array_id);
        }
        part.pending.remove(task);
        let mut job = meta.clone();
        let id = JobId(self.next_job_id);
        self.next_job_id += 1;
        job.id = id;
        if let Some(a) = job.array.as_mut() {
            a.task_id = Some(task);
            a.pending = TaskSet::new();
        }
        self.jobs.insert(id, job);
        self.index_task(array_id, task, id);
        self.touch();
        self.record(array_id, now);
        self.record(id, now);
        Some(id)
    }

    /// The records a request for `id` (and, when given, only `tasks` of it)
    /// acts on. A pending task named alone is split off first.
    pub(crate) fn resolve_targets(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<Vec<JobId>, SlurmError> {
        let Some(tasks) = tasks else {
            let all = self.array_records(id);
            if !all.is_empty() {
                return Ok(all);
            }
            return if self.jobs.contains_key(&id) {
                Ok(vec![id])
            } else {
                Err(SlurmError::InvalidJobId)
            };
        };
        if let Some(meta) = self.jobs.get(&id) {
            if !self.may_modify(who, meta) {
                return Err(SlurmError::AccessDenied);
            }
        }
        let mut out = Vec::new();
        for t in tasks.iter() {
            if let Some(rec) = self.array_tasks.get(&id).and_then(|m| m.get(&t)) {
                out.push(*rec);
            } else if let Some(rec) = self.split_task(id, t, now) {
                out.push(rec);
            }
        }
        if out.is_empty() {
            return Err(SlurmError::InvalidJobId);
        }
        Ok(out)
    }

    /// Runs `f` on every record a request names; succeeds when any did (an
    /// array's finished tasks do not fail a cancel of the whole array).
    pub(crate) fn for_targets(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        who: &proto::Identity,
        now: Timestamp,
        mut f: impl FnMut(&mut Engine, JobId) -> Result<(), SlurmError>,
    ) -> Result<(), SlurmError> {
        let ids = self.resolve_targets(id, tasks, who, now)?;
        let mut first_err = None;
        let mut any_ok = false;
        for t in ids {
            match f(self, t) {
                Ok(()) => any_ok = true,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) if !any_ok => Err(e),
            _ => Ok(()),
        }
    }

    fn running_tasks(&self, array_id: JobId) -> u32 {
        self.array_tasks.get(&array_id).map_or(0, |m| {
            m.values()
                .filter(|id| {
                    self.jobs
                        .get(id)
                        .is_some_and(|j| matches!(j.state, JobState::Running | JobState::Suspended))
                })
                .count() as u32
        })
    }

    /// Adds the scheduling requests for an array's pending record: as many
    /// as could start now (free CPUs, the throttle, the room `limit_room`
    /// the QOS and association limits leave), each standing for the
    /// next task. Returns false when the array may start nothing (its
    /// reason is then JobArrayTaskLimit).
    pub(crate) fn push_array_requests(
        &self,
        job: &Job,
        free_cpus: u32,
        limit_room: Option<u32>,
        requests: &mut Vec<JobRequest>,
        reqs: &mut ArrayRequests,
    ) -> bool {
        let Some(part) = &job.array else {
            return true;
        };
        let pending = part.pending.len().min(u32::MAX as u64) as u32;
        let room = match part.throttle {
            0 => u32::MAX,
            n => n.saturating_sub(self.running_tasks(job.id)),
        };
        if room == 0 {
            return false;
        }
        let req = self.request_for(job);
        let per_task = req.cpus_per_task.max(1) * job.ntasks.max(1);
        let n = pending
            .min(room)
            .min(free_cpus / per_task + 1)
            .min(limit_room.unwrap_or(u32::MAX))
            .max(1);
        if reqs.next == 0 {
            reqs.next = VIRTUAL_TASK_IDS;
        }
        for i in 0..n {
            let mut r = req.clone();
            if i > 0 {
                r.job_id = JobId(reqs.next);
                reqs.next += 1;
                reqs.virtual_ids.insert(r.job_id, job.id);
            }
            requests.push(r);
        }
        true
    }

    /// The record a scheduling decision for request `id` applies to: a job,
    /// or, for an array's pending record, the task split off to start now.
    /// `starting` says whether the decision starts it.
    pub(crate) fn array_decision_target(
        &mut self,
        id: JobId,
        reqs: &ArrayRequests,
        starting: bool,
        now: Timestamp,
    ) -> Option<JobId> {
        let rec = reqs.record_of(id);
        let job = self.jobs.get(&rec)?;
        let Some(part) = job.array.as_ref().filter(|a| a.is_meta()) else {
            return (rec == id).then_some(rec);
        };
        if !starting {
            // Only the array's own request sets its reason.
            return (rec == id).then_some(rec);
        }
        if job.state != JobState::Pending {
            return None;
        }
        let task = part.pending.first()?;
        let throttle = part.throttle;
        let started = self.split_task(rec, task, now)?;
        // Until a later request of the same array says otherwise, the rest
        // wait for resources, or for the throttle once this one runs.
        if started != rec {
            let full = throttle > 0 && self.running_tasks(rec) + 1 >= throttle;
            if let Some(meta) = self.jobs.get_mut(&rec) {
                meta.reason = if full {
                    PendingReason::JobArrayTaskLimit
                } else {
                    PendingReason::Resources
                };
                meta.last_sched_eval = Some(now);
            }
        }
        Some(started)
    }

    /// CPUs free on nodes that take jobs (bounds how many requests an
    /// array makes per pass).
    pub(crate) fn free_cpus(&mut self) -> u32 {
        self.nodes.free_cpus()
    }

    /// A filtered scancel (`proto::CtldRequest::CancelJobs`): every job
    /// `select` matches for `who`, in id order, cancelled (or signalled)
    /// as a `Cancel` of that job alone would be, each with its outcome.
    /// The jobs are picked before any is cancelled, as scancel picked
    /// them from one listing: cancelling an array's record, which ends its
    /// tasks too, leaves those tasks `AlreadyDone`.
    pub fn on_cancel_selected(
        &mut self,
        select: &proto::JobSelect,
        signal: Option<i32>,
        scope: proto::SignalScope,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Vec<proto::CancelOutcome> {
        // PrivateData=jobs: what the caller may not see is not selected
        // (scancel's filters pick from what squeue would show it).
        let sight = self.sight(who);
        let ids: Vec<JobId> = self
            .jobs
            .values()
            .filter(|job| sight.job(job.desc.uid) && self.job_selected(job, select, &who.user))
            .map(|job| job.id)
            .collect();
        ids.into_iter()
            .map(|job_id| proto::CancelOutcome {
                job_id,
                error: self
                    .on_cancel_tasks(job_id, None, signal, scope, who, now)
                    .err(),
            })
            .collect()
    }

    /// Whether `select` matches `job` as squeue shows it (`job_info`):
    /// a pending job's partitions, the nodes it runs on (or last ran on).
    fn job_selected(&self, job: &Job, select: &proto::JobSelect, caller: &str) -> bool {
        let d = &job.desc;
        let facts = proto::SelectFacts {
            job_id: job.id,
            array_job_id: job.array.as_ref().map(|a| a.array_job_id.0),
            state: job.state,
            user: &d.user,
            uid: d.uid,
            name: &d.name,
            account: d.account.as_deref().unwrap_or("(null)"),
            qos: d.qos.as_deref().unwrap_or("normal"),
        };
        let parts = if job.state == JobState::Pending && job.partitions.len() > 1 {
            &job.partitions[..]
        } else {
            std::slice::from_ref(&job.partition)
        };
        let part_names = parts.iter().map(|&p| self.parts[p].conf.name.as_str());
        let allocated = job
            .alloc
            .iter()
            .flat_map(|a| a.nodes.iter().map(|n| n.node));
        let ran = job
            .alloc
            .is_none()
            .then_some(&job.ran_on)
            .into_iter()
            .flatten()
            .copied();
        let node_names = allocated
            .chain(ran)
            .map(|i| self.nodes[i.0 as usize].conf.name.as_str());
        select.selects(&facts, caller, part_names, node_names)
    }

    /// scancel on a job, an array, or some of its tasks.
    pub fn on_cancel_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        signal: Option<i32>,
        scope: proto::SignalScope,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| {
            e.on_cancel(t, signal, scope, who, now)
        })
    }

    /// `scontrol update JobId=` on a job, an array, or some of its tasks.
    pub fn on_update_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        update: proto::JobUpdate,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| {
            e.on_update_job(t, update.clone(), who, now)
        })
    }

    /// `scontrol hold/uhold` on a job, an array, or some of its tasks.
    pub fn on_hold_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        user: bool,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| e.on_hold(t, user, who))
    }

    /// `scontrol release` on a job, an array, or some of its tasks.
    pub fn on_release_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| e.on_release(t, who))
    }

    /// `scontrol requeue/requeuehold` on a job, an array, or some of its tasks.
    pub fn on_requeue_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        hold: bool,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| e.on_requeue(t, hold, who, now))
    }

    /// `scontrol suspend` on a job, an array (its running tasks), or some
    /// of its tasks.
    pub fn on_suspend_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| e.on_suspend(t, who, now))
    }

    /// `scontrol resume` on a job, an array, or some of its tasks.
    pub fn on_resume_tasks(
        &mut self,
        id: JobId,
        tasks: Option<&TaskSet>,
        who: &proto::Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.for_targets(id, tasks, who, now, |e, t| e.on_resume(t, who, now))
    }

    /// Sets the reason of arrays the throttle holds back.
    pub(crate) fn mark_throttled(&mut self, ids: Vec<JobId>) {
        for id in ids {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.reason = PendingReason::JobArrayTaskLimit;
            }
        }
    }

    /// The array environment of a task (sbatch(1) "OUTPUT ENVIRONMENT
    /// VARIABLES").
    pub(crate) fn array_env(job: &Job) -> Vec<(String, String)> {
        let Some(a) = &job.array else {
            return Vec::new();
        };
        let Some(t) = a.task_id else {
            return Vec::new();
        };
        vec![
            ("SLURM_ARRAY_JOB_ID".into(), a.array_job_id.to_string()),
            ("SLURM_ARRAY_TASK_COUNT".into(), a.count.to_string()),
            ("SLURM_ARRAY_TASK_ID".into(), t.to_string()),
            ("SLURM_ARRAY_TASK_MAX".into(), a.max.to_string()),
            ("SLURM_ARRAY_TASK_MIN".into(), a.min.to_string()),
            ("SLURM_ARRAY_TASK_STEP".into(), a.step.to_string()),
        ]
    }
}
