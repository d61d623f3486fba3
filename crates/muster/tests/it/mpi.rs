//! Real MPI (issue 8, items 6 and 7): Debian's MPICH through our PMI server
//! (`srun --mpi=pmi2`, block and cyclic), mpi4py built on MPICH, Open MPI
//! launched directly through our PMIx server (`srun --mpi=pmix`, with the
//! `pmix` feature), and the MPI launchers inside an allocation: Open MPI's
//! `mpirun` (its `orted`s started through our srun) and MPICH's `mpiexec`
//! (hydra's proxies started through our srun), in `salloc` and in a batch
//! job. Every check
//! counts the world: a missing variable turns one 4-rank job into four
//! 1-rank jobs that all exit 0.
//!
//! `xtask/setup.sh` installs the MPIs and sets `MUSTER_REQUIRE_MPI=1`, under which
//! anything missing (the packages, the mpi4py venv, root for the hosts'
//! namespaces, a muster built with `--features pmix`) fails the test;
//! elsewhere it is skipped with the reason printed.

use crate::{builder, cluster};
use e2e::{Cluster, Output};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MPICC_MPICH: &str = "/usr/bin/mpicc.mpich";
const MPIEXEC_MPICH: &str = "/usr/bin/mpiexec.mpich";
pub(crate) const MPICC_OMPI: &str = "/usr/bin/mpicc.openmpi";
const MPIRUN_OMPI: &str = "/usr/bin/mpirun.openmpi";

/// How long one MPI command may take before the test calls it a hang
/// (a guard, not a timing assertion: a healthy run takes seconds).
const HANG: Duration = Duration::from_secs(120);

fn required() -> bool {
    std::env::var("MUSTER_REQUIRE_MPI").as_deref() == Ok("1")
}

/// Whether every path exists; if not, fails under `MUSTER_REQUIRE_MPI=1`
/// and otherwise prints why the test is skipped.
fn have(paths: &[&Path]) -> bool {
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        !required(),
        "MUSTER_REQUIRE_MPI=1 but not installed: {} (xtask/setup.sh installs them)",
        missing.join(", ")
    );
    eprintln!(
        "skipping: not installed: {} (xtask/setup.sh installs them)",
        missing.join(", ")
    );
    false
}

/// The python of the venv holding mpi4py built on MPICH.
fn mpi4py_python() -> PathBuf {
    match std::env::var_os("MUSTER_TEST_MPI4PY") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mpi4py-mpich/bin/python"),
    }
}

/// A cluster of `n` distinct hosts, or None (printing why) where the
/// harness cannot make them; under `MUSTER_REQUIRE_MPI=1` that fails.
fn mpi_hosts(n: u32) -> Option<Cluster> {
    if let Some(why) = e2e::hosts_unavailable() {
        assert!(!required(), "MUSTER_REQUIRE_MPI=1 but {why}");
        eprintln!("skipping the multi-host half: {why}");
        return None;
    }
    Some(builder().nodes(n).hosts(true).start())
}

pub(crate) const ALLREDUCE_C: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    if (argc > 1 && rank == atoi(argv[1])) {
        return 3; /* leaves without MPI_Finalize while the others wait */
    }
    int mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
"#;

const ALLREDUCE_PY: &str = r#"
import socket
from mpi4py import MPI
w = MPI.COMM_WORLD
assert "MPICH" in MPI.Get_library_version(), MPI.Get_library_version()
s = w.allreduce(w.Get_rank() + 1, op=MPI.SUM)
print(f"rank {w.Get_rank()} of {w.Get_size()} on {socket.gethostname()} sum {s}", flush=True)
"#;

/// Compiles the test program in the cluster's work directory as `out`.
pub(crate) fn compile(c: &Cluster, mpicc: &str, out: &str) {
    c.write("allreduce.c", ALLREDUCE_C);
    let st = std::process::Command::new(mpicc)
        .args(["-o", out, "allreduce.c"])
        .current_dir(c.work())
        .status()
        .unwrap_or_else(|e| panic!("running {mpicc}: {e}"));
    assert!(st.success(), "{mpicc} failed");
}

/// (rank, size, host, sum) of each output line.
pub(crate) fn ranks(text: &str) -> Vec<(u32, u32, String, u32)> {
    let mut v: Vec<(u32, u32, String, u32)> = text
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["rank", r, "of", s, "on", h, "sum", t] => Some((
                    r.parse().ok()?,
                    s.parse().ok()?,
                    h.to_string(),
                    t.parse().ok()?,
                )),
                _ => None,
            }
        })
        .collect();
    v.sort();
    v
}

/// Four distinct ranks 0-3, each of a world of 4, each with sum 10; on
/// distinct hosts, rank i on `hosts[i]`.
fn check_world(text: &str, hosts: Option<[&str; 4]>) {
    let got = ranks(text);
    assert_eq!(got.len(), 4, "not 4 ranks:\n{text}");
    for (i, (rank, size, host, sum)) in got.iter().enumerate() {
        assert_eq!((*rank, *size, *sum), (i as u32, 4, 10), "{text}");
        if let Some(h) = hosts {
            assert_eq!(host, h[i], "rank {i} on the wrong host:\n{text}");
        }
    }
}

/// Runs `muster cmd args...` with `env`, killing its process group and
/// failing (with the daemons' logs) if it has not finished within `HANG`.
fn run_guarded(c: &Cluster, cmd: &str, args: &[&str], env: &[(&str, String)]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut command = c.command(cmd);
    command.args(args).process_group(0);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("running muster");
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let mut buf = Vec::new();
                let _ = r.read_to_end(&mut buf);
                s = String::from_utf8_lossy(&buf).into_owned();
            }
            s
        })
    };
    let out_t = reader(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err_t = reader(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for muster") {
            break Some(st);
        }
        if start.elapsed() > HANG {
            let pg = nix::unistd::Pid::from_raw(-(child.id() as i32));
            let _ = nix::sys::signal::kill(pg, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = Output {
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
        code: status.and_then(|s| s.code()).unwrap_or(-1),
    };
    assert!(
        status.is_some(),
        "`{cmd} {}` hung for {HANG:?}: {out}\n{}",
        args.join(" "),
        c.logs()
    );
    out
}

/// UCX's transports for MPICH 4.0.2: TCP between hosts, and shared memory
/// where UCX finds it reachable (the harness's hosts share one kernel).
/// With TCP alone MPICH 4.0.2 can deadlock in MPI_Finalize: a rank still
/// closing its UCX endpoints waits on peers that already sit in the
/// final PMI barrier and no longer progress UCX (seen under load).
fn mpich_env(distinct: bool) -> Vec<(&'static str, String)> {
    let mut v = vec![("UCX_TLS", "self,sm,tcp".to_string())];
    if !distinct {
        v.push(("UCX_NET_DEVICES", "lo".to_string()));
    }
    v
}

#[test]
fn mpich_and_mpi4py_through_pmi_block_and_cyclic() {
    let py = mpi4py_python();
    if !have(&[Path::new(MPICC_MPICH), &py]) {
        return;
    }
    let mut clusters = vec![(cluster(2), false)];
    if let Some(c) = mpi_hosts(2) {
        clusters.push((c, true));
    }
    let py = py.display().to_string();
    for (c, distinct) in &clusters {
        compile(c, MPICC_MPICH, "allreduce");
        c.write("allreduce.py", ALLREDUCE_PY);
        let env = mpich_env(*distinct);
        let block = distinct.then_some(["node1", "node1", "node2", "node2"]);
        let cyclic = distinct.then_some(["node1", "node2", "node1", "node2"]);
        for (layout, hosts) in [("block", block), ("cyclic", cyclic)] {
            for prog in [&["./allreduce"][..], &[py.as_str(), "allreduce.py"][..]] {
                let mut args = vec!["-N2", "-n4", "-m", layout, "--mpi=pmi2"];
                args.extend_from_slice(prog);
                let out = run_guarded(c, "srun", &args, &env);
                assert_eq!(out.code, 0, "{args:?}: {out}\n{}", c.logs());
                check_world(&out.stdout, hosts);
            }
        }
        // A rank that leaves before the collective fails the step at once:
        // srun ends it when the rank exits without PMI finalize, or when a
        // peer that could not reach it aborts, whichever comes first.
        let out = run_guarded(
            c,
            "srun",
            &["-N2", "-n4", "--mpi=pmi2", "./allreduce", "1"],
            &env,
        );
        assert_ne!(out.code, 0, "{out}");
        assert!(
            out.stderr.contains("task 1: Exited with exit code 3"),
            "{out}"
        );
        assert!(
            out.stderr
                .contains("task 1: task 1 exited without calling PMI finalize")
                || out.stderr.contains("called PMI abort"),
            "{out}"
        );
        assert!(out.stderr.contains("srun: Terminating StepId="), "{out}");
    }
}

/// Open MPI's transports pinned to the hosts' bridge: TCP between ranks
/// (ob1 and the tcp/vader BTLs, not UCX, whose shared memory would cross
/// the harness's hosts), and running as root allowed.
fn ompi_env(c: &Cluster) -> Vec<(&'static str, String)> {
    let addr = c.host_side_addr().unwrap_or_default();
    let net = match addr.rsplit_once('.') {
        Some((prefix, _)) => format!("{prefix}.0/24"),
        None => addr,
    };
    vec![
        ("OMPI_ALLOW_RUN_AS_ROOT", "1".into()),
        ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1".into()),
        ("OMPI_MCA_pml", "ob1".into()),
        ("OMPI_MCA_btl", "self,vader,tcp".into()),
        ("OMPI_MCA_osc", "^ucx".into()),
        ("OMPI_MCA_oob_tcp_if_include", net.clone()),
        ("OMPI_MCA_btl_tcp_if_include", net),
    ]
}

/// Runs `launcher` (4 ranks) in `salloc -N2 -n4` and in a batch job, and
/// checks 2 ranks on each host and that it started `daemon` as a step of
/// the job through our srun (sacct lists it).
fn launcher_in_salloc_and_sbatch(
    c: &Cluster,
    launcher: &[&str],
    daemon: &str,
    env: &[(&str, String)],
) {
    let through_srun = |job: &str| {
        let out = c.run("sacct", &["-j", job, "-n", "-P", "-o", "JobID,JobName"]);
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{job}.")) && l.ends_with(&format!("|{daemon}"))),
            "no {daemon} step in job {job}: {out}"
        );
    };
    let two_each = |text: &str| {
        check_world(text, None);
        let on = |h: &str| ranks(text).iter().filter(|r| r.2 == h).count();
        assert_eq!((on("node1"), on("node2")), (2, 2), "{text}");
    };
    let mut args = vec!["-N2", "-n4"];
    args.extend_from_slice(launcher);
    let out = run_guarded(c, "salloc", &args, env);
    assert_eq!(out.code, 0, "salloc {launcher:?}: {out}\n{}", c.logs());
    two_each(&out.stdout);
    let job = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("no job id: {out}"))
        .to_string();
    through_srun(&job);
    let script = format!("#!/bin/sh\nexec {}\n", launcher.join(" "));
    c.write("launch.sh", &script);
    let out = run_guarded(
        c,
        "sbatch",
        &["--parsable", "-N2", "-n4", "-o", "launch.out", "launch.sh"],
        env,
    );
    assert_eq!(out.code, 0, "{out}");
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    let state = c.wait_done(id, HANG);
    let text = c.read("launch.out");
    assert_eq!(state, "COMPLETED", "{launcher:?}:\n{text}\n{}", c.logs());
    two_each(&text);
    through_srun(&id.to_string());
}

#[test]
fn openmpi_mpirun_launches_through_srun_in_salloc_and_sbatch() {
    if !have(&[Path::new(MPICC_OMPI), Path::new(MPIRUN_OMPI)]) {
        return;
    }
    let Some(c) = mpi_hosts(2) else { return };
    compile(&c, MPICC_OMPI, "allreduce-ompi");
    let work = c.work().display().to_string();
    let prog = format!("{work}/allreduce-ompi");
    launcher_in_salloc_and_sbatch(
        &c,
        &[MPIRUN_OMPI, "-np", "4", &prog],
        "orted",
        &ompi_env(&c),
    );
}

#[test]
fn mpich_mpiexec_launches_through_srun_in_salloc_and_sbatch() {
    if !have(&[Path::new(MPICC_MPICH), Path::new(MPIEXEC_MPICH)]) {
        return;
    }
    let Some(c) = mpi_hosts(2) else { return };
    compile(&c, MPICC_MPICH, "allreduce");
    let work = c.work().display().to_string();
    let prog = format!("{work}/allreduce");
    launcher_in_salloc_and_sbatch(
        &c,
        &[MPIEXEC_MPICH, "-n", "4", &prog],
        "hydra_pmi_proxy",
        &mpich_env(true),
    );
}

#[test]
fn mpi_launchers_refuse_nothing_they_need_from_srun() {
    // The options Open MPI's mpirun and hydra pass to srun are accepted.
    let c = cluster(2);
    let out = c.run(
        "srun",
        &[
            "--ntasks-per-node=1",
            "--kill-on-bad-exit",
            "--cpu-bind=none",
            "--cpu_bind=none",
            "--mpi=none",
            "--nodes=2",
            "--nodelist=node1,node2",
            "--ntasks=2",
            "--input",
            "none",
            "--external-launcher",
            "-l",
            "printenv",
            "SLURM_NODEID",
        ],
    );
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["0: 0", "1: 1"], "{out}");
}

/// Open MPI started by srun itself (no mpirun): every rank finds the PMIx
/// server of its node's step supervisor, and the fences cross the hosts
/// through srun. Block and cyclic layouts put the right ranks on each
/// host; a rank leaving without MPI_Finalize fails the step at once.
#[test]
fn openmpi_direct_launch_through_pmix_block_and_cyclic() {
    if !cfg!(feature = "pmix") {
        assert!(
            !required(),
            "MUSTER_REQUIRE_MPI=1 but muster was built without the `pmix` feature \
             (cargo xtask verify builds it where libpmix-dev is installed)"
        );
        // Without PMIx built in, srun refuses it plainly.
        let c = cluster(1);
        let out = c.run("srun", &["--mpi=pmix", "true"]);
        assert_eq!(out.code, 1, "{out}");
        assert_eq!(
            out.stderr,
            "srun: error: MPI type 'pmix' is not available: this muster was built without \
             PMIx (cargo feature `pmix`), --mpi=list for acceptable types\n"
        );
        eprintln!("skipping the Open MPI half: built without the `pmix` feature");
        return;
    }
    if !have(&[Path::new(MPICC_OMPI)]) {
        return;
    }
    let Some(c) = mpi_hosts(2) else { return };
    compile(&c, MPICC_OMPI, "allreduce-ompi");
    let env = ompi_env(&c);
    let block = ["node1", "node1", "node2", "node2"];
    let cyclic = ["node1", "node2", "node1", "node2"];
    for (layout, hosts) in [("block", block), ("cyclic", cyclic)] {
        let args = ["-N2", "-n4", "-m", layout, "--mpi=pmix", "./allreduce-ompi"];
        let out = run_guarded(&c, "srun", &args, &env);
        assert_eq!(out.code, 0, "{args:?}: {out}\n{}", c.logs());
        check_world(&out.stdout, Some(hosts));
    }
    // All ranks on one node: libpmix completes the fences by itself.
    let out = run_guarded(
        &c,
        "srun",
        &[
            "-N1",
            "-n2",
            "-w",
            "node2",
            "--mpi=pmix",
            "./allreduce-ompi",
        ],
        &env,
    );
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    let two = |r: u32| (r, 2, "node2".to_string(), 3);
    assert_eq!(ranks(&out.stdout), vec![two(0), two(1)], "{out}");
    let out = run_guarded(
        &c,
        "srun",
        &["-N2", "-n4", "--mpi=pmix", "./allreduce-ompi", "1"],
        &env,
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("task 1: Exited with exit code 3"),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("task 1: task 1 exited without calling PMIx_Finalize")
            || out.stderr.contains("called PMIx_Abort"),
        "{out}"
    );
    assert!(out.stderr.contains("srun: Terminating StepId="), "{out}");
}
