//! `scontrol reconfigure` (and SIGHUP), `scontrol update/create/delete
//! partition` and `scontrol shutdown` end to end: a partition added to
//! slurm.conf appears and takes jobs, a broken file is refused with its
//! `file:line` error and the configuration in force stays, a running job
//! survives both, and what needs a restart is told; partitions changed at
//! runtime last until a restart, as Slurm's without `slurmctld -R`.

use crate::{builder, cluster, secs};

/// A job that runs until the file `name` appears in the work directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {name} ]; do sleep 0.1; done")
}

fn append(c: &e2e::Cluster, text: &str) {
    let mut conf = std::fs::read_to_string(c.conf()).unwrap();
    conf.push_str(text);
    std::fs::write(c.conf(), conf).unwrap();
}

#[test]
fn reconfigure_adds_a_partition_refuses_a_broken_file_and_keeps_jobs() {
    let mut c = cluster(2);
    let running = c.submit(&["-w", "node1", "--wrap", &gate("go")]);
    c.wait_state(running, "RUNNING", secs(10));
    assert_eq!(c.run("scontrol", &["show", "partition", "extra"]).code, 1);

    // A new partition and a changed scheduler setting: applied.
    append(
        &c,
        "PartitionName=extra Nodes=node2 MaxTime=10 State=UP\n\
         PartitionName=spare Nodes=node1\n\
         SchedulerParameters=bf_window=60\n",
    );
    let out = c.ok("scontrol", &["reconfigure"]);
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(out.stderr, "", "{out}");
    let part = c.ok("scontrol", &["show", "partition", "extra"]);
    assert!(part.stdout.contains("PartitionName=extra"), "{part}");
    assert!(part.stdout.contains("MaxTime=00:10:00"), "{part}");
    let config = c.ok("scontrol", &["show", "config"]);
    assert!(
        config
            .stdout
            .contains("SchedulerParameters     = bf_window=60"),
        "{config}"
    );
    let job = c.submit(&["-p", "extra", "--wrap", "true"]);
    assert_eq!(c.wait_done(job, secs(10)), "COMPLETED");
    assert_eq!(c.job_state(running), "RUNNING");

    // A broken file: refused with its file:line error; nothing changes.
    // scontrol reads slurm.conf too, so the command run with the broken
    // file says so itself; one run with a good copy (a login host's) asks
    // the controller, which reads the broken file and refuses it.
    let good = std::fs::read_to_string(c.conf()).unwrap();
    let copy = c.write("login-slurm.conf", &good);
    append(&c, "PartitionName=bad Nodes=node1 MaxTime=soon\n");
    let line = good.lines().count() + 1;
    let want = format!(
        "slurm_reconfigure error: {}:{line}: invalid value \"soon\" for MaxTime",
        c.conf().display()
    );
    for env in [vec![], vec![("SLURM_CONF", copy.to_str().unwrap())]] {
        let out = c.run_env("scontrol", &["reconfigure"], &env);
        assert_eq!(out.code, 1, "{out}");
        assert!(out.stderr.starts_with(&want), "{out}");
        assert_eq!(out.stderr.lines().count(), 1, "{out}");
    }
    assert!(c
        .log("ctld")
        .contains("reconfigure refused, the configuration in force stays"));
    std::fs::write(c.conf(), &good).unwrap();
    assert_eq!(c.run("scontrol", &["show", "partition", "bad"]).code, 1);
    assert_eq!(c.run("scontrol", &["show", "partition", "extra"]).code, 0);
    assert_eq!(c.job_state(running), "RUNNING");

    // A change that needs a restart: told, not applied; SIGHUP reads the
    // files as `scontrol reconfigure` does.
    std::fs::write(c.conf(), format!("{good}MessageTimeout=20\n")).unwrap();
    let out = c.ok("scontrol", &["reconfigure"]);
    assert_eq!(
        out.stderr,
        "scontrol: warning: not applied, needs a restart of the controller: \
         MessageTimeout: 10 sec -> 20 sec\n",
        "{out}"
    );
    let config = c.ok("scontrol", &["show", "config"]);
    assert!(
        config.stdout.contains("MessageTimeout          = 10 sec"),
        "{config}"
    );

    // A partition removed from the file while no job uses it: gone.
    std::fs::write(
        c.conf(),
        good.replace("PartitionName=spare Nodes=node1\n", ""),
    )
    .unwrap();
    let out = c.ok("scontrol", &["reconfigure"]);
    assert_eq!(out.stderr, "", "{out}");
    assert_eq!(c.run("scontrol", &["show", "partition", "spare"]).code, 1);
    // Signalled as slurmctld is: SIGHUP reads the files too.
    append(&c, "PartitionName=hup Nodes=node1\n");
    c.signal_ctld(nix::sys::signal::Signal::SIGHUP);
    c.wait_until("SIGHUP adds partition hup", secs(10), || {
        (c.run("scontrol", &["show", "partition", "hup"]).code == 0).then_some(())
    });

    // The running job survived every reconfigure, and a restart after them.
    assert_eq!(c.job_state(running), "RUNNING");
    c.restart_ctld();
    assert_eq!(c.job_state(running), "RUNNING");
    c.write("go", "");
    assert_eq!(c.wait_done(running, secs(10)), "COMPLETED");
}

#[test]
fn partitions_change_at_runtime_until_a_restart() {
    let mut c = cluster(2);
    // create, then a job in it.
    let out = c.ok(
        "scontrol",
        &[
            "create",
            "PartitionName=rt",
            "Nodes=node2",
            "MaxTime=5",
            "State=UP",
        ],
    );
    assert_eq!(out.stdout, "");
    let part = c.ok("scontrol", &["show", "partition", "rt"]);
    assert!(part.stdout.contains("MaxTime=00:05:00"), "{part}");
    assert!(part.stdout.contains("Nodes=node2"), "{part}");
    let job = c.submit(&["-p", "rt", "--wrap", &gate("go")]);
    c.wait_state(job, "RUNNING", secs(10));

    // update: state, limits, nodes.
    c.ok(
        "scontrol",
        &[
            "update",
            "PartitionName=rt",
            "State=DOWN",
            "MaxTime=10",
            "Nodes=node[1-2]",
        ],
    );
    let part = c.ok("scontrol", &["show", "partition", "rt"]);
    assert!(part.stdout.contains("State=DOWN"), "{part}");
    assert!(part.stdout.contains("MaxTime=00:10:00"), "{part}");
    assert!(part.stdout.contains("Nodes=node[1-2]"), "{part}");
    // A DOWN partition takes jobs that wait.
    let waits = c.submit(&["-p", "rt", "--wrap", "true"]);
    c.wait_until("the job waits in a DOWN partition", secs(10), || {
        (c.squeue_field(waits, "%T %r") == "PENDING PartitionDown").then_some(())
    });
    c.ok("scontrol", &["update", "PartitionName=rt", "State=UP"]);
    assert_eq!(c.wait_done(waits, secs(10)), "COMPLETED");

    // Slurm's messages.
    let out = c.run("scontrol", &["update", "PartitionName=rt", "State=bogus"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Invalid input: State=bogus\nAcceptable State values are UP, DOWN, DRAIN and INACTIVE\n"
    );
    let out = c.run("scontrol", &["update", "PartitionName=nosuch", "State=UP"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "slurm_update error: Invalid partition name specified\n"
    );
    let out = c.run("scontrol", &["create", "PartitionName=rt", "Nodes=node1"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Error creating the partition: Invalid partition name specified\n"
    );
    let out = c.run("scontrol", &["delete", "PartitionName=rt"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "delete_partition PartitionName=rt: Partition is in use\n"
    );
    let out = c.run("scontrol", &["delete", "PartitionName=nosuch"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "delete_partition PartitionName=nosuch: Invalid partition name specified\n"
    );
    // A partition no job uses is deleted.
    c.ok(
        "scontrol",
        &["create", "partition", "PartitionName=empty", "Nodes=node1"],
    );
    assert_eq!(c.run("scontrol", &["show", "partition", "empty"]).code, 0);
    c.ok("scontrol", &["delete", "partition", "empty"]);
    assert_eq!(c.run("scontrol", &["show", "partition", "empty"]).code, 1);

    // A restart takes slurm.conf's partitions again (slurmctld without
    // -R); the created partition stays while its jobs are held.
    c.ok("scontrol", &["update", "PartitionName=debug", "MaxTime=30"]);
    c.ok("scontrol", &["shutdown", "slurmctld"]);
    assert!(c.wait_ctld_exit(secs(20)).is_some_and(|s| s.success()));
    c.restart_ctld_with(&[]);
    let debug = c.ok("scontrol", &["show", "partition", "debug"]);
    assert!(debug.stdout.contains("MaxTime=UNLIMITED"), "{debug}");
    let part = c.ok("scontrol", &["show", "partition", "rt"]);
    assert!(part.stdout.contains("PartitionName=rt"), "{part}");
    assert_eq!(c.job_state(job), "RUNNING");

    // With -R, the runtime changes come back.
    c.ok("scontrol", &["update", "PartitionName=debug", "MaxTime=30"]);
    c.ok("scontrol", &["shutdown", "slurmctld"]);
    assert!(c.wait_ctld_exit(secs(20)).is_some_and(|s| s.success()));
    c.restart_ctld_with(&["-R"]);
    let debug = c.ok("scontrol", &["show", "partition", "debug"]);
    assert!(debug.stdout.contains("MaxTime=00:30:00"), "{debug}");
    // `shutdown slurmctld` left the node daemons running: the job too.
    assert_eq!(c.job_state(job), "RUNNING");
    c.write("go", "");
    assert_eq!(c.wait_done(job, secs(10)), "COMPLETED");
}

#[test]
fn partition_access_keys_refuse_submissions_with_slurms_messages() {
    let c = builder()
        .nodes(1)
        .conf_tail(
            "PartitionName=acl Nodes=node1 AllowQos=high DenyAccounts=bad\n\
             PartitionName=noroot Nodes=node1 DisableRootJobs=YES",
        )
        .start();
    let refused = |args: &[&str], why: &str| {
        let out = c.run("sbatch", args);
        assert_eq!(out.code, 1, "{out}");
        assert_eq!(
            out.stderr,
            format!("sbatch: error: Batch job submission failed: {why}\n"),
            "{args:?}"
        );
    };
    refused(
        &["-p", "acl", "--wrap", "true"],
        "Invalid qos specification",
    );
    refused(
        &["-p", "acl", "--qos=high", "-A", "bad", "--wrap", "true"],
        "Invalid account or account/partition combination specified",
    );
    // The tests run as root: DisableRootJobs refuses them.
    refused(
        &["-p", "noroot", "--wrap", "true"],
        "Access/permission denied",
    );
    let ok = c.submit(&["-p", "acl", "--qos=high", "--wrap", "true"]);
    assert_eq!(c.wait_done(ok, secs(10)), "COMPLETED");
    let part = c.ok("scontrol", &["show", "partition", "acl"]);
    assert!(
        part.stdout
            .contains("AllowGroups=ALL DenyAccounts=bad AllowQos=high"),
        "{part}"
    );
    let part = c.ok("scontrol", &["show", "partition", "noroot"]);
    assert!(part.stdout.contains(" DisableRootJobs=YES "), "{part}");
    // Changed at runtime: the next submission is judged by the new keys.
    c.ok("scontrol", &["update", "PartitionName=acl", "AllowQos=ALL"]);
    let ok = c.submit(&["-p", "acl", "--wrap", "true"]);
    assert_eq!(c.wait_done(ok, secs(10)), "COMPLETED");
    // What muster does not implement is refused, not ignored.
    let out = c.run(
        "scontrol",
        &["update", "PartitionName=acl", "ExclusiveUser=YES"],
    );
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Update of this parameter is not supported: ExclusiveUser=YES\nRequest aborted\n"
    );
    let text = std::fs::read_to_string(c.conf()).unwrap();
    let bad = c.write(
        "exclusive.conf",
        &format!("{text}PartitionName=x Nodes=node1 ExclusiveUser=YES\n"),
    );
    let out = c.run("check-config", &["-f", bad.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stdout
            .contains("invalid value \"YES\" for ExclusiveUser: not supported by muster"),
        "{out}"
    );
}

#[test]
fn a_node_added_by_reconfigure_registers_and_runs_jobs() {
    let mut c = cluster(1);
    let running = c.submit(&["--wrap", &gate("go")]);
    c.wait_state(running, "RUNNING", secs(10));
    append(
        &c,
        &format!(
            "NodeName=node3 NodeAddr=127.0.0.1 NodeHostname={} Port={} CPUs=2 RealMemory=2000 State=UNKNOWN\n\
             PartitionName=more Nodes=node3\n",
            e2e::hostname(),
            e2e::free_port()
        ),
    );
    let out = c.ok("scontrol", &["reconfigure"]);
    assert_eq!(out.stderr, "", "{out}");
    c.start_node_with("node3", &[]);
    c.wait_node_state("node3", "idle", secs(20));
    let job = c.submit(&["-p", "more", "--wrap", "hostname"]);
    assert_eq!(c.wait_done(job, secs(10)), "COMPLETED");
    assert_eq!(c.job_field(job, "NodeList"), "node3");
    // Removing it again needs a restart: told, not applied.
    let text = std::fs::read_to_string(c.conf()).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("NodeName=node3") && !l.starts_with("PartitionName=more"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(c.conf(), without).unwrap();
    let out = c.ok("scontrol", &["reconfigure"]);
    assert!(
        out.stderr
            .contains("not applied, needs a restart of the controller: NodeName: nodes removed"),
        "{out}"
    );
    assert_eq!(c.node_state("node3"), "idle");
    c.write("go", "");
    assert_eq!(c.wait_done(running, secs(10)), "COMPLETED");
}

#[test]
fn partition_changes_survive_a_crash_as_the_journal_replays_them() {
    let mut c = cluster(1);
    c.ok("scontrol", &["create", "PartitionName=rt", "Nodes=node1"]);
    c.ok("scontrol", &["update", "PartitionName=debug", "MaxTime=30"]);
    let job = c.submit(&["-p", "rt", "--wrap", &gate("go")]);
    c.wait_state(job, "RUNNING", secs(10));
    // SIGKILL: the records after the last snapshot replay under the
    // partitions they were written with.
    c.restart_ctld();
    let debug = c.ok("scontrol", &["show", "partition", "debug"]);
    assert!(debug.stdout.contains("MaxTime=00:30:00"), "{debug}");
    assert_eq!(c.job_state(job), "RUNNING");
    assert_eq!(c.job_field(job, "Partition"), "rt");
    c.write("go", "");
    assert_eq!(c.wait_done(job, secs(10)), "COMPLETED");
}

#[test]
fn reconfigure_applies_slurmctlddebug_to_the_running_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ctld.log");
    let mut c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "SlurmctldLogFile={}\nSlurmctldDebug=info",
            log.display()
        ))
        .start();
    // The harness's MUSTER_LOG would override slurm.conf: none here.
    c.spawn_ctld_env(&[("MUSTER_LOG", "")]);
    c.wait_until("the controller to answer", secs(20), || {
        c.run("scontrol", &["ping"]).ok().then_some(())
    });
    let first = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(first, secs(10)), "COMPLETED");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!read().contains("submitted by"), "{}", read());
    let text = std::fs::read_to_string(c.conf()).unwrap();
    std::fs::write(
        c.conf(),
        text.replace("SlurmctldDebug=info", "SlurmctldDebug=debug"),
    )
    .unwrap();
    let out = c.ok("scontrol", &["reconfigure"]);
    assert_eq!(out.stderr, "", "{out}");
    assert!(read().contains("log level now debug"), "{}", read());
    let second = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(second, secs(10)), "COMPLETED");
    assert!(
        read().contains(&format!("job {second} submitted by")),
        "{}",
        read()
    );
}

#[test]
fn reconfig_flags_keep_partitions_changed_at_runtime_across_reconfigure() {
    let c = builder()
        .nodes(1)
        .conf_tail("PartitionName=spare Nodes=node1 MaxTime=30\n")
        .start();
    let field = |part: &str, key: &str| {
        let out = c.ok("scontrol", &["show", "partition", part]);
        e2e::field(&out.stdout, key).unwrap_or_default()
    };
    // Without ReconfigFlags, reconfigure rebuilds the partitions from the
    // files: scontrol update's State=DOWN and MaxTime are gone.
    c.ok(
        "scontrol",
        &["update", "PartitionName=spare", "State=DOWN", "MaxTime=5"],
    );
    c.ok("scontrol", &["reconfigure"]);
    assert_eq!(field("spare", "State"), "UP");
    assert_eq!(field("spare", "MaxTime"), "00:30:00");
    // KeepPartState: the State stays, the rest comes from the files.
    append(&c, "ReconfigFlags=KeepPartState\n");
    c.ok("scontrol", &["reconfigure"]);
    c.ok(
        "scontrol",
        &["update", "PartitionName=spare", "State=DOWN", "MaxTime=5"],
    );
    c.ok("scontrol", &["reconfigure"]);
    assert_eq!(field("spare", "State"), "DOWN");
    assert_eq!(field("spare", "MaxTime"), "00:30:00");
    // KeepPartInfo: everything scontrol changed stays, and a partition
    // made by scontrol create too.
    append(&c, "ReconfigFlags=KeepPartInfo\n");
    c.ok("scontrol", &["reconfigure"]);
    c.ok("scontrol", &["update", "PartitionName=spare", "MaxTime=5"]);
    c.ok("scontrol", &["create", "PartitionName=made", "Nodes=node1"]);
    c.ok("scontrol", &["reconfigure"]);
    assert_eq!(field("spare", "State"), "DOWN");
    assert_eq!(field("spare", "MaxTime"), "00:05:00");
    assert_eq!(field("made", "PartitionName"), "made");
}
