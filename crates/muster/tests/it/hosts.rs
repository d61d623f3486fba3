//! Steps and MPI on distinct hosts: every node daemon in its own network
//! and UTS namespace, on a bridge the harness makes (`e2e::hosts`). Each
//! test also runs on the plain loopback cluster where distinct hosts do not
//! matter. Without root the multi-host half is skipped with the reason
//! printed; CI runs as root.

use crate::{builder, cluster, secs};
use e2e::Cluster;
use std::path::Path;

/// A cluster of `n` distinct hosts, or None (printing why) where the
/// harness cannot make network namespaces.
pub fn hosts(n: u32) -> Option<Cluster> {
    if let Some(why) = e2e::hosts_unavailable() {
        eprintln!("skipping the multi-host half: {why}");
        return None;
    }
    Some(builder().nodes(n).hosts(true).start())
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn srun_salloc_and_batch_steps_run_on_distinct_hosts() {
    let Some(c) = hosts(2) else { return };
    let out = c.run("srun", &["-N2", "-n4", "-l", "hostname"]);
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    assert_eq!(
        sorted_lines(&out.stdout),
        vec!["0: node1", "1: node1", "2: node2", "3: node2"],
        "{out}"
    );
    let out = c.run("salloc", &["-N2", "srun", "hostname"]);
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    assert_eq!(sorted_lines(&out.stdout), vec!["node1", "node2"], "{out}");
    // srun inside a batch script runs on the batch host and reaches the other.
    let id = c.submit(&[
        "-N2",
        "-n2",
        "-o",
        "hosts.out",
        "--wrap",
        "srun -l hostname",
    ]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED", "{}", c.logs());
    let text = c.wait_file("hosts.out", secs(5));
    assert_eq!(sorted_lines(&text), vec!["0: node1", "1: node2"], "{text}");
    // The tasks see the address srun listens on, on the batch host.
    let out = c.run("srun", &["-N1", "printenv", "SLURM_SRUN_COMM_HOST"]);
    assert_eq!(
        out.stdout,
        format!("{}\n", c.host_side_addr().unwrap_or_default())
    );
}

const ALLREDUCE_C: &str = r#"
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

/// Builds the test program with Debian's MPICH, or None when it is not
/// installed (`.ci/run` installs it).
fn build_allreduce(c: &Cluster) -> Option<()> {
    if !Path::new("/usr/bin/mpicc.mpich").exists() {
        eprintln!("skipping: mpicc.mpich not installed (Debian package libmpich-dev)");
        return None;
    }
    c.write("allreduce.c", ALLREDUCE_C);
    let st = std::process::Command::new("/usr/bin/mpicc.mpich")
        .args(["-o", "allreduce", "allreduce.c"])
        .current_dir(c.work())
        .status()
        .expect("running mpicc.mpich");
    assert!(st.success(), "mpicc.mpich failed");
    Some(())
}

/// (rank, size, host, sum) of each output line.
fn ranks(text: &str) -> Vec<(u32, u32, String, u32)> {
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

fn check_world(text: &str, hosts: Option<[&str; 4]>) {
    let got = ranks(text);
    assert_eq!(got.len(), 4, "{text}");
    for (i, (rank, size, host, sum)) in got.iter().enumerate() {
        assert_eq!((*rank, *size, *sum), (i as u32, 4, 10), "{text}");
        if let Some(h) = hosts {
            assert_eq!(host, h[i], "{text}");
        }
    }
}

#[test]
fn mpich_allreduce_through_pmi_block_cyclic_and_mpiexec() {
    // FIXME(#8): MPICH 4.0.2 over UCX sometimes hangs inside MPI (after
    // PMI) on the test hosts; run it by hand until the transport settings
    // are pinned down.
    if std::env::var("MUSTER_TEST_MPI").as_deref() != Ok("1") {
        eprintln!("skipping: set MUSTER_TEST_MPI=1 to run the MPICH test");
        return;
    }
    let mut clusters = vec![(cluster(2), false)];
    if let Some(c) = hosts(2) {
        clusters.push((c, true));
    }
    for (c, distinct) in &clusters {
        if build_allreduce(c).is_none() {
            return;
        }
        let block = distinct.then_some(["node1", "node1", "node2", "node2"]);
        let cyclic = distinct.then_some(["node1", "node2", "node1", "node2"]);
        // UCX over TCP only: the harness's hosts share one kernel, and UCX's
        // shared memory would try to reach "other hosts" through /proc.
        let ucx: &[(&str, &str)] = if *distinct {
            &[("UCX_TLS", "self,tcp")]
        } else {
            &[("UCX_TLS", "self,tcp"), ("UCX_NET_DEVICES", "lo")]
        };
        let out = c.run_env("srun", &["-N2", "-n4", "--mpi=pmi2", "./allreduce"], ucx);
        assert_eq!(out.code, 0, "{out}\n{}", c.logs());
        check_world(&out.stdout, block);
        let out = c.run_env(
            "srun",
            &["-N2", "-n4", "-m", "cyclic", "--mpi=pmi2", "./allreduce"],
            ucx,
        );
        assert_eq!(out.code, 0, "{out}\n{}", c.logs());
        check_world(&out.stdout, cyclic);
        // MPICH's own launcher inside an allocation: hydra starts its
        // proxies through srun. Only on loopback: hydra's proxies call back
        // to the launching host by its name, which the harness's hosts
        // cannot resolve (no name service in the namespaces).
        if !distinct {
            let out = c.run_env(
                "salloc",
                &["-N2", "-n4", "mpiexec.mpich", "-n", "4", "./allreduce"],
                ucx,
            );
            assert_eq!(out.code, 0, "{out}\n{}", c.logs());
            check_world(&out.stdout, block);
        }
        // A rank that leaves before the collective fails the step at once.
        let out = c.run_env(
            "srun",
            &["-N2", "-n4", "--mpi=pmi2", "./allreduce", "1"],
            ucx,
        );
        assert_ne!(out.code, 0, "{out}");
        assert!(
            out.stderr
                .contains("task 1: task 1 exited without calling PMI finalize"),
            "{out}"
        );
    }
}
