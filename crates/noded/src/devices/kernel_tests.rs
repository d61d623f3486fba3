//! Device confinement on the real kernel (root only; elsewhere each test
//! says why it did not run): fake GPUs, character devices 195:N without a
//! driver, open with ENXIO where allowed and EPERM where denied. A forked
//! child moves into the test's cgroup and opens them. Every cgroup
//! directory, program and process a test makes is removed by guards, also
//! when it fails.

use super::load::{attached, Program};
use super::*;
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU32, Ordering};

const GPU: u32 = 195;
const OPENED: i32 = 0;

/// Whether the test can run here; prints why not.
fn can_run(test: &str, root: &Option<PathBuf>, what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test}: not run: needs root");
        return false;
    }
    if root.is_none() {
        eprintln!("{test}: not run: no {what} on this host");
        return false;
    }
    true
}

/// (mount point, file system type, super options) of every mount.
fn mounts() -> Vec<(PathBuf, String, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            let mount_point = pre.split(' ').nth(4)?;
            let mut post = post.split(' ');
            let fstype = post.next()?;
            let _source = post.next()?;
            let opts = post.next()?;
            Some((mount_point.into(), fstype.into(), opts.into()))
        })
        .collect()
}

/// The cgroup v2 mount (the unified one on a hybrid host).
fn cgroup2_root() -> Option<PathBuf> {
    mounts()
        .into_iter()
        .find(|(_, fstype, _)| fstype == "cgroup2")
        .map(|(mp, _, _)| mp)
}

/// The cgroup v1 hierarchy of the `devices` controller.
fn v1_devices_root() -> Option<PathBuf> {
    mounts()
        .into_iter()
        .find(|(_, fstype, opts)| fstype == "cgroup" && opts.split(',').any(|o| o == "devices"))
        .map(|(mp, _, _)| mp)
}

/// A name no other test (of this run or another engineer's) uses.
fn unique(tag: &str) -> String {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    format!(
        "muster_devtest_{tag}_{}_{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// A cgroup directory, removed on drop (after its children, which are
/// declared after it and so dropped first).
struct CgroupDir {
    path: PathBuf,
}

impl CgroupDir {
    fn create(path: PathBuf) -> CgroupDir {
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        CgroupDir { path }
    }

    fn child(&self, name: &str) -> CgroupDir {
        CgroupDir::create(self.path.join(name))
    }

    fn procs(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }
}

impl Drop for CgroupDir {
    fn drop(&mut self) {
        // A process that just exited may leave the cgroup a moment later.
        for _ in 0..100 {
            match std::fs::remove_dir(&self.path) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(e) => {
                    eprintln!("rmdir {}: {e}", self.path.display());
                    return;
                }
            }
        }
        eprintln!("cgroup {} left behind: still busy", self.path.display());
    }
}

/// Detaches a program from a cgroup on drop, unless the test did.
struct Attachment<'a> {
    prog: &'a Program,
    dir: PathBuf,
    attached: bool,
}

impl Attachment<'_> {
    fn detach(mut self) {
        self.attached = false;
        self.prog.detach(&self.dir).unwrap();
    }
}

impl Drop for Attachment<'_> {
    fn drop(&mut self) {
        if self.attached {
            let _ = self.prog.detach(&self.dir);
        }
    }
}

/// A forked child, killed and reaped on drop unless waited for.
struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    /// Waits for it; its wait status.
    fn wait(mut self) -> i32 {
        let mut status = 0;
        // SAFETY: waitpid on our own child, into a local.
        let rc = unsafe { libc::waitpid(self.pid, &mut status, 0) };
        assert_eq!(rc, self.pid, "waitpid: {}", std::io::Error::last_os_error());
        self.reaped = true;
        status
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two fds, which we then own.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    }
}

/// A fake GPU `<dir>/nvidia<minor>`: char 195:minor, no driver behind it.
fn fake_gpu(dir: &Path, minor: u32) -> PathBuf {
    let path = dir.join(format!("nvidia{minor}"));
    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    let rc = unsafe {
        libc::mknod(
            c_path.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(GPU, minor),
        )
    };
    assert_eq!(
        rc,
        0,
        "mknod {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    path
}

/// Fake GPUs 0..n in `dir`, with the devices `Device::from_path` finds.
fn fake_gpus(dir: &Path, n: u32) -> (Vec<PathBuf>, Vec<Device>) {
    let paths: Vec<PathBuf> = (0..n).map(|i| fake_gpu(dir, i)).collect();
    let devices: Vec<Device> = paths
        .iter()
        .map(|p| Device::from_path(p).unwrap())
        .collect();
    for (i, dev) in devices.iter().enumerate() {
        assert_eq!(*dev, Device::char(GPU, i as u32));
    }
    (paths, devices)
}

/// Opens each of `paths` for reading and writing from a child process that
/// was moved into the cgroup whose process list is `procs`; each open's
/// errno (`OPENED` when it opened).
fn open_in_cgroup(procs: &Path, paths: &[&Path]) -> Vec<i32> {
    let c_paths: Vec<CString> = paths
        .iter()
        .map(|p| CString::new(p.as_os_str().as_bytes()).unwrap())
        .collect();
    let (go_r, go_w) = pipe();
    let (res_r, res_w) = pipe();
    // SAFETY: the child makes only async-signal-safe calls (read, open,
    // close, write, _exit) on what was prepared before the fork, and never
    // returns.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        unsafe {
            let mut go = [0u8; 1];
            if libc::read(go_r.as_raw_fd(), go.as_mut_ptr().cast(), 1) != 1 {
                libc::_exit(2);
            }
            for c_path in &c_paths {
                let fd = libc::open(c_path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
                let errno = if fd < 0 {
                    *libc::__errno_location()
                } else {
                    libc::close(fd);
                    OPENED
                };
                let bytes = errno.to_ne_bytes();
                libc::write(res_w.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
            }
            libc::_exit(0);
        }
    }
    let child = Child { pid, reaped: false };
    drop(go_r);
    drop(res_w);
    std::fs::write(procs, pid.to_string())
        .unwrap_or_else(|e| panic!("moving {pid} into {}: {e}", procs.display()));
    File::from(go_w).write_all(b"g").unwrap();
    let mut results = vec![0u8; 4 * paths.len()];
    File::from(res_r).read_exact(&mut results).unwrap();
    let status = child.wait();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child: {status:#x}"
    );
    results
        .chunks(4)
        .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Errnos as names, for readable failures.
fn names(errnos: &[i32]) -> Vec<&'static str> {
    errnos
        .iter()
        .map(|&e| match e {
            OPENED => "opened",
            libc::ENXIO => "ENXIO",
            libc::EPERM => "EPERM",
            libc::EACCES => "EACCES",
            _ => "other",
        })
        .collect()
}

fn refs(paths: &[PathBuf]) -> Vec<&Path> {
    paths.iter().map(PathBuf::as_path).collect()
}

#[test]
fn v2_program_lets_a_process_open_only_the_given_gpu() {
    let root = cgroup2_root();
    if !can_run(
        "v2_program_lets_a_process_open_only_the_given_gpu",
        &root,
        "cgroup2 mount",
    ) {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let (paths, devices) = fake_gpus(scratch.path(), 2);
    let probe = [
        paths[0].as_path(),
        paths[1].as_path(),
        Path::new("/dev/null"),
    ];
    let cg = CgroupDir::create(root.unwrap().join(unique("v2")));

    // Outside any filter both fake GPUs open as far as the missing driver.
    assert_eq!(
        names(&open_in_cgroup(&cg.procs(), &probe)),
        ["ENXIO", "ENXIO", "opened"]
    );

    let insns = assemble(&Filter::deny_unallocated(&devices, &devices[..1])).unwrap();
    let prog = Program::load(&insns).unwrap_or_else(|e| panic!("{e}"));
    prog.attach(&cg.path, Level::Job.attach_mode()).unwrap();
    let attachment = Attachment {
        prog: &prog,
        dir: cg.path.clone(),
        attached: true,
    };
    assert_eq!(
        attached(&cg.path).unwrap(),
        load::Attached {
            mode: Some(AttachMode::Override),
            ids: vec![prog.id().unwrap()],
        }
    );
    assert_eq!(
        names(&open_in_cgroup(&cg.procs(), &probe)),
        ["ENXIO", "EPERM", "opened"]
    );

    attachment.detach();
    assert_eq!(attached(&cg.path).unwrap().ids, Vec::<u32>::new());
    assert_eq!(
        names(&open_in_cgroup(&cg.procs(), &probe)),
        ["ENXIO", "ENXIO", "opened"]
    );
}

#[test]
fn v2_each_level_runs_its_own_program() {
    let root = cgroup2_root();
    if !can_run("v2_each_level_runs_its_own_program", &root, "cgroup2 mount") {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let (paths, node) = fake_gpus(scratch.path(), 4);
    let probe = refs(&paths);
    // The job got GPUs 0 and 1, its step GPU 1; the step's task has no
    // program of its own and inherits the step's.
    let job = CgroupDir::create(root.unwrap().join(unique("v2job")));
    let step = job.child("step_0");
    let task = step.child("task_0");
    confine_v2(&job.path, Level::Job, &node, &node[..2]).unwrap();
    confine_v2(&step.path, Level::Step, &node, &node[1..2]).unwrap();
    for dir in [&job.path, &step.path] {
        let now = attached(dir).unwrap();
        assert_eq!((now.mode, now.ids.len()), (Some(AttachMode::Override), 1));
    }
    assert_eq!(attached(&task.path).unwrap().ids.len(), 0);

    let in_job = open_in_cgroup(&job.procs(), &probe);
    assert_eq!(names(&in_job), ["ENXIO", "ENXIO", "EPERM", "EPERM"]);
    let in_step = open_in_cgroup(&step.procs(), &probe);
    assert_eq!(names(&in_step), ["EPERM", "ENXIO", "EPERM", "EPERM"]);
    let in_task = open_in_cgroup(&task.procs(), &probe);
    assert_eq!(names(&in_task), ["EPERM", "ENXIO", "EPERM", "EPERM"]);

    // Attaching again replaces the program in place (a restarted daemon
    // re-applying a level): the step now has GPU 0 instead.
    confine_v2(&step.path, Level::Step, &node, &node[..1]).unwrap();
    assert_eq!(attached(&step.path).unwrap().ids.len(), 1);
    let in_step = open_in_cgroup(&step.procs(), &probe);
    assert_eq!(names(&in_step), ["ENXIO", "EPERM", "EPERM", "EPERM"]);
    // Removing the directories frees the programs (the guards do it).
}

#[test]
fn v1_rules_let_a_process_open_only_the_given_gpu() {
    let root = v1_devices_root();
    if !can_run(
        "v1_rules_let_a_process_open_only_the_given_gpu",
        &root,
        "v1 devices hierarchy",
    ) {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let (paths, devices) = fake_gpus(scratch.path(), 2);
    let probe = [
        paths[0].as_path(),
        paths[1].as_path(),
        Path::new("/dev/null"),
    ];
    let cg = CgroupDir::create(root.unwrap().join(unique("v1")));

    confine_v1(&cg.path, &devices, &devices[..1]).unwrap();
    // Default allow: the exceptions are not listed.
    let list = std::fs::read_to_string(cg.path.join("devices.list")).unwrap();
    assert_eq!(list, "a *:* rwm\n");
    assert_eq!(
        names(&open_in_cgroup(&cg.procs(), &probe)),
        ["ENXIO", "EPERM", "opened"]
    );
}

#[test]
fn v1_levels_written_top_down_confine_each_level() {
    let root = v1_devices_root();
    if !can_run(
        "v1_levels_written_top_down_confine_each_level",
        &root,
        "v1 devices hierarchy",
    ) {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let (paths, node) = fake_gpus(scratch.path(), 4);
    let probe = refs(&paths);
    let job = CgroupDir::create(root.unwrap().join(unique("v1job")));
    confine_v1(&job.path, &node, &node[..2]).unwrap();
    // Created after the job's rules: starts with a copy of them.
    let step = job.child("step_0");
    confine_v1(&step.path, &node, &node[1..2]).unwrap();
    let task = step.child("task_0");
    confine_v1(&task.path, &node, &node[1..2]).unwrap();

    let in_job = open_in_cgroup(&job.procs(), &probe);
    assert_eq!(names(&in_job), ["ENXIO", "ENXIO", "EPERM", "EPERM"]);
    let in_step = open_in_cgroup(&step.procs(), &probe);
    assert_eq!(names(&in_step), ["EPERM", "ENXIO", "EPERM", "EPERM"]);
    let in_task = open_in_cgroup(&task.procs(), &probe);
    assert_eq!(names(&in_task), ["EPERM", "ENXIO", "EPERM", "EPERM"]);

    // A level cannot allow what the level above denies.
    let err = confine_v1(&step.path, &node, &node[2..3]).unwrap_err();
    match err {
        DeviceError::WriteRule { ref source, .. } => {
            assert_eq!(source.raw_os_error(), Some(libc::EPERM), "{err}")
        }
        other => panic!("{other}"),
    }
}

#[test]
fn v2_refused_program_reports_the_verifiers_reason() {
    let root = cgroup2_root();
    if !can_run(
        "v2_refused_program_reports_the_verifiers_reason",
        &root,
        "cgroup2 mount",
    ) {
        return;
    }
    // An instruction no path reaches: the verifier refuses the program.
    let dead = [
        Insn::alu64_imm(bpf::ALU_MOV, 0, 1),
        Insn::exit(),
        Insn::alu64_imm(bpf::ALU_MOV, 0, 0),
        Insn::exit(),
    ];
    let err = Program::load(&dead).unwrap_err();
    match &err {
        DeviceError::Load { source, log } => {
            assert_eq!(source.raw_os_error(), Some(libc::EINVAL), "{err}");
            assert!(log.contains("unreachable"), "{err}");
        }
        other => panic!("{other}"),
    }

    // A level attached with one mode cannot be replaced with the other.
    let cg = CgroupDir::create(root.unwrap().join(unique("v2mode")));
    let node = [Device::char(GPU, 0)];
    confine_v2(&cg.path, Level::Job, &node, &[]).unwrap();
    let prog = Program::load(&assemble(&Filter::deny_unallocated(&node, &[])).unwrap()).unwrap();
    let err = prog.attach(&cg.path, AttachMode::Multi).unwrap_err();
    assert!(err.to_string().contains("BPF_PROG_ATTACH"), "{err}");
}
