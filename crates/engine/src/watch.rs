//! What the controller's watch stream reads of the engine: which jobs
//! changed since it last looked (noted by the job table only while a
//! stream is wanted, so nobody watching costs nothing), each job's facts
//! as a watcher sees them, the nodes, and the counts `/metrics` reads.
//! The stream itself (numbering, the ring, the watchers) is ctld's.

use crate::{Engine, Job, Node};
use model::{JobId, JobState};
use proto::watch::{JobChange, JobEvent};
use std::collections::BTreeMap;

/// Jobs by (state, partition, count) and pending jobs by (reason, count).
pub type JobCounts = (Vec<(String, String, u64)>, Vec<(String, u64)>);

impl Engine {
    /// Starts (or stops) noting the jobs that change, for
    /// [`Engine::take_watch_changes`].
    pub fn set_watch_notes(&mut self, on: bool) {
        self.jobs.set_watch_notes(on);
    }

    /// The jobs changed since the last call, each once, in id order
    /// (into `out`, emptied first); none while notes are off.
    pub fn take_watch_changes(&mut self, out: &mut Vec<JobId>) {
        self.jobs.take_watch_changed(out);
    }

    /// Every job id and state (for a watch stream's starting point).
    pub fn job_states(&self) -> impl Iterator<Item = (JobId, JobState)> + '_ {
        self.jobs.values().map(|j| (j.id, j.state))
    }

    /// Every node, in configuration order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// A job as a watcher sees it, with `event` and `previous` as given
    /// (the exit code only for `Ended`); None when the job is gone.
    pub fn watch_job(
        &self,
        id: JobId,
        event: JobEvent,
        previous: Option<JobState>,
    ) -> Option<JobChange> {
        let job = self.jobs.get(&id)?;
        Some(JobChange {
            event,
            job_id: id,
            array_job_id: job.array.as_ref().map(|a| a.array_job_id.0),
            array_task_id: job.array.as_ref().and_then(|a| a.task_id),
            name: job.desc.name.clone(),
            user: job.desc.user.clone(),
            uid: job.desc.uid,
            partition: self.job_partition_text(job),
            state: if event == JobEvent::Submitted {
                JobState::Pending
            } else {
                job.state
            },
            previous,
            reason: job.reason.as_slurm_str().to_string(),
            nodes: self.job_node_text(job),
            exit_code: (event == JobEvent::Ended).then_some(job.exit),
        })
    }

    /// A job's partition as squeue shows it: a pending job's every
    /// partition, comma separated.
    fn job_partition_text(&self, job: &Job) -> String {
        if job.state == JobState::Pending && job.partitions.len() > 1 {
            job.partitions
                .iter()
                .map(|p| self.parts[*p].conf.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        } else {
            self.parts[job.partition].conf.name.clone()
        }
    }

    /// The nodes a job holds, or held once ended, as a hostlist.
    fn job_node_text(&self, job: &Job) -> String {
        let names: Vec<String> = match &job.alloc {
            Some(a) => a
                .nodes
                .iter()
                .map(|n| self.nodes[n.node.0 as usize].conf.name.clone())
                .collect(),
            None => job
                .ran_on
                .iter()
                .map(|i| self.nodes[i.0 as usize].conf.name.clone())
                .collect(),
        };
        if names.is_empty() {
            String::new()
        } else {
            hostlist::compress(&names)
        }
    }

    /// Jobs by (state, partition) and pending jobs by reason, for
    /// `/metrics` (a pending job of several partitions counts in each).
    pub fn job_counts(&self) -> JobCounts {
        let mut by_state: BTreeMap<(JobState, usize), u64> = BTreeMap::new();
        let mut by_reason: BTreeMap<&'static str, u64> = BTreeMap::new();
        for job in self.jobs.values() {
            if job.state == JobState::Pending && !job.partitions.is_empty() {
                for p in &job.partitions {
                    *by_state.entry((job.state, *p)).or_default() += 1;
                }
            } else {
                *by_state.entry((job.state, job.partition)).or_default() += 1;
            }
            if job.state == JobState::Pending {
                *by_reason.entry(job.reason.as_slurm_str()).or_default() += 1;
            }
        }
        (
            by_state
                .into_iter()
                .map(|((s, p), n)| {
                    (
                        s.as_slurm_str().to_string(),
                        self.parts[p].conf.name.clone(),
                        n,
                    )
                })
                .collect(),
            by_reason
                .into_iter()
                .map(|(r, n)| (r.to_string(), n))
                .collect(),
        )
    }
}
