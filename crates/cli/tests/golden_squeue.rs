//! Golden tests: squeue's rendering against what Slurm 22.05 printed
//! (`/work/shared/reference/slurm-22.05/squeue*.out`, see its INDEX.md).
//!
//! The job list below mirrors the jobs of that capture, the pending job
//! array 66792_[0-3] included; the expected files under `tests/golden/` are
//! Slurm's output byte for byte.

use cli::squeue::{self, RenderError};
use model::{JobId, JobState, PendingReason, TimeLimit, Timestamp};
use proto::{JobInfo, JobList};

/// `Wed Dec 02 10:24:12 2026` UTC, when the capture ran.
const NOW: Timestamp = 1_796_207_052;

/// 2026-12-02 10:MM:SS UTC.
fn at(min: i64, sec: i64) -> Timestamp {
    NOW - (24 * 60 + 12) + min * 60 + sec
}

fn utc() {
    // Slurm printed the capture in UTC; the renderers use local time.
    std::env::set_var("TZ", "UTC");
}

#[allow(clippy::too_many_arguments)]
fn job(
    id: u32,
    partition: &str,
    name: &str,
    user: &str,
    state: JobState,
    reason: PendingReason,
    nodes: &[&str],
    num_nodes: u32,
    cpus: u32,
    priority: u32,
) -> JobInfo {
    JobInfo {
        job_id: JobId(id),
        name: name.into(),
        user: user.into(),
        uid: if user == "root" { 0 } else { 2001 },
        group: user.into(),
        gid: if user == "root" { 0 } else { 2001 },
        account: "research".into(),
        qos: "normal".into(),
        partition: partition.into(),
        state,
        reason,
        priority,
        submit_time: at(24, 4),
        eligible_time: at(24, 4),
        nodes: nodes.iter().map(|s| s.to_string()).collect(),
        num_nodes,
        num_cpus: cpus,
        num_tasks: 1,
        cpus_per_task: 1,
        mem_per_cpu: Some(500),
        work_dir: "/home/sauser/capture".into(),
        ..JobInfo::default()
    }
}

fn running(mut j: JobInfo, start: Timestamp) -> JobInfo {
    j.start_time = Some(start);
    j.run_time = (NOW - start) as u64;
    j.batch_host = j.nodes.first().cloned();
    j
}

/// The capture's jobs, in job id order (muster's controller order).
fn reference_jobs() -> JobList {
    use JobState::{Pending as PD, Running as R};
    use PendingReason as Why;
    let mut timeout = running(
        job(
            66789,
            "debug",
            "timeoutjob",
            "sauser",
            R,
            Why::None,
            &["node1"],
            1,
            1,
            2854,
        ),
        at(24, 0),
    );
    timeout.time_limit = TimeLimit::Minutes(1);
    timeout.submit_time = at(23, 56);
    let mut long2n = running(
        job(
            66790,
            "debug",
            "long2n",
            "sauser",
            R,
            Why::None,
            &["node2", "node3"],
            2,
            4,
            3166,
        ),
        at(24, 3),
    );
    long2n.submit_time = at(24, 0);
    let mut gpulong = running(
        job(
            66791,
            "gpu",
            "gpulong",
            "sauser",
            R,
            Why::None,
            &["node4"],
            1,
            1,
            2854,
        ),
        at(24, 3),
    );
    gpulong.time_limit = TimeLimit::Minutes(365 * 24 * 60);
    gpulong.submit_time = at(24, 3);
    gpulong.tres_per_node = Some("gres:gpu:2".into());
    let mut ml = running(
        job(
            66796,
            "debug",
            "mljob",
            "sauser",
            R,
            Why::None,
            &["node1"],
            1,
            1,
            7187,
        ),
        at(24, 6),
    );
    ml.account = "ml".into();
    ml.qos = "high".into();
    let mut gpuwait = job(
        66797,
        "gpu",
        "gpuwait",
        "sauser",
        PD,
        Why::NodesDown,
        &[],
        1,
        1,
        2854,
    );
    gpuwait.tres_per_node = Some("gres:gpu:a100:2".into());
    let mut depjob = job(
        66794,
        "debug",
        "depjob",
        "sauser",
        PD,
        Why::Dependency,
        &[],
        1,
        1,
        2854,
    );
    depjob.dependency = Some("afterok:66793_*".into());
    let mut arr = job(
        66792,
        "debug",
        "arr",
        "sauser",
        PD,
        Why::Priority,
        &[],
        1,
        1,
        2854,
    );
    arr.array_job_id = Some(66792);
    arr.array_task_str = Some("0-3".into());
    let jobs = vec![
        timeout,
        long2n,
        gpulong,
        arr,
        job(
            66793,
            "debug",
            "big4n",
            "sauser",
            PD,
            Why::Resources,
            &[],
            4,
            4,
            3416,
        ),
        depjob,
        job(
            66795,
            "debug",
            "heldjob",
            "sauser",
            PD,
            Why::JobHeldUser,
            &[],
            1,
            1,
            0,
        ),
        ml,
        gpuwait,
        job(
            66798,
            "debug",
            "rootjob",
            "root",
            PD,
            Why::JobHeldUser,
            &[],
            1,
            1,
            0,
        ),
    ];
    JobList { now: NOW, jobs }
}

fn render(args: &[&str]) -> Result<String, RenderError> {
    utc();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let parsed = squeue::parse_args(&args).expect("valid options");
    render_list(&parsed, &reference_jobs(), "sauser")
}

/// squeue's output for `list`, checked to be the same from the jobs as
/// the controller sends them for this squeue (`JobFilter::omit`: the text
/// fields the format, sort keys and filters do not read left empty; and
/// compact rows, `JobFilter::rows`, when squeue would ask for them).
fn render_list(args: &squeue::SqueueArgs, list: &JobList, me: &str) -> Result<String, RenderError> {
    let full = squeue::render(args, list, me);
    let filter = squeue::job_filter(args, me);
    let mut projected = list.clone();
    for j in &mut projected.jobs {
        filter.strip(j);
    }
    let out = squeue::render(args, &projected, me);
    assert_eq!(
        format!("{full:?}"),
        format!("{out:?}"),
        "omitting {:?} changes the output",
        filter.omit
    );
    // When the output reads only what a brief job carries, squeue asks
    // for compact rows: they must print the same.
    if filter.rows {
        let rows = proto::JobRows::from_list(list, &filter);
        let out = squeue::render_rows(args, &rows, me);
        assert_eq!(
            format!("{full:?}"),
            format!("{out:?}"),
            "compact rows change the output"
        );
    }
    full
}

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn default_format_matches_slurm() {
    assert_eq!(render(&[]).unwrap(), golden("squeue.txt"));
}

#[test]
fn long_format_matches_slurm() {
    assert_eq!(render(&["-l"]).unwrap(), golden("squeue_l.txt"));
}

#[test]
fn format_all_matches_slurm() {
    let fmt = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R %b %C %m %l %Q %v %a %q %p %S %V";
    assert_eq!(
        render(&["-o", fmt]).unwrap(),
        golden("squeue_format_all.txt")
    );
}

#[test]
fn start_matches_slurm() {
    assert_eq!(render(&["--start"]).unwrap(), golden("squeue_start.txt"));
}

#[test]
fn one_dependency_job_matches_slurm() {
    // squeue_dependency.out: `squeue -j 66794`.
    let expected = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n             66794     debug   depjob   sauser PD       0:00      1 (Dependency)\n";
    assert_eq!(render(&["-j", "66794"]).unwrap(), expected);
}

#[test]
fn unknown_single_job_id_is_slurms_error() {
    // err_squeue_nonexistent: `squeue -j 999999`, exit 1.
    let err = render(&["-j", "999999"]).unwrap_err();
    assert_eq!(format!("{err}\n"), golden("squeue_err_nonexistent.txt"));
}

#[test]
fn unknown_ids_among_several_just_filter() {
    let out = render(&["-h", "-o", "%i %t", "-j", "999999,66790"]).unwrap();
    assert_eq!(out, "66790 R\n");
    let out = render(&["-h", "-j", "999998,999999"]).unwrap();
    assert_eq!(out, "");
}

#[test]
fn parsl_style_state_query() {
    let out = render(&["--noheader", "--format=%i %t", "--job", "66795,66796"]).unwrap();
    assert_eq!(out, "66795 PD\n66796 R\n");
}

#[test]
fn issue_35_finished_jobs_need_states_even_with_ids() {
    utc();
    let mut list = reference_jobs();
    let mut done = list.jobs[0].clone();
    done.job_id = JobId(66780);
    done.state = JobState::Completed;
    list.jobs.push(done);
    let parse = |a: &[&str]| {
        let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        squeue::parse_args(&v).unwrap()
    };
    let plain = render_list(&parse(&["-h", "-o", "%i"]), &list, "sauser").unwrap();
    assert!(!plain.contains("66780"));
    let all = render_list(&parse(&["-h", "-o", "%i|%T", "-t", "all"]), &list, "sauser").unwrap();
    assert!(all.contains("66780|COMPLETED\n"));
    // The default state filter applies to jobs named with -j too: a finished
    // job the controller still holds is known (no error) but not shown, so a
    // script polling `squeue -j ID` sees it leave at once.
    let by_id = squeue::render(
        &parse(&["-h", "-o", "%i %t", "-j", "66780"]),
        &list,
        "sauser",
    )
    .unwrap();
    assert_eq!(by_id, "");
    let with_header = squeue::render(&parse(&["-j", "66780"]), &list, "sauser").unwrap();
    assert_eq!(with_header.lines().count(), 1, "{with_header}");
    let by_state = squeue::render(
        &parse(&["-h", "-o", "%i %t", "-t", "all", "-j", "66780"]),
        &list,
        "sauser",
    )
    .unwrap();
    assert_eq!(by_state, "66780 CD\n");
    // A cancelled array task is gone from `squeue -j A` and `-j A_T` alike.
    let mut task = list.jobs[0].clone();
    task.job_id = JobId(66783);
    task.array_job_id = Some(66781);
    task.array_task_id = Some(2);
    task.state = JobState::Cancelled;
    list.jobs.push(task);
    for id in ["66781", "66781_2"] {
        let out = squeue::render(&parse(&["-h", "-o", "%i %t", "-j", id]), &list, "sauser");
        assert_eq!(out.unwrap(), "", "-j {id}");
    }
}

#[test]
fn issue_35_stdout_shows_the_pattern_as_given() {
    // Real squeue 22.05 (`sbatch -H -o "o-%j-%N-%x-%u-%4j-%%.txt"`, then
    // `squeue -O STDOUT:80`): the pattern anchored at the working
    // directory, where scontrol's StdOut= expands %j %x %u; the default
    // shows expanded in both (`.../slurm-30.out`).
    utc();
    let mut list = reference_jobs();
    list.jobs.truncate(1);
    list.jobs[0].stdout = "/home/sauser/o-66790-%N-wrap.txt".into();
    list.jobs[0].stdout_pattern = Some("/home/sauser/o-%j-%N-%x.txt".into());
    list.jobs[0].stderr = "/home/sauser/slurm-66790.out".into();
    let args: Vec<String> = ["-h", "-O", "STDOUT:40,STDERR:40"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let parsed = squeue::parse_args(&args).unwrap();
    assert_eq!(
        render_list(&parsed, &list, "sauser").unwrap(),
        format!(
            "{:<40}{:<40}\n",
            "/home/sauser/o-%j-%N-%x.txt", "/home/sauser/slurm-66790.out"
        )
    );
}

#[test]
fn issue_35_format_all_and_select_info() {
    // Real squeue 22.05.8: `squeue -o %all` prints every field letter, a-z
    // then A-Z, joined by `|` (%s with an empty header and value).
    let header = "ACCOUNT|TRES_PER_NODE|MIN_CPUS|MIN_TMP_DISK|END_TIME|FEATURES|GROUP|OVER_SUBSCRIBE|JOBID|NAME|COMMENT|TIME_LIMIT|MIN_MEMORY|REQ_NODES|COMMAND|PRIORITY|QOS|REASON||ST|USER|RESERVATION|WCKEY|EXC_NODES|NICE|S:C:T|JOBID|EXEC_HOST|CPUS|NODES|DEPENDENCY|ARRAY_JOB_ID|GROUP|SOCKETS_PER_NODE|CORES_PER_SOCKET|THREADS_PER_CORE|ARRAY_TASK_ID|TIME_LEFT|TIME|NODELIST|CONTIGUOUS|PARTITION|PRIORITY|NODELIST(REASON)|START_TIME|STATE|UID|SUBMIT_TIME|LICENSES|CORE_SPEC|SCHEDNODES|WORK_DIR\n";
    let out = render(&["-o", "%all", "-j", "66790"]).unwrap();
    let mut lines = out.lines();
    assert_eq!(format!("{}\n", lines.next().unwrap()), header);
    let row = lines.next().unwrap();
    assert_eq!(row.split('|').count(), header.split('|').count(), "{row}");
    assert_eq!(row.split('|').nth(8), Some("66790"));
    assert_eq!(row.split('|').nth(18), Some(""));
    // `squeue -o "%i %s|"` and `-o "%.5s|%5s|"`: `JOBID |`, `     |     |`.
    let out = render(&["-o", "%i %s|", "-j", "66790"]).unwrap();
    assert_eq!(out, "JOBID |\n66790 |\n");
    let out = render(&["-h", "-o", "%.5s|%5s|", "-j", "66790"]).unwrap();
    assert_eq!(out, "     |     |\n");
}

#[test]
fn long_field_names_with_width_and_suffix() {
    let out = render(&[
        "-O",
        "JobID:\u{1f},State:\u{1f},Name:\u{1f},TimeUsed",
        "-j",
        "66789",
    ])
    .unwrap();
    assert_eq!(
        out,
        "JOBID\u{1f}STATE\u{1f}NAME\u{1f}TIME                \n66789\u{1f}RUNNING\u{1f}timeoutjob\u{1f}0:12                \n"
    );
    let out = render(&["-h", "-O", "JobID:.8,Partition:6|,UserName", "-j", "66791"]).unwrap();
    assert_eq!(out, "   66791gpu   |sauser              \n");
}

#[test]
fn filters_combine() {
    let out = render(&["-h", "-o", "%i", "-p", "gpu", "-t", "PD"]).unwrap();
    assert_eq!(out, "66797\n");
    let out = render(&["-h", "-o", "%i", "-u", "root"]).unwrap();
    assert_eq!(out, "66798\n");
    let out = render(&["-h", "-o", "%i", "--me", "-t", "R", "-w", "node1"]).unwrap();
    assert_eq!(out, "66796\n66789\n");
    let out = render(&["-h", "-o", "%i", "-n", "big4n,mljob"]).unwrap();
    assert_eq!(out, "66793\n66796\n");
}

#[test]
fn sort_option() {
    let out = render(&["-h", "-o", "%i", "-S", "-i", "-t", "R"]).unwrap();
    assert_eq!(out, "66796\n66791\n66790\n66789\n");
    let out = render(&["-h", "-o", "%i", "-S", "+i", "-t", "R"]).unwrap();
    assert_eq!(out, "66789\n66790\n66791\n66796\n");
    assert_eq!(
        render(&["-S", "a"]).unwrap_err().to_string(),
        "squeue: error: Invalid sort specification: a"
    );
}

#[test]
fn json_lists_jobs() {
    let out = render(&["--json", "-j", "66790"]).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["job_id"], 66790);
    assert_eq!(jobs[0]["job_state"], "RUNNING");
    assert_eq!(jobs[0]["nodes"], "node[2-3]");
    assert_eq!(jobs[0]["user_name"], "sauser");
}

#[test]
fn exit_codes_before_any_controller_call() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Bad option: getopt's message and "Try ..." on stderr, exit 1.
    assert_eq!(squeue::main(v(&["--bogus"])), 1);
    // scancel without ids or filters: "No job identification provided", exit 1.
    assert_eq!(cli::scancel::main(v(&[])), 1);
    assert_eq!(cli::scancel::main(v(&["-s", "NOSUCHSIG", "1"])), 1);
    assert_eq!(cli::scancel::main(v(&["--usage"])), 0);
}

#[test]
fn pending_array_is_one_line_and_r_expands_it() {
    assert_eq!(
        render(&["-j", "66792"]).unwrap(),
        golden("squeue_array.txt")
    );
    assert_eq!(
        render(&["-r", "-j", "66792"]).unwrap(),
        golden("squeue_array_r.txt")
    );
    // One pending task named alone is shown alone.
    let text = render(&["-h", "-j", "66792_2", "-o", "%i %F %K %A"]).unwrap();
    assert_eq!(text, "66792_2 66792 2 66792\n");
}

#[test]
fn running_tasks_and_throttled_rest() {
    utc();
    let mut list = reference_jobs();
    let base = list.jobs[3].clone();
    assert_eq!(base.job_id, JobId(66792));
    list.jobs[3].array_task_str = Some("5-9".into());
    list.jobs[3].array_max_tasks = Some(2);
    let mut task = base;
    task.job_id = JobId(66812);
    task.array_task_id = Some(4);
    task.array_task_str = None;
    task.state = JobState::Running;
    task.reason = PendingReason::None;
    list.jobs.push(task);
    let args: Vec<String> = ["-h", "-j", "66792", "-o", "%i %A %K %T"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let parsed = squeue::parse_args(&args).unwrap();
    assert_eq!(
        render_list(&parsed, &list, "sauser").unwrap(),
        "66792_[5-9%2] 66792 5-9 PENDING\n66792_4 66812 4 RUNNING\n"
    );
    // Real squeue 22.05 (`--array=4-5%1`, `squeue -j 16 -o "%i %K %r"`):
    // the last pending task is `16_5`, not `16_[5%1]`.
    list.jobs[3].array_task_str = Some("9".into());
    assert_eq!(
        render_list(&parsed, &list, "sauser").unwrap(),
        "66792_9 66792 9 PENDING\n66792_4 66812 4 RUNNING\n"
    );
}

#[test]
fn start_shows_the_backfill_plan() {
    // A planned job shows its expected start and the nodes it is planned on,
    // in the columns squeue_start.txt shows as N/A and (null).
    let mut list = reference_jobs();
    let big = list
        .jobs
        .iter_mut()
        .find(|j| j.job_id.0 == 66793)
        .expect("big4n");
    big.start_time = Some(NOW + 3600);
    big.sched_nodes = vec![
        "node1".into(),
        "node2".into(),
        "node3".into(),
        "node4".into(),
    ];
    utc();
    let args: Vec<String> = ["--start", "-j", "66793"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let parsed = squeue::parse_args(&args).expect("valid options");
    let text = render_list(&parsed, &list, "sauser").unwrap();
    let start = format!("{:>19}", cli_time(NOW + 3600));
    assert_eq!(
        text.lines().nth(1).unwrap(),
        format!("             66793     debug    big4n   sauser PD {start}      4 node[1-4]            (Resources)")
    );
}

fn cli_time(t: i64) -> String {
    // squeue prints local time as %Y-%m-%dT%H:%M:%S; the tests run in UTC.
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[test]
fn brief_formats_ask_for_compact_rows() {
    for args in [
        &[][..],
        &["-l"],
        &["--start"],
        &["-r"],
        &["-o", "%i %P %j %u %g %a %q %t %M %l %D %R %Y %S %Q"],
    ] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let parsed = squeue::parse_args(&args).unwrap();
        assert!(squeue::job_filter(&parsed, "u").rows, "{args:?}");
    }
    // What only the full form carries (%Z, %o, --json) needs full jobs.
    for args in [&["-o", "%i %Z"][..], &["-o", "%o"], &["--json"]] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let parsed = squeue::parse_args(&args).unwrap();
        assert!(!squeue::job_filter(&parsed, "u").rows, "{args:?}");
    }
}

/// `%W` shows a job's licenses (`(null)` for none) and `-L` keeps the jobs
/// that ask for one of the named licenses.
#[test]
fn licenses_column_and_filter() {
    utc();
    let mut list = reference_jobs();
    list.jobs[0].licenses = Some("matlab:2".into());
    let first = list.jobs[0].job_id.0;
    let args = |a: &[&str]| {
        let a: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        squeue::parse_args(&a).unwrap()
    };
    let out = render_list(
        &args(&["-h", "-o", "%i %W", "-L", "matlab"]),
        &list,
        "sauser",
    )
    .unwrap();
    assert_eq!(out, format!("{first} matlab:2\n"));
    let out = render_list(&args(&["-h", "-o", "%W"]), &list, "sauser").unwrap();
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert_eq!(
        lines.iter().filter(|l| **l == "matlab:2").count(),
        1,
        "{out}"
    );
    assert!(
        lines.iter().all(|l| *l == "matlab:2" || *l == "(null)"),
        "{out}"
    );
    let none = render_list(&args(&["-h", "-L", "ansys"]), &list, "sauser").unwrap();
    assert_eq!(none, "");
}
