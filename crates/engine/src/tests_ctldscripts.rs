//! PrologSlurmctld and EpilogSlurmctld (`ctldscripts`, issue 39): the
//! engine holds a started job CONFIGURING and asks the controller to run
//! the prolog; its end launches the script, or requeues the job held (or
//! cancels it); the epilog is asked for when the allocation ends.

use crate::tests::{assert_invariants, config, desc, reg, submit, CONF};
use crate::{Command, Engine};
use model::{ExitCode, JobState, PendingReason};

fn engine_with_scripts() -> Engine {
    let text = format!("{CONF}PrologSlurmctld=/etc/pc\nEpilogSlurmctld=/etc/ec\n");
    let mut e = Engine::new(&config(&text), 0);
    for i in 1..=4 {
        e.on_node_registered(reg(&format!("node{i}"), 2, 4000), 0)
            .unwrap();
    }
    e
}

/// The controller scripts among `cmds`: (job, run, prolog, context).
fn scripts(cmds: &[Command]) -> Vec<(u32, u32, bool, String)> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::CtldScript {
                job_id,
                run,
                prolog,
                env,
            } => {
                let ctx = env
                    .iter()
                    .find(|(k, _)| k == "SLURM_SCRIPT_CONTEXT")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                Some((job_id.0, *run, *prolog, ctx))
            }
            _ => None,
        })
        .collect()
}

fn launches(cmds: &[Command]) -> usize {
    cmds.iter()
        .filter(|c| matches!(c, Command::LaunchBatch { .. }))
        .count()
}

#[test]
fn issue_39_prolog_slurmctld_holds_the_launch_until_it_succeeds() {
    let mut e = engine_with_scripts();
    let id = submit(&mut e, desc(), 0);
    let cmds = e.take_commands();
    assert_eq!(launches(&cmds), 0);
    assert_eq!(
        scripts(&cmds),
        [(id.0, 0, true, "prolog_slurmctld".to_string())]
    );
    let env = match cmds
        .iter()
        .find(|c| matches!(c, Command::CtldScript { .. }))
    {
        Some(Command::CtldScript { env, .. }) => env.clone(),
        _ => unreachable!(),
    };
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("SLURM_JOB_ID"), Some(id.0.to_string().as_str()));
    assert!(get("SLURM_JOB_USER").is_some());
    assert!(get("SLURM_JOB_NODELIST").is_some());
    assert!(get("SLURM_JOB_PARTITION").is_some());
    let j = e.job(id).unwrap();
    assert_eq!(j.state, JobState::Running);
    assert!(j.configuring);
    // salloc's view: not yet granted.
    assert_eq!(e.allocation_info(id).unwrap().state, JobState::Pending);
    // A stale end (another run) changes nothing.
    e.on_prolog_slurmctld_ended(id, 7, true, 1);
    assert!(e.job(id).unwrap().configuring);
    e.on_prolog_slurmctld_ended(id, 0, true, 2);
    let cmds = e.take_commands();
    assert_eq!(launches(&cmds), 1);
    assert!(!e.job(id).unwrap().configuring);
    assert_eq!(e.allocation_info(id).unwrap().state, JobState::Running);
    // The end asks for the epilog, with the job's exit.
    e.on_job_exited(id, "node1", ExitCode { code: 3, signal: 0 }, None, 5)
        .unwrap();
    let cmds = e.take_commands();
    assert_eq!(
        scripts(&cmds),
        [(id.0, 0, false, "epilog_slurmctld".to_string())]
    );
    assert_invariants(&e);
}

#[test]
fn issue_39_a_failing_prolog_slurmctld_requeues_held_or_cancels() {
    let mut e = engine_with_scripts();
    let a = submit(&mut e, desc(), 0);
    let mut d = desc();
    d.requeue = Some(false);
    let b = submit(&mut e, d, 0);
    e.take_commands();
    let node_of = |e: &Engine, id| {
        let idx = e.job(id).unwrap().alloc.as_ref().unwrap().nodes[0].node;
        e.nodes[idx.0 as usize].conf.name.clone()
    };
    let na = node_of(&e, a);
    e.on_prolog_slurmctld_ended(a, 0, false, 3);
    let j = e.job(a).unwrap();
    assert_eq!(j.state, JobState::Pending);
    assert_eq!(j.reason, PendingReason::LaunchFailRequeueHold);
    assert_eq!(j.priority, 0);
    assert_eq!(j.restarts, 1);
    assert!(!j.configuring);
    e.on_prolog_slurmctld_ended(b, 0, false, 3);
    assert_eq!(e.job(b).unwrap().state, JobState::Cancelled);
    // Both allocations ended: each asks for its epilog; nothing launched.
    let cmds = e.take_commands();
    assert_eq!(launches(&cmds), 0);
    let mut eps: Vec<_> = scripts(&cmds).into_iter().filter(|s| !s.2).collect();
    eps.sort();
    assert_eq!(eps.len(), 2, "{eps:?}");
    // The node never got the job: its answer to the terminate ends the
    // requeued run (its share is free again).
    assert!(e.job(a).unwrap().completing);
    e.on_job_gone(a, &na, 0, 4);
    assert!(!e.job(a).unwrap().completing);
    // The held job stays held after a pass.
    e.schedule(200);
    assert_eq!(e.job(a).unwrap().state, JobState::Pending);
    assert_invariants(&e);
}

#[test]
fn issue_39_a_restarted_controller_runs_a_pending_prolog_again() {
    let mut e = engine_with_scripts();
    let id = submit(&mut e, desc(), 0);
    e.take_commands();
    e.after_recovery(10);
    let cmds = e.take_commands();
    assert_eq!(launches(&cmds), 0);
    assert_eq!(
        scripts(&cmds),
        [(id.0, 0, true, "prolog_slurmctld".to_string())]
    );
}

#[test]
fn issue_39_the_simulator_runs_no_controller_scripts() {
    let text = format!("{CONF}PrologSlurmctld=/etc/pc\nEpilogSlurmctld=/etc/ec\n");
    let mut e = Engine::new(&config(&text), 0);
    e.set_simulated(true);
    for i in 1..=4 {
        e.on_node_registered(reg(&format!("node{i}"), 2, 4000), 0)
            .unwrap();
    }
    let id = submit(&mut e, desc(), 0);
    let cmds = e.take_commands();
    assert!(scripts(&cmds).is_empty());
    assert!(!e.job(id).unwrap().configuring);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
}
