//! `scontrol reboot` (`crate::reboot`): issued when idle, back with a new
//! boot id, DOWN after ResumeTimeout, cancelled, kept across a restart.

use crate::tests::{admin, assert_invariants, config, desc, reg, submit, user};
use crate::{Command, Engine, Input};
use model::{ExitCode, NodeBase, Timestamp};
use proto::{CtldRequest, CtldResponse, RebootNextState, SlurmError};

const CONF: &str = "\
ClusterName=test
SlurmctldHost=ctl(127.0.0.1)
SlurmUser=slurm
ResumeTimeout=30
NodeName=node[1-2] CPUs=2 RealMemory=4000 Port=7001
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
";

fn booted(name: &str, boot_id: &str) -> proto::NodeRegistration {
    let mut r = reg(name, 2, 4000);
    r.boot_id = boot_id.into();
    r
}

fn engine() -> Engine {
    let mut e = Engine::new(&config(CONF), 0);
    for i in 1..=2 {
        e.on_node_registered(booted(&format!("node{i}"), "boot-1"), 0)
            .unwrap();
    }
    e
}

fn ask(e: &mut Engine, req: CtldRequest, now: Timestamp) -> CtldResponse {
    let r = e
        .apply(
            Input::Request {
                req: Box::new(req),
                who: admin(),
            },
            now,
        )
        .reply
        .unwrap();
    e.apply(Input::Tick, now);
    assert_invariants(e);
    r
}

fn reboot(nodes: &[&str], asap: bool, next: Option<RebootNextState>) -> CtldRequest {
    CtldRequest::RebootNodes {
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        asap,
        next_state: next,
        reason: None,
    }
}

fn state(e: &Engine, name: &str) -> (String, String, Option<String>) {
    let n = e.node(name).unwrap();
    (
        n.state.sinfo_short(),
        n.state.scontrol_string(),
        n.reason.clone(),
    )
}

fn reboots(cmds: Vec<Command>) -> Vec<String> {
    cmds.into_iter()
        .filter_map(|c| match c {
            Command::RebootNode { node, .. } => Some(node),
            _ => None,
        })
        .collect()
}

#[test]
fn an_idle_node_is_told_at_once_and_comes_back_with_a_new_boot_id() {
    let mut e = engine();
    e.take_commands();
    let r = ask(
        &mut e,
        reboot(&["node1"], false, Some(RebootNextState::Resume)),
        1,
    );
    assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    assert_eq!(reboots(e.take_commands()), vec!["node1".to_string()]);
    assert_eq!(
        state(&e, "node1"),
        ("boot^".into(), "DOWN+REBOOT_ISSUED".into(), None)
    );
    let info = e.node_infos();
    assert!(info[0].reboot_issued);
    assert_eq!(info[0].next_state, Some(RebootNextState::Resume));
    // The daemon again, same boot: still rebooting; a job goes elsewhere.
    e.on_node_registered(booted("node1", "boot-1"), 2).unwrap();
    e.on_node_ping("node1", true, 3);
    assert_eq!(state(&e, "node1").0, "boot^");
    let id = submit(&mut e, desc(), 4);
    assert_eq!(
        e.job(id).unwrap().alloc.as_ref().unwrap().nodes[0].node.0,
        1
    );
    // A new boot: back, IDLE.
    e.on_node_registered(booted("node1", "boot-2"), 5).unwrap();
    assert_eq!(state(&e, "node1"), ("idle".into(), "IDLE".into(), None));
    assert!(e.node_infos()[0].next_state.is_none());
    assert_invariants(&e);
}

#[test]
fn asap_drains_waits_for_the_job_then_reboots_and_resumes() {
    let mut e = engine();
    let mut d = desc();
    d.nodelist = vec!["node1".into()];
    d.cpus_per_task = Some(2);
    let id = submit(&mut e, d, 0);
    e.take_commands();
    ask(&mut e, reboot(&["node1"], true, None), 1);
    assert!(reboots(e.take_commands()).is_empty());
    assert_eq!(
        state(&e, "node1"),
        (
            "drng@".into(),
            "ALLOCATED+DRAIN+REBOOT_REQUESTED".into(),
            Some("Reboot ASAP".into())
        )
    );
    // Kept across a restart.
    let saved = e.persistent_state();
    let mut e = Engine::restore(&config(CONF), saved, 0).unwrap();
    assert_eq!(state(&e, "node1").0, "drng@");
    e.on_job_exited(id, "node1", ExitCode::default(), None, 5)
        .unwrap();
    e.apply(Input::Tick, 5);
    assert_eq!(reboots(e.take_commands()), vec!["node1".to_string()]);
    assert_eq!(
        state(&e, "node1"),
        (
            "boot^".into(),
            "DOWN+DRAIN+REBOOT_ISSUED".into(),
            Some("Reboot ASAP : reboot issued".into())
        )
    );
    // Issued, then saved and restored: still issued.
    let saved = e.persistent_state();
    let mut e = Engine::restore(&config(CONF), saved, 0).unwrap();
    assert_eq!(state(&e, "node1").1, "DOWN+DRAIN+REBOOT_ISSUED");
    e.on_node_registered(booted("node1", "boot-2"), 6).unwrap();
    assert_eq!(state(&e, "node1"), ("idle".into(), "IDLE".into(), None));
}

#[test]
fn nextstate_down_leaves_the_node_down_with_its_reason() {
    let mut e = engine();
    let mut req = reboot(&["node2"], false, Some(RebootNextState::Down));
    if let CtldRequest::RebootNodes { reason, .. } = &mut req {
        *reason = Some("disk swap".into());
    }
    ask(&mut e, req, 1);
    assert_eq!(
        state(&e, "node2").2.as_deref(),
        Some("disk swap : reboot issued")
    );
    e.on_node_registered(booted("node2", "boot-9"), 2).unwrap();
    assert_eq!(
        state(&e, "node2"),
        (
            "down".into(),
            "DOWN".into(),
            Some("disk swap : reboot complete".into())
        )
    );
}

#[test]
fn a_node_that_does_not_come_back_is_down_after_resume_timeout() {
    let mut e = engine();
    ask(&mut e, reboot(&["node1"], false, None), 10);
    assert_eq!(e.next_wakeup(), Some(40));
    e.apply(Input::Tick, 39);
    assert_eq!(state(&e, "node1").0, "boot^");
    e.apply(Input::Tick, 40);
    assert_eq!(
        state(&e, "node1"),
        (
            "down".into(),
            "DOWN".into(),
            Some("reboot timed out".into())
        )
    );
    // Its daemon answering again does not bring it back by itself.
    e.on_node_ping("node1", true, 41);
    assert_eq!(state(&e, "node1").0, "down");
}

#[test]
fn cancel_reboot_forgets_a_pending_reboot_but_not_an_issued_one() {
    let mut e = engine();
    let mut d = desc();
    d.nodelist = vec!["node1".into()];
    d.cpus_per_task = Some(2);
    let id = submit(&mut e, d, 0);
    ask(&mut e, reboot(&["node1"], true, None), 1);
    let cancel = |nodes: &[&str]| CtldRequest::CancelReboot {
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
    };
    assert!(matches!(
        ask(&mut e, cancel(&["node1"]), 2),
        CtldResponse::Ok
    ));
    assert_eq!(
        state(&e, "node1"),
        ("alloc".into(), "ALLOCATED".into(), None)
    );
    e.on_job_exited(id, "node1", ExitCode::default(), None, 3)
        .unwrap();
    e.apply(Input::Tick, 3);
    assert!(reboots(e.take_commands()).is_empty());
    ask(&mut e, reboot(&["node2"], false, None), 4);
    assert!(matches!(
        ask(&mut e, cancel(&["node2"]), 5),
        CtldResponse::Error(SlurmError::RebootInProgress)
    ));
    // Operators only.
    let r = e
        .apply(
            Input::Request {
                req: Box::new(reboot(&["node1"], false, None)),
                who: user(),
            },
            6,
        )
        .reply
        .unwrap();
    assert!(matches!(r, CtldResponse::Error(SlurmError::AccessDenied)));
    assert_eq!(e.node("node1").unwrap().state.base, NodeBase::Idle);
}
