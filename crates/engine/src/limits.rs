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
//! Enforced: per job MaxWall, MaxTRESPerJob (cpu, node, mem); per user
//! QOS MaxJobsPerUser and MaxTRESPerUser (cpu, node, mem); association
//! MaxJobs; Grp limits GrpJobs and GrpTRES (cpu, node, mem) on QOS and on
//! the association and every ancestor.

use crate::{Engine, Job};
use model::{JobId, JobState, LimitReason, TimeLimit};
use proto::acctdb::{tres_value, Limits};
use std::collections::BTreeMap;

/// What a set of jobs holds: jobs, CPUs, nodes, memory (MB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Held {
    jobs: u64,
    cpu: u64,
    node: u64,
    mem: u64,
}

impl Held {
    fn add(&mut self, o: Held) {
        self.jobs += o.jobs;
        self.cpu += o.cpu;
        self.node += o.node;
        self.mem += o.mem;
    }
}

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
/// `used`, as (cpu, node, mem) flags.
fn over(limit: Option<&str>, used: Held, add: Held) -> Option<usize> {
    let limit = limit?;
    let check = [
        ("cpu", used.cpu + add.cpu),
        ("node", used.node + add.node),
        ("mem", used.mem + add.mem),
    ];
    check
        .iter()
        .position(|(name, v)| tres_value(limit, name).is_some_and(|max| *v > max))
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

    /// What `job` holds (running) or would hold (pending).
    fn held_by(&self, job: &Job) -> Held {
        let (cpu, node, mem) = match &job.alloc {
            Some(a) => (
                a.nodes.iter().map(|n| u64::from(n.cpus)).sum(),
                a.nodes.len() as u64,
                a.nodes.iter().map(|n| n.mem).sum(),
            ),
            None => {
                let cpus = u64::from(job.ntasks) * u64::from(job.desc.cpus_per_task.unwrap_or(1));
                let mem = match self.mem_request(job) {
                    (Some(per_node), _) => per_node * u64::from(job.min_nodes),
                    (None, Some(per_cpu)) => per_cpu * cpus,
                    _ => 0,
                };
                (cpus, u64::from(job.min_nodes), mem)
            }
        };
        Held {
            jobs: 1,
            cpu,
            node,
            mem,
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

    /// The pending jobs a QOS or association limit holds now, with the
    /// limit; empty unless `AccountingStorageEnforce` includes `limits`.
    pub(crate) fn limit_blocked(&self) -> BTreeMap<JobId, LimitReason> {
        let mut blocked = BTreeMap::new();
        if !self.settings.enforce.limits {
            return blocked;
        }
        let Some(t) = self.assoc.as_deref() else {
            return blocked;
        };
        let mut used = Use::default();
        let count = |used: &mut Use, job: &Job, h: Held| {
            let q = Self::qos_of(job);
            used.qos_user
                .entry((q.clone(), job.desc.uid))
                .or_default()
                .add(h);
            used.qos.entry(q).or_default().add(h);
            for (key, _) in self.assoc_chain(job) {
                used.assoc.entry(key).or_default().add(h);
            }
        };
        for job in self.jobs.values() {
            if matches!(job.state, JobState::Running | JobState::Suspended) {
                count(&mut used, job, self.held_by(job));
            }
        }
        let mut pending: Vec<&Job> = self
            .jobs
            .values()
            .filter(|j| {
                j.state == JobState::Pending
                    && j.held.is_none()
                    && !j.array.as_ref().is_some_and(|a| a.is_meta())
            })
            .map(|j| &**j)
            .collect();
        pending.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
        for job in pending {
            let h = self.held_by(job);
            let minutes = match job.time_limit {
                TimeLimit::Minutes(m) => Some(m),
                TimeLimit::Unlimited => None,
            };
            let q = Self::qos_of(job);
            let qos = t.qos_named(&q);
            let chain = self.assoc_chain(job);
            let per_job = [
                LimitReason::QosMaxCpuPerJob,
                LimitReason::QosMaxNodePerJob,
                LimitReason::QosMaxMemPerJob,
            ];
            let per_user = [
                LimitReason::QosMaxCpuPerUser,
                LimitReason::QosMaxNodePerUser,
                LimitReason::QosMaxMemPerUser,
            ];
            let qos_grp = [
                LimitReason::QosGrpCpu,
                LimitReason::QosGrpNode,
                LimitReason::QosGrpMem,
            ];
            let assoc_per_job = [
                LimitReason::AssocMaxCpuPerJob,
                LimitReason::AssocMaxNodePerJob,
                LimitReason::AssocMaxMemPerJob,
            ];
            let assoc_grp = [
                LimitReason::AssocGrpCpu,
                LimitReason::AssocGrpNode,
                LimitReason::AssocGrpMem,
            ];
            let reason = (|| {
                if let Some(qos) = qos {
                    let l = &qos.limits;
                    if let (Some(max), Some(m)) = (l.max_wall, minutes) {
                        if m > max {
                            return Some(LimitReason::QosMaxWall);
                        }
                    }
                    if let Some(i) = over(l.max_tres_per_job.as_deref(), Held::default(), h) {
                        return Some(per_job[i]);
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
                        return Some(per_user[i]);
                    }
                    let all = used.qos.get(&q).copied().unwrap_or_default();
                    if l.grp_jobs.is_some_and(|max| all.jobs + 1 > u64::from(max)) {
                        return Some(LimitReason::QosGrpJobs);
                    }
                    if let Some(i) = over(l.grp_tres.as_deref(), all, h) {
                        return Some(qos_grp[i]);
                    }
                }
                // The user's association: inherited Max limits; then Grp
                // limits on it and on each ancestor.
                if let Some(((account, user), _)) = chain.first() {
                    if let Some(a) = t.assoc(&self.settings.cluster_name, account, user, "") {
                        let eff = t.effective(a).limits;
                        if let (Some(max), Some(m)) = (eff.max_wall, minutes) {
                            if m > max {
                                return Some(LimitReason::AssocMaxWall);
                            }
                        }
                        if let Some(i) = over(eff.max_tres_per_job.as_deref(), Held::default(), h) {
                            return Some(assoc_per_job[i]);
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
                for (key, l) in &chain {
                    let u = used.assoc.get(key).copied().unwrap_or_default();
                    if l.grp_jobs.is_some_and(|max| u.jobs + 1 > u64::from(max)) {
                        return Some(LimitReason::AssocGrpJobs);
                    }
                    if let Some(i) = over(l.grp_tres.as_deref(), u, h) {
                        return Some(assoc_grp[i]);
                    }
                }
                None
            })();
            match reason {
                Some(r) => {
                    blocked.insert(job.id, r);
                }
                // Let through: it counts against the limits of the jobs after it.
                None => count(&mut used, job, h),
            }
        }
        blocked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::PendingReason;
    use proto::acctdb::{AcctTables, AcctUser, Assoc, Qos};
    use proto::{Identity, JobDesc, NodeRegistration};

    fn engine() -> Engine {
        let text = "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\n\
             AccountingStorageEnforce=associations,limits,qos\nSlurmdTimeout=0\n\
             NodeName=node[1-2] CPUs=4 RealMemory=4000 Port=7001\n\
             PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP\n";
        let loaded = conf::parse_str(text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .expect("config parses");
        let mut e = Engine::new(&loaded.config, 0);
        for n in ["node1", "node2"] {
            e.on_node_registered(
                NodeRegistration {
                    name: n.into(),
                    addr: "127.0.0.1".into(),
                    port: 7001,
                    cpus: 4,
                    boards: 1,
                    sockets: 4,
                    cores_per_socket: 1,
                    threads_per_core: 1,
                    real_memory: 4000,
                    free_memory: 4000,
                    cpu_load: 0.0,
                    gres: vec![],
                    os: "Linux".into(),
                    arch: "x86_64".into(),
                    boot_time: 0,
                    start_time: 0,
                    running_jobs: vec![],
                    version: "0".into(),
                },
                0,
            )
            .unwrap();
        }
        e
    }

    /// root > physics > alice and bob; QOS normal and long.
    fn tables(physics: Limits, alice: Limits, normal: Limits) -> AcctTables {
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
    fn every_limit_reason_has_slurms_template_shape() {
        for r in LimitReason::ALL {
            let s = r.as_slurm_str();
            assert!(s.starts_with("QOS") || s.starts_with("Assoc"), "{s}");
            assert!(s.contains("Grp") || s.contains("Max"), "{s}");
        }
    }
}
