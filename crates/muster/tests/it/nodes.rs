//! Node states: drain and resume, and nodes that have less than slurm.conf says.

use crate::{builder, cluster, secs};

#[test]
fn drain_a_busy_node_then_resume_it() {
    let c = cluster(2);
    let id = c.submit(&["-c", "2", "-w", "node1", "--wrap", "sleep 3"]);
    c.wait_state(id, "RUNNING", secs(10));
    let out = c.run(
        "scontrol",
        &["update", "NodeName=node1", "State=DRAIN", "Reason=maint"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", ""),
        "{out}"
    );
    assert_eq!(c.node_state("node1"), "drng");
    let other = c.submit(&["--wrap", "hostname; echo $SLURMD_NODENAME > where.txt"]);
    assert_eq!(c.wait_done(other, secs(10)), "COMPLETED");
    assert_eq!(c.job_field(other, "NodeList"), "node2");
    assert_eq!(c.read("where.txt"), "node2\n");
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    c.wait_node_state("node1", "drain", secs(5));

    let r = c.ok("sinfo", &["-R"]).stdout;
    let lines: Vec<&str> = r.lines().collect();
    assert_eq!(lines.len(), 2, "{r}");
    assert_eq!(
        lines[0],
        "REASON               USER      TIMESTAMP           NODELIST"
    );
    let user = e2e::user_name();
    let words: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(words.len(), 4, "{r}");
    assert_eq!(
        (words[0], words[1], words[3]),
        ("maint", user.as_str(), "node1"),
        "{r}"
    );
    assert_eq!(words[2].len(), "2026-12-02T10:24:13".len(), "{r}");
    assert_eq!(c.node_field("node1", "Reason"), "maint");
    let show = c.run("scontrol", &["show", "node", "node1"]).stdout;
    assert!(show.contains(&format!("Reason=maint [{user}@")), "{show}");
    assert!(show.contains("State=IDLE+DRAIN "), "{show}");

    let out = c.run("scontrol", &["update", "NodeName=node1", "State=RESUME"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(c.node_state("node1"), "idle");
    assert_eq!(c.ok("sinfo", &["-h", "-R"]).stdout, "");
}

#[test]
fn drain_needs_a_reason() {
    let c = cluster(1);
    let out = c.run("scontrol", &["update", "NodeName=node1", "State=DRAIN"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "You must specify a reason when DOWNING or DRAINING a node. Request denied\n"
    );
    assert_eq!(c.node_state("node1"), "idle");
}

#[test]
fn a_node_with_fewer_cpus_than_configured_is_drained() {
    let cpus = e2e::host_cpus() + 8;
    let c = builder()
        .nodes(1)
        .config_overrides(false)
        .node_line_override(1, &format!("CPUs={cpus} RealMemory=100"))
        .start();
    c.wait_node_state("node1", "drain", secs(5));
    let reason = "Low socket*core*thread count, Low CPUs";
    let r = c.ok("sinfo", &["-h", "-R", "-o", "%E|%u|%N"]).stdout;
    let user = e2e::user_name();
    // The node daemon's report drains it, in SlurmUser's name.
    assert_eq!(r, format!("{reason}|{user}|node1\n"));
    let show = c.ok("scontrol", &["show", "node", "node1"]).stdout;
    assert!(
        show.contains(&format!("Reason={reason} [{user}@")),
        "{show}"
    );
    assert!(show.contains(&format!("CPUTot={cpus} ")), "{show}");
    // Jobs do not go there.
    let out = c.ok("sbatch", &["--parsable", "--wrap", "true"]);
    let id: u32 = out.stdout.trim().parse().expect("an id");
    std::thread::sleep(secs(1));
    assert_eq!(c.job_state(id), "PENDING");
}

#[test]
fn a_node_with_less_memory_than_configured_is_drained() {
    let have = e2e::host_memory_mb();
    let want = have * 2 + 1024;
    let c = builder()
        .nodes(1)
        .config_overrides(false)
        .node_line_override(1, &format!("CPUs=1 RealMemory={want}"))
        .start();
    c.wait_node_state("node1", "drain", secs(5));
    let user = e2e::user_name();
    let show = c.ok("scontrol", &["show", "node", "node1"]).stdout;
    let line = show
        .lines()
        .find(|l| l.trim_start().starts_with("Reason="))
        .unwrap_or_else(|| panic!("no Reason line: {show}"))
        .trim()
        .to_string();
    assert!(
        line.starts_with("Reason=Low RealMemory (reported:")
            && line.contains(&format!(" < 100.00% of configured:{want}) [{user}@")),
        "{line}"
    );
}

#[test]
fn a_restarted_node_daemon_registers_again() {
    let mut c = cluster(2);
    c.kill_node("node1");
    c.start_node_with("node1", &[]);
    // A job sent before the new daemon listens would find the node not
    // responding and take it DOWN (ReturnToService=0), so wait for it.
    c.wait_until("node1 to register again", secs(10), || {
        (c.log("ctld").matches("node node1 registered").count() >= 2).then_some(())
    });
    assert_eq!(c.node_state("node1"), "idle");
    let id = c.submit(&["-w", "node1", "--wrap", "echo $SLURMD_NODENAME"]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(c.read(&format!("slurm-{id}.out")), "node1\n");
}

#[test]
fn a_launch_to_a_dead_node_daemon_takes_the_node_down_and_requeues() {
    let mut c = cluster(2);
    c.kill_node("node1");
    let id = c.submit(&["-w", "node1", "--wrap", "true"]);
    c.wait_until("node1 to be DOWN", secs(10), || {
        c.node_state("node1").starts_with("down").then_some(())
    });
    assert_eq!(c.node_field("node1", "Reason"), "Not");
    let show = c.ok("scontrol", &["show", "node", "node1"]).stdout;
    assert!(show.contains("Reason=Not responding ["), "{show}");
    assert_eq!(c.job_state(id), "PENDING");
    assert_eq!(c.job_field(id, "Restarts"), "1");
    // The daemon comes back; the node stays DOWN until an admin resumes it.
    c.start_node_with("node1", &[]);
    c.wait_until("node1 to register again", secs(10), || {
        (c.log("ctld").matches("node node1 registered").count() >= 2).then_some(())
    });
    assert_eq!(c.node_state("node1"), "down");
    c.ok("scontrol", &["update", "NodeName=node1", "State=RESUME"]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(c.job_field(id, "NodeList"), "node1");
}

#[test]
fn a_silent_node_goes_down_its_jobs_requeue_and_it_returns_to_service() {
    use nix::sys::signal::Signal;
    let c = builder()
        .nodes(2)
        .conf_extra("SlurmdTimeout=3\nReturnToService=1\n")
        .start();
    // Both fit on node1, the first node; node2 stays free for the requeue.
    let id = c.submit(&[
        "--requeue",
        "--wrap",
        "echo run $SLURM_RESTART_COUNT $SLURMD_NODENAME >> runs.txt; sleep 300",
    ]);
    let plain = c.submit(&["--no-requeue", "--wrap", "sleep 300"]);
    c.wait_state(id, "RUNNING", secs(10));
    c.wait_state(plain, "RUNNING", secs(10));
    assert_eq!(c.job_field(id, "NodeList"), "node1");
    assert_eq!(c.job_field(plain, "NodeList"), "node1");
    c.signal_node("node1", Signal::SIGSTOP);
    c.wait_until("node1 to be DOWN", secs(15), || {
        c.node_state("node1").starts_with("down").then_some(())
    });
    assert_eq!(c.node_state("node1"), "down*");
    let r = c.ok("sinfo", &["-R", "-h", "-o", "%E|%N"]).stdout;
    assert_eq!(r, "Not responding|node1\n");
    assert_eq!(c.wait_done(plain, secs(5)), "NODE_FAIL");
    // The requeued job runs again elsewhere, same id, restart count 1.
    c.wait_until("the job to run again", secs(10), || {
        c.read("runs.txt").contains("run 1 node2").then_some(())
    });
    assert_eq!(c.job_field(id, "Restarts"), "1");
    c.signal_node("node1", Signal::SIGCONT);
    // ReturnToService=1: a node that was DOWN only for not responding comes back.
    c.wait_until("node1 to return to service", secs(10), || {
        (c.node_state("node1") == "idle").then_some(())
    });
    c.ok("scancel", &[&id.to_string()]);
}

#[test]
fn jobs_survive_a_node_daemon_crash_and_their_end_is_reported() {
    let mut c = cluster(1);
    let long = c.submit(&["--wrap", "echo up > long.started; sleep 3; exit 4"]);
    let quick = c.submit(&["--wrap", "echo up > quick.started; sleep 1; exit 0"]);
    // RUNNING means allocated; wait until both scripts really run.
    c.wait_file("long.started", secs(10));
    c.wait_file("quick.started", secs(10));
    // And until the daemon has answered both launches: a daemon that dies
    // with a launch unanswered is a failed launch (the node goes DOWN).
    for id in [long, quick] {
        let line = format!("launched job {id} on node1");
        c.wait_until(&line, secs(10), || {
            c.log("ctld").contains(&line).then_some(())
        });
    }
    c.kill_node("node1");
    // The quick job ends while no daemon watches it; the long one outlives
    // the restart.
    std::thread::sleep(secs(2));
    assert_eq!(c.job_state(long), "RUNNING");
    c.start_node_with("node1", &[]);
    assert_eq!(c.wait_done(quick, secs(15)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.job_field(quick, "ExitCode"), "0:0");
    assert_eq!(c.wait_done(long, secs(15)), "FAILED", "{}", c.logs());
    assert_eq!(c.job_field(long, "ExitCode"), "4:0");
    assert_eq!(c.node_state("node1"), "idle");
}

#[test]
fn launches_go_on_over_a_new_connection_after_a_node_daemon_restart() {
    let mut c = cluster(1);
    // The controller opens its kept connection to node1 with the first
    // launch and sends the second on it.
    for i in 0..2 {
        let id = c.submit(&["--wrap", &format!("echo before{i}")]);
        assert_eq!(c.wait_done(id, secs(10)), "COMPLETED", "{}", c.logs());
    }
    let running = c.submit(&["--wrap", "echo up > running.started; sleep 2; exit 3"]);
    c.wait_file("running.started", secs(10));
    let line = format!("launched job {running} on node1");
    c.wait_until(&line, secs(10), || {
        c.log("ctld").contains(&line).then_some(())
    });
    // The daemon goes while that connection is open; the new one re-attaches
    // to the running job and reports its end.
    c.kill_node("node1");
    c.start_node_with("node1", &[]);
    c.wait_until("node1 to register again", secs(10), || {
        (c.log("ctld").matches("node node1 registered").count() >= 2).then_some(())
    });
    assert_eq!(c.wait_done(running, secs(15)), "FAILED", "{}", c.logs());
    assert_eq!(c.job_field(running, "ExitCode"), "3:0");
    // The next launches find the kept connection closed and open another.
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(c.submit(&["--wrap", &format!("echo after{i}")]));
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(c.wait_done(*id, secs(10)), "COMPLETED", "{}", c.logs());
        assert_eq!(c.read(&format!("slurm-{id}.out")), format!("after{i}\n"));
    }
    assert!(
        c.log("ctld").contains("kept connection to"),
        "{}",
        c.log("ctld")
    );
    assert_eq!(c.node_state("node1"), "idle");
}

/// The pids of the processes whose command line holds `mark`.
fn processes_marked(mark: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
        })
        .collect()
}

/// A launch still in flight when the node daemon is told to stop is
/// killed once its process exists, not left running without a daemon.
/// The launch is held in flight by the job's output: a FIFO that nobody
/// reads until the daemon has its SIGTERM (the supervisor opens it before
/// it answers the launch).
#[test]
fn a_job_still_starting_when_the_node_daemon_stops_is_killed() {
    use nix::sys::signal::Signal;
    use std::os::unix::fs::OpenOptionsExt;
    let mut c = cluster(1);
    let fifo = c.work().join("out.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    let mark = format!("stoprace{}", std::process::id());
    let script = format!("exec bash -c 'exec -a {mark} sleep 300'");
    let id = c.submit(&["-o", fifo.to_str().expect("utf-8 path"), "--wrap", &script]);
    c.wait_state(id, "RUNNING", secs(10));
    // The launch reaches the daemon and waits there on the FIFO.
    std::thread::sleep(secs(1));
    c.signal_node("node1", Signal::SIGTERM);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Opened without waiting for a writer (there is none if the launch
    // was refused), which lets the supervisor's open go on.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo);
    assert!(reader.is_ok(), "open {}: {reader:?}", fifo.display());
    let exited = c.wait_node_exit("node1", secs(15));
    // Give a process the daemon left behind the time to show.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = processes_marked(&mark);
    for pid in &left {
        // Ours: the job this test started.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
    }
    drop(reader);
    assert!(exited.is_some(), "node daemon still running\n{}", c.logs());
    assert!(
        left.is_empty(),
        "job processes left running: {left:?}\n{}",
        c.logs()
    );
    assert!(
        c.log("noded-node1").contains("killing job at shutdown"),
        "{}",
        c.logs()
    );
}

/// srun's steps end with the jobs when the node daemons stop after the
/// controller: their supervisors run in sessions of their own, which
/// killing the batch jobs' process groups does not reach (they were left
/// running after `muster down`, both under a batch job and under salloc).
#[test]
fn steps_end_when_the_node_daemons_stop() {
    use nix::sys::signal::Signal;
    let mut c = cluster(2);
    let mark = format!("stepstop{}", std::process::id());
    let script = format!("srun bash -c 'exec -a {mark} sleep 300'");
    let id = c.submit(&["-N2", "-n2", "-o", "/dev/null", "--wrap", &script]);
    c.wait_state(id, "RUNNING", secs(10));
    let start = std::time::Instant::now();
    while processes_named(&mark).len() < 2 && start.elapsed() < secs(15) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(processes_named(&mark).len(), 2, "{}", c.logs());
    // As `muster down`: the controller goes first, so no termination of
    // the job comes from it (with it up, its end of the job would reach
    // the steps).
    c.kill_ctld();
    for node in ["node1", "node2"] {
        c.signal_node(node, Signal::SIGTERM);
    }
    let exited: Vec<_> = ["node1", "node2"]
        .iter()
        .map(|node| c.wait_node_exit(node, secs(15)))
        .collect();
    // Give a process the daemons left behind the time to show.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = processes_named(&mark);
    for pid in &left {
        // Ours: the step tasks this test started.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(
        exited.iter().all(Option::is_some),
        "node daemon still running\n{}",
        c.logs()
    );
    assert!(
        left.is_empty(),
        "step tasks left running: {left:?}\n{}",
        c.logs()
    );
    assert!(
        c.log("noded-node2").contains("ending steps at shutdown"),
        "{}",
        c.logs()
    );
}

/// The pids of the processes whose name (`argv[0]`) is `name`.
fn processes_named(name: &str) -> Vec<i32> {
    processes_marked(name)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).next() == Some(name.as_bytes()))
        })
        .collect()
}
