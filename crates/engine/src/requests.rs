//! What one scheduling pass collects before it plans: the requests of
//! the pending jobs it tries (`Engine::collect_requests`) and what it must
//! tell the others.

use crate::{Engine, Job};
use model::{JobId, JobState, Timestamp};
use sched::JobRequest;

impl Engine {
    /// The requests of the pending jobs that may run now (of `only`, when
    /// given), and what the pass must tell the others.
    pub(crate) fn collect_requests(
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
                    .is_none_or(|q| !q.spreads || self.resvs.ever || sched::spreads(&req)),
                "job {} spreads by its queue entry, not by its request",
                job.id
            );
            pass.requests.push(req);
        }
        pass
    }
}

/// What `Engine::walk` needs to try an array's pending record as a full
/// pass does (`Engine::push_array_requests`): the pass's record of the
/// requests that stand for tasks, the limits' room, the CPUs free before
/// the pass; and the arrays that may start nothing (their reason is then
/// JobArrayTaskLimit, `Engine::mark_throttled`).
pub(crate) struct ArrayWalk<'a> {
    pub(crate) arrays: &'a mut crate::array::ArrayRequests,
    pub(crate) limited: &'a crate::limits::LimitCheck,
    pub(crate) free_cpus: u32,
    pub(crate) throttled: Vec<JobId>,
}

/// What one pass collects before it plans.
#[derive(Default)]
pub(crate) struct Pass {
    pub(crate) requests: Vec<JobRequest>,
    pub(crate) arrays: crate::array::ArrayRequests,
    pub(crate) throttled: Vec<JobId>,
    pub(crate) waiting_to_begin: Vec<JobId>,
    /// Jobs the pass tries only where the pass has not shown that they
    /// would wait (`Engine::walk_pass`): (order key, id, CPUs it needs,
    /// its `parts_mask`).
    pub(crate) optional: Vec<Optional>,
}

/// A job a pass may leave out where it has shown it would wait
/// (`Engine::walk_pass`): (order key, id, CPUs it needs, its `parts_mask`,
/// its time limit in seconds).
pub(crate) type Optional = (sched::OrderKey, JobId, i64, Option<u64>, i64);
