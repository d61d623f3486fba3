//! Associations and QOS at submission (Slurm's `AccountingStorageEnforce`).
//!
//! The controller pushes the association database into the engine with
//! [`Engine::on_assoc_tables`], a journaled input, so a replay sees the same
//! tables at the same point and decides the same way. With enforcement of
//! `associations` (also implied by `limits` and `qos`), a job needs an
//! association for its user, account and partition (or all partitions): the
//! account defaults to the user's default account; a user without one, or
//! an account the user is not in, is refused with Slurm's "Invalid account
//! or account/partition combination specified". With `qos`, the QOS (by
//! default the association's default QOS, else `normal`) must be one the
//! association allows ("Invalid qos specification"). Without enforcement
//! nothing here applies.
//!
//! Limits that hold pending jobs are the scheduler's; it reads the
//! effective association of a job with [`Engine::job_association`].

use crate::Engine;
use proto::acctdb::{AcctTables, Assoc};
use proto::{JobDesc, SlurmError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What `AccountingStorageEnforce` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforce {
    /// `associations`: every job needs an association.
    pub associations: bool,
    /// `limits`: association and QOS limits apply (implies associations).
    pub limits: bool,
    /// `qos`: the job's QOS must be allowed (implies associations).
    pub qos: bool,
}

impl Enforce {
    /// Parses `AccountingStorageEnforce=associations,limits,qos` (also
    /// `safe`, `wckeys`, `nojobs`, `nosteps`, which change nothing here; `all`
    /// is everything, `none` nothing).
    pub fn parse(s: &str) -> Enforce {
        let mut e = Enforce::default();
        for w in s.split(',').map(|w| w.trim().to_ascii_lowercase()) {
            match w.as_str() {
                "associations" | "assoc" => e.associations = true,
                "limits" => {
                    e.limits = true;
                    e.associations = true;
                }
                "qos" => {
                    e.qos = true;
                    e.associations = true;
                }
                "safe" => {
                    e.limits = true;
                    e.associations = true;
                }
                "all" => {
                    e = Enforce {
                        associations: true,
                        limits: true,
                        qos: true,
                    }
                }
                _ => {}
            }
        }
        e
    }
}

impl Engine {
    /// The controller's association database changed (or was read at
    /// start). Journaled: replay pushes the same tables at the same point.
    pub fn on_assoc_tables(&mut self, tables: AcctTables) {
        self.assoc = Some(Arc::new(tables));
    }

    /// The association database the engine decides with, if pushed.
    pub fn assoc_tables(&self) -> Option<&AcctTables> {
        self.assoc.as_deref()
    }

    /// With enforcement: checks the job's user, account, partitions and QOS
    /// against the associations, and fills in the default account and QOS.
    /// Without enforcement: nothing.
    pub(crate) fn apply_association(
        &self,
        desc: &mut JobDesc,
        partitions: &[String],
    ) -> Result<(), SlurmError> {
        if !self.settings.enforce.associations {
            return Ok(());
        }
        let empty = AcctTables::default();
        let t = self.assoc.as_deref().unwrap_or(&empty);
        let account = match &desc.account {
            Some(a) => a.to_ascii_lowercase(),
            None => t
                .user(&desc.user)
                .map(|u| u.default_account.clone())
                .filter(|a| !a.is_empty())
                .ok_or(SlurmError::InvalidAccount)?,
        };
        let mut chosen: Option<Assoc> = None;
        for p in partitions {
            let a = self
                .find_assoc(t, &account, &desc.user, p)
                .ok_or(SlurmError::InvalidAccount)?;
            chosen.get_or_insert(a);
        }
        let assoc = chosen.ok_or(SlurmError::InvalidAccount)?;
        let qos = match &desc.qos {
            Some(q) => q.to_ascii_lowercase(),
            None => assoc
                .default_qos
                .clone()
                .or_else(|| (assoc.qos.len() == 1).then(|| assoc.qos[0].clone()))
                .unwrap_or_else(|| "normal".to_owned()),
        };
        if self.settings.enforce.qos && (t.qos_named(&qos).is_none() || !assoc.qos.contains(&qos)) {
            return Err(SlurmError::InvalidQos);
        }
        desc.account = Some(account);
        desc.qos = Some(qos);
        Ok(())
    }

    /// The effective association (limits inherited) of `user` under
    /// `account` for `partition`: the partition's own, else the one for all
    /// partitions.
    fn find_assoc(
        &self,
        t: &AcctTables,
        account: &str,
        user: &str,
        partition: &str,
    ) -> Option<Assoc> {
        let cluster = &self.settings.cluster_name;
        t.assoc(cluster, account, user, partition)
            .or_else(|| t.assoc(cluster, account, user, ""))
            .map(|a| t.effective(a))
    }

    /// The effective association a job runs under (for limits), when
    /// associations are enforced and the job has one.
    pub fn job_association(&self, job: model::JobId) -> Option<Assoc> {
        let j = self.jobs.get(&job)?;
        let t = self.assoc.as_deref()?;
        let part = &self.parts[j.partition].conf.name;
        self.find_assoc(t, j.desc.account.as_deref()?, &j.desc.user, part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Command;
    use model::JobId;
    use proto::acctdb::{AcctUser, Qos};
    use proto::Identity;

    fn engine(extra: &str) -> Engine {
        let text = format!(
            "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\n{extra}\
             NodeName=node1 CPUs=2 RealMemory=4000 Port=7001\n\
             PartitionName=debug Nodes=node1 Default=YES MaxTime=INFINITE State=UP\n\
             PartitionName=gpu Nodes=node1 MaxTime=60 State=UP\n"
        );
        let loaded = conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .expect("config parses");
        Engine::new(&loaded.config, 0)
    }

    fn who(user: &str) -> Identity {
        Identity {
            uid: 1000,
            gid: 1000,
            user: user.into(),
            host: "h".into(),
        }
    }

    fn desc(account: Option<&str>, qos: Option<&str>, partition: Option<&str>) -> JobDesc {
        JobDesc {
            name: "job".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            work_dir: "/tmp".into(),
            submit_dir: "/tmp".into(),
            account: account.map(str::to_owned),
            qos: qos.map(str::to_owned),
            partitions: partition.map(|p| vec![p.to_owned()]).unwrap_or_default(),
            ..JobDesc::default()
        }
    }

    /// root (QOS normal) > physics > alice (all partitions), and alice under
    /// gpuacct for partition gpu only; QOS normal and high.
    fn tables() -> AcctTables {
        let assoc = |id, account: &str, user: &str, partition: &str, parent: &str| Assoc {
            id,
            cluster: "test".into(),
            account: account.into(),
            user: user.into(),
            partition: partition.into(),
            parent: parent.into(),
            shares: 1,
            ..Assoc::default()
        };
        let mut root = assoc(1, "root", "", "", "");
        root.qos = vec!["normal".into()];
        AcctTables {
            users: vec![AcctUser {
                name: "alice".into(),
                default_account: "physics".into(),
                ..AcctUser::default()
            }],
            assocs: vec![
                root,
                assoc(2, "physics", "", "", "root"),
                assoc(3, "physics", "alice", "", "physics"),
                assoc(4, "gpuacct", "", "", "root"),
                assoc(5, "gpuacct", "alice", "gpu", "gpuacct"),
            ],
            qos: vec![Qos::new(1, "normal"), Qos::new(2, "high")],
            ..AcctTables::default()
        }
    }

    fn submit(e: &mut Engine, user: &str, d: JobDesc) -> Result<(String, String), SlurmError> {
        let id = e.on_submit(d, &who(user), 0)?.job_id;
        let j = &e.jobs[&id];
        Ok((
            j.desc.account.clone().unwrap_or_default(),
            j.desc.qos.clone().unwrap_or_default(),
        ))
    }

    #[test]
    fn without_enforcement_nothing_changes() {
        let mut e = engine("");
        e.on_assoc_tables(tables());
        assert_eq!(
            submit(&mut e, "bob", desc(Some("any"), None, None)),
            Ok(("any".into(), String::new()))
        );
        assert_eq!(
            submit(&mut e, "alice", desc(None, Some("x"), None)),
            Ok((String::new(), "x".into()))
        );
    }

    #[test]
    fn enforced_associations_refuse_and_fill_defaults() {
        let mut e = engine("AccountingStorageEnforce=associations,limits,qos\n");
        // Nothing pushed yet: nobody has an association.
        assert_eq!(
            submit(&mut e, "alice", desc(None, None, None)),
            Err(SlurmError::InvalidAccount)
        );
        e.on_assoc_tables(tables());
        assert_eq!(
            submit(&mut e, "alice", desc(None, None, None)),
            Ok(("physics".into(), "normal".into())),
            "default account, QOS inherited from root"
        );
        assert_eq!(
            submit(&mut e, "bob", desc(None, None, None)),
            Err(SlurmError::InvalidAccount)
        );
        assert_eq!(
            submit(&mut e, "alice", desc(Some("root"), None, None)),
            Err(SlurmError::InvalidAccount)
        );
        assert_eq!(
            submit(&mut e, "alice", desc(None, Some("high"), None)),
            Err(SlurmError::InvalidQos)
        );
        assert_eq!(
            submit(&mut e, "alice", desc(None, Some("nosuch"), None)),
            Err(SlurmError::InvalidQos)
        );
        // A partition-only association holds only there.
        assert_eq!(
            submit(&mut e, "alice", desc(Some("gpuacct"), None, Some("debug"))),
            Err(SlurmError::InvalidAccount)
        );
        assert_eq!(
            submit(&mut e, "alice", desc(Some("GPUacct"), None, Some("gpu"))),
            Ok(("gpuacct".into(), "normal".into()))
        );
        let id = JobId(e.next_job_id - 1);
        assert_eq!(e.job_association(id).map(|a| a.id), Some(5));
        // scontrol update is held to the same rules.
        let update = proto::JobUpdate {
            account: Some("root".into()),
            ..proto::JobUpdate::default()
        };
        assert_eq!(
            e.on_update_job(id, update, &who("alice"), 0),
            Err(SlurmError::InvalidAccount)
        );
    }

    #[test]
    fn the_tables_survive_a_snapshot() {
        let mut e = engine("AccountingStorageEnforce=associations\n");
        e.on_assoc_tables(tables());
        let state = e.persistent_state();
        let loaded = conf::parse_str(
            "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\n\
             AccountingStorageEnforce=associations\n\
             NodeName=node1 CPUs=2 RealMemory=4000 Port=7001\n\
             PartitionName=debug Nodes=node1 Default=YES MaxTime=INFINITE State=UP\n\
             PartitionName=gpu Nodes=node1 MaxTime=60 State=UP\n",
            std::path::Path::new("/x/slurm.conf"),
            &mut |_| Err(std::io::Error::other("no includes")),
        )
        .unwrap();
        let mut back = Engine::restore(&loaded.config, state, 0).unwrap();
        assert_eq!(back.assoc_tables(), Some(&tables()));
        assert_eq!(
            submit(&mut back, "alice", desc(None, None, None)),
            Ok(("physics".into(), "normal".into()))
        );
    }

    #[test]
    fn prolog_contain_adds_an_extern_step_to_the_record() {
        for (flags, steps) in [
            ("", vec!["batch"]),
            ("PrologFlags=Alloc,Contain\n", vec!["batch", "extern"]),
            // RunInJob implies Contain.
            ("PrologFlags=RunInJob\n", vec!["batch", "extern"]),
        ] {
            let mut e = engine(flags);
            e.on_node_registered(reg(), 0).unwrap();
            let id = e
                .on_submit(desc(None, None, None), &who("alice"), 0)
                .unwrap()
                .job_id;
            e.schedule(0);
            let rec = e.acct_job(id, 0).unwrap();
            let names: Vec<&str> = rec.steps.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, steps, "{flags:?}");
            if let Some(x) = rec.steps.get(1) {
                assert_eq!(
                    (x.state, x.n_cpus, x.nodes.as_str()),
                    (model::JobState::Running, 1, "node1")
                );
                assert_eq!(x.alloc_tres, rec.alloc_tres);
            }
        }
    }

    /// Issue 39: with a Prolog or Epilog every node of a job, an
    /// allocation's too, hears of its end (to run the Epilog where a
    /// step's Prolog ran); nothing starts an extern step.
    #[test]
    fn node_scripts_end_every_job_on_its_nodes() {
        let mut e = engine("Epilog=/etc/slurm/epilog\n");
        e.on_node_registered(reg(), 0).unwrap();
        let mut d = desc(None, None, None);
        d.alloc_only = true;
        let id = e.on_submit(d, &who("alice"), 0).unwrap().job_id;
        e.schedule(0);
        let cmds = e.take_commands();
        assert!(!cmds
            .iter()
            .any(|c| matches!(c, Command::StartExtern { .. })));
        e.on_complete_allocation(id, model::ExitCode::default(), &who("alice"), 5)
            .unwrap();
        let ends: Vec<String> = e
            .take_commands()
            .into_iter()
            .filter_map(|c| match c {
                Command::EndExtern { node, .. } => Some(node),
                _ => None,
            })
            .collect();
        assert_eq!(ends, ["node1"]);
    }

    #[test]
    fn prolog_contain_starts_and_ends_the_extern_step_and_records_its_usage() {
        let mut e = engine("PrologFlags=Contain\n");
        e.on_node_registered(reg(), 0).unwrap();
        let id = e
            .on_submit(desc(None, None, None), &who("alice"), 0)
            .unwrap()
            .job_id;
        e.take_commands();
        e.schedule(0);
        let externs = |cmds: Vec<Command>| -> Vec<(String, bool)> {
            cmds.into_iter()
                .filter_map(|c| match c {
                    Command::StartExtern {
                        node, node_index, ..
                    } => Some((format!("{node}/{node_index}"), true)),
                    Command::EndExtern { node, .. } => Some((node, false)),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(externs(e.take_commands()), [("node1/0".to_string(), true)]);
        e.on_job_exited(id, "node1", model::ExitCode::default(), None, 5)
            .unwrap();
        assert_eq!(externs(e.take_commands()), [("node1".to_string(), false)]);
        let usage = proto::StepUsage {
            max_rss_kib: Some(2428),
            user_cpu_usec: Some(1000),
            sys_cpu_usec: Some(1000),
            ..Default::default()
        };
        e.on_extern_ended(id, "node1", usage.clone(), 6).unwrap();
        // The record is written again, with the usage on its .extern line.
        let rec = e
            .take_commands()
            .into_iter()
            .find_map(|c| match c {
                Command::AcctRecord(r) => Some(r),
                _ => None,
            })
            .expect("a new record");
        assert_eq!(rec.steps[1].step, proto::StepId::Extern);
        assert_eq!(rec.steps[1].usage, usage);
        assert_eq!(
            e.on_extern_ended(id, "nosuchnode", usage, 6),
            Err(proto::SlurmError::InvalidNodeName)
        );
        // A cancelled job's extern step ends at once, before its script
        // is reported gone (its host may never report it).
        let id = e
            .on_submit(desc(None, None, None), &who("alice"), 10)
            .unwrap()
            .job_id;
        e.schedule(10);
        e.take_commands();
        e.on_cancel(id, None, proto::SignalScope::Steps, &who("alice"), 11)
            .unwrap();
        assert_eq!(externs(e.take_commands()), [("node1".to_string(), false)]);
    }

    fn reg() -> proto::NodeRegistration {
        proto::NodeRegistration {
            name: "node1".into(),
            addr: "127.0.0.1".into(),
            port: 7001,
            cpus: 2,
            boards: 1,
            sockets: 2,
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
            boot_id: String::new(),
            fabric: None,
        }
    }

    #[test]
    fn enforce_words() {
        assert_eq!(Enforce::parse(""), Enforce::default());
        assert_eq!(
            Enforce::parse("associations,limits,qos"),
            Enforce {
                associations: true,
                limits: true,
                qos: true
            }
        );
        assert!(Enforce::parse("limits").associations);
        assert!(!Enforce::parse("associations").qos);
        assert!(Enforce::parse("QOS").qos);
    }
}
