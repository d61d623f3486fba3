//! Advance reservations (`crate::resv`): made, shown and deleted as Slurm
//! does; jobs outside one kept off its nodes in its window, jobs in one
//! confined to them; kept across a restart.

use crate::tests::{admin, assert_invariants, config, desc, user};
use crate::{Engine, Input};
use model::{JobId, JobState, PendingReason, TimeLimit, Timestamp};
use proto::resv::ResvSpec;
use proto::{CtldRequest, CtldResponse, SlurmError};

const CONF: &str = "\
ClusterName=test
SlurmctldHost=ctl(127.0.0.1)
SlurmUser=slurm
SlurmdTimeout=0
NodeName=node[1-2] CPUs=2 RealMemory=4000 Port=7001
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
";

fn engine() -> Engine {
    let mut e = Engine::new(&config(CONF), 0);
    for i in 1..=2 {
        let reg = crate::tests::reg(&format!("node{i}"), 2, 4000);
        e.on_node_registered(reg, 0).unwrap();
    }
    e
}

fn ask(e: &mut Engine, req: CtldRequest, who: proto::Identity, now: Timestamp) -> CtldResponse {
    let r = e
        .apply(
            Input::Request {
                req: Box::new(req),
                who,
            },
            now,
        )
        .reply
        .unwrap();
    e.apply(Input::Tick, now);
    assert_invariants(e);
    r
}

fn spec(name: &str, nodes: &str, start: Timestamp, mins: u64, flags: &str) -> ResvSpec {
    ResvSpec {
        name: name.into(),
        start: Some(start),
        duration_mins: Some(mins),
        nodes: Some(nodes.into()),
        users: Some("alice".into()),
        flags: (!flags.is_empty()).then(|| flags.into()),
        ..ResvSpec::default()
    }
}

fn create(e: &mut Engine, s: ResvSpec, now: Timestamp) -> CtldResponse {
    ask(e, CtldRequest::CreateReservation(s), admin(), now)
}

fn submit(
    e: &mut Engine,
    resv: Option<&str>,
    mins: u32,
    now: Timestamp,
) -> Result<JobId, SlurmError> {
    let mut d = desc();
    d.reservation = resv.map(Into::into);
    d.time_limit = Some(TimeLimit::Minutes(mins));
    d.ntasks = Some(2);
    let id = e.on_submit(d, &user(), now)?.job_id;
    e.apply(Input::Tick, now);
    assert_invariants(e);
    Ok(id)
}

fn node_of(e: &Engine, id: JobId) -> Option<String> {
    let job = e.job(id)?;
    let a = job.alloc.as_ref()?;
    Some(e.nodes[a.nodes[0].node.0 as usize].conf.name.clone())
}

fn list(e: &mut Engine, now: Timestamp) -> Vec<proto::resv::ResvInfo> {
    match ask(e, CtldRequest::ListReservations, user(), now) {
        CtldResponse::Reservations(l) => l,
        other => panic!("{other:?}"),
    }
}

#[test]
fn create_show_update_delete() {
    let mut e = engine();
    let r = create(&mut e, spec("maint", "node1", 100, 60, "MAINT"), 10);
    assert!(
        matches!(r, CtldResponse::ReservationCreated(ref n) if n == "maint"),
        "{r:?}"
    );
    let l = list(&mut e, 10);
    assert_eq!(l.len(), 1);
    let i = &l[0];
    assert_eq!(
        (i.start, i.end, i.nodes.as_str(), i.node_cnt, i.core_cnt),
        (100, 3700, "node1", 1, 2)
    );
    assert_eq!(
        (i.flags.as_str(), i.users.as_str(), i.active),
        ("MAINT,SPEC_NODES", "alice", false)
    );
    // The name is taken; a user may not make one.
    let r = create(&mut e, spec("maint", "node2", 100, 60, ""), 10);
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::ReservationNameDup)),
        "{r:?}"
    );
    let r = ask(
        &mut e,
        CtldRequest::CreateReservation(spec("x", "node2", 100, 60, "")),
        user(),
        10,
    );
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::AccessDenied)),
        "{r:?}"
    );
    // The same node in the same window, without OVERLAP or MAINT.
    let r = create(&mut e, spec("other", "node2", 200, 60, ""), 10);
    assert!(matches!(r, CtldResponse::ReservationCreated(_)), "{r:?}");
    let r = create(&mut e, spec("third", "node2", 300, 60, ""), 10);
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::ReservationOverlap)),
        "{r:?}"
    );
    let r = create(&mut e, spec("third", "node2", 300, 60, "OVERLAP"), 10);
    assert!(matches!(r, CtldResponse::ReservationCreated(_)), "{r:?}");
    // Neither users nor accounts; no end.
    let mut s = spec("x", "node2", 100, 60, "");
    s.users = None;
    assert!(matches!(
        create(&mut e, s, 10),
        CtldResponse::Error(SlurmError::ReservationEmpty)
    ));
    let mut s = spec("x", "node2", 100, 60, "");
    s.duration_mins = None;
    assert!(matches!(
        create(&mut e, s, 10),
        CtldResponse::Error(SlurmError::InvalidTimeValue)
    ));
    // Update: more users, a longer window.
    let up = ResvSpec {
        name: "maint".into(),
        users: Some("+bob".into()),
        duration_mins: Some(120),
        ..ResvSpec::default()
    };
    assert!(matches!(
        ask(&mut e, CtldRequest::UpdateReservation(up), admin(), 20),
        CtldResponse::Ok
    ));
    let l = list(&mut e, 20);
    let i = l.iter().find(|r| r.name == "maint").unwrap();
    assert_eq!((i.end, i.users.as_str()), (7300, "alice,bob"));
    let del = |name: &str| CtldRequest::DeleteReservation { name: name.into() };
    assert!(matches!(
        ask(&mut e, del("nosuch"), admin(), 30),
        CtldResponse::Error(SlurmError::ReservationInvalid)
    ));
    assert!(matches!(
        ask(&mut e, del("maint"), admin(), 30),
        CtldResponse::Ok
    ));
    assert_eq!(list(&mut e, 30).len(), 2);
    assert!(e.resvs.ever);
    for name in ["other", "third"] {
        let r = ask(&mut e, del(name), admin(), 30);
        assert!(matches!(r, CtldResponse::Ok), "{r:?}");
    }
    // None left and no job names one: passes take their shortcuts again.
    assert!(!e.resvs.ever);
}

#[test]
fn busy_nodes_refuse_a_reservation_without_ignore_jobs() {
    let mut e = engine();
    let id = submit(&mut e, None, 60, 0).unwrap();
    let node = node_of(&e, id).unwrap();
    let r = create(&mut e, spec("r", &node, 0, 60, ""), 0);
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::NodesBusy)),
        "{r:?}"
    );
    assert_eq!(
        SlurmError::NodesBusy.as_slurm_str(),
        "Requested nodes are busy"
    );
    // After the job's limit: free.
    assert!(matches!(
        create(&mut e, spec("later", &node, 3600, 60, ""), 0),
        CtldResponse::ReservationCreated(_)
    ));
    assert!(matches!(
        create(&mut e, spec("now", &node, 0, 60, "IGNORE_JOBS,OVERLAP"), 0),
        CtldResponse::ReservationCreated(_)
    ));
    // NodeCnt picks a free node.
    let mut s = spec("cnt", "", 0, 60, "");
    s.nodes = None;
    s.node_cnt = Some(1);
    assert!(matches!(
        create(&mut e, s, 0),
        CtldResponse::ReservationCreated(_)
    ));
    let l = list(&mut e, 0);
    let cnt = l.iter().find(|r| r.name == "cnt").unwrap();
    assert_ne!(cnt.nodes, node);
}

#[test]
fn jobs_run_in_their_reservation_and_others_stay_off_it() {
    let mut e = engine();
    assert!(matches!(
        create(&mut e, spec("r", "node1", 0, 600, ""), 0),
        CtldResponse::ReservationCreated(_)
    ));
    // Not in it: node2, then waits.
    let a = submit(&mut e, None, 60, 0).unwrap();
    assert_eq!(node_of(&e, a).as_deref(), Some("node2"));
    let b = submit(&mut e, None, 60, 0).unwrap();
    assert_eq!(e.job(b).unwrap().state, JobState::Pending);
    // In it: node1.
    let c = submit(&mut e, Some("r"), 60, 0).unwrap();
    assert_eq!(node_of(&e, c).as_deref(), Some("node1"));
    // Unknown, and not allowed.
    assert_eq!(
        submit(&mut e, Some("nosuch"), 60, 0),
        Err(SlurmError::ReservationInvalid)
    );
    let mut d = desc();
    d.reservation = Some("r".into());
    let bob = proto::Identity {
        uid: 1001,
        gid: 1001,
        user: "bob".into(),
        host: "h".into(),
    };
    assert_eq!(
        e.on_submit(d, &bob, 0).map(|r| r.job_id),
        Err(SlurmError::ReservationAccess)
    );
    assert_eq!(
        SlurmError::ReservationAccess.as_slurm_str(),
        "Access denied to requested reservation"
    );
    // The reservation has jobs: it is not deleted.
    let del = CtldRequest::DeleteReservation { name: "r".into() };
    assert!(matches!(
        ask(&mut e, del, admin(), 1),
        CtldResponse::Error(_)
    ));
}

#[test]
fn a_job_waits_for_its_reservation_to_begin_and_it_is_purged_at_its_end() {
    let mut e = engine();
    assert!(matches!(
        create(&mut e, spec("r", "node1", 100, 10, ""), 0),
        CtldResponse::ReservationCreated(_)
    ));
    let j = submit(&mut e, Some("r"), 5, 0).unwrap();
    assert_eq!(e.job(j).unwrap().reason, PendingReason::Reservation);
    assert_eq!(e.next_wakeup(), Some(100));
    e.apply(Input::Tick, 100);
    assert_eq!(node_of(&e, j).as_deref(), Some("node1"));
    assert!(list(&mut e, 100)[0].active);
    e.apply(Input::Tick, 700);
    assert!(list(&mut e, 700).is_empty());
}

#[test]
fn a_job_that_would_run_into_a_maintenance_window_waits() {
    let mut e = engine();
    let all = spec("maint", "ALL", 3600, 60, "MAINT");
    assert!(matches!(
        create(&mut e, all, 0),
        CtldResponse::ReservationCreated(_)
    ));
    let long = submit(&mut e, None, 120, 0).unwrap();
    let job = e.job(long).unwrap();
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.reason, PendingReason::ReservedForMaint);
    assert_eq!(
        job.reason.as_slurm_str(),
        "ReqNodeNotAvail, Reserved for maintenance"
    );
    // One that ends before it begins runs.
    let short = submit(&mut e, None, 30, 0).unwrap();
    assert_eq!(e.job(short).unwrap().state, JobState::Running);
    let in_way = e.resvs_in_way(e.job(long).unwrap(), 0);
    assert_eq!(in_way, vec!["maint".to_string()]);
}

#[test]
fn reservations_survive_a_restart() {
    let mut e = engine();
    assert!(matches!(
        create(
            &mut e,
            spec("r", "node[1-2]", 100, 60, "MAINT,IGNORE_JOBS"),
            0
        ),
        CtldResponse::ReservationCreated(_)
    ));
    let mut s = spec("", "node1", 5000, 60, "OVERLAP");
    s.accounts = Some("-phys".into());
    s.users = None;
    assert!(
        matches!(create(&mut e, s, 0), CtldResponse::ReservationCreated(ref n) if n == "root_1")
    );
    let before = list(&mut e, 0);
    let state = e.persistent_state();
    let mut back = Engine::restore(&config(CONF), state, 0).unwrap();
    assert_eq!(list(&mut back, 0), before);
    assert_eq!(before[1].accounts, "-phys");
    // The counter too.
    let mut s = spec("", "node2", 9000, 60, "");
    s.users = Some("alice".into());
    assert!(
        matches!(create(&mut back, s, 0), CtldResponse::ReservationCreated(ref n) if n == "root_2")
    );
}

#[test]
fn a_job_that_would_run_into_a_window_is_planned_after_it() {
    // Maintenance on every node from 120 s to 720 s.
    let mut e = engine();
    let all = spec("maint", "ALL", 120, 10, "MAINT");
    assert!(matches!(
        create(&mut e, all, 0),
        CtldResponse::ReservationCreated(_)
    ));
    let long = submit(&mut e, None, 5, 1).unwrap();
    let job = e.job(long).unwrap();
    assert_eq!(
        (job.state, job.reason),
        (JobState::Pending, PendingReason::ReservedForMaint)
    );
    // Planned for the window's end: StartTime, squeue --start, explain.
    let info = e.job_info(job, 1);
    assert_eq!(info.start_time, Some(720));
    let why = e.explain(long, 1).unwrap();
    assert_eq!(why.start_time, Some(720));
    assert_eq!(why.reservations, vec!["maint".to_string()]);
    // One minute ends before the window: it runs now.
    let short = submit(&mut e, None, 1, 1).unwrap();
    assert_eq!(e.job(short).unwrap().state, JobState::Running);
    // In the window, still planned for its end; after it, it runs.
    e.apply(Input::Tick, 130);
    let job = e.job(long).unwrap();
    assert_eq!(job.reason, PendingReason::ReservedForMaint);
    assert_eq!(e.job_info(job, 130).start_time, Some(720));
    e.apply(Input::Tick, 720);
    assert_invariants(&e);
    assert_eq!(e.job(long).unwrap().state, JobState::Running);
}

#[test]
fn a_window_on_some_nodes_sends_jobs_to_the_others_and_its_own_jobs_in() {
    let mut e = engine();
    assert!(matches!(
        create(&mut e, spec("r", "node1", 0, 60, ""), 0),
        CtldResponse::ReservationCreated(_)
    ));
    let out = submit(&mut e, None, 10, 0).unwrap();
    assert_eq!(node_of(&e, out).as_deref(), Some("node2"));
    // Both nodes taken now: the next one outside waits for node2, whose
    // job ends at 600, not for the reservation (which holds node1 to 3600).
    let inside = submit(&mut e, Some("r"), 10, 0).unwrap();
    assert_eq!(node_of(&e, inside).as_deref(), Some("node1"));
    let next = submit(&mut e, None, 10, 0).unwrap();
    let job = e.job(next).unwrap();
    assert_eq!(job.reason, PendingReason::Resources);
    assert_eq!(e.job_info(job, 0).start_time, Some(600));
    assert_invariants(&e);
}

fn finish(e: &mut Engine, id: JobId, now: Timestamp) {
    let node = node_of(e, id).expect("running");
    e.on_job_exited(id, &node, model::ExitCode::default(), None, now)
        .unwrap();
    e.apply(Input::Tick, now);
    assert_invariants(e);
}

#[test]
fn flex_jobs_start_early_and_use_other_nodes() {
    let mut e = engine();
    // Node1 reserved from 1000 s; a FLEX job in it runs now, and a second
    // one takes node2.
    assert!(matches!(
        create(&mut e, spec("f", "node1", 1000, 60, "FLEX"), 0),
        CtldResponse::ReservationCreated(_)
    ));
    let a = submit(&mut e, Some("f"), 10, 0).unwrap();
    let b = submit(&mut e, Some("f"), 10, 0).unwrap();
    assert_eq!(e.job(a).unwrap().state, JobState::Running);
    assert_eq!(e.job(b).unwrap().state, JobState::Running);
    let mut on = vec![node_of(&e, a).unwrap(), node_of(&e, b).unwrap()];
    on.sort();
    assert_eq!(on, ["node1", "node2"]);
    assert!(list(&mut e, 0)[0].flags.starts_with("FLEX,"));
}

#[test]
fn magnetic_reservations_draw_the_jobs_they_admit() {
    let mut e = engine();
    assert!(matches!(
        create(&mut e, spec("m", "node[1-2]", 0, 60, "MAGNETIC"), 0),
        CtldResponse::ReservationCreated(_)
    ));
    // alice's job names no reservation, yet runs in it.
    let a = submit(&mut e, None, 10, 0).unwrap();
    assert_eq!(e.job(a).unwrap().state, JobState::Running);
    // Drawn in, it still keeps off the nodes of another reservation.
    let mut e = engine();
    create(&mut e, spec("m", "node1", 0, 60, "MAGNETIC"), 0);
    let mut other = spec("o", "node2", 0, 60, "");
    other.users = Some("bob".into());
    create(&mut e, other, 0);
    let a = submit(&mut e, None, 10, 0).unwrap();
    let b = submit(&mut e, None, 10, 0).unwrap();
    assert_eq!(node_of(&e, a).as_deref(), Some("node1"));
    assert_eq!(e.job(b).unwrap().state, JobState::Pending);
    // Without MAGNETIC it would wait for the reservation's end.
    let mut e = engine();
    create(&mut e, spec("r", "node[1-2]", 0, 60, ""), 0);
    let a = submit(&mut e, None, 10, 0).unwrap();
    let job = e.job(a).unwrap();
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(e.job_info(job, 0).start_time, Some(3600));
}

#[test]
fn purge_comp_deletes_a_reservation_its_last_job_left() {
    let mut e = engine();
    let s = spec("p", "node1", 0, 600, "PURGE_COMP=2:00");
    assert!(matches!(
        create(&mut e, s, 0),
        CtldResponse::ReservationCreated(_)
    ));
    assert_eq!(list(&mut e, 0)[0].flags, "SPEC_NODES,PURGE_COMP=00:02:00");
    let a = submit(&mut e, Some("p"), 10, 10).unwrap();
    // Busy well past its two idle minutes.
    e.apply(Input::Tick, 500);
    assert_eq!(list(&mut e, 500).len(), 1);
    finish(&mut e, a, 510);
    e.apply(Input::Tick, 600);
    assert_eq!(list(&mut e, 600).len(), 1);
    // Its wake-up is due two minutes after the job's end.
    assert_eq!(e.resv_wake(), Some(630));
    e.apply(Input::Tick, 630);
    assert!(list(&mut e, 630).is_empty());
}

#[test]
fn replace_down_swaps_a_drained_node_for_an_idle_one() {
    let mut e = engine();
    let mut s = spec("r", "", 0, 600, "REPLACE_DOWN");
    s.nodes = None;
    s.node_cnt = Some(1);
    assert!(matches!(
        create(&mut e, s, 0),
        CtldResponse::ReservationCreated(_)
    ));
    assert_eq!(list(&mut e, 0)[0].nodes, "node1");
    e.on_update_node(
        &["node1".into()],
        Some(proto::NodeStateRequest::Drain),
        Some("bad".into()),
        &admin(),
        5,
    )
    .unwrap();
    e.apply(Input::Tick, 6);
    assert_eq!(list(&mut e, 6)[0].nodes, "node2");
}

#[test]
fn daily_reservations_come_back_a_day_later() {
    let mut e = engine();
    let day = 86_400;
    assert!(matches!(
        create(&mut e, spec("d", "node1", 100, 60, "DAILY"), 0),
        CtldResponse::ReservationCreated(_)
    ));
    e.apply(Input::Tick, 3700);
    let l = list(&mut e, 3700);
    assert_eq!((l[0].start, l[0].end), (100 + day, 3700 + day));
    assert_eq!(l[0].flags, "DAILY,SPEC_NODES");
    // Longer than a day: refused.
    let r = create(&mut e, spec("x", "node2", 100, 25 * 60, "DAILY"), 0);
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::InvalidTimeValue)),
        "{r:?}"
    );
}
