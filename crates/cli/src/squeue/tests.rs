use super::format::{parse_long, parse_percent, parse_sort, FieldKind, SortKey};
use super::*;

fn parse(args: &[&str]) -> Result<SqueueArgs, String> {
    let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    parse_args(&v)
}

#[test]
fn no_options_is_the_default() {
    assert_eq!(parse(&[]).unwrap(), SqueueArgs::default());
}

#[test]
fn lists_accumulate_and_split_on_commas() {
    let a = parse(&[
        "-j", "1,2", "--jobs=3", "-u", "a,b", "-p", "debug", "-n", "x",
    ])
    .unwrap();
    assert_eq!(a.jobs, Some(vec![1, 2, 3]));
    assert_eq!(a.users, vec!["a", "b"]);
    assert_eq!(a.partitions, vec!["debug"]);
    assert_eq!(a.names, vec!["x"]);
    let a = parse(&["-j66794"]).unwrap();
    assert_eq!(a.jobs, Some(vec![66794]));
    let a = parse(&["-j"]).unwrap();
    assert_eq!(a.jobs, None);
}

#[test]
fn states_short_long_and_all() {
    let a = parse(&["-t", "pd,RUNNING"]).unwrap();
    assert_eq!(
        a.states,
        Some(vec![
            StateFilter::State(JobState::Pending),
            StateFilter::State(JobState::Running)
        ])
    );
    let a = parse(&["--states=all"]).unwrap();
    assert_eq!(a.states.unwrap().len(), ALL_JOB_STATES.len() + 1);
    assert!(parse(&["-t", "bogus"])
        .unwrap_err()
        .starts_with("squeue: error: Invalid job state specified: bogus\n"));
}

#[test]
fn bad_option_is_getopts_text() {
    assert_eq!(
        parse(&["--bogus"]).unwrap_err(),
        "squeue: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n"
    );
    assert_eq!(
        parse(&["-Z"]).unwrap_err(),
        "squeue: invalid option -- 'Z'\nTry \"squeue --help\" for more information\n"
    );
}

#[test]
fn accepted_flags() {
    let a = parse(&[
        "-a",
        "-r",
        "--noconvert",
        "-v",
        "-M",
        "all",
        "--me",
        "-h",
        "-l",
        "--start",
        "-S",
        "-t,i",
        "--help",
        "--usage",
    ])
    .unwrap();
    assert!(a.me && a.noheader && a.long && a.start && a.help && a.usage && a.noconvert);
    assert_eq!(a.verbose, 1);
    assert_eq!(a.sort.as_deref(), Some("-t,i"));
}

#[test]
fn format_options() {
    assert_eq!(
        parse(&["-o", "%i"]).unwrap().format,
        FormatChoice::Percent("%i".into())
    );
    assert_eq!(
        parse(&["--Format=JobID"]).unwrap().format,
        FormatChoice::Long("JobID".into())
    );
}

#[test]
fn percent_format_widths_and_literals() {
    let (f, errors) = parse_percent("id=%.18i|%9P%-4j%ujunk");
    assert!(errors.is_empty());
    assert_eq!(f.prefix, "id=");
    let shape: Vec<(FieldKind, usize, bool, &str)> = f
        .fields
        .iter()
        .map(|x| (x.kind, x.width, x.right, x.suffix.as_str()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (FieldKind::JobId, 18, true, "|"),
            (FieldKind::Partition, 9, false, ""),
            (FieldKind::Name, 4, false, ""),
            (FieldKind::UserName, 0, false, "junk"),
        ]
    );
    let (_, errors) = parse_percent("%i %!");
    assert_eq!(errors, vec!["Invalid job format specification: !"]);
}

#[test]
fn long_format_defaults_to_twenty_columns() {
    let f = parse_long("jobid,state:.5,name:,reason:10|").unwrap();
    let shape: Vec<(FieldKind, usize, bool, &str)> = f
        .fields
        .iter()
        .map(|x| (x.kind, x.width, x.right, x.suffix.as_str()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (FieldKind::JobIdRaw, 20, false, ""),
            (FieldKind::State, 5, true, ""),
            (FieldKind::Name, 0, false, ""),
            (FieldKind::Reason, 10, false, "|"),
        ]
    );
    assert!(parse_long("NoSuchField").is_err());
}

#[test]
fn sort_keys() {
    assert_eq!(
        parse_sort("P,t,-p").unwrap(),
        vec![
            SortKey {
                key: 'P',
                descending: false
            },
            SortKey {
                key: 't',
                descending: false
            },
            SortKey {
                key: 'p',
                descending: true
            },
        ]
    );
    assert_eq!(
        parse_sort("+i").unwrap(),
        vec![SortKey {
            key: 'i',
            descending: false
        }]
    );
    assert_eq!(parse_sort("i,a"), Err('a'));
}

#[test]
fn truncation_and_justification() {
    let job = JobInfo {
        job_id: model::JobId(7),
        name: "averylongname".into(),
        user: "u".into(),
        partition: "p".into(),
        state: JobState::Running,
        nodes: vec!["n1".into(), "n2".into(), "n3".into()],
        run_time: 400 * 86_400,
        ..JobInfo::default()
    };
    let list = JobList {
        now: 0,
        jobs: vec![job],
    };
    let a = parse(&["-h", "-o", "%.8j|%8j|%j|%.3R|%.4M|%2N"]).unwrap();
    assert_eq!(
        render(&a, &list, "u").unwrap(),
        "averylon|averylon|averylongname|n[1-3]|INVALID|n[\n"
    );
}

#[test]
fn the_controller_leaves_out_text_fields_squeue_will_not_read() {
    use proto::JobField as F;
    let omit = |a: &[&str]| job_filter(&parse(a).unwrap(), "me").omit;
    // Default format %.18i %.9P %.8j %.8u %.2t %.10M %.6D %R, sort P,t,-p.
    assert_eq!(
        omit(&[]),
        vec![F::Group, F::Account, F::Qos, F::SchedNodes, F::Scheduler]
    );
    // Filters and sort keys read fields the format does not print.
    let o = omit(&["-o", "%i", "-A", "acct", "-q", "high", "-S", "g"]);
    assert!(!o.contains(&F::Account) && !o.contains(&F::Qos) && !o.contains(&F::Group));
    assert!(o.contains(&F::Name) && o.contains(&F::Nodes) && o.contains(&F::Partition));
    let o = omit(&["-o", "%i", "-w", "n1", "-n", "x", "--me"]);
    assert!(!o.contains(&F::Nodes) && !o.contains(&F::Name) && !o.contains(&F::User));
    // --start prints the planned nodes; details and JSON want everything.
    assert!(!omit(&["--start"]).contains(&F::SchedNodes));
    assert!(omit(&["-o", "%Z"]).is_empty());
    assert!(omit(&["--json"]).is_empty());
}

/// Jobs whose columns repeat in runs and change, in every way the memo of
/// repeated columns keys them.
fn memo_jobs() -> JobList {
    let mut jobs = Vec::new();
    for i in 0..400u32 {
        let run = i / 7;
        let pending = run % 3 != 1;
        jobs.push(JobInfo {
            job_id: model::JobId(1000 + i),
            name: ["wrap", "a-very-long-job-name", "x"][(run % 3) as usize].into(),
            user: ["root", "alice", "bob-the-builder"][(i / 11 % 3) as usize].into(),
            group: ["root", "users"][(i / 13 % 2) as usize].into(),
            account: ["", "physics"][(i / 17 % 2) as usize].into(),
            qos: ["normal", "high"][(i / 5 % 2) as usize].into(),
            partition: ["debug", "gpu,debug", "batch"][(i / 9 % 3) as usize].into(),
            state: if pending {
                JobState::Pending
            } else {
                JobState::Running
            },
            completing: i % 29 == 0,
            reason: [
                model::PendingReason::JobHeldUser,
                model::PendingReason::Priority,
                model::PendingReason::Resources,
            ][(i / 4 % 3) as usize],
            priority: 1000 - i / 6,
            nice: (i % 3) as i32 - 1,
            submit_time: 1_700_000_000 + i64::from(i / 10),
            eligible_time: 1_700_000_000 + i64::from(i / 12),
            start_time: (!pending).then(|| 1_700_000_100 + i64::from(i / 3)),
            end_time: (!pending).then_some(1_700_100_000),
            run_time: if pending { 0 } else { u64::from(i / 8 * 61) },
            time_limit: if i % 23 == 0 {
                model::TimeLimit::Unlimited
            } else {
                model::TimeLimit::Minutes(i / 30 + 1)
            },
            nodes: if pending {
                Vec::new()
            } else {
                vec![format!("node{}", i / 5 % 4 + 1)]
            },
            num_nodes: 1 + i / 50,
            num_cpus: 1 + i / 40,
            num_tasks: 1 + i / 40,
            cpus_per_task: 1 + i / 100,
            uid: i / 11 % 3,
            gid: i / 13 % 2,
            mem_per_cpu: (i % 2 == 0).then_some(u64::from(i / 20 * 100)),
            ..JobInfo::default()
        });
    }
    JobList {
        now: 1_700_200_000,
        jobs,
    }
}

#[test]
fn repeated_columns_print_as_each_line_alone_does() {
    let list = memo_jobs();
    let formats = [
        vec![],
        vec!["-l"],
        vec!["--start"],
        vec!["-S", "i", "-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"],
        vec![
            "-S",
            "i",
            "-o",
            "%i|%T|%r|%R|%l|%L|%M|%D|%C|%c|%p|%Q|%U|%G|%u|%g|%a|%q|%P|%j|%V|%S|%e|%l|%m|%y|%A|%z|%n",
        ],
        vec!["-S", "i", "-O", "JobID:10,Name:5,State:4,Reason,SubmitTime:12,UserName:3,Partition:30"],
        // Every column with a memo key, so whole lines repeat; and a
        // column without one between columns with.
        vec!["-S", "i", "-o", "%P %.5j %u %T %.4M"],
        vec!["-S", "-i", "-o", "%P|%i|%.3j %T|%R"],
    ];
    for f in formats {
        let args = parse(&f).unwrap();
        let format = resolve_format(&args).unwrap();
        let jobs = selected(&args, &list, "root").unwrap();
        let mut want = String::new();
        if args.long {
            want.push_str(&fmt_banner(list.now));
            want.push('\n');
        }
        want.push_str(&format::header_line(&format));
        for j in &jobs {
            // Each line with nothing kept from the line before.
            format::push_job_line(&mut want, &format, j, list.now, false);
        }
        let filter = job_filter(&args, "root");
        let rows = JobRows::from_list(&list, &filter);
        assert_eq!(render(&args, &list, "root").unwrap(), want, "{f:?}");
        if filter.rows {
            assert_eq!(
                render_rows(&args, &rows, "root").unwrap(),
                want,
                "{f:?} rows"
            );
        }
    }
}

/// Issue 39: a running job whose PrologSlurmctld has not ended is shown
/// CONFIGURING (`%T`) / CF (`%t`), as Slurm shows its CONFIGURING flag;
/// `-t CF` selects it, and `-t R` too (its base state).
#[test]
fn issue_39_a_configuring_job_shows_cf() {
    let job = |id: u32, configuring: bool| JobInfo {
        job_id: model::JobId(id),
        name: "j".into(),
        user: "u".into(),
        partition: "p".into(),
        state: JobState::Running,
        configuring,
        nodes: vec!["n1".into()],
        ..JobInfo::default()
    };
    let list = JobList {
        now: 0,
        jobs: vec![job(1, true), job(2, false)],
    };
    let a = parse(&["-h", "-o", "%i %t %T"]).unwrap();
    assert_eq!(
        render(&a, &list, "u").unwrap(),
        "1 CF CONFIGURING\n2 R RUNNING\n"
    );
    let a = parse(&["-h", "-t", "CF", "-o", "%i"]).unwrap();
    assert_eq!(render(&a, &list, "u").unwrap(), "1\n");
    let a = parse(&["-h", "-t", "R", "-o", "%i"]).unwrap();
    assert_eq!(render(&a, &list, "u").unwrap(), "1\n2\n");
}
