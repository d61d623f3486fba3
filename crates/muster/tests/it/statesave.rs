//! A controller that cannot write its state (issue 34: a full disk, an
//! immutable file) stays up: it answers queries, refuses changes with
//! Slurm's `Slurm controller state save failed: <cause>`, tries the journal
//! again, and takes changes once it can write, losing nothing it answered.
//!
//! Both tests need root (a tmpfs mount, `chattr`); without it, or where
//! the file system refuses, they say so and pass without running, as the
//! other root-only tests here do.

use crate::auth::is_root;
use crate::{builder, secs};
use e2e::Cluster;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// The line the controller logs when a journal write fails.
const FAILED: &str = "cannot write the controller state";
/// The line it logs once it can write again.
const SAVED_AGAIN: &str = "the controller state is saved again";

/// A tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount(8) syntax) on `dir`, or None when
    /// mounting is not permitted here.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a daemon that is still going away may hold a file open.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Paths made immutable (`chattr +i`) for the test, made mutable again on
/// drop (before the cluster's directory is removed).
struct Immutable(Vec<PathBuf>);

impl Immutable {
    /// `chattr +i` on each path, or None (nothing left changed) where the
    /// file system does not support it.
    fn set(paths: &[PathBuf]) -> Option<Immutable> {
        let mut done = Immutable(Vec::new());
        for p in paths {
            let out = Command::new("chattr").arg("+i").arg(p).output().ok()?;
            if !out.status.success() {
                eprintln!(
                    "chattr +i {} failed: {}",
                    p.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return None;
            }
            done.0.push(p.clone());
        }
        Some(done)
    }

    fn clear(&mut self) {
        for p in self.0.drain(..).rev() {
            let status = Command::new("chattr").arg("-i").arg(&p).status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "chattr -i {}",
                p.display()
            );
        }
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        for p in self.0.drain(..) {
            let _ = Command::new("chattr").arg("-i").arg(&p).status();
        }
    }
}

/// Whether the process is alive (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z'))
}

fn sbatch(c: &Cluster) -> Child {
    c.command("sbatch")
        .args(["-H", "--wrap", "true"])
        .spawn()
        .expect("starting sbatch")
}

/// The id in `Submitted batch job N`.
fn submitted(stdout: &str) -> u32 {
    stdout
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("sbatch printed {stdout:?}"))
}

/// Submits held jobs one at a time until the controller's journal write
/// fails (a tmpfs may still have room in a file's last page for a record
/// or two); returns the ids accepted before, and the sbatch whose batch
/// failed to write, which is waiting for its answer.
fn submit_until_the_write_fails(c: &Cluster) -> (Vec<u32>, Child) {
    let mut accepted = Vec::new();
    for _ in 0..100 {
        let mut child = sbatch(c);
        let exited = c.wait_until("sbatch to end or the journal to fail", secs(30), || {
            if let Some(status) = child.try_wait().expect("waiting for sbatch") {
                return Some(Some(status));
            }
            c.log("ctld").contains(FAILED).then_some(None)
        });
        match exited {
            Some(status) => {
                let out = child.wait_with_output().expect("sbatch output");
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    status.success(),
                    "sbatch before the journal failed: {status} {stdout} {}\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    c.logs()
                );
                accepted.push(submitted(&stdout));
            }
            None => return (accepted, child),
        }
    }
    panic!("100 submissions and the journal never failed\n{}", c.logs());
}

/// What every test checks while the controller cannot write: changes are
/// refused with Slurm's message and exit 1, queries answer, the controller
/// runs on.
fn check_degraded(c: &Cluster, cause: &str, listed: &[u32]) {
    // After a try that fails too (a second after the first failure).
    c.wait_until("a failed try to save the state", secs(30), || {
        c.log("ctld")
            .contains("the controller state still cannot be saved")
            .then_some(())
    });
    let out = c.run("sbatch", &["-H", "--wrap", "true"]);
    assert_eq!(out.code, 1, "{out}\n{}", c.logs());
    assert_eq!(
        out.stderr,
        format!("sbatch: error: Batch job submission failed: Slurm controller state save failed: {cause}\n"),
        "{out}"
    );
    assert_eq!(out.stdout, "");
    // Other changes are refused the same way, and not made (the job is
    // still there after the recovery: `check_recovered`).
    let job = listed[0].to_string();
    let out = c.run("scancel", &[&job]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        format!("scancel: error: Kill job error on job id {job}: Slurm controller state save failed: {cause}\n"),
    );
    let out = c.run(
        "scontrol",
        &["update", &format!("JobId={job}"), "TimeLimit=5"],
    );
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        format!("Slurm controller state save failed: {cause} for job {job}\n"),
    );
    let q = c.ok("squeue", &["-h", "-o", "%i"]);
    for id in listed {
        assert!(
            q.stdout.lines().any(|l| l.trim() == id.to_string()),
            "job {id} not in squeue:\n{}",
            q.stdout
        );
    }
    c.ok("scontrol", &["ping"]);
    let pid = c.daemon_pids()[0];
    assert!(alive(pid), "the controller exited\n{}", c.logs());
    // The log names the file that could not be written, and why.
    let log = c.log("ctld");
    let line = log
        .lines()
        .find(|l| l.contains(FAILED))
        .expect("the failure is logged");
    assert!(line.contains(cause), "{line}");
    assert!(line.contains("ERROR"), "{line}");
}

/// After the cause is gone: the waiting sbatch gets its answer, new
/// submissions are taken, and every job answered is there after a restart.
fn check_recovered(c: &mut Cluster, waiting: Child, mut jobs: Vec<u32>) {
    let out = waiting.wait_with_output().expect("sbatch output");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the sbatch held while the journal failed: {} {stdout} {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        c.logs()
    );
    jobs.push(submitted(&stdout));
    assert!(c.log("ctld").contains(SAVED_AGAIN), "{}", c.logs());
    jobs.push(c.submit(&["-H", "--wrap", "true"]));
    c.restart_ctld();
    let q = c.ok("squeue", &["-h", "-t", "PD", "-o", "%i"]);
    let mut listed: Vec<u32> = q
        .stdout
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    listed.sort_unstable();
    jobs.sort_unstable();
    assert_eq!(listed, jobs, "{}", c.logs());
}

#[test]
fn issue_34_a_full_state_disk_refuses_changes_keeps_answering_and_recovers() {
    const NAME: &str = "issue_34_a_full_state_disk_refuses_changes_keeps_answering_and_recovers";
    // Dropped in reverse: the cluster, then the mount, then its directory.
    let Some((mnt, _tmpfs, state)) = full_state_disk(NAME) else {
        return;
    };
    let mut c = builder()
        .conf_extra(&format!("StateSaveLocation={}\n", state.display()))
        .start();
    let before = c.submit(&["-H", "--wrap", "true"]);
    let filler = fill(mnt.path());

    let (mut jobs, waiting) = submit_until_the_write_fails(&c);
    jobs.push(before);
    check_degraded(&c, "No space left on device", &jobs);
    let log = c.log("ctld");
    let line = log.lines().find(|l| l.contains(FAILED)).unwrap();
    assert!(line.contains(&state.display().to_string()), "{line}");

    std::fs::remove_file(&filler).expect("removing the filler");
    check_recovered(&mut c, waiting, jobs);
}

#[test]
fn issue_34_an_immutable_journal_refuses_changes_until_it_is_writable_again() {
    const NAME: &str = "issue_34_an_immutable_journal_refuses_changes_until_it_is_writable_again";
    if !is_root() {
        eprintln!("{NAME}: not run: chattr +i needs root");
        return;
    }
    let mut c = builder().start();
    let before = c.submit(&["-H", "--wrap", "true"]);
    // A job that ends when told to, while the journal cannot be written.
    let running = c.submit(&[
        "--wrap",
        "while [ ! -e go ]; do sleep 0.1; done; echo x > ended",
    ]);
    c.wait_state(running, "RUNNING", secs(30));
    let state = c.state_dir();
    let segment = std::fs::read_dir(&state)
        .expect("the state directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max()
        .expect("a log segment");
    // The segment refuses the append; the directory refuses the snapshot
    // and new segment that would take over from it.
    let Some(mut immutable) = Immutable::set(&[segment.clone(), state.clone()]) else {
        eprintln!("{NAME}: not run: chattr +i is not supported on this file system");
        return;
    };
    let (mut jobs, waiting) = submit_until_the_write_fails(&c);
    assert!(jobs.is_empty(), "an immutable segment took {jobs:?}");
    jobs.push(before);
    check_degraded(&c, "Operation not permitted", &jobs);
    let log = c.log("ctld");
    let line = log.lines().find(|l| l.contains(FAILED)).unwrap();
    assert!(line.contains(&segment.display().to_string()), "{line}");
    // Its end waits for the journal: the job is still RUNNING.
    c.write("go", "");
    c.wait_file("ended", secs(30));
    assert_eq!(c.job_state(running), "RUNNING");

    immutable.clear();
    check_recovered(&mut c, waiting, jobs);
    // Its node's report was not lost.
    assert_eq!(c.wait_done(running, secs(60)), "COMPLETED", "{}", c.logs());
}

/// A full tmpfs as StateSaveLocation, with the cluster on it: None (after
/// saying why) where no tmpfs can be mounted.
fn full_state_disk(name: &str) -> Option<(tempfile::TempDir, Tmpfs, PathBuf)> {
    if !is_root() {
        eprintln!("{name}: not run: mounting a tmpfs needs root");
        return None;
    }
    let mnt = tempfile::Builder::new()
        .prefix("muster-statefs-")
        .tempdir()
        .expect("a temp dir");
    let Some(tmpfs) = Tmpfs::mount(mnt.path(), "2m") else {
        eprintln!("{name}: not run: cannot mount a tmpfs here");
        return None;
    };
    let state = mnt.path().join("state");
    Some((mnt, tmpfs, state))
}

/// Fills the file system `dir` is on with a file in it.
fn fill(dir: &Path) -> PathBuf {
    let filler = dir.join("filler");
    let mut f = std::fs::File::create(&filler).expect("creating the filler");
    let chunk = vec![0x5a_u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    while f.write_all(&chunk[..512]).is_ok() {}
    filler
}

#[test]
fn issue_34_a_shutdown_while_the_state_cannot_be_saved_exits_non_zero_with_the_reason() {
    const NAME: &str =
        "issue_34_a_shutdown_while_the_state_cannot_be_saved_exits_non_zero_with_the_reason";
    // Dropped in reverse: the cluster, then the mount, then its directory.
    let Some((mnt, _tmpfs, state)) = full_state_disk(NAME) else {
        return;
    };
    let mut c = builder()
        .conf_extra(&format!("StateSaveLocation={}\n", state.display()))
        .start();
    let filler = fill(mnt.path());
    let (_, waiting) = submit_until_the_write_fails(&c);
    // `muster down`'s request (and `scontrol shutdown`'s).
    let cfg = conf::load(c.conf()).expect("slurm.conf").config;
    let admin = client::Client::new(cfg, client::current_identity());
    let answer = admin.call(proto::CtldRequest::Shutdown);
    assert!(
        matches!(answer, Ok(proto::CtldResponse::Ok)),
        "{answer:?}\n{}",
        c.logs()
    );
    let status = c
        .wait_ctld_exit(secs(20))
        .unwrap_or_else(|| panic!("the controller did not stop\n{}", c.logs()));
    assert_eq!(status.code(), Some(1), "{}", c.logs());
    let log = c.log("ctld");
    let line = log
        .lines()
        .find(|l| {
            l.contains("stopping: shutdown requested while the controller state cannot be saved")
        })
        .unwrap_or_else(|| panic!("no reason logged\n{log}"));
    assert!(line.contains("No space left on device"), "{line}");
    assert!(!log.contains("shutdown requested, stopping"), "{log}");
    // The sbatch whose answer waited gets none: its outcome is unknown.
    let out = waiting.wait_with_output().expect("sbatch output");
    assert!(!out.status.success());
    std::fs::remove_file(filler).expect("removing the filler");
}
