//! Unit tests: command-line parsing of `scontrol` (no controller needed).

use super::*;

fn words(s: &str) -> Vec<String> {
    split_line(s)
}

#[test]
fn drain_without_reason_is_denied() {
    let err = parse_update(&words("nodename=node4 state=drain"), 0).unwrap_err();
    assert_eq!(
        err,
        "You must specify a reason when DOWNING or DRAINING a node. Request denied\n"
    );
}

#[test]
fn node_update_keys_are_case_insensitive() {
    let req = parse_update(
        &words("NodeName=node[3-4] STATE=Drain reason=\"anchor maintenance test\""),
        0,
    )
    .unwrap();
    assert_eq!(
        req,
        UpdateRequest::Node {
            nodes: vec!["node3".into(), "node4".into()],
            state: Some(NodeStateRequest::Drain),
            reason: Some("anchor maintenance test".into()),
        }
    );
}

#[test]
fn job_update_maps_fields() {
    let req = parse_update(
        &words("jobid=5 timelimit=10 numnodes=2-4 partition=gpu,debug minmemorycpu=1G starttime=now+1hour"),
        1000,
    )
    .unwrap();
    let UpdateRequest::Job {
        job_ids, update, ..
    } = req
    else {
        panic!("not a job update");
    };
    assert_eq!(job_ids, vec![(JobId(5), None)]);
    assert_eq!(update.time_limit, Some(TimeLimit::Minutes(10)));
    assert_eq!((update.min_nodes, update.max_nodes), (Some(2), Some(4)));
    assert_eq!(
        update.partitions,
        Some(vec!["gpu".to_string(), "debug".to_string()])
    );
    assert_eq!(update.mem_per_cpu, Some(1024));
    assert_eq!(update.begin_time, Some(4600));
}

#[test]
fn issue_35_relative_time_limits_and_empty_updates() {
    // Real scontrol 22.05: `TimeLimit=+5` and `-5` change the job's limit
    // by that many minutes; `TimeLimit=+abc` is "scontrol: error: Invalid
    // TimeLimit value"; `TimeLimit=-100` on a 12-minute job is "scontrol:
    // error: TimeLimit decrement larger than current time limit (100 >
    // 12)"; `update jobid=9` alone is "No changes specified" (each exit 1).
    for (text, delta) in [("+5", 5), ("-5", -5), ("-1:00", -1)] {
        let req = parse_update(&words(&format!("jobid=9 TimeLimit={text}")), 0).unwrap();
        let UpdateRequest::Job {
            update, time_delta, ..
        } = req
        else {
            panic!("not a job update");
        };
        assert_eq!((update.time_limit, time_delta), (None, Some(delta)));
    }
    assert_eq!(
        parse_update(&words("jobid=9 TimeLimit=+abc"), 0).unwrap_err(),
        "scontrol: error: Invalid TimeLimit value\n"
    );
    assert_eq!(
        parse_update(&words("jobid=9 TimeLimit=abc"), 0).unwrap_err(),
        "scontrol: error: Invalid TimeLimit value\n"
    );
    assert_eq!(
        parse_update(&words("jobid=9"), 0).unwrap_err(),
        "No changes specified\n"
    );
    assert_eq!(
        relative_time_limit(TimeLimit::Minutes(12), 5),
        Ok(TimeLimit::Minutes(17))
    );
    assert_eq!(
        relative_time_limit(TimeLimit::Minutes(12), -12),
        Ok(TimeLimit::Minutes(0))
    );
    assert_eq!(
        relative_time_limit(TimeLimit::Minutes(12), -100).unwrap_err(),
        "scontrol: error: TimeLimit decrement larger than current time limit (100 > 12)\n"
    );
}

#[test]
fn unknown_update_key_is_refused() {
    let err = parse_update(&words("jobid=5 bogus=1"), 0).unwrap_err();
    assert_eq!(
        err,
        "Update of this parameter is not supported: bogus=1\nRequest aborted\n"
    );
}

#[test]
fn commands_accept_abbreviations() {
    assert_eq!(match_word("sho", COMMANDS), Some("show"));
    assert_eq!(match_word("UPDATE", COMMANDS), Some("update"));
    assert_eq!(match_word("requeue", COMMANDS), Some("requeue"));
    assert_eq!(match_word("requeueh", COMMANDS), Some("requeuehold"));
    assert_eq!(match_word("su", COMMANDS), Some("suspend"));
    assert_eq!(match_word("res", COMMANDS), Some("resume"));
    assert_eq!(match_word("rel", COMMANDS), Some("release"));
    assert_eq!(match_word("hostn", SHOW_ENTITIES), Some("hostnames"));
    assert_eq!(
        match_word("hostlists", SHOW_ENTITIES),
        Some("hostlistsorted")
    );
    assert_eq!(match_word("part", SHOW_ENTITIES), Some("partition"));
}

#[test]
fn hostnames_and_hostlist_need_no_controller() {
    let mut s = Session {
        client: None,
        opts: ShowOpts::default(),
        quiet: false,
    };
    let out = run_command(&mut s, &words("show hostnames node[1-3]")).unwrap();
    assert_eq!(out, "node1\nnode2\nnode3\n");
    let out = run_command(&mut s, &words("show hostlist node3,node1,node2")).unwrap();
    assert_eq!(out, "node[1-3]\n");
    let err = run_command(&mut s, &words("bogus")).unwrap_err();
    assert_eq!(err.stderr, "invalid keyword: bogus\n");
}

#[test]
fn ping_line_names_role() {
    assert_eq!(
        ping_line(0, "ctl", true),
        "Slurmctld(primary) at ctl is UP\n"
    );
    assert_eq!(
        ping_line(1, "ctl2", false),
        "Slurmctld(backup) at ctl2 is DOWN\n"
    );
}

#[test]
fn issue_35_listpids_lines_are_slurms() {
    // Real `scontrol listpids 8` (22.05.8, a batch job running `sleep`):
    // PID      JOBID    STEPID   LOCALID GLOBALID
    // 2458     8        batch    0       0
    // 2460     8        batch    -       -
    let p = |pid, local: Option<u32>| proto::JobProcess {
        pid,
        job_id: JobId(8),
        step: "batch".into(),
        local_id: local,
        global_id: local,
    };
    assert_eq!(
        format!(
            "{LISTPIDS_HEADER}{}{}",
            listpids_line(&p(2458, Some(0))),
            listpids_line(&p(2460, None))
        ),
        "PID      JOBID    STEPID   LOCALID GLOBALID\n\
         2458     8        batch    0       0       \n\
         2460     8        batch    -       -       \n"
    );
}

#[test]
fn partition_options_are_parsed_with_slurms_abbreviations_and_messages() {
    let req = parse_update(
        &words("PartitionName=p State=drain MaxT=1:00:00 Default=YES Nodes=n[1-2] MaxNodes=UNLIMITED Priority=3 AllowAccounts=ALL DenyQos=low OverSubscribe=FORCE"),
        0,
    )
    .unwrap();
    let UpdateRequest::Partition(u) = req else {
        panic!("not a partition update: {req:?}")
    };
    assert_eq!(u.name, "p");
    assert_eq!(u.state.as_deref(), Some("DRAIN"));
    assert_eq!(u.max_time, Some(TimeLimit::Minutes(60)));
    assert_eq!(u.default, Some(true));
    assert_eq!(u.nodes, Some(vec!["n1".into(), "n2".into()]));
    assert_eq!(u.max_nodes, Some(None));
    assert_eq!((u.priority_tier, u.priority_job_factor), (Some(3), Some(3)));
    assert_eq!(u.allow_accounts, Some(None));
    assert_eq!(u.oversubscribe.as_deref(), Some("FORCE:4"));
    assert_eq!(u.other, vec![("DenyQos".to_string(), "low".to_string())]);
    let err = |line: &str| parse_partition_options(&words(line)).unwrap_err();
    assert_eq!(
        err("PartitionName=p State=bogus"),
        "Invalid input: State=bogus\nAcceptable State values are UP, DOWN, DRAIN and INACTIVE\n"
    );
    assert_eq!(
        err("PartitionName=p MaxTime=soon"),
        "Invalid input MaxTime=soon\n"
    );
    assert_eq!(
        err("PartitionName=p Default=maybe"),
        "Invalid input: Default=maybe\nAcceptable Default values are YES and NO\n"
    );
    assert_eq!(
        err("PartitionName=p ExclusiveUser=YES"),
        "Update of this parameter is not supported: ExclusiveUser=YES\nRequest aborted\n"
    );
    assert_eq!(
        err("PartitionName=p Hidden=YES"),
        "Update of this parameter is not supported: Hidden=YES\nRequest aborted\n"
    );
    assert_eq!(err("PartitionName=p"), "No changes specified\n");
    assert_eq!(
        err("PartitionName=p bogus"),
        "Invalid input: bogus  Request aborted\n"
    );
}

/// Issue 39: `scontrol show job` of a job whose PrologSlurmctld runs:
/// `JobState=CONFIGURING` (Slurm's CONFIGURING flag over RUNNING).
#[test]
fn issue_39_show_job_says_configuring() {
    let job = JobInfo {
        job_id: model::JobId(5),
        state: model::JobState::Running,
        configuring: true,
        ..JobInfo::default()
    };
    let lines = job_lines(&job, false);
    let state_line = lines
        .iter()
        .find(|l| l.trim_start().starts_with("JobState="))
        .expect("a JobState line");
    assert!(
        state_line
            .trim_start()
            .starts_with("JobState=CONFIGURING Reason=None"),
        "{state_line}"
    );
}
