//! Memory per pending job in the engine: submits held jobs as
//! `sbatch -H --wrap true` would (with a shell-sized environment) and
//! reports what the engine keeps for each, two ways: live heap bytes
//! counted by the allocator (exact, the same on every run), and the
//! process's RSS growth after `malloc_trim` (what the system sees:
//! allocator headers, rounding and the holes freed blocks leave).
//!
//! `cargo bench -p engine --bench memory [-- JOBS]`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout as asked.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: p came from alloc with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The process's resident set in bytes, after giving glibc's free pages
/// back (so the figure does not depend on how much it kept).
// A benchmark, not the engine: it reads the process's own status file.
#[allow(clippy::disallowed_methods)]
fn rss_trimmed() -> i64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim takes no pointers and works on the
        // allocator's own lists under its own locks.
        unsafe {
            malloc_trim(0);
        }
    }
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

const CONF: &str = "\
ClusterName=bench
MaxJobCount=10000000
SlurmctldHost=ctl(127.0.0.1)
SelectTypeParameters=CR_Core_Memory
NodeName=n[1-4] CPUs=2 RealMemory=4000
PartitionName=debug Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
";

fn main() {
    let jobs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let loaded = conf::parse_str(CONF, std::path::Path::new("/x/slurm.conf"), &mut |_| {
        Err(std::io::Error::other("no includes"))
    })
    .expect("config parses");
    let mut e = engine::Engine::new(&loaded.config, 0);
    let who = proto::Identity {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        host: "login1".into(),
    };
    // A bare login shell's environment: about 40 variables, 1.5 KB.
    let env: Vec<(String, String)> = (0..40)
        .map(|i| (format!("VARIABLE_{i}"), "x".repeat(30)))
        .collect();
    let desc = proto::JobDesc {
        name: "wrap".into(),
        script: "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n".into(),
        work_dir: "/home/alice/project".into(),
        submit_dir: "/home/alice/project".into(),
        submit_host: "login1".into(),
        submit_line: "sbatch -H --wrap true".into(),
        env: env.into(),
        stdout: Some("slurm-%j.out".into()),
        hold: true,
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        ..proto::JobDesc::default()
    };
    // The first job interns the environment and script.
    e.on_submit(desc.clone(), &who, 1).expect("accepted");
    e.take_commands();
    let before = LIVE.load(Ordering::Relaxed);
    let rss_before = rss_trimmed();
    for i in 0..jobs {
        e.on_submit(desc.clone(), &who, 2 + i as i64 / 1000)
            .expect("accepted");
        if i % 1000 == 999 {
            e.schedule(2 + i as i64 / 1000);
            e.take_commands();
        }
    }
    e.schedule(1_000_000);
    e.take_commands();
    let after = LIVE.load(Ordering::Relaxed);
    let rss_after = rss_trimmed();
    println!(
        "engine: {} held jobs, {} live heap bytes per job, {} B of RSS per job after malloc_trim \
         (size_of Job {} B, JobDesc {} B)",
        jobs,
        (after - before) / jobs as isize,
        (rss_after - rss_before) / jobs as i64,
        std::mem::size_of::<engine::Job>(),
        std::mem::size_of::<proto::JobDesc>(),
    );
}
