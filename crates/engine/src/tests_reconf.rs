//! Configuration changes while running (`reconf`): the engine rebuilt under
//! a reconfigured configuration, runtime partition changes, their
//! persistence (`restore_with`), and partitions' access keys.

use super::tests::{admin, config, desc, engine, other, submit, test_config, user, CONF};
use super::*;
use proto::{PartitionUpdate, SlurmError};

fn update(name: &str) -> PartitionUpdate {
    PartitionUpdate {
        name: name.into(),
        ..PartitionUpdate::default()
    }
}

#[test]
fn a_rebuild_keeps_jobs_and_adds_a_partition() {
    let mut e = engine();
    let running = submit(&mut e, desc(), 1);
    assert_eq!(e.jobs[&running].state, JobState::Running);
    let text = format!("{CONF}PartitionName=extra Nodes=node[1-2] MaxTime=10\n");
    let plan = conf::effect::reconfigured(e.config(), &config(&text), &e.partitions_in_use());
    assert_eq!(plan.applied, ["PartitionName=extra: added"]);
    assert!(plan.restart.is_empty(), "{:?}", plan.restart);
    let new = e.rebuilt(&plan.config).expect("rebuilt");
    e.take_over(new);
    assert_eq!(e.layout().1, ["debug", "gpu", "extra"]);
    assert_eq!(e.jobs[&running].state, JobState::Running);
    super::tests::assert_invariants(&e);
    let mut d = desc();
    d.partitions = vec!["extra".into()];
    let id = submit(&mut e, d, 2);
    assert_eq!(e.jobs[&id].state, JobState::Running);
}

#[test]
fn reconfigure_applies_only_what_a_running_controller_can_change() {
    let e = engine();
    let text = CONF
        .replace("KillWait=5", "KillWait=9\nSlurmctldPort=7777")
        .replace("NodeName=node[3-4] CPUs=2", "NodeName=node[3-4] CPUs=4")
        .replace(
            "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP\n",
            "",
        );
    let plan = conf::effect::reconfigured(e.config(), &config(&text), &[]);
    assert_eq!(plan.config.kill_wait, 9);
    assert_eq!(plan.config.slurmctld_port, e.config().slurmctld_port);
    assert_eq!(plan.config.nodes[2].cpus, 2);
    assert!(plan.config.partition("gpu").is_none());
    assert_eq!(
        plan.applied,
        ["KillWait: 5 sec -> 9 sec", "PartitionName=gpu: removed"]
    );
    assert_eq!(
        plan.restart,
        [
            "SlurmctldPort: 6817 -> 7777",
            "NodeName=node3: definition changed",
            "NodeName=node4: definition changed"
        ]
    );
    // A partition jobs use is kept when the files drop it.
    let plan = conf::effect::reconfigured(e.config(), &config(&text), &["gpu".into()]);
    assert!(plan.config.partition("gpu").is_some());
    assert!(plan
        .restart
        .iter()
        .any(|l| l.starts_with("PartitionName=gpu: removed")));
}

#[test]
fn partitions_are_updated_created_and_deleted_by_operators_only() {
    let mut e = engine();
    let mut u = update("gpu");
    u.state = Some("DOWN".into());
    u.max_time = Some(TimeLimit::Minutes(5));
    assert_eq!(
        e.on_update_partition(u.clone(), false, &user()),
        Err(SlurmError::InvalidUserId)
    );
    e.on_update_partition(u, false, &admin()).unwrap();
    let gpu = e.config().partition("gpu").unwrap().clone();
    assert_eq!(
        (gpu.state.as_str(), gpu.max_time),
        ("DOWN", TimeLimit::Minutes(5))
    );
    assert_eq!(
        e.on_update_partition(update("nosuch"), false, &admin()),
        Err(SlurmError::InvalidPartitionName)
    );
    let mut new = update("rt");
    new.nodes = Some(vec!["node2".into(), "node1".into()]);
    new.default = Some(true);
    e.on_update_partition(new.clone(), true, &admin()).unwrap();
    assert_eq!(
        e.on_update_partition(new, true, &admin()),
        Err(SlurmError::InvalidPartitionName)
    );
    let rt = e.config().partition("rt").unwrap().clone();
    assert_eq!(rt.nodes, ["node1", "node2"]);
    assert!(rt.default);
    assert!(!e.config().partition("debug").unwrap().default);
    let mut bad = update("rt");
    bad.nodes = Some(vec!["node9".into()]);
    assert_eq!(
        e.on_update_partition(bad, false, &admin()),
        Err(SlurmError::InvalidNodeName)
    );
    let mut excl = update("rt");
    excl.other = vec![("ExclusiveUser".into(), "YES".into())];
    assert_eq!(
        e.on_update_partition(excl, false, &admin()),
        Err(SlurmError::NotSupported)
    );
    // The default partition takes a job; then it is in use.
    let id = submit(&mut e, desc(), 1);
    assert_eq!(e.parts[e.jobs[&id].partition].conf.name, "rt");
    assert_eq!(
        e.on_delete_partition("rt", &admin()),
        Err(SlurmError::PartitionInUse)
    );
    assert_eq!(
        e.on_delete_partition("gpu", &user()),
        Err(SlurmError::InvalidUserId)
    );
    e.on_delete_partition("gpu", &admin()).unwrap();
    assert_eq!(e.layout().1, ["debug", "rt"]);
    super::tests::assert_invariants(&e);
}

#[test]
fn runtime_partitions_last_until_a_restart_unless_recovered() {
    let mut e = engine();
    let mut u = update("debug");
    u.max_time = Some(TimeLimit::Minutes(30));
    e.on_update_partition(u, false, &admin()).unwrap();
    let mut rt = update("rt");
    rt.nodes = Some(vec!["node1".into()]);
    e.on_update_partition(rt, true, &admin()).unwrap();
    let mut d = desc();
    d.partitions = vec!["rt".into()];
    let id = submit(&mut e, d, 1);
    let saved = e.persistent_state();
    assert_eq!(saved.partitions.len(), 3);
    // Without -R: slurm.conf's partitions, and rt while its job is held.
    let r = Engine::restore(&test_config(), saved.clone(), 10).expect("restored");
    assert_eq!(r.layout().1, ["debug", "gpu", "rt"]);
    assert_eq!(
        r.config().partition("debug").unwrap().max_time,
        TimeLimit::Unlimited
    );
    assert_eq!(r.parts[r.jobs[&id].partition].conf.name, "rt");
    // With -R: as scontrol left them.
    let r = Engine::restore_with(&test_config(), saved, 10, true).expect("restored");
    assert_eq!(
        r.config().partition("debug").unwrap().max_time,
        TimeLimit::Minutes(30)
    );
    // No runtime change: nothing more in the snapshot.
    assert!(engine().persistent_state().partitions.is_empty());
}

#[test]
fn partition_access_keys_refuse_as_slurm_does() {
    let text = CONF.replace(
        "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP",
        "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP RootOnly=YES\n\
         PartitionName=acl Nodes=node1 AllowQos=high DenyAccounts=bad AllowAccounts=good,bad\n\
         PartitionName=grp Nodes=node1 AllowGroups=staff\n\
         PartitionName=noroot Nodes=node1 DisableRootJobs=YES",
    );
    let mut e = Engine::new(&config(&text), 0);
    let in_part = |p: &str| {
        let mut d = desc();
        d.partitions = vec![p.into()];
        d
    };
    let refused = |e: &mut Engine, d: JobDesc, who: &Identity| e.on_submit(d, who, 1).err();
    assert_eq!(
        refused(&mut e, in_part("gpu"), &user()),
        Some(SlurmError::AccessDenied)
    );
    assert_eq!(refused(&mut e, in_part("gpu"), &admin()), None);
    let mut d = in_part("acl");
    assert_eq!(
        refused(&mut e, d.clone(), &user()),
        Some(SlurmError::InvalidQos)
    );
    d.qos = Some("high".into());
    d.account = Some("bad".into());
    assert_eq!(
        refused(&mut e, d.clone(), &user()),
        Some(SlurmError::InvalidAccount)
    );
    d.account = Some("other".into());
    assert_eq!(
        refused(&mut e, d.clone(), &user()),
        Some(SlurmError::InvalidAccount)
    );
    d.account = Some("good".into());
    assert_eq!(refused(&mut e, d, &user()), None);
    let mut d = in_part("grp");
    d.user_groups = vec!["users".into()];
    assert_eq!(
        refused(&mut e, d.clone(), &other()),
        Some(SlurmError::PartitionGroupRequired)
    );
    d.user_groups.push("staff".into());
    assert_eq!(refused(&mut e, d, &other()), None);
    assert_eq!(
        refused(&mut e, in_part("noroot"), &admin()),
        Some(SlurmError::AccessDenied)
    );
    assert_eq!(refused(&mut e, in_part("noroot"), &user()), None);
}

#[test]
fn refused_partition_keys_are_errors_at_their_line() {
    for (key, bad) in [
        ("ExclusiveUser", "YES"),
        ("AllocNodes", "login1"),
        ("ReqResv", "YES"),
    ] {
        let text = format!("{CONF}PartitionName=x Nodes=node1 {key}={bad}\n");
        let err = conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .expect_err("refused");
        let shown = err.to_string();
        assert!(
            shown.starts_with("/x/slurm.conf:13: invalid value"),
            "{shown}"
        );
        assert!(shown.contains("not supported by muster"), "{shown}");
    }
    let ok = format!("{CONF}PartitionName=x Nodes=node1 ExclusiveUser=NO AllocNodes=ALL\n");
    assert!(
        conf::parse_str(&ok, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .is_ok()
    );
}

#[test]
fn a_partition_change_replays_the_same_whatever_the_boot_time() {
    let run = |boot: Timestamp| {
        let mut e = Engine::new(&test_config(), boot);
        for i in 1..=4 {
            e.on_node_registered(super::tests::reg(&format!("node{i}"), 2, 4000), 1000)
                .unwrap();
        }
        let sub = |d: JobDesc| Input::Request {
            req: Box::new(proto::CtldRequest::Submit(Box::new(d))),
            who: user(),
        };
        e.apply(sub(desc()), 1001);
        e.apply(Input::Tick, 1001);
        let mut u = update("debug");
        u.max_time = Some(TimeLimit::Minutes(9));
        let req = Input::Request {
            req: Box::new(proto::CtldRequest::UpdatePartition(Box::new(u))),
            who: admin(),
        };
        e.apply(req, 1002);
        e.apply(Input::Tick, 1002);
        let s = e.persistent_state();
        (
            format!("{:?}", s.nodes),
            format!("{:?}", s.jobs),
            s.partitions.len(),
        )
    };
    assert_eq!(run(0), run(500));
}
