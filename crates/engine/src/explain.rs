//! `muster explain`: where a job stands and why, from the tables and the
//! last scheduling pass's plan.

use crate::{Engine, Job};
use model::{JobId, JobState, TimeLimit, Timestamp};
use proto::{ExplainNode, JobExplanation, SlurmError};

impl Engine {
    /// Where job `id` stands in the queue, what blocks it, which nodes could
    /// run it and what runs there, and when it is expected to start.
    pub fn explain(&self, id: JobId, now: Timestamp) -> Result<JobExplanation, SlurmError> {
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        let info = self.job_info(job, now);
        // The jobs the scheduler tries, in the order it tries them.
        let queued: Vec<&Job> = self
            .jobs
            .values()
            .filter(|j| {
                j.state == JobState::Pending
                    && !j.completing
                    && j.held.is_none()
                    && j.desc.begin_time.is_none_or(|b| b <= now)
            })
            .map(|j| &**j)
            .collect();
        let requests: Vec<sched::JobRequest> = queued.iter().map(|j| self.request_for(j)).collect();
        let order: Vec<&Job> = sched::priority_order(&requests, &self.part_views())
            .into_iter()
            .map(|i| queued[i])
            .collect();
        let place = order.iter().position(|j| j.id == id);
        let req = self.request_for(job);
        let mut request = format!(
            "{} node{}, {} CPU{}",
            req.min_nodes,
            if req.min_nodes == 1 { "" } else { "s" },
            info.num_cpus,
            if info.num_cpus == 1 { "" } else { "s" }
        );
        if let Some(g) = &info.tres_per_node {
            request.push_str(&format!(", {} per node", g.trim_start_matches("gres:")));
        }
        if let (Some(n), Some(until)) = (job.desc.switches, self.switch_deadline(job)) {
            // `--switches`: what it waits for, and until when.
            let leaves = if n == 1 { "switch" } else { "switches" };
            if job.state == JobState::Pending && self.topology().is_some() && now < until {
                request.push_str(&format!(
                    ", at most {n} leaf {leaves} (waits for that {}s more, then takes any)",
                    until - now
                ));
            } else {
                request.push_str(&format!(", at most {n} leaf {leaves} (wait over)"));
            }
        }
        let expected_end = |j: &Job| match (j.start_time, j.time_limit) {
            (Some(s), TimeLimit::Minutes(m)) => Some(s + i64::from(m) * 60),
            _ => None,
        };
        let mut candidates = Vec::new();
        for &p in &job.partitions {
            for &n in &self.parts[p].nodes {
                let node = &self.nodes[n.0 as usize];
                if req.excluded_nodes.contains(&n)
                    || candidates
                        .iter()
                        .any(|c: &ExplainNode| c.name == node.conf.name)
                    || req
                        .constraint
                        .as_ref()
                        .is_some_and(|c| !c.satisfied_by(&node.conf.features))
                {
                    continue;
                }
                candidates.push(ExplainNode {
                    name: node.conf.name.clone(),
                    state: node.state.sinfo_long(),
                    cpus: node.conf.cpus,
                    alloc_cpus: node.alloc_cpus,
                    jobs: node
                        .jobs
                        .iter()
                        .filter_map(|j| self.jobs.get(j))
                        .map(|j| (j.id, expected_end(j)))
                        .collect(),
                });
            }
        }
        let plan = (job.state == JobState::Pending)
            .then(|| self.plans.get(&id))
            .flatten();
        let mut waits_for: Vec<(JobId, Timestamp)> = Vec::new();
        if let Some(p) = plan {
            // A plan over the pool (`bf_plan`) names no nodes: it waits
            // for CPUs anywhere in its partition.
            let on = match p.nodes() {
                named if !named.is_empty() => named,
                _ => self
                    .parts
                    .get(job.partition)
                    .map(|part| part.nodes.clone())
                    .unwrap_or_default(),
            };
            for n in on {
                for j in &self.nodes[n.0 as usize].jobs {
                    let Some(other) = self.jobs.get(j) else {
                        continue;
                    };
                    if let Some(end) = expected_end(other) {
                        if end <= p.start && !waits_for.iter().any(|(w, _)| w == j) {
                            waits_for.push((*j, end));
                        }
                    }
                }
            }
            waits_for.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let planned_nodes = if plan.is_some() {
            info.sched_nodes.clone()
        } else {
            info.nodes.clone()
        };
        Ok(JobExplanation {
            job_id: id,
            user: info.user.clone(),
            partition: info.partition.clone(),
            state: job.state,
            reason: job.reason,
            priority: job.priority,
            position: place.map(|p| p as u32 + 1),
            n_queued: order.len() as u32,
            ahead: place
                .filter(|p| *p > 0)
                .map(|p| (order[p - 1].id, order[p - 1].priority)),
            first: order.first().map(|j| (j.id, j.priority)),
            request,
            time_limit: job.time_limit,
            start_time: info.start_time,
            planned_nodes,
            waits_for,
            candidates,
            reservations: match (&job.desc.reservation, job.reason) {
                (Some(own), model::PendingReason::Reservation) => vec![own.clone()],
                _ if job.state == JobState::Pending => self.resvs_in_way(job, now),
                _ => Vec::new(),
            },
        })
    }
}
