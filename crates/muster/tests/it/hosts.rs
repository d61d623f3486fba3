//! Steps and MPI on distinct hosts: every node daemon in its own network
//! and UTS namespace, on a bridge the harness makes (`e2e::hosts`). Each
//! test also runs on the plain loopback cluster where distinct hosts do not
//! matter. MPI on these hosts is in `mpi`. Without root the multi-host half is skipped with the reason
//! printed; CI runs as root.

use crate::{builder, secs};
use e2e::Cluster;

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
