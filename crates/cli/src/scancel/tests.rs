use super::*;
use proto::JobInfo;
use proto::SignalScope;

fn parse(args: &[&str]) -> Result<ScancelArgs, String> {
    let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    parse_args(&v)
}

fn job(
    id: u32,
    user: &str,
    name: &str,
    partition: &str,
    state: JobState,
    nodes: &[&str],
) -> JobInfo {
    JobInfo {
        job_id: JobId(id),
        user: user.into(),
        uid: if user == "root" { 0 } else { 2001 },
        name: name.into(),
        partition: partition.into(),
        account: "research".into(),
        qos: "normal".into(),
        state,
        nodes: nodes.iter().map(|s| s.to_string()).collect(),
        ..JobInfo::default()
    }
}

fn list() -> JobList {
    JobList {
        now: 0,
        jobs: vec![
            job(1, "sauser", "a", "debug", JobState::Running, &["node1"]),
            job(2, "sauser", "b", "gpu", JobState::Pending, &[]),
            job(3, "root", "a", "debug", JobState::Pending, &[]),
            job(4, "sauser", "a", "debug", JobState::Completed, &["node2"]),
            job(
                5,
                "sauser",
                "a",
                "debug",
                JobState::Running,
                &["node2", "node3"],
            ),
        ],
    }
}

fn ids(v: Vec<JobId>) -> Vec<u32> {
    v.into_iter().map(|j| j.0).collect()
}

#[test]
fn ids_and_options_in_any_order() {
    let a = parse(&["123", "--signal", "SIGUSR2", "456", "-b"]).unwrap();
    assert_eq!(
        a.jobs,
        vec![JobSpec::Job(JobId(123)), JobSpec::Job(JobId(456))]
    );
    assert_eq!(a.signal, Some(12));
    assert!(a.batch);
    let a = parse(&["123_4", "77_[1-3]", "9.0", "--clusters=all"]).unwrap();
    assert_eq!(
        a.jobs,
        vec![
            JobSpec::Tasks("123_4".into()),
            JobSpec::Tasks("77_[1-3]".into()),
            JobSpec::Unsupported("9.0".into()),
        ]
    );
    assert_eq!(
        parse(&["abc"]).unwrap_err(),
        "scancel: error: Invalid job id abc\n"
    );
}

#[test]
fn signals_by_name_or_number() {
    for (text, n) in [
        ("KILL", 9),
        ("SIGUSR1", 10),
        ("usr2", 12),
        ("9", 9),
        ("TERM", 15),
    ] {
        assert_eq!(parse_signal(text), Some(n), "{text}");
    }
    assert_eq!(parse_signal("BOGUS"), None);
    assert_eq!(
        parse(&["-s", "BOGUS", "1"]).unwrap_err(),
        "scancel: error: Invalid job signal: BOGUS\n"
    );
    // -s KILL is an ordinary cancel unless -b/-f ask for a signal.
    assert_eq!(parse(&["-s", "KILL", "1"]).unwrap().request_signal(), None);
    assert_eq!(
        parse(&["-s", "KILL", "-b", "1"]).unwrap().request_signal(),
        Some(9)
    );
    assert_eq!(
        parse(&["-s", "USR1", "1"]).unwrap().request_signal(),
        Some(10)
    );
}

#[test]
fn states_are_limited_to_active_ones() {
    assert_eq!(
        parse(&["-t", "PD,r"]).unwrap().states,
        vec![JobState::Pending, JobState::Running]
    );
    assert!(parse(&["-t", "COMPLETED"]).is_err());
}

#[test]
fn bad_option_is_getopts_text() {
    assert_eq!(
        parse(&["--bogus"]).unwrap_err(),
        "scancel: unrecognized option '--bogus'\nTry \"scancel --help\" for more information\n"
    );
}

#[test]
fn select_filters_and_together() {
    let l = list();
    let a = parse(&["-u", "sauser"]).unwrap();
    assert_eq!(ids(select(&a, &l, "sauser")), vec![1, 2, 5]);
    let a = parse(&["--me", "-n", "a"]).unwrap();
    assert_eq!(ids(select(&a, &l, "sauser")), vec![1, 5]);
    let a = parse(&["-p", "debug", "-t", "PENDING"]).unwrap();
    assert_eq!(ids(select(&a, &l, "sauser")), vec![3]);
    let a = parse(&["-w", "node[2-3]"]).unwrap();
    assert_eq!(ids(select(&a, &l, "sauser")), vec![5]);
    let a = parse(&["-u", "0"]).unwrap();
    assert_eq!(ids(select(&a, &l, "sauser")), vec![3]);
}

#[test]
fn select_with_ids_restricts_to_them() {
    let l = list();
    let a = parse(&["--me", "2", "3", "4"]).unwrap();
    // 3 is root's, 4 has finished.
    assert_eq!(ids(select(&a, &l, "sauser")), vec![2]);
}

#[test]
fn unknown_job_is_quiet_and_not_an_error() {
    // err_scancel_nonexistent: `scancel 999999` prints nothing, exit 0.
    let err = client::ClientError::Refused(SlurmError::InvalidJobId);
    let a = parse(&["999999"]).unwrap();
    assert_eq!(
        outcome(&a, "999999", Some(&err)),
        Outcome {
            messages: vec![],
            status: 0
        }
    );
    // err_scancel_nonexistent_v: with -v, two lines, still exit 0.
    let a = parse(&["-v", "999999"]).unwrap();
    let out = outcome(&a, "999999", Some(&err));
    assert_eq!(out.status, 0);
    let golden = include_str!("../../tests/golden/scancel_err_nonexistent_v.txt");
    assert_eq!(out.messages.join("\n") + "\n", golden);
}

#[test]
fn permission_denied_exits_210() {
    // err_scancel_other_users_job: `scancel 66798` on root's job, exit 210.
    let err = client::ClientError::Refused(SlurmError::AccessDenied);
    let a = parse(&["66798"]).unwrap();
    let out = outcome(&a, "66798", Some(&err));
    assert_eq!(out.status, 210);
    let golden = include_str!("../../tests/golden/scancel_err_other_users_job.txt");
    assert_eq!(out.messages.join("\n") + "\n", golden);
}

#[test]
fn success_prints_only_with_verbose() {
    let a = parse(&["5"]).unwrap();
    assert_eq!(outcome(&a, "5", None).messages, Vec::<String>::new());
    let a = parse(&["-v", "-s", "USR1", "5"]).unwrap();
    assert_eq!(
        outcome(&a, "5", None).messages,
        vec!["scancel: Signal 10 to job 5"]
    );
}

#[test]
fn filters_without_ids_count_as_identification() {
    assert!(!parse(&[]).unwrap().has_filters());
    assert!(parse(&["--me"]).unwrap().has_filters());
    assert!(!parse(&["-s", "USR1"]).unwrap().has_filters());
}

/// What one request asks for: the job, the step, the signal, and who
/// gets it (None for a step, which `-b`/`-f` do not apply to).
fn asked(args: &[&str], target: &str) -> (u32, Option<u32>, Option<i32>, Option<SignalScope>) {
    match request(&parse(args).unwrap(), target) {
        Some(CtldRequest::Cancel {
            job_id,
            signal,
            batch_only,
            full,
            ..
        }) => (
            job_id.0,
            None,
            signal,
            Some(SignalScope::of_flags(batch_only, full)),
        ),
        Some(CtldRequest::CancelStep {
            job_id,
            step_id,
            signal,
        }) => (job_id.0, Some(step_id), signal, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn batch_and_full_say_who_gets_the_signal() {
    use SignalScope::{Batch, Full, Steps};
    for (args, want) in [
        // No signal: a cancel (every process; the scope is not used).
        (&["7"][..], (7, None, None, Some(Steps))),
        // --signal alone: the steps, not the batch shell.
        (&["-s", "TERM", "7"], (7, None, Some(15), Some(Steps))),
        (&["--signal=USR2", "7"], (7, None, Some(12), Some(Steps))),
        // -b: the batch shell alone; -f: shell, children and steps.
        (&["-b", "-s", "USR1", "7"], (7, None, Some(10), Some(Batch))),
        (
            &["--batch", "-s", "USR1", "7"],
            (7, None, Some(10), Some(Batch)),
        ),
        (&["-f", "-s", "USR1", "7"], (7, None, Some(10), Some(Full))),
        (
            &["--full", "-s", "USR1", "7"],
            (7, None, Some(10), Some(Full)),
        ),
        (
            &["-b", "-f", "-s", "USR1", "7"],
            (7, None, Some(10), Some(Full)),
        ),
        // -s KILL is a cancel unless -b or -f name the processes.
        (&["-b", "-s", "KILL", "7"], (7, None, Some(9), Some(Batch))),
        (&["-f", "-s", "KILL", "7"], (7, None, Some(9), Some(Full))),
        (&["-s", "KILL", "7"], (7, None, None, Some(Steps))),
        // -i only asks first; the request is the same.
        (&["-i", "-s", "USR1", "7"], (7, None, Some(10), Some(Steps))),
        (
            &["-i", "-b", "-s", "USR1", "7"],
            (7, None, Some(10), Some(Batch)),
        ),
    ] {
        assert_eq!(asked(args, "7"), want, "{args:?}");
    }
    // A step: that step alone, -b and -f or not.
    for args in [
        &["-s", "USR1", "7.0"][..],
        &["-b", "-s", "USR1", "7.0"],
        &["-f", "-s", "USR1", "7.0"],
    ] {
        assert_eq!(asked(args, "7.0"), (7, Some(0), Some(10), None), "{args:?}");
    }
    assert_eq!(asked(&["7.3"], "7.3"), (7, Some(3), None, None));
    // Array tasks carry their task list, with the same scopes.
    let args = parse(&["-b", "-s", "USR1", "7_[1-2]"]).unwrap();
    match request(&args, "7_[1-2]") {
        Some(CtldRequest::Cancel {
            job_id,
            signal: Some(10),
            batch_only: true,
            full: false,
            tasks: Some(t),
        }) => {
            assert_eq!(job_id, JobId(7));
            assert_eq!(t, model::array::TaskSet::parse("1-2").unwrap());
        }
        other => panic!("{other:?}"),
    }
    assert!(request(&args, "7.batch").is_none());
}
