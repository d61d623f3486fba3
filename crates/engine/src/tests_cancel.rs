//! A filtered scancel in one request (`Engine::on_cancel_selected`, issue
//! 44): it cancels exactly the jobs its filters match, as the per-job
//! cancels scancel sent before it did.

use crate::tests::{admin, assert_invariants, desc, engine, other, user};
use crate::Engine;
use model::{JobId, JobState};
use proto::{CancelOutcome, Identity, JobDesc, JobSelect, SignalScope, SlurmError};

fn submit_as(e: &mut Engine, who: &Identity, name: &str, hold: bool, partition: &str) -> JobId {
    let d = JobDesc {
        name: name.into(),
        hold,
        partitions: vec![partition.into()],
        ..desc()
    };
    e.on_submit(d, who, 0).expect("accepted").job_id
}

/// Neither `-b` nor `-f`.
fn scope() -> SignalScope {
    SignalScope::of_flags(false, false)
}

fn state(e: &Engine, id: JobId) -> JobState {
    e.job(id).expect("job").state
}

#[test]
fn issue_44_scancel_user_and_name_cancels_only_the_matching_jobs_in_one_input() {
    let mut e = engine();
    let a1 = submit_as(&mut e, &user(), "a", true, "debug");
    let b1 = submit_as(&mut e, &user(), "b", true, "debug");
    let a2 = submit_as(&mut e, &user(), "a", false, "debug");
    let bob_a = submit_as(&mut e, &other(), "a", true, "debug");
    e.schedule(0);
    e.take_commands();
    let select = JobSelect {
        user: Some("alice".into()),
        names: vec!["a".into()],
        ..JobSelect::default()
    };
    let outcomes = e.on_cancel_selected(&select, None, scope(), &admin(), 5);
    assert_eq!(
        outcomes,
        [a1, a2].map(|job_id| CancelOutcome {
            job_id,
            error: None
        })
    );
    assert_eq!(state(&e, a1), JobState::Cancelled);
    assert_eq!(state(&e, a2), JobState::Cancelled);
    assert_eq!(state(&e, b1), JobState::Pending);
    assert_eq!(state(&e, bob_a), JobState::Pending);
    // One accounting record per cancelled job, in the same input.
    let records = e
        .take_commands()
        .into_iter()
        .filter(|c| matches!(c, crate::Command::AcctRecord(_)))
        .count();
    assert_eq!(records, 2);
    assert_invariants(&e);
    // Already cancelled: a second request selects nothing.
    let again = e.on_cancel_selected(&select, None, scope(), &admin(), 6);
    assert!(again.is_empty());
}

#[test]
fn a_job_the_caller_may_not_cancel_is_selected_and_refused() {
    let mut e = engine();
    let mine = submit_as(&mut e, &user(), "a", true, "debug");
    let bobs = submit_as(&mut e, &other(), "a", true, "debug");
    let select = JobSelect {
        names: vec!["a".into()],
        ..JobSelect::default()
    };
    let outcomes = e.on_cancel_selected(&select, None, scope(), &user(), 5);
    assert_eq!(
        outcomes,
        [
            CancelOutcome {
                job_id: mine,
                error: None
            },
            CancelOutcome {
                job_id: bobs,
                error: Some(SlurmError::AccessDenied)
            }
        ]
    );
    assert_eq!(state(&e, bobs), JobState::Pending);
    // `--me` takes the caller from the identity the request proves.
    let me = JobSelect {
        me: true,
        ..JobSelect::default()
    };
    assert!(e
        .on_cancel_selected(&me, None, scope(), &other(), 6)
        .iter()
        .all(|o| o.job_id == bobs && o.error.is_none()));
    assert_eq!(state(&e, bobs), JobState::Cancelled);
}

/// The jobs a filter matches, read from the job list as squeue shows it
/// (a model of scancel(1)'s filters written apart from `JobSelect`).
fn oracle(e: &Engine, s: &JobSelect) -> Vec<JobId> {
    e.job_list(0)
        .jobs
        .iter()
        .filter(|j| !j.state.is_finished())
        .filter(|j| s.user.as_ref().is_none_or(|u| *u == j.user))
        .filter(|j| s.names.is_empty() || s.names.contains(&j.name))
        .filter(|j| s.states.is_empty() || s.states.contains(&j.state))
        .filter(|j| {
            s.partitions.is_empty()
                || j.partition
                    .split(',')
                    .any(|p| s.partitions.iter().any(|q| q == p))
        })
        .map(|j| j.job_id)
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// A filtered cancel cancels exactly the jobs its filters match,
    /// leaves every other job as it was, and ends in the state the
    /// per-job cancels of the jobs picked from a listing reach.
    #[test]
    fn a_filtered_cancel_cancels_exactly_the_matching_jobs(
        jobs in proptest::collection::vec((0u8..2, 0u8..3, proptest::bool::ANY, 0u8..2), 1..40),
        user_filter in proptest::option::of(0u8..2),
        names in proptest::collection::vec(0u8..3, 0..3),
        states in proptest::collection::vec(0u8..2, 0..2),
        parts in proptest::collection::vec(0u8..2, 0..2),
    ) {
        const USERS: [&str; 2] = ["alice", "bob"];
        const NAMES: [&str; 3] = ["a", "b", "c"];
        const PARTS: [&str; 2] = ["debug", "gpu"];
        let mut e = engine();
        for (who, name, hold, part) in jobs {
            let who = if who == 0 { user() } else { other() };
            submit_as(&mut e, &who, NAMES[name as usize], hold, PARTS[part as usize]);
            e.schedule(0);
        }
        e.take_commands();
        let select = JobSelect {
            user: user_filter.map(|u| USERS[u as usize].to_string()),
            names: names.iter().map(|n| NAMES[*n as usize].to_string()).collect(),
            states: states
                .iter()
                .map(|s| [JobState::Pending, JobState::Running][*s as usize])
                .collect(),
            partitions: parts.iter().map(|p| PARTS[*p as usize].to_string()).collect(),
            ..JobSelect::default()
        };
        let expected = oracle(&e, &select);
        let before = e.job_list(0).jobs;
        let mut one_by_one = e.clone();
        let outcomes = e.on_cancel_selected(&select, None, scope(), &admin(), 5);
        let ids: Vec<JobId> = outcomes.iter().map(|o| o.job_id).collect();
        proptest::prop_assert_eq!(&ids, &expected);
        proptest::prop_assert!(outcomes.iter().all(|o| o.error.is_none()));
        for j in &before {
            let now = state(&e, j.job_id);
            if expected.contains(&j.job_id) {
                proptest::prop_assert_eq!(now, JobState::Cancelled);
            } else {
                proptest::prop_assert_eq!(now, j.state);
            }
        }
        assert_invariants(&e);
        for id in &expected {
            one_by_one
                .on_cancel_tasks(*id, None, None, scope(), &admin(), 5)
                .unwrap();
        }
        proptest::prop_assert_eq!(
            format!("{:?}", e.job_list(5).jobs),
            format!("{:?}", one_by_one.job_list(5).jobs)
        );
    }
}
