//! QOS and association limits that hold pending jobs
//! (`AccountingStorageEnforce=limits`), each with Slurm's reason.
//!
//! Before a scheduling pass, the pending jobs are taken in priority order
//! and each is checked against its QOS and its association (and the
//! association's ancestors for the `Grp` limits), counting what runs now
//! plus what the pass has already let through. A job a limit holds gets
//! that limit's reason and is not offered to the scheduler; the others may
//! start if resources allow, so no limit is ever exceeded.
//!
//! Enforced: per job MaxWall, MaxTRESPerJob (cpu, node, mem, gres/gpu);
//! per user QOS MaxJobsPerUser and MaxTRESPerUser; association MaxJobs;
//! Grp limits GrpJobs and GrpTRES on QOS and on the association and every
//! ancestor. An array's pending record counts as one job per task: a pass
//! starts no more of its tasks than the limits leave room for.

use crate::{Engine, Job};
use model::{JobId, JobState, LimitReason, PendingReason, TimeLimit};
use proto::acctdb::{tres_value, Limits};
use proto::SlurmError;
use std::collections::BTreeMap;

/// What a set of jobs holds: jobs, CPUs, nodes, memory (MB), GPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Held {
    jobs: u64,
    cpu: u64,
    node: u64,
    mem: u64,
    gpu: u64,
}

impl Held {
    fn add(&mut self, o: Held) {
        self.jobs += o.jobs;
        self.cpu += o.cpu;
        self.node += o.node;
        self.mem += o.mem;
        self.gpu += o.gpu;
    }
}

/// An association by (account, user); account rows have user "".
type AssocKey = (String, String);

/// Running totals the checks compare against.
#[derive(Default)]
struct Use {
    /// Per (QOS, uid).
    qos_user: BTreeMap<(String, u32), Held>,
    /// Per QOS.
    qos: BTreeMap<String, Held>,
    /// Per association, by (account, user); account rows have user "".
    assoc: BTreeMap<(String, String), Held>,
}

/// Which of `limit`'s TRES the job's `held` would exceed once `add`ed to
/// `used`, as an index into [`TRES`].
fn over(limit: Option<&str>, used: Held, add: Held) -> Option<usize> {
    let limit = limit?;
    let check = [
        used.cpu + add.cpu,
        used.node + add.node,
        used.mem + add.mem,
        used.gpu + add.gpu,
    ];
    TRES.iter()
        .zip(check)
        .position(|(name, v)| tres_value(limit, name).is_some_and(|max| v > max))
}

/// The TRES limits are checked for, in the order of the reason tables.
const TRES: [&str; 4] = ["cpu", "node", "mem", "gres/gpu"];

/// Reasons per TRES (in [`TRES`] order) for each kind of TRES limit.
const QOS_PER_JOB: [LimitReason; 4] = [
    LimitReason::QosMaxCpuPerJob,
    LimitReason::QosMaxNodePerJob,
    LimitReason::QosMaxMemPerJob,
    LimitReason::QosMaxGresPerJob,
];
const QOS_PER_USER: [LimitReason; 4] = [
    LimitReason::QosMaxCpuPerUser,
    LimitReason::QosMaxNodePerUser,
    LimitReason::QosMaxMemPerUser,
    LimitReason::QosMaxGresPerUser,
];
const QOS_GRP: [LimitReason; 4] = [
    LimitReason::QosGrpCpu,
    LimitReason::QosGrpNode,
    LimitReason::QosGrpMem,
    LimitReason::QosGrpGres,
];
const ASSOC_PER_JOB: [LimitReason; 4] = [
    LimitReason::AssocMaxCpuPerJob,
    LimitReason::AssocMaxNodePerJob,
    LimitReason::AssocMaxMemPerJob,
    LimitReason::AssocMaxGresPerJob,
];
const ASSOC_GRP: [LimitReason; 4] = [
    LimitReason::AssocGrpCpu,
    LimitReason::AssocGrpNode,
    LimitReason::AssocGrpMem,
    LimitReason::AssocGrpGres,
];

/// What the pass's limit check found.
#[derive(Default)]
pub(crate) struct LimitCheck {
    /// Pending jobs (and array records) a limit holds, with the limit
    /// (`PendingReason::Limit`), or that wait for licenses
    /// (`PendingReason::Licenses`, `Engine::license_blocked`).
    pub blocked: BTreeMap<JobId, PendingReason>,
    /// For an array's pending record that a limit does not hold: how many
    /// of its tasks may start this pass before one would.
    pub array_room: BTreeMap<JobId, u32>,
    /// A pending job waits for a limit (its reason) that no longer holds
    /// it: the last pass's holds changed without an event of its own.
    pub released: bool,
    /// Array records of which the licenses let fewer tasks start than are
    /// pending (`Engine::license_blocked`): where the pass leaves them
    /// waiting on nodes, they wait for Licenses (Slurm checks licenses
    /// first).
    pub license_cut: Vec<JobId>,
}

impl Engine {
    /// The QOS a job runs under (its own, or `normal`).
    fn qos_of(job: &Job) -> String {
        job.desc
            .qos
            .clone()
            .unwrap_or_else(|| "normal".into())
            .to_ascii_lowercase()
    }

    /// What `job` holds (running) or would hold (pending; for an array's
    /// pending record, one task).
    fn held_by(&self, job: &Job) -> Held {
        match &job.alloc {
            Some(a) => Held {
                jobs: 1,
                cpu: a.nodes.iter().map(|n| u64::from(n.cpus)).sum(),
                node: a.nodes.len() as u64,
                mem: a.nodes.iter().map(|n| n.mem).sum(),
                gpu: self.alloc_gpus(a),
            },
            None => {
                let (cpus, mem, gpus) = self.requested_counts(job);
                Held {
                    jobs: 1,
                    cpu: u64::from(cpus),
                    node: u64::from(job.min_nodes),
                    mem,
                    gpu: gpus,
                }
            }
        }
    }

    /// The association chain of a job: its user association, then each
    /// account up to root, as (account, user) keys with their own limits.
    fn assoc_chain(&self, job: &Job) -> Vec<((String, String), Limits)> {
        let Some(t) = self.assoc.as_deref() else {
            return Vec::new();
        };
        let cluster = &self.settings.cluster_name;
        let account = job.desc.account.clone().unwrap_or_default();
        let mut out = Vec::new();
        let mut cur = t
            .assoc(cluster, &account, &job.desc.user, "")
            .or_else(|| t.account_assoc(cluster, &account));
        while let Some(a) = cur {
            out.push(((a.account.clone(), a.user.clone()), a.limits.clone()));
            cur = t.parent_of(a);
        }
        out
    }

    /// Counts `h` as held by `job`'s user, QOS and associations.
    fn count_use(&self, used: &mut Use, job: &Job, h: Held, chain: &[((String, String), Limits)]) {
        let q = Self::qos_of(job);
        used.qos_user
            .entry((q.clone(), job.desc.uid))
            .or_default()
            .add(h);
        used.qos.entry(q).or_default().add(h);
        for (key, _) in chain {
            used.assoc.entry(key.clone()).or_default().add(h);
        }
    }

    /// The limit that holds `job` (holding `h` more) given `used`, if any.
    fn limit_reason(
        &self,
        t: &proto::acctdb::AcctTables,
        job: &Job,
        h: Held,
        used: &Use,
        chain: &[((String, String), Limits)],
    ) -> Option<LimitReason> {
        let minutes = match job.time_limit {
            TimeLimit::Minutes(m) => Some(m),
            TimeLimit::Unlimited => None,
        };
        let q = Self::qos_of(job);
        if let Some(qos) = t.qos_named(&q) {
            let l = &qos.limits;
            if let (Some(max), Some(m)) = (l.max_wall, minutes) {
                if m > max {
                    return Some(LimitReason::QosMaxWall);
                }
            }
            if let Some(i) = over(l.max_tres_per_job.as_deref(), Held::default(), h) {
                return Some(QOS_PER_JOB[i]);
            }
            let mine = used
                .qos_user
                .get(&(q.clone(), job.desc.uid))
                .copied()
                .unwrap_or_default();
            if l.max_jobs.is_some_and(|max| mine.jobs + 1 > u64::from(max)) {
                return Some(LimitReason::QosMaxJobsPerUser);
            }
            if let Some(i) = over(l.max_tres_per_user.as_deref(), mine, h) {
                return Some(QOS_PER_USER[i]);
            }
            let all = used.qos.get(&q).copied().unwrap_or_default();
            if l.grp_jobs.is_some_and(|max| all.jobs + 1 > u64::from(max)) {
                return Some(LimitReason::QosGrpJobs);
            }
            if let Some(i) = over(l.grp_tres.as_deref(), all, h) {
                return Some(QOS_GRP[i]);
            }
        }
        // The user's association: inherited Max limits; then Grp limits on
        // it and on each ancestor.
        if let Some(((account, user), _)) = chain.first() {
            if let Some(a) = t.assoc(&self.settings.cluster_name, account, user, "") {
                let eff = t.effective(a).limits;
                if let (Some(max), Some(m)) = (eff.max_wall, minutes) {
                    if m > max {
                        return Some(LimitReason::AssocMaxWall);
                    }
                }
                if let Some(i) = over(eff.max_tres_per_job.as_deref(), Held::default(), h) {
                    return Some(ASSOC_PER_JOB[i]);
                }
                let mine = used
                    .assoc
                    .get(&(account.clone(), user.clone()))
                    .copied()
                    .unwrap_or_default();
                if eff
                    .max_jobs
                    .is_some_and(|max| mine.jobs + 1 > u64::from(max))
                {
                    return Some(LimitReason::AssocMaxJobs);
                }
            }
        }
        for (key, l) in chain {
            let u = used.assoc.get(key).copied().unwrap_or_default();
            if l.grp_jobs.is_some_and(|max| u.jobs + 1 > u64::from(max)) {
                return Some(LimitReason::AssocGrpJobs);
            }
            if let Some(i) = over(l.grp_tres.as_deref(), u, h) {
                return Some(ASSOC_GRP[i]);
            }
        }
        None
    }

    /// Refuses a submission that would take its user, QOS or association
    /// past MaxSubmitJobs(PerUser) or GrpSubmitJobs: every pending, running
    /// or suspended job counts, an array's tasks one by one.
    pub(crate) fn check_submit_limits(&self, job: &Job) -> Result<(), SlurmError> {
        if !self.settings.enforce.limits {
            return Ok(());
        }
        let Some(t) = self.assoc.as_deref() else {
            return Ok(());
        };
        let q = Self::qos_of(job);
        let qos = t.qos_named(&q).map(|q| &q.limits);
        let chain = self.assoc_chain(job);
        let cluster = &self.settings.cluster_name;
        let own = chain
            .first()
            .and_then(|((a, u), _)| t.assoc(cluster, a, u, ""))
            .map(|a| t.effective(a).limits);
        let limited = qos
            .is_some_and(|l| l.max_submit_jobs.is_some() || l.grp_submit_jobs.is_some())
            || own.as_ref().is_some_and(|l| l.max_submit_jobs.is_some())
            || chain.iter().any(|(_, l)| l.grp_submit_jobs.is_some());
        if !limited {
            return Ok(());
        }
        let tasks = |j: &Job| match j.array.as_ref().filter(|a| a.is_meta()) {
            Some(a) => a.pending.len(),
            None => 1,
        };
        let (mut qos_user, mut qos_all) = (0u64, 0u64);
        let mut per_key: BTreeMap<&(String, String), u64> = BTreeMap::new();
        let mut chains: BTreeMap<(Option<&str>, &str), Vec<AssocKey>> = BTreeMap::new();
        for j in self.jobs.values() {
            if !matches!(
                j.state,
                JobState::Pending | JobState::Running | JobState::Suspended
            ) {
                continue;
            }
            let n = tasks(j);
            if Self::qos_of(j) == q {
                qos_all += n;
                if j.desc.uid == job.desc.uid {
                    qos_user += n;
                }
            }
            let keys = chains
                .entry((j.desc.account.as_deref(), j.desc.user.as_str()))
                .or_insert_with(|| self.assoc_chain(j).into_iter().map(|(k, _)| k).collect());
            for (key, _) in &chain {
                if keys.contains(key) {
                    *per_key.entry(key).or_default() += n;
                }
            }
        }
        let new = tasks(job);
        let past = |max: Option<u32>, have: u64| max.is_some_and(|m| have + new > u64::from(m));
        let refuse = |r| Err(SlurmError::AccountingPolicy(r));
        if let Some(l) = qos {
            if past(l.max_submit_jobs, qos_user) {
                return refuse(LimitReason::QosMaxSubmitJobsPerUser);
            }
            if past(l.grp_submit_jobs, qos_all) {
                return refuse(LimitReason::QosGrpSubmitJobs);
            }
        }
        if let (Some(l), Some((key, _))) = (&own, chain.first()) {
            if past(l.max_submit_jobs, per_key.get(key).copied().unwrap_or(0)) {
                return refuse(LimitReason::AssocMaxSubmitJobs);
            }
        }
        for (key, l) in &chain {
            if past(l.grp_submit_jobs, per_key.get(key).copied().unwrap_or(0)) {
                return refuse(LimitReason::AssocGrpSubmitJobs);
            }
        }
        Ok(())
    }

    /// The pending jobs a QOS or association limit holds now, with the
    /// limit, and how many tasks of each array's pending record may start;
    /// empty unless `AccountingStorageEnforce` includes `limits`.
    pub(crate) fn limit_blocked(&self) -> LimitCheck {
        let mut check = LimitCheck::default();
        if !self.settings.enforce.limits {
            return check;
        }
        let waits_for_limit = |j: &Job| matches!(j.reason, PendingReason::Limit(_));
        let Some(t) = self.assoc.as_deref() else {
            // Nothing holds a job: one still told a limit is released.
            check.released = self
                .jobs
                .values()
                .any(|j| j.state == JobState::Pending && waits_for_limit(j));
            return check;
        };
        let mut used = Use::default();
        for job in self.jobs.values() {
            if matches!(job.state, JobState::Running | JobState::Suspended) {
                let chain = self.assoc_chain(job);
                self.count_use(&mut used, job, self.held_by(job), &chain);
            }
        }
        let mut pending: Vec<&Job> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Pending && j.held.is_none())
            .map(|j| &**j)
            .collect();
        pending.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
        // No more tasks of one array record can start in a pass than there
        // are CPUs free (each task takes at least one).
        let free_cpus = self.nodes.free_cpus_swept();
        for job in pending {
            let h = self.held_by(job);
            let chain = self.assoc_chain(job);
            let tasks = job.array.as_ref().filter(|a| a.is_meta()).map(|a| {
                let pending = a.pending.len().min(u64::from(u32::MAX)) as u32;
                pending.min(free_cpus / (h.cpu.max(1) as u32).max(1) + 1)
            });
            match tasks {
                None => match self.limit_reason(t, job, h, &used, &chain) {
                    Some(r) => {
                        check.blocked.insert(job.id, PendingReason::Limit(r));
                    }
                    // Let through: it counts against the jobs after it.
                    None => self.count_use(&mut used, job, h, &chain),
                },
                Some(n) => {
                    // Each task is a job of its own for the limits.
                    let mut room = 0;
                    while room < n {
                        if let Some(r) = self.limit_reason(t, job, h, &used, &chain) {
                            if room == 0 {
                                check.blocked.insert(job.id, PendingReason::Limit(r));
                            }
                            break;
                        }
                        self.count_use(&mut used, job, h, &chain);
                        room += 1;
                    }
                    if room > 0 {
                        check.array_room.insert(job.id, room);
                    }
                }
            }
            // (A held job waits for its hold, never for a limit.)
            check.released |= waits_for_limit(job) && !check.blocked.contains_key(&job.id);
        }
        check
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use model::PendingReason;
    use proto::acctdb::{AcctTables, AcctUser, Assoc, Qos};
    use proto::{Identity, JobDesc};

    fn engine_with(nodes: &str) -> Engine {
        let text = format!(
            "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\n\
             AccountingStorageEnforce=associations,limits,qos\nSlurmdTimeout=0\n{nodes}\
             PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP\n"
        );
        let loaded = conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .expect("config parses");
        let mut e = Engine::new(&loaded.config, 0);
        for n in ["node1", "node2"] {
            e.on_node_registered(crate::tests::reg(n, 4, 4000), 0)
                .unwrap();
        }
        e
    }

    fn engine() -> Engine {
        engine_with("NodeName=node[1-2] CPUs=4 RealMemory=4000 Port=7001\n")
    }

    /// root > physics > alice and bob; QOS normal and long.
    pub(crate) fn tables(physics: Limits, alice: Limits, normal: Limits) -> AcctTables {
        let assoc = |id, account: &str, user: &str, parent: &str, limits: Limits| Assoc {
            id,
            cluster: "test".into(),
            account: account.into(),
            user: user.into(),
            parent: parent.into(),
            shares: 1,
            limits,
            ..Assoc::default()
        };
        let mut root = assoc(1, "root", "", "", Limits::default());
        root.qos = vec!["normal".into(), "long".into()];
        let mut q = Qos::new(1, "normal");
        q.limits = normal;
        let user = |name: &str| AcctUser {
            name: name.into(),
            default_account: "physics".into(),
            ..AcctUser::default()
        };
        AcctTables {
            users: vec![user("alice"), user("bob")],
            assocs: vec![
                root,
                assoc(2, "physics", "", "root", physics),
                assoc(3, "physics", "alice", "physics", alice),
                assoc(4, "physics", "bob", "physics", Limits::default()),
            ],
            qos: vec![q, Qos::new(2, "long")],
            ..AcctTables::default()
        }
    }

    fn who(user: &str, uid: u32) -> Identity {
        Identity {
            uid,
            gid: uid,
            user: user.into(),
            host: "h".into(),
        }
    }

    fn job(cpus: u32, minutes: Option<u32>) -> JobDesc {
        JobDesc {
            name: "job".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            work_dir: "/tmp".into(),
            submit_dir: "/tmp".into(),
            ntasks: Some(cpus),
            time_limit: minutes.map(TimeLimit::Minutes),
            ..JobDesc::default()
        }
    }

    fn run(e: &mut Engine, jobs: &[(&str, u32, JobDesc)]) -> Vec<String> {
        let ids: Vec<JobId> = jobs
            .iter()
            .map(|(u, uid, d)| e.on_submit(d.clone(), &who(u, *uid), 0).unwrap().job_id)
            .collect();
        e.schedule(0);
        assert!(e.check_invariants().is_empty());
        ids.iter()
            .map(|id| {
                let j = e.job(*id).unwrap();
                match j.state {
                    JobState::Pending => j.reason.as_slurm_str().to_string(),
                    s => format!("{s:?}"),
                }
            })
            .collect()
    }

    #[test]
    fn qos_per_user_job_limit_holds_the_second_job_of_that_user_only() {
        let mut e = engine();
        let normal = Limits {
            max_jobs: Some(1),
            ..Limits::default()
        };
        e.on_assoc_tables(tables(Limits::default(), Limits::default(), normal));
        let got = run(
            &mut e,
            &[
                ("alice", 1000, job(1, None)),
                ("alice", 1000, job(1, None)),
                ("bob", 1001, job(1, None)),
            ],
        );
        assert_eq!(got, ["Running", "QOSMaxJobsPerUserLimit", "Running"]);
    }

    #[test]
    fn wall_and_per_job_limits_name_qos_or_association() {
        let mut e = engine();
        let normal = Limits {
            max_wall: Some(60),
            max_tres_per_job: Some("cpu=4".into()),
            ..Limits::default()
        };
        let alice = Limits {
            max_wall: Some(30),
            ..Limits::default()
        };
        e.on_assoc_tables(tables(Limits::default(), alice, normal));
        let got = run(
            &mut e,
            &[
                ("alice", 1000, job(1, Some(120))),
                ("alice", 1000, job(6, Some(10))),
                ("alice", 1000, job(1, Some(45))),
                ("bob", 1001, job(1, Some(45))),
            ],
        );
        assert_eq!(
            got,
            [
                "QOSMaxWallDurationPerJobLimit",
                "QOSMaxCpuPerJobLimit",
                "AssocMaxWallDurationPerJobLimit",
                "Running"
            ]
        );
    }

    #[test]
    fn group_limits_count_every_user_of_the_account_and_free_up_when_jobs_end() {
        let mut e = engine();
        let physics = Limits {
            grp_tres: Some("cpu=3".into()),
            ..Limits::default()
        };
        let alice = Limits {
            max_jobs: Some(5),
            ..Limits::default()
        };
        e.on_assoc_tables(tables(physics, alice, Limits::default()));
        let got = run(
            &mut e,
            &[
                ("alice", 1000, job(2, None)),
                ("bob", 1001, job(2, None)),
                ("bob", 1001, job(1, None)),
            ],
        );
        assert_eq!(got, ["Running", "AssocGrpCpuLimit", "Running"]);
        let reason = e.job(JobId(2)).unwrap().reason;
        assert_eq!(reason, PendingReason::Limit(LimitReason::AssocGrpCpu));
        // Alice's job ends: bob's waiting job fits under the account's limit.
        let node = e.job(JobId(1)).unwrap().alloc.as_ref().unwrap().nodes[0].node;
        let node = e.nodes[node.0 as usize].conf.name.clone();
        e.on_job_exited(JobId(1), &node, model::ExitCode::default(), None, 5)
            .unwrap();
        e.schedule(5);
        assert_eq!(e.job(JobId(2)).unwrap().state, JobState::Running);
    }

    #[test]
    fn gpu_limits_hold_jobs_with_the_gres_reasons() {
        let mut e = engine_with(
            "GresTypes=gpu\nNodeName=node[1-2] CPUs=4 RealMemory=4000 Gres=gpu:2 Port=7001\n",
        );
        let physics = Limits {
            grp_tres: Some("gres/gpu=2".into()),
            ..Limits::default()
        };
        let normal = Limits {
            max_tres_per_job: Some("gres/gpu=1".into()),
            ..Limits::default()
        };
        e.on_assoc_tables(tables(physics, Limits::default(), normal));
        let gpus = |n: u32| JobDesc {
            gres: vec![model::Gres::parse(&format!("gpu:{n}")).unwrap()],
            ..job(1, None)
        };
        let got = run(
            &mut e,
            &[
                ("alice", 1000, gpus(2)),
                ("alice", 1000, gpus(1)),
                ("bob", 1001, gpus(1)),
                ("bob", 1001, gpus(1)),
                ("bob", 1001, job(1, None)),
            ],
        );
        assert_eq!(
            got,
            [
                "QOSMaxGRESPerJob",
                "Running",
                "Running",
                "AssocGrpGRES",
                "Running"
            ]
        );
    }

    #[test]
    fn an_arrays_tasks_count_one_by_one_against_the_limits() {
        let mut e = engine();
        let normal = Limits {
            max_jobs: Some(3),
            ..Limits::default()
        };
        e.on_assoc_tables(tables(Limits::default(), Limits::default(), normal));
        let array = JobDesc {
            array: Some("0-9".into()),
            ..job(1, None)
        };
        let id = e.on_submit(array, &who("alice", 1000), 0).unwrap().job_id;
        for now in 0..3 {
            e.schedule(now);
            assert!(e.check_invariants().is_empty());
        }
        let running = e
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running)
            .count();
        assert_eq!(running, 3, "8 CPUs are free, the QOS allows 3 jobs a user");
        assert_eq!(
            e.job(id).unwrap().reason,
            PendingReason::Limit(LimitReason::QosMaxJobsPerUser)
        );
    }

    #[test]
    fn submit_limits_refuse_at_submit_counting_array_tasks() {
        let mut e = engine();
        let normal = Limits {
            max_submit_jobs: Some(2),
            ..Limits::default()
        };
        let physics = Limits {
            grp_submit_jobs: Some(3),
            ..Limits::default()
        };
        e.on_assoc_tables(tables(physics, Limits::default(), normal));
        let submit = |e: &mut Engine, user: &str, uid: u32, d: JobDesc| {
            e.on_submit(d, &who(user, uid), 0).map(|_| ())
        };
        let policy = |r| Err(SlurmError::AccountingPolicy(r));
        let array = |spec: &str| JobDesc {
            array: Some(spec.into()),
            ..job(1, None)
        };
        // An array of three is three jobs for the QOS's two per user.
        assert_eq!(
            submit(&mut e, "alice", 1000, array("0-2")),
            policy(LimitReason::QosMaxSubmitJobsPerUser)
        );
        submit(&mut e, "alice", 1000, array("0-1")).unwrap();
        assert_eq!(
            submit(&mut e, "alice", 1000, job(1, None)),
            policy(LimitReason::QosMaxSubmitJobsPerUser)
        );
        submit(&mut e, "bob", 1001, job(1, None)).unwrap();
        // The account holds its 3: bob's second is one too many for it,
        // though within his own two.
        assert_eq!(
            submit(&mut e, "bob", 1001, job(1, None)),
            policy(LimitReason::AssocGrpSubmitJobs)
        );
        assert_eq!(
            SlurmError::AccountingPolicy(LimitReason::AssocGrpSubmitJobs).as_slurm_str(),
            "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever the limits and the queue, after every pass what runs
        /// stays within every QOS and association limit.
        #[test]
        fn limits_are_never_exceeded(
            qos_jobs in proptest::option::of(1u32..4),
            qos_user_cpu in proptest::option::of(1u64..6),
            grp_cpu in proptest::option::of(1u64..8),
            alice_jobs in proptest::option::of(1u32..4),
            jobs in proptest::collection::vec((0u32..2, 1u32..4, proptest::option::of(0u32..3)), 1..14),
            ends in proptest::collection::vec(0usize..14, 0..10),
        ) {
            let mut e = engine();
            let normal = Limits {
                max_jobs: qos_jobs,
                max_tres_per_user: qos_user_cpu.map(|c| format!("cpu={c}")),
                ..Limits::default()
            };
            let physics = Limits {
                grp_tres: grp_cpu.map(|c| format!("cpu={c}")),
                ..Limits::default()
            };
            let alice = Limits {
                max_jobs: alice_jobs,
                ..Limits::default()
            };
            e.on_assoc_tables(tables(physics, alice, normal));
            let users = [("alice", 1000), ("bob", 1001)];
            for (u, cpus, tasks) in &jobs {
                let (name, uid) = users[*u as usize];
                let mut d = job(*cpus, None);
                if let Some(t) = tasks {
                    d.array = Some(format!("0-{t}"));
                }
                let _ = e.on_submit(d, &who(name, uid), 0);
            }
            let check = |e: &Engine| {
                let running: Vec<&Job> = e
                    .jobs
                    .values()
                    .filter(|j| j.state == JobState::Running)
                    .map(|j| &**j)
                    .collect();
                let cpus = |j: &&Job| -> u64 {
                    j.alloc.as_ref().map_or(0, |a| a.nodes.iter().map(|n| u64::from(n.cpus)).sum())
                };
                for (name, uid) in users {
                    let mine: Vec<&&Job> = running.iter().filter(|j| j.desc.uid == uid).collect();
                    if let Some(m) = qos_jobs {
                        proptest::prop_assert!(mine.len() as u32 <= m, "{name}: QOS MaxJobsPerUser");
                    }
                    if let Some(m) = qos_user_cpu {
                        proptest::prop_assert!(mine.iter().map(|j| cpus(j)).sum::<u64>() <= m);
                    }
                    if let (Some(m), "alice") = (alice_jobs, name) {
                        proptest::prop_assert!(mine.len() as u32 <= m, "alice's MaxJobs");
                    }
                }
                if let Some(m) = grp_cpu {
                    proptest::prop_assert!(running.iter().map(cpus).sum::<u64>() <= m, "GrpTRES");
                }
                Ok(())
            };
            e.schedule(0);
            check(&e)?;
            for (i, pick) in ends.iter().enumerate() {
                let now = i as i64 + 1;
                let running: Vec<JobId> = e
                    .jobs
                    .values()
                    .filter(|j| j.state == JobState::Running)
                    .map(|j| j.id)
                    .collect();
                if let Some(id) = running.get(pick % running.len().max(1)) {
                    let node = e.jobs[id].alloc.as_ref().unwrap().nodes[0].node;
                    let node = e.nodes[node.0 as usize].conf.name.clone();
                    e.on_job_exited(*id, &node, model::ExitCode::default(), None, now).unwrap();
                }
                e.schedule(now);
                check(&e)?;
            }
        }
    }

    #[test]
    fn every_limit_reason_has_slurms_template_shape() {
        for r in LimitReason::ALL {
            let s = r.as_slurm_str();
            assert!(s.starts_with("QOS") || s.starts_with("Assoc"), "{s}");
            assert!(s.contains("Grp") || s.contains("Max"), "{s}");
        }
    }
}
