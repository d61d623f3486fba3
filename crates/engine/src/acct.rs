//! Accounting records: what the controller tells the accounting store as a
//! job moves (submit, start, end). Every record is the job's whole current
//! state, keyed by (cluster, job id, submit time), so a write may be
//! repeated or replayed without duplicating anything.

use crate::{Command, Engine, Job};
use model::units::format_memory_mb;
use model::{JobId, JobState, Timestamp};
use proto::{AcctJob, AcctStep, StepId};
use std::ops::Bound::{Excluded, Unbounded};

/// A TRES string in the order sacct prints it (sorted by name):
/// `billing=1,cpu=1,mem=500M,node=1`.
pub fn sorted_tres(tres: &str) -> String {
    let mut parts: Vec<&str> = tres.split(',').filter(|p| !p.is_empty()).collect();
    parts.sort_by_key(|p| p.split('=').next().unwrap_or(""));
    parts.join(",")
}

/// A job's TRES with its licenses added (`license/foo=1`), as Slurm
/// counts each license as a TRES.
fn with_licenses(mut tres: String, job: &crate::Job) -> String {
    for (name, n) in crate::licenses::of_job(job) {
        tres.push_str(&format!(",license/{name}={n}"));
    }
    tres
}

impl Engine {
    /// The accounting record of a job as it stands now.
    pub fn acct_job(&self, id: JobId, now: Timestamp) -> Option<AcctJob> {
        let job = self.jobs.get(&id)?;
        let info = self.job_info(job, now);
        let started = job.start_time.is_some();
        let req_mem = match (info.mem_per_node, info.mem_per_cpu) {
            (Some(0), _) | (None, None) => String::new(),
            (Some(m), _) => format_memory_mb(m * u64::from(job.min_nodes.max(1))),
            (None, Some(m)) => {
                format_memory_mb(m * u64::from(job.ntasks * info.cpus_per_task.max(1)))
            }
        };
        let mut steps = Vec::new();
        if started && !job.desc.alloc_only {
            let batch_host = info.nodes.first().cloned().unwrap_or_default();
            let batch_cpus = info.cpus_per_node.first().copied().unwrap_or(1);
            let batch_mem = job
                .alloc
                .as_ref()
                .map(|a| a.nodes[0].mem)
                .unwrap_or_else(|| info.mem_per_cpu.unwrap_or(0) * u64::from(batch_cpus));
            // A batch shell killed by a signal is CANCELLED, as sacct shows
            // Slurm's; one that exited non-zero FAILED.
            let state = match job.state {
                JobState::Running => JobState::Running,
                JobState::Failed if job.exit.signal != 0 => JobState::Cancelled,
                JobState::Completed | JobState::Failed | JobState::OutOfMemory => job.state,
                _ => JobState::Cancelled,
            };
            let mut alloc_tres = format!("cpu={batch_cpus}");
            if batch_mem > 0 {
                alloc_tres.push_str(&format!(",mem={}", format_memory_mb(batch_mem)));
            }
            alloc_tres.push_str(",node=1");
            steps.push(AcctStep {
                step: StepId::Batch,
                name: "batch".into(),
                state,
                exit_code: job.exit,
                start_time: job.start_time,
                end_time: if job.state.is_finished() {
                    job.end_time
                } else {
                    None
                },
                nodes: batch_host,
                n_nodes: 1,
                n_cpus: batch_cpus,
                n_tasks: 1,
                alloc_tres,
                usage: job.batch_usage.as_deref().cloned().unwrap_or_default(),
                // The batch script runs in the job's container.
                container: info.container.clone(),
            });
            // PrologFlags=Contain: the extern step holds the whole
            // allocation for the job's life (Slurm lists it after .batch).
            if self.settings.prolog_contain {
                steps.push(AcctStep {
                    step: StepId::Extern,
                    name: "extern".into(),
                    state: if job.state.is_finished() {
                        JobState::Completed
                    } else {
                        JobState::Running
                    },
                    exit_code: model::ExitCode::default(),
                    start_time: job.start_time,
                    end_time: if job.state.is_finished() {
                        job.end_time
                    } else {
                        None
                    },
                    nodes: hostlist::compress(&info.nodes),
                    n_nodes: info.num_nodes,
                    n_cpus: info.num_cpus,
                    n_tasks: info.num_nodes,
                    alloc_tres: sorted_tres(&info.tres),
                    usage: job.extern_usage.as_deref().cloned().unwrap_or_default(),
                    container: None,
                });
            }
        }
        steps.extend(self.step_records(job));
        Some(AcctJob {
            cluster: self.settings.cluster_name.clone(),
            job_id: id,
            array_job_id: job.array.as_ref().map(|a| a.array_job_id.0),
            array_task_id: job.array.as_ref().and_then(|a| a.task_id),
            array_task_str: job.array.as_ref().filter(|a| a.is_meta()).map(|a| {
                if a.throttle > 0 {
                    format!("{}%{}", a.pending, a.throttle)
                } else {
                    a.pending.to_string()
                }
            }),
            name: info.name,
            user: info.user,
            uid: info.uid,
            gid: info.gid,
            account: job.desc.account.clone().unwrap_or_default(),
            qos: info.qos,
            partition: info.partition,
            state: job.state,
            cancelled_by: job.cancelled_by,
            reason: info.reason.as_slurm_str().to_string(),
            // sacct shows the signal that ended a cancelled or timed-out
            // job on its batch step; the job itself keeps 0:0.
            exit_code: match job.state {
                JobState::Cancelled | JobState::Timeout | JobState::NodeFail => {
                    model::ExitCode::default()
                }
                _ => job.exit,
            },
            priority: info.priority,
            submit_time: job.submit_time,
            eligible_time: Some(job.eligible_time),
            start_time: job.start_time,
            end_time: if job.state.is_finished() {
                job.end_time
            } else {
                None
            },
            time_limit: job.time_limit,
            nodes: if info.nodes.is_empty() {
                "None assigned".into()
            } else {
                hostlist::compress(&info.nodes)
            },
            n_nodes: info.num_nodes,
            n_cpus: info.num_cpus,
            req_mem,
            req_tres: sorted_tres(&with_licenses(self.requested_tres(job), job)),
            alloc_tres: if started {
                sorted_tres(&with_licenses(info.tres.clone(), job))
            } else {
                String::new()
            },
            work_dir: info.work_dir,
            submit_line: info.submit_line,
            comment: info.comment,
            suspended_secs: job.suspended_secs
                + job.suspend.as_ref().map_or(0, |s| (now - s.since).max(0)),
            steps,
            container: info.container,
        })
    }

    /// Queues the job's current accounting record for the store.
    pub(crate) fn record(&mut self, id: JobId, now: Timestamp) {
        if self.simulated {
            return;
        }
        if let Some(rec) = self.acct_job(id, now) {
            self.outbox.push(Command::AcctRecord(Box::new(rec)));
        }
        self.mail(id, now);
    }

    /// Mails the job's user about a change since its last record that
    /// its `--mail-type` names: a start (BEGIN), an end (END, or FAIL for
    /// an end other than COMPLETED or CANCELLED), a requeue (REQUEUE).
    fn mail(&mut self, id: JobId, now: Timestamp) {
        use model::mail;
        let Some(job) = self.jobs.get(&id) else {
            self.mail_seen.remove(&id);
            return;
        };
        let bits = job.desc.mail_type;
        if bits == 0 {
            return;
        }
        let state = job.state;
        let Some(before) = self.mail_seen.insert(id, state) else {
            return;
        };
        if before == state {
            return;
        }
        let event = if state == JobState::Running && before == JobState::Pending {
            (bits & mail::BEGIN != 0).then(|| mail::Event::Began {
                queued: job.start_time.map_or(0, |t| t - job.submit_time),
            })
        } else if state.is_finished() && !before.is_finished() {
            // A cancelled job ended as its user asked: END, not FAIL.
            let failed = !matches!(state, JobState::Completed | JobState::Cancelled);
            let code = if job.exit.signal != 0 {
                0
            } else {
                job.exit.code
            };
            let run = job
                .start_time
                .map_or(0, |t| job.end_time.unwrap_or(now) - t);
            if failed && bits & mail::FAIL != 0 {
                Some(mail::Event::Failed { run, state, code })
            } else {
                (bits & mail::END != 0).then_some(mail::Event::Ended { run, state, code })
            }
        } else if state == JobState::Pending && before != JobState::Pending {
            (bits & mail::REQUEUE != 0).then_some(mail::Event::Requeued)
        } else {
            None
        };
        if state.is_finished() {
            self.mail_seen.remove(&id);
        }
        let Some(event) = event else {
            return;
        };
        self.mail_event(id, event);
    }

    /// Mails `event` of job `id` to its user: about the job itself, or,
    /// for an array task without `ARRAY_TASKS`, about the whole array as
    /// Slurm does (one `Array Summary` mail when the first task starts,
    /// one when the last ends, with the tasks' exit codes).
    pub(crate) fn mail_event(&mut self, id: JobId, event: model::mail::Event) {
        use model::mail;
        if self.simulated {
            return;
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let summary = job
            .array
            .as_ref()
            .filter(|_| job.desc.mail_type & mail::ARRAY_TASKS == 0)
            .map(|a| a.array_job_id);
        let subject = match summary {
            Some(array_id) => match self.array_summary(array_id, id, event) {
                Some(s) => s,
                None => return,
            },
            None => {
                let task = job
                    .array
                    .as_ref()
                    .and_then(|a| a.task_id.map(|t| (a.array_job_id.0, t)));
                mail::subject(&mail::who(id.0, task), &job.desc.name, event)
            }
        };
        let (user, default_user) = match &job.desc.mail_user {
            Some(u) => (u.clone(), false),
            None => (job.desc.user.clone(), true),
        };
        self.outbox.push(Command::Mail {
            user,
            default_user,
            subject,
        });
    }

    /// The `Array Summary` subject for `event` of task `id` of array
    /// `array_id`, or None where this event is not the array's: a start
    /// after another task's, an end while other tasks wait or run.
    fn array_summary(
        &self,
        array_id: JobId,
        id: JobId,
        event: model::mail::Event,
    ) -> Option<String> {
        use model::mail::{self, ArrayExits, Event};
        let records: Vec<&Job> = self
            .array_records(array_id)
            .into_iter()
            .filter_map(|r| self.jobs.get(&r).map(|b| &**b))
            .collect();
        let job = self.jobs.get(&id)?;
        let name = &job.desc.name;
        let word = mail::event_word(event);
        match event {
            Event::Began { .. } => {
                let first = records.iter().all(|r| r.id == id || r.start_time.is_none());
                first.then(|| mail::array_subject(array_id.0, name, &word, None))
            }
            Event::Ended { .. } | Event::Failed { .. } => {
                if !records.iter().all(|r| r.state.is_finished()) {
                    return None;
                }
                // Failed where any task failed and FAIL is asked for.
                let any_failed = records
                    .iter()
                    .any(|r| !matches!(r.state, JobState::Completed | JobState::Cancelled));
                let word = if any_failed && job.desc.mail_type & mail::FAIL != 0 {
                    "Failed"
                } else {
                    "Ended"
                };
                let state = self.jobs.get(&array_id).map_or(job.state, |r| r.state);
                let max_signal = records.iter().map(|r| r.exit.signal).max().unwrap_or(0);
                let exits = if max_signal != 0 {
                    ArrayExits::MaxSignal(max_signal)
                } else {
                    ArrayExits::Codes {
                        min: records.iter().map(|r| r.exit.code).min().unwrap_or(0),
                        max: records.iter().map(|r| r.exit.code).max().unwrap_or(0),
                    }
                };
                Some(mail::array_subject(
                    array_id.0,
                    name,
                    word,
                    Some((state, exits)),
                ))
            }
            Event::Requeued | Event::ReachedLimit { .. } => {
                Some(mail::array_subject(array_id.0, name, &word, None))
            }
        }
    }

    /// Records of every job the controller holds (re-sent after a restart,
    /// since writes are idempotent and some may have been lost).
    pub fn all_records(&self, now: Timestamp) -> Vec<AcctJob> {
        self.records_after(None, usize::MAX, now).0
    }

    /// The records of at most `max` jobs with ids above `after` (all jobs
    /// from the first when None), and the last id covered when more jobs
    /// may follow (None once the table is done): `all_records` in pieces.
    pub fn records_after(
        &self,
        after: Option<JobId>,
        max: usize,
        now: Timestamp,
    ) -> (Vec<AcctJob>, Option<JobId>) {
        let range = match after {
            Some(id) => self.jobs.range((Excluded(id), Unbounded)),
            None => self.jobs.range(..),
        };
        let mut out = Vec::new();
        let mut last = None;
        for (id, _) in range.take(max) {
            out.extend(self.acct_job(*id, now));
            last = Some(*id);
        }
        let more = last.filter(|id| self.jobs.range((Excluded(*id), Unbounded)).next().is_some());
        (out, more)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tres_sorted_as_sacct_prints() {
        assert_eq!(
            super::sorted_tres("cpu=1,mem=500M,node=1,billing=1"),
            "billing=1,cpu=1,mem=500M,node=1"
        );
    }
}
