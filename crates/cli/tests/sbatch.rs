//! sbatch's pure core: options, `#SBATCH` directives, `SBATCH_*` variables,
//! their precedence, and every message and exit code the Slurm 22.05
//! references pin (`tests/golden/sbatch_*`).

use cli::sbatch::{
    build, check_gres_types, needs_stdin, submitted_line, test_only_line, wait_exit_status, Built,
    SbatchError,
};
use model::{ExitCode, Gres, TimeLimit};
use proto::{Identity, JobDesc, SignalSpec, SlurmError, TestOnlyEstimate};

const CWD: &str = "/home/sauser/capture";

/// 2026-12-02T10:24:04Z.
const NOW: i64 = 1_796_207_044;

fn identity() -> Identity {
    Identity {
        uid: 2001,
        gid: 2001,
        user: "sauser".into(),
        host: "ctl".into(),
    }
}

fn golden(name: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn pairs(env: &[(&str, &str)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A fresh directory for script files, removed when dropped.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("muster-sbatch-test-")
        .tempdir()
        .unwrap()
}

/// A script written to a fresh directory (removed when dropped); derefs to
/// its path.
struct Script {
    _dir: tempfile::TempDir,
    path: String,
}

impl std::ops::Deref for Script {
    type Target = str;
    fn deref(&self) -> &str {
        &self.path
    }
}

/// Writes `text` as a script and returns it.
fn script(text: &str) -> Script {
    let dir = scratch();
    let path = dir.path().join("job.sh");
    std::fs::write(&path, text).unwrap();
    Script {
        path: path.to_string_lossy().into_owned(),
        _dir: dir,
    }
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Result<Built, SbatchError> {
    std::env::set_var("TZ", "UTC");
    build(&strings(args), &pairs(env), None, CWD, &identity(), NOW)
}

fn run(args: &[&str]) -> Result<Built, SbatchError> {
    run_env(args, &[])
}

fn desc(args: &[&str]) -> JobDesc {
    run(args).unwrap().desc
}

fn err(args: &[&str]) -> SbatchError {
    run(args).unwrap_err()
}

fn assert_golden(e: &SbatchError, name: &str, code: i32) {
    assert_eq!(e.stderr, golden(name), "stderr of {name}");
    assert_eq!(e.code, code, "exit code of {name}");
    assert_eq!(e.stdout, "");
}

// ---- outputs -------------------------------------------------------------

#[test]
fn submitted_lines_match_the_references() {
    let plain = run(&["--wrap=true"]).unwrap();
    assert_eq!(
        submitted_line(&plain, 66775, None),
        golden("sbatch_plain.out")
    );
    let parsable = run(&["--parsable", "--wrap=true"]).unwrap();
    assert!(parsable.parsable);
    assert_eq!(
        submitted_line(&parsable, 66776, None),
        golden("sbatch_parsable.out")
    );
    assert_eq!(submitted_line(&parsable, 7, Some("anchor")), "7;anchor\n");
    assert_eq!(
        submitted_line(&plain, 7, Some("anchor")),
        "Submitted batch job 7 on cluster anchor\n"
    );
}

#[test]
fn quiet_comes_from_the_command_line_only() {
    assert!(run(&["-Q", "--wrap=true"]).unwrap().quiet);
    assert!(
        !run(&[&script("#!/bin/sh\n#SBATCH -Q\ntrue\n")])
            .unwrap()
            .quiet
    );
}

#[test]
fn test_only_line_is_slurms() {
    std::env::set_var("TZ", "UTC");
    let built = run(&["--test-only", "--wrap=true"]).unwrap();
    assert!(built.test_only && built.desc.test_only);
    let est = TestOnlyEstimate {
        start_time: NOW,
        cpus: 1,
        nodes: "node1".into(),
        partition: "debug".into(),
    };
    assert_eq!(
        test_only_line(66801, &est),
        "sbatch: Job 66801 to start at 2026-12-02T10:24:04 using 1 processors on nodes node1 in partition debug\n"
    );
}

#[test]
fn wait_reports_the_job_exit_code() {
    assert!(run(&["-W", "--wrap=true"]).unwrap().wait);
    assert!(
        run_env(&["--wrap=true"], &[("SBATCH_WAIT", "1")])
            .unwrap()
            .wait
    );
    assert_eq!(wait_exit_status(ExitCode { code: 0, signal: 0 }), 0);
    assert_eq!(wait_exit_status(ExitCode { code: 3, signal: 0 }), 3);
    assert_eq!(wait_exit_status(ExitCode { code: 0, signal: 9 }), 1);
}

// ---- errors from the references --------------------------------------------

#[test]
fn invalid_time_exits_255() {
    assert_golden(
        &err(&["--time=abc", "--wrap=true"]),
        "sbatch_err_invalid_time.err",
        255,
    );
    assert_golden(
        &err(&["--time=1:2:3:4", "--wrap=true"]),
        "sbatch_err_invalid_time2.err",
        255,
    );
}

#[test]
fn invalid_gres_syntax_exits_1() {
    assert_golden(
        &err(&["--gres=gpu:x:y:z", "--wrap=true"]),
        "sbatch_err_invalid_gres_syntax.err",
        1,
    );
}

#[test]
fn unknown_gres_name_is_refused_against_gres_types() {
    let built = run(&["--gres=foo:1", "--wrap=true"]).unwrap();
    let types = vec!["gpu".to_string()];
    assert_golden(
        &check_gres_types(&built.desc, &types).unwrap_err(),
        "sbatch_err_invalid_gres.err",
        1,
    );
    let gpu = run(&["-p", "gpu", "--gres=gpu:1", "--wrap=true"]).unwrap();
    assert_eq!(check_gres_types(&gpu.desc, &types), Ok(()));
    let gpus = run(&["--gpus=2", "--wrap=true"]).unwrap();
    assert!(check_gres_types(&gpus.desc, &[]).is_err());
}

#[test]
fn controller_refusals_print_slurms_lines() {
    let d = desc(&["-p", "nosuchpart", "--wrap=true"]);
    assert_golden(
        &SbatchError::refused(SlurmError::InvalidPartitionName, &d),
        "sbatch_err_unknown_partition.err",
        1,
    );
    let d = desc(&["--mem=999999", "--wrap=true"]);
    assert_golden(
        &SbatchError::refused(SlurmError::MemoryNotSatisfiable, &d),
        "sbatch_err_too_much_mem.err",
        1,
    );
    assert_golden(
        &SbatchError::refused(SlurmError::InvalidAccount, &d),
        "sbatch_err_bad_account.err",
        1,
    );
    assert_golden(
        &SbatchError::refused(SlurmError::InvalidQos, &d),
        "sbatch_err_bad_qos.err",
        1,
    );
    assert_golden(
        &SbatchError::refused(SlurmError::InvalidLicenses, &d),
        "sbatch_err_invalid_licenses.err",
        1,
    );
    assert_golden(
        &SbatchError::refused(SlurmError::RequestedNodeConfigUnavailable, &d),
        "sbatch_err_invalid_gres_count.err",
        1,
    );
}

#[test]
fn missing_script_file() {
    assert_golden(
        &err(&["/nonexistent/script.sh"]),
        "sbatch_err_missing_file.err",
        1,
    );
}

#[test]
fn empty_stdin() {
    let e = build(&[], &[], Some(b""), CWD, &identity(), NOW).unwrap_err();
    assert_golden(&e, "sbatch_err_no_args.err", 1);
    assert!(needs_stdin(&[]));
    assert!(!needs_stdin(&strings(&["--wrap=true"])));
    assert!(!needs_stdin(&strings(&["x.sh"])));
    assert!(!needs_stdin(&strings(&["--bogus"])));
}

#[test]
fn script_without_shebang() {
    assert_golden(
        &err(&[&script("echo hi\n")]),
        "sbatch_err_no_shebang.err",
        1,
    );
}

#[test]
fn dos_line_breaks_are_refused() {
    let e = err(&[&script("#!/bin/sh\r\necho hi\r\n")]);
    assert_eq!(
        e.stderr,
        "sbatch: error: Batch script contains DOS line breaks (\\r\\n)\n\
         sbatch: error: instead of expected UNIX line breaks (\\n).\n"
    );
    assert_eq!(e.code, 1);
}

#[test]
fn slurm_exit_error_replaces_status_1() {
    let e = run_env(&["/nonexistent/script.sh"], &[("SLURM_EXIT_ERROR", "7")]).unwrap_err();
    assert_eq!(e.code, 7);
    let e = run_env(&["--time=abc", "--wrap=true"], &[("SLURM_EXIT_ERROR", "7")]).unwrap_err();
    assert_eq!(e.code, 255);
}

#[test]
fn getopt_errors() {
    let e = err(&["--bogus", "--wrap=true"]);
    assert_eq!(
        e.stderr,
        "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n"
    );
    assert_eq!(e.code, 1);
    assert_eq!(
        err(&["-t"]).stderr.lines().next(),
        Some("sbatch: option requires an argument -- 't'")
    );
}

#[test]
fn other_invalid_values() {
    let first = |args: &[&str]| {
        let e = err(args);
        (e.stderr, e.code)
    };
    let line = |s: &str, code| (format!("sbatch: error: {s}\n"), code);
    assert_eq!(
        first(&["-n", "x", "--wrap=true"]),
        line("Invalid numeric value \"x\" for --ntasks.", 1)
    );
    assert_eq!(
        first(&["-c", "0", "--wrap=true"]),
        line("Invalid numeric value \"0\" for --cpus-per-task.", 1)
    );
    assert_eq!(
        first(&["--mem=lots", "--wrap=true"]),
        line("Invalid --mem specification", 255)
    );
    assert_eq!(
        first(&["--begin=soon", "--wrap=true"]),
        line("Invalid --begin specification", 255)
    );
    assert_eq!(
        first(&["--signal=FOO", "--wrap=true"]),
        line("Invalid --signal specification", 255)
    );
    assert_eq!(
        first(&["--time-min=x", "--wrap=true"]),
        line("Invalid --time-min specification", 255)
    );
    assert_eq!(
        first(&["--switches=1@soon", "--wrap=true"]),
        line("Invalid --switches specification", 255)
    );
    assert_eq!(
        first(&["--open-mode=x", "--wrap=true"]),
        line("Invalid --open-mode specification", 255)
    );
    assert_eq!(
        first(&["--exclusive=x", "--wrap=true"]),
        line("Invalid --exclusive specification", 255)
    );
    assert_eq!(
        first(&["--hint=lots", "--wrap=true"]),
        line("Invalid --hint argument: lots", 255)
    );
    assert_eq!(
        first(&["-N", "0", "--wrap=true"]),
        line("\"0\" is not a valid node count", 255)
    );
    assert_eq!(
        first(&["-N", "4-2", "--wrap=true"]),
        line("\"4-2\" is not a valid node count", 255)
    );
    assert_eq!(
        first(&["-w", "n[1-", "--wrap=true"]),
        line("Invalid --nodelist specification", 255)
    );
    assert_eq!(
        first(&["--gpus=a100", "--wrap=true"]),
        line("Invalid generic resource (gres) specification", 1)
    );
    assert_eq!(
        first(&["--wrap=true", "arg"]),
        line("Script arguments not permitted with --wrap option", 1)
    );
    for bad in ["abc", "3-1", "0-3%0", "1,,2", "0-4:0"] {
        assert_eq!(
            first(&[&format!("--array={bad}"), "--wrap=true"]),
            line("Invalid --array specification", 1),
            "{bad}"
        );
    }
    assert_eq!(first(&["-d", "afterburstbuffer:5", "--wrap=true"]).1, 1);
    assert_eq!(
        first(&["--kill-on-invalid-dep=maybe", "--wrap=true"]),
        line("Invalid --kill-on-invalid-dep specification", 255)
    );
}

#[test]
fn array_dependency_and_deadline_reach_the_description() {
    let d = desc(&[
        "-a",
        "1,3,5-7%2",
        "-d",
        "afterok:5:6?afternotok:7",
        "--wrap=true",
    ]);
    assert_eq!(d.array.as_deref(), Some("1,3,5-7%2"));
    assert_eq!(d.dependency.as_deref(), Some("afterok:5:6?afternotok:7"));
    let d = desc(&[
        "--kill-on-invalid-dep=yes",
        "--deadline=now+1hour",
        "--wrap=true",
    ]);
    assert_eq!(d.kill_on_invalid_dep, Some(true));
    assert_eq!(d.deadline, Some(NOW + 3600));
    let path = script("#!/bin/sh\n#SBATCH --array=0-15:4\ntrue\n");
    assert_eq!(desc(&[&path]).array.as_deref(), Some("0-15:4"));
}

#[test]
fn help_usage_version_exit_0() {
    let v = err(&["-V"]);
    assert_eq!((v.stdout.as_str(), v.code), ("slurm 22.05.8\n", 0));
    let h = err(&["--help"]);
    assert!(h.stdout.starts_with("Usage: sbatch"));
    assert!(h.stdout.contains("--partition"));
    assert_eq!(h.code, 0);
    assert!(err(&["--usage"]).stdout.starts_with("Usage: sbatch"));
}

// ---- options ---------------------------------------------------------------

#[test]
fn identity_and_placement_options() {
    let d = desc(&[
        "-J",
        "train",
        "-p",
        "gpu,debug",
        "-A",
        "research",
        "-q",
        "high",
        "--comment",
        "hi",
        "-C",
        "a100&ib",
        "-d",
        "afterok:12:13",
        "--wckey=k",
        "--wrap=true",
    ]);
    assert_eq!(d.name, "train");
    assert_eq!(d.partitions, ["gpu", "debug"]);
    assert_eq!(d.account.as_deref(), Some("research"));
    assert_eq!(d.qos.as_deref(), Some("high"));
    assert_eq!(d.comment.as_deref(), Some("hi"));
    assert_eq!(d.constraint.as_deref(), Some("a100&ib"));
    assert_eq!(d.dependency.as_deref(), Some("afterok:12:13"));
}

#[test]
fn resource_options() {
    let d = desc(&[
        "-N",
        "2-4",
        "-n",
        "8",
        "--ntasks-per-node=4",
        "-c",
        "2",
        "--mem=4G",
        "--gres=gpu:a100:2,nic:1",
        "--gpus-per-node=a100:2",
        "--gpus-per-task=1",
        "--cpus-per-gpu=4",
        "-G",
        "4",
        "--wrap=true",
    ]);
    assert_eq!((d.min_nodes, d.max_nodes), (Some(2), Some(4)));
    assert_eq!(d.ntasks, Some(8));
    assert_eq!(d.ntasks_per_node, Some(4));
    assert_eq!(d.cpus_per_task, Some(2));
    assert_eq!(d.mem_per_node, Some(4096));
    assert_eq!(d.gres, Gres::parse_list("gpu:a100:2,nic:1").unwrap());
    let gpu = |type_: Option<&str>, count| Gres {
        name: "gpu".into(),
        type_: type_.map(str::to_string),
        count,
    };
    assert_eq!(d.gpus_per_node, Some(gpu(Some("a100"), 2)));
    assert_eq!(d.gpus_per_task, Some(gpu(None, 1)));
    assert_eq!(d.gpus, Some(gpu(None, 4)));
    assert_eq!(d.cpus_per_gpu, Some(4));
    assert_eq!(
        (
            desc(&["-N3", "--wrap=true"]).min_nodes,
            desc(&["-N3", "--wrap=true"]).max_nodes
        ),
        (Some(3), Some(3))
    );
}

#[test]
fn memory_forms_and_exclusivity() {
    assert_eq!(
        desc(&["--mem", "1000", "--wrap=true"]).mem_per_node,
        Some(1000)
    );
    assert_eq!(
        desc(&["--mem=512MB", "--wrap=true"]).mem_per_node,
        Some(512)
    );
    assert_eq!(desc(&["--mem=0", "--wrap=true"]).mem_per_node, Some(0));
    assert_eq!(
        desc(&["--mem-per-cpu=2g", "--wrap=true"]).mem_per_cpu,
        Some(2048)
    );
    assert_eq!(
        desc(&["--mem-per-gpu=1T", "--wrap=true"]).mem_per_gpu,
        Some(1024 * 1024)
    );
    let e = err(&["--mem=1G", "--mem-per-cpu=1G", "--wrap=true"]);
    assert_eq!(
        e.stderr,
        "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.\n"
    );
    // The command line's choice wins over the script's.
    let path = script("#!/bin/sh\n#SBATCH --mem-per-cpu=100\ntrue\n");
    let d = desc(&["--mem=2G", &path]);
    assert_eq!((d.mem_per_node, d.mem_per_cpu), (Some(2048), None));
}

#[test]
fn time_options() {
    assert_eq!(
        desc(&["-t", "5", "--wrap=true"]).time_limit,
        Some(TimeLimit::Minutes(5))
    );
    assert_eq!(
        desc(&["-t", "00:30:00", "--wrap=true"]).time_limit,
        Some(TimeLimit::Minutes(30))
    );
    assert_eq!(
        desc(&["--time=2-00:00:00", "--wrap=true"]).time_limit,
        Some(TimeLimit::Minutes(2880))
    );
    assert_eq!(
        desc(&["--time=UNLIMITED", "--wrap=true"]).time_limit,
        Some(TimeLimit::Unlimited)
    );
    assert_eq!(
        desc(&["--time=0", "--wrap=true"]).time_limit,
        Some(TimeLimit::Unlimited)
    );
    assert_eq!(
        desc(&["--time-min=10", "--wrap=true"]).time_min,
        Some(TimeLimit::Minutes(10))
    );
    assert_eq!(desc(&["--wrap=true"]).time_limit, None);
}

/// `--switches=N[@max-time]` and `--segment=N` (topology, issue 43).
#[test]
fn switches_and_segment() {
    let d = desc(&["--switches=2@5:00", "--segment=4", "--wrap=true"]);
    assert_eq!(
        (d.switches, d.switch_wait, d.segment),
        (Some(2), Some(300), Some(4))
    );
    let d = desc(&["--switches=1", "--wrap=true"]);
    assert_eq!((d.switches, d.switch_wait), (Some(1), None));
}

#[test]
fn io_options_keep_patterns_unexpanded() {
    let d = desc(&["--wrap=true"]);
    assert_eq!(d.stdout.as_deref(), Some("slurm-%j.out"));
    // An array's default is slurm-%A_%a.out (sbatch(1) --output).
    let d = desc(&["--array=1-3", "--wrap=true"]);
    assert_eq!(d.stdout.as_deref(), Some("slurm-%A_%a.out"));
    assert_eq!(d.stderr, None);
    assert_eq!((d.stderr.as_deref(), d.stdin.as_deref()), (None, None));
    let d = desc(&[
        "-o",
        "logs/%x-%j.out",
        "-e",
        "%j.err",
        "-i",
        "in.txt",
        "--open-mode=append",
        "--wrap=true",
    ]);
    assert_eq!(d.stdout.as_deref(), Some("logs/%x-%j.out"));
    assert_eq!(d.stderr.as_deref(), Some("%j.err"));
    assert_eq!(d.stdin.as_deref(), Some("in.txt"));
    assert!(d.open_append);
    assert!(!desc(&["--open-mode=truncate", "--wrap=true"]).open_append);
    assert_eq!(
        desc(&["-o", "none", "--wrap=true"]).stdout.as_deref(),
        Some("/dev/null")
    );
}

#[test]
fn chdir_and_submit_fields() {
    let d = desc(&["-D", "/scratch/run", "--wrap=true"]);
    assert_eq!(d.work_dir, "/scratch/run");
    assert_eq!(
        desc(&["-D", "sub", "--wrap=true"]).work_dir,
        "/home/sauser/capture/sub"
    );
    let d = desc(&["-J", "x y", "--wrap=true"]);
    assert_eq!(d.work_dir, CWD);
    assert_eq!(d.submit_dir, CWD);
    assert_eq!(d.submit_host, "ctl");
    assert_eq!(d.submit_line, "sbatch -J x y --wrap=true");
    assert_eq!((d.uid, d.gid, d.user.as_str()), (2001, 2001, "sauser"));
    assert_eq!(d.alloc_sid, std::process::id());
}

#[test]
fn flags() {
    let d = desc(&["--exclusive", "-H", "--requeue", "--nice", "--wrap=true"]);
    assert!(d.exclusive && d.hold);
    assert_eq!(d.requeue, Some(true));
    assert_eq!(d.nice, 100);
    let d = desc(&[
        "--exclusive",
        "-s",
        "--no-requeue",
        "--nice=5",
        "--wrap=true",
    ]);
    assert!(!d.exclusive);
    assert_eq!(d.requeue, Some(false));
    assert_eq!(d.nice, 5);
    assert_eq!(desc(&["--wrap=true"]).requeue, None);
    // Sharing nodes per user (or MCS label, topology block) is not
    // modelled: refused, not run shared.
    for kind in ["user", "mcs", "topo"] {
        let e = err(&[&format!("--exclusive={kind}"), "--wrap=true"]);
        assert_eq!(
            e.stderr,
            format!("sbatch: error: --exclusive={kind} is not supported here: nodes are shared only as --exclusive and --oversubscribe say\n")
        );
        assert_eq!(e.code, 1);
    }
}

#[test]
fn nodelists_expand_and_read_files() {
    let d = desc(&["-w", "node[1-3]", "-x", "node2", "--wrap=true"]);
    assert_eq!(d.nodelist, ["node1", "node2", "node3"]);
    assert_eq!(d.exclude, ["node2"]);
    let dir = scratch();
    let file = dir.path().join("hosts");
    std::fs::write(&file, "node1\nnode[3-4]\n").unwrap();
    let d = desc(&["-w", file.to_str().unwrap(), "--wrap=true"]);
    assert_eq!(d.nodelist, ["node1", "node3", "node4"]);
}

#[test]
fn begin_and_signal_options() {
    assert_eq!(
        desc(&["--begin=now+1hour", "--wrap=true"]).begin_time,
        Some(NOW + 3600)
    );
    assert_eq!(
        desc(&["-b", "16:00", "--wrap=true"]).begin_time,
        Some(NOW + 5 * 3600 + 35 * 60 + 56)
    );
    assert_eq!(
        desc(&["--signal=B:USR2@30", "--wrap=true"]).signal,
        Some(SignalSpec {
            signal: libc::SIGUSR2,
            secs: 30,
            batch_only: true
        })
    );
    assert_eq!(
        desc(&["--signal", "USR2@90", "--wrap=true"]).signal,
        Some(SignalSpec {
            signal: libc::SIGUSR2,
            secs: 90,
            batch_only: false
        })
    );
}

#[test]
fn licenses_go_to_the_controller_and_or_is_refused() {
    assert_eq!(
        desc(&["-L", "matlab:2,ansys", "--wrap=true"])
            .licenses
            .as_deref(),
        Some("matlab:2,ansys")
    );
    assert_eq!(
        desc(&["--licenses=foo", "--wrap=true"]).licenses.as_deref(),
        Some("foo")
    );
    let e = err(&["-L", "a|b", "--wrap=true"]);
    assert!(
        e.stderr.contains("'|'") && e.stderr.contains("not supported"),
        "{}",
        e.stderr
    );
    assert_ne!(e.code, 0);
}

#[test]
fn hint_options_are_warned_about_once_and_ignored() {
    let b = run(&[
        "-M",
        "anchor",
        "--mail-type=END,FAIL",
        "--mail-user=a@b",
        "--mail-type=ALL",
        "--get-user-env",
        "--hint=nomultithread",
        "-v",
        "--acctg-freq=30",
        "--profile=none",
        "--wait-all-nodes=1",
        "--uid=2001",
        "--gid=2001",
        "--wrap=true",
    ])
    .unwrap();
    assert_eq!(
        b.warnings,
        "sbatch: warning: -v/--verbose is ignored here: the commands print no debug messages\n\
         sbatch: warning: --profile is ignored here: no AcctGatherProfile plugin\n"
    );
    assert_eq!(
        run(&["-M", "anchor", "--wrap=true"])
            .unwrap()
            .clusters
            .as_deref(),
        Some("anchor")
    );
    let b = run(&["--mail-type=END", "--wckey=k", "--wrap=true"]).unwrap();
    assert_eq!(b.warnings, golden("sbatch_warn_ignored.err"));
}

/// `--mail-type` and `--mail-user` travel to the controller (it runs
/// MailProg); the last `--mail-type` given wins, NONE clears.
#[test]
fn mail_options_are_carried() {
    let d = desc(&[
        "--mail-type=END,FAIL",
        "--mail-user=a@b",
        "--mail-type=begin",
        "--wrap=true",
    ]);
    use model::mail;
    assert_eq!(d.mail_type, mail::BEGIN);
    assert_eq!(d.mail_user.as_deref(), Some("a@b"));
    let d = desc(&["--mail-type=END,FAIL", "--wrap=true"]);
    assert_eq!(d.mail_type, mail::END | mail::FAIL);
    assert_eq!(desc(&["--mail-type=ALL,NONE", "--wrap=true"]).mail_type, 0);
    assert_eq!(desc(&["--wrap=true"]).mail_user, None);
    let e = err(&["--mail-type=BOGUS", "--wrap=true"]);
    assert_eq!(e.stderr, "sbatch: error: --mail-type=BOGUS invalid\n");
    assert_eq!(e.code, 255);
    // The time-limit shares are mailed (issue 38).
    assert_eq!(
        desc(&["--mail-type=TIME_LIMIT_80", "--wrap=true"]).mail_type,
        mail::TIME_LIMIT_80
    );
    assert_eq!(run(&["--wrap=true"]).unwrap().warnings, "");
}

/// Options that would change where, when or as whom the job runs and that
/// muster does not implement fail, from any source, before anything is
/// submitted (`compat::SBATCH`).
#[test]
fn options_muster_cannot_honour_are_refused() {
    assert_golden(
        &err(&["--mail-type=END", "--mincpus=2", "--wrap=true"]),
        "sbatch_err_refused_option.err",
        1,
    );
    for opt in [
        "--distribution=block",
        "--no-kill",
        "-k",
        "-O",
        "--tmp=10G",
        "--mincpus=2",
        "--sockets-per-node=1",
        "--cores-per-socket=2",
        "--thread-spec=1",
        "--ntasks-per-socket=1",
        "--propagate",
        "--priority=5",
        "--contiguous",
        "--bb=x",
        "--core-spec=1",
    ] {
        let e = err(&[opt, "--wrap=true"]);
        assert!(
            e.stderr.starts_with("sbatch: error: ")
                && e.stderr.contains(" is not supported here: "),
            "{opt}: {}",
            e.stderr
        );
        assert_eq!(e.code, 1, "{opt}");
    }
    let e = err(&["-S", "1", "--wrap=true"]);
    assert_eq!(
        e.stderr,
        "sbatch: error: -S/--core-spec is not supported here: no cores are reserved for system use\n"
    );
    // From a directive and from an input variable too.
    let s = script("#!/bin/sh\n#SBATCH --tmp=1G\ntrue\n");
    assert!(err(&[&s]).stderr.contains("--tmp is not supported here"));
    let e = run_env(&["--wrap=true"], &[("SBATCH_NETWORK", "x")]).unwrap_err();
    assert_eq!(
        e.stderr,
        "sbatch: error: --network is not supported here: muster has no switch plugin\n"
    );
    // SLURM_EXIT_ERROR replaces the status, as for every error.
    let e = run_env(&["--tmp=1", "--wrap=true"], &[("SLURM_EXIT_ERROR", "7")]).unwrap_err();
    assert_eq!(e.code, 7);
}

#[test]
fn ordinary_users_cannot_submit_as_someone_else() {
    // Someone else's uid is refused for an ordinary user.
    let e = err(&["--uid=0", "--wrap=true"]);
    assert_eq!(
        e.stderr,
        "sbatch: error: Batch job submission failed: Access/permission denied\n"
    );
}

// ---- scripts -----------------------------------------------------------------

#[test]
fn wrap_script_and_name() {
    let d = desc(&["--wrap=echo hi"]);
    assert_eq!(
        d.script,
        "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n"
    );
    assert_eq!(d.name, "wrap");
    assert!(d.argv.is_empty());
}

#[test]
fn stdin_script_and_name() {
    let text = b"#!/bin/sh\n#SBATCH -t 7\nhostname\n";
    let b = build(&[], &[], Some(text), CWD, &identity(), NOW).unwrap();
    assert_eq!(b.desc.script, "#!/bin/sh\n#SBATCH -t 7\nhostname\n");
    assert_eq!(b.desc.name, "sbatch");
    assert_eq!(b.desc.time_limit, Some(TimeLimit::Minutes(7)));
}

#[test]
fn file_script_name_and_arguments() {
    let path = script("#!/bin/bash\ntrue\n");
    let d = desc(&["-t", "5", &path, "-t", "9", "x y"]);
    assert_eq!(d.name, "job.sh");
    assert_eq!(d.argv, ["-t", "9", "x y"]);
    assert_eq!(d.time_limit, Some(TimeLimit::Minutes(5)));
    assert_eq!(d.script, "#!/bin/bash\ntrue\n");
}

#[test]
fn relative_script_is_found_in_cwd() {
    let dir = scratch();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\ntrue\n").unwrap();
    let cwd = dir.path().to_str().unwrap();
    let b = build(&strings(&["run.sh"]), &[], None, cwd, &identity(), NOW).unwrap();
    assert_eq!(b.desc.name, "run.sh");
    let e = build(&strings(&["nope.sh"]), &[], None, cwd, &identity(), NOW).unwrap_err();
    assert_eq!(e.stderr, "sbatch: error: Unable to open file nope.sh\n");
}

#[test]
fn directives_are_applied() {
    let path = script(
        "#!/bin/bash\n\
         #SBATCH --job-name=fromscript\n\
         #SBATCH -N 2 --ntasks-per-node=2  # two per node\n\
         \n\
         # plain comment\n\
         #SBATCH --output='out dir/%j.log'\n\
         #SBATCH --comment \"a b\"\n\
         #SBATCH --exclusive\n\
         srun hostname\n\
         #SBATCH --partition=ignored\n",
    );
    let d = desc(&[&path]);
    assert_eq!(d.name, "fromscript");
    assert_eq!((d.min_nodes, d.ntasks_per_node), (Some(2), Some(2)));
    assert_eq!(d.stdout.as_deref(), Some("out dir/%j.log"));
    assert_eq!(d.comment.as_deref(), Some("a b"));
    assert!(d.exclusive);
    assert!(d.partitions.is_empty());
}

#[test]
fn bad_directives() {
    let e = err(&[&script("#!/bin/sh\n#SBATCH --bogus\ntrue\n")]);
    assert_eq!(
        e.stderr,
        "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n"
    );
    let e = err(&[&script("#!/bin/sh\n#SBATCH --time=x\ntrue\n")]);
    assert_eq!(
        (e.stderr.as_str(), e.code),
        ("sbatch: error: Invalid --time specification\n", 255)
    );
    let e = err(&[&script("#!/bin/sh\n#SBATCH stray\ntrue\n")]);
    assert_eq!(
        e.stderr,
        "sbatch: error: Invalid directive found in batch script: stray\n"
    );
}

// ---- precedence -----------------------------------------------------------------

#[test]
fn precedence_script_then_env_then_command_line() {
    let path = script("#!/bin/sh\n#SBATCH -J s -p s -t 1 -A s --qos=s\ntrue\n");
    let env = [
        ("SBATCH_JOB_NAME", "e"),
        ("SBATCH_PARTITION", "e"),
        ("SBATCH_TIMELIMIT", "2"),
    ];
    let d = run_env(&["-J", "c", &path], &env).unwrap().desc;
    assert_eq!(d.name, "c");
    assert_eq!(d.partitions, ["e"]);
    assert_eq!(d.time_limit, Some(TimeLimit::Minutes(2)));
    assert_eq!(d.account.as_deref(), Some("s"));
    assert_eq!(d.qos.as_deref(), Some("s"));
}

#[test]
fn input_environment_variables() {
    let env = [
        ("SBATCH_ACCOUNT", "acct"),
        ("SBATCH_QOS", "q"),
        ("SBATCH_EXCLUSIVE", "exclusive"),
        ("SBATCH_GRES", "gpu:2"),
        ("SBATCH_GPUS", "1"),
        ("SBATCH_MEM_PER_CPU", "100"),
        ("SBATCH_OPEN_MODE", "append"),
        ("SBATCH_REQUEUE", "1"),
        ("SBATCH_SIGNAL", "USR1@10"),
        ("SBATCH_CONSTRAINT", "fast"),
        ("SLURM_CLUSTERS", "anchor"),
        ("SBATCH_OUTPUT", "o.txt"),
        ("SBATCH_PARTITION", "debug"),
    ];
    let b = run_env(&["--wrap=true"], &env).unwrap();
    let d = &b.desc;
    assert_eq!(d.account.as_deref(), Some("acct"));
    assert_eq!(d.qos.as_deref(), Some("q"));
    assert!(d.exclusive && d.open_append);
    assert_eq!(d.gres, Gres::parse_list("gpu:2").unwrap());
    assert_eq!(d.gpus.as_ref().map(|g| g.count), Some(1));
    assert_eq!(d.mem_per_cpu, Some(100));
    assert_eq!(d.requeue, Some(true));
    assert_eq!(d.signal.as_ref().map(|s| s.secs), Some(10));
    assert_eq!(d.constraint.as_deref(), Some("fast"));
    assert_eq!(b.clusters.as_deref(), Some("anchor"));
    assert_eq!(d.stdout.as_deref(), Some("o.txt"));
    assert_eq!(d.partitions, ["debug"]);
    let d = run_env(&["--requeue", "--wrap=true"], &[("SBATCH_NO_REQUEUE", "1")])
        .unwrap()
        .desc;
    assert_eq!(d.requeue, Some(true));
    // An invalid variable fails like the option would.
    let e = run_env(&["--wrap=true"], &[("SBATCH_TIMELIMIT", "x")]).unwrap_err();
    assert_eq!(e.code, 255);
}

// ---- environment -----------------------------------------------------------------

fn value<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

#[test]
fn export_default_is_the_whole_environment() {
    let env = [
        ("PATH", "/bin"),
        ("PYTHONPATH", "/py"),
        ("SLURM_CONF", "/etc/slurm.conf"),
    ];
    let d = run_env(&["--wrap=true"], &env).unwrap().desc;
    assert_eq!(value(&d.env, "PATH"), Some("/bin"));
    assert_eq!(value(&d.env, "PYTHONPATH"), Some("/py"));
    assert_eq!(value(&d.env, "SLURM_SUBMIT_DIR"), Some(CWD));
    assert_eq!(value(&d.env, "SLURM_SUBMIT_HOST"), Some("ctl"));
    let same = run_env(&["--export=ALL", "--wrap=true"], &env)
        .unwrap()
        .desc;
    assert_eq!(same.env, d.env);
}

#[test]
fn export_none_and_lists() {
    let env = [("PATH", "/bin"), ("HOME", "/h"), ("SLURM_CONF", "/c")];
    let d = run_env(&["--export=NONE", "--wrap=true"], &env)
        .unwrap()
        .desc;
    // Not the submitting PATH: the login one (issue 35, as Slurm's job
    // starts from the user's login environment).
    assert_ne!(value(&d.env, "PATH"), Some("/bin"));
    assert!(value(&d.env, "PATH").is_some());
    assert_eq!(value(&d.env, "SLURM_EXPORT_ENV"), Some("NONE"));
    assert_eq!(value(&d.env, "SLURM_CONF"), Some("/c"));
    assert_eq!(value(&d.env, "SLURM_SUBMIT_DIR"), Some(CWD));

    let d = run_env(&["--export=ALL,HOME=/x,NEW=1", "--wrap=true"], &env)
        .unwrap()
        .desc;
    assert_eq!(value(&d.env, "PATH"), Some("/bin"));
    assert_eq!(value(&d.env, "HOME"), Some("/x"));
    assert_eq!(value(&d.env, "NEW"), Some("1"));

    let d = run_env(&["--export=HOME,NEW=1", "--wrap=true"], &env)
        .unwrap()
        .desc;
    assert_ne!(value(&d.env, "PATH"), Some("/bin"));
    assert_eq!(value(&d.env, "SLURM_EXPORT_ENV"), Some("HOME,NEW=1"));
    assert_eq!(value(&d.env, "HOME"), Some("/h"));
    assert_eq!(value(&d.env, "NEW"), Some("1"));

    let d = run_env(
        &["--wrap=true"],
        &[("PATH", "/bin"), ("SBATCH_EXPORT", "NONE")],
    )
    .unwrap()
    .desc;
    assert_ne!(value(&d.env, "PATH"), Some("/bin"));

    let d = run_env(&["--get-user-env", "--wrap=true"], &env)
        .unwrap()
        .desc;
    assert_eq!(value(&d.env, "SLURM_GET_USER_ENV"), Some("1"));
}

#[test]
fn export_file() {
    let dir = scratch();
    let file = dir.path().join("env");
    std::fs::write(&file, "A=1\nB=2\n").unwrap();
    let arg = format!("--export-file={}", file.display());
    let d = run_env(&[&arg, "--wrap=true"], &[("PATH", "/bin")])
        .unwrap()
        .desc;
    assert_eq!(value(&d.env, "A"), Some("1"));
    assert_eq!(value(&d.env, "PATH"), None);
    assert_eq!(value(&d.env, "SLURM_SUBMIT_DIR"), Some(CWD));
}

/// Issue 37: `--gres-flags` is checked and travels lowercase; the
/// controller acts on `enforce-binding` and `disable-binding`.
#[test]
fn issue_37_gres_flags_are_checked_and_carried() {
    assert_eq!(
        desc(&["--gres-flags=Enforce-Binding", "--wrap=true"]).gres_flags,
        Some("enforce-binding".to_string())
    );
    assert_eq!(
        desc(&[
            "--gres-flags=disable-binding,one-task-per-sharing",
            "--wrap=true"
        ])
        .gres_flags,
        Some("disable-binding,one-task-per-sharing".to_string())
    );
    assert_eq!(desc(&["--wrap=true"]).gres_flags, None);
    let e = err(&["--gres-flags=bogus", "--wrap=true"]);
    assert_eq!(
        e.stderr,
        "sbatch: error: Invalid --gres-flags specification\n"
    );
}

/// Issue 37: `--hint`, `--threads-per-core` and `--ntasks-per-core` reach
/// the controller (one task per core on nodes that give whole cores).
#[test]
fn issue_37_core_options_are_carried() {
    let d = desc(&["--hint=nomultithread", "--wrap=true"]);
    assert_eq!(d.hint.as_deref(), Some("nomultithread"));
    let d = desc(&["--threads-per-core=1", "--ntasks-per-core=2", "--wrap=true"]);
    assert_eq!((d.threads_per_core, d.ntasks_per_core), (Some(1), Some(2)));
    let e = err(&["--ntasks-per-core=0", "--wrap=true"]);
    assert_eq!(
        e.stderr,
        "sbatch: error: Invalid numeric value \"0\" for --ntasks-per-core.\n"
    );
    let d = desc(&["--wrap=true"]);
    assert_eq!(
        (d.hint, d.threads_per_core, d.ntasks_per_core),
        (None, None, None)
    );
}
