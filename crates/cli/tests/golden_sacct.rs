//! Golden tests: sacct's rendering against what Slurm 22.05 printed
//! (`/work/shared/reference/slurm-22.05/sacct*.out`, see its INDEX.md).
//!
//! The records below mirror the jobs of that capture; the expected files
//! under `tests/golden/` are Slurm's output byte for byte.

use cli::sacct;
use model::{ExitCode, JobId, JobState, TimeLimit, Timestamp};
use proto::{AcctJob, AcctStep, StepId, StepUsage};

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

fn exit(code: i32, signal: i32) -> ExitCode {
    ExitCode { code, signal }
}

fn job(id: u32, name: &str, partition: &str, cpus: u32, state: JobState, ec: ExitCode) -> AcctJob {
    let started = state != JobState::Pending;
    AcctJob {
        cluster: "anchor".into(),
        job_id: JobId(id),
        array_job_id: None,
        array_task_id: None,
        array_task_str: None,
        name: name.into(),
        user: "sauser".into(),
        uid: 2001,
        gid: 2001,
        account: "research".into(),
        qos: "normal".into(),
        partition: partition.into(),
        state,
        cancelled_by: (state == JobState::Cancelled).then_some(2001),
        reason: "None".into(),
        exit_code: ec,
        priority: 1,
        submit_time: at(23, 56),
        eligible_time: Some(at(23, 56)),
        start_time: started.then_some(at(23, 57)),
        end_time: started.then_some(at(24, 0)),
        time_limit: TimeLimit::Unlimited,
        nodes: if started {
            "node1".into()
        } else {
            "None assigned".into()
        },
        n_nodes: 1,
        n_cpus: cpus,
        req_mem: "500M".into(),
        req_tres: format!("billing={cpus},cpu={cpus},mem=500M,node=1"),
        alloc_tres: format!("billing={cpus},cpu={cpus},mem=500M,node=1"),
        work_dir: "/home/sauser/capture".into(),
        submit_line: "sbatch --wrap=true".into(),
        comment: None,
        suspended_secs: 0,
        steps: Vec::new(),
        container: None,
    }
}

fn step(step_id: StepId, name: &str, cpus: u32, state: JobState, ec: ExitCode) -> AcctStep {
    AcctStep {
        step: step_id,
        name: name.into(),
        state,
        exit_code: ec,
        start_time: Some(at(23, 57)),
        end_time: Some(at(24, 0)),
        nodes: "node1".into(),
        n_nodes: 1,
        n_cpus: cpus,
        n_tasks: 1,
        alloc_tres: format!("cpu={cpus},mem=500M,node=1"),
        usage: StepUsage::default(),
        container: None,
    }
}

fn with(mut j: AcctJob, steps: Vec<AcctStep>) -> AcctJob {
    j.steps = steps;
    j
}

fn rss(mut s: AcctStep, kib: u64) -> AcctStep {
    s.usage.max_rss_kib = Some(kib);
    s.usage.ave_rss_kib = Some(kib);
    s.usage.max_rss_node = Some("node1".into());
    s
}

use JobState::{Cancelled, Completed, Failed, NodeFail, Pending, Timeout};
use StepId::{Batch, Numbered};

fn ok() -> ExitCode {
    exit(0, 0)
}

/// 66787: `sbatch --mem=500M` job that ran 3 s.
fn memjob() -> AcctJob {
    let mut s = rss(step(Batch, "batch", 1, Completed, ok()), 3596);
    let u = &mut s.usage;
    u.max_rss_task = Some(0);
    u.max_vmsize_kib = Some(79012);
    u.max_vmsize_node = Some("node1".into());
    u.max_vmsize_task = Some(0);
    u.ave_vmsize_kib = Some(79012);
    u.max_pages = Some(0);
    u.max_pages_node = Some("node1".into());
    u.max_pages_task = Some(0);
    u.ave_pages = Some(0);
    u.min_cpu_usec = Some(4000);
    u.min_cpu_node = Some("node1".into());
    u.min_cpu_task = Some(0);
    u.ave_cpu_usec = Some(4000);
    u.n_tasks = Some(1);
    with(job(66787, "memjob", "debug", 1, Completed, ok()), vec![s])
}

/// 66788: exits 3.
fn failjob() -> AcctJob {
    let mut j = job(66788, "failjob", "debug", 1, Failed, exit(3, 0));
    j.end_time = j.start_time;
    let mut s = rss(step(Batch, "batch", 1, Failed, exit(3, 0)), 3364);
    s.end_time = s.start_time;
    with(j, vec![s])
}

/// 66778: two nodes, three tasks, two srun steps.
fn envjob() -> AcctJob {
    let mut j = job(66778, "envjob", "debug", 3, Completed, ok());
    j.end_time = j.start_time;
    j.nodes = "node[1-2]".into();
    j.n_nodes = 2;
    j.alloc_tres = "billing=3,cpu=3,mem=1500M,node=2".into();
    let mut steps = vec![
        rss(step(Batch, "batch", 1, Completed, ok()), 3424),
        rss(step(Numbered(0), "hostname", 3, Completed, ok()), 3140),
        rss(step(Numbered(1), "bash", 1, Completed, ok()), 3068),
    ];
    steps[1].nodes = "node[1-2]".into();
    steps[1].n_nodes = 2;
    steps[1].alloc_tres = "cpu=3,mem=1500M,node=2".into();
    for s in &mut steps {
        s.end_time = s.start_time;
    }
    with(j, steps)
}

fn timeoutjob() -> AcctJob {
    with(
        job(66789, "timeoutjob", "debug", 1, Timeout, ok()),
        vec![step(Batch, "batch", 1, Cancelled, exit(0, 15))],
    )
}

/// The job array 66792 (`--array=0-3`), cancelled by root while pending.
fn array() -> AcctJob {
    let mut j = job(66792, "arr", "debug", 1, Cancelled, ok());
    j.array_job_id = Some(66792);
    j.array_task_str = Some("0-3".into());
    j.cancelled_by = Some(0);
    j
}

/// Every job of `sacct.out`, in its order.
fn all_jobs() -> Vec<AcctJob> {
    let batch = |st, ec| step(Batch, "batch", 1, st, ec);
    let num = |n, name: &str, cpus| step(Numbered(n), name, cpus, Completed, ok());
    let mut long2n = job(66790, "long2n", "debug", 4, NodeFail, ok());
    long2n.n_nodes = 2;
    let mut lost = step(Batch, "batch", 2, Cancelled, ok());
    // The node died: the step never reported its end or exit code.
    lost.end_time = None;
    long2n.steps = vec![lost];
    let mut mljob = job(66796, "mljob", "debug", 1, Cancelled, ok());
    mljob.account = "ml".into();
    mljob.steps = vec![batch(Cancelled, exit(0, 15))];
    vec![
        with(
            job(66775, "wrap", "debug", 1, Completed, ok()),
            vec![batch(Completed, ok())],
        ),
        with(
            job(66776, "wrap", "debug", 1, Completed, ok()),
            vec![batch(Completed, ok())],
        ),
        with(
            job(66777, "wrap", "gpu", 1, Completed, ok()),
            vec![batch(Completed, ok())],
        ),
        envjob(),
        with(
            job(66780, "hostname", "debug", 4, Completed, ok()),
            vec![num(0, "hostname", 4)],
        ),
        with(
            job(66781, "bash", "debug", 1, Completed, ok()),
            vec![num(0, "bash", 1)],
        ),
        with(
            job(66782, "bash", "debug", 1, Completed, ok()),
            vec![num(0, "bash", 1)],
        ),
        with(
            job(66783, "bash", "gpu", 1, Completed, ok()),
            vec![num(0, "bash", 1)],
        ),
        with(
            job(66784, "bash", "debug", 1, Failed, exit(3, 0)),
            vec![step(Numbered(0), "bash", 1, Failed, exit(3, 0))],
        ),
        with(
            job(66785, "interactive", "debug", 1, Completed, ok()),
            vec![num(0, "hostname", 1)],
        ),
        with(
            job(66786, "bash", "debug", 2, Completed, ok()),
            vec![num(0, "bash", 2)],
        ),
        memjob(),
        failjob(),
        timeoutjob(),
        long2n,
        with(
            job(66791, "gpulong", "gpu", 1, Cancelled, ok()),
            vec![batch(Cancelled, exit(0, 15))],
        ),
        job(66793, "big4n", "debug", 4, Cancelled, ok()),
        mljob,
        job(66797, "gpuwait", "gpu", 1, Cancelled, ok()),
        // Slurm listed the array's record here (it was written last).
        array(),
        job(66799, "wrap", "gpu", 1, Failed, exit(1, 0)),
        job(66800, "wrap", "debug", 10, Pending, ok()),
        job(66801, "hostname", "debug", 10, Cancelled, ok()),
        job(66808, "wrap", "debug", 1, Failed, exit(1, 0)),
        with(
            job(66809, "wrap", "debug", 1, Completed, ok()),
            vec![batch(Completed, ok())],
        ),
        job(66811, "restjob", "debug", 1, Cancelled, ok()),
    ]
}

fn args(a: &[&str]) -> sacct::SacctArgs {
    let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
    sacct::parse_args(&v, &[]).unwrap()
}

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn check(argv: &[&str], jobs: &[AcctJob], file: &str) {
    utc();
    let a = args(argv);
    let q = sacct::query_for(&a, "sauser", NOW);
    let selected: Vec<AcctJob> = jobs.iter().filter(|j| q.matches(j)).cloned().collect();
    assert_eq!(sacct::render(&a, &selected, NOW), golden(file), "{argv:?}");
}

const SEVEN: &str = "--format=JobID,JobName,Partition,Elapsed,State,ExitCode,MaxRSS";

#[test]
fn memjob_parsable2() {
    check(
        &["-j", "66787", SEVEN, "-P"],
        &all_jobs(),
        "sacct_memjob_P.txt",
    );
}

#[test]
fn failjob_parsable2() {
    check(
        &["-j", "66788", SEVEN, "-P"],
        &all_jobs(),
        "sacct_failjob_P.txt",
    );
}

#[test]
fn envjob_parsable2_ignores_widths() {
    check(
        &[
            "-j",
            "66778",
            "--format=JobID,JobName,Partition,Elapsed,State,ExitCode,MaxRSS,NodeList,AllocTRES%40",
            "-P",
        ],
        &all_jobs(),
        "sacct_envjob_P.txt",
    );
}

#[test]
fn timeout_default_columns() {
    check(&["-j", "66789"], &all_jobs(), "sacct_timeout.txt");
}

#[test]
fn default_listing_with_truncated_states() {
    // `sacct` with no options: today's jobs of the caller.
    check(&[], &all_jobs(), "sacct.txt");
}

#[test]
fn long_header_and_job_row() {
    // `sacct -j 66787 -l -P`, first two lines: the header and the job's
    // row (the step's row needs statistics AcctStep does not carry).
    check(
        &["-j", "66787", "-l", "-P", "-X"],
        &[memjob()],
        "sacct_long_X.txt",
    );
}

#[test]
fn batch_step_usage_columns() {
    // The usage columns of `sacct -j 66787 -l -P`'s `.batch` row, cut from
    // the reference output with the header they stand under.
    check(
        &[
            "-j",
            "66787.batch",
            "--format=JobID,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,\
             MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,\
             MinCPUTask,AveCPU,NTasks",
            "-P",
        ],
        &[memjob()],
        "sacct_long_batch_usage_P.txt",
    );
}

#[test]
fn sacct_array_p() {
    utc();
    let a = args(&[
        "-j",
        "66792",
        "--format=JobID,JobIDRaw,JobName,State,ExitCode",
        "-P",
    ]);
    let text = sacct::render(&a, &[array()], NOW);
    assert_eq!(text, golden("sacct_array_P.txt"));
}

#[test]
fn step_selection_and_allocations() {
    utc();
    let jobs = all_jobs();
    let a = args(&["-j", "66778.0,66778.batch", "-o", "jobid,state", "-P", "-n"]);
    assert_eq!(
        sacct::render(&a, &jobs, NOW),
        "66778.batch|COMPLETED\n66778.0|COMPLETED\n"
    );
    let a = args(&[
        "-X",
        "-n",
        "--format=jobid,state%20",
        "--job",
        "66791,66789",
    ]);
    let q = sacct::query_for(&a, "sauser", NOW);
    let sel: Vec<AcctJob> = jobs.iter().filter(|j| q.matches(j)).cloned().collect();
    assert_eq!(
        sacct::render(&a, &sel, NOW),
        "66789                     TIMEOUT \n66791           CANCELLED by 2001 \n"
    );
    let a = args(&[
        "-p",
        "-n",
        "-X",
        "--delimiter=;",
        "-o",
        "JobIDRaw,State,Elapsed,MaxRSS",
    ]);
    assert_eq!(
        sacct::render(&a, &[memjob()], NOW),
        "66787;COMPLETED;00:00:03;;\n"
    );
}

/// Issue 42: sacct's Container is the image the batch script (the job's,
/// and its batch step's) or a step ran in; 12 columns, left-justified,
/// cut with `+` as every sacct column.
#[test]
fn issue_42_container_column() {
    utc();
    let mut j = memjob();
    j.container = Some("/img/app.sqsh".into());
    j.steps[0].container = j.container.clone();
    let mut s0 = step(StepId::Numbered(0), "cat", 1, JobState::Completed, ok());
    s0.container = Some("/img/x.sqsh".into());
    j.steps.push(s0);
    let a = args(&["-j", "66787", "-o", "JobID,Container", "-P"]);
    assert_eq!(
        sacct::render(&a, &[j.clone()], NOW),
        "JobID|Container\n\
         66787|/img/app.sqsh\n\
         66787.batch|/img/app.sqsh\n\
         66787.0|/img/x.sqsh\n"
    );
    let a = args(&["-j", "66787", "-X", "-o", "JobID,Container"]);
    assert_eq!(
        sacct::render(&a, &[j], NOW),
        "JobID        Container    \n\
         ------------ ------------ \n\
         66787        /img/app.sq+ \n"
    );
}

#[test]
fn array_tasks_and_units() {
    utc();
    let mut t = memjob();
    t.job_id = JobId(66900);
    t.array_job_id = Some(66899);
    t.array_task_id = Some(4);
    let a = args(&[
        "-j",
        "66899_4",
        "-P",
        "-n",
        "--units=M",
        "-o",
        "jobid,jobidraw,maxrss,start,end",
    ]);
    assert_eq!(
        sacct::render(&a, &[t, memjob()], NOW),
        "66899_4|66900||2026-12-02T10:23:57|2026-12-02T10:24:00\n\
         66899_4.batch|66900.batch|3.51M|2026-12-02T10:23:57|2026-12-02T10:24:00\n"
    );
}

#[test]
fn json_lists_jobs_and_steps() {
    utc();
    let a = args(&["--json", "-j", "66787"]);
    let v: serde_json::Value = serde_json::from_str(&sacct::render(&a, &[memjob()], NOW)).unwrap();
    assert_eq!(v["jobs"][0]["job_id"], 66787);
    assert_eq!(v["jobs"][0]["state"]["current"], "COMPLETED");
    assert_eq!(v["jobs"][0]["steps"][0]["step"]["id"], "batch");
    assert_eq!(v["jobs"][0]["time"]["elapsed"], 3);
    // Slurm 22.05's shape: TRES as lists of {type, name, id, count}.
    assert_eq!(
        v["jobs"][0]["tres"]["requested"][1],
        serde_json::json!({ "type": "mem", "name": null, "id": 2, "count": 500 })
    );
    // The step's usage: TRESUsageIn under tres.requested, CPU in ms and
    // memory in bytes.
    let step = &v["jobs"][0]["steps"][0];
    let entry = |list: &str, ty: &str| {
        step["tres"]["requested"][list]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == ty)
            .map(|e| e["count"].clone())
    };
    assert_eq!(entry("max", "mem"), Some(serde_json::json!(3596 * 1024)));
    assert_eq!(entry("max", "vmem"), Some(serde_json::json!(79012 * 1024)));
    assert_eq!(
        entry("average", "mem"),
        Some(serde_json::json!(3596 * 1024))
    );
    assert_eq!(entry("min", "cpu"), Some(serde_json::json!(4)));
    assert_eq!(entry("max", "pages"), Some(serde_json::json!(0)));
    assert_eq!(step["tres"]["requested"]["max"][0]["id"], 1);
    assert_eq!(step["statistics"]["energy"]["consumed"], 0);
    assert_eq!(step["tres"]["consumed"]["max"], serde_json::json!([]));
}

/// Issue 35: the step's keys are those of Slurm 22.05's dbv0.0.38_job_step
/// (shared/reference/slurm-22.05/rest_openapi_v3.json, as slurmrestd
/// served it), its id the step's own ("batch", or the number).
#[test]
fn issue_35_json_steps_have_the_reference_keys() {
    utc();
    let a = args(&["--json", "-j", "66787"]);
    let v: serde_json::Value = serde_json::from_str(&sacct::render(&a, &[memjob()], NOW)).unwrap();
    let step = &v["jobs"][0]["steps"][0];
    let mut keys: Vec<&str> = step
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../restd/tests/golden/rest_openapi_v3.json");
    let mut want: Vec<String> = match std::fs::read_to_string(dir) {
        Ok(text) => {
            let spec: serde_json::Value = serde_json::from_str(&text).unwrap();
            spec["components"]["schemas"]["dbv0.0.38_job_step"]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        }
        // The reference's keys, for a checkout without shared/.
        Err(_) => [
            "time",
            "exit_code",
            "nodes",
            "tasks",
            "pid",
            "CPU",
            "kill_request_user",
            "state",
            "statistics",
            "step",
            "task",
            "tres",
        ]
        .map(String::from)
        .to_vec(),
    };
    want.sort_unstable();
    assert_eq!(keys, want);
    let mut step_keys: Vec<&str> = step["step"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    step_keys.sort_unstable();
    assert_eq!(step_keys, ["het", "id", "job_id", "name"]);
    assert_eq!(step["step"]["id"], "batch");
    let a = args(&["--json", "-j", "66778"]);
    let v: serde_json::Value = serde_json::from_str(&sacct::render(&a, &[envjob()], NOW)).unwrap();
    let ids: Vec<&serde_json::Value> = v["jobs"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["step"]["id"])
        .collect();
    assert_eq!(
        ids,
        [
            &serde_json::json!("batch"),
            &serde_json::json!(0),
            &serde_json::json!(1)
        ]
    );
}
