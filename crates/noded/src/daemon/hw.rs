//! What the node has: CPUs and their layout, memory, load, OS, boot time.
//! The parsers take the text of `/proc` files so they can be tested with
//! samples; [`probe`] reads the real files.

use std::collections::BTreeSet;

/// CPU layout, as slurm.conf's `CPUs`, `Sockets`, `CoresPerSocket` and
/// `ThreadsPerCore` describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopology {
    /// Logical CPUs.
    pub cpus: u32,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Threads per core.
    pub threads_per_core: u32,
}

impl CpuTopology {
    /// `cpus` CPUs without a known layout: one socket per CPU, as slurmd
    /// assumes when it cannot tell.
    pub fn flat(cpus: u32) -> CpuTopology {
        let cpus = cpus.max(1);
        CpuTopology {
            cpus,
            sockets: cpus,
            cores_per_socket: 1,
            threads_per_core: 1,
        }
    }
}

/// Parses `/proc/cpuinfo`. Sockets come from distinct `physical id`s and
/// cores from distinct (`physical id`, `core id`) pairs; without those
/// fields (many ARM kernels) the layout is flat.
pub fn parse_cpuinfo(text: &str) -> Option<CpuTopology> {
    let mut cpus = 0u32;
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut socket: Option<String> = None;
    let mut core: Option<String> = None;
    let mut flush = |socket: &mut Option<String>, core: &mut Option<String>| {
        if let (Some(s), Some(c)) = (socket.take(), core.take()) {
            sockets.insert(s.clone());
            cores.insert((s, c));
        }
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => {
                flush(&mut socket, &mut core);
                cpus += 1;
            }
            "physical id" => socket = Some(value.trim().to_string()),
            "core id" => core = Some(value.trim().to_string()),
            _ => {}
        }
    }
    flush(&mut socket, &mut core);
    if cpus == 0 {
        return None;
    }
    let n_sockets = sockets.len() as u32;
    let n_cores = cores.len() as u32;
    if n_sockets == 0 || n_cores == 0 || cpus % n_cores != 0 || n_cores % n_sockets != 0 {
        return Some(CpuTopology::flat(cpus));
    }
    Some(CpuTopology {
        cpus,
        sockets: n_sockets,
        cores_per_socket: n_cores / n_sockets,
        threads_per_core: cpus / n_cores,
    })
}

/// Memory from `/proc/meminfo`, in MB (Slurm's RealMemory unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// `MemTotal`.
    pub total_mb: u64,
    /// `MemAvailable` (or `MemFree` on old kernels).
    pub free_mb: u64,
}

/// Parses `/proc/meminfo` (values in kB).
pub fn parse_meminfo(text: &str) -> Option<Memory> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let (key, rest) = line.split_once(':')?;
            if key.trim() != name {
                return None;
            }
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    let total = field("MemTotal")?;
    let free = field("MemAvailable")
        .or_else(|| field("MemFree"))
        .unwrap_or(0);
    Some(Memory {
        total_mb: total / 1024,
        free_mb: free / 1024,
    })
}

/// The one-minute load average from `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The boot time (`btime`, seconds since the epoch) from `/proc/stat`.
pub fn parse_btime(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime")?.trim().parse().ok())
}

/// What the node reports about itself at registration.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// CPU layout.
    pub topology: CpuTopology,
    /// Memory.
    pub memory: Memory,
    /// One-minute load average.
    pub load: f64,
    /// `uname -s -r -v`.
    pub os: String,
    /// `uname -m`.
    pub arch: String,
    /// Boot time, seconds since the epoch (0 when unknown).
    pub boot_time: i64,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Reads the real machine. Anything unreadable gets a safe fallback so a
/// daemon in an odd container still starts.
pub fn probe() -> Probe {
    let topology = read("/proc/cpuinfo")
        .and_then(|t| parse_cpuinfo(&t))
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            CpuTopology::flat(n)
        });
    let memory = read("/proc/meminfo")
        .and_then(|t| parse_meminfo(&t))
        .unwrap_or(Memory {
            total_mb: 1,
            free_mb: 0,
        });
    let (os, arch) = uname();
    Probe {
        topology,
        memory,
        load: load_average(),
        os,
        arch,
        boot_time: read("/proc/stat")
            .and_then(|t| parse_btime(&t))
            .unwrap_or(0),
    }
}

/// Where a virtual host's boot id comes from: the test harness starts a
/// node daemon again with a new one to play a host that rebooted.
pub const BOOT_ID_ENV: &str = "MUSTER_BOOT_ID";

/// The host's boot id: `MUSTER_BOOT_ID` when set (a virtual node), else
/// the kernel's `/proc/sys/kernel/random/boot_id`, new at every boot
/// (empty when unreadable). The controller sees a reboot it issued done
/// when the node registers with another one.
pub fn boot_id() -> String {
    match std::env::var(BOOT_ID_ENV) {
        Ok(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => read("/proc/sys/kernel/random/boot_id")
            .map(|t| t.trim().to_string())
            .unwrap_or_default(),
    }
}

/// The current one-minute load average (0 when unknown).
pub fn load_average() -> f64 {
    read("/proc/loadavg")
        .and_then(|t| parse_loadavg(&t))
        .unwrap_or(0.0)
}

/// Free memory now, in MB.
pub fn free_memory_mb() -> u64 {
    read("/proc/meminfo")
        .and_then(|t| parse_meminfo(&t))
        .map_or(0, |m| m.free_mb)
}

/// (`uname -s -r -v`, `uname -m`).
fn uname() -> (String, String) {
    // SAFETY: utsname is plain old data; uname fills it with NUL-terminated
    // strings or fails, in which case the zeroed fields read as empty.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::uname(&mut u) } == 0;
    if !ok {
        return (
            std::env::consts::OS.to_string(),
            std::env::consts::ARCH.to_string(),
        );
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let os = format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.version)
    );
    (os, field(&u.machine))
}

#[cfg(test)]
mod tests;
