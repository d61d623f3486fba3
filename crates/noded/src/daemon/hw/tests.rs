use super::*;

fn cpu(n: u32, phys: u32, core: u32) -> String {
    format!(
        "processor\t: {n}\nvendor_id\t: GenuineIntel\nphysical id\t: {phys}\nsiblings\t: 4\ncore id\t\t: {core}\ncpu cores\t: 2\nflags\t\t: fpu vme\n\n"
    )
}

#[test]
fn cpuinfo_two_sockets_two_cores_two_threads() {
    let mut text = String::new();
    let mut n = 0;
    for thread in 0..2 {
        for phys in 0..2 {
            for core in 0..2 {
                let _ = thread;
                text.push_str(&cpu(n, phys, core));
                n += 1;
            }
        }
    }
    assert_eq!(
        parse_cpuinfo(&text),
        Some(CpuTopology {
            cpus: 8,
            sockets: 2,
            cores_per_socket: 2,
            threads_per_core: 2
        })
    );
}

#[test]
fn cpuinfo_without_topology_is_flat() {
    let text = "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n\n";
    assert_eq!(parse_cpuinfo(text), Some(CpuTopology::flat(2)));
    assert_eq!(parse_cpuinfo(""), None);
    assert_eq!(parse_cpuinfo("garbage\n:::\n"), None);
}

#[test]
fn meminfo_in_megabytes() {
    let text =
        "MemTotal:       16315588 kB\nMemFree:          812345 kB\nMemAvailable:    9437184 kB\n";
    assert_eq!(
        parse_meminfo(text),
        Some(Memory {
            total_mb: 15933,
            free_mb: 9216
        })
    );
    let old = "MemTotal: 2048 kB\nMemFree: 1024 kB\n";
    assert_eq!(
        parse_meminfo(old),
        Some(Memory {
            total_mb: 2,
            free_mb: 1
        })
    );
    assert_eq!(parse_meminfo("nonsense"), None);
}

#[test]
fn loadavg_and_btime() {
    assert_eq!(parse_loadavg("0.52 0.58 0.59 1/1234 5678\n"), Some(0.52));
    assert_eq!(parse_loadavg(""), None);
    let stat = "cpu  1 2 3 4\nintr 5\nctxt 6\nbtime 1700000000\nprocesses 7\n";
    assert_eq!(parse_btime(stat), Some(1_700_000_000));
    assert_eq!(parse_btime("cpu 1\n"), None);
}

#[test]
fn probe_reads_this_machine() {
    let p = probe();
    assert!(p.topology.cpus >= 1);
    assert_eq!(
        p.topology.sockets * p.topology.cores_per_socket * p.topology.threads_per_core,
        p.topology.cpus
    );
    assert!(p.memory.total_mb >= 1);
    assert!(!p.arch.is_empty());
}
