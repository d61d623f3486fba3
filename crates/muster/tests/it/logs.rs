//! The daemons' log files (slurm.conf `SlurmctldLogFile`, `SlurmdLogFile`
//! with `%n`, `LogTimeFormat`, SIGUSR2 to reopen) and `sdiag` (issue 38
//! items 4 and 5).

use crate::{builder, cluster, secs};
use std::path::Path;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn daemons_write_their_log_files_and_reopen_them_on_sigusr2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "SlurmctldLogFile={d}/ctld.log\nSlurmdLogFile={d}/slurmd-%n.log\n\
             SlurmctldDebug=info\nLogTimeFormat=iso8601"
        ))
        .start();
    let ctld_log = dir.path().join("ctld.log");
    let text = read(&ctld_log);
    let line = text
        .lines()
        .find(|l| l.contains("listening on"))
        .unwrap_or_else(|| panic!("no start line in the log file:\n{text}"));
    // `[2026-12-02T10:24:13] muster ctld ...`: iso8601, no level prefix at info.
    assert_eq!(&line[..1], "[", "{line}");
    assert_eq!(&line[20..22], "] ", "{line}");
    assert_eq!(&line[11..12], "T", "{line}");
    assert!(line[22..].starts_with("muster ctld for cluster"), "{line}");
    // Nothing of it went to stderr (the harness's own log).
    assert!(!c.log("ctld").contains("listening on"), "{}", c.log("ctld"));
    let node_log = dir.path().join("slurmd-node1.log");
    assert!(!read(&node_log).is_empty(), "node1's log file is empty");

    // logrotate: move the file away, then SIGUSR2.
    let rotated = dir.path().join("ctld.log.1");
    std::fs::rename(&ctld_log, &rotated).unwrap();
    let pid = c.daemon_pids()[0];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGUSR2,
    )
    .unwrap();
    c.wait_until("the controller to reopen its log", secs(10), || {
        read(&ctld_log).contains("reopened log file").then_some(())
    });
    // Still running, and writing to the new file.
    let out = c.ok("sbatch", &["--parsable", "--wrap", "true"]);
    let id: u32 = out.stdout.trim().parse().unwrap();
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    assert!(read(&rotated).contains("listening on"));
    assert!(!read(&ctld_log).contains("listening on"));
    // The node daemon reopens too.
    let node_rotated = dir.path().join("slurmd-node1.log.1");
    std::fs::rename(&node_log, &node_rotated).unwrap();
    c.signal_node("node1", nix::sys::signal::Signal::SIGUSR2);
    c.wait_until("the node daemon to reopen its log", secs(10), || {
        read(&node_log).contains("reopened log file").then_some(())
    });
    let _ = &mut c;
}

#[test]
fn sdiag_reports_the_controller_statistics_and_resets_them() {
    let c = cluster(1);
    let out = c.ok("sbatch", &["--parsable", "--wrap", "true"]);
    let id: u32 = out.stdout.trim().parse().unwrap();
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    let out = c.ok("sdiag", &[]);
    let text = out.stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "*".repeat(55));
    assert!(lines[1].starts_with("sdiag output at "), "{text}");
    assert!(lines[2].starts_with("Data since      "), "{text}");
    for want in [
        "Jobs submitted: 1\n",
        "Jobs started:   1\n",
        "Jobs completed: 1\n",
        "Jobs canceled:  0\n",
        "Jobs pending:   0\n",
        "Main schedule statistics (microseconds):\n",
        "\tTotal cycles: ",
        "Backfilling stats\n",
        "Remote Procedure Call statistics by message type\n",
        "\tREQUEST_SUBMIT_BATCH_JOB                ( 4003) count:1      ave_time:",
        "Remote Procedure Call statistics by user\n",
        "\troot            (       0) count:",
        "Pending RPC statistics\n\tNo pending RPCs\n",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
    let out = c.ok("sdiag", &["--reset"]);
    assert_eq!(out.stdout, "Reset scheduling statistics\n");
    let text = c.ok("sdiag", &[]).stdout;
    assert!(text.contains("Jobs submitted: 0\n"), "{text}");
    assert!(!text.contains("REQUEST_SUBMIT_BATCH_JOB"), "{text}");
    // The reset itself is the first call booked afresh.
    assert!(text.contains("\tREQUEST_STATS_INFO"), "{text}");
}

#[test]
fn sdiag_reset_is_for_operators() {
    if !crate::auth::is_root() {
        eprintln!(
            "sdiag_reset_is_for_operators: not run: it creates a Unix user, which needs root"
        );
        return;
    }
    let base = tempfile::Builder::new()
        .prefix("muster-sdiag-")
        .tempdir()
        .expect("a temp dir");
    crate::auth::set_mode(base.path(), 0o755);
    let user = crate::auth::TestUser::create("d", base.path());
    // A hard link where it can be (see preempt.rs), else a copy.
    let muster_bin = base.path().join("muster");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_muster"), &muster_bin).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_muster"), &muster_bin).expect("copying muster");
    }
    let c = builder().binary(&muster_bin).nodes(1).start();
    crate::auth::set_mode(c.root(), 0o755);
    // Anyone may read the statistics.
    let out = user.run(&c, "sdiag", &[]);
    assert!(out.ok(), "{out}");
    assert!(out
        .stdout
        .contains("Remote Procedure Call statistics by user"));
    let out = user.run(&c, "sdiag", &["--reset"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "slurm_reset_statistics: Access/permission denied\n"
    );
    assert_eq!(out.stdout, "");
}
