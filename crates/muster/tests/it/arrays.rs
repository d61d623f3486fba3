//! Job arrays with real daemons and real job processes: `--array` forms,
//! each task's environment and output file, the `%N` throttle, array ids in
//! squeue, scancel, scontrol and sacct.

use crate::{cluster, secs};
use e2e::Cluster;

/// `squeue -h -r -t all -j ID -o FORMAT` lines for an array (one per
/// task), sorted.
fn rows(c: &Cluster, id: &str, format: &str) -> Vec<String> {
    let out = c.ok("squeue", &["-h", "-r", "-t", "all", "-j", id, "-o", format]);
    let mut v: Vec<String> = out.stdout.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// Waits until every task of array `id` has ended; returns `%i %T` rows.
fn wait_array_done(c: &Cluster, id: u32, n: usize) -> Vec<String> {
    c.wait_until(&format!("array {id} to end"), secs(30), || {
        let r = rows(c, &id.to_string(), "%i %T");
        let done = r.len() == n
            && r.iter().all(|l| {
                !l.ends_with(" PENDING") && !l.ends_with(" RUNNING") && !l.ends_with(" COMPLETING")
            });
        done.then_some(r)
    })
}

#[test]
fn array_tasks_get_their_env_and_own_output_and_fail_alone() {
    let c = cluster(1);
    let script = c.write(
        "arr.sh",
        "#!/bin/sh\n#SBATCH --array=0-15:4\n#SBATCH -o arr-%A_%a.out\n\
         env | grep '^SLURM_ARRAY' | sort\necho JOB=$SLURM_JOB_ID\n\
         [ \"$SLURM_ARRAY_TASK_ID\" = 8 ] && exit 3\nexit 0\n",
    );
    let id = c.submit(&[script.to_str().unwrap()]);
    let done = wait_array_done(&c, id, 4);
    assert_eq!(
        done,
        vec![
            format!("{id}_0 COMPLETED"),
            format!("{id}_12 COMPLETED"),
            format!("{id}_4 COMPLETED"),
            format!("{id}_8 FAILED"),
        ]
    );
    let mut job_ids = Vec::new();
    for t in [0, 4, 8, 12] {
        let text = c.wait_file(&format!("arr-{id}_{t}.out"), secs(5));
        let expected = format!(
            "SLURM_ARRAY_JOB_ID={id}\nSLURM_ARRAY_TASK_COUNT=4\nSLURM_ARRAY_TASK_ID={t}\n\
             SLURM_ARRAY_TASK_MAX=12\nSLURM_ARRAY_TASK_MIN=0\nSLURM_ARRAY_TASK_STEP=4\n"
        );
        assert!(text.starts_with(&expected), "task {t}: {text}");
        let job: u32 = text
            .lines()
            .find_map(|l| l.strip_prefix("JOB="))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no JOB= in {text}"));
        job_ids.push(job);
    }
    // Each task has its own job id; the last one keeps the array's.
    assert_eq!(job_ids[3], id);
    let mut unique = job_ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "{job_ids:?}");
    // scontrol show job names each task with its array.
    let out = c.ok("scontrol", &["show", "job", &format!("{id}_8")]);
    assert!(
        out.stdout.starts_with(&format!(
            "JobId={} ArrayJobId={id} ArrayTaskId=8 JobName=arr.sh\n",
            job_ids[2]
        )),
        "{out}"
    );
    assert!(out.stdout.contains("ExitCode=3:0"), "{out}");
    // sacct: one row per task, JobIDRaw the task's own id.
    let expected = vec![
        format!("{id}_0|{}|COMPLETED|0:0", job_ids[0]),
        format!("{id}_12|{id}|COMPLETED|0:0"),
        format!("{id}_4|{}|COMPLETED|0:0", job_ids[1]),
        format!("{id}_8|{}|FAILED|3:0", job_ids[2]),
    ];
    // Records reach the store asynchronously.
    let mut last = Vec::new();
    let found = c.wait_until("the array's tasks in sacct", secs(10), || {
        let out = c.run(
            "sacct",
            &[
                "-j",
                &id.to_string(),
                "-X",
                "-P",
                "-n",
                "--format=JobID,JobIDRaw,State,ExitCode",
            ],
        );
        let mut lines: Vec<String> = out.stdout.lines().map(str::to_string).collect();
        lines.sort();
        last = lines.clone();
        (lines == expected).then_some(lines)
    });
    assert_eq!(found, expected, "{last:?}");
}

#[test]
fn throttle_pending_record_and_task_operations() {
    let c = cluster(2);
    let id = c.submit(&["--array=0-9%2", "-o", "/dev/null", "--wrap", "sleep 300"]);
    let ids = id.to_string();
    // Two run; the rest is one pending line with the throttle.
    let running = c.wait_until("two running tasks", secs(15), || {
        let r = rows(&c, &ids, "%i %t %r");
        (r.iter().filter(|l| l.contains(" R ")).count() == 2).then_some(r)
    });
    assert_eq!(running.len(), 10, "{running:?}");
    let out = c.ok("squeue", &["-h", "-j", &ids, "-o", "%i %t %r"]);
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            format!("{id}_0 R None"),
            format!("{id}_1 R None"),
            format!("{id}_[2-9%2] PD JobArrayTaskLimit"),
        ]
    );
    let out = c.ok("scontrol", &["show", "job", &ids]);
    assert!(
        out.stdout.starts_with(&format!(
            "JobId={id} ArrayJobId={id} ArrayTaskId=2-9 ArrayTaskThrottle=2 JobName=wrap\n"
        )),
        "{out}"
    );
    let records = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("JobId="))
        .count();
    assert_eq!(records, 3, "{out}");

    // Raise the throttle: all four CPUs fill.
    c.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "ArrayTaskThrottle=4"],
    );
    c.wait_until("four running tasks", secs(15), || {
        let r = rows(&c, &ids, "%t");
        (r.iter().filter(|l| *l == "R").count() == 4).then_some(())
    });
    // One pending task cancelled, two held, one released.
    c.ok("scancel", &[&format!("{id}_9")]);
    c.ok("scontrol", &["hold", &format!("{id}_[5-6]")]);
    c.ok("scontrol", &["release", &format!("{id}_6")]);
    assert_eq!(
        rows(&c, &format!("{id}_[5,6,9]"), "%i %T %r"),
        vec![
            format!("{id}_5 PENDING JobHeldAdmin"),
            format!("{id}_6 PENDING Resources"),
            format!("{id}_9 CANCELLED None"),
        ]
    );
    // A running task cancelled alone; the others go on.
    c.ok("scancel", &[&format!("{id}_0")]);
    c.wait_until("task 0 cancelled", secs(15), || {
        (rows(&c, &format!("{id}_0"), "%T") == vec!["CANCELLED".to_string()]).then_some(())
    });
    // The whole array.
    c.ok("scancel", &[&ids]);
    let done = wait_array_done(&c, id, 10);
    assert!(done.iter().all(|l| l.ends_with("CANCELLED")), "{done:?}");
}

#[test]
fn bad_array_specs_leave_nothing_behind() {
    let c = cluster(1);
    let out = c.run("sbatch", &["--array=0-5000", "--wrap=true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        crate::reference("err_sbatch_array_too_big.err").unwrap_or_else(|| {
            "sbatch: error: Batch job submission failed: Invalid job array specification\n".into()
        })
    );
    for bad in ["--array=3-1", "--array=0-3%0", "--array=x"] {
        let out = c.run("sbatch", &[bad, "--wrap=true"]);
        assert_eq!(out.code, 1, "{bad}: {out}");
        assert_eq!(out.stderr, "sbatch: error: Invalid --array specification\n");
    }
    let out = c.ok("squeue", &["-h", "-t", "all"]);
    assert_eq!(out.stdout, "", "nothing was queued");
}

/// An array behind a long queue starts a task on every CPU a job's end
/// frees, in the pass after that end: the pass tries only the head of the
/// queue and the jobs that must be tried (arrays among them), and tried an
/// array as one request until the twenty-first session (one task per
/// pass, the other CPU idle until the next event).
#[test]
fn an_array_behind_a_long_queue_starts_a_task_on_every_freed_cpu() {
    let c = cluster(4);
    let pair = c.submit(&["-n", "2", "-N", "1", "-t", "10", "--wrap", "sleep 8"]);
    let rest: Vec<u32> = (0..6)
        .map(|_| c.submit(&["-n", "1", "-t", "10", "--wrap", "sleep 300"]))
        .collect();
    for id in rest.iter().chain([&pair]) {
        c.wait_state(*id, "RUNNING", secs(10));
    }
    // More whole-cluster jobs than the pass looks at one by one (64).
    for _ in 0..70 {
        c.submit(&["-n", "8", "-t", "10", "--wrap", "true"]);
    }
    let array = c.submit(&["-n", "1", "-t", "5", "--array=0-3", "--wrap", "sleep 300"]);
    assert_eq!(c.squeue_field(pair, "%T"), "RUNNING", "still running");
    assert_eq!(c.wait_done(pair, secs(30)), "COMPLETED");
    let tasks = || {
        rows(&c, &array.to_string(), "%i %T")
            .into_iter()
            .filter(|r| r.ends_with(" RUNNING"))
            .count()
    };
    c.wait_until("a task on each freed CPU", secs(5), || {
        (tasks() == 2).then_some(())
    });
    c.end_all_jobs(secs(20));
}
