//! Every job's earliest deadline in time order: what the timer must act on
//! next, without a look at every job.
//!
//! A job's deadline (`job_wake`: its time limit or `--signal` warning, its
//! begin time or `--deadline`, or its purge) depends only on its own record
//! and `MinJobAge`, so the index is brought up to date from the jobs the
//! job table noted as changed since (`JobTable::take_wake_changed`), as the
//! queue is. Deadlines that are no job's own (dependency delays, priority
//! recalculation, node timeouts) are the engine's `global_wake`.

use crate::queue::JobTable;
use crate::{IdHash, Job};
use model::{JobId, JobState, PendingReason, Timestamp};
use std::collections::{BTreeSet, HashMap};

/// The jobs that have a deadline, by it (see the module's comment).
#[derive(Clone, Debug, Default)]
pub(crate) struct Deadlines {
    by_time: BTreeSet<(Timestamp, JobId)>,
    at: HashMap<JobId, Timestamp, IdHash>,
    /// The last update's changed jobs (a buffer kept for the next).
    changed: Vec<JobId>,
}

impl Deadlines {
    /// Brings the index up to date with the jobs changed since the last
    /// call; `min_age`: `MinJobAge` in seconds.
    pub(crate) fn update(&mut self, jobs: &mut JobTable, min_age: i64) {
        let mut changed = std::mem::take(&mut self.changed);
        jobs.take_wake_changed(&mut changed);
        for &id in &changed {
            self.enter(jobs, id, min_age);
        }
        self.changed = changed;
    }

    fn enter(&mut self, jobs: &JobTable, id: JobId, min_age: i64) {
        let wake = jobs.get(&id).and_then(|j| job_wake(j, min_age));
        let old = self.at.get(&id).copied();
        if wake == old {
            // Changed, but not its deadline (most notes: a pass tells a
            // pending job its reason).
            return;
        }
        if let Some(t) = old {
            self.at.remove(&id);
            self.by_time.remove(&(t, id));
        }
        if let Some(t) = wake {
            self.by_time.insert((t, id));
            self.at.insert(id, t);
        }
    }

    /// The earliest deadline of any job.
    pub(crate) fn first(&self) -> Option<Timestamp> {
        self.by_time.first().map(|e| e.0)
    }

    /// The jobs with something due at `now`, in job id order, into `ids`
    /// (emptied first).
    pub(crate) fn due(&self, now: Timestamp, ids: &mut Vec<JobId>) {
        ids.clear();
        ids.extend(self.by_time.range(..=(now, JobId(u32::MAX))).map(|e| e.1));
        ids.sort_unstable();
    }

    /// What is wrong with the index against `jobs` (for
    /// `Engine::check_invariants`): once the changed jobs are brought in,
    /// it holds each job's deadline and nothing else.
    pub(crate) fn problems(&self, jobs: &JobTable, min_age: i64) -> Vec<String> {
        let mut now = self.clone();
        for &id in jobs.wake_changed() {
            now.enter(jobs, id, min_age);
        }
        let fresh: BTreeSet<(Timestamp, JobId)> = jobs
            .values()
            .filter_map(|j| job_wake(j, min_age).map(|t| (t, j.id)))
            .collect();
        let mut problems = Vec::new();
        if now.by_time != fresh {
            let stale = now.by_time.difference(&fresh).collect::<Vec<_>>();
            let missing = fresh.difference(&now.by_time).collect::<Vec<_>>();
            problems.push(format!(
                "the deadlines hold stale {stale:?} and lack {missing:?}"
            ));
        }
        if now.at.len() != now.by_time.len()
            || now.by_time.iter().any(|(t, id)| now.at.get(id) != Some(t))
        {
            problems.push("the deadlines' indexes disagree".into());
        }
        problems
    }
}

/// The earliest thing due for one job: its time limit or `--signal`
/// warning (or a `--mail-type=TIME_LIMIT_*` mail), its begin time or deadline, or its purge (`min_age` seconds
/// after its end).
pub(crate) fn job_wake(job: &Job, min_age: i64) -> Option<Timestamp> {
    match job.state {
        JobState::Running => {
            // A step's own time limit (`srun -t`) may come first.
            let step_end = job.steps.iter().filter_map(|s| s.limit_end()).min();
            let job_end = job
                .limit_end()
                .map(|end| match (&job.desc.signal, job.warned) {
                    (Some(sig), false) => end.min(end - sig.secs as i64),
                    _ => end,
                });
            // `--mail-type=TIME_LIMIT_50/80/90`: the next share's mail.
            let mail = crate::next_limit_mail(job);
            job_end.into_iter().chain(step_end).chain(mail).min()
        }
        JobState::Pending => {
            let begin = job
                .desc
                .begin_time
                .filter(|_| job.reason == PendingReason::BeginTime);
            begin.into_iter().chain(crate::deadline_due(job)).min()
        }
        _ => job
            .end_time
            .filter(|_| !job.completing)
            .map(|end| end + min_age),
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{desc, engine, submit, user};
    use model::{JobState, TimeLimit};

    #[test]
    fn the_deadlines_follow_starts_ends_and_purges() {
        let mut e = engine();
        let mut d = desc();
        d.time_limit = Some(TimeLimit::Minutes(2));
        let a = submit(&mut e, d, 0);
        let mut d = desc();
        d.time_limit = Some(TimeLimit::Minutes(1));
        let b = submit(&mut e, d, 10);
        assert_eq!(e.next_wakeup(), Some(70), "b's time limit");
        e.on_cancel(b, None, proto::SignalScope::Steps, &user(), 20)
            .unwrap();
        assert!(
            e.check_invariants().is_empty(),
            "{:?}",
            e.check_invariants()
        );
        assert_eq!(e.next_wakeup(), Some(120), "a's time limit");
        e.on_timer(120);
        assert_eq!(e.jobs[&a].state, JobState::Timeout);
        assert!(
            e.check_invariants().is_empty(),
            "{:?}",
            e.check_invariants()
        );
    }

    #[test]
    fn a_change_that_bypasses_the_table_is_caught() {
        let mut e = engine();
        let mut d = desc();
        d.time_limit = Some(TimeLimit::Minutes(2));
        let a = submit(&mut e, d, 0);
        assert_eq!(e.next_wakeup(), Some(120));
        assert!(e.check_invariants().is_empty());
        e.jobs.map_mut(&a).time_limit = TimeLimit::Minutes(3);
        let problems = e.check_invariants();
        assert!(problems.iter().any(|p| p.contains("stale")), "{problems:?}");
    }
}
