//! Preemption and suspension (Slurm's preempt/qos and
//! preempt/partition_prio, PreemptMode CANCEL, REQUEUE and SUSPEND,GANG;
//! `scontrol suspend/resume`).
//!
//! ```text
//!   schedule(now):  resume_suspended   a job suspended by preemption runs
//!                        |             again as soon as its own shares are free
//!                   hold_suspended_shares  what its preemptor leaves of those
//!                        |             shares is kept out of the pass's views
//!                   sched::plan
//!                        |
//!                   preempt_pass       each waiting job (priority order) that
//!                                      may preempt: sched::select_victims over
//!                                      the running jobs its QOS (or partition
//!                                      tier) outranks, past PreemptExemptTime
//!     CANCEL  -> victim ends PREEMPTED (SIGTERM, GraceTime, SIGKILL)
//!     REQUEUE -> victim back to PENDING, same id, restart count + 1; the run
//!                that ended is a PREEMPTED record in accounting
//!     SUSPEND -> SIGSTOP to the victim's processes, state SUSPENDED, its
//!                resources go to the preemptor at once
//! ```
//!
//! A suspended job keeps its shares (`Suspension::alloc`) but holds nothing
//! while suspended (so "a job holds an allocation exactly while RUNNING or
//! COMPLETING" stays true); the time it spends suspended does not count
//! toward its time limit (`Job::suspended_secs`).

use crate::{Command, Engine, Job};
use model::{JobId, JobState, PendingReason, Timestamp};
use proto::{Identity, SlurmError};
use sched::{Allocation, Candidate, JobRequest, NodeView};

/// How many waiting jobs one pass lets try to preempt (the highest in
/// priority): each try places the job several times, and a queue of
/// thousands of would-be preemptors must not make every pass slow. The
/// rest try in later passes, as the first ones start.
const MAX_PREEMPTORS_PER_PASS: usize = 64;

const SIGCONT: i32 = 18;
const SIGSTOP: i32 = 19;

/// PreemptType.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PreemptType {
    /// preempt/none.
    #[default]
    None,
    /// preempt/qos: a job's QOS `Preempt=` list names the QOS it may preempt.
    Qos,
    /// preempt/partition_prio: jobs in a partition of higher PriorityTier
    /// preempt jobs in lower ones.
    PartitionPrio,
}

/// What happens to a preempted job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PreemptMode {
    /// Not preempted.
    #[default]
    Off,
    /// Ended as PREEMPTED.
    Cancel,
    /// Put back in the queue (cancelled when it may not be requeued).
    Requeue,
    /// Stopped (SIGSTOP) until resources free, then resumed (SIGCONT).
    Suspend,
}

impl PreemptMode {
    /// Reads `CANCEL`, `REQUEUE`, `SUSPEND,GANG`, `OFF` (any case); GANG
    /// and WITHIN are flags; None for `CLUSTER`, empty or unknown words.
    pub fn parse(text: &str) -> Option<PreemptMode> {
        text.split(',')
            .map(|w| w.trim().to_ascii_uppercase())
            .find_map(|w| match w.as_str() {
                "OFF" => Some(PreemptMode::Off),
                "CANCEL" => Some(PreemptMode::Cancel),
                "REQUEUE" => Some(PreemptMode::Requeue),
                "SUSPEND" => Some(PreemptMode::Suspend),
                _ => None,
            })
    }
}

/// Whether a PreemptMode text has the WITHIN flag.
fn has_within(text: &str) -> bool {
    text.split(',')
        .any(|w| w.trim().eq_ignore_ascii_case("within"))
}

/// The preemption settings of slurm.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PreemptConf {
    /// PreemptType.
    pub kind: PreemptType,
    /// PreemptMode (the cluster's default).
    pub mode: PreemptMode,
    /// PreemptExemptTime, seconds: jobs that ran less are not preempted.
    pub exempt_secs: i64,
    /// PreemptMode has WITHIN: with preempt/qos, a job may preempt jobs
    /// of its own QOS that have a lower priority.
    #[serde(default)]
    pub within: bool,
    /// PreemptParameters `min_exempt_priority`: jobs of this priority or
    /// more are never preempted.
    #[serde(default)]
    pub min_exempt_priority: Option<u32>,
    /// PreemptParameters `youngest_first`: victims are the jobs that
    /// started last, whatever their size (by default, those whose loss is
    /// the fewest CPU-seconds).
    #[serde(default)]
    pub youngest_first: bool,
}

impl PreemptConf {
    /// Reads PreemptType, PreemptMode and PreemptExemptTime (slurm.conf
    /// checked them at load).
    pub fn from_config(cfg: &conf::Config) -> PreemptConf {
        let get = |k: &str| cfg.other.get(k).map(|(_, v)| v.trim().to_string());
        let kind = match get("preempttype")
            .map(|t| t.to_ascii_lowercase())
            .as_deref()
        {
            Some("preempt/qos") => PreemptType::Qos,
            Some("preempt/partition_prio") => PreemptType::PartitionPrio,
            _ => PreemptType::None,
        };
        let mode_text = get("preemptmode").unwrap_or_default();
        let mode = PreemptMode::parse(&mode_text).unwrap_or(PreemptMode::Off);
        let within = has_within(&mode_text);
        let exempt_secs = get("preemptexempttime")
            .and_then(|t| model::units::parse_time_limit(&t).ok())
            .map_or(0, |t| match t {
                model::TimeLimit::Minutes(m) => i64::from(m) * 60,
                model::TimeLimit::Unlimited => i64::MAX / 4,
            });
        // The other PreemptParameters (reorder_count, strict_order,
        // send_user_signal, suspend_grace_time) are accepted and unused.
        let params = get("preemptparameters").unwrap_or_default();
        let param = |name: &str| {
            params.split(',').map(str::trim).find_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                k.eq_ignore_ascii_case(name).then(|| v.to_string())
            })
        };
        PreemptConf {
            kind,
            mode,
            exempt_secs,
            within,
            min_exempt_priority: param("min_exempt_priority").and_then(|v| v.parse().ok()),
            youngest_first: param("youngest_first").is_some(),
        }
    }
}

/// A suspended job's shares and why it stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspension {
    /// When it was suspended.
    pub since: Timestamp,
    /// By `scontrol suspend`: it waits for `scontrol resume`. Otherwise it
    /// was preempted and resumes once its shares are free.
    pub by_admin: bool,
    /// The shares it had and takes back on resume.
    pub alloc: Allocation,
    /// The job it was suspended for: only that job may use its shares
    /// meanwhile.
    pub preemptor: Option<JobId>,
}

impl Job {
    /// When its time limit ends: start plus limit plus the time it spent
    /// suspended (None without a limit or before it starts).
    pub fn limit_end(&self) -> Option<Timestamp> {
        match (self.start_time, self.time_limit) {
            (Some(s), model::TimeLimit::Minutes(m)) => {
                Some(s + i64::from(m) * 60 + self.suspended_secs)
            }
            _ => None,
        }
    }

    /// Seconds it has run (suspended time left out).
    pub(crate) fn run_secs(&self, now: Timestamp) -> i64 {
        let Some(start) = self.start_time else {
            return 0;
        };
        let stopped = self.suspend.as_ref().map_or(0, |s| now - s.since);
        (now - start - self.suspended_secs - stopped).max(0)
    }
}

impl Engine {
    /// The QOS of a job, as preemption reads it (`normal` when unset).
    fn job_qos(job: &Job) -> String {
        job.desc
            .qos
            .clone()
            .unwrap_or_else(|| "normal".to_owned())
            .to_ascii_lowercase()
    }

    /// The partition tier a job runs (or would run) at.
    fn job_tier(&self, job: &Job) -> u32 {
        job.partitions
            .iter()
            .map(|p| self.parts[*p].conf.priority_tier)
            .max()
            .unwrap_or(0)
    }

    /// How `victim` is preempted, or None when `preemptor` may not preempt it.
    fn preempt_mode_over(&self, preemptor: &Job, victim: &Job) -> Option<PreemptMode> {
        let cluster = self.settings.preempt.mode;
        let mode = match self.settings.preempt.kind {
            PreemptType::None => return None,
            PreemptType::Qos => {
                let tables = self.assoc.as_ref()?;
                let mine = tables.qos_named(&Self::job_qos(preemptor))?;
                let theirs = Self::job_qos(victim);
                // WITHIN (the QOS's mode, or the cluster's): the same QOS,
                // a lower priority.
                let within = mine.name.eq_ignore_ascii_case(&theirs)
                    && (has_within(&mine.preempt_mode) || self.settings.preempt.within)
                    && preemptor.priority > victim.priority;
                if !within && !mine.preempt.iter().any(|q| q.eq_ignore_ascii_case(&theirs)) {
                    return None;
                }
                tables
                    .qos_named(&theirs)
                    .and_then(|q| PreemptMode::parse(&q.preempt_mode))
                    .unwrap_or(cluster)
            }
            PreemptType::PartitionPrio => {
                let vp = &self.parts[victim.partition].conf;
                if vp.priority_tier >= self.job_tier(preemptor) {
                    return None;
                }
                vp.other
                    .get("preemptmode")
                    .and_then(|(_, m)| PreemptMode::parse(m))
                    .unwrap_or(cluster)
            }
        };
        (mode != PreemptMode::Off).then_some(mode)
    }

    /// The victim's grace time (seconds; 0 without one): under
    /// preempt/partition_prio its partition's `GraceTime`, as Slurm's;
    /// under preempt/qos its QOS's GraceTime, else (where the QOS has none)
    /// its partition's.
    pub(crate) fn grace_time(&self, victim: &Job) -> u32 {
        let part = self
            .parts
            .get(victim.partition)
            .and_then(|p| p.conf.other.get("gracetime"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        if self.settings.preempt.kind == PreemptType::PartitionPrio {
            return part;
        }
        match self
            .assoc
            .as_ref()
            .and_then(|t| t.qos_named(&Self::job_qos(victim)))
            .map_or(0, |q| q.grace_time)
        {
            0 => part,
            qos => qos,
        }
    }

    /// How long `job` runs before it may be preempted: its QOS's
    /// PreemptExemptTime, else the cluster's.
    fn exempt_secs(&self, job: &Job) -> i64 {
        self.assoc
            .as_ref()
            .and_then(|t| t.qos_named(&Self::job_qos(job)))
            .and_then(|q| q.preempt_exempt_time)
            .map_or(self.settings.preempt.exempt_secs, i64::from)
    }

    /// Resumes every job suspended by preemption whose shares are free
    /// again (start of each scheduling pass).
    pub(crate) fn resume_suspended(&mut self, now: Timestamp) {
        if !self.may_resume {
            self.preempt_suspended.clear();
            return;
        }
        let ids: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| {
                j.state == JobState::Suspended && j.suspend.as_ref().is_some_and(|s| !s.by_admin)
            })
            .map(|j| j.id)
            .collect();
        self.may_resume = !ids.is_empty();
        let mut still = Vec::new();
        for id in ids {
            let free = self.jobs[&id]
                .suspend
                .as_ref()
                .is_some_and(|s| self.shares_free(&s.alloc));
            if free {
                self.resume_job(id, now);
            } else {
                still.push(id);
            }
        }
        self.preempt_suspended = still;
    }

    /// Keeps the shares of jobs suspended by preemption out of the pass's
    /// `views`, as Slurm's gang scheduling keeps a suspended job's
    /// allocation: the preemptor runs on them, and what it does not use
    /// stays the suspended job's, so that no later job can keep it from
    /// resuming when the preemptor ends. (An administrator's `scontrol
    /// suspend` gives its CPUs away, and resumes only when they are free.)
    pub(crate) fn hold_suspended_shares(&self, views: &mut [NodeView]) {
        if self.preempt_suspended.is_empty() {
            return;
        }
        // Per node: (CPUs, MB) held by suspended jobs, less what their
        // running preemptors use there.
        let mut held: std::collections::BTreeMap<usize, (i64, i64)> = Default::default();
        let mut add = |alloc: &Allocation, sign: i64| {
            for na in &alloc.nodes {
                let h = held.entry(na.node.0 as usize).or_default();
                h.0 += sign * i64::from(na.cpus);
                h.1 += sign * na.mem as i64;
            }
        };
        let mut preemptors = std::collections::BTreeSet::new();
        for id in &self.preempt_suspended {
            let Some(s) = self
                .jobs
                .get(id)
                .and_then(|j| j.suspend.as_ref())
                .filter(|s| !s.by_admin)
            else {
                continue;
            };
            add(&s.alloc, 1);
            if let Some(p) = s.preemptor {
                preemptors.insert(p);
            }
        }
        for p in preemptors {
            if let Some(alloc) = self
                .jobs
                .get(&p)
                .filter(|p| p.state == JobState::Running)
                .and_then(|p| p.alloc.as_ref())
            {
                add(alloc, -1);
            }
        }
        for (idx, (cpus, mem)) in held {
            let Some(v) = views.get_mut(idx) else {
                continue;
            };
            v.alloc_cpus = (v.alloc_cpus + cpus.max(0) as u32).min(v.cpus);
            v.alloc_mem = (v.alloc_mem + mem.max(0) as u64).min(v.real_memory.max(v.alloc_mem));
        }
    }

    /// Whether every share of `alloc` is free on its node (and the node up).
    fn shares_free(&self, alloc: &Allocation) -> bool {
        alloc.nodes.iter().all(|na| {
            let n = &self.nodes[na.node.0 as usize];
            // A draining node still takes back what it already ran.
            let up =
                n.registered && n.state.base != model::NodeBase::Down && !n.state.not_responding;
            let gres_free = na.gres.iter().all(|(pool, idxs)| {
                n.gres.get(*pool).is_some_and(|p| {
                    idxs.iter().all(|i| {
                        p.indexes
                            .iter()
                            .position(|x| x == i)
                            .is_some_and(|k| !p.used[k])
                    })
                })
            });
            up && gres_free
                && !n.exclusive_in_use
                && (!alloc.exclusive || n.jobs.is_empty())
                && n.alloc_cpus + na.cpus <= n.conf.cpus
                // Its processes stayed in their cpusets: the same CPUs.
                && na.cpu_ids.iter().all(|id| !n.cpu_ids_in_use.contains(id))
                && (!self.settings.memory_consumable || n.alloc_mem + na.mem <= n.conf.real_memory)
        })
    }

    /// Stops a running job: SIGSTOP to its processes, its shares released.
    pub(crate) fn suspend_job(
        &mut self,
        id: JobId,
        by_admin: bool,
        preemptor: Option<JobId>,
        now: Timestamp,
    ) {
        let Some(alloc) = self.jobs.get(&id).and_then(|j| j.alloc.clone()) else {
            return;
        };
        self.signal_job_nodes(id, SIGSTOP, proto::SignalScope::Full);
        self.release_all(id);
        for na in &alloc.nodes {
            self.refresh_node_state(na.node);
        }
        let job = self.jobs.get_mut(&id).expect("job");
        job.secs_pre_suspend = job.run_secs(now);
        job.suspend_time = Some(now);
        job.state = JobState::Suspended;
        job.end_time = None;
        self.running_changed.insert(id);
        let job = self.jobs.get_mut(&id).expect("job");
        job.suspend = Some(Box::new(Suspension {
            since: now,
            by_admin,
            alloc,
            preemptor,
        }));
        self.may_resume |= !by_admin;
        self.record(id, now);
    }

    /// Takes a suspended job's shares back and continues it (SIGCONT).
    fn resume_job(&mut self, id: JobId, now: Timestamp) {
        let Some(mut s) = self.jobs.get_mut(&id).and_then(|j| j.suspend.take()) else {
            return;
        };
        self.take_resources(id, &mut s.alloc, now);
        let job = self.jobs.get_mut(&id).expect("job");
        job.alloc = Some(s.alloc);
        job.state = JobState::Running;
        job.suspended_secs += (now - s.since).max(0);
        job.suspend_time = Some(now);
        job.end_time = job.limit_end();
        self.signal_job_nodes(id, SIGCONT, proto::SignalScope::Full);
        self.record(id, now);
    }

    /// A suspended job is ended (scancel, PREEMPTED): its stopped
    /// processes are continued and terminated; it holds nothing.
    pub(crate) fn end_suspended(&mut self, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let Some(s) = job.suspend.take() else {
            return;
        };
        let run = job.restarts;
        for na in &s.alloc.nodes {
            self.node_command_terminate(na.node, id, run);
        }
    }

    /// A node went down: suspended jobs with a share there are requeued
    /// (or end NODE_FAIL), as running ones are.
    pub(crate) fn suspended_node_down(&mut self, idx: sched::NodeIdx, now: Timestamp) {
        let hit: Vec<(JobId, bool)> = self
            .jobs
            .values()
            .filter(|j| {
                j.suspend
                    .as_ref()
                    .is_some_and(|s| s.alloc.nodes.iter().any(|n| n.node == idx))
            })
            .map(|j| (j.id, j.requeue && !j.desc.alloc_only))
            .collect();
        for (id, requeue) in hit {
            self.end_suspended(id);
            if requeue {
                self.requeue_job(id, PendingReason::None, now);
            } else {
                self.end_job(id, JobState::NodeFail, now);
            }
        }
    }

    /// A suspended job's batch script ended on `node` (it was killed while
    /// stopped): it ends as the script did. Returns whether it was that.
    pub(crate) fn exited_while_suspended(
        &mut self,
        id: JobId,
        node: sched::NodeIdx,
        exit: model::ExitCode,
        now: Timestamp,
    ) -> bool {
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        let batch_here = job
            .suspend
            .as_ref()
            .is_some_and(|s| s.alloc.nodes.first().is_some_and(|n| n.node == node));
        if job.state != JobState::Suspended || !batch_here {
            return false;
        }
        job.suspend = None;
        job.exit = exit;
        job.end_time = Some(now);
        job.state = if exit.is_success() {
            JobState::Completed
        } else {
            JobState::Failed
        };
        self.end_steps(id, now);
        self.record(id, now);
        true
    }

    /// Sets the KillWait of the termination just queued for `id` (GraceTime).
    fn set_grace(&mut self, id: JobId, secs: u32) {
        if secs == 0 {
            return;
        }
        for c in self.outbox.iter_mut().rev() {
            if let Command::TerminateJob {
                job_id, kill_wait, ..
            } = c
            {
                if *job_id == id {
                    *kill_wait = secs;
                    return;
                }
            }
        }
    }

    /// A job requeued by preemption leaves the resources it gave up to its
    /// preemptor: it is not tried while that job still waits to start.
    pub(crate) fn waits_for_preemptor(&self, job: &Job) -> bool {
        self.preemptor_waits(job.preempted_by)
    }

    /// Whether a job requeued by preemption for `preemptor` (none: not)
    /// waits for it (`waits_for_preemptor`).
    pub(crate) fn preemptor_waits(&self, preemptor: Option<JobId>) -> bool {
        preemptor.is_some_and(|p| {
            self.jobs
                .get(&p)
                .is_some_and(|p| p.state == JobState::Pending && p.held.is_none())
        })
    }

    /// Preempts `victim` in `mode` for `preemptor`.
    fn preempt_job(&mut self, victim: JobId, preemptor: JobId, mode: PreemptMode, now: Timestamp) {
        let Some(job) = self.jobs.get(&victim) else {
            return;
        };
        let grace = self.grace_time(job);
        let requeueable = job.requeue && !job.desc.alloc_only;
        match mode {
            PreemptMode::Suspend => self.suspend_job(victim, false, Some(preemptor), now),
            PreemptMode::Requeue if requeueable => {
                self.requeue_job_as(victim, PendingReason::Resources, JobState::Preempted, now);
                self.set_grace(victim, grace);
                if let Some(j) = self.jobs.get_mut(&victim) {
                    j.preempted_by = Some(preemptor);
                }
            }
            PreemptMode::Requeue | PreemptMode::Cancel => {
                self.end_job(victim, JobState::Preempted, now);
                self.set_grace(victim, grace);
            }
            PreemptMode::Off => {}
        }
    }

    /// The waiting jobs of a pass that may preempt someone, in the order
    /// the pass tried them (priority order); none without PreemptType.
    pub(crate) fn preemptors(
        &self,
        decisions: &[(JobId, sched::Decision)],
        requests: &[JobRequest],
    ) -> Vec<JobRequest> {
        if self.settings.preempt.kind == PreemptType::None {
            return Vec::new();
        }
        let min_tier = self
            .parts
            .iter()
            .map(|p| p.conf.priority_tier)
            .min()
            .unwrap_or(0);
        let by_id: std::collections::BTreeMap<JobId, &JobRequest> =
            requests.iter().map(|r| (r.job_id, r)).collect();
        decisions
            .iter()
            .filter(|(_, d)| {
                matches!(
                    d,
                    sched::Decision::Wait(PendingReason::Resources | PendingReason::Priority)
                )
            })
            .filter_map(|(id, _)| {
                let job = self.jobs.get(id)?;
                let may = match self.settings.preempt.kind {
                    PreemptType::None => false,
                    PreemptType::Qos => self
                        .assoc
                        .as_ref()
                        .and_then(|t| t.qos_named(&Self::job_qos(job)))
                        .is_some_and(|q| {
                            !q.preempt.is_empty()
                                || has_within(&q.preempt_mode)
                                || self.settings.preempt.within
                        }),
                    PreemptType::PartitionPrio => self.job_tier(job) > min_tier,
                };
                may.then(|| by_id.get(id).map(|r| (*r).clone())).flatten()
            })
            .take(MAX_PREEMPTORS_PER_PASS)
            .collect()
    }

    /// After a pass: each waiting job that may preempt, in priority order,
    /// preempts the running jobs it needs gone. Resources taken by one
    /// preemptor are not counted again for the next.
    pub(crate) fn preempt_pass(&mut self, waiting: &[JobRequest], now: Timestamp) {
        self.exempt_wake = None;
        if self.settings.preempt.kind == PreemptType::None || waiting.is_empty() {
            return;
        }
        let mut exempt_until: Option<Timestamp> = None;
        let parts = self.part_views();
        let mut nodes: Vec<NodeView> = self.node_views();
        let mut consumed: std::collections::BTreeSet<JobId> = Default::default();
        for req in waiting {
            let Some(preemptor) = self.jobs.get(&req.job_id) else {
                continue;
            };
            if preemptor.state != JobState::Pending
                || preemptor.array.as_ref().is_some_and(|a| a.is_meta())
            {
                continue;
            }
            let mut modes = std::collections::BTreeMap::new();
            let mut cands = Vec::new();
            for j in self.jobs.values() {
                if j.id == preemptor.id || consumed.contains(&j.id) {
                    continue;
                }
                let Some(alloc) = &j.alloc else { continue };
                if j.completing || j.state != JobState::Running {
                    cands.push(Candidate {
                        job_id: j.id,
                        alloc: alloc.clone(),
                        cost: 0,
                        ending: true,
                    });
                    continue;
                }
                let Some(mode) = self.preempt_mode_over(preemptor, j) else {
                    continue;
                };
                if self
                    .settings
                    .preempt
                    .min_exempt_priority
                    .is_some_and(|min| j.priority >= min)
                {
                    continue;
                }
                let ran = j.run_secs(now);
                let exempt = self.exempt_secs(j);
                if ran < exempt {
                    let until = now + exempt - ran;
                    exempt_until = Some(exempt_until.map_or(until, |t| t.min(until)));
                    continue;
                }
                let cpus: u64 = alloc.nodes.iter().map(|n| u64::from(n.cpus)).sum();
                modes.insert(j.id, mode);
                cands.push(Candidate {
                    job_id: j.id,
                    alloc: alloc.clone(),
                    cost: if self.settings.preempt.youngest_first {
                        ran as u64
                    } else {
                        (ran as u64).saturating_mul(cpus.max(1))
                    },
                    ending: false,
                });
            }
            if modes.is_empty() {
                continue;
            }
            // partition_prio: only the preemptor's top-tier partitions outrank.
            let mut req = req.clone();
            // No timeline here: reserved nodes are simply out.
            self.resv_exclude_others(preemptor, &mut req);
            if self.settings.preempt.kind == PreemptType::PartitionPrio {
                let top = self.job_tier(preemptor);
                req.partitions
                    .retain(|p| self.parts[*p].conf.priority_tier == top);
            }
            let Some(p) = sched::select_victims(&req, &parts, &nodes, &cands) else {
                continue;
            };
            for c in cands
                .iter()
                .filter(|c| p.victims.contains(&c.job_id) || p.awaited.contains(&c.job_id))
            {
                sched::preempt::apply_alloc(&mut nodes, &c.alloc, false);
                consumed.insert(c.job_id);
            }
            sched::preempt::apply_alloc(&mut nodes, &p.alloc, true);
            let mut all_suspended = p.awaited.is_empty();
            for v in &p.victims {
                let mode = modes[v];
                all_suspended &= mode == PreemptMode::Suspend;
                self.preempt_job(*v, req.job_id, mode, now);
            }
            if all_suspended && !p.victims.is_empty() && self.shares_free(&p.alloc) {
                // Suspended victims hold nothing: the preemptor starts now.
                self.plans.remove(&req.job_id);
                self.start_job(req.job_id, p.alloc, now);
            } else if let Some(j) = self.jobs.get_mut(&req.job_id) {
                j.reason = PendingReason::Resources;
            }
        }
        // A preemptor that waits on exempt jobs is tried again when the
        // first of them may be preempted.
        if exempt_until.is_some() {
            self.exempt_wake = exempt_until;
        }
    }

    /// `scontrol suspend`: administrators only.
    pub fn on_suspend(
        &mut self,
        id: JobId,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        if !self.is_super(who) {
            return Err(SlurmError::AccessDenied);
        }
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        match job.state {
            JobState::Pending => Err(SlurmError::JobNotRunning),
            JobState::Running if job.completing => Err(SlurmError::AlreadyDone),
            JobState::Running => {
                self.suspend_job(id, true, None, now);
                Ok(())
            }
            JobState::Suspended => Err(SlurmError::Disabled),
            _ => Err(SlurmError::AlreadyDone),
        }
    }

    /// `scontrol resume`: administrators only. The job continues at once
    /// when its shares are free, else as soon as they are.
    pub fn on_resume(
        &mut self,
        id: JobId,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(), SlurmError> {
        self.touch();
        if !self.is_super(who) {
            return Err(SlurmError::AccessDenied);
        }
        let job = self.jobs.get(&id).ok_or(SlurmError::InvalidJobId)?;
        match job.state {
            JobState::Pending => Err(SlurmError::JobNotRunning),
            JobState::Running => Err(SlurmError::Disabled),
            JobState::Suspended => {
                let free = job
                    .suspend
                    .as_ref()
                    .is_some_and(|s| self.shares_free(&s.alloc));
                if free {
                    self.resume_job(id, now);
                } else if let Some(s) = self.jobs.get_mut(&id).and_then(|j| j.suspend.as_mut()) {
                    s.by_admin = false;
                    self.may_resume = true;
                }
                Ok(())
            }
            _ => Err(SlurmError::AlreadyDone),
        }
    }
}
