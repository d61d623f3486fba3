//! The node daemon against a tiny fake controller: registration, batch
//! launches, exit codes, Terminate with KillWait, signals, bad frames and
//! shutdown. (The real controller is tested end to end in `e2e`.)

mod common;

use common::{auth_conf, credential, fake_controller, free_port, identity};
use model::{ExitCode, JobId};
use proto::{BatchLaunch, CtldRequest, Envelope, Identity, NodeRequest, NodeResponse, SignalScope};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(20);
/// Runs the job supervisors (`noded --stepd`) of the in-process daemons.
const STEPD: &str = env!("CARGO_BIN_EXE_noded-test-bin");

/// A user who is neither root nor SlurmUser.
fn stranger() -> Identity {
    Identity {
        uid: 4242,
        gid: 4242,
        user: "stranger".into(),
        host: "elsewhere".into(),
    }
}

struct Harness {
    dir: tempfile::TempDir,
    node_addr: String,
    conf_path: PathBuf,
    seen: Arc<Mutex<Vec<CtldRequest>>>,
    daemon: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Harness {
    async fn start() -> Harness {
        let ctl = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = Harness::start_with_controller_port(ctl.local_addr().unwrap().port());
        tokio::spawn(fake_controller(ctl, h.seen.clone()));
        h.wait_for("registration", |r| {
            matches!(r, CtldRequest::RegisterNode(_))
        })
        .await;
        h
    }

    /// Starts the daemon towards a controller port nobody may listen on yet.
    fn start_with_controller_port(ctl_port: u16) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let port = free_port();
        let conf_path = dir.path().join("slurm.conf");
        std::fs::write(
            &conf_path,
            format!(
                "ClusterName=test\n\
                 SlurmctldHost=localhost(127.0.0.1)\n\
                 SlurmctldPort={ctl_port}\n\
                 SlurmdSpoolDir={}/spool/%n\n\
                 SlurmdParameters=config_overrides\n\
                 {auth}\
                 NodeName=n1 NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=n1 Default=YES\n",
                dir.path().display(),
                auth = auth_conf(dir.path()),
            ),
        )
        .unwrap();
        let opts = noded::NodedOptions {
            node_name: Some("n1".into()),
            conf_path: conf_path.clone(),
            foreground: true,
            verbose: 0,
            conf_server: None,
            authinfo: None,
            stepd_program: Some(STEPD.into()),
        };
        let daemon = tokio::spawn(noded::run(opts));
        Harness {
            node_addr: format!("127.0.0.1:{port}"),
            dir,
            conf_path,
            seen,
            daemon,
        }
    }

    async fn call(&self, req: NodeRequest) -> NodeResponse {
        rpc::call(
            &self.node_addr,
            identity(),
            credential(self.dir.path()),
            req,
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    }

    async fn wait_for(&self, what: &str, pred: impl Fn(&CtldRequest) -> bool) -> CtldRequest {
        let start = Instant::now();
        loop {
            if let Some(r) = self.seen.lock().unwrap().iter().find(|r| pred(r)) {
                return r.clone();
            }
            assert!(start.elapsed() < WAIT, "no {what} after {WAIT:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The JobExited report for `job`: (exit, launch_failed).
    async fn exit_of(&self, job: u32) -> (ExitCode, Option<String>) {
        let r = self
            .wait_for(
                &format!("JobExited for job {job}"),
                |r| matches!(r, CtldRequest::JobExited { job_id, .. } if *job_id == JobId(job)),
            )
            .await;
        match r {
            CtldRequest::JobExited {
                exit,
                launch_failed,
                node,
                ..
            } => {
                assert_eq!(node, "n1");
                (exit, launch_failed)
            }
            _ => unreachable!(),
        }
    }

    /// How many JobExited reports for `job` the controller has seen.
    fn reports_of_exit(&self, job: u32) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|r| matches!(r, CtldRequest::JobExited { job_id, .. } if *job_id == JobId(job)))
            .count()
    }

    /// A credential for `who`, signed with the cluster key (as anyone who
    /// could read the key could make one).
    fn sign_as(&self, who: &Identity) -> String {
        let key = auth::load_key(&self.dir.path().join("muster.key")).unwrap();
        auth::Signer::with_key(&key)
            .sign(who, chrono::Utc::now().timestamp())
            .unwrap()
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn batch(&self, job: u32, script: &str) -> BatchLaunch {
        let out = self.path(&format!("slurm-{job}.out"));
        BatchLaunch {
            job_id: JobId(job),
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            user: "tester".into(),
            script: script.into(),
            argv: vec![],
            env: vec![
                ("SLURM_JOB_ID".into(), job.to_string()),
                ("PATH".into(), "/usr/bin:/bin".into()),
            ],
            work_dir: self.dir.path().display().to_string(),
            stdout: out.clone(),
            stderr: out,
            stdin: "/dev/null".into(),
            open_append: false,
            cpus: 2,
            mem: 100,
            gpus: vec![],
            cpu_ids: vec![],
            time_limit_secs: None,
            acctg_freq: None,
            restarts: 0,
            container: Vec::new(),
        }
    }

    async fn launch(&self, launch: BatchLaunch) {
        let r = self.call(NodeRequest::LaunchBatch(Box::new(launch))).await;
        assert!(matches!(r, NodeResponse::Ok), "launch answered {r:?}");
    }

    async fn wait_for_output(&self, job: u32, text: &str) -> String {
        let path = self.path(&format!("slurm-{job}.out"));
        let start = Instant::now();
        loop {
            let out = std::fs::read_to_string(&path).unwrap_or_default();
            if out.contains(text) {
                return out;
            }
            assert!(
                start.elapsed() < WAIT,
                "{path} never contained {text:?}: {out:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn shutdown(self) {
        let r = self.call(NodeRequest::Shutdown).await;
        assert!(matches!(r, NodeResponse::Ok));
        let res = tokio::time::timeout(WAIT, self.daemon)
            .await
            .unwrap()
            .unwrap();
        assert!(res.is_ok(), "run() ended with {res:?}");
    }
}

fn spool_job_dir(h: &Harness, job: u32) -> PathBuf {
    h.dir.path().join(format!("spool/n1/job{job:05}"))
}

/// The spool directory goes once the controller answered the end report.
async fn wait_for_removal(dir: &std::path::Path) {
    let start = Instant::now();
    while dir.exists() {
        assert!(start.elapsed() < WAIT, "{} still exists", dir.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn registers_configured_resources_and_answers_ping() {
    let h = Harness::start().await;
    let reg = h
        .wait_for("registration", |r| {
            matches!(r, CtldRequest::RegisterNode(_))
        })
        .await;
    let CtldRequest::RegisterNode(reg) = reg else {
        unreachable!()
    };
    assert_eq!(reg.name, "n1");
    assert_eq!(reg.addr, "127.0.0.1");
    assert_eq!(format!("127.0.0.1:{}", reg.port), h.node_addr);
    // SlurmdParameters=config_overrides: the configured, not the real, resources.
    assert_eq!((reg.cpus, reg.real_memory), (2, 1000));
    assert!(reg.os.starts_with("Linux "), "{}", reg.os);
    assert!(!reg.arch.is_empty());
    assert!(reg.start_time > 1_600_000_000);
    assert!(matches!(h.call(NodeRequest::Ping).await, NodeResponse::Ok));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_script_output_and_exit_code_are_reported() {
    let h = Harness::start().await;
    let script = "#!/bin/sh\n\
                  echo \"$SLURM_JOB_ID $SLURMD_NODENAME\"\n\
                  echo \"pid $SLURM_TASK_PID $$\"\n\
                  echo \"conf $SLURM_CONF cpus $SLURM_CPUS_ON_NODE\"\n\
                  echo \"home ${HOME:-unset} args $#\"\n\
                  echo oops >&2\n\
                  exit 3\n";
    h.launch(h.batch(11, script)).await;
    let (exit, failed) = h.exit_of(11).await;
    assert_eq!(exit, ExitCode { code: 3, signal: 0 });
    assert_eq!(failed, None);
    let out = std::fs::read_to_string(h.path("slurm-11.out")).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "11 n1");
    let pids: Vec<&str> = lines[1].split(' ').collect();
    assert_eq!(
        pids[1], pids[2],
        "SLURM_TASK_PID is the script's pid: {out}"
    );
    assert_eq!(lines[2], format!("conf {} cpus 2", h.conf_path.display()));
    // The daemon's environment is not inherited.
    assert_eq!(lines[3], "home unset args 0");
    assert_eq!(lines[4], "oops");
    // The spool directory goes once the job's end is reported.
    wait_for_removal(&spool_job_dir(&h, 11)).await;
    h.shutdown().await;
}

/// The script is executed itself (no shell in between); one the kernel
/// cannot execute goes through the shell as before: without a `#!` line the
/// shell runs it, with a missing interpreter the shell says so and exits 127.
#[tokio::test(flavor = "multi_thread")]
async fn scripts_the_kernel_cannot_execute_go_through_the_shell() {
    let h = Harness::start().await;
    h.launch(h.batch(31, "#!/bin/sh\ncat /proc/$$/cmdline | tr '\\0' ' '\n"))
        .await;
    assert_eq!(h.exit_of(31).await.0, ExitCode { code: 0, signal: 0 });
    let out = std::fs::read_to_string(h.path("slurm-31.out")).unwrap();
    assert!(
        out.starts_with("/bin/sh ") && out.contains("slurm_script") && !out.contains("-c"),
        "{out:?}"
    );
    h.launch(h.batch(
        32,
        "echo \"no interpreter line $SLURM_TASK_PID $$\"\nexit 6\n",
    ))
    .await;
    assert_eq!(h.exit_of(32).await.0, ExitCode { code: 6, signal: 0 });
    let out = std::fs::read_to_string(h.path("slurm-32.out")).unwrap();
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(&words[..3], ["no", "interpreter", "line"], "{out:?}");
    assert_eq!(
        words[3], words[4],
        "SLURM_TASK_PID is the shell's pid: {out}"
    );
    h.launch(h.batch(33, "#!/nonexistent/interpreter\nexit 0\n"))
        .await;
    let (exit, failed) = h.exit_of(33).await;
    assert_eq!(
        exit,
        ExitCode {
            code: 127,
            signal: 0
        }
    );
    assert_eq!(failed, None);
    let out = std::fs::read_to_string(h.path("slurm-33.out")).unwrap();
    assert!(out.contains("slurm_script"), "{out:?}");
    h.shutdown().await;
}

/// A copy of a launch that arrives after the run's end was acknowledged (a
/// restarted controller sent it before it heard of the end) is answered
/// without running the script again; the next run of the job (a requeue,
/// one more restart) starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_copy_of_an_ended_runs_launch_does_not_run_it_again() {
    let h = Harness::start().await;
    let runs = h.path("runs");
    let script = format!("#!/bin/sh\necho run >> {runs}\n");
    h.launch(h.batch(13, &script)).await;
    h.exit_of(13).await;
    wait_for_removal(&spool_job_dir(&h, 13)).await;
    // Answered Ok (the controller learns nothing new) with no job directory:
    // a started script would have one before the answer.
    h.launch(h.batch(13, &script)).await;
    assert!(
        !spool_job_dir(&h, 13).exists(),
        "the ended run started again"
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    let mut requeued = h.batch(13, &script);
    requeued.restarts = 1;
    requeued.open_append = true;
    h.launch(requeued).await;
    // `exit_of` would find the first run's report again: wait for a second.
    let start = Instant::now();
    while h.reports_of_exit(13) < 2 {
        assert!(start.elapsed() < WAIT, "no second JobExited for job 13");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\nrun\n");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn split_output_append_mode_and_arguments() {
    let h = Harness::start().await;
    let out = h.path("o.txt");
    let err = h.path("e.txt");
    std::fs::write(&out, "before\n").unwrap();
    let mut l = h.batch(12, "#!/bin/sh\necho \"out $1 $2\"\necho err >&2\n");
    l.argv = vec!["a".into(), "b c".into()];
    l.stdout = "o.txt".into(); // relative to the working directory
    l.stderr = err.clone();
    l.open_append = true;
    h.launch(l).await;
    assert_eq!(h.exit_of(12).await.0, ExitCode { code: 0, signal: 0 });
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "before\nout a b c\n"
    );
    assert_eq!(std::fs::read_to_string(&err).unwrap(), "err\n");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn terminate_sends_sigterm_then_sigkill_after_kill_wait() {
    let h = Harness::start().await;
    h.launch(h.batch(21, "#!/bin/sh\necho ready\nsleep 100\n"))
        .await;
    h.wait_for_output(21, "ready").await;
    let trapping = "#!/bin/sh\ntrap 'echo term' TERM\necho ready\nwhile :; do sleep 1; done\n";
    h.launch(h.batch(22, trapping)).await;
    h.wait_for_output(22, "ready").await;

    let start = Instant::now();
    for job in [21, 22] {
        let r = h
            .call(NodeRequest::Terminate {
                job_id: JobId(job),
                kill_wait: 1,
                reason: None,
            })
            .await;
        assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    }
    assert_eq!(
        h.exit_of(21).await.0,
        ExitCode {
            code: 0,
            signal: 15
        }
    );
    assert_eq!(h.exit_of(22).await.0, ExitCode { code: 0, signal: 9 });
    assert!(start.elapsed() >= Duration::from_millis(900));
    let r = h
        .call(NodeRequest::Terminate {
            job_id: JobId(21),
            kill_wait: 1,
            reason: None,
        })
        .await;
    assert!(
        matches!(r, NodeResponse::Failed(ref m) if m == "no such job"),
        "{r:?}"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn signal_reaches_a_trapping_script() {
    let h = Harness::start().await;
    let script = "#!/bin/sh\ntrap 'echo got usr1; exit 5' USR1\necho ready\nsleep 100 &\nwait $!\n";
    h.launch(h.batch(31, script)).await;
    h.wait_for_output(31, "ready").await;
    let r = h
        .call(NodeRequest::Signal {
            job_id: JobId(31),
            signal: libc::SIGUSR1,
            scope: SignalScope::Full,
        })
        .await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    assert_eq!(h.exit_of(31).await.0, ExitCode { code: 5, signal: 0 });
    h.wait_for_output(31, "got usr1").await;

    let r = h
        .call(NodeRequest::Signal {
            job_id: JobId(999),
            signal: libc::SIGUSR1,
            scope: SignalScope::Batch,
        })
        .await;
    assert!(
        matches!(r, NodeResponse::Failed(ref m) if m == "no such job"),
        "{r:?}"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_only_signal_reaches_only_the_shell() {
    let h = Harness::start().await;
    // The child (a subshell) traps USR1 too: it must not see it.
    let script = "#!/bin/sh\n\
                  (trap 'echo child got usr1' USR1; while :; do sleep 0.1; done) &\n\
                  trap 'echo shell got usr1; exit 6' USR1\n\
                  echo ready\n\
                  while :; do sleep 0.1; done\n";
    h.launch(h.batch(32, script)).await;
    h.wait_for_output(32, "ready").await;
    let r = h
        .call(NodeRequest::Signal {
            job_id: JobId(32),
            signal: libc::SIGUSR1,
            scope: SignalScope::Batch,
        })
        .await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    assert_eq!(h.exit_of(32).await.0, ExitCode { code: 6, signal: 0 });
    let out = std::fs::read_to_string(h.path("slurm-32.out")).unwrap();
    assert!(out.contains("shell got usr1"), "{out}");
    assert!(!out.contains("child got usr1"), "{out}");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn steps_signal_passes_the_batch_shell_by_full_reaches_its_children() {
    let h = Harness::start().await;
    // USR2 goes to the steps alone (there are none: nothing gets it),
    // then USR1 to everything (the shell and its child).
    let script = "#!/bin/sh\n\
                  (trap 'echo child got usr1; exit 0' USR1; echo child ready; while :; do sleep 0.1; done) &\n\
                  trap 'echo shell got usr2' USR2\n\
                  trap 'echo shell got usr1; wait; exit 6' USR1\n\
                  echo shell ready\n\
                  while :; do sleep 0.1; done\n";
    h.launch(h.batch(33, script)).await;
    // Both traps set before any signal (a child without its trap yet
    // would die of USR1).
    h.wait_for_output(33, "shell ready").await;
    h.wait_for_output(33, "child ready").await;
    let r = h
        .call(NodeRequest::Signal {
            job_id: JobId(33),
            signal: libc::SIGUSR2,
            scope: SignalScope::Steps,
        })
        .await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    let r = h
        .call(NodeRequest::Signal {
            job_id: JobId(33),
            signal: libc::SIGUSR1,
            scope: SignalScope::Full,
        })
        .await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    assert_eq!(h.exit_of(33).await.0, ExitCode { code: 6, signal: 0 });
    let out = std::fs::read_to_string(h.path("slurm-33.out")).unwrap();
    assert!(out.contains("shell got usr1"), "{out}");
    assert!(out.contains("child got usr1"), "{out}");
    assert!(!out.contains("usr2"), "{out}");
    // An unknown job: refused under any scope.
    let r = h
        .call(NodeRequest::Signal {
            job_id: JobId(999),
            signal: libc::SIGUSR1,
            scope: SignalScope::Steps,
        })
        .await;
    assert!(
        matches!(r, NodeResponse::Failed(ref m) if m == "no such job"),
        "{r:?}"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unopenable_output_is_a_launch_failure_not_a_crash() {
    let h = Harness::start().await;
    let mut l = h.batch(41, "#!/bin/sh\necho hi\n");
    l.stdout = "/nonexistent-muster-dir/out".into();
    l.stderr = l.stdout.clone();
    h.launch(l).await;
    let (exit, failed) = h.exit_of(41).await;
    assert_eq!(exit, ExitCode { code: 1, signal: 0 });
    let failed = failed.expect("launch_failed");
    assert!(
        failed.contains("Could not open stdout file /nonexistent-muster-dir/out"),
        "{failed}"
    );
    wait_for_removal(&spool_job_dir(&h, 41)).await;
    // The daemon still serves.
    assert!(matches!(h.call(NodeRequest::Ping).await, NodeResponse::Ok));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_work_dir_runs_in_tmp_with_slurmstepd_error() {
    let h = Harness::start().await;
    let mut l = h.batch(42, "#!/bin/sh\npwd\n");
    l.work_dir = "/nonexistent-muster-dir".into();
    h.launch(l).await;
    assert_eq!(h.exit_of(42).await.0, ExitCode { code: 0, signal: 0 });
    let out = std::fs::read_to_string(h.path("slurm-42.out")).unwrap();
    assert_eq!(
        out,
        "slurmstepd: error: couldn't chdir to `/nonexistent-muster-dir': No such file or directory: going to /tmp instead\n/tmp\n"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn other_users_job_is_refused_unless_root() {
    if nix::unistd::geteuid().is_root() {
        return; // As root the daemon would switch users; nothing to refuse.
    }
    let h = Harness::start().await;
    let mut l = h.batch(43, "#!/bin/sh\necho hi\n");
    l.uid += 1;
    let r = h.call(NodeRequest::LaunchBatch(Box::new(l))).await;
    assert!(
        matches!(r, NodeResponse::Failed(ref m) if m == "cannot run jobs for other users unless the node daemon runs as root"),
        "{r:?}"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_frames_are_dropped_without_harm() {
    let h = Harness::start().await;
    // Garbage JSON.
    let mut s = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    s.write_all(&5u32.to_be_bytes()).await.unwrap();
    s.write_all(b"hello").await.unwrap();
    // An oversized announcement.
    let mut big = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    big.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
    // A valid envelope with a future protocol version.
    let mut env: Envelope<NodeRequest> = rpc::envelope(identity(), NodeRequest::Ping);
    env.version = proto::PROTOCOL_VERSION + 1;
    let mut fut = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    rpc::write_frame_async(&mut fut, &env).await.unwrap();
    // A half-sent frame left hanging.
    let mut half = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    half.write_all(&100u32.to_be_bytes()).await.unwrap();
    assert!(matches!(h.call(NodeRequest::Ping).await, NodeResponse::Ok));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_kills_remaining_jobs() {
    let h = Harness::start().await;
    h.launch(h.batch(51, "#!/bin/sh\necho ready\nsleep 100\n"))
        .await;
    h.wait_for_output(51, "ready").await;
    let seen = h.seen.clone();
    h.shutdown().await;
    let exit = seen.lock().unwrap().iter().find_map(|r| match r {
        CtldRequest::JobExited { job_id, exit, .. } if *job_id == JobId(51) => Some(*exit),
        _ => None,
    });
    assert_eq!(exit, Some(ExitCode { code: 0, signal: 9 }));
}

#[tokio::test(flavor = "multi_thread")]
async fn start_up_errors_are_clear() {
    let h = Harness::start().await;
    // Port in use: the harness's daemon holds it.
    let err = noded::run(noded::NodedOptions {
        node_name: Some("n1".into()),
        conf_path: h.conf_path.clone(),
        foreground: true,
        verbose: 0,
        conf_server: None,
        authinfo: None,
        stepd_program: None,
    })
    .await
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("cannot listen on 127.0.0.1:"), "{text}");
    // Unknown node.
    let err = noded::run(noded::NodedOptions {
        node_name: Some("nope".into()),
        conf_path: h.conf_path.clone(),
        foreground: true,
        verbose: 0,
        conf_server: None,
        authinfo: None,
        stepd_program: None,
    })
    .await
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("node \"nope\" is not defined in"), "{text}");
    // A bad value names file and line.
    let bad = h.dir.path().join("bad.conf");
    std::fs::write(
        &bad,
        "ClusterName=x\nSlurmctldHost=c\nSlurmdPort=notaport\n",
    )
    .unwrap();
    let err = noded::run(noded::NodedOptions {
        node_name: Some("n1".into()),
        conf_path: bad.clone(),
        foreground: true,
        verbose: 0,
        conf_server: None,
        authinfo: None,
        stepd_program: None,
    })
    .await
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains(&format!("{}:3", bad.display())), "{text}");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn root_daemon_runs_jobs_as_the_submitting_user() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !nix::unistd::geteuid().is_root() {
        return; // Covered by other_users_job_is_refused_unless_root.
    }
    let Ok(Some(nobody)) = nix::unistd::User::from_name("nobody") else {
        return;
    };
    let h = Harness::start().await;
    let public = h.dir.path().join("public");
    std::fs::create_dir(&public).unwrap();
    std::fs::set_permissions(h.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = public.join("out").display().to_string();
    let mut l = h.batch(61, "#!/bin/sh\nid -u\nid -g\n");
    l.uid = nobody.uid.as_raw();
    l.gid = nobody.gid.as_raw();
    l.user = "nobody".into();
    l.work_dir = public.display().to_string();
    l.stdout = out.clone();
    l.stderr = out.clone();
    h.launch(l).await;
    assert_eq!(h.exit_of(61).await.0, ExitCode { code: 0, signal: 0 });
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text, format!("{}\n{}\n", nobody.uid, nobody.gid));
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), nobody.uid.as_raw());
    // Output the user may not write is a launch failure.
    let mut l = h.batch(62, "#!/bin/sh\necho hi\n");
    l.uid = nobody.uid.as_raw();
    l.gid = nobody.gid.as_raw();
    l.user = "nobody".into();
    l.work_dir = public.display().to_string();
    l.stdout = h.path("root-only/out");
    std::fs::create_dir(h.dir.path().join("root-only")).unwrap();
    l.stderr = l.stdout.clone();
    h.launch(l).await;
    let (exit, failed) = h.exit_of(62).await;
    assert_eq!(exit, ExitCode { code: 1, signal: 0 });
    assert!(failed.unwrap().contains("Permission denied"));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serves_while_controller_is_down_and_registers_when_it_comes_up() {
    let ctl_port = free_port();
    let h = Harness::start_with_controller_port(ctl_port);
    // The daemon answers before any controller exists.
    let start = Instant::now();
    loop {
        let r = rpc::call::<_, NodeResponse>(
            &h.node_addr,
            identity(),
            credential(h.dir.path()),
            NodeRequest::Ping,
            Duration::from_secs(1),
        )
        .await;
        if matches!(r, Ok(NodeResponse::Ok)) {
            break;
        }
        assert!(start.elapsed() < WAIT, "no answer to Ping: {r:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A job that ends while the controller is down is reported once it is up.
    h.launch(h.batch(71, "#!/bin/sh\nexit 2\n")).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(h.seen.lock().unwrap().is_empty());
    let ctl = TcpListener::bind(("127.0.0.1", ctl_port)).await.unwrap();
    tokio::spawn(fake_controller(ctl, h.seen.clone()));
    h.wait_for("registration", |r| {
        matches!(r, CtldRequest::RegisterNode(_))
    })
    .await;
    assert_eq!(h.exit_of(71).await.0, ExitCode { code: 2, signal: 0 });
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn credential_socket_answers_for_the_callers_own_uid() {
    let h = Harness::start().await;
    let sock = h.dir.path().join("auth.sock");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o666, "anyone may ask");
    let cred = tokio::task::spawn_blocking(move || auth::credential_from_socket(&sock))
        .await
        .unwrap()
        .unwrap();
    let key = auth::load_key(&h.dir.path().join("muster.key")).unwrap();
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap();
    let claimed = Identity {
        uid: me.uid.as_raw(),
        gid: 0,
        user: String::new(),
        host: String::new(),
    };
    let proven = auth::Verifier::with_key(&key)
        .verify(Some(&cred), &claimed, chrono::Utc::now().timestamp())
        .unwrap();
    assert_eq!(proven.uid, me.uid.as_raw());
    assert_eq!(proven.gid, me.gid.as_raw());
    assert_eq!(proven.user, me.name);
    h.shutdown().await;
}

async fn call_with(h: &Harness, credential: Option<String>, req: NodeRequest) -> NodeResponse {
    rpc::call(
        &h.node_addr,
        identity(),
        credential,
        req,
        Duration::from_secs(10),
    )
    .await
    .unwrap()
}

fn is_auth_refusal(r: &NodeResponse) -> bool {
    matches!(r, NodeResponse::Failed(m) if m.starts_with("Protocol authentication error"))
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_without_valid_credentials_are_refused() {
    let h = Harness::start().await;
    let now = chrono::Utc::now().timestamp();
    // None at all.
    let r = call_with(&h, None, NodeRequest::Ping).await;
    assert!(is_auth_refusal(&r), "{r:?}");
    // Signed with another key.
    let forged = auth::Signer::with_key(&[9u8; 32])
        .sign(&identity(), now)
        .unwrap();
    let r = call_with(&h, Some(forged), NodeRequest::Ping).await;
    assert!(is_auth_refusal(&r), "{r:?}");
    // A valid one, then the same again.
    let cred = credential(h.dir.path());
    let r = call_with(&h, cred.clone(), NodeRequest::Ping).await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    let r = call_with(&h, cred, NodeRequest::Ping).await;
    assert!(is_auth_refusal(&r), "replayed: {r:?}");
    // A forged launch starts nothing.
    let l = h.batch(61, "#!/bin/sh\necho pwned > pwned\n");
    let r = call_with(&h, None, NodeRequest::LaunchBatch(Box::new(l))).await;
    assert!(is_auth_refusal(&r), "{r:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!h.dir.path().join("pwned").exists());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_controller_may_launch_signal_or_stop() {
    let h = Harness::start().await;
    let stranger = stranger();
    let signed = || Some(h.sign_as(&stranger));
    let send = |credential, req| async {
        rpc::call::<_, NodeResponse>(
            &h.node_addr,
            stranger.clone(),
            credential,
            req,
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    };
    let r = send(signed(), NodeRequest::Ping).await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    let l = h.batch(62, "#!/bin/sh\necho pwned > pwned\n");
    for req in [
        NodeRequest::LaunchBatch(Box::new(l)),
        NodeRequest::Terminate {
            job_id: JobId(62),
            kill_wait: 0,
            reason: None,
        },
        NodeRequest::Shutdown,
    ] {
        let r = send(signed(), req).await;
        assert!(
            matches!(r, NodeResponse::Failed(ref m) if m == "Access/permission denied"),
            "{r:?}"
        );
    }
    // Still up.
    assert!(matches!(h.call(NodeRequest::Ping).await, NodeResponse::Ok));
    h.shutdown().await;
}

/// One frame on an open connection and its answer (`None` once the daemon
/// closed the connection instead of answering).
async fn exchange(
    stream: &mut tokio::net::TcpStream,
    credential: Option<String>,
    req: NodeRequest,
) -> Option<Envelope<NodeResponse>> {
    let frame = rpc::signed_envelope(identity(), credential, req);
    rpc::write_frame_async(stream, &frame).await.ok()?;
    rpc::read_frame_async(stream, Duration::from_secs(10))
        .await
        .ok()
}

fn in_session(seq: u64, req: NodeRequest) -> NodeRequest {
    NodeRequest::InSession {
        seq,
        request: Box::new(req),
    }
}

/// The controller's kept connection: authenticated once both ways, then
/// numbered requests; a launch on it runs and its end is reported.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_authenticates_both_ways_then_numbers_requests() {
    let h = Harness::start().await;
    let mut s = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    let open = exchange(&mut s, credential(h.dir.path()), NodeRequest::OpenSession)
        .await
        .unwrap();
    assert!(matches!(open.body, NodeResponse::Ok), "{:?}", open.body);
    // The daemon's answer proves it: a credential of the cluster key, once.
    let key = auth::load_key(&h.dir.path().join("muster.key")).unwrap();
    let verifier = auth::Verifier::with_key(&key);
    let now = chrono::Utc::now().timestamp();
    let daemon = verifier
        .verify(open.credential.as_deref(), &open.identity, now)
        .unwrap();
    assert_eq!(daemon.uid, nix::unistd::getuid().as_raw());
    for seq in 1..=3 {
        let r = exchange(&mut s, None, in_session(seq, NodeRequest::Ping))
            .await
            .unwrap();
        assert!(matches!(r.body, NodeResponse::Ok), "{:?}", r.body);
    }
    let l = h.batch(71, "#!/bin/sh\necho in-session\n");
    let r = exchange(
        &mut s,
        None,
        in_session(4, NodeRequest::LaunchBatch(Box::new(l))),
    )
    .await
    .unwrap();
    assert!(matches!(r.body, NodeResponse::Ok), "{:?}", r.body);
    h.wait_for_output(71, "in-session").await;
    assert_eq!(h.exit_of(71).await.0, ExitCode { code: 0, signal: 0 });
    // A repeated number (a frame replayed into the connection) is refused
    // and ends the connection.
    let r = exchange(&mut s, None, in_session(4, NodeRequest::Ping))
        .await
        .unwrap();
    assert!(is_auth_refusal(&r.body), "{:?}", r.body);
    assert!(exchange(&mut s, None, in_session(5, NodeRequest::Ping))
        .await
        .is_none());
    h.shutdown().await;
}

/// Connections that never opened a session, or opened it without a valid
/// credential or as a user other than the controller's, get nothing done.
#[tokio::test(flavor = "multi_thread")]
async fn requests_in_a_session_not_opened_are_refused() {
    let h = Harness::start().await;
    let l = h.batch(72, "#!/bin/sh\necho pwned > pwned\n");
    // A rogue connection that skips the opening.
    let mut s = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    let r = exchange(
        &mut s,
        None,
        in_session(1, NodeRequest::LaunchBatch(Box::new(l.clone()))),
    )
    .await
    .unwrap();
    assert!(is_auth_refusal(&r.body), "{:?}", r.body);
    // An opening without a credential, with a forged one, or replayed.
    let forged = auth::Signer::with_key(&[9u8; 32])
        .sign(&identity(), chrono::Utc::now().timestamp())
        .unwrap();
    let cred = credential(h.dir.path());
    let mut s = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    let r = exchange(&mut s, cred.clone(), NodeRequest::OpenSession)
        .await
        .unwrap();
    assert!(matches!(r.body, NodeResponse::Ok), "{:?}", r.body);
    for bad in [None, Some(forged), cred] {
        let mut s = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
        let r = exchange(&mut s, bad, NodeRequest::OpenSession)
            .await
            .unwrap();
        assert!(is_auth_refusal(&r.body), "{:?}", r.body);
        // The connection is closed: nothing more is read from it.
        let req = in_session(1, NodeRequest::LaunchBatch(Box::new(l.clone())));
        assert!(exchange(&mut s, None, req).await.is_none());
    }
    // A user other than root or SlurmUser may not open one.
    let stranger = stranger();
    let signed = h.sign_as(&stranger);
    let mut s = tokio::net::TcpStream::connect(&h.node_addr).await.unwrap();
    let frame = rpc::signed_envelope(stranger, Some(signed), NodeRequest::OpenSession);
    rpc::write_frame_async(&mut s, &frame).await.unwrap();
    let r: Envelope<NodeResponse> = rpc::read_frame_async(&mut s, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        matches!(r.body, NodeResponse::Failed(ref m) if m == "Access/permission denied"),
        "{:?}",
        r.body
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!h.dir.path().join("pwned").exists());
    h.shutdown().await;
}
