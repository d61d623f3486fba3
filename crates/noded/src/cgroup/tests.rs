//! Both drivers against fake cgroup trees (plain files in a temporary
//! directory, so v2 is covered on a v1 host and the other way round), and
//! the v1 driver against this host's real hierarchies (root).

use super::*;
use std::time::Duration;

fn conf(plugin: conf::CgroupPlugin, mount: &Path) -> conf::CgroupConf {
    conf::CgroupConf {
        plugin,
        mountpoint: mount.to_string_lossy().into_owned(),
        ..conf::CgroupConf::default()
    }
}

/// A fake v1 mount: one directory per controller, each a "cgroup"
/// (it has `cgroup.procs`); cpuset with CPUs and memory nodes.
fn fake_v1(controllers: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for c in controllers {
        std::fs::create_dir(dir.path().join(c)).unwrap();
        std::fs::write(dir.path().join(c).join("cgroup.procs"), "").unwrap();
    }
    if controllers.contains(&"cpuset") {
        std::fs::write(dir.path().join("cpuset/cpuset.cpus"), "0-1\n").unwrap();
        std::fs::write(dir.path().join("cpuset/cpuset.mems"), "0\n").unwrap();
    }
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn node_tag_names_the_node_and_tells_spools_apart() {
    let a = node_tag("n1", Path::new("/var/spool/a"));
    let b = node_tag("n1", Path::new("/var/spool/b"));
    assert!(a.starts_with("n1-") && a.len() == 11, "{a}");
    assert_ne!(a, b);
    assert_eq!(a, node_tag("n1", Path::new("/var/spool/a")));
}

#[test]
fn v1_settings_find_controllers_and_name_a_missing_one() {
    let root = fake_v1(&["freezer", "cpu,cpuacct", "memory", "cpuset"]);
    let mut c = conf(conf::CgroupPlugin::Autodetect, root.path());
    c.constrain_cores = true;
    let s = CgroupSettings::from_conf(&c, "n1", Path::new("/spool")).unwrap();
    assert_eq!(s.version, Version::V1);
    let names: Vec<&str> = s.controllers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["freezer", "cpuacct", "memory", "cpuset"]);
    assert_eq!(s.controllers[1].1, root.path().join("cpu,cpuacct"));
    let tag = node_tag("n1", Path::new("/spool"));
    assert!(root
        .path()
        .join("freezer")
        .join(format!("slurm_{tag}"))
        .is_dir());
    // The node directory of cpuset got the mount's CPUs.
    assert_eq!(
        read(
            &root
                .path()
                .join("cpuset")
                .join(format!("slurm_{tag}"))
                .join("cpuset.cpus")
        ),
        "0-1"
    );

    c.constrain_devices = true;
    let err = CgroupSettings::from_conf(&c, "n1", Path::new("/spool")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cgroup controller devices is not available (ConstrainDevices=yes needs it): {}",
            root.path().join("devices").display()
        )
    );
}

#[test]
fn v2_on_a_v1_mount_is_refused_naming_the_mount() {
    let root = fake_v1(&["freezer", "cpuacct", "memory"]);
    let c = conf(conf::CgroupPlugin::V2, root.path());
    let err = CgroupSettings::from_conf(&c, "n1", Path::new("/spool")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "CgroupPlugin=cgroup/v2: {} is not a cgroup v2 (unified) mount: it has no cgroup.controllers",
            root.path().display()
        )
    );
}

#[test]
fn v2_settings_need_the_controllers_constrained() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("cgroup.controllers"), "cpu io pids\n").unwrap();
    let mut c = conf(conf::CgroupPlugin::Autodetect, root.path());
    c.ignore_systemd = true;
    // Autodetect wants memory and cpu for v2: this is taken as v1, which
    // has no controllers here.
    let err = CgroupSettings::from_conf(&c, "n1", Path::new("/s")).unwrap_err();
    assert!(err.to_string().contains("controller freezer"), "{err}");
    c.plugin = conf::CgroupPlugin::V2;
    c.constrain_ram_space = true;
    let err = CgroupSettings::from_conf(&c, "n1", Path::new("/s")).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "cgroup controller memory is not available (ConstrainRAMSpace=yes needs it)"
        ),
        "{err}"
    );
    c.constrain_ram_space = false;
    let s = CgroupSettings::from_conf(&c, "n1", Path::new("/s")).unwrap();
    assert_eq!(s.version, Version::V2);
    let tag = node_tag("n1", Path::new("/s"));
    assert_eq!(
        s.base,
        Path::new("system.slice").join(format!("{tag}_slurmstepd.scope"))
    );
    assert!(root.path().join(&s.base).is_dir());
    // The daemon made the slice and its scope: both go at its release.
    s.driver().release();
    assert!(!root.path().join("system.slice").exists());
}

#[test]
fn own_v2_cgroup_is_the_zero_line() {
    let text = "12:freezer:/\n0::/system.slice/slurmd.service\n";
    assert_eq!(
        parse_own_v2_cgroup(text),
        Some(PathBuf::from("system.slice/slurmd.service"))
    );
    assert_eq!(parse_own_v2_cgroup("4:memory:/x\n"), None);
}

fn v1_fake_settings(root: &Path) -> CgroupSettings {
    let mut c = conf(conf::CgroupPlugin::V1, root);
    c.constrain_cores = true;
    let mut s = CgroupSettings::from_conf(&c, "n1", Path::new("/spool")).unwrap();
    s.settle = Duration::from_millis(50);
    s
}

#[test]
fn v1_layout_is_slurms_in_every_controller() {
    let root = fake_v1(&["freezer", "cpuacct", "memory", "cpuset"]);
    let d = v1_fake_settings(root.path()).driver();
    let tag = node_tag("n1", Path::new("/spool"));
    let step = CgPath::job(1000, 7).step("batch");
    d.create_step(&step).unwrap();
    let dirs = d.create_task(&step.task(0)).unwrap();
    let rel = Path::new(&format!("slurm_{tag}")).join("uid_1000/job_7/step_batch/task_0");
    for c in ["freezer", "cpuacct", "memory", "cpuset"] {
        assert!(root.path().join(c).join(&rel).is_dir(), "{c}");
    }
    assert_eq!(dirs.procs.len(), 4);
    assert_eq!(
        dirs.procs[0],
        root.path().join("freezer").join(&rel).join("cgroup.procs")
    );
    assert_eq!(dirs.memory, root.path().join("memory").join(&rel));
    assert_eq!(dirs.cpu, root.path().join("cpuacct").join(&rel));
    // Every cpuset level has CPUs and memory nodes before a task joins.
    assert_eq!(
        read(&root.path().join("cpuset").join(&rel).join("cpuset.cpus")),
        "0-1"
    );
    assert_eq!(
        read(&root.path().join("cpuset").join(&rel).join("cpuset.mems")),
        "0"
    );
    assert_eq!(
        d.dir(&step),
        root.path().join("freezer").join(rel.parent().unwrap())
    );
}

#[test]
fn v1_pids_freeze_thaw_oom_and_limits() {
    let root = fake_v1(&["freezer", "cpuacct", "memory", "cpuset"]);
    let d = v1_fake_settings(root.path()).driver();
    let step = CgPath::job(0, 3).step("0");
    d.create_step(&step).unwrap();
    d.create_task(&step.task(0)).unwrap();
    d.create_task(&step.task(1)).unwrap();
    assert!(d.is_empty(&step));
    let sdir = d.dir(&step);
    std::fs::write(sdir.join("task_0/cgroup.procs"), "11\n12\n").unwrap();
    std::fs::write(sdir.join("task_1/cgroup.procs"), "13\n").unwrap();
    let mut pids = d.pids(&step);
    pids.sort();
    assert_eq!(pids, [11, 12, 13]);
    assert!(!d.is_empty(&step));
    assert!(!d.is_empty(&CgPath::job(0, 3)));
    d.freeze(&step).unwrap();
    assert_eq!(read(&sdir.join("freezer.state")), "FROZEN");
    d.thaw(&step).unwrap();
    assert_eq!(read(&sdir.join("freezer.state")), "THAWED");

    let mdir = root
        .path()
        .join("memory")
        .join(sdir.strip_prefix(root.path().join("freezer")).unwrap());
    std::fs::write(
        mdir.join("memory.oom_control"),
        "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
    )
    .unwrap();
    std::fs::write(
        mdir.join("task_1/memory.oom_control"),
        "oom_kill_disable 0\noom_kill 2\n",
    )
    .unwrap();
    assert_eq!(d.oom_kills(&step), 2);
    d.set_memory_limit(&step, 100 << 20, Some(0)).unwrap();
    assert_eq!(
        read(&mdir.join("memory.limit_in_bytes")),
        (100u64 << 20).to_string()
    );
    assert_eq!(
        read(&mdir.join("memory.memsw.limit_in_bytes")),
        (100u64 << 20).to_string()
    );
    assert_eq!(d.jobs(), [CgPath::job(0, 3)]);
}

#[test]
fn v1_remove_takes_the_step_then_empty_job_and_user_levels() {
    let root = fake_v1(&["freezer", "cpuacct", "memory"]);
    // No cpuset in this tree.
    let c = conf(conf::CgroupPlugin::V1, root.path());
    let d = CgroupSettings::from_conf(&c, "n1", Path::new("/spool"))
        .unwrap()
        .driver();
    let job = CgPath::job(5, 9);
    d.create_step(&job.step("batch")).unwrap();
    d.create_task(&job.step("batch").task(0)).unwrap();
    d.create_step(&job.step("0")).unwrap();
    d.remove(&job.step("batch")).unwrap();
    assert!(!d.dir(&job.step("batch")).exists());
    // Another step is still there: the job stays.
    assert!(d.dir(&job).is_dir());
    d.remove(&job.step("0")).unwrap();
    assert!(!d.dir(&job).exists());
    assert!(!d.dir(&job).parent().unwrap().exists(), "uid level left");
    let node_dir = d
        .dir(&job)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(node_dir.is_dir(), "the node's directory stays");
    assert!(d.jobs().is_empty());
    // Until the daemon stops in order.
    d.release();
    assert!(!node_dir.exists());
    assert!(root.path().join("freezer").is_dir());
}

fn fake_v2() -> (tempfile::TempDir, Box<dyn Driver>) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("cgroup.controllers"),
        "cpuset cpu memory pids\n",
    )
    .unwrap();
    let mut c = conf(conf::CgroupPlugin::Autodetect, root.path());
    c.ignore_systemd = true;
    c.constrain_ram_space = true;
    let mut s = CgroupSettings::from_conf(&c, "n1", Path::new("/spool")).unwrap();
    assert_eq!(s.version, Version::V2);
    s.settle = Duration::from_millis(50);
    (root, s.driver())
}

#[test]
fn v2_layout_has_slurm_and_user_parts_and_enables_controllers() {
    let (root, d) = fake_v2();
    let step = CgPath::job(1000, 4).step("0");
    d.create_step(&step).unwrap();
    let dirs = d.create_task(&step.task(1)).unwrap();
    let tag = node_tag("n1", Path::new("/spool"));
    let sdir = root
        .path()
        .join("system.slice")
        .join(format!("{tag}_slurmstepd.scope"))
        .join("job_4/step_0");
    assert_eq!(d.dir(&step), sdir);
    assert!(sdir.join("slurm").is_dir());
    assert_eq!(dirs.procs, [sdir.join("user/task_1/cgroup.procs")]);
    assert_eq!(dirs.memory, sdir.join("user/task_1"));
    assert_eq!(read(&sdir.join("cgroup.subtree_control")), "+memory");
    assert_eq!(read(&sdir.join("user/cgroup.subtree_control")), "+memory");
    assert_eq!(
        read(&sdir.parent().unwrap().join("cgroup.subtree_control")),
        "+memory"
    );
    // A step's own helper goes to `slurm`, never among the tasks.
    d.add_pid(&step, 42).unwrap();
    assert_eq!(read(&sdir.join("slurm/cgroup.procs")), "42");
    assert_eq!(d.jobs(), [CgPath::job(0, 4)]);
}

#[test]
fn v2_freeze_waits_for_frozen_and_thaw_and_kill_write_the_core_files() {
    let (_root, d) = fake_v2();
    let step = CgPath::job(0, 2).step("batch");
    d.create_step(&step).unwrap();
    let user = d.dir(&step).join("user");
    // The kernel never says frozen in a fake tree: the wait gives up.
    let err = d.freeze(&step).unwrap_err();
    assert!(matches!(err, CgroupError::FreezeTimeout { .. }), "{err}");
    assert_eq!(read(&user.join("cgroup.freeze")), "1");
    std::fs::write(user.join("cgroup.events"), "populated 1\nfrozen 1\n").unwrap();
    d.freeze(&step).unwrap();
    d.thaw(&step).unwrap();
    assert_eq!(read(&user.join("cgroup.freeze")), "0");
    // A job-wide freeze is the job's own cgroup.freeze.
    let jdir = d.dir(&CgPath::job(0, 2));
    std::fs::write(jdir.join("cgroup.events"), "populated 1\nfrozen 1\n").unwrap();
    d.freeze(&CgPath::job(0, 2)).unwrap();
    assert_eq!(read(&jdir.join("cgroup.freeze")), "1");

    std::fs::write(d.dir(&step).join("cgroup.kill"), "").unwrap();
    d.kill_all(&step).unwrap();
    assert_eq!(read(&d.dir(&step).join("cgroup.kill")), "1");
}

#[test]
fn v2_empty_is_populated_0_and_oom_comes_from_the_user_part() {
    let (_root, d) = fake_v2();
    let step = CgPath::job(0, 6).step("0");
    d.create_step(&step).unwrap();
    d.create_task(&step.task(0)).unwrap();
    let sdir = d.dir(&step);
    assert!(d.is_empty(&step), "no events file, no pids");
    std::fs::write(sdir.join("user/task_0/cgroup.procs"), "77\n").unwrap();
    assert_eq!(d.pids(&step), [77]);
    assert!(!d.is_empty(&step));
    std::fs::write(sdir.join("cgroup.events"), "populated 0\nfrozen 0\n").unwrap();
    assert!(d.is_empty(&step), "the kernel's word wins");
    std::fs::write(
        sdir.join("user/memory.events"),
        "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
    )
    .unwrap();
    assert_eq!(d.oom_kills(&step), 1);
    d.set_memory_limit(&step, 1 << 30, Some(0)).unwrap();
    assert_eq!(read(&sdir.join("memory.max")), (1u64 << 30).to_string());
    assert_eq!(read(&sdir.join("memory.swap.max")), "0");
    std::fs::write(sdir.join("user/task_0/cgroup.procs"), "").unwrap();
    d.remove(&step).unwrap();
    assert!(!sdir.exists());
    assert!(!d.dir(&CgPath::job(0, 6)).exists());
}

// ---- the real v1 hierarchies of this host (CI runs as root) ----

/// The node directories a real test made, removed (with anything left in
/// them killed) also when the test fails.
struct RealGuard {
    driver: Box<dyn Driver>,
    settings: CgroupSettings,
}

impl Drop for RealGuard {
    fn drop(&mut self) {
        for job in self.driver.jobs() {
            let _ = self.driver.kill_all(&job);
            wait_empty(&*self.driver, &job, Duration::from_secs(2));
            let _ = self.driver.remove(&job);
        }
        for (_, ctrl) in &self.settings.controllers {
            let _ = rmdir_tree(&ctrl.join(&self.settings.base), Duration::from_secs(2));
        }
    }
}

/// The real hierarchies, with a node directory of this test's own
/// (`name` and the process id: tests run in parallel).
fn real_v1(name: &str) -> RealGuard {
    let spool = PathBuf::from(format!("/nonexistent/cgtest-{}", std::process::id()));
    let c = conf::CgroupConf {
        plugin: conf::CgroupPlugin::V1,
        ..conf::CgroupConf::default()
    };
    let settings = CgroupSettings::from_conf(&c, name, &spool)
        .expect("this host's cgroup v1 hierarchies (run as root)");
    RealGuard {
        driver: settings.driver(),
        settings,
    }
}

fn cpu_ticks(pid: i32) -> u64 {
    // utime and stime: fields 14 and 15, counted after the command's `)`.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|w| w.parse().unwrap_or(0))
        .collect();
    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
}

#[test]
fn real_v1_tracks_a_double_fork_freezes_and_kills_everything() {
    use std::os::unix::process::CommandExt;
    let g = real_v1("cgtest_fork");
    let d = &*g.driver;
    let step = CgPath::job(0, 4_000_000 + std::process::id() % 1_000_000).step("0");
    d.create_step(&step).unwrap();
    let dirs = d.create_task(&step.task(0)).unwrap();
    let join = TaskJoin::new(&dirs.procs);
    let mut cmd = std::process::Command::new("/bin/sh");
    // A busy loop, and a daemon that left the session and its parent.
    cmd.args([
        "-c",
        "setsid sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & \
         sleep 1000",
    ]);
    // SAFETY: join_self is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if join.join_self() {
                Ok(())
            } else {
                Err(std::io::Error::other("cannot join the task cgroup"))
            }
        });
    }
    let mut child = cmd.spawn().unwrap();
    assert!(wait_until(Duration::from_secs(5), || d.pids(&step).len() >= 3));
    let pids = d.pids(&step);
    let busy: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|p| *p != child.id() as i32)
        .collect();
    d.freeze(&step).unwrap();
    assert_eq!(read(&d.dir(&step).join("freezer.state")).trim(), "FROZEN");
    let before: u64 = busy.iter().map(|p| cpu_ticks(*p)).sum();
    std::thread::sleep(Duration::from_millis(500));
    let after: u64 = busy.iter().map(|p| cpu_ticks(*p)).sum();
    assert_eq!(before, after, "CPU ticks moved while frozen");
    d.thaw(&step).unwrap();
    assert!(wait_until(Duration::from_secs(3), || {
        busy.iter().map(|p| cpu_ticks(*p)).sum::<u64>() > after
    }));
    d.kill_all(&step).unwrap();
    let _ = child.wait();
    assert!(
        wait_empty(d, &step, Duration::from_secs(5)),
        "left: {:?}",
        d.pids(&step)
    );
    for p in &pids {
        let alive =
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| !s.contains(") Z "));
        assert!(!alive, "process {p} survived");
    }
    d.remove(&step).unwrap();
    for (_, ctrl) in &g.settings.controllers {
        let job = ctrl.join(&g.settings.base).join("uid_0");
        assert!(!job.exists(), "{} left", job.display());
    }
}

#[test]
fn real_v1_end_step_empties_and_removes_and_rmdir_retries_while_busy() {
    let g = real_v1("cgtest_end");
    let d = &*g.driver;
    let job = CgPath::job(0, 5_000_000 + std::process::id() % 1_000_000);
    let step = job.step("batch");
    d.create_step(&step).unwrap();
    d.create_task(&step.task(0)).unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("1000")
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    d.add_pid(&step.task(0), pid).unwrap();
    assert_eq!(d.pids(&step), [pid]);
    // Reaped as soon as it dies, as a supervisor reaps its task.
    let waiter = std::thread::spawn(move || child.wait());
    assert_eq!(d.jobs(), std::slice::from_ref(&job));
    end_step(d, &step, Duration::from_secs(5)).unwrap();
    let _ = waiter.join();
    assert!(!d.dir(&step).exists());
    assert!(!d.dir(&job).exists());
    assert!(d.jobs().is_empty());
}

#[test]
fn making_a_cgroup_is_tried_again_when_a_parent_vanished_meanwhile() {
    let vanished = || CgroupError::Io {
        action: "create",
        path: PathBuf::from("/x"),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    let mut calls = 0;
    let res = retry_vanished(|| {
        calls += 1;
        if calls < 3 {
            Err(vanished())
        } else {
            Ok(calls)
        }
    });
    assert_eq!(res.unwrap(), 3);
    let mut calls = 0;
    let res: Result<(), _> = retry_vanished(|| {
        calls += 1;
        Err(vanished())
    });
    assert!(res.is_err());
    assert_eq!(calls, 3, "at most three tries");
}

/// ConstrainCores on v1: the job and the step get their CPUs (the node's
/// ids on the host's CPUs) after the step's cgroups were made; what is
/// below already (a task, the extern step) is narrowed first, and a later
/// task copies its step's.
#[test]
fn v1_confine_cpus_sets_job_and_step_and_narrows_what_is_below() {
    let root = fake_v1(&["freezer", "cpuacct", "memory", "cpuset"]);
    let s = v1_fake_settings(root.path());
    let d = s.driver();
    let job = CgPath::job(1000, 7);
    d.create_step(&job.step("extern")).unwrap();
    d.create_task(&job.step("extern").task(0)).unwrap();
    d.create_step(&job.step("batch")).unwrap();
    confine_cpus(&*d, &s, &job.step("batch"), &[3], &[], &[0, 1]).unwrap();
    d.create_task(&job.step("batch").task(0)).unwrap();
    let tag = node_tag("n1", Path::new("/spool"));
    let cpus = |rel: &str| {
        read(
            &root
                .path()
                .join("cpuset")
                .join(format!("slurm_{tag}/uid_1000/job_7"))
                .join(rel)
                .join("cpuset.cpus"),
        )
    };
    // Node CPU 3 on a host of two: host CPU 1.
    for rel in [
        "",
        "step_batch",
        "step_batch/task_0",
        "step_extern",
        "step_extern/task_0",
    ] {
        assert_eq!(cpus(rel), "1", "{rel}");
    }
    // The uid level keeps the node's.
    assert_eq!(
        read(
            &root
                .path()
                .join("cpuset")
                .join(format!("slurm_{tag}/uid_1000/cpuset.cpus"))
        ),
        "0-1"
    );
    // Without ConstrainCores (no cpuset controller): nothing.
    let mut other = s.clone();
    other.controllers.retain(|(n, _)| n != "cpuset");
    confine_cpus(
        &*other.driver(),
        &other,
        &job.step("batch"),
        &[0],
        &[],
        &[0, 1],
    )
    .unwrap();
    assert_eq!(cpus(""), "1");
}

/// v1 `--exact` steps: each step its own CPUs within the job's; a second
/// step's start leaves the first's as they are.
#[test]
fn v1_confine_cpus_keeps_an_earlier_steps_narrower_set() {
    let root = fake_v1(&["freezer", "cpuacct", "memory", "cpuset"]);
    std::fs::write(root.path().join("cpuset/cpuset.cpus"), "0-3\n").unwrap();
    let s = v1_fake_settings(root.path());
    let d = s.driver();
    let job = CgPath::job(0, 8);
    let host = [0, 1, 2, 3];
    d.create_step(&job.step("0")).unwrap();
    confine_cpus(&*d, &s, &job.step("0"), &[0, 1], &[0], &host).unwrap();
    d.create_step(&job.step("1")).unwrap();
    confine_cpus(&*d, &s, &job.step("1"), &[0, 1], &[1], &host).unwrap();
    let dir = |step: &str| {
        let rel = d
            .dir(&job.step(step))
            .strip_prefix(root.path().join("freezer"))
            .unwrap()
            .to_path_buf();
        root.path().join("cpuset").join(rel).join("cpuset.cpus")
    };
    assert_eq!(read(&dir("0")), "0");
    assert_eq!(read(&dir("1")), "1");
    let job_dir = dir("0")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("cpuset.cpus");
    assert_eq!(read(&job_dir), "0-1");
}

/// ConstrainCores on v2: cpuset is enabled below the base, and the job's
/// and the step's `cpuset.cpus` are written.
#[test]
fn v2_confine_cpus_writes_job_and_step_cpusets() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("cgroup.controllers"),
        "cpuset cpu memory pids\n",
    )
    .unwrap();
    let mut c = conf(conf::CgroupPlugin::V2, root.path());
    c.ignore_systemd = true;
    c.constrain_cores = true;
    let s = CgroupSettings::from_conf(&c, "n1", Path::new("/spool")).unwrap();
    assert!(s.constrains_cores());
    let d = s.driver();
    let step = CgPath::job(1000, 4).step("0");
    d.create_step(&step).unwrap();
    confine_cpus(&*d, &s, &step, &[0, 1, 2], &[2], &[0, 1, 2, 3]).unwrap();
    let sdir = d.dir(&step);
    assert_eq!(read(&sdir.join("cpuset.cpus")), "2");
    assert_eq!(read(&sdir.parent().unwrap().join("cpuset.cpus")), "0-2");
    assert_eq!(read(&sdir.join("cgroup.subtree_control")), "+cpuset");
}

/// The real v1 cpuset hierarchy: narrowing a job whose step and task
/// cgroups already hold every CPU works (the kernel refuses a parent
/// smaller than a child), a process in the task is held to the job's CPU,
/// and everything is removed at the end.
#[test]
fn real_v1_confine_cpus_holds_a_task_to_the_jobs_cpu() {
    use std::os::unix::process::CommandExt;
    let spool = PathBuf::from(format!("/nonexistent/cgtest-cpus-{}", std::process::id()));
    let c = conf::CgroupConf {
        plugin: conf::CgroupPlugin::V1,
        constrain_cores: true,
        ..conf::CgroupConf::default()
    };
    let settings = CgroupSettings::from_conf(&c, "cgtest_cpus", &spool)
        .expect("this host's cgroup v1 hierarchies (run as root)");
    let g = RealGuard {
        driver: settings.driver(),
        settings,
    };
    let d = &*g.driver;
    let host = crate::affinity::host_cpus();
    let last = host.len() as u32 - 1;
    let step = CgPath::job(0, 1).step("0");
    d.create_step(&step).unwrap();
    let dirs = d.create_task(&step.task(0)).unwrap();
    confine_cpus(d, &g.settings, &step, &[last], &[], &host).unwrap();
    let join = TaskJoin::new(&dirs.procs);
    let mut child = unsafe {
        std::process::Command::new("sleep")
            .arg("30")
            .pre_exec(move || {
                join.join_self();
                Ok(())
            })
            .spawn()
            .unwrap()
    };
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(allowed, host[last as usize].to_string());
    let _ = child.kill();
    let _ = child.wait();
    end_step(d, &step, Duration::from_secs(2)).unwrap();
    assert!(!d.dir(&CgPath::job(0, 1)).exists());
}
