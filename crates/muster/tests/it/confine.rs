//! Confinement with cgroups (issue 37; isolation notes §5, tests 6-10) on
//! this host's cgroup version: with `ProctrackType=proctrack/cgroup` and a
//! cgroup.conf, `scontrol suspend` freezes a job's cgroups and `resume`
//! thaws them, a suspended job can be cancelled and leaves nothing, a
//! process that left its session is still killed when its step ends, no
//! cgroup directory outlives the cluster, and a node daemon configured for
//! cgroups it cannot use refuses to start. CI runs these as root.

use crate::{builder, secs};
use e2e::Cluster;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// The v1 controllers the node daemon uses by default.
const CONTROLLERS: &[&str] = &["freezer", "memory", "cpuacct"];

/// A one-node cluster whose jobs run in cgroups (v1: this host's).
fn confined_cluster() -> Cluster {
    builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .file(
            "cgroup.conf",
            "CgroupPlugin=autodetect\nIgnoreSystemd=yes\n",
        )
        .start()
}

/// The node's cgroup directory (first level below each controller, the
/// `slurm_<node>-<hash>` the daemon made), learnt from a job's process;
/// on drop, whatever is still in it is killed and it is removed, so a
/// failed test leaves no cgroup behind. Declared before the cluster: it
/// drops after it.
#[derive(Default)]
struct CgGuard {
    node_dir: Mutex<Option<String>>,
    /// ConstrainDevices: the devices hierarchy is used too.
    devices: bool,
    /// ConstrainCores: the cpuset hierarchy is used too.
    cpuset: bool,
}

/// The node's cgroup directory name, as the node daemon makes it:
/// `slurm_<node>-<hash of its spool directory>` (FNV-1a, low 32 bits).
fn node_dir_name(c: &Cluster, node: &str) -> String {
    let conf = std::fs::read_to_string(c.conf()).unwrap_or_default();
    let spool = conf
        .lines()
        .find_map(|l| l.strip_prefix("SlurmdSpoolDir="))
        .expect("SlurmdSpoolDir in slurm.conf")
        .replace("%n", node);
    let hash = spool.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("slurm_{node}-{:08x}", hash as u32)
}

impl CgGuard {
    fn set_node_dir(&self, name: String) {
        *self.node_dir.lock().unwrap() = Some(name);
    }

    fn set(&self, freezer_path: &str) {
        let first = freezer_path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        assert!(first.starts_with("slurm_node1-"), "{freezer_path}");
        *self.node_dir.lock().unwrap() = Some(first);
    }

    fn dirs(&self) -> Vec<PathBuf> {
        let Some(node) = self.node_dir.lock().unwrap().clone() else {
            return Vec::new();
        };
        CONTROLLERS
            .iter()
            .chain(self.devices.then_some(&"devices"))
            .chain(self.cpuset.then_some(&"cpuset"))
            .map(|c| Path::new(CGROUP_ROOT).join(c).join(&node))
            .collect()
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn kill_and_remove(dir: &Path) {
    for sub in subdirs(dir) {
        kill_and_remove(&sub);
    }
    let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
    for _ in 0..100 {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for CgGuard {
    fn drop(&mut self) {
        for dir in self.dirs() {
            kill_and_remove(&dir);
        }
    }
}

/// The freezer cgroup of `pid` (relative to the freezer mount).
fn freezer_path(pid: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{}/cgroup", pid.trim())).ok()?;
    text_freezer(&text)
}

/// The job's directory in controller `ctrl`, from a freezer path below it.
fn job_dir(ctrl: &str, freezer_path: &str, id: u32) -> PathBuf {
    let job = format!("job_{id}");
    let mut dir = Path::new(CGROUP_ROOT).join(ctrl);
    for part in freezer_path.trim_start_matches('/').split('/') {
        dir.push(part);
        if part == job {
            return dir;
        }
    }
    panic!("{freezer_path} is not below {job}");
}

/// User plus system CPU ticks of `pid`.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|w| w.parse().unwrap_or(0))
        .collect();
    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).is_ok_and(|s| {
        !s.lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
    })
}

/// Waits for a pid file in the work directory.
fn pid_file(c: &Cluster, name: &str) -> String {
    c.wait_until(name, secs(10), || {
        let p = c.read(name);
        (!p.trim().is_empty()).then(|| p.trim().to_string())
    })
}

/// Waits until the job has no cgroup directory left in any controller.
fn assert_job_cgroups_gone(c: &Cluster, freezer: &str, id: u32) {
    c.wait_until("the job's cgroups to go", secs(10), || {
        CONTROLLERS
            .iter()
            .all(|ctrl| !job_dir(ctrl, freezer, id).exists())
            .then_some(())
    });
}

#[test]
fn confine_suspend_freezes_the_job_and_resume_thaws_it() {
    let guard = CgGuard::default();
    let c = confined_cluster();
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        // The batch script and an srun step's task, both busy.
        "srun sh -c 'echo $$ > task.pid; while :; do :; done' & \
         echo $$ > job.pid; while :; do :; done",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let task = pid_file(&c, "task.pid");
    let task_freezer = freezer_path(&task).expect("the task's freezer cgroup");
    assert!(
        task_freezer.ends_with(&format!("/uid_0/job_{id}/step_0/task_0")),
        "{task_freezer}"
    );
    let freezer = freezer_path(&pid).expect("the job's freezer cgroup");
    guard.set(&freezer);
    assert_eq!(
        guard.dirs()[0].file_name().and_then(|n| n.to_str()),
        Some(node_dir_name(&c, "node1").as_str()),
        "the daemon's cgroup name"
    );
    assert!(
        freezer.ends_with(&format!("/uid_0/job_{id}/step_batch/task_0")),
        "{freezer}"
    );
    for ctrl in CONTROLLERS {
        assert!(
            job_dir(ctrl, &freezer, id)
                .join("step_batch/task_0")
                .is_dir(),
            "{ctrl}"
        );
    }
    let state = job_dir("freezer", &freezer, id).join("freezer.state");
    c.ok("scontrol", &["suspend", &id.to_string()]);
    c.wait_until("the job to freeze", secs(10), || {
        (std::fs::read_to_string(&state).unwrap_or_default().trim() == "FROZEN").then_some(())
    });
    assert_eq!(c.job_state(id), "SUSPENDED");
    let before = (cpu_ticks(&pid), cpu_ticks(&task));
    std::thread::sleep(secs(2));
    assert_eq!(
        (cpu_ticks(&pid), cpu_ticks(&task)),
        before,
        "CPU ticks moved while suspended"
    );
    c.ok("scontrol", &["resume", &id.to_string()]);
    c.wait_until("the job and its step to run again", secs(10), || {
        (cpu_ticks(&pid) > before.0 && cpu_ticks(&task) > before.1).then_some(())
    });
    assert_eq!(
        std::fs::read_to_string(&state).unwrap_or_default().trim(),
        "THAWED"
    );
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    c.wait_until("the job's processes to end", secs(10), || {
        (!alive(&pid) && !alive(&task)).then_some(())
    });
    assert_job_cgroups_gone(&c, &freezer, id);
}

#[test]
fn confine_scancel_of_a_suspended_job_leaves_no_process_and_no_cgroup() {
    let guard = CgGuard::default();
    let c = confined_cluster();
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        "setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
         echo $$ > job.pid; sleep 300",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let daemon = pid_file(&c, "daemon.pid");
    let freezer = freezer_path(&pid).expect("the job's freezer cgroup");
    guard.set(&freezer);
    // The process that left the job's session is in the job's cgroup.
    assert_eq!(freezer_path(&daemon).as_deref(), Some(freezer.as_str()));
    c.ok("scontrol", &["suspend", &id.to_string()]);
    let state = job_dir("freezer", &freezer, id).join("freezer.state");
    c.wait_until("the job to freeze", secs(10), || {
        (std::fs::read_to_string(&state).unwrap_or_default().trim() == "FROZEN").then_some(())
    });
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    c.wait_until("the job's processes to end", secs(10), || {
        (!alive(&pid) && !alive(&daemon)).then_some(())
    });
    assert_job_cgroups_gone(&c, &freezer, id);
}

#[test]
fn confine_a_process_that_double_forked_is_killed_when_its_step_ends() {
    let guard = CgGuard::default();
    let c = confined_cluster();
    guard.set_node_dir(node_dir_name(&c, "node1"));
    // An srun step whose task starts a daemon (setsid, its parent exits)
    // and ends; the job goes on and looks whether the daemon survived.
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        "srun sh -c \"setsid sh -c 'echo \\$\\$ > s.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
           while [ ! -s s.pid ]; do sleep 0.05; done\"; \
         p=$(cat s.pid); sleep 1; \
         if [ -d /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status; then echo ALIVE; else echo GONE; fi; \
         setsid sh -c 'echo $$ > b.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
         echo $$ > job.pid; while [ ! -s b.pid ]; do sleep 0.05; done",
    ]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.read("out"));
    let step_daemon = pid_file(&c, "s.pid");
    let out = c.read("out");
    assert!(
        out.contains("GONE") && !out.contains("ALIVE"),
        "the step's daemon outlived its step: {out}"
    );
    assert!(!alive(&step_daemon));
    // The batch step's daemon ends with the script.
    let batch_daemon = pid_file(&c, "b.pid");
    c.wait_until("the batch step's daemon to end", secs(10), || {
        (!alive(&batch_daemon)).then_some(())
    });
    let dirs = guard.dirs();
    assert!(!dirs.is_empty());
    // Nothing is left once the daemon stops: not even the node's directory.
    drop(c);
    for dir in &dirs {
        assert!(!dir.exists(), "{} left", dir.display());
    }
}

#[test]
fn confine_the_extern_step_holder_is_in_step_extern_and_ends_with_the_job() {
    let guard = CgGuard::default();
    let c = builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\nPrologFlags=Contain\n")
        .file("cgroup.conf", "CgroupPlugin=autodetect\n")
        .start();
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let id = c.submit(&["-o", "out", "--wrap", "echo $$ > job.pid; sleep 300"]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let freezer = freezer_path(&pid).expect("the job's freezer cgroup");
    let holder_procs = job_dir("freezer", &freezer, id).join("step_extern/task_0/cgroup.procs");
    // The holder joins its cgroup before it execs `sleep`.
    let holder = c.wait_until("the extern step's holder", secs(10), || {
        let p = std::fs::read_to_string(&holder_procs).unwrap_or_default();
        let pid = p.lines().next()?.to_string();
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline.starts_with("sleep").then_some(pid)
    });
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    c.wait_until("the holder to end", secs(10), || {
        (!alive(&holder)).then_some(())
    });
    assert_job_cgroups_gone(&c, &freezer, id);
}

/// PrologFlags=RunInJob: the Prolog and Epilog run in the job's cgroup
/// (a step cgroup of their own in it, gone after the job); with Contain
/// alone, outside it.
#[test]
fn confine_run_in_job_puts_the_prolog_and_epilog_in_the_jobs_cgroup() {
    use std::os::unix::fs::PermissionsExt;
    for run_in_job in [true, false] {
        let guard = CgGuard::default();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        for name in ["prolog", "epilog"] {
            let path = dir.path().join(name);
            // The script's own cgroups (no PATH in a Prolog's environment).
            std::fs::write(
                &path,
                format!("#!/bin/sh\n/bin/cat /proc/$$/cgroup > {d}/{name}.cg\n"),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let flags = if run_in_job { "RunInJob" } else { "Contain" };
        let c = builder()
            .nodes(1)
            .conf_extra(&format!(
                "ProctrackType=proctrack/cgroup\nPrologFlags={flags}\n\
                 Prolog={d}/prolog\nEpilog={d}/epilog\n"
            ))
            .file(
                "cgroup.conf",
                "CgroupPlugin=autodetect\nIgnoreSystemd=yes\n",
            )
            .start();
        guard.set_node_dir(node_dir_name(&c, "node1"));
        let id = c.submit(&["-o", "out", "--wrap", "true"]);
        // The batch node reports the job's end after its Epilog.
        assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{flags}");
        let cg = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
        let (prolog, epilog) = (cg("prolog.cg"), cg("epilog.cg"));
        assert!(!prolog.is_empty() && !epilog.is_empty(), "{flags}");
        let job = format!("/job_{id}/");
        if run_in_job {
            // Every hierarchy the job's tasks are in (v1: freezer, memory,
            // cpuacct; v2: the one line).
            for (text, step) in [(&prolog, "step_prolog"), (&epilog, "step_epilog")] {
                let in_job = text
                    .lines()
                    .filter(|l| l.contains(&format!("{job}{step}/task_0")))
                    .count();
                assert!(in_job >= 1, "{step} not in the job's cgroup:\n{text}");
                for ctrl in CONTROLLERS {
                    if let Some(l) = text.lines().find(|l| {
                        l.split(':')
                            .nth(1)
                            .is_some_and(|c| c.split(',').any(|c| c == *ctrl))
                    }) {
                        assert!(l.contains(&job), "{ctrl}: {l}");
                    }
                }
            }
            if let Some(freezer) = text_freezer(&prolog) {
                assert_job_cgroups_gone(&c, &freezer, id);
            }
        } else {
            assert!(!prolog.contains(&job), "{prolog}");
            assert!(!epilog.contains(&job), "{epilog}");
        }
        // A job without a batch script: the Prolog at its first step, the
        // Epilog at its end (`daemon::scripts`), the same way.
        for name in ["prolog.cg", "epilog.cg"] {
            std::fs::remove_file(dir.path().join(name)).unwrap();
        }
        let out = c.run("srun", &["-N1", "true"]);
        assert_eq!(out.code, 0, "{out}");
        let epilog = c.wait_until("the srun job's epilog", secs(20), || {
            let t = cg("epilog.cg");
            (!t.is_empty()).then_some(t)
        });
        let prolog = cg("prolog.cg");
        for (text, step) in [(&prolog, "step_prolog"), (&epilog, "step_epilog")] {
            let in_job = text
                .lines()
                .any(|l| l.contains("/job_") && l.contains(&format!("/{step}/task_0")));
            assert_eq!(in_job, run_in_job, "{flags} {step}:\n{text}");
        }
    }
}

/// The freezer line's path of a /proc/PID/cgroup text.
fn text_freezer(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let ctrls = parts.next()?;
        let path = parts.next()?;
        ctrls
            .split(',')
            .any(|c| c == "freezer")
            .then(|| path.to_string())
    })
}

/// The parent of `pid` (field 4 of /proc/PID/stat).
fn parent_of(pid: &str) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    rest.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

fn sigkill(pid: &str) {
    if let Ok(pid) = pid.trim().parse::<i32>() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Waits until the controller has the node's answer to the job's launch:
/// a node daemon killed before it answered makes the launch a failure
/// (the job is requeued and the node drained), not a job whose processes
/// died unwatched.
fn wait_launch_answered(c: &Cluster, id: u32) {
    let line = format!("launched job {id} on node1");
    c.wait_until("the launch's answer", secs(10), || {
        c.log("ctld").contains(&line).then_some(())
    });
}

#[test]
fn confine_a_restarted_daemon_removes_the_cgroups_of_jobs_that_are_gone() {
    let guard = CgGuard::default();
    let mut c = confined_cluster();
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let id = c.submit(&["-o", "out", "--wrap", "echo $$ > job.pid; sleep 300"]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let freezer = freezer_path(&pid).expect("the job's freezer cgroup");
    let supervisor = parent_of(&pid);
    // The daemon, then the job's supervisor and every process of the job
    // die while no daemon watches: nobody removes the job's cgroups.
    wait_launch_answered(&c, id);
    c.kill_node("node1");
    sigkill(&supervisor);
    let job = job_dir("freezer", &freezer, id);
    c.wait_until("the job's processes to die", secs(10), || {
        let procs =
            std::fs::read_to_string(job.join("step_batch/task_0/cgroup.procs")).unwrap_or_default();
        for p in procs.lines() {
            sigkill(p);
        }
        (procs.trim().is_empty() && !alive(&supervisor)).then_some(())
    });
    assert!(job.is_dir());
    c.start_node_with("node1", &[]);
    assert_job_cgroups_gone(&c, &freezer, id);
    c.wait_done(id, secs(30));
}

#[test]
fn confine_a_daemon_configured_for_cgroups_it_cannot_use_refuses_to_start() {
    // This host's other cgroup version: v2 on a v1 host (the notes'
    // machine), v1 on a unified one.
    let unified = Path::new(CGROUP_ROOT).join("cgroup.controllers").exists();
    let (plugin, want) = if unified {
        ("cgroup/v1", "cgroup controller freezer is not available")
    } else {
        (
            "cgroup/v2",
            "CgroupPlugin=cgroup/v2: /sys/fs/cgroup is not a cgroup v2 (unified) mount",
        )
    };
    let mut c = builder()
        .nodes(1)
        .wait_nodes(false)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .file("cgroup.conf", &format!("CgroupPlugin={plugin}\n"))
        .start();
    let status = c
        .wait_node_exit("node1", secs(20))
        .expect("the node daemon to exit");
    assert!(!status.success());
    let log = c.log("noded-node1");
    assert!(log.contains("cannot confine jobs with cgroups"), "{log}");
    assert!(log.contains(want), "{log}");
}

/// `muster` with `args`, without the test's own `SLURM_*` variables.
fn muster(args: &[&str], env: &[(&str, &str)]) -> e2e::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_muster"));
    c.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().copied());
    let out = c.output().expect("running muster");
    e2e::Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Stops what `muster up` started in the directory and removes it.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let d = self.0.display().to_string();
        let _ = muster(&["down", "--state-dir", &d], &[]);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn confine_muster_up_as_root_confines_jobs() {
    let guard = CgGuard::default();
    let dir = std::env::temp_dir().join(format!(
        "muster-e2e-confine-up-{}-{}",
        std::process::id(),
        e2e::free_port()
    ));
    let d = dir.display().to_string();
    let up = muster(
        &[
            "up",
            "--detach",
            "--confine",
            "--state-dir",
            &d,
            "--nodes",
            "1",
        ],
        &[],
    );
    let down = Down(dir.clone());
    assert_eq!(up.code, 0, "{up}");
    assert!(!up.stderr.contains("not confined"), "{up}");
    let conf = std::fs::read_to_string(dir.join("slurm.conf")).unwrap_or_default();
    assert!(conf.contains("ProctrackType=proctrack/cgroup"), "{conf}");
    assert!(
        conf.contains("TaskPlugin=task/cgroup,task/affinity"),
        "{conf}"
    );
    let cgroup_conf = std::fs::read_to_string(dir.join("cgroup.conf")).unwrap_or_default();
    assert!(cgroup_conf.contains("ConstrainCores=yes"), "{cgroup_conf}");
    let conf_path = dir.join("slurm.conf").display().to_string();
    let out = muster(
        &["srun", "cat", "/proc/self/cgroup"],
        &[("SLURM_CONF", conf_path.as_str())],
    );
    assert_eq!(out.code, 0, "{out}");
    let freezer = out
        .stdout
        .lines()
        .find_map(|l| l.split_once(":freezer:").map(|(_, p)| p.to_string()))
        .unwrap_or_default();
    if freezer.starts_with("/slurm_node1-") {
        guard.set(&freezer);
    }
    assert!(freezer.starts_with("/slurm_node1-"), "{out}");
    assert!(freezer.ends_with("/step_0/task_0"), "{out}");
    // A node daemon killed (so it cannot remove its own directory):
    // `muster down` removes it.
    let pids = std::fs::read_to_string(dir.join("pids")).unwrap_or_default();
    let node = pids
        .lines()
        .find_map(|l| l.strip_suffix(" node1"))
        .expect("up records node1's pid")
        .to_string();
    sigkill(&node);
    let start = std::time::Instant::now();
    while alive(&node) && start.elapsed() < secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(guard.dirs()[0].is_dir(), "the killed daemon's directory");
    drop(down);
    for dir in guard.dirs() {
        assert!(!dir.exists(), "{} left after muster down", dir.display());
    }
}

/// Four fake GPUs: character devices 195:N (NVIDIA's major, no driver
/// behind them) in a temporary directory, removed with it.
fn fake_gpu_devices() -> tempfile::TempDir {
    let dev = tempfile::tempdir().expect("a temporary directory");
    for i in 0..4u32 {
        let path = dev.path().join(format!("nvidia{i}"));
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mknod(2) on a NUL-terminated path.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(195, i)) };
        assert_eq!(
            rc,
            0,
            "mknod {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    dev
}

/// A one-node cluster with four fake GPUs whose jobs are confined to
/// their GRES devices (`ConstrainDevices=yes`).
fn devices_cluster(dev: &Path) -> Cluster {
    builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .node_extra(1, "Gres=gpu:fake:4")
        .file(
            "gres.conf",
            &format!("Name=gpu Type=fake File={}/nvidia[0-3]\n", dev.display()),
        )
        .file(
            "cgroup.conf",
            "CgroupPlugin=autodetect\nIgnoreSystemd=yes\nConstrainDevices=yes\n",
        )
        .start()
}

/// Opens each fake GPU and prints what came of it: `ENXIO` where the
/// cgroup allows the device (no driver behind it), `EPERM` where it
/// denies it.
fn probe(dev: &Path) -> String {
    format!(
        "python3 -c 'import os, errno\n\
         r = []\n\
         for i in range(4):\n    \
         try:\n        os.close(os.open(\"{}/nvidia%d\" % i, os.O_RDWR)); r.append(\"OK\")\n    \
         except OSError as e:\n        r.append(errno.errorcode[e.errno])\n\
         print(\" \".join(r))'",
        dev.display()
    )
}

/// What `probe` prints for a job given GPU `gpu` only.
fn only(gpu: usize) -> String {
    (0..4)
        .map(|i| if i == gpu { "ENXIO" } else { "EPERM" })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits until no job directory is left in the devices hierarchy.
fn assert_devices_cgroups_gone(c: &Cluster) {
    let node = Path::new(CGROUP_ROOT)
        .join("devices")
        .join(node_dir_name(c, "node1"));
    fn jobs_below(dir: &Path) -> usize {
        subdirs(dir)
            .iter()
            .map(|d| {
                let own = d
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("job_"));
                usize::from(own) + jobs_below(d)
            })
            .sum()
    }
    c.wait_until("the devices cgroups to go", secs(10), || {
        (jobs_below(&node) == 0).then_some(())
    });
}

/// Isolation notes §5 test 11: with ConstrainDevices=yes a step given one
/// GPU can open only that one (ENXIO: allowed, no driver); the other three
/// are denied (EPERM). CUDA_VISIBLE_DEVICES counts among the step's (the
/// job's) GPUs, SLURM_STEP_GPUS (SLURM_JOB_GPUS) names the node's index.
#[test]
fn confine_devices_a_step_opens_only_its_gpu() {
    let dev = fake_gpu_devices();
    let guard = CgGuard {
        node_dir: Mutex::default(),
        devices: true,
        cpuset: false,
    };
    let c = devices_cluster(dev.path());
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--gres=gpu:1",
            "bash",
            "-c",
            &format!(
                "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS; {}",
                probe(dev.path())
            ),
        ],
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{out}\n{}", c.logs());
    let (cuda, step) = lines[0].split_once(' ').expect("two words");
    assert_eq!(cuda, "0", "{out}");
    let gpu: usize = step.parse().expect("a GPU index");
    assert_eq!(lines[1], only(gpu), "{out}\n{}", c.logs());
    // A batch job: the job's and the batch step's cgroups are confined.
    let id = c.submit(&[
        "-o",
        "out",
        "--gres=gpu:1",
        "--wrap",
        &format!(
            "echo $SLURM_JOB_GPUS $CUDA_VISIBLE_DEVICES; {}",
            probe(dev.path())
        ),
    ]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    let text = c.read("out");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}\n{}", c.logs());
    let (job, cuda) = lines[0].split_once(' ').expect("two words");
    assert_eq!(cuda, "0", "{text}");
    let gpu: usize = job.parse().expect("a GPU index");
    assert_eq!(lines[1], only(gpu), "{text}\n{}", c.logs());
    assert_devices_cgroups_gone(&c);
}

/// Isolation notes §5 test 13: two jobs running at once, one GPU each:
/// each opens its own and no other.
#[test]
fn confine_devices_two_jobs_each_open_only_their_own_gpu() {
    let dev = fake_gpu_devices();
    let guard = CgGuard {
        node_dir: Mutex::default(),
        devices: true,
        cpuset: false,
    };
    let c = devices_cluster(dev.path());
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let script = format!(
        "while [ ! -e go ]; do sleep 0.1; done; echo $SLURM_JOB_GPUS; {}",
        probe(dev.path())
    );
    let a = c.submit(&["-o", "a.out", "--gres=gpu:1", "--wrap", &script]);
    let b = c.submit(&["-o", "b.out", "--gres=gpu:1", "--wrap", &script]);
    c.wait_state(a, "RUNNING", secs(10));
    c.wait_state(b, "RUNNING", secs(10));
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    let mut gpus = Vec::new();
    for name in ["a.out", "b.out"] {
        let text = c.read(name);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{name}: {text}\n{}", c.logs());
        let gpu: usize = lines[0].trim().parse().expect("a GPU index");
        assert_eq!(lines[1], only(gpu), "{name}: {text}\n{}", c.logs());
        gpus.push(gpu);
    }
    assert_ne!(gpus[0], gpus[1], "two jobs, one GPU each, not the same");
    assert_devices_cgroups_gone(&c);
}

/// With `--gpus-per-task=1` each task gets a device cgroup of its own: it
/// opens only its GPU, and sees it as GPU 0.
#[test]
fn confine_devices_per_task_each_task_opens_only_its_gpu() {
    let dev = fake_gpu_devices();
    let guard = CgGuard {
        node_dir: Mutex::default(),
        devices: true,
        cpuset: false,
    };
    let c = devices_cluster(dev.path());
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let out = c.ok(
        "srun",
        &[
            "-n2",
            "-l",
            "--gpus-per-task=1",
            "bash",
            "-c",
            &format!(
                "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS; {}",
                probe(dev.path())
            ),
        ],
    );
    let mut opened = Vec::new();
    for task in ["0", "1"] {
        let lines: Vec<&str> = out
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{task}: ")))
            .collect();
        assert_eq!(lines.len(), 2, "task {task}: {out}\n{}", c.logs());
        let (cuda, step) = lines[0].split_once(' ').expect("two words");
        assert_eq!(cuda, "0", "task {task}: {out}");
        let step: Vec<usize> = step.split(',').map(|g| g.parse().unwrap()).collect();
        assert_eq!(step.len(), 2, "{out}");
        let gpu = lines[1]
            .split(' ')
            .position(|w| w == "ENXIO")
            .expect("an allowed GPU");
        assert_eq!(lines[1], only(gpu), "task {task}: {out}\n{}", c.logs());
        assert!(step.contains(&gpu), "task {task}: {out}");
        opened.push(gpu);
    }
    assert_ne!(opened[0], opened[1], "each task its own GPU: {out}");
    assert_devices_cgroups_gone(&c);
}

// ---- cgroup v2 (CgroupPlugin=cgroup/v2) on this host's unified mount ----

/// The unified (v2) mount of this host: `/sys/fs/cgroup/unified` on a
/// hybrid host, `/sys/fs/cgroup` on a v2 one; `None` (the v2 tests say
/// they did not run) without one or as non-root.
fn unified_mount() -> Option<PathBuf> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("cgroup v2 tests: not run: need root");
        return None;
    }
    let found = ["/sys/fs/cgroup/unified", CGROUP_ROOT]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("cgroup.controllers").exists());
    if found.is_none() {
        eprintln!("cgroup v2 tests: not run: no cgroup v2 mount");
    }
    found
}

/// A test's cgroup v2 slice (`CgroupSlice`, of its own so that parallel
/// tests never share one): on drop, whatever is still in it is killed and
/// it is removed, so a failed test leaves nothing behind. Declared before
/// the cluster: it drops after it.
struct V2Slice {
    mount: PathBuf,
    name: String,
}

impl V2Slice {
    fn new(mount: PathBuf) -> V2Slice {
        V2Slice {
            mount,
            name: format!(
                "muster_e2e_{}_{}.slice",
                std::process::id(),
                e2e::free_port()
            ),
        }
    }

    fn dir(&self) -> PathBuf {
        self.mount.join(&self.name)
    }

    /// The node daemon's base cgroup (its scope in the slice).
    fn base(&self, c: &Cluster) -> PathBuf {
        let scope = node_dir_name(c, "node1");
        let tag = scope.strip_prefix("slurm_").unwrap_or(&scope);
        self.dir().join(format!("{tag}_slurmstepd.scope"))
    }

    /// cgroup.conf for this slice, plus `extra` lines.
    fn conf(&self, extra: &str) -> String {
        format!(
            "CgroupPlugin=cgroup/v2\nCgroupMountpoint={}\nIgnoreSystemd=yes\nCgroupSlice={}\n{extra}",
            self.mount.display(),
            self.name
        )
    }
}

fn v2_kill_and_remove(dir: &Path) {
    for sub in subdirs(dir) {
        v2_kill_and_remove(&sub);
    }
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    let _ = std::fs::write(dir.join("cgroup.freeze"), "0");
    for _ in 0..250 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for V2Slice {
    fn drop(&mut self) {
        v2_kill_and_remove(&self.dir());
    }
}

/// A one-node cluster confined with the cgroup v2 driver in `slice`.
fn v2_cluster(slice: &V2Slice, extra: &str) -> Cluster {
    builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .file("cgroup.conf", &slice.conf(extra))
        .start()
}

/// The v2 cgroup of `pid`, relative to the mount (`0::` line).
fn v2_path(pid: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{}/cgroup", pid.trim())).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

/// The value of `key` in a v2 `cgroup.events` file.
fn v2_event(dir: &Path, key: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
}

/// Stops the cluster and checks that its slice is gone with it: no
/// cgroup left behind by the node daemon.
fn assert_v2_nothing_left(c: Cluster, slice: &V2Slice) {
    let base = slice.base(&c);
    drop(c);
    assert!(!base.exists(), "{} left", base.display());
    assert!(!slice.dir().exists(), "{} left", slice.dir().display());
}

/// Isolation notes §5 test 8 on cgroup v2: a task's daemon (setsid, its
/// parent gone) is in the step's cgroup and dies with the step
/// (`cgroup.kill`); the step's cgroup is gone once it ended; tasks are in
/// `job_J/step_S/user/task_T`; nothing is left after the cluster.
#[test]
fn confine_v2_a_process_that_double_forked_is_killed_when_its_step_ends() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let c = v2_cluster(&slice, "");
    c.write("mount", &slice.mount.display().to_string());
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        "srun sh -c \"sed -n 's/^0:://p' /proc/self/cgroup > task.cg; \
           setsid sh -c 'echo \\$\\$ > s.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
           while [ ! -s s.pid ]; do sleep 0.05; done\"; \
         p=$(cat s.pid); sleep 1; \
         if [ -d /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status; then echo ALIVE; else echo GONE; fi; \
         step0=$(dirname $(dirname $(dirname $(sed -n 's/^0:://p' /proc/self/cgroup))))/step_0; \
         if [ -d $(cat mount)$step0 ]; then echo STEP_CGROUP_LEFT; fi; \
         setsid sh -c 'echo $$ > b.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
         echo $$ > job.pid; while [ ! -s b.pid ]; do sleep 0.05; done",
    ]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    let out = c.read("out");
    assert!(
        out.contains("GONE") && !out.contains("ALIVE"),
        "the step's daemon outlived its step: {out}"
    );
    assert!(!out.contains("STEP_CGROUP_LEFT"), "{out}");
    let base = slice.base(&c);
    let rel = base
        .strip_prefix(&slice.mount)
        .unwrap()
        .display()
        .to_string();
    assert_eq!(
        c.read("task.cg").trim(),
        format!("/{rel}/job_{id}/step_0/user/task_0")
    );
    assert!(!alive(&pid_file(&c, "s.pid")));
    let batch_daemon = pid_file(&c, "b.pid");
    c.wait_until("the batch step's daemon to end", secs(10), || {
        (!alive(&batch_daemon)).then_some(())
    });
    c.wait_until("the job's cgroup to go", secs(10), || {
        (!base.join(format!("job_{id}")).exists()).then_some(())
    });
    assert_v2_nothing_left(c, &slice);
}

/// Isolation notes §5 test 6 on cgroup v2: suspend writes the job's
/// `cgroup.freeze` (done: `frozen 1` in its `cgroup.events`), the batch
/// script and an srun task stop using CPU; resume thaws them.
#[test]
fn confine_v2_suspend_freezes_the_job_and_resume_thaws_it() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let c = v2_cluster(&slice, "");
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        "srun sh -c 'echo $$ > task.pid; while :; do :; done' & \
         echo $$ > job.pid; while :; do :; done",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let task = pid_file(&c, "task.pid");
    let job = slice.base(&c).join(format!("job_{id}"));
    let rel = job
        .strip_prefix(&slice.mount)
        .unwrap()
        .display()
        .to_string();
    assert_eq!(
        v2_path(&pid).as_deref(),
        Some(format!("/{rel}/step_batch/user/task_0").as_str())
    );
    assert_eq!(
        v2_path(&task).as_deref(),
        Some(format!("/{rel}/step_0/user/task_0").as_str())
    );
    c.ok("scontrol", &["suspend", &id.to_string()]);
    c.wait_until("the job to freeze", secs(10), || {
        (v2_event(&job, "frozen") == Some(1)).then_some(())
    });
    assert_eq!(c.job_state(id), "SUSPENDED");
    let before = (cpu_ticks(&pid), cpu_ticks(&task));
    std::thread::sleep(secs(2));
    assert_eq!(
        (cpu_ticks(&pid), cpu_ticks(&task)),
        before,
        "CPU ticks moved while suspended"
    );
    c.ok("scontrol", &["resume", &id.to_string()]);
    c.wait_until("the job and its step to run again", secs(10), || {
        (cpu_ticks(&pid) > before.0 && cpu_ticks(&task) > before.1).then_some(())
    });
    assert_eq!(v2_event(&job, "frozen"), Some(0));
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    c.wait_until("the job's processes to end", secs(10), || {
        (!alive(&pid) && !alive(&task)).then_some(())
    });
    c.wait_until("the job's cgroup to go", secs(10), || {
        (!job.exists()).then_some(())
    });
    assert_v2_nothing_left(c, &slice);
}

/// Isolation notes §5 test 7 on cgroup v2: a suspended (frozen) job that
/// is cancelled leaves no process, not even one that left its session,
/// and no cgroup.
#[test]
fn confine_v2_scancel_of_a_suspended_job_leaves_no_process_and_no_cgroup() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let c = v2_cluster(&slice, "");
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        "setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
         echo $$ > job.pid; sleep 300",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let daemon = pid_file(&c, "daemon.pid");
    let job = slice.base(&c).join(format!("job_{id}"));
    assert_eq!(v2_path(&daemon), v2_path(&pid));
    c.ok("scontrol", &["suspend", &id.to_string()]);
    c.wait_until("the job to freeze", secs(10), || {
        (v2_event(&job, "frozen") == Some(1)).then_some(())
    });
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    c.wait_until("the job's processes to end", secs(10), || {
        (!alive(&pid) && !alive(&daemon)).then_some(())
    });
    c.wait_until("the job's cgroup to go", secs(10), || {
        (!job.exists()).then_some(())
    });
    assert_v2_nothing_left(c, &slice);
}

/// Isolation notes §5 test 11 on cgroup v2: ConstrainDevices with the
/// device filter program loaded for real: a step and a batch job given one
/// GPU open only it (ENXIO: allowed, no driver; EPERM: denied), and the
/// programs attached to the job's cgroups are gone once the job is.
#[test]
fn confine_v2_devices_a_job_opens_only_its_gpu_and_its_programs_go_with_it() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let dev = fake_gpu_devices();
    let slice = V2Slice::new(mount);
    let c = builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .node_extra(1, "Gres=gpu:fake:4")
        .file(
            "gres.conf",
            &format!(
                "Name=gpu Type=fake File={}/nvidia[0-3]\n",
                dev.path().display()
            ),
        )
        .file("cgroup.conf", &slice.conf("ConstrainDevices=yes\n"))
        .start();
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--gres=gpu:1",
            "bash",
            "-c",
            &format!("echo $SLURM_STEP_GPUS; {}", probe(dev.path())),
        ],
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{out}\n{}", c.logs());
    let gpu: usize = lines[0].trim().parse().expect("a GPU index");
    assert_eq!(lines[1], only(gpu), "{out}\n{}", c.logs());
    // A batch job that waits for the test to look at its programs.
    let id = c.submit(&[
        "-o",
        "out",
        "--gres=gpu:1",
        "--wrap",
        &format!(
            "echo x > started; while [ ! -e go ]; do sleep 0.1; done; echo $SLURM_JOB_GPUS; {}",
            probe(dev.path())
        ),
    ]);
    c.wait_file("started", secs(10));
    let job = slice.base(&c).join(format!("job_{id}"));
    let mut ids = Vec::new();
    for dir in [job.clone(), job.join("step_batch/user")] {
        let attached = noded::devices::load::attached(&dir).expect("BPF_PROG_QUERY");
        assert!(!attached.ids.is_empty(), "no program on {}", dir.display());
        ids.extend(attached.ids);
    }
    assert!(ids.iter().all(|p| noded::devices::load::is_loaded(*p)));
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    let text = c.read("out");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}\n{}", c.logs());
    let gpu: usize = lines[0].trim().parse().expect("a GPU index");
    assert_eq!(lines[1], only(gpu), "{text}\n{}", c.logs());
    c.wait_until("the job's cgroup and programs to go", secs(10), || {
        (!job.exists() && !ids.iter().any(|p| noded::devices::load::is_loaded(*p))).then_some(())
    });
    assert_v2_nothing_left(c, &slice);
}

/// A v2 mount without the memory controller does for tracking, freezing
/// and devices, but not for ConstrainRAMSpace=yes: the node daemon
/// refuses to start and says which controller is missing and why.
#[test]
fn confine_v2_a_mount_without_the_memory_controller_refuses_constrain_ram_space() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let controllers = std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap();
    if controllers.split_whitespace().any(|c| c == "memory") {
        eprintln!("not run: {} has the memory controller", mount.display());
        return;
    }
    let slice = V2Slice::new(mount.clone());
    let mut c = builder()
        .nodes(1)
        .wait_nodes(false)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .file("cgroup.conf", &slice.conf("ConstrainRAMSpace=yes\n"))
        .start();
    let status = c
        .wait_node_exit("node1", secs(20))
        .expect("the node daemon to exit");
    assert!(!status.success());
    let log = c.log("noded-node1");
    let want = format!(
        "cgroup controller memory is not available (ConstrainRAMSpace=yes needs it): {}",
        mount.join("cgroup.controllers").display()
    );
    assert!(log.contains(&want), "{log}");
    drop(c);
    assert!(!slice.dir().exists(), "{} left", slice.dir().display());
}

/// On cgroup v2 the extern step's holder (PrologFlags=Contain) is in
/// `step_extern/user/task_0` and ends with the job.
#[test]
fn confine_v2_the_extern_step_holder_is_in_step_extern_and_ends_with_the_job() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let c = builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\nPrologFlags=Contain\n")
        .file("cgroup.conf", &slice.conf(""))
        .start();
    let id = c.submit(&["-o", "out", "--wrap", "sleep 300"]);
    c.wait_state(id, "RUNNING", secs(10));
    let job = slice.base(&c).join(format!("job_{id}"));
    let holder_procs = job.join("step_extern/user/task_0/cgroup.procs");
    // The holder joins its cgroup before it execs `sleep`: until then its
    // command line is the node daemon's.
    let holder = c.wait_until("the extern step's holder", secs(10), || {
        let p = std::fs::read_to_string(&holder_procs).unwrap_or_default();
        let pid = p.lines().next()?.to_string();
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline.starts_with("sleep").then_some(pid)
    });
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    c.wait_until("the holder and the job's cgroup to go", secs(10), || {
        (!alive(&holder) && !job.exists()).then_some(())
    });
    assert_v2_nothing_left(c, &slice);
}

/// On cgroup v2, PrologFlags=RunInJob: the Prolog and Epilog are in
/// `job_J/step_prolog/user/task_0` and `.../step_epilog/...`, gone with
/// the job.
#[test]
fn confine_v2_run_in_job_puts_the_prolog_and_epilog_in_the_jobs_cgroup() {
    use std::os::unix::fs::PermissionsExt;
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    for name in ["prolog", "epilog"] {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\n/bin/cat /proc/$$/cgroup > {d}/{name}.cg\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "ProctrackType=proctrack/cgroup\nPrologFlags=RunInJob\n\
             Prolog={d}/prolog\nEpilog={d}/epilog\n"
        ))
        .file("cgroup.conf", &slice.conf(""))
        .start();
    let id = c.submit(&["-o", "out", "--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED");
    for step in ["prolog", "epilog"] {
        let text = std::fs::read_to_string(dir.path().join(format!("{step}.cg"))).unwrap();
        let unified = text
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or("");
        assert!(
            unified.ends_with(&format!("/job_{id}/step_{step}/user/task_0")),
            "{text}"
        );
    }
    let job = slice.base(&c).join(format!("job_{id}"));
    c.wait_until("the job's cgroup to go", secs(10), || {
        (!job.exists()).then_some(())
    });
    assert_v2_nothing_left(c, &slice);
}

/// On cgroup v2 a node daemon restarted after its job's processes died
/// unwatched removes the job's cgroup.
#[test]
fn confine_v2_a_restarted_daemon_removes_the_cgroups_of_jobs_that_are_gone() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let mut c = v2_cluster(&slice, "");
    let id = c.submit(&["-o", "out", "--wrap", "echo $$ > job.pid; sleep 300"]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    let supervisor = parent_of(&pid);
    let job = slice.base(&c).join(format!("job_{id}"));
    wait_launch_answered(&c, id);
    c.kill_node("node1");
    sigkill(&supervisor);
    // cgroup.kill: every process of the job dies while no daemon watches.
    std::fs::write(job.join("cgroup.kill"), "1").unwrap();
    c.wait_until("the job's processes to die", secs(10), || {
        (v2_event(&job, "populated") == Some(0) && !alive(&supervisor)).then_some(())
    });
    assert!(job.is_dir());
    c.start_node_with("node1", &[]);
    c.wait_until("the job's cgroup to go", secs(10), || {
        (!job.exists()).then_some(())
    });
    c.wait_done(id, secs(30));
    assert_v2_nothing_left(c, &slice);
}

/// The memory cgroup of `pid` (relative to the v1 memory mount).
fn memory_path(pid: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{}/cgroup", pid.trim())).ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let ctrls = parts.next()?;
        let path = parts.next()?;
        ctrls
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    })
}

/// Isolation notes §5 test 1 (cgroup v1): with ConstrainRAMSpace=yes the
/// job's memory cgroup is limited to the job's memory on the node (all
/// its steps together), and each step's to its own: the batch step to the
/// job's, an srun step to its `--mem`.
#[test]
fn confine_memory_the_job_and_each_step_are_limited_to_their_memory() {
    if !Path::new(CGROUP_ROOT).join("memory/cgroup.procs").exists() {
        eprintln!("not run: no cgroup v1 memory hierarchy");
        return;
    }
    let guard = CgGuard::default();
    let c = builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\n")
        .file(
            "cgroup.conf",
            "CgroupPlugin=cgroup/v1\nIgnoreSystemd=yes\nConstrainRAMSpace=yes\n",
        )
        .start();
    guard.set_node_dir(node_dir_name(&c, "node1"));
    let id = c.submit(&[
        "-o",
        "out",
        "--mem=300",
        "--wrap",
        "srun --mem=100 sh -c 'echo $$ > task.pid; sleep 300' & \
         echo $$ > job.pid; sleep 300",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = pid_file(&c, "job.pid");
    pid_file(&c, "task.pid");
    let memory = memory_path(&pid).expect("the job's memory cgroup");
    let job = job_dir("memory", &memory, id);
    let limit = |rel: &str| -> u64 {
        let file = job.join(rel).join("memory.limit_in_bytes");
        std::fs::read_to_string(&file)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{}", file.display()))
    };
    const MIB: u64 = 1024 * 1024;
    assert_eq!(limit(""), 300 * MIB, "the job's limit");
    assert_eq!(limit("step_batch"), 300 * MIB, "the batch step's limit");
    assert_eq!(limit("step_0"), 100 * MIB, "the srun step's limit");
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    let freezer = freezer_path(&pid).unwrap_or(memory);
    assert_job_cgroups_gone(&c, &freezer, id);
}

/// On cgroup v2 without controllers, `jobacct_gather/cgroup` still gives a
/// step's usage: CPU from each task cgroup's `cpu.stat` (a core file), the
/// memory high-water mark from the task's rusage where the mount has no
/// `memory.peak`.
#[test]
fn confine_v2_usage_is_gathered_from_task_cgroups_without_controllers() {
    let Some(mount) = unified_mount() else {
        return;
    };
    let slice = V2Slice::new(mount);
    let c = builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\nJobAcctGatherType=jobacct_gather/cgroup\n")
        .file("cgroup.conf", &slice.conf(""))
        .start();
    let id = c.submit(&[
        "-o",
        "out",
        "--wrap",
        "srun dd if=/dev/zero of=/dev/null bs=64M count=8 2>/dev/null",
    ]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    let row = c.wait_until("the step's usage in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-j",
                &format!("{id}.0"),
                "-n",
                "-P",
                "-o",
                "MaxRSS,TotalCPU",
            ],
        );
        o.stdout
            .lines()
            .find(|l| !l.starts_with('|') && !l.trim().is_empty())
            .map(str::to_string)
    });
    let fields: Vec<&str> = row.split('|').collect();
    let rss_kib: u64 = fields[0]
        .trim_end_matches('K')
        .parse()
        .unwrap_or_else(|_| panic!("MaxRSS in K: {row}"));
    assert!(
        rss_kib >= 64 * 1024,
        "MaxRSS below the 64 MiB buffer: {row}"
    );
    assert_ne!(fields[1], "00:00:00", "TotalCPU: {row}");
    assert_v2_nothing_left(c, &slice);
}

/// A one-node cluster (`CPUs=2`, this host's two) whose jobs are held to
/// their cores (`ConstrainCores=yes`) and whose tasks are bound
/// (`TaskPlugin=task/affinity`).
fn cores_cluster() -> Cluster {
    cores_builder().start()
}

fn cores_builder() -> e2e::Builder {
    builder()
        .nodes(1)
        .conf_extra("ProctrackType=proctrack/cgroup\nTaskPlugin=task/affinity,task/cgroup\n")
        .file(
            "cgroup.conf",
            "CgroupPlugin=autodetect\nIgnoreSystemd=yes\nConstrainCores=yes\n",
        )
}

fn cores_guard(c: &Cluster) -> CgGuard {
    let guard = CgGuard {
        node_dir: Mutex::default(),
        devices: false,
        cpuset: true,
    };
    guard.set_node_dir(node_dir_name(c, "node1"));
    guard
}

/// Waits until no job directory is left below the node's directory of
/// controller `ctrl`.
fn assert_no_job_cgroups(c: &Cluster, ctrl: &str) {
    let node = Path::new(CGROUP_ROOT)
        .join(ctrl)
        .join(node_dir_name(c, "node1"));
    fn jobs_below(dir: &Path) -> usize {
        subdirs(dir)
            .iter()
            .map(|d| {
                let own = d
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("job_"));
                usize::from(own) + jobs_below(d)
            })
            .sum()
    }
    c.wait_until("the job cgroups to go", secs(10), || {
        (jobs_below(&node) == 0).then_some(())
    });
}

/// The `Cpus_allowed_list` line's value in a job's output.
fn allowed(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_else(|| panic!("no Cpus_allowed_list in {text:?}"))
        .trim()
        .to_string()
}

/// Isolation notes §5 test 5 (issue 37 item 4): two one-CPU jobs on one
/// node run on different CPUs, each held there by its cpuset; `scontrol
/// show job -d` names each one's `CPU_IDs`; no cpuset is left after.
#[test]
fn confine_cores_two_jobs_on_one_node_get_disjoint_cpusets() {
    let c = cores_cluster();
    let _guard = cores_guard(&c);
    let script = "grep Cpus_allowed_list /proc/self/status; \
                  while [ ! -e go ]; do sleep 0.1; done";
    let a = c.submit(&["-n1", "-o", "a.out", "--wrap", script]);
    let b = c.submit(&["-n1", "-o", "b.out", "--wrap", script]);
    c.wait_state(a, "RUNNING", secs(10));
    c.wait_state(b, "RUNNING", secs(10));
    let ids: Vec<String> = [a, b]
        .iter()
        .map(|id| {
            let out = c.ok("scontrol", &["show", "job", "-d", &id.to_string()]);
            out.stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix("Nodes=node1 CPU_IDs="))
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("no CPU_IDs line: {out}"))
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["0", "1"]);
    let lists: Vec<String> = ["a.out", "b.out"]
        .iter()
        .map(|name| {
            c.wait_until(name, secs(10), || {
                let t = c.read(name);
                t.contains("Cpus_allowed_list").then(|| allowed(&t))
            })
        })
        .collect();
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(lists, ["0", "1"], "{}", c.logs());
    assert_no_job_cgroups(&c, "cpuset");
}

/// Isolation notes §5 test 4: a task bound to its core cannot move itself
/// to the node's other CPU (the cpuset refuses: EINVAL), and its step's
/// cpuset is the job's one CPU.
#[test]
fn confine_cores_a_task_cannot_escape_with_taskset() {
    let c = cores_cluster();
    let _guard = cores_guard(&c);
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--cpu-bind=cores",
            "bash",
            "-c",
            "grep Cpus_allowed_list /proc/self/status; \
             mine=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status); \
             taskset -pc $((1 - mine)) $$ >/dev/null 2>&1; echo taskset=$?; \
             grep Cpus_allowed_list /proc/self/status",
        ],
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{out}\n{}", c.logs());
    assert_eq!(allowed(lines[0]), "0", "{out}");
    assert_eq!(lines[1], "taskset=1", "{out}");
    assert_eq!(allowed(lines[2]), "0", "{out}");
    assert_no_job_cgroups(&c, "cpuset");
}

/// srun(1) `--cpu-bind=verbose,cores`: each task's binding on its stderr
/// in Slurm's form, and the `SLURM_CPU_BIND*` variables as task/affinity
/// sets them; `--cpu-bind=none` binds nothing and says so.
#[test]
fn confine_cores_cpu_bind_verbose_prints_the_mask_and_sets_the_variables() {
    let c = cores_cluster();
    let _guard = cores_guard(&c);
    let out = c.ok(
        "srun",
        &[
            "-n2",
            "--cpu-bind=verbose,cores",
            "bash",
            "-c",
            "echo $SLURM_PROCID $SLURM_CPU_BIND $SLURM_CPU_BIND_TYPE $SLURM_CPU_BIND_LIST \
             $SLURM_CPU_BIND_VERBOSE $(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)",
        ],
    );
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "0 verbose,mask_cpu:0x1,0x2 mask_cpu: 0x1,0x2 verbose 0",
            "1 verbose,mask_cpu:0x1,0x2 mask_cpu: 0x1,0x2 verbose 1",
        ],
        "{out}\n{}",
        c.logs()
    );
    let mut said: Vec<String> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("cpu-bind="))
        .map(|l| {
            // The pid differs from run to run.
            let (head, tail) = l.split_once('[').expect("a pid");
            let (_, rest) = tail.split_once(']').expect("a pid");
            format!("{head}[PID]{rest}")
        })
        .collect();
    said.sort();
    assert_eq!(
        said,
        [
            "cpu-bind=MASK - node1, task  0  0 [PID]: mask 0x1 set",
            "cpu-bind=MASK - node1, task  1  1 [PID]: mask 0x2 set",
        ],
        "{out}"
    );
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--cpu-bind=none",
            "bash",
            "-c",
            "echo $SLURM_CPU_BIND $SLURM_CPU_BIND_TYPE",
        ],
    );
    assert_eq!(out.stdout, "quiet,none none\n", "{out}");
    assert!(!out.stderr.contains("cpu-bind="), "{out}");
    // --hint=nomultithread: one thread per core, bound.
    let out = c.ok(
        "srun",
        &[
            "-n1",
            "--hint=nomultithread",
            "bash",
            "-c",
            "echo $SLURM_CPU_BIND",
        ],
    );
    assert_eq!(out.stdout, "quiet,mask_cpu:0x1\n", "{out}");
    let out = c.run("srun", &["-n1", "--cpu-bind=bogus", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr, "srun: error: invalid --cpu-bind argument: bogus\n",
        "{out}"
    );
    assert_no_job_cgroups(&c, "cpuset");
}

/// The ids in a kernel CPU list (`0-1,4`).
fn cpu_ids(list: &str) -> Vec<u32> {
    list.split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|p| match p.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<u32>>(),
            None => vec![p.parse().unwrap()],
        })
        .collect()
}

/// A node that claims more CPUs than this host has (as the nodes of a
/// test cluster may): its CPU ids land on the host's CPUs modulo their
/// number, so a job on ids 2-3 still runs, held to host CPUs that exist.
#[test]
fn confine_cores_a_node_claiming_more_cpus_than_the_host_has_still_runs_jobs() {
    let c = cores_builder()
        .node_line_override(1, "CPUs=4 RealMemory=2000")
        .start();
    let _guard = cores_guard(&c);
    let host = cpu_ids(&allowed(
        &std::fs::read_to_string("/proc/self/status").unwrap(),
    ));
    let a = c.submit(&[
        "-n2",
        "-o",
        "a.out",
        "--wrap",
        "while [ ! -e go ]; do sleep 0.1; done",
    ]);
    c.wait_state(a, "RUNNING", secs(10));
    let b = c.submit(&[
        "-n2",
        "-o",
        "b.out",
        "--wrap",
        "grep Cpus_allowed_list /proc/self/status; while [ ! -e go ]; do sleep 0.1; done",
    ]);
    c.wait_state(b, "RUNNING", secs(10));
    let out = c.ok("scontrol", &["show", "job", "-d", &b.to_string()]);
    assert!(out.stdout.contains(" CPU_IDs=2-3 "), "{out}");
    let text = c.wait_until("b.out", secs(10), || {
        let t = c.read("b.out");
        t.contains("Cpus_allowed_list").then_some(t)
    });
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    let mut want: Vec<u32> = [2usize, 3].iter().map(|i| host[i % host.len()]).collect();
    want.sort_unstable();
    want.dedup();
    assert_eq!(cpu_ids(&allowed(&text)), want, "{}", c.logs());
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    assert_no_job_cgroups(&c, "cpuset");
}

/// A `cores_builder` node (`CPUs=2`, tasks bound by task/affinity) with
/// two fake GPUs, each near one CPU: `nvidia0` near CPU `cores0`,
/// `nvidia1` near CPU `cores1` (gres.conf `Cores=`).
fn gpu_cores_cluster(dev: &Path, cores0: u32, cores1: u32) -> Cluster {
    cores_builder()
        .node_extra(1, "Gres=gpu:fake:2")
        .file(
            "gres.conf",
            &format!(
                "Name=gpu Type=fake File={d}/nvidia0 Cores={cores0}\n\
                 Name=gpu Type=fake File={d}/nvidia1 Cores={cores1}\n",
                d = dev.display()
            ),
        )
        .start()
}

/// Isolation notes §5 test 16 (issue 37 item 6): with `--gpu-bind=closest`
/// each of two tasks, bound to one CPU each, gets the GPU whose `Cores=`
/// hold its CPU: task 0 (CPU 0) GPU 1, task 1 (CPU 1) GPU 0 here, as
/// gres.conf puts them the other way round. SLURM_STEP_GPUS names both.
#[test]
fn confine_gpus_closest_gives_each_task_the_gpu_near_its_cpu() {
    let dev = fake_gpu_devices();
    let c = gpu_cores_cluster(dev.path(), 1, 0);
    let _guard = cores_guard(&c);
    let out = c.ok(
        "srun",
        &[
            "-n2",
            "-l",
            "--gres=gpu:2",
            "--cpu-bind=cores",
            "--gpu-bind=closest",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS \
             $(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)",
        ],
    );
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0: 1 0,1 0", "1: 0 0,1 1"], "{out}\n{}", c.logs());
    // Without it every task sees both.
    let out = c.ok(
        "srun",
        &[
            "-n2",
            "-l",
            "--gres=gpu:2",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES",
        ],
    );
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0: 0,1", "1: 0,1"], "{out}");
    assert_no_job_cgroups(&c, "cpuset");
}

/// The `Nodes=` detail line of `scontrol show job -d`.
fn detail_line(c: &Cluster, id: u32) -> String {
    let out = c.ok("scontrol", &["show", "job", "-d", &id.to_string()]);
    out.stdout
        .lines()
        .find(|l| l.trim().starts_with("Nodes=node1 CPU_IDs="))
        .unwrap_or_else(|| panic!("no detail line: {out}"))
        .trim()
        .to_string()
}

/// Issue 37 item 6: `--gres-flags=enforce-binding` gives a job CPU ids
/// within its GPU's `Cores=`: GPU 0 (near CPU 1) comes with CPU 1, not
/// the lowest free id; the next such job gets GPU 1 and CPU 0. A job that
/// needs more CPUs than any GPU is near is refused as Slurm refuses it.
#[test]
fn confine_gpus_enforce_binding_gives_cpu_ids_near_the_gpu() {
    let dev = fake_gpu_devices();
    let c = gpu_cores_cluster(dev.path(), 1, 0);
    let _guard = cores_guard(&c);
    let wait = "grep Cpus_allowed_list /proc/self/status; \
                while [ ! -e go ]; do sleep 0.1; done";
    let bound = |out: &str| {
        c.submit(&[
            "-n1",
            "-o",
            out,
            "--gres=gpu:1",
            "--gres-flags=enforce-binding",
            "--wrap",
            wait,
        ])
    };
    let a = bound("a.out");
    c.wait_state(a, "RUNNING", secs(10));
    let line = detail_line(&c, a);
    assert!(
        line.starts_with("Nodes=node1 CPU_IDs=1 ") && line.ends_with(" GRES=gpu:fake:1(IDX:0)"),
        "{line}\n{}",
        c.logs()
    );
    let b = bound("b.out");
    c.wait_state(b, "RUNNING", secs(10));
    let line = detail_line(&c, b);
    assert!(
        line.starts_with("Nodes=node1 CPU_IDs=0 ") && line.ends_with(" GRES=gpu:fake:1(IDX:1)"),
        "{line}"
    );
    let a_list = c.wait_until("a.out", secs(10), || {
        let t = c.read("a.out");
        t.contains("Cpus_allowed_list").then(|| allowed(&t))
    });
    assert_eq!(a_list, "1", "{}", c.logs());
    // Two CPUs near one GPU: no GPU has them.
    let out = c.run(
        "sbatch",
        &[
            "-n2",
            "--gres=gpu:1",
            "--gres-flags=enforce-binding",
            "--wrap",
            "true",
        ],
    );
    assert!(!out.ok(), "{out}");
    assert_eq!(
        out.stderr.trim(),
        "sbatch: error: Batch job submission failed: Requested node configuration is not available",
        "{out}"
    );
    let out = c.run("sbatch", &["--gres-flags=bogus", "--wrap", "true"]);
    assert_eq!(
        out.stderr.trim(),
        "sbatch: error: Invalid --gres-flags specification",
        "{out}"
    );
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    assert_no_job_cgroups(&c, "cpuset");
}

/// Issue 37 item 4 on a node of two threads per core: this host's CPUs 0
/// and 1 declared as one core's two threads (`Sockets=1 CoresPerSocket=1
/// ThreadsPerCore=2`). Under `CR_Core` a one-task job takes the whole
/// core, as Slurm's select/cons_tres does (`NumCPUs=2`, `CPU_IDs=0-1`,
/// `SLURM_CPUS_ON_NODE=2`, its cpuset and its batch step's binding both
/// threads), so a second one waits (`Resources`) until the first ends;
/// under `CR_CPU` the two run at once, a thread each.
#[test]
fn confine_cores_a_core_of_two_threads_goes_to_one_job_under_cr_core() {
    let script = |go: &str| {
        format!(
            "grep Cpus_allowed_list /proc/self/status; echo cpus=$SLURM_CPUS_ON_NODE; \
             while [ ! -e {go} ]; do sleep 0.1; done"
        )
    };
    let smt = "Sockets=1 CoresPerSocket=1 ThreadsPerCore=2 RealMemory=2000";
    let show = |c: &Cluster, id: u32| -> (String, String) {
        let out = c.ok("scontrol", &["show", "job", "-d", &id.to_string()]);
        let word = |key: &str| {
            out.stdout
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key} in {out}"))
                .to_string()
        };
        (word("NumCPUs="), word("CPU_IDs="))
    };
    let out_of = |c: &Cluster, name: &str| -> (String, String) {
        c.wait_until(name, secs(10), || {
            let t = c.read(name);
            let cpus = t.lines().find_map(|l| l.strip_prefix("cpus="))?.to_string();
            Some((allowed(&t), cpus))
        })
    };

    // CR_Core (the harness's CR_Core_Memory): one job at a time.
    let c = cores_builder().node_line_override(1, smt).start();
    let _guard = cores_guard(&c);
    let a = c.submit(&["-n1", "-o", "a.out", "--wrap", &script("go_a")]);
    let b = c.submit(&["-n1", "-o", "b.out", "--wrap", &script("go_b")]);
    c.wait_state(a, "RUNNING", secs(10));
    let pending = c.wait_until("b to wait for Resources", secs(10), || {
        let o = c.ok("squeue", &["-h", "-j", &b.to_string(), "-o", "%T %r"]);
        (o.stdout.trim() == "PENDING Resources").then_some(o.stdout)
    });
    assert_eq!(pending.trim(), "PENDING Resources");
    assert_eq!(show(&c, a), ("2".to_string(), "0-1".to_string()));
    assert_eq!(out_of(&c, "a.out"), ("0-1".to_string(), "2".to_string()));
    std::fs::write(c.work().join("go_a"), "").unwrap();
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    c.wait_state(b, "RUNNING", secs(30));
    assert_eq!(show(&c, b), ("2".to_string(), "0-1".to_string()));
    assert_eq!(out_of(&c, "b.out"), ("0-1".to_string(), "2".to_string()));
    std::fs::write(c.work().join("go_b"), "").unwrap();
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    assert_no_job_cgroups(&c, "cpuset");
    drop(c);

    // CR_CPU: each thread a CPU, the two jobs at once.
    let c = cores_builder()
        .node_line_override(1, smt)
        .conf_extra("SelectTypeParameters=CR_CPU_Memory\n")
        .start();
    let _guard = cores_guard(&c);
    let a = c.submit(&["-n1", "-o", "a.out", "--wrap", &script("go")]);
    let b = c.submit(&["-n1", "-o", "b.out", "--wrap", &script("go")]);
    c.wait_state(a, "RUNNING", secs(10));
    c.wait_state(b, "RUNNING", secs(10));
    assert_eq!(show(&c, a), ("1".to_string(), "0".to_string()));
    assert_eq!(show(&c, b), ("1".to_string(), "1".to_string()));
    assert_eq!(out_of(&c, "a.out"), ("0".to_string(), "1".to_string()));
    assert_eq!(out_of(&c, "b.out"), ("1".to_string(), "1".to_string()));
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    assert_no_job_cgroups(&c, "cpuset");
}

/// task/affinity without cgroups binds the batch step to the job's CPUs
/// on its node, as Slurm's does (two one-CPU jobs: CPU 0 and CPU 1); and
/// `TaskPluginParam=verbose` makes a step's binding verbose by default.
#[test]
fn affinity_binds_the_batch_step_to_the_jobs_cpus() {
    let c = builder()
        .nodes(1)
        .conf_extra("TaskPlugin=task/affinity\nTaskPluginParam=Verbose\n")
        .start();
    let script = "grep Cpus_allowed_list /proc/self/status; \
                  while [ ! -e go ]; do sleep 0.1; done";
    let a = c.submit(&["-n1", "-o", "a.out", "--wrap", script]);
    let b = c.submit(&["-n1", "-o", "b.out", "--wrap", script]);
    c.wait_state(a, "RUNNING", secs(10));
    c.wait_state(b, "RUNNING", secs(10));
    let lists: Vec<String> = ["a.out", "b.out"]
        .iter()
        .map(|name| {
            c.wait_until(name, secs(10), || {
                let t = c.read(name);
                t.contains("Cpus_allowed_list").then(|| allowed(&t))
            })
        })
        .collect();
    std::fs::write(c.work().join("go"), "").unwrap();
    assert_eq!(c.wait_done(a, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(lists, ["0", "1"], "{}", c.logs());
    let out = c.ok("srun", &["-n1", "true"]);
    assert!(
        out.stderr.contains("cpu-bind=MASK - node1, task  0  0 ["),
        "{out}\n{}",
        c.logs()
    );
}
