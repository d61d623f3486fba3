//! The job supervisor (slurmstepd's batch part): one small process per job,
//! the parent of its batch script, that outlives the daemon.
//!
//! The zygote forks it (`zygote`), or the daemon executes it as
//! `<this binary> noded --stepd <spool>/jobNNNNN`, with a `StepdSpec` on its
//! stdin (a socket to the daemon, then, also its stdout). It then:
//!
//! ```text
//!   setsid, ignore HUP/INT/TERM/PIPE
//!   spawn_script ----failed----> status (256, <why>), answer Failed, exit
//!        | started
//!   record pids, answer Started(pids) on stdout, stdio -> /dev/null
//!   wait for the script (without reaping), SIGKILL the rest of its group,
//!   reap it, record status (raw wait status, usage), exit
//! ```
//!
//! It has no runtime and no socket (one thread samples the job's usage,
//! `gather`, started once the script has run for `FIRST_SAMPLE_AFTER`, so
//! not for a short job), and never talks to the controller: the daemon (the one that started it, or one started
//! after a crash) learns the job's end from the `status` record of the
//! job's log (`spool`). Its own
//! session keeps it out of the daemon's signals; the job's signals go to
//! the script's group, which it is not in.

use crate::cgroup::{self, CgPath, Driver};
use crate::exec::SUPERVISOR_IGNORES;
use crate::gather::{
    parse_frequency, Gather, GatherType, Publish, Sampler, StepCgroup, TaskCgroup, TaskSource,
};
use crate::spool::{self, Pids, ProcId};
use crate::stepd::launch::{self, StepdAnswer, StepdSpec};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The raw wait status of `exit 1`, for a script that never started.
const EXIT_1: i32 = 1 << 8;

/// Runs the supervisor of the job in `job_dir`; returns the process's exit
/// status (0 once the job's end is written).
pub fn main(job_dir: &Path) -> i32 {
    // The supervisor starts as the node takes the launch: a container's
    // start-up (`ContainerStart`) counts from here.
    let started = std::time::Instant::now();
    // Already a session of its own only if the daemon made it so; the
    // error (EPERM, a group leader) then changes nothing.
    let _ = nix::unistd::setsid();
    for sig in SUPERVISOR_IGNORES {
        // SAFETY: setting a disposition to SIG_IGN installs no handler.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let spec: StepdSpec = match serde_json::from_reader(std::io::stdin().lock()) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("noded --stepd: cannot read the launch: {e}");
            return 1;
        }
    };
    let job_id = spec.launch.job_id;
    let mut spec = spec;
    if let Some(n) = spec.launch.acctg_freq.as_deref().and_then(parse_frequency) {
        spec.gather.freq_secs = n;
    }
    let script = job_dir.join("slurm_script");
    // proctrack/cgroup: the script joins step_batch/task_0 before its exec,
    // and so does everything it starts; the supervisor stays outside.
    let confined = spec.cgroup.as_ref().map(|s| (s.driver(), s.settle));
    let batch_cg = CgPath::job(spec.launch.uid, job_id.0).step("batch");
    let (gather_cgroup, task_cgroup) = match &confined {
        Some((driver, settle)) => match confine(
            &**driver,
            &batch_cg,
            spec.cgroup.as_ref().expect("confined"),
            &spec.launch.cpu_ids,
        )
        .and_then(|t| {
            // ConstrainDevices: the job and its batch step may open only
            // the job's GPUs on this node.
            let settings = spec.cgroup.as_ref().expect("confined");
            let job_cg = CgPath::job(spec.launch.uid, job_id.0);
            for cg in [&job_cg, &batch_cg] {
                cgroup::confine_devices(settings, cg, &spec.launch.gpus).map_err(|e| {
                    cgroup::CgroupError::Devices {
                        what: e.to_string(),
                    }
                })?;
            }
            Ok(t)
        }) {
            Ok(task) => {
                if let Some((bytes, swap)) = memory_limit(&spec) {
                    // The batch launch carries the job's memory on this
                    // node: the job's limit (all its steps together) and
                    // the batch step's are the same.
                    let job_cg = CgPath::job(spec.launch.uid, job_id.0);
                    for cg in [&job_cg, &batch_cg] {
                        if let Err(e) = driver.set_memory_limit(cg, bytes, swap) {
                            eprintln!("noded --stepd: job {job_id}: memory limit: {e}");
                        }
                    }
                }
                (None, Some(task))
            }
            Err(e) => {
                let _ = cgroup::end_step(&**driver, &batch_cg, *settle);
                let msg = format!("cannot make the job's cgroup: {e}");
                let _ = spool::write_status(job_dir, EXIT_1, Some(&msg), None);
                answer(&StepdAnswer::Failed(msg));
                return 0;
            }
        },
        None => {
            let cgroup = (spec.gather.kind == GatherType::Cgroup)
                .then(|| StepCgroup::create(&spec.gather, job_id.0, "batch"))
                .flatten();
            if let Some(c) = &cgroup {
                c.limit_memory(&spec.gather, spec.launch.mem);
            }
            let task = cgroup.as_ref().and_then(|c| c.task(0));
            (cgroup, task)
        }
    };
    // Usage comes from the cgroup only where JobAcctGatherType says so.
    let sampled = task_cgroup
        .as_ref()
        .filter(|_| spec.gather.kind == GatherType::Cgroup);
    // The OOM kills are counted before the cgroups go.
    let oom_kills = || match (&gather_cgroup, &confined) {
        (Some(c), _) => c.oom_kills(),
        (None, Some((driver, _))) => driver.oom_kills(&batch_cg),
        (None, None) => 0,
    };
    let end_cgroups = || {
        if let Some(c) = &gather_cgroup {
            c.remove();
        }
        if let Some((driver, settle)) = &confined {
            // What the script left (a double fork, a daemon) ends with it.
            if let Err(e) = cgroup::end_step(&**driver, &batch_cg, *settle) {
                eprintln!("noded --stepd: job {job_id}: {e}");
            }
        }
    };
    let (pid, script_env, container) =
        match launch::spawn_script(&spec, &script, task_cgroup.as_ref()) {
            Ok(started) => started,
            Err(msg) => {
                end_cgroups();
                let _ = spool::write_status(job_dir, EXIT_1, Some(&msg), None);
                answer(&StepdAnswer::Failed(msg));
                return 0;
            }
        };
    if let Some((driver, _)) = &confined {
        // The script joined its cgroup before its exec; should that have
        // failed, it is moved now (it may not have forked yet).
        let task = batch_cg.task(0);
        if !driver.pids(&task).contains(&pid) {
            if let Err(e) = driver.add_pid(&task, pid) {
                eprintln!("noded --stepd: job {job_id}: {e}");
            }
        }
    }
    let Some(stepd) = ProcId::of(std::process::id() as i32) else {
        return abandon(job_dir, pid, "cannot read the supervisor's /proc entry");
    };
    // The script is our unreaped child: its /proc entry cannot vanish.
    let Some(script_id) = ProcId::of(pid) else {
        return abandon(job_dir, pid, "cannot read the script's /proc entry");
    };
    let pids = Pids {
        stepd,
        script: script_id,
    };
    if let Err(e) = spool::write_pids(job_dir, &pids) {
        // The directory is gone (a daemon restarted mid-launch already
        // gave up on the job): nothing could report this job's end.
        return abandon(job_dir, pid, &format!("cannot write the pid file: {e}"));
    }
    // The script's stderr, whatever file it is, for slurmstepd's OOM line
    // at its end (the script's descriptors are gone by then).
    let script_stderr = (gather_cgroup.is_some() || confined.is_some())
        .then(|| {
            std::fs::OpenOptions::new()
                .append(true)
                .open(format!("/proc/{pid}/fd/2"))
                .ok()
        })
        .flatten();
    answer(&StepdAnswer::Started(pids));
    detach_stdio();
    let mut gathered = Gather::new(&spec.node_name, &[0]);
    gathered.container_start_usec = container
        .as_ref()
        .map(|c| u64::try_from(c.ready_at.duration_since(started).as_micros()).unwrap_or(u64::MAX));
    let gather = Arc::new(Mutex::new(gathered));
    let source = match sampled {
        Some(cg) => TaskSource::Cgroup(cg.clone()),
        None => TaskSource::Session(pid),
    };
    let live = job_dir.join(spool::LIVE_FILE);
    let publish = Publish {
        path: live.clone(),
        step: proto::StepId::Batch,
        pids: vec![pid as u32],
    };
    // A script that ends within FIRST_SAMPLE_AFTER (a short job) has
    // nothing to sample: its figures come from wait4, and no thread need
    // start (nor a live file be written and removed again).
    let sampler = (!ends_within(pid, FIRST_SAMPLE_AFTER)).then(|| {
        Sampler::start(
            &spec.gather,
            gather.clone(),
            vec![(0, source)],
            Some(publish),
        )
    });
    let (raw, ru) = wait_job(pid);
    // The container goes with the script (`--container-save` first).
    if let Some(c) = container {
        if let Some(e) = c.finish() {
            eprintln!("noded --stepd: job {job_id}: {e}");
        }
    }
    // TaskEpilog: as the user, in the script's environment.
    if let Some(epilog) = spec.task_epilog.as_deref() {
        let launch = &spec.launch;
        let switch = if spec.switch_user {
            crate::exec::groups_of(&launch.user, launch.gid)
                .ok()
                .map(|g| (launch.uid, launch.gid, g))
        } else {
            None
        };
        let work_dir = launch::work_dir(launch);
        if let Err(e) =
            crate::hooks::run_task_script(epilog, &script_env, &work_dir, switch.as_ref())
        {
            eprintln!("noded --stepd: job {job_id}: TaskEpilog: {e}");
        }
    }
    if let Some(sampler) = sampler {
        sampler.stop();
    }
    let usage = {
        let mut g = gather.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ru) = ru {
            g.finish_task(0, ru, sampled);
        }
        g.usage()
    };
    let oom_kills = oom_kills();
    end_cgroups();
    if oom_kills > 0 {
        if let Some(mut f) = script_stderr {
            let line = crate::oom::detected_line(oom_kills, &format!("{job_id}.batch"));
            let _ = f.write_all(line.as_bytes());
        }
    }
    // The live sample ends with the step; the final usage comes next, and
    // the status record is the last thing a supervisor writes.
    let _ = std::fs::remove_file(&live);
    if let Err(e) = spool::write_end(job_dir, raw, None, Some(&usage), oom_kills) {
        // Nobody reads stderr any more; the daemon reports a supervisor
        // gone without a status as a killed job.
        eprintln!("noded --stepd: job {job_id}: cannot write the status: {e}");
        return 1;
    }
    0
}

/// The job's and the batch step's memory limit and what they may use of
/// swap beyond it, from cgroup.conf's memory keys (`None`: nothing
/// constrained).
fn memory_limit(spec: &StepdSpec) -> Option<(u64, Option<u64>)> {
    let c = spec.gather.memory.as_ref()?;
    let limits = conf::memlimit::mem_limits(spec.launch.mem, spec.gather.real_memory_mb, c)?;
    Some((limits.ram_bytes, limits.swap_only_bytes()))
}

/// Makes the batch step's cgroup and its task's, for the script to join.
fn confine(
    driver: &dyn Driver,
    step: &CgPath,
    settings: &cgroup::CgroupSettings,
    cpu_ids: &[u32],
) -> Result<TaskCgroup, cgroup::CgroupError> {
    driver.create_step(step)?;
    // ConstrainCores: the job and its batch step on the job's CPUs here,
    // before the task's cgroup copies them.
    let host = crate::affinity::host_cpus();
    cgroup::confine_cpus(driver, settings, step, cpu_ids, cpu_ids, &host)?;
    let dirs = driver.create_task(&step.task(0))?;
    Ok(TaskCgroup::from_dirs(
        driver.version() == cgroup::Version::V2,
        dirs.memory,
        dirs.cpu,
        &dirs.procs,
    ))
}

/// Kills the script just started, reaps it, records a launch failure and
/// answers it.
fn abandon(job_dir: &Path, pid: i32, why: &str) -> i32 {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(-pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    let _ = spool::write_status(job_dir, EXIT_1, Some(why), None);
    answer(&StepdAnswer::Failed(why.to_string()));
    1
}

/// Writes the one answer line. A daemon that is gone by now (EPIPE, with
/// SIGPIPE ignored) learns everything from the spool files instead.
fn answer(answer: &StepdAnswer) {
    if let Ok(mut line) = serde_json::to_vec(answer) {
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&line);
        let _ = out.flush();
    }
}

/// Points stdin, stdout and stderr at /dev/null: the daemon's pipe closes
/// (its answer is complete) and no log of a dead daemon is held open.
fn detach_stdio() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for fd in 0..3 {
        // SAFETY: dup2 onto the standard descriptors, from a live fd.
        unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
    }
}

/// How long a script may take to end before the supervisor starts
/// sampling its usage. Most trivial jobs end well within it; for the others
/// the first sample comes this much later than the start, and every later
/// one JobAcctGatherFrequency after it, as before. sstat shows a step once
/// it has a sample.
const FIRST_SAMPLE_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

/// True when our child `pid` ends within `wait` (it stays unreaped): its
/// pidfd is polled, or, where there is none (Linux before 5.3), it is
/// looked at once.
fn ends_within(pid: i32, wait: std::time::Duration) -> bool {
    // SAFETY: the system call takes two integers and returns a new
    // descriptor or -1; no memory is involved.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return has_ended(pid);
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
    let deadline = std::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one live pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis() as libc::c_int) };
        if r > 0 {
            // A pidfd is readable once its process has ended.
            return true;
        }
        let interrupted =
            r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
        if !interrupted || left.is_zero() {
            return has_ended(pid);
        }
    }
}

/// True when our child `pid` has ended (it stays unreaped).
fn has_ended(pid: i32) -> bool {
    // WNOWAIT leaves it to be reaped by `wait_job`.
    let (r, info) = peek_exit(pid, libc::WNOHANG);
    // With WNOHANG and no change, waitid returns 0 and leaves si_pid 0.
    // SAFETY: si_pid is set (or left zeroed) by waitid for WEXITED.
    r == 0 && unsafe { info.si_pid() } != 0
}

/// `waitid(P_PID, pid, WEXITED | WNOWAIT | extra)` on our own child: its
/// return value and the siginfo it filled (zeroed when it filled nothing).
fn peek_exit(pid: i32, extra: libc::c_int) -> (libc::c_int, libc::siginfo_t) {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with a live out-parameter.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | extra,
        )
    };
    (r, info)
}

/// Waits for the script `pid` to end, kills what is left of its process
/// group (the batch step ends with its script, as Slurm's proctrack does),
/// reaps it and returns its raw wait status and what it used (wait4's
/// rusage: the script and every descendant it waited for: user and system
/// CPU microseconds and the largest RSS in KiB).
///
/// The group is killed before the script is reaped: while it is an
/// unreaped zombie its pid, hence the group id, cannot be reused.
fn wait_job(pid: i32) -> (i32, Option<(u64, u64, u64)>) {
    let signalled = loop {
        let (r, info) = peek_exit(pid, 0);
        if r == 0 {
            break matches!(info.si_code, libc::CLD_KILLED | libc::CLD_DUMPED);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break false;
        }
    };
    if signalled {
        // The job is being ended (its group had SIGTERM): an srun there
        // finishes its step and says so in the job's log before the rest
        // of the group is killed, as Slurm's does.
        let deadline = std::time::Instant::now() + GROUP_GRACE;
        while std::time::Instant::now() < deadline && group_has_others(pid) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    // SAFETY: kill(2) on a process group id; no memory involved.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    match reap(pid) {
        Some((status, usage)) => (status, Some(usage)),
        // Cannot happen for our own child; report it as killed rather
        // than as a success.
        None => (libc::SIGKILL, None),
    }
}

/// How long what is left of a script's group may run on after the script
/// was killed by a signal, before SIGKILL.
const GROUP_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a live process other than `pgid` itself is in process group
/// `pgid` (`/proc/PID/stat`: the group is the third field after the name).
fn group_has_others(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|entry| {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            return false;
        };
        if pid == pgid {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some(close) = stat.rfind(')') else {
            return false;
        };
        let mut fields = stat[close + 1..].split_ascii_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        group == Some(pgid) && state != Some("Z")
    })
}

/// Waits for our own child `pid` to be reaped: its wait status and rusage
/// (user and system CPU in microseconds, largest RSS in KiB); `None` when
/// there is no such child.
pub(crate) fn reap(pid: i32) -> Option<(i32, (u64, u64, u64))> {
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child with live out-parameters.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            let usec = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
            // Linux reports ru_maxrss in KiB.
            let usage = (
                usec(ru.ru_utime),
                usec(ru.ru_stime),
                ru.ru_maxrss.max(0) as u64,
            );
            return Some((status, usage));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}
