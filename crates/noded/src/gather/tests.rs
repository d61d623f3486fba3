use super::*;

#[test]
fn frequency_forms() {
    assert_eq!(parse_frequency("10"), Some(10));
    assert_eq!(parse_frequency("task=5"), Some(5));
    assert_eq!(parse_frequency("energy=30,task=0"), Some(0));
    assert_eq!(parse_frequency("network=5"), None);
    assert_eq!(parse_frequency("junk"), None);
    let s = GatherSettings::from_conf(
        Some("jobacct_gather/cgroup"),
        Some("task=1"),
        "n1",
        Path::new("/var/spool/muster"),
    );
    assert_eq!(s.kind, GatherType::Cgroup);
    assert_eq!(s.freq_secs, 1);
    assert!(s.cgroup_name.starts_with("n1-"), "{}", s.cgroup_name);
    let d = GatherSettings::from_conf(None, Some("junk"), "n1", Path::new("/x"));
    assert_eq!((d.kind, d.freq_secs), (GatherType::Linux, 30));
}

#[test]
fn stat_lines_with_odd_command_names() {
    let line = "4242 (my (odd) cmd) S 1 4242 4240 0 -1 4194560 500 0 7 0 12 3 0 0 20 0 1 0 \
                100 209715200 51200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    let st = parse_stat(line).unwrap();
    assert_eq!(st.session, 4240);
    assert_eq!(st.majflt, 7);
    assert_eq!(st.vsize, 209_715_200);
    assert_eq!(st.rss_pages, 51_200);
    // utime 12 + stime 3 + cutime 0 + cstime 0.
    assert_eq!(st.cpu_ticks, 15);
    assert_eq!(parse_stat("1 (x) S 0"), None);
}

#[test]
fn own_process_is_found_by_its_session() {
    let sid = unsafe { libc::getsid(0) };
    let s = sample_sessions(&[sid, -5]);
    let mine = s[0].unwrap();
    assert!(
        mine.rss_kib > 0 && mine.vsize_kib >= mine.rss_kib,
        "{mine:?}"
    );
    assert_eq!(s[1], None);
}

#[test]
fn cgroup_v2_and_v1_files() {
    let cpu = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\nnr_periods 0\n";
    assert_eq!(parse_v2_cpu_stat(cpu), Some((100_000, 23_456)));
    assert_eq!(parse_v2_cpu_stat("usage_usec 5\n"), None);
    assert_eq!(parse_u64("209715200\n"), Some(209_715_200));
    assert_eq!(parse_u64("max\n"), None);

    // A task cgroup read from files laid out as each version has them.
    let dir = tempfile::tempdir().unwrap();
    let v2 = dir.path().join("v2");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(v2.join("memory.current"), "104857600\n").unwrap();
    std::fs::write(v2.join("memory.peak"), "209715200\n").unwrap();
    std::fs::write(v2.join("cpu.stat"), cpu).unwrap();
    std::fs::write(v2.join("cgroup.procs"), format!("{}\n", std::process::id())).unwrap();
    let t = TaskCgroup {
        v2: true,
        dirs: vec![v2],
        join: crate::cgroup::TaskJoin::new(&[]),
    };
    assert_eq!(t.memory(), (Some(104_857_600), Some(209_715_200)));
    assert_eq!(t.cpu_usec(), Some((100_000, 23_456)));
    let s = t.sample().unwrap();
    assert_eq!((s.rss_kib, s.peak_kib), (102_400, 204_800));
    assert!(s.vsize_kib > 0);

    let (mem, acct) = (dir.path().join("mem"), dir.path().join("acct"));
    std::fs::create_dir(&mem).unwrap();
    std::fs::create_dir(&acct).unwrap();
    std::fs::write(mem.join("memory.usage_in_bytes"), "1048576\n").unwrap();
    std::fs::write(mem.join("memory.max_usage_in_bytes"), "2097152\n").unwrap();
    std::fs::write(mem.join("cgroup.procs"), "").unwrap();
    std::fs::write(acct.join("cpuacct.usage_user"), "3000000000\n").unwrap();
    std::fs::write(acct.join("cpuacct.usage_sys"), "1000\n").unwrap();
    let t = TaskCgroup {
        v2: false,
        dirs: vec![mem, acct],
        join: crate::cgroup::TaskJoin::new(&[]),
    };
    assert_eq!(t.memory(), (Some(1_048_576), Some(2_097_152)));
    assert_eq!(t.cpu_usec(), Some((3_000_000, 1)));
    // No process left: no sample.
    assert_eq!(t.sample(), None);
}

#[test]
fn usage_keeps_maxima_with_their_task_and_averages_over_tasks() {
    let mut g = Gather::new("n1", &[4, 5]);
    let s = |rss, vsize, pages| TaskSample {
        rss_kib: rss,
        peak_kib: 0,
        vsize_kib: vsize,
        pages,
        cpu_usec: 0,
    };
    g.add(0, s(100, 1000, 1));
    g.add(0, s(300, 3000, 2));
    g.add(1, s(200, 5000, 0));
    g.finish(0, 2_000_000, 500_000, 50, None);
    // The kernel's high-water mark beats the samples.
    g.finish(1, 1_000_000, 0, 10, Some(400));
    let u = g.usage();
    assert_eq!(u.max_rss_kib, Some(400));
    assert_eq!(
        (u.max_rss_node.as_deref(), u.max_rss_task),
        (Some("n1"), Some(5))
    );
    // Task 4: mean 200; task 5: mean 200.
    assert_eq!(u.ave_rss_kib, Some(200));
    assert_eq!((u.max_vmsize_kib, u.max_vmsize_task), (Some(5000), Some(5)));
    assert_eq!(u.ave_vmsize_kib, Some((2000 + 5000) / 2));
    assert_eq!((u.max_pages, u.max_pages_task), (Some(2), Some(4)));
    assert_eq!(
        (u.user_cpu_usec, u.sys_cpu_usec),
        (Some(3_000_000), Some(500_000))
    );
    assert_eq!((u.min_cpu_usec, u.min_cpu_task), (Some(1_000_000), Some(5)));
    assert_eq!(u.ave_cpu_usec, Some(1_750_000));
    assert_eq!(u.n_tasks, Some(2));

    // Never sampled (too short for the frequency): rusage alone.
    let mut g = Gather::new("n1", &[0]);
    g.finish(0, 1, 2, 3000, None);
    let u = g.usage();
    assert_eq!((u.max_rss_kib, u.ave_rss_kib), (Some(3000), Some(3000)));
    assert_eq!(u.max_vmsize_kib, None);
}

/// A `sleep` in a session of its own, killed when dropped. The test
/// process's own session will not do: its leader may be outside this
/// PID namespace (CI's containers), and the first sample walks the
/// leader's tree.
struct SessionChild(std::process::Child);

impl SessionChild {
    fn start() -> SessionChild {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let child = SessionChild(cmd.spawn().unwrap());
        // Until its image is mapped: just after exec its RSS can read 0.
        let pid = child.sid();
        for _ in 0..500 {
            if read_stat(pid).is_some_and(|st| st.rss_pages > 0 && st.vsize > 0) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child
    }

    fn sid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for SessionChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sampler_samples_at_once_and_stops() {
    let child = SessionChild::start();
    let sid = child.sid();
    let gather = Arc::new(Mutex::new(Gather::new("n1", &[0])));
    let settings = GatherSettings {
        freq_secs: 3600,
        ..GatherSettings::default()
    };
    let sampler = Sampler::start(
        &settings,
        gather.clone(),
        vec![(0, TaskSource::Session(sid))],
        None,
    );
    sampler.stop();
    let u = gather.lock().unwrap().usage();
    assert!(u.max_vmsize_kib.unwrap() > 0, "{u:?}");
}

#[test]
fn a_running_task_counts_its_sampled_cpu_and_the_sampler_publishes_it() {
    let mut g = Gather::new("n1", &[0]);
    g.add(
        0,
        TaskSample {
            rss_kib: 100,
            cpu_usec: 2_000_000,
            ..TaskSample::default()
        },
    );
    let u = g.usage();
    assert_eq!(
        (u.min_cpu_usec, u.ave_cpu_usec),
        (Some(2_000_000), Some(2_000_000))
    );
    // Once reaped, its rusage is what counts.
    g.finish(0, 1_000_000, 1_500_000, 0, None);
    assert_eq!(g.usage().ave_cpu_usec, Some(2_500_000));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("usage.live");
    let child = SessionChild::start();
    let sid = child.sid();
    let gather = Arc::new(Mutex::new(Gather::new("n1", &[0])));
    let settings = GatherSettings {
        freq_secs: 3600,
        ..GatherSettings::default()
    };
    let sampler = Sampler::start(
        &settings,
        gather,
        vec![(0, TaskSource::Session(sid))],
        Some(Publish {
            path: path.clone(),
            step: proto::StepId::Batch,
            pids: vec![42],
        }),
    );
    sampler.stop();
    let live = read_live(&path).unwrap();
    assert_eq!(
        (live.step, live.pids.clone()),
        (proto::StepId::Batch, vec![42])
    );
    assert!(live.usage.max_rss_kib.unwrap() > 0, "{live:?}");
    assert_eq!(live.usage.max_rss_node.as_deref(), Some("n1"));
    assert_eq!(read_live(&dir.path().join("none")), None);
}

#[test]
fn a_session_sampled_from_its_tree_matches_the_scan_of_every_process() {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "sleep 30 & sleep 30 & wait"]);
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let leader = child.id() as i32;
    // Until both sleeps run (the shell's children, exec'd: a child
    // between fork and exec still changes its size).
    let children = format!("/proc/{leader}/task/{leader}/children");
    let sleeping = || {
        let list = std::fs::read_to_string(&children).unwrap_or_default();
        let pids: Vec<&str> = list.split_whitespace().collect();
        pids.len() == 2
            && pids.iter().all(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c == "sleep\n")
            })
    };
    while !sleeping() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // A sleep just executed may still map its libraries and locale between
    // the two readings: compare once two readings in a row agree.
    let sizes = || {
        let tree = sample_session_tree(leader).unwrap().unwrap();
        let scan = sample_sessions(&[leader]).remove(0).unwrap();
        (tree, scan)
    };
    let (mut tree, mut scan) = sizes();
    for _ in 0..100 {
        if tree.vsize_kib == scan.vsize_kib {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        (tree, scan) = sizes();
    }
    assert_eq!(tree.vsize_kib, scan.vsize_kib);
    assert!(tree.vsize_kib > 0);
    // No such process (a leader reaped before the first sample): nothing
    // to sample, and no scan of every process either.
    assert_eq!(sample_session_tree(i32::MAX), Some(None));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(-leader),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
}
