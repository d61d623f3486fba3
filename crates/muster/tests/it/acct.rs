//! Accounting end to end: job records written as jobs move, read by sacct.

use crate::{cluster, secs};

#[test]
fn sacct_shows_finished_jobs_with_their_steps() {
    let c = cluster(1);
    let failed = c.submit(&["--wrap", "exit 3"]);
    let ok = c.submit(&["-J", "fine", "--wrap", "true"]);
    let long = c.submit(&["--wrap", "sleep 60"]);
    assert_eq!(c.wait_done(failed, secs(10)), "FAILED");
    assert_eq!(c.wait_done(ok, secs(10)), "COMPLETED");
    c.wait_state(long, "RUNNING", secs(10));
    c.ok("scancel", &[&long.to_string()]);
    assert_eq!(c.wait_done(long, secs(10)), "CANCELLED");
    let me = e2e::user_name();
    let uid = nix::unistd::getuid().as_raw();
    // Records reach the store asynchronously: wait for the last one.
    let out = c.wait_until("the cancelled job in sacct", secs(10), || {
        let o = c.run("sacct", &["-P", "-o", "JobID,JobName,State,ExitCode"]);
        o.stdout
            .contains(&format!("{long}.batch|batch|CANCELLED|0:15"))
            .then_some(o.stdout)
    });
    let expected = format!(
        "JobID|JobName|State|ExitCode\n\
         {failed}|wrap|FAILED|3:0\n{failed}.batch|batch|FAILED|3:0\n\
         {ok}|fine|COMPLETED|0:0\n{ok}.batch|batch|COMPLETED|0:0\n\
         {long}|wrap|CANCELLED by {uid}|0:0\n{long}.batch|batch|CANCELLED|0:15\n"
    );
    assert_eq!(out, expected, "user {me}");
    // Parsl's form: -X, no header, state%20, a job list.
    let x = c.ok(
        "sacct",
        &[
            "-X",
            "--noheader",
            "--format=jobid,state%20",
            "--job",
            &format!("{failed},{ok}"),
        ],
    );
    assert_eq!(
        x.stdout,
        format!(
            "{failed:<12} {:>20} \n{ok:<12} {:>20} \n",
            "FAILED", "COMPLETED"
        )
    );
}

#[test]
fn sacct_reports_what_the_batch_step_used() {
    let c = cluster(1);
    // dd holds a 64 MiB buffer and spends some CPU copying it.
    let id = c.submit(&[
        "--wrap",
        "dd if=/dev/zero of=/dev/null bs=64M count=4 2>/dev/null",
    ]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    let row = c.wait_until("the batch step's usage in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-j",
                &id.to_string(),
                "-n",
                "-P",
                "-o",
                "JobID,MaxRSS,TotalCPU",
            ],
        );
        o.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id}.batch|")) && !l.contains("||"))
            .map(str::to_string)
    });
    let fields: Vec<&str> = row.split('|').collect();
    // sacct reduces a size to the largest unit that divides it exactly
    // (`66560K` is `65M`), as Slurm does.
    let (digits, unit) = fields[1].split_at(fields[1].len() - 1);
    let scale: u64 = match unit {
        "K" => 1,
        "M" => 1024,
        "G" => 1024 * 1024,
        other => panic!("MaxRSS {} in an unknown unit {other}", fields[1]),
    };
    let rss_kib: u64 = digits.parse::<u64>().expect("MaxRSS in K, M or G") * scale;
    assert!(
        rss_kib >= 64 * 1024,
        "MaxRSS {} below the 64 MiB buffer",
        fields[1]
    );
    assert_ne!(fields[2], "00:00:00", "TotalCPU");
}

#[test]
fn prolog_contain_records_an_extern_step() {
    let c = crate::builder()
        .nodes(1)
        .conf_extra("PrologFlags=Contain\n")
        .start();
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    let out = c.wait_until("the ended extern step", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode",
                "-j",
                &id.to_string(),
            ],
        );
        o.stdout
            .contains(".extern|extern|COMPLETED")
            .then_some(o.stdout)
    });
    assert_eq!(
        out,
        format!(
            "{id}|wrap|COMPLETED|0:0\n{id}.batch|batch|COMPLETED|0:0\n\
             {id}.extern|extern|COMPLETED|0:0\n"
        )
    );
}

/// The extern step is a real process on every node of the job: a holder
/// (`sleep`) that sstat sees while the job runs, that ends with the job,
/// and whose usage sacct shows on the `.extern` line.
#[test]
fn the_extern_step_holds_every_node_and_is_measured() {
    extern_step("");
}

#[test]
fn the_extern_step_holder_runs_in_its_cgroup() {
    extern_step("JobAcctGatherType=jobacct_gather/cgroup\n");
}

/// The cgroup.procs of task `task` of job `id`'s extern step on `node` of
/// this cluster, where cgroup v1 is there. Only this cluster's: the node
/// daemon names its cgroup `<node>-<FNV-1a of its spool directory>`, and
/// other tests' clusters have a `node1` and a job 1 too.
fn extern_procs(c: &e2e::Cluster, node: &str, id: u32, task: u32) -> Option<std::path::PathBuf> {
    let spool = c.root().join("spool").join(node);
    let hash = spool
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    let p = std::path::Path::new("/sys/fs/cgroup/memory/muster")
        .join(format!("{node}-{:08x}", hash as u32))
        .join(format!("job_{id}/step_extern/task_{task}/cgroup.procs"));
    p.exists().then_some(p)
}

fn extern_step(gather: &str) {
    let c = crate::builder()
        .nodes(2)
        .conf_extra(&format!(
            "PrologFlags=Contain\nJobAcctGatherFrequency=1\n{gather}"
        ))
        .start();
    let v1 = std::path::Path::new("/sys/fs/cgroup/memory/cgroup.procs");
    let cgroups =
        gather.contains("cgroup") && std::fs::OpenOptions::new().write(true).open(v1).is_ok();
    let id = c.submit(&["-N2", "--wrap", "sleep 4"]);
    let job = id.to_string();
    c.wait_state(id, "RUNNING", secs(10));
    // One holder on each node, with its pid there.
    let extern_step = format!("{id}.extern");
    let rows = c.wait_until("the holders in sstat -i", secs(10), || {
        let o = c.run("sstat", &["-i", "-n", "-P", "-j", &extern_step]);
        (o.stdout.lines().count() == 2).then_some(o.stdout)
    });
    let mut pids = Vec::new();
    for (line, node) in rows.lines().zip(["node1", "node2"]) {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f[..2], [extern_step.as_str(), node], "{rows}");
        let pid: i32 = f[2].parse().expect("a pid");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            cmdline.starts_with(b"sleep\0"),
            "pid {pid} is the holder: {cmdline:?}"
        );
        if cgroups {
            // In the extern step's cgroup, as task N on the N-th node.
            let task = u32::from(node == "node2");
            let procs = extern_procs(&c, node, id, task).expect("the extern step's cgroup");
            let inside = std::fs::read_to_string(&procs).unwrap_or_default();
            assert!(
                inside.lines().any(|l| l.trim() == pid.to_string()),
                "{pid} not in {}: {inside:?}",
                procs.display()
            );
        }
        pids.push(pid);
    }
    // sstat -a lists it beside the batch step.
    let all = c.ok(
        "sstat",
        &["-a", "-n", "-P", "-o", "JobID,NTasks", "-j", &job],
    );
    assert_eq!(
        all.stdout,
        format!("{id}.batch|1\n{id}.extern|2\n"),
        "{all:?}"
    );
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    // The holders end with the job, and their usage is recorded.
    let row = c.wait_until("the extern step's usage in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode,NodeList,NTasks,MaxRSS,MaxRSSNode,TotalCPU",
                "-j",
                &job,
            ],
        );
        o.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{extern_step}|")) && !l.contains("||"))
            .map(str::to_string)
    });
    for pid in pids {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            !cmdline.starts_with(b"sleep\x00100000000"),
            "holder {pid} outlived its job"
        );
    }
    for (node, task) in [("node1", 0), ("node2", 1)] {
        assert_eq!(
            extern_procs(&c, node, id, task),
            None,
            "cgroup of {node} left"
        );
    }
    eprintln!("sacct (cgroups {cgroups}): {row}");
    let f: Vec<&str> = row.split('|').collect();
    assert_eq!(
        f[..6],
        [
            extern_step.as_str(),
            "extern",
            "COMPLETED",
            "0:0",
            "node[1-2]",
            "2"
        ],
        "{row}"
    );
    assert!(kib(f[6]) > 0, "MaxRSS {row}");
    assert!(f[7] == "node1" || f[7] == "node2", "MaxRSSNode {row}");
    assert!(!f[8].is_empty(), "TotalCPU {row}");
}

/// A sacct memory value (`204812K`, `200.01M`, `0.20G`, `0`) in KiB.
fn kib(text: &str) -> u64 {
    // Nothing sampled yet (a step caught as it starts) reads as a bare 0.
    if text == "0" {
        return 0;
    }
    let (num, unit) = text.split_at(text.len() - 1);
    let scale = match unit {
        "K" => 1.0,
        "M" => 1024.0,
        "G" => 1024.0 * 1024.0,
        _ => panic!("not a memory value: {text:?}"),
    };
    (num.parse::<f64>().expect("number") * scale) as u64
}

/// Runs a job whose batch script and whose srun step each hold 200 MiB for
/// three seconds under `conf` (JobAcctGather lines), with `flag` on sbatch
/// and srun, sampled every second, and checks what sacct reports for both
/// steps.
fn usage_of_a_200mb_job(gather: &str, flag: &str) {
    let c = crate::builder().nodes(1).conf_extra(gather).start();
    let hold = "/usr/bin/python3 -c 'b = b\"x\" * (200 << 20); import time; time.sleep(3)'";
    let script = format!("{hold}; srun -n1 {flag} {hold}");
    let mut args: Vec<&str> = flag.split_whitespace().collect();
    args.extend(["--wrap", &script]);
    let id = c.submit(&args);
    // With cgroup v1 writable here, the batch step's task runs in its cgroup.
    let v1 = std::path::Path::new("/sys/fs/cgroup/memory/cgroup.procs");
    let cgroups =
        gather.contains("cgroup") && std::fs::OpenOptions::new().write(true).open(v1).is_ok();
    let job_dirs = || -> Vec<std::path::PathBuf> {
        let Ok(daemons) = std::fs::read_dir("/sys/fs/cgroup/memory/muster") else {
            return Vec::new();
        };
        daemons
            .flatten()
            .filter(|d| d.file_name().to_string_lossy().starts_with("node1-"))
            .map(|d| d.path().join(format!("job_{id}")))
            .filter(|p| p.exists())
            .collect()
    };
    let job_cgroup = cgroups.then(|| {
        c.wait_until("the batch task's cgroup", secs(20), || {
            job_dirs().into_iter().find(|d| {
                let procs = d.join("step_batch/task_0/cgroup.procs");
                std::fs::read_to_string(procs).is_ok_and(|t| !t.trim().is_empty())
            })
        })
    });
    assert_eq!(c.wait_done(id, secs(60)), "COMPLETED");
    if let Some(dir) = job_cgroup {
        assert!(!dir.exists(), "{} left", dir.display());
    }
    let want = [format!("{id}.batch|"), format!("{id}.0|")];
    let rows = c.wait_until("both steps' usage in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-j",
                &id.to_string(),
                "-n",
                "-P",
                "--format=JobID,MaxRSS,AveRSS,MaxVMSize,TotalCPU,MaxRSSNode,MaxRSSTask,AveCPU",
            ],
        );
        let rows: Vec<String> = want
            .iter()
            .filter_map(|w| o.stdout.lines().find(|l| l.starts_with(w.as_str())))
            .map(str::to_string)
            .collect();
        (rows.len() == 2 && rows.iter().all(|r| !r.contains("||"))).then_some(rows)
    });
    for row in rows {
        eprintln!("{gather:?} {flag:?}: {row}");
        let f: Vec<&str> = row.split('|').collect();
        let (max_rss, ave_rss, vmsize) = (kib(f[1]), kib(f[2]), kib(f[3]));
        assert!(max_rss >= 200 * 1024, "MaxRSS below 200 MiB: {row}");
        assert!(ave_rss > 0 && ave_rss <= max_rss, "AveRSS: {row}");
        assert!(vmsize >= 200 * 1024, "MaxVMSize below 200 MiB: {row}");
        assert_ne!(f[4], "00:00.000", "TotalCPU: {row}");
        assert_eq!(
            (f[5], f[6]),
            ("node1", "0"),
            "MaxRSSNode, MaxRSSTask: {row}"
        );
        assert!(!f[7].is_empty(), "AveCPU: {row}");
    }
}

#[test]
fn usage_sampled_from_proc_at_the_jobs_acctg_freq() {
    // JobAcctGatherFrequency is Slurm's default (30 s): --acctg-freq=1
    // makes the samples that see the 200 MiB.
    usage_of_a_200mb_job("", "--acctg-freq=task=1");
}

#[test]
fn usage_sampled_from_cgroups() {
    usage_of_a_200mb_job(
        "JobAcctGatherType=jobacct_gather/cgroup\nJobAcctGatherFrequency=1\n",
        "",
    );
}

#[test]
fn sstat_reads_the_usage_of_running_steps_live() {
    let c = crate::builder()
        .nodes(1)
        .conf_extra("JobAcctGatherFrequency=1\n")
        .start();
    let none = c.run("sstat", &[]);
    assert_eq!(
        (none.code, none.stderr.as_str()),
        (1, "sstat: error: You didn't give me any jobs to stat.\n")
    );
    let unknown = c.run("sstat", &["-j", "999999"]);
    assert_eq!(
        (unknown.code, unknown.stderr.as_str()),
        (0, "sstat: error: couldn't get steps for job 999999\n")
    );
    // The batch step holds 100 MiB and its srun step 200 MiB until they
    // are cancelled.
    let hold = |mb: u32| {
        format!("/usr/bin/python3 -c 'b = b\"x\" * ({mb} << 20); import time; time.sleep(300)'")
    };
    let script = format!("srun -n1 {} & {}; wait", hold(200), hold(100));
    let id = c.submit(&["--wrap", &script]);
    c.wait_state(id, "RUNNING", secs(20));
    let job = id.to_string();
    // Without a step, sstat shows the lowest numbered one.
    let row = c.wait_until("step 0's 200 MiB in sstat", secs(30), || {
        let o = c.run(
            "sstat",
            &[
                "-j",
                &job,
                "-n",
                "-P",
                "-o",
                "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,NTasks,AveCPU",
            ],
        );
        assert_eq!(o.code, 0, "{o:?}");
        let row = o.stdout.lines().next()?.to_string();
        let f: Vec<&str> = row.split('|').collect();
        (f.len() == 6 && !f[1].is_empty() && kib(f[1]) >= 200 * 1024).then_some(row)
    });
    eprintln!("sstat: {row}");
    let f: Vec<&str> = row.split('|').collect();
    assert_eq!(
        (f[0], f[2], f[3], f[4]),
        (format!("{id}.0").as_str(), "node1", "0", "1"),
        "{row}"
    );
    assert!(!f[5].is_empty(), "AveCPU: {row}");
    // -a: every running step, the batch step with its 100 MiB first. The
    // batch step's sampler keeps its own second: step 0's 200 MiB may be
    // seen before the batch step's next sample sees its 100 MiB.
    let all = c.wait_until("the batch step's 100 MiB in sstat -a", secs(30), || {
        let all = c.ok(
            "sstat",
            &["-a", "-j", &job, "-n", "-P", "-o", "JobID,MaxRSS"],
        );
        let rows: Vec<&str> = all.stdout.lines().collect();
        assert_eq!(rows.len(), 2, "{all:?}");
        let batch: Vec<&str> = rows[0].split('|').collect();
        assert_eq!(batch[0], format!("{id}.batch"), "{all:?}");
        (!batch[1].is_empty() && kib(batch[1]) >= 100 * 1024).then_some(all)
    });
    let rows: Vec<&str> = all.stdout.lines().collect();
    assert!(rows[1].starts_with(&format!("{id}.0|")), "{all:?}");
    // The default columns, and -i's pids.
    let wide = c.ok("sstat", &["-j", &format!("{id}.batch")]);
    let lines: Vec<&str> = wide.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{wide:?}");
    assert!(
        lines[0].starts_with("JobID         MaxVMSize  MaxVMSizeNode"),
        "{wide:?}"
    );
    assert!(lines[2].starts_with(&format!("{id}.batch")), "{wide:?}");
    let pids = c.ok("sstat", &["-i", "-P", "-n", "-j", &format!("{id}.batch")]);
    let p: Vec<&str> = pids.stdout.trim_end().split('|').collect();
    assert_eq!(
        p[..2],
        [format!("{id}.batch").as_str(), "node1"],
        "{pids:?}"
    );
    assert!(p[2].parse::<u32>().is_ok(), "{pids:?}");
    // Over: nothing runs any more.
    c.ok("scancel", &[&job]);
    c.wait_done(id, secs(30));
    let over = c.run("sstat", &["-j", &job]);
    assert_eq!(over.code, 0, "{over:?}");
    let no_steps = format!("sstat: error: no steps running for job {id}\n");
    let gone = format!("sstat: error: couldn't get steps for job {id}\n");
    assert!(over.stderr == no_steps || over.stderr == gone, "{over:?}");
    // A numbered step that is over: the header alone, no error (Slurm
    // reports it only at debug level).
    let step_over = c.run("sstat", &["-j", &format!("{id}.0"), "-n"]);
    assert_eq!(
        (
            step_over.code,
            step_over.stdout.as_str(),
            step_over.stderr.as_str()
        ),
        (0, "", ""),
        "{step_over:?}"
    );
}

/// The holders' pids of `id`'s extern step, node by node, from `sstat -i`.
fn holder_pids(c: &e2e::Cluster, id: u32) -> Vec<i32> {
    let step = format!("{id}.extern");
    let rows = c.wait_until("the holders in sstat -i", secs(20), || {
        let o = c.run("sstat", &["-i", "-n", "-P", "-j", &step]);
        (o.stdout.lines().count() == 2).then_some(o.stdout)
    });
    rows.lines()
        .zip(["node1", "node2"])
        .map(|(line, node)| {
            let f: Vec<&str> = line.split('|').collect();
            assert_eq!(f[..2], [step.as_str(), node], "{rows}");
            f[2].parse().expect("a pid")
        })
        .collect()
}

fn is_holder(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .starts_with(b"sleep\x00100000000")
}

/// Node daemons SIGKILLed while a job runs leave its extern step's holders
/// running; restarted, they re-attach to them (as to the batch script),
/// sstat sees them again, and they still end with the job and report the
/// extern step's end.
#[test]
fn restarted_node_daemons_re_attach_to_the_extern_holders() {
    let mut c = crate::builder()
        .nodes(2)
        .conf_extra("PrologFlags=Contain\nJobAcctGatherFrequency=1\n")
        .start();
    let id = c.submit(&["-N2", "--wrap", "while [ ! -e go ]; do sleep 0.1; done"]);
    c.wait_state(id, "RUNNING", secs(20));
    let pids = holder_pids(&c, id);
    c.kill_node("node1");
    c.kill_node("node2");
    for pid in &pids {
        assert!(is_holder(*pid), "holder {pid} ended with its daemon");
    }
    c.start_node_with("node1", &[]);
    c.start_node_with("node2", &[]);
    for node in ["node1", "node2"] {
        c.wait_until(&format!("{node} to re-attach"), secs(20), || {
            c.log(&format!("noded-{node}"))
                .contains("re-attached to the extern step's holder")
                .then_some(())
        });
    }
    assert_eq!(holder_pids(&c, id), pids, "sstat sees the same holders");
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED");
    c.wait_until("the holders to end", secs(20), || {
        pids.iter().all(|p| !is_holder(*p)).then_some(())
    });
    let job = id.to_string();
    let row = c.wait_until("the extern step's end in sacct", secs(20), || {
        let o = c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode,NodeList,NTasks,MaxRSS",
                "-j",
                &job,
            ],
        );
        o.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id}.extern|")) && !l.ends_with('|'))
            .map(str::to_string)
    });
    let f: Vec<&str> = row.split('|').collect();
    assert_eq!(
        f[..6],
        [
            format!("{id}.extern").as_str(),
            "extern",
            "COMPLETED",
            "0:0",
            "node[1-2]",
            "2"
        ],
        "{row}"
    );
    assert!(kib(f[6]) > 0, "MaxRSS {row}");
}
