//! Submission tokens (`tokens`): a submission sent again with its token
//! gets the job the first one made, also after a snapshot or a replay.

use super::tests::{assert_invariants, desc, engine, other, user};
use super::*;
use proto::{SlurmError, SubmitToken};

fn with_token(token: u128) -> JobDesc {
    JobDesc {
        submit_token: Some(SubmitToken(token).text()),
        hold: true,
        ..desc()
    }
}

fn n_jobs(e: &Engine) -> usize {
    e.jobs.len()
}

#[test]
fn issue_34_a_submission_sent_again_with_its_token_gets_the_same_job() {
    let mut e = engine();
    let first = e.on_submit(with_token(7), &user(), 10).expect("accepted");
    let again = e.on_submit(with_token(7), &user(), 11).expect("accepted");
    assert_eq!(again, first, "the same answer, job id and partition");
    assert_eq!(first.partition, "debug");
    assert_eq!(n_jobs(&e), 1);
    assert_invariants(&e);
    // Another token is another submission.
    let other_job = e.on_submit(with_token(8), &user(), 12).expect("accepted");
    assert_ne!(other_job.job_id, first.job_id);
    assert_eq!(n_jobs(&e), 2);
    // No token: every submission makes a job, as before.
    e.on_submit(desc(), &user(), 13).expect("accepted");
    e.on_submit(desc(), &user(), 13).expect("accepted");
    assert_eq!(n_jobs(&e), 4);
    // The token is not kept in the job's description (identical
    // descriptions are pooled).
    assert_eq!(e.jobs[&first.job_id].desc.submit_token, None);
    assert_invariants(&e);
}

#[test]
fn issue_34_an_array_sent_again_is_one_array() {
    let mut e = engine();
    let mut d = with_token(1);
    d.array = Some("0-9".into());
    let first = e.on_submit(d.clone(), &user(), 10).expect("accepted");
    let again = e.on_submit(d, &user(), 10).expect("accepted");
    assert_eq!(again.job_id, first.job_id);
    assert_eq!(n_jobs(&e), 1);
}

#[test]
fn issue_34_a_token_is_its_submitters_alone_and_must_be_hex() {
    let mut e = engine();
    e.on_submit(with_token(5), &user(), 10).expect("accepted");
    assert_eq!(
        e.on_submit(with_token(5), &other(), 10),
        Err(SlurmError::AccessDenied)
    );
    let mut bad = desc();
    bad.submit_token = Some("not a token".into());
    assert_eq!(
        e.on_submit(bad, &user(), 10),
        Err(SlurmError::InvalidRequest)
    );
    assert_eq!(n_jobs(&e), 1);
}

#[test]
fn issue_34_a_test_only_submission_remembers_no_token() {
    let mut e = engine();
    let mut probe = with_token(3);
    probe.test_only = true;
    e.on_submit(probe, &user(), 10).expect("estimated");
    assert_eq!(n_jobs(&e), 0);
    e.on_submit(with_token(3), &user(), 10).expect("accepted");
    assert_eq!(n_jobs(&e), 1);
}

#[test]
fn issue_34_a_refused_submission_remembers_no_token() {
    let mut e = engine();
    let mut d = with_token(4);
    d.partitions = vec!["nope".into()];
    assert_eq!(
        e.on_submit(d, &user(), 10),
        Err(SlurmError::InvalidPartitionName)
    );
    let ok = e.on_submit(with_token(4), &user(), 11).expect("accepted");
    assert_eq!(n_jobs(&e), 1);
    assert_eq!(e.on_submit(with_token(4), &user(), 12), Ok(ok));
}

#[test]
fn issue_34_tokens_survive_a_snapshot_and_a_replay() {
    let mut e = engine();
    let first = e.on_submit(with_token(9), &user(), 10).expect("accepted");
    e.schedule(10);
    let saved = e.persistent_state();
    assert_eq!(saved.submit_tokens.len(), 1);
    assert_eq!(saved.submit_tokens[0].token, SubmitToken(9).text());

    // Restored from the snapshot.
    let mut r = Engine::restore(&super::tests::test_config(), saved, 20).expect("restores");
    assert_invariants(&r);
    let again = r.on_submit(with_token(9), &user(), 21).expect("accepted");
    assert_eq!(again, first);
    assert_eq!(n_jobs(&r), 1);

    // Replayed from the journal: the same requests through the same entry
    // point remember the token again.
    let mut replayed = engine();
    replayed
        .on_submit(with_token(9), &user(), 10)
        .expect("accepted");
    let again = replayed
        .on_submit(with_token(9), &user(), 21)
        .expect("accepted");
    assert_eq!(again, first);
    assert_eq!(n_jobs(&replayed), 1);
}

#[test]
fn issue_34_tokens_are_forgotten_after_an_hour() {
    let mut e = engine();
    let first = e.on_submit(with_token(2), &user(), 10).expect("accepted");
    let within = e
        .on_submit(with_token(2), &user(), 10 + TOKEN_WINDOW - 1)
        .expect("accepted");
    assert_eq!(within.job_id, first.job_id);
    let after = e
        .on_submit(with_token(2), &user(), 10 + TOKEN_WINDOW)
        .expect("accepted");
    assert_ne!(after.job_id, first.job_id);
    assert_eq!(e.submit_tokens.len(), 1);
    assert_invariants(&e);
}

#[test]
fn issue_34_at_most_max_tokens_are_remembered_the_oldest_forgotten_first() {
    let mut t = tokens::SubmitTokens::default();
    for i in 0..=MAX_TOKENS as u128 {
        t.remember(SubmitToken(i), JobId(i as u32 + 1), 1000, 10, "debug");
    }
    assert_eq!(t.len(), MAX_TOKENS);
    assert!(t.consistent());
    assert!(t.get(SubmitToken(0)).is_none());
    assert_eq!(t.get(SubmitToken(1)).map(|s| s.job_id), Some(JobId(2)));
    let restored = tokens::SubmitTokens::restored(t.saved());
    assert_eq!(restored.len(), MAX_TOKENS);
    assert_eq!(
        restored
            .get(SubmitToken(MAX_TOKENS as u128))
            .map(|s| s.job_id),
        Some(JobId(MAX_TOKENS as u32 + 1))
    );
}
