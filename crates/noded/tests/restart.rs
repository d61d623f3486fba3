//! A node daemon killed with SIGKILL while its jobs run: the jobs go on
//! under their supervisors, and the restarted daemon re-attaches to them
//! (or finds their end) and reports the right exit code.
//!
//! The daemon runs as a process of its own (`noded-test-bin noded ...`) so
//! that it can be killed; the controller is a fake one in the test.

mod common;

use common::{auth_conf, credential, fake_controller, free_port, identity};
use model::{ExitCode, JobId};
use proto::{BatchLaunch, CtldRequest, NodeRequest, NodeResponse};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(20);
const NODED: &str = env!("CARGO_BIN_EXE_noded-test-bin");

/// One node daemon process at a time, its configuration and what the fake
/// controller received.
struct Node {
    dir: tempfile::TempDir,
    conf_path: PathBuf,
    node_addr: String,
    seen: Arc<Mutex<Vec<CtldRequest>>>,
    daemon: Option<Child>,
    /// How many daemons were started, to name their logs.
    n_started: u32,
}

impl Node {
    async fn start() -> Node {
        let ctl = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ctl_port = ctl.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(fake_controller(ctl, seen.clone()));
        let dir = tempfile::tempdir().unwrap();
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
        let mut node = Node {
            dir,
            conf_path,
            node_addr: format!("127.0.0.1:{port}"),
            seen,
            daemon: None,
            n_started: 0,
        };
        node.spawn_daemon().await;
        node
    }

    /// Starts the daemon process and waits until it registered.
    async fn spawn_daemon(&mut self) {
        assert!(self.daemon.is_none());
        self.n_started += 1;
        let log = std::fs::File::create(self.log_path(self.n_started)).unwrap();
        let child = Command::new(NODED)
            .args(["noded", "-N", "n1", "-f"])
            .arg(&self.conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.daemon = Some(child);
        let from = self.n_seen();
        self.registration(from).await;
    }

    /// How many requests the controller got so far.
    fn n_seen(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn log_path(&self, n: u32) -> PathBuf {
        self.dir.path().join(format!("noded-{n}.log"))
    }

    fn logs(&self) -> String {
        (1..=self.n_started)
            .map(|n| std::fs::read_to_string(self.log_path(n)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("--- restart ---\n")
    }

    /// SIGKILL: the daemon gets no chance to do anything.
    fn kill_daemon(&mut self) {
        let mut child = self.daemon.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Shutdown, then the daemon's exit status.
    async fn shutdown(mut self) {
        let r = self.call(NodeRequest::Shutdown).await;
        assert!(matches!(r, NodeResponse::Ok), "{r:?}");
        let mut child = self.daemon.take().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(start.elapsed() < WAIT, "the daemon did not stop");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(status.success(), "{status:?}\n{}", self.logs());
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

    /// The first request from index `from` on that matches.
    async fn wait_for(
        &self,
        what: &str,
        from: usize,
        pred: impl Fn(&CtldRequest) -> bool,
    ) -> CtldRequest {
        let start = Instant::now();
        loop {
            let found = self.seen.lock().unwrap()[from..]
                .iter()
                .find(|r| pred(r))
                .cloned();
            if let Some(r) = found {
                return r;
            }
            assert!(
                start.elapsed() < WAIT,
                "no {what} after {WAIT:?}; daemon logs:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The running jobs of the first registration from index `from` on.
    async fn registration(&self, from: usize) -> Vec<JobId> {
        match self
            .wait_for("registration", from, |r| {
                matches!(r, CtldRequest::RegisterNode(_))
            })
            .await
        {
            CtldRequest::RegisterNode(reg) => reg.running_jobs,
            _ => unreachable!(),
        }
    }

    async fn exit_of(&self, job: u32) -> (ExitCode, Option<String>) {
        let what = format!("JobExited for job {job}");
        let r = self
            .wait_for(
                &what,
                0,
                |r| matches!(r, CtldRequest::JobExited { job_id, .. } if *job_id == JobId(job)),
            )
            .await;
        match r {
            CtldRequest::JobExited {
                exit,
                launch_failed,
                ..
            } => (exit, launch_failed),
            _ => unreachable!(),
        }
    }

    fn n_exits(&self, job: u32) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| matches!(r, CtldRequest::JobExited { job_id, .. } if *job_id == JobId(job)))
            .count()
    }

    fn out_path(&self, job: u32) -> PathBuf {
        self.dir.path().join(format!("slurm-{job}.out"))
    }

    fn job_dir(&self, job: u32) -> PathBuf {
        self.dir.path().join(format!("spool/n1/job{job:05}"))
    }

    async fn launch(&self, job: u32, script: &str) {
        let out = self.out_path(job).display().to_string();
        let launch = BatchLaunch {
            job_id: JobId(job),
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            user: "tester".into(),
            script: script.into(),
            argv: vec![],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            work_dir: self.dir.path().display().to_string(),
            stdout: out.clone(),
            stderr: out,
            stdin: "/dev/null".into(),
            open_append: false,
            cpus: 1,
            mem: 100,
            gpus: vec![],
            cpu_ids: vec![],
            time_limit_secs: None,
            acctg_freq: None,
            restarts: 0,
            container: Vec::new(),
        };
        let r = self.call(NodeRequest::LaunchBatch(Box::new(launch))).await;
        assert!(matches!(r, NodeResponse::Ok), "launch answered {r:?}");
    }

    async fn wait_for_file(&self, path: &Path, text: &str) {
        let start = Instant::now();
        loop {
            let content = std::fs::read_to_string(path).unwrap_or_default();
            if content.contains(text) {
                return;
            }
            assert!(
                start.elapsed() < WAIT,
                "{} never contained {text:?}: {content:?}; daemon logs:\n{}",
                path.display(),
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut child) = self.daemon.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The command line of the supervisor of `job`, from the pids record of
/// its log.
fn supervisor_cmdline(node: &Node, job: u32) -> String {
    let log = std::fs::read_to_string(node.job_dir(job).join("job.log")).unwrap();
    let line = log.lines().find_map(|l| l.strip_prefix("pids ")).unwrap();
    let pids: serde_json::Value = serde_json::from_str(line).unwrap();
    let pid = pids["stepd"]["pid"].as_i64().unwrap();
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap())
        .replace('\0', " ")
}

/// The pids of the children of `parent` whose command line holds `text`.
fn children_named(parent: u32, text: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let ppid: u32 = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == parent && String::from_utf8_lossy(&cmdline).contains(text) {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn restarted_daemon_reattaches_and_reports_the_exit_code() {
    let mut node = Node::start().await;
    node.launch(81, "#!/bin/sh\necho ready\nsleep 2; exit 4\n")
        .await;
    node.wait_for_file(&node.out_path(81), "ready").await;
    // The zygote forked the supervisor (no execution of this binary).
    let cmdline = supervisor_cmdline(&node, 81);
    assert!(cmdline.contains("--stepd-zygote"), "{cmdline}");
    node.kill_daemon();
    let from = node.n_seen();
    node.spawn_daemon().await;
    assert_eq!(node.registration(from).await, vec![JobId(81)]);
    let (exit, failed) = node.exit_of(81).await;
    assert_eq!(exit, ExitCode { code: 4, signal: 0 });
    assert_eq!(failed, None);
    assert_eq!(node.n_exits(81), 1);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn job_that_ends_while_the_daemon_is_down_is_reported_after_restart() {
    let mut node = Node::start().await;
    node.launch(82, "#!/bin/sh\necho ready\nsleep 0.5\nexit 0\n")
        .await;
    node.wait_for_file(&node.out_path(82), "ready").await;
    node.kill_daemon();
    // The supervisor records the end with no daemon to tell.
    let log = node.job_dir(82).join("job.log");
    node.wait_for_file(&log, "\nstatus ").await;
    assert_eq!(node.n_exits(82), 0);
    let from = node.n_seen();
    node.spawn_daemon().await;
    assert_eq!(node.registration(from).await, vec![]);
    assert_eq!(
        node.exit_of(82).await,
        (ExitCode { code: 0, signal: 0 }, None)
    );
    // Reported, so forgotten.
    let start = Instant::now();
    while node.job_dir(82).exists() {
        assert!(start.elapsed() < WAIT, "the job directory stayed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn terminate_reaches_a_reattached_job() {
    let mut node = Node::start().await;
    node.launch(83, "#!/bin/sh\necho ready\nsleep 100\n").await;
    node.wait_for_file(&node.out_path(83), "ready").await;
    node.kill_daemon();
    let from = node.n_seen();
    node.spawn_daemon().await;
    assert_eq!(node.registration(from).await, vec![JobId(83)]);
    let r = node
        .call(NodeRequest::Terminate {
            job_id: JobId(83),
            kill_wait: 10,
            reason: None,
        })
        .await;
    assert!(matches!(r, NodeResponse::Ok), "{r:?}");
    assert_eq!(
        node.exit_of(83).await,
        (
            ExitCode {
                code: 0,
                signal: 15
            },
            None
        )
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_after_restart_kills_reattached_jobs() {
    let mut node = Node::start().await;
    node.launch(84, "#!/bin/sh\necho ready\nsleep 100\n").await;
    node.wait_for_file(&node.out_path(84), "ready").await;
    node.kill_daemon();
    let from = node.n_seen();
    node.spawn_daemon().await;
    assert_eq!(node.registration(from).await, vec![JobId(84)]);
    let seen = node.seen.clone();
    node.shutdown().await;
    let exit = seen.lock().unwrap().iter().find_map(|r| match r {
        CtldRequest::JobExited { job_id, exit, .. } if *job_id == JobId(84) => Some(*exit),
        _ => None,
    });
    assert_eq!(exit, Some(ExitCode { code: 0, signal: 9 }));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_its_zygote_the_daemon_executes_supervisors_that_restarts_find() {
    let mut node = Node::start().await;
    let daemon_pid = node.daemon.as_ref().unwrap().id();
    let zygotes = children_named(daemon_pid, "--stepd-zygote");
    assert_eq!(zygotes.len(), 1, "{zygotes:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(zygotes[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    node.launch(84, "#!/bin/sh\necho ready\nsleep 2; exit 5\n")
        .await;
    node.wait_for_file(&node.out_path(84), "ready").await;
    let cmdline = supervisor_cmdline(&node, 84);
    assert!(cmdline.contains("--stepd /"), "{cmdline}");
    node.kill_daemon();
    let from = node.n_seen();
    node.spawn_daemon().await;
    assert_eq!(node.registration(from).await, vec![JobId(84)]);
    assert_eq!(
        node.exit_of(84).await,
        (ExitCode { code: 5, signal: 0 }, None)
    );
    assert_eq!(node.n_exits(84), 1);
    // The new daemon has a zygote of its own again.
    let daemon_pid = node.daemon.as_ref().unwrap().id();
    assert_eq!(children_named(daemon_pid, "--stepd-zygote").len(), 1);
    node.shutdown().await;
}
