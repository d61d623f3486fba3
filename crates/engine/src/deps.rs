//! Job dependencies (sbatch(1) `--dependency`), evaluated at the start of
//! every scheduling pass.
//!
//! ```text
//!  pending job with conditions --evaluate--> met:   condition dropped
//!                                            wait:  reason Dependency
//!                                            fail:  reason DependencyNeverSatisfied
//!                                                   (cancelled with --kill-on-invalid-dep)
//! ```
//!
//! A condition on a job the controller no longer holds resolves from the
//! outcome kept when the job was purged; one on a job id never seen is
//! dropped, as Slurm drops it.

use crate::{Engine, Job};
use model::depend::{DepItem, DepKind, Dependency};
use model::{JobId, JobState, PendingReason, Timestamp};
use proto::SlurmError;
use std::collections::BTreeMap;

/// Where a job's dependency stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DepStatus {
    /// Nothing to wait for.
    #[default]
    Clear,
    /// Some condition is not met yet.
    Waiting,
    /// It can never be met.
    Never,
}

/// How a purged job ended, kept for dependencies on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Its final state.
    pub state: JobState,
    /// When it started.
    pub start: Option<Timestamp>,
    /// When it ended.
    pub end: Option<Timestamp>,
    /// Its array, for a task.
    pub array_job_id: Option<JobId>,
    /// Its index, for a task.
    pub task: Option<u32>,
}

/// How many purged jobs' outcomes are kept.
const MAX_OUTCOMES: usize = 200_000;

/// One record as a condition sees it.
#[derive(Clone, Copy)]
struct View {
    state: JobState,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
}

/// A condition's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    /// Met at this time (the `+time` delay counts from it).
    Met(Timestamp),
    Wait,
    Fail,
    /// The job is unknown: the condition is dropped.
    Gone,
}

fn single(kind: DepKind, v: View) -> Answer {
    let done = v.state.is_finished();
    let at = v.end.or(v.start).unwrap_or(0);
    match kind {
        DepKind::After => {
            if v.state == JobState::Pending {
                Answer::Wait
            } else {
                Answer::Met(v.start.or(v.end).unwrap_or(0))
            }
        }
        DepKind::AfterAny => {
            if done {
                Answer::Met(at)
            } else {
                Answer::Wait
            }
        }
        DepKind::AfterOk | DepKind::AfterCorr => match (done, v.state == JobState::Completed) {
            (false, _) => Answer::Wait,
            (true, true) => Answer::Met(at),
            (true, false) => Answer::Fail,
        },
        DepKind::AfterNotOk => match (done, v.state == JobState::Completed) {
            (false, _) => Answer::Wait,
            (true, true) => Answer::Fail,
            (true, false) => Answer::Met(at),
        },
        DepKind::Singleton => Answer::Met(0),
    }
}

/// The answer for a whole array: every task must have started (after),
/// ended (afterany), ended well (afterok) or any ended badly (afternotok).
fn whole(kind: DepKind, views: &[View], pending: bool) -> Answer {
    if views.is_empty() && !pending {
        return Answer::Gone;
    }
    if pending {
        return Answer::Wait;
    }
    let latest = |f: fn(&View) -> Option<Timestamp>| views.iter().filter_map(f).max().unwrap_or(0);
    match kind {
        DepKind::After => {
            if views.iter().any(|v| v.state == JobState::Pending) {
                Answer::Wait
            } else {
                Answer::Met(latest(|v| v.start.or(v.end)))
            }
        }
        _ => {
            if views.iter().any(|v| !v.state.is_finished()) {
                return Answer::Wait;
            }
            let all_ok = views.iter().all(|v| v.state == JobState::Completed);
            let at = latest(|v| v.end);
            match kind {
                DepKind::AfterAny => Answer::Met(at),
                DepKind::AfterNotOk if !all_ok => Answer::Met(at),
                DepKind::AfterNotOk => Answer::Fail,
                _ if all_ok => Answer::Met(at),
                _ => Answer::Fail,
            }
        }
    }
}

impl Engine {
    fn view(job: &Job) -> View {
        View {
            state: job.state,
            start: job.start_time,
            end: job.end_time,
        }
    }

    /// Keeps how a purged job ended.
    pub(crate) fn remember_outcome(&mut self, job: &Job) {
        self.finished.insert(
            job.id,
            Outcome {
                state: job.state,
                start: job.start_time,
                end: job.end_time,
                array_job_id: job.array.as_ref().map(|a| a.array_job_id),
                task: job.array.as_ref().and_then(|a| a.task_id),
            },
        );
        while self.finished.len() > MAX_OUTCOMES {
            self.finished.pop_first();
        }
    }

    /// The outcomes kept for purged jobs (for snapshots).
    pub(crate) fn outcomes(&self) -> Vec<(JobId, Outcome)> {
        self.finished.iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// Restores the kept outcomes.
    pub(crate) fn set_outcomes(&mut self, list: Vec<(JobId, Outcome)>) {
        self.finished = list.into_iter().collect();
    }

    fn is_array_id(&self, id: JobId) -> bool {
        self.jobs
            .get(&id)
            .and_then(|j| j.array.as_ref())
            .is_some_and(|a| a.array_job_id == id)
            || self.array_tasks.contains_key(&id)
    }

    /// The answer of one task of an array (`123_4`).
    fn task_answer(&self, kind: DepKind, array_id: JobId, task: u32) -> Answer {
        if let Some(rec) = self.array_tasks.get(&array_id).and_then(|m| m.get(&task)) {
            if let Some(j) = self.jobs.get(rec) {
                return single(kind, Engine::view(j));
            }
        }
        let meta_pending = self.jobs.get(&array_id).is_some_and(|j| {
            j.array
                .as_ref()
                .is_some_and(|a| a.is_meta() && a.pending.contains(task))
        });
        if meta_pending {
            let meta = &self.jobs[&array_id];
            return single(kind, Engine::view(meta));
        }
        match self
            .finished
            .values()
            .find(|o| o.array_job_id == Some(array_id) && o.task == Some(task))
        {
            Some(o) => single(
                kind,
                View {
                    state: o.state,
                    start: o.start,
                    end: o.end,
                },
            ),
            None => Answer::Gone,
        }
    }

    fn item_answer(&self, job: &Job, item: &DepItem) -> Answer {
        let Some(t) = item.target else {
            return self.singleton_answer(job);
        };
        let id = JobId(t.job_id);
        if let Some(task) = t.task {
            return self.task_answer(item.kind, id, task);
        }
        if item.kind == DepKind::AfterCorr {
            match job.array.as_ref() {
                Some(a) if a.task_id.is_some() => {
                    let task = a.task_id.unwrap_or_default();
                    return match self.task_answer(DepKind::AfterOk, id, task) {
                        Answer::Gone => Answer::Met(0),
                        a => a,
                    };
                }
                // The array's pending record waits; its tasks split off as
                // their partners end (see `evaluate_one`).
                Some(_) => return Answer::Wait,
                None => {}
            }
        }
        if self.is_array_id(id) || self.finished_array(id) {
            let mut views: Vec<View> = self
                .array_records(id)
                .iter()
                .filter_map(|r| self.jobs.get(r).map(|j| &**j))
                .filter(|j| {
                    !j.array
                        .as_ref()
                        .is_some_and(|a| a.is_meta() && a.pending.is_empty())
                })
                .map(Engine::view)
                .collect();
            let pending = self.jobs.get(&id).is_some_and(|j| {
                j.state == JobState::Pending
                    && j.array
                        .as_ref()
                        .is_some_and(|a| a.is_meta() && !a.pending.is_empty())
            });
            views.extend(
                self.finished
                    .values()
                    .filter(|o| o.array_job_id == Some(id))
                    .map(|o| View {
                        state: o.state,
                        start: o.start,
                        end: o.end,
                    }),
            );
            return whole(item.kind, &views, pending);
        }
        if let Some(j) = self.jobs.get(&id) {
            return single(item.kind, Engine::view(j));
        }
        match self.finished.get(&id) {
            Some(o) => single(
                item.kind,
                View {
                    state: o.state,
                    start: o.start,
                    end: o.end,
                },
            ),
            None => Answer::Gone,
        }
    }

    fn finished_array(&self, id: JobId) -> bool {
        self.finished
            .get(&id)
            .is_some_and(|o| o.array_job_id == Some(id))
    }

    /// singleton: waits while another job of the same name and user runs,
    /// or is pending and was submitted earlier.
    fn singleton_answer(&self, job: &Job) -> Answer {
        let blocked = self.jobs.values().any(|o| {
            o.id != job.id
                && o.desc.uid == job.desc.uid
                && o.desc.name == job.desc.name
                && (matches!(o.state, JobState::Running | JobState::Suspended)
                    || o.completing
                    || (o.state == JobState::Pending && o.id < job.id))
        });
        if blocked {
            Answer::Wait
        } else {
            Answer::Met(0)
        }
    }

    /// Evaluates the dependencies of every pending job: drops met
    /// conditions, sets reasons, cancels jobs whose dependency failed when
    /// asked to, and splits off the tasks of an `aftercorr` array whose
    /// partner task ended. Sets `dep_wake`, the earliest time a `+time`
    /// delay ends; returns whether any pending job had a dependency.
    pub(crate) fn evaluate_dependencies(&mut self, now: Timestamp) -> bool {
        if !self.may_depend {
            self.dep_wake = None;
            return false;
        }
        let ids: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Pending && j.depend.is_some())
            .map(|j| j.id)
            .collect();
        let any = !ids.is_empty();
        self.may_depend = any;
        self.dep_wake = None;
        let mut corr_splits: Vec<(JobId, u32)> = Vec::new();
        for id in ids {
            self.evaluate_one(id, now, &mut corr_splits);
        }
        let mut new_ids = Vec::new();
        for (meta, task) in corr_splits {
            if let Some(rec) = self.split_task(meta, task, now) {
                new_ids.push(rec);
            }
        }
        let mut none = Vec::new();
        for id in new_ids {
            self.evaluate_one(id, now, &mut none);
        }
        any
    }

    fn evaluate_one(&mut self, id: JobId, now: Timestamp, corr_splits: &mut Vec<(JobId, u32)>) {
        let job = &self.jobs[&id];
        let Some(dep) = job.depend.clone() else {
            return;
        };
        let mut remaining = Vec::new();
        let mut any_met = false;
        let mut any_fail = false;
        let mut any_wait = false;
        let mut wake: Option<Timestamp> = None;
        for item in &dep.items {
            let mut answer = self.item_answer(job, item);
            if let (Answer::Met(at), Some(t)) = (answer, item.target) {
                if t.delay_min > 0 {
                    let due = at + t.delay_min as i64 * 60;
                    if now < due {
                        wake = Some(wake.map_or(due, |w: Timestamp| w.min(due)));
                        answer = Answer::Wait;
                    }
                }
            }
            // An array waiting on another task by task: split off the tasks
            // whose partner ended, each then decides on its own.
            if item.kind == DepKind::AfterCorr && answer == Answer::Wait {
                if let Some(a) = job.array.as_ref().filter(|a| a.is_meta()) {
                    let target = JobId(item.target.map_or(0, |t| t.job_id));
                    for t in a.pending.iter().take(10_000) {
                        if self.task_answer(DepKind::AfterOk, target, t) != Answer::Wait {
                            corr_splits.push((id, t));
                        }
                    }
                }
            }
            match answer {
                Answer::Met(_) | Answer::Gone => any_met = true,
                Answer::Wait => {
                    any_wait = true;
                    remaining.push(*item);
                }
                Answer::Fail => {
                    any_fail = true;
                    remaining.push(*item);
                }
            }
        }
        if let Some(w) = wake {
            self.dep_wake = Some(self.dep_wake.map_or(w, |d: Timestamp| d.min(w)));
        }
        let status = if dep.any {
            if any_met {
                DepStatus::Clear
            } else if any_wait {
                DepStatus::Waiting
            } else {
                DepStatus::Never
            }
        } else if any_fail {
            DepStatus::Never
        } else if any_wait {
            DepStatus::Waiting
        } else {
            DepStatus::Clear
        };
        let kill = status == DepStatus::Never
            && job
                .desc
                .kill_on_invalid_dep
                .unwrap_or(self.settings.kill_invalid_depend);
        let job = self.jobs.get_mut(&id).expect("evaluated job exists");
        job.dep_status = status;
        match status {
            DepStatus::Clear => job.depend = None,
            _ if !dep.any => {
                job.depend = Some(Dependency {
                    any: false,
                    items: remaining,
                })
            }
            _ => {}
        }
        if job.held.is_none() {
            match status {
                DepStatus::Waiting => job.reason = PendingReason::Dependency,
                DepStatus::Never => job.reason = PendingReason::DependencyNeverSatisfied,
                DepStatus::Clear => {
                    if matches!(
                        job.reason,
                        PendingReason::Dependency | PendingReason::DependencyNeverSatisfied
                    ) {
                        job.reason = PendingReason::None;
                    }
                }
            }
        }
        if kill {
            self.end_job(id, JobState::Cancelled, now);
            if let Some(j) = self.jobs.get_mut(&id) {
                j.reason = PendingReason::DependencyNeverSatisfied;
            }
        }
    }

    /// The dependency as `scontrol show job` prints it:
    /// `afterok:123(unfulfilled)`, `afterok:123(failed)`, `(null)` once met.
    pub(crate) fn dependency_text(&self, job: &Job) -> Option<String> {
        let dep = job.depend.as_ref()?;
        if dep.items.is_empty() {
            return None;
        }
        let sep = if dep.any { "?" } else { "," };
        let never = job.dep_status == DepStatus::Never;
        // Each condition says where it stands: in an OR dependency one that
        // failed shows `(failed)` while the job still waits on the others.
        let state = |item: &DepItem| {
            if never || self.item_answer(job, item) == Answer::Fail {
                "failed"
            } else {
                "unfulfilled"
            }
        };
        Some(
            dep.items
                .iter()
                .map(|i| format!("{i}({})", state(i)))
                .collect::<Vec<_>>()
                .join(sep),
        )
    }

    /// Parses and checks a dependency for job `id`: malformed text, a
    /// dependency on itself, or a cycle through other jobs' dependencies.
    pub(crate) fn check_dependency(
        &self,
        id: JobId,
        text: &str,
    ) -> Result<Option<Dependency>, SlurmError> {
        let dep = Dependency::parse(text).map_err(|_| SlurmError::Dependency)?;
        if dep.is_empty() {
            return Ok(None);
        }
        let array_id = self
            .jobs
            .get(&id)
            .and_then(|j| j.array.as_ref())
            .map(|a| a.array_job_id);
        for item in &dep.items {
            if let Some(t) = item.target {
                if t.job_id == id.0 || Some(JobId(t.job_id)) == array_id {
                    return Err(SlurmError::Dependency);
                }
            }
        }
        if self.reaches(&dep, id, 0) {
            return Err(SlurmError::CircularDependency);
        }
        Ok(Some(dep))
    }

    /// True when following `dep` through other pending jobs' dependencies
    /// leads back to `id` (depth-limited, as Slurm's max_depend_depth).
    fn reaches(&self, dep: &Dependency, id: JobId, depth: u32) -> bool {
        if depth > 10 {
            return false;
        }
        dep.items.iter().filter_map(|i| i.target).any(|t| {
            let tid = JobId(t.job_id);
            if tid == id {
                return true;
            }
            let mut next: BTreeMap<JobId, &Dependency> = BTreeMap::new();
            for r in std::iter::once(tid).chain(self.array_records(tid)) {
                if let Some(d) = self.jobs.get(&r).and_then(|j| j.depend.as_ref()) {
                    next.insert(r, d);
                }
            }
            next.values().any(|d| self.reaches(d, id, depth + 1))
        })
    }
}
