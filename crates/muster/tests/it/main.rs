//! End-to-end tests: a real `muster ctld` and real `muster noded`s on
//! loopback (see the `e2e` crate), driven through the real commands, with
//! real job processes. One binary for all of them; each test starts its own
//! cluster, so they run in parallel.
//!
//! `time_limit_really_times_out` waits for a one-minute limit to pass (about
//! 65 s); every other test takes a few seconds.

mod acct;
mod acct_pg;
mod acctmgr;
mod arrays;
mod attach;
mod auth;
mod cancel;
mod cli_musl;
mod confine;
mod container_paths;
mod container_registry;
mod containers;
mod containers_unpriv;
mod ctld_scripts;
mod deploy;
mod deps;
mod durable;
mod env;
mod errors;
mod gpus;
mod hooks;
mod hostile;
mod hosts;
mod interactive;
mod jobs;
mod licenses;
mod local;
mod logs;
mod lost_reply;
mod mail;
mod mpi;
mod nodes;
mod oom;
mod preempt;
mod priority;
mod private;
mod reboot;
mod reconfigure;
mod rest;
mod rest_v0044;
mod resv;
mod sched;
mod sim;
mod statesave;
mod steps;
mod subcommands;
mod topology;
mod ui;
mod watch;
mod xid;

use e2e::{Builder, Cluster};
use std::time::Duration;

/// A builder for a cluster that runs this crate's `muster`.
pub fn builder() -> Builder {
    Cluster::builder().binary(env!("CARGO_BIN_EXE_muster"))
}

/// A cluster of `n` default nodes (`CPUs=2 RealMemory=2000`).
pub fn cluster(n: u32) -> Cluster {
    builder().nodes(n).start()
}

/// `n` seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A reference output of Slurm 22.05 (`shared/reference/slurm-22.05/NAME`),
/// or None when this checkout has no `shared/` next to it.
pub fn reference(name: &str) -> Option<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/slurm-22.05");
    std::fs::read_to_string(dir.join(name)).ok()
}

/// Seconds since the epoch of an `scontrol show` time (`2026-12-02T13:14:00`),
/// as a plain count (the tests only compare them).
pub fn parse_time(s: &str) -> i64 {
    let (d, t) = s
        .split_once('T')
        .unwrap_or_else(|| panic!("not a time: {s:?}"));
    let n: Vec<i64> = d
        .split('-')
        .chain(t.split(':'))
        .map(|x| x.parse().unwrap_or_else(|_| panic!("not a time: {s:?}")))
        .collect();
    // Days from a civil date (Howard Hinnant's algorithm).
    let (y, m, day) = (n[0] - i64::from(n[1] <= 2), n[1], n[2]);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    days * 86400 + n[3] * 3600 + n[4] * 60 + n[5]
}
