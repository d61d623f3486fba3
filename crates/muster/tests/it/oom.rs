//! Out of memory (issue 37, isolation notes §5 tests 1 and 3): with
//! `JobAcctGatherType=jobacct_gather/cgroup` and cgroup.conf's
//! `ConstrainRAMSpace=yes`, a step's memory cgroup is limited to its
//! `--mem`; a task the kernel kills for it ends the step OUT_OF_MEMORY
//! (`0:125`) with slurmstepd's line on its stderr; MaxRSS is the cgroup's
//! high-water mark, not the last sample.
//!
//! They need a writable memory cgroup (root): elsewhere they say so and
//! pass without checking anything. Every cgroup the cluster's node daemon
//! made is removed when the test ends, also when it fails ([`Cgroups`]).

use crate::secs;
use e2e::Cluster;
use std::path::{Path, PathBuf};

/// The cluster, and its node daemon's cgroup directories, removed (deepest
/// first) once the cluster and its processes are gone.
pub(crate) struct Cgroups {
    cluster: Option<Cluster>,
    dirs: Vec<PathBuf>,
}

impl Cgroups {
    pub(crate) fn c(&self) -> &Cluster {
        self.cluster.as_ref().expect("running")
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        drop(self.cluster.take());
        fn remove_tree(dir: &Path) {
            if let Ok(entries) = std::fs::read_dir(dir) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        remove_tree(&e.path());
                    }
                }
            }
            let _ = std::fs::remove_dir(dir);
        }
        for d in &self.dirs {
            remove_tree(d);
        }
    }
}

/// Whether this host lets us make memory cgroups (v1, as root).
pub(crate) fn memory_cgroups_writable() -> bool {
    let v1 = Path::new("/sys/fs/cgroup/memory/cgroup.procs");
    let v2 = Path::new("/sys/fs/cgroup/cgroup.subtree_control");
    [v1, v2]
        .iter()
        .any(|p| p.exists() && std::fs::OpenOptions::new().write(true).open(p).is_ok())
        && (v1.exists()
            || std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory")))
}

/// A one-node cluster gathering usage from cgroups, with `cgroup_conf`.
fn start(cgroup_conf: &str) -> Cgroups {
    start_files(cgroup_conf, &[])
}

/// `start` with more files beside slurm.conf.
pub(crate) fn start_files(cgroup_conf: &str, files: &[(&str, &str)]) -> Cgroups {
    let mut b = crate::builder()
        .nodes(1)
        .conf_extra("JobAcctGatherType=jobacct_gather/cgroup\nJobAcctGatherFrequency=1\n")
        .file("cgroup.conf", cgroup_conf);
    for (name, text) in files {
        b = b.file(name, text);
    }
    let c = b.start();
    // The node daemon's cgroups: muster/<node>-<FNV-1a of its spool>.
    let spool = c.root().join("spool").join("node1");
    let hash = spool
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    let name = format!("node1-{:08x}", hash as u32);
    let dirs = ["memory", "cpuacct", "cpu,cpuacct", ""]
        .iter()
        .map(|h| {
            Path::new("/sys/fs/cgroup")
                .join(h)
                .join("muster")
                .join(&name)
        })
        .collect();
    Cgroups {
        cluster: Some(c),
        dirs,
    }
}

const LIMITS: &str = "ConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n";

/// Python touching 300 MiB: more than `--mem=100M` allows.
const HOG: &str = "x = b'a' * (300 << 20)";

fn sacct(c: &Cluster, what: &str, fields: &str) -> String {
    c.wait_until("the record in sacct", secs(10), || {
        let o = c.run("sacct", &["-n", "-P", "-o", fields, "-j", what]);
        (!o.stdout.trim().is_empty() && !o.stdout.contains("RUNNING")).then_some(o.stdout)
    })
}

#[test]
fn issue_37_a_step_killed_for_memory_ends_out_of_memory() {
    if !memory_cgroups_writable() {
        eprintln!("skipped: no writable memory cgroup here (not root?)");
        return;
    }
    let g = start(LIMITS);
    let c = g.c();
    let o = c.run("srun", &["--mem=100M", "python3", "-c", HOG]);
    assert_ne!(o.code, 0, "srun: {o:?}");
    // slurmstepd's line names the step: StepId=J.0.
    let line = o
        .stderr
        .lines()
        .find(|l| l.starts_with("slurmstepd: error: Detected"))
        .unwrap_or_else(|| panic!("no OOM line in srun's stderr: {:?}", o.stderr));
    let job = line
        .split("StepId=")
        .nth(1)
        .and_then(|r| r.split('.').next())
        .unwrap_or_else(|| panic!("no StepId in {line:?}"));
    assert_eq!(
        line,
        format!(
            "slurmstepd: error: Detected 1 oom_kill event in StepId={job}.0. \
             Some of the step tasks have been OOM Killed."
        )
    );
    // srun names the task, exits 128 + 125, and the job ends with it.
    assert!(
        o.stderr
            .contains("srun: error: node1: task 0: Out Of Memory\n"),
        "srun's stderr: {:?}",
        o.stderr
    );
    assert_eq!(o.code, 253, "srun: {o:?}");
    let step = format!("{job}.0");
    assert_eq!(
        sacct(c, &step, "JobID,State,ExitCode"),
        format!("{step}|OUT_OF_MEMORY|0:125\n")
    );
    assert_eq!(
        sacct(c, job, "JobID,State,ExitCode"),
        format!("{job}|OUT_OF_MEMORY|0:125\n{step}|OUT_OF_MEMORY|0:125\n")
    );
    // sacct's default 10-wide column.
    let wide = c.run("sacct", &["-n", "-o", "State", "-j", &step]);
    assert_eq!(wide.stdout.trim(), "OUT_OF_ME+", "{wide:?}");
}

#[test]
fn issue_37_a_batch_step_killed_for_memory_ends_the_job_out_of_memory() {
    if !memory_cgroups_writable() {
        eprintln!("skipped: no writable memory cgroup here (not root?)");
        return;
    }
    let g = start(LIMITS);
    let c = g.c();
    let id = c.submit(&[
        "--mem=100M",
        "-o",
        "oom.out",
        "--wrap",
        &format!("python3 -c \"{HOG}\""),
    ]);
    assert_eq!(c.wait_done(id, secs(30)), "OUT_OF_MEMORY");
    assert_eq!(c.squeue_field(id, "%t"), "OOM");
    assert_eq!(c.job_field(id, "JobState"), "OUT_OF_MEMORY");
    assert_eq!(c.job_field(id, "Reason"), "OutOfMemory");
    assert_eq!(c.job_field(id, "ExitCode"), "0:125");
    let out = c.read("oom.out");
    assert!(
        out.contains(&format!(
            "slurmstepd: error: Detected 1 oom_kill event in StepId={id}.batch. \
             Some of the step tasks have been OOM Killed.\n"
        )),
        "oom.out: {out:?}"
    );
    assert_eq!(
        sacct(c, &id.to_string(), "JobID,State,ExitCode"),
        format!("{id}|OUT_OF_MEMORY|0:125\n{id}.batch|OUT_OF_MEMORY|0:125\n")
    );
}

/// sacct's MaxRSS (`153600K`, `150M`) in KiB.
fn kib(text: &str) -> u64 {
    let (num, unit) = text.split_at(text.len().saturating_sub(1));
    let scale = match unit {
        "K" => 1.0,
        "M" => 1024.0,
        "G" => 1024.0 * 1024.0,
        _ => return text.parse().unwrap_or(0),
    };
    (num.parse::<f64>().unwrap_or(0.0) * scale) as u64
}

#[test]
fn issue_37_max_rss_is_the_cgroups_peak() {
    if !memory_cgroups_writable() {
        eprintln!("skipped: no writable memory cgroup here (not root?)");
        return;
    }
    // No limits: the cgroup only measures.
    let g = start("ConstrainCores=no\n");
    let c = g.c();
    // 160 MiB touched and freed by a process the task never waits for
    // (so not in its rusage), then 2 s of nearly nothing: only the
    // cgroup's high-water mark saw it.
    let script = "(python3 -c \"x = b'a' * (160 << 20); del x\" &); sleep 2";
    let o = c.run("srun", &["sh", "-c", script]);
    assert_eq!(o.code, 0, "srun: {o:?}");
    let rows = c.wait_until("the step in sacct", secs(10), || {
        let o = c.run("sacct", &["-n", "-P", "-o", "JobID,MaxRSS,State"]);
        o.stdout
            .lines()
            .find(|l| l.contains(".0|") && l.ends_with("|COMPLETED"))
            .map(str::to_string)
    });
    let max_rss = kib(rows.split('|').nth(1).unwrap_or(""));
    assert!(max_rss >= 150 * 1024, "MaxRSS below 150 MiB: {rows}");
}

#[test]
fn issue_37_one_task_killed_for_memory_makes_the_step_out_of_memory() {
    if !memory_cgroups_writable() {
        eprintln!("skipped: no writable memory cgroup here (not root?)");
        return;
    }
    let g = start(LIMITS);
    let c = g.c();
    // Only task 1 touches 300 MiB; task 0 exits 0. On cgroup v1 the kill
    // is counted in task 1's cgroup alone: the step's count is the sum.
    let code = format!("import os\nif os.environ['SLURM_PROCID'] == '1':\n    {HOG}\n");
    let o = c.run("srun", &["-n2", "--mem=100M", "python3", "-c", &code]);
    assert_eq!(o.code, 253, "srun: {o:?}");
    assert!(
        o.stderr
            .contains("srun: error: node1: task 1: Out Of Memory\n"),
        "srun's stderr: {:?}",
        o.stderr
    );
    let line = o
        .stderr
        .lines()
        .find(|l| l.starts_with("slurmstepd: error: Detected 1 oom_kill event in StepId="))
        .unwrap_or_else(|| panic!("no OOM line in srun's stderr: {:?}", o.stderr));
    let step = line
        .split("StepId=")
        .nth(1)
        .and_then(|r| r.split(". ").next())
        .unwrap_or_else(|| panic!("no StepId in {line:?}"));
    assert_eq!(
        sacct(c, step, "JobID,State,ExitCode"),
        format!("{step}|OUT_OF_MEMORY|0:125\n")
    );
}
