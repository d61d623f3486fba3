//! Licenses (`crate::licenses`): refused at submission as Slurm refuses
//! them, held from start to end, waited for with reason `Licenses`.

use crate::tests::{assert_invariants, config, desc, launched, user};
use crate::Engine;
use model::{ExitCode, JobId, JobState, PendingReason};
use proptest::prelude::*;
use proto::SlurmError;

const CONF: &str = "\
ClusterName=test
SlurmctldHost=ctl(127.0.0.1)
SlurmUser=slurm
Licenses=matlab:2,ansys
NodeName=node[1-4] CPUs=2 RealMemory=4000 Port=7001
PartitionName=debug Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP
";

fn engine() -> Engine {
    let mut e = Engine::new(&config(CONF), 0);
    for i in 1..=4 {
        let reg = crate::tests::reg(&format!("node{i}"), 2, 4000);
        e.on_node_registered(reg, 0).unwrap();
    }
    e
}

fn with_licenses(spec: &str) -> proto::JobDesc {
    let mut d = desc();
    d.licenses = Some(spec.into());
    d
}

fn try_submit(e: &mut Engine, spec: &str) -> Result<JobId, SlurmError> {
    let id = e.on_submit(with_licenses(spec), &user(), 0)?.job_id;
    e.schedule(0);
    assert_invariants(e);
    Ok(id)
}

fn end(e: &mut Engine, id: JobId, now: i64) {
    let node = e.job(id).unwrap().alloc.as_ref().unwrap().nodes[0].node;
    let name = e.nodes[node.0 as usize].conf.name.clone();
    e.on_job_exited(id, &name, ExitCode { code: 0, signal: 0 }, None, now)
        .unwrap();
    e.schedule(now);
    assert_invariants(e);
}

#[test]
fn unknown_licenses_and_more_than_the_total_are_refused() {
    let mut e = engine();
    assert_eq!(
        try_submit(&mut e, "nosuch"),
        Err(SlurmError::InvalidLicenses)
    );
    assert_eq!(
        try_submit(&mut e, "matlab:3"),
        Err(SlurmError::InvalidLicenses)
    );
    assert_eq!(
        try_submit(&mut e, "matlab|ansys"),
        Err(SlurmError::InvalidLicenses)
    );
    assert_eq!(
        try_submit(&mut e, "matlab:0"),
        Err(SlurmError::InvalidLicenses)
    );
    assert_eq!(
        SlurmError::InvalidLicenses.as_slurm_str(),
        "Invalid license specification"
    );
    let id = try_submit(&mut e, "ansys,matlab:1,matlab").unwrap();
    // Normalised: each name once, counts added up.
    assert_eq!(
        e.job(id).unwrap().desc.licenses.as_deref(),
        Some("ansys:1,matlab:2")
    );
}

#[test]
fn a_job_waits_for_licenses_and_runs_when_one_frees() {
    let mut e = engine();
    let a = try_submit(&mut e, "matlab:2").unwrap();
    let b = try_submit(&mut e, "matlab").unwrap();
    assert_eq!(e.job(a).unwrap().state, JobState::Running);
    assert_eq!(e.job(b).unwrap().state, JobState::Pending);
    assert_eq!(e.job(b).unwrap().reason, PendingReason::Licenses);
    // A job without licenses is not held up by them.
    let c = try_submit(&mut e, "ansys").unwrap();
    assert_eq!(e.job(c).unwrap().state, JobState::Running);
    let infos = e.license_infos();
    let shown: Vec<_> = infos
        .iter()
        .map(|l| (l.name.as_str(), l.total, l.used))
        .collect();
    assert_eq!(shown, [("ansys", 1, 1), ("matlab", 2, 2)]);
    e.take_commands();
    end(&mut e, a, 10);
    assert_eq!(e.job(b).unwrap().state, JobState::Running);
    assert_eq!(launched(&e.take_commands()).len(), 1);
    assert_eq!(e.license_infos()[1].used, 1);
    let rec = e.acct_job(b, 11).unwrap();
    assert!(
        rec.req_tres.contains("license/matlab=1"),
        "{}",
        rec.req_tres
    );
    assert!(
        rec.alloc_tres.contains("license/matlab=1"),
        "{}",
        rec.alloc_tres
    );
    assert_eq!(
        e.job_info(e.job(b).unwrap(), 11).licenses.as_deref(),
        Some("matlab:1")
    );
}

#[test]
fn a_higher_priority_job_waiting_for_nodes_keeps_its_licenses() {
    let mut e = engine();
    // Every CPU taken: the next job waits for Resources, and keeps the
    // matlab licenses it asks for from the job behind it.
    let mut all = desc();
    all.ntasks = Some(8);
    let blocker = e.on_submit(all, &user(), 0).unwrap().job_id;
    e.schedule(0);
    let mut wide = with_licenses("matlab:2");
    wide.ntasks = Some(8);
    let wide = e.on_submit(wide, &user(), 1).unwrap().job_id;
    let mut small = with_licenses("matlab");
    small.nice = 100;
    let small = e.on_submit(small, &user(), 2).unwrap().job_id;
    e.schedule(2);
    assert_invariants(&e);
    assert_eq!(e.job(wide).unwrap().reason, PendingReason::Resources);
    assert_eq!(e.job(small).unwrap().reason, PendingReason::Licenses);
    end(&mut e, blocker, 10);
    assert_eq!(e.job(wide).unwrap().state, JobState::Running);
    assert_eq!(e.job(small).unwrap().reason, PendingReason::Licenses);
    end(&mut e, wide, 20);
    assert_eq!(e.job(small).unwrap().state, JobState::Running);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever jobs come and go, no license is held beyond its total
    /// (`check_invariants` counts them after every step).
    #[test]
    fn licenses_are_never_over_allocated(
        steps in prop::collection::vec((0u8..6, 1u32..3, 0u8..4), 1..40)
    ) {
        let mut e = engine();
        let mut now = 0;
        for (kind, n, end_pick) in steps {
            now += 1;
            let spec = match kind {
                0 => format!("matlab:{n}"),
                1 => "ansys".to_string(),
                2 => format!("ansys,matlab:{}", n.min(2)),
                3 => String::new(),
                _ => "matlab".to_string(),
            };
            let mut d = desc();
            d.licenses = (!spec.is_empty()).then_some(spec);
            d.ntasks = Some(n);
            e.on_submit(d, &user(), now).unwrap();
            e.schedule(now);
            let broken = e.check_invariants();
            prop_assert!(broken.is_empty(), "{:?}", broken);
            let running: Vec<JobId> = e
                .jobs
                .values()
                .filter(|j| j.state == JobState::Running)
                .map(|j| j.id)
                .collect();
            if let Some(&id) = running.get(end_pick as usize) {
                end(&mut e, id, now);
            }
            for l in e.license_infos() {
                prop_assert!(l.used <= l.total, "{:?}", l);
            }
        }
    }
}

#[test]
fn array_tasks_start_as_far_as_the_licenses_go() {
    let mut e = engine();
    let mut d = with_licenses("matlab");
    d.array = Some("0-3".into());
    let id = e.on_submit(d, &user(), 0).unwrap().job_id;
    e.schedule(0);
    assert_invariants(&e);
    let running: Vec<JobId> = e
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running)
        .map(|j| j.id)
        .collect();
    assert_eq!(running.len(), 2, "matlab:2 configured");
    assert_eq!(e.license_infos()[1].used, 2);
    // The record of the tasks not started waits for the licenses.
    assert_eq!(e.job(id).unwrap().state, JobState::Pending);
    end(&mut e, running[0], 5);
    let n_running = e
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running)
        .count();
    assert_eq!(n_running, 2);
    assert_eq!(e.license_infos()[1].used, 2);
    assert_eq!(e.job(id).unwrap().reason, PendingReason::Licenses);
}
