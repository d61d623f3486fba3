//! GPU quarantine (beyond Slurm, docs/admin-hooks.md "GPU Xid
//! quarantine"): the NVIDIA driver reports GPU faults as Xid errors in the
//! kernel log, one line each:
//!
//! ```text
//! NVRM: Xid (PCI:0000:3b:00): 79, pid=2281, name=python3, GPU has fallen off the bus.
//! ```
//!
//! (`/dev/kmsg` prefixes its records with `priority,sequence,usecs,flags;`,
//! `dmesg` with `[   12.345678] `; older drivers write `(0000:3b:00)`
//! without `PCI:`.) This module is the pure part: reading such a line
//! ([`parse_line`]), which Xids are fatal ([`XidSettings`]), and which of
//! the node's GPUs a PCI bus id is ([`gpu_of_pci`]). The daemon's watcher
//! (`daemon::xid`) follows the log and reports fatal ones to the
//! controller, which drains the node `GPU Xid N` and requeues the job on
//! that GPU away from it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The Xids that quarantine a node unless `xid_fatal=` says otherwise:
/// those after which NVIDIA's Xid catalog says the GPU needs a reset, a
/// reboot or a field engineer, and whose job has lost its state:
/// 48 (double-bit ECC error), 62 (internal micro-controller halt),
/// 64 (ECC page retirement or row remapping failure), 74 (NVLink error),
/// 79 (fallen off the bus), 95 (uncontained ECC error), 119 and 120 (GSP
/// RPC timeout, GSP error). Left out on purpose: 63 (a page retirement or
/// row remap was recorded: reset when convenient), 92 (high single-bit
/// ECC rate: corrected) and 94 (contained ECC error: only the process that
/// touched the memory is hit, the GPU serves on), and application faults
/// (13, 31, 43, 45).
pub const DEFAULT_FATAL: &[u32] = &[48, 62, 64, 74, 79, 95, 119, 120];

/// The kernel log the watcher follows unless `xid_source=` names another.
pub const KMSG: &str = "/dev/kmsg";

/// Where the driver describes each GPU (`<pci bus id>/information`, with
/// its `Device Minor:`).
pub const NVIDIA_PROC: &str = "/proc/driver/nvidia/gpus";

/// One Xid line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XidEvent {
    /// The PCI bus id as written, without `PCI:` (`0000:3b:00`).
    pub pci: String,
    /// The Xid.
    pub xid: u32,
}

/// The Xid a kernel log line reports, if it is an NVIDIA Xid line.
pub fn parse_line(line: &str) -> Option<XidEvent> {
    let rest = &line[line.find("NVRM: Xid (")? + "NVRM: Xid (".len()..];
    let (pci, rest) = rest.split_once(')')?;
    let pci = pci.trim();
    let pci = pci.strip_prefix("PCI:").unwrap_or(pci).trim();
    if pci.is_empty()
        || !pci
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
    {
        return None;
    }
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let xid = digits.parse().ok()?;
    Some(XidEvent {
        pci: pci.to_string(),
        xid,
    })
}

/// What the watcher follows and which Xids quarantine the node, from
/// muster's `HealthCheckParameters` words `xid_source=` and `xid_fatal=`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XidSettings {
    /// The file to follow (`%n`: the node's name); None: no watcher.
    pub source: Option<PathBuf>,
    /// The fatal Xids.
    pub fatal: BTreeSet<u32>,
}

impl XidSettings {
    /// From `HealthCheckParameters`' value (None: not set) for node
    /// `node`; `has_gpus`: whether the node has GPUs (without them and
    /// without `xid_source=`, nothing is watched). Returns the settings
    /// and the words it could not read.
    pub fn from_parameters(
        value: Option<&str>,
        node: &str,
        has_gpus: bool,
    ) -> (XidSettings, Vec<String>) {
        let mut source = has_gpus.then(|| PathBuf::from(KMSG));
        let mut fatal: BTreeSet<u32> = DEFAULT_FATAL.iter().copied().collect();
        let mut bad = Vec::new();
        for word in value.unwrap_or("").split(',').map(str::trim) {
            let Some((key, v)) = word.split_once('=') else {
                continue;
            };
            match key.trim().to_ascii_lowercase().as_str() {
                "xid_source" => {
                    let v = v.trim();
                    source = if v.is_empty() || v.eq_ignore_ascii_case("none") {
                        None
                    } else {
                        Some(PathBuf::from(v.replace("%n", node)))
                    };
                }
                "xid_fatal" => {
                    let parsed: Result<BTreeSet<u32>, _> = v
                        .split(':')
                        .map(str::trim)
                        .filter(|x| !x.is_empty())
                        .map(str::parse::<u32>)
                        .collect();
                    match parsed {
                        Ok(set) => fatal = set,
                        Err(_) => bad.push(word.to_string()),
                    }
                }
                _ => {}
            }
        }
        (XidSettings { source, fatal }, bad)
    }

    /// Whether `event` quarantines the node.
    pub fn is_fatal(&self, event: &XidEvent) -> bool {
        self.fatal.contains(&event.xid)
    }
}

/// The node's GPU index (gres.conf's numbering: `gpu_files` in order) of
/// the GPU at PCI bus id `pci`, as the driver's `proc_dir`
/// (`/proc/driver/nvidia/gpus`) tells: its `<bus id>/information` names
/// the device minor N of `/dev/nvidiaN`. None where any link is missing
/// (no driver, a fake GPU, a file that is not `nvidiaN`).
pub fn gpu_of_pci(proc_dir: &Path, pci: &str, gpu_files: &[String]) -> Option<u32> {
    let want = normalize_pci(pci);
    let entry = std::fs::read_dir(proc_dir).ok()?.flatten().find(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| normalize_pci(n) == want)
    })?;
    let info = std::fs::read_to_string(entry.path().join("information")).ok()?;
    let minor: u32 = info.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "Device Minor").then(|| v.trim().parse().ok())?
    })?;
    let name = format!("nvidia{minor}");
    gpu_files
        .iter()
        .position(|f| Path::new(f).file_name().and_then(|n| n.to_str()) == Some(name.as_str()))
        .and_then(|i| u32::try_from(i).ok())
}

/// A PCI bus id in one spelling: lowercase, with its domain (`0000:`),
/// without the function (`.0`): the driver's log writes `0000:3b:00`, its
/// proc directory `0000:3b:00.0`.
fn normalize_pci(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    let id = id.split('.').next().unwrap_or("").to_string();
    if id.matches(':').count() == 1 {
        format!("0000:{id}")
    } else {
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pci: &str, xid: u32) -> Option<XidEvent> {
        Some(XidEvent {
            pci: pci.into(),
            xid,
        })
    }

    #[test]
    fn xid_lines_as_the_driver_writes_them() {
        // /dev/kmsg records.
        assert_eq!(
            parse_line(
                "4,1832,5638102719,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=2281, \
                 name=python3, GPU has fallen off the bus."
            ),
            ev("0000:3b:00", 79)
        );
        assert_eq!(
            parse_line(
                "3,990,811223344,-;NVRM: Xid (PCI:0000:b1:00): 48, pid='<unknown>', \
                 name=<unknown>, An uncorrectable double bit error (DBE) has been \
                 detected on GPU in the framebuffer at partition 6, subpartition 0."
            ),
            ev("0000:b1:00", 48)
        );
        // dmesg's and syslog's forms.
        assert_eq!(
            parse_line(
                "[1234567.890123] NVRM: Xid (PCI:0000:18:00): 119, pid=91, name=nvidia-smi, \
                 Timeout after 6s of waiting for RPC response from GPU0 GSP!"
            ),
            ev("0000:18:00", 119)
        );
        assert_eq!(
            parse_line(
                "Dec  7 02:10:11 gpu03 kernel: NVRM: Xid (PCI:0000:86:00): 74, \
                 pid=4411, name=torchrun, NVLink: fatal error detected on link 3"
            ),
            ev("0000:86:00", 74)
        );
        // Older drivers: no `PCI:`.
        assert_eq!(
            parse_line("NVRM: Xid (0000:02:00): 13, Graphics Exception"),
            ev("0000:02:00", 13)
        );
        // Not Xid lines.
        assert_eq!(
            parse_line("6,1,2,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module"),
            None
        );
        assert_eq!(parse_line("NVRM: Xid (PCI:0000:3b:00): , pid=1"), None);
        assert_eq!(parse_line("NVRM: Xid (rm -rf): 79"), None);
        assert_eq!(parse_line(""), None);
    }

    #[test]
    fn only_fatal_xids_quarantine() {
        let (s, bad) = XidSettings::from_parameters(None, "n1", true);
        assert!(bad.is_empty());
        assert_eq!(s.source, Some(PathBuf::from(KMSG)));
        let fatal = |line: &str| parse_line(line).is_some_and(|e| s.is_fatal(&e));
        assert!(fatal(
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
        ));
        assert!(fatal("NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE"));
        assert!(fatal("NVRM: Xid (PCI:0000:3b:00): 95, pid=1, Uncontained"));
        // Application faults and corrected or contained errors are not.
        assert!(!fatal(
            "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception"
        ));
        assert!(!fatal("NVRM: Xid (PCI:0000:3b:00): 31, pid=1, MMU Fault"));
        assert!(!fatal("NVRM: Xid (PCI:0000:3b:00): 43, pid=1, Ch 00000010"));
        assert!(!fatal(
            "NVRM: Xid (PCI:0000:3b:00): 94, pid=1, Contained ECC error"
        ));
        assert!(!fatal(
            "NVRM: Xid (PCI:0000:3b:00): 92, pid=1, High single-bit ECC"
        ));
    }

    #[test]
    fn parameters_name_the_source_and_the_fatal_set() {
        let (s, bad) = XidSettings::from_parameters(
            Some("drain_on_failure,xid_source=/var/log/x-%n.log,xid_fatal=13:79"),
            "gpu7",
            false,
        );
        assert!(bad.is_empty());
        assert_eq!(s.source, Some(PathBuf::from("/var/log/x-gpu7.log")));
        assert_eq!(s.fatal, [13, 79].into_iter().collect());
        // No GPUs and no source: nothing watched; `none` turns it off.
        assert_eq!(
            XidSettings::from_parameters(None, "n", false).0.source,
            None
        );
        let (s, _) = XidSettings::from_parameters(Some("xid_source=none"), "n", true);
        assert_eq!(s.source, None);
        let (s, bad) = XidSettings::from_parameters(Some("xid_fatal=79:x"), "n", true);
        assert_eq!(bad, ["xid_fatal=79:x"]);
        assert_eq!(s.fatal, DEFAULT_FATAL.iter().copied().collect());
    }

    #[test]
    fn a_pci_bus_id_maps_to_the_gpu_of_its_device_file() {
        let dir = tempfile::tempdir().unwrap();
        for (bus, minor) in [("0000:3b:00.0", 1), ("0000:86:00.0", 0)] {
            let d = dir.path().join(bus);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(
                d.join("information"),
                format!(
                    "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\nDevice Minor: \t {minor}\n"
                ),
            )
            .unwrap();
        }
        let files = ["/dev/nvidia0".to_string(), "/dev/nvidia1".to_string()];
        assert_eq!(gpu_of_pci(dir.path(), "0000:3b:00", &files), Some(1));
        assert_eq!(gpu_of_pci(dir.path(), "86:00", &files), Some(0));
        assert_eq!(gpu_of_pci(dir.path(), "0000:99:00", &files), None);
        assert_eq!(
            gpu_of_pci(Path::new("/nonexistent"), "0000:3b:00", &files),
            None
        );
    }
}
