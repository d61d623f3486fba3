//! GPU Xid quarantine (`Engine::on_gpu_xid`, issue 39 item 6): the node
//! is drained `GPU Xid N`; the job on that GPU is requeued away from the
//! node (or ends NODE_FAIL); jobs on the node's other GPUs run on.

use crate::tests::{assert_invariants, desc, engine, submit};
use model::{JobState, PendingReason};
use proto::JobDesc;

fn gpu_job(requeue: bool) -> JobDesc {
    let mut d = desc();
    d.partitions = vec!["gpu".into()];
    d.gres = vec![model::Gres::parse("gpu:1").unwrap()];
    d.min_nodes = Some(1);
    d.max_nodes = Some(1);
    d.nodelist = vec!["node3".into()];
    d.requeue = Some(requeue);
    d
}

#[test]
fn issue_39_a_fatal_xid_drains_and_requeues_the_job_on_that_gpu_elsewhere() {
    let mut e = engine();
    let a = submit(&mut e, gpu_job(true), 0);
    let b = submit(&mut e, gpu_job(true), 0);
    e.take_commands();
    let gpu_of = |e: &crate::Engine, id| -> Vec<u32> {
        e.job(id).unwrap().alloc.as_ref().unwrap().nodes[0].gres[0]
            .1
            .clone()
    };
    assert_eq!(gpu_of(&e, a), [0]);
    assert_eq!(gpu_of(&e, b), [1]);
    // GPU 1 fails: b goes back to the queue, a runs on.
    e.on_gpu_xid("node3", 79, Some(1), 5).unwrap();
    let n = e.node("node3").unwrap();
    assert!(n.state.drain);
    assert_eq!(n.reason.as_deref(), Some("GPU Xid 79"));
    assert_eq!(n.reason_user.as_deref(), Some("slurm"));
    assert_eq!(e.job(a).unwrap().state, JobState::Running);
    let jb = e.job(b).unwrap();
    assert_eq!(jb.state, JobState::Pending);
    assert_eq!(jb.restarts, 1);
    assert_eq!(jb.desc.exclude, ["node3"]);
    assert!(e.job(a).unwrap().desc.exclude.is_empty());
    assert_invariants(&e);
}

#[test]
fn issue_39_an_unknown_gpu_hits_every_job_and_no_requeue_ends_node_fail() {
    let mut e = engine();
    let mut d = gpu_job(true);
    d.nodelist = vec![];
    let a = submit(&mut e, d.clone(), 0);
    let on = e.job(a).unwrap().alloc.as_ref().unwrap().nodes[0].node;
    let node = e.nodes[on.0 as usize].conf.name.clone();
    d.requeue = Some(false);
    d.nodelist = vec![node.clone()];
    let b = submit(&mut e, d, 0);
    e.on_gpu_xid(&node, 48, None, 5).unwrap();
    assert_eq!(e.job(a).unwrap().state, JobState::Pending);
    assert_eq!(e.job(a).unwrap().desc.exclude, std::slice::from_ref(&node));
    assert_eq!(e.job(b).unwrap().state, JobState::NodeFail);
    assert_eq!(e.job(b).unwrap().reason, PendingReason::NodeDown);
    // The requeued job starts again, not on the quarantined node.
    e.on_job_exited(a, &node, model::ExitCode::default(), None, 6)
        .unwrap();
    e.on_timer(200);
    e.schedule(200);
    let j = e.job(a).unwrap();
    assert_eq!(j.state, JobState::Running);
    assert_ne!(j.alloc.as_ref().unwrap().nodes[0].node, on);
    assert_eq!(
        e.on_gpu_xid("nosuchnode", 79, None, 7),
        Err(proto::SlurmError::InvalidNodeName)
    );
    assert_invariants(&e);
}
