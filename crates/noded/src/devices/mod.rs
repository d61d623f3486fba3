//! Device confinement (cgroup.conf `ConstrainDevices=yes`): a job, a step
//! or a task may open only the GRES device files it was given.
//!
//! The building blocks, for the cgroup layer (`cgroup`) to call with the
//! cgroup directories it made; this module makes no directory and knows no
//! layout:
//!
//! ```text
//!   gres.conf File=/dev/nvidia[0-3]
//!      | Device::from_path (stat(2): st_rdev, char or block)
//!      v
//!   node's devices + the level's allocated ones
//!      |                                   |
//!      | cgroup v1                         | cgroup v2
//!      v                                   v
//!   v1::lines (pure)                     Filter::deny_unallocated (pure)
//!      | "c 195:1 rwm" -> devices.deny      | bpf::assemble (pure): eBPF insns
//!      | "c 195:0 rwm" -> devices.allow     v
//!      v                                 load::Program::load (bpf(2) BPF_PROG_LOAD)
//!   v1::write(dir, &lines)                  | .attach(dir, level.attach_mode())
//!                                           v   (BPF_PROG_ATTACH, BPF_CGROUP_DEVICE)
//!                                        the kernel runs it at every open/mknod
//! ```
//!
//! `confine_v1` and `confine_v2` do each column in one call.
//!
//! # Levels (per job, per step, per task)
//!
//! As Slurm's task/cgroup does, each level gets the whole story for itself:
//! every device of the node's GRES that the level was *not* given is
//! denied, the ones it was given are allowed, and everything else (ttys,
//! /dev/null, devices that are no GRES) stays as it was (default allow).
//!
//! | level | v1 directory (each with devices.deny/allow)   | v2 directory (program)          | devices given     |
//! |-------|-----------------------------------------------|---------------------------------|-------------------|
//! | job   | `devices/slurm/uid_U/job_J`                   | `job_J`                         | the job's on node |
//! | step  | `devices/slurm/uid_U/job_J/step_S`            | `job_J/step_S/user`             | the step's        |
//! | task  | `devices/slurm/uid_U/job_J/step_S/task_T`     | `job_J/step_S/user/task_T`      | the task's (`--gpus-per-task`, `--gpu-bind`); skip the level when a task gets all the step's |
//!
//! On v1 a new cgroup starts with a copy of its parent's rules, and a child
//! can never allow what its parent denies; since a step's devices are a
//! subset of its job's, and a task's of its step's, writing the levels top
//! down always succeeds. On v2 every level's program is attached with
//! `BPF_F_ALLOW_OVERRIDE` (`Level::attach_mode`): the program of the
//! nearest level that has one is the one the kernel runs, so a step's
//! program replaces its job's for the step's processes, and attaching again
//! to the same directory replaces the program there (a daemon that
//! restarted can re-apply without detaching). A program stays attached as
//! long as the directory exists: the caller may drop the `Program` after
//! `attach`, and removing the cgroup directory frees it. `AttachMode::Multi`
//! (every program on the path must allow) is there for a delegated subtree
//! whose owner (systemd) attached its own with `BPF_F_ALLOW_MULTI`.
//!
//! Test trick (isolation notes §1.4e): a character device 195:N (NVIDIA's
//! major) without a driver opens with ENXIO where allowed and EPERM where
//! denied, so confinement is observable on any machine; `kernel_tests` does
//! it for both versions.
//!
//! Leaf: imports nothing from the rest of the node daemon.

pub mod bpf;
#[cfg(test)]
mod interp;
pub mod load;
pub mod v1;

use std::fmt;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

pub use bpf::{assemble, Insn};
pub use load::{AttachMode, Program};

/// Whether a device file is a character or a block device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceKind {
    /// A block device (`b` in devices.allow; BPF_DEVCG_DEV_BLOCK).
    Block,
    /// A character device (`c`; BPF_DEVCG_DEV_CHAR). GPUs are these.
    Char,
}

impl DeviceKind {
    /// The letter of cgroup v1's devices files.
    pub fn v1_letter(self) -> char {
        match self {
            DeviceKind::Block => 'b',
            DeviceKind::Char => 'c',
        }
    }

    /// The type number in the low 16 bits of `bpf_cgroup_dev_ctx.access_type`.
    pub fn bpf_type(self) -> u32 {
        match self {
            DeviceKind::Block => bpf::DEVCG_DEV_BLOCK,
            DeviceKind::Char => bpf::DEVCG_DEV_CHAR,
        }
    }
}

/// A device by number, as the kernel's device checks see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Device {
    /// Character or block.
    pub kind: DeviceKind,
    /// Major number (driver).
    pub major: u32,
    /// Minor number (unit).
    pub minor: u32,
}

impl Device {
    /// A character device.
    pub fn char(major: u32, minor: u32) -> Device {
        Device {
            kind: DeviceKind::Char,
            major,
            minor,
        }
    }

    /// The device a device file (a GRES `File=` entry) stands for, by
    /// stat(2), which follows symbolic links (`/dev/dri/by-path/...`).
    /// Anything but a character or block device is an error.
    pub fn from_path(path: &Path) -> Result<Device, DeviceError> {
        let meta = std::fs::metadata(path).map_err(|source| DeviceError::Stat {
            path: path.to_path_buf(),
            source,
        })?;
        let kind = if meta.file_type().is_char_device() {
            DeviceKind::Char
        } else if meta.file_type().is_block_device() {
            DeviceKind::Block
        } else {
            return Err(DeviceError::NotADevice {
                path: path.to_path_buf(),
            });
        };
        let rdev: libc::dev_t = meta.rdev();
        Ok(Device {
            kind,
            major: libc::major(rdev),
            minor: libc::minor(rdev),
        })
    }

    /// The cgroup v1 rule for this device, e.g. `c 195:0 rwm`.
    pub fn v1_rule(&self, access: Access) -> String {
        format!(
            "{} {}:{} {}",
            self.kind.v1_letter(),
            self.major,
            self.minor,
            access
        )
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}:{}", self.kind.v1_letter(), self.major, self.minor)
    }
}

/// Kinds of access to a device, the bits of the high 16 bits of
/// `bpf_cgroup_dev_ctx.access_type` (and v1's `r`, `w`, `m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Access(u8);

impl Access {
    /// Creating the device file (`m`; BPF_DEVCG_ACC_MKNOD).
    pub const MKNOD: Access = Access(1);
    /// Opening for reading (`r`; BPF_DEVCG_ACC_READ).
    pub const READ: Access = Access(2);
    /// Opening for writing (`w`; BPF_DEVCG_ACC_WRITE).
    pub const WRITE: Access = Access(4);
    /// All three (`rwm`), what Slurm allows or denies.
    pub const ALL: Access = Access(7);
    /// None.
    pub const NONE: Access = Access(0);

    /// The union.
    pub const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    /// The bits, as in `bpf_cgroup_dev_ctx.access_type >> 16`.
    pub const fn bits(self) -> u32 {
        self.0 as u32
    }

    /// From the kernel's bits (only the low three count).
    pub const fn from_bits(bits: u32) -> Access {
        Access((bits & 7) as u8)
    }

    /// Whether every kind in `other` is in `self`.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether `self` and `other` share a kind.
    pub const fn intersects(self, other: Access) -> bool {
        self.0 & other.0 != 0
    }
}

impl fmt::Display for Access {
    /// The v1 spelling, in the kernel's order: `rwm`, `r`, `wm`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (bit, letter) in [
            (Access::READ, 'r'),
            (Access::WRITE, 'w'),
            (Access::MKNOD, 'm'),
        ] {
            if self.contains(bit) {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// One rule of a device filter: which devices (a `None` matches any) and
/// which access, allowed or denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Character or block; `None`: both (v1's `a`).
    pub kind: Option<DeviceKind>,
    /// Major number; `None`: any (`*`).
    pub major: Option<u32>,
    /// Minor number; `None`: any (`*`).
    pub minor: Option<u32>,
    /// The access the rule is about.
    pub access: Access,
    /// Whether a match allows (else denies).
    pub allow: bool,
}

impl Rule {
    /// A rule for exactly one device.
    pub fn device(dev: Device, access: Access, allow: bool) -> Rule {
        Rule {
            kind: Some(dev.kind),
            major: Some(dev.major),
            minor: Some(dev.minor),
            access,
            allow,
        }
    }

    /// Whether the rule decides a request, with the v1 kernel's meaning:
    /// an allow rule must cover every kind of access asked for (a rule
    /// allowing `r` does not decide an open for `rw`), a deny rule decides
    /// as soon as it covers one of them (a rule denying `w` denies `rw`).
    pub fn matches(&self, kind: DeviceKind, major: u32, minor: u32, access: Access) -> bool {
        any_or(self.kind, kind)
            && any_or(self.major, major)
            && any_or(self.minor, minor)
            && if self.allow {
                self.access.contains(access)
            } else {
                self.access.intersects(access)
            }
    }
}

/// Whether a rule's field (`None`: any) matches a request's value.
fn any_or<T: PartialEq>(rule: Option<T>, value: T) -> bool {
    match rule {
        None => true,
        Some(want) => want == value,
    }
}

/// A device filter: the first rule that matches decides, else the default.
/// What `bpf::assemble` turns into a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// In order; the first match decides.
    pub rules: Vec<Rule>,
    /// The verdict when no rule matches.
    pub default_allow: bool,
}

impl Filter {
    /// Slurm's filter for one level: default allow, every device of the
    /// node's GRES that is not in `allocated` denied for all access.
    /// Duplicates are dropped and the order is the devices' order, so the
    /// same sets give the same program.
    pub fn deny_unallocated(node_devices: &[Device], allocated: &[Device]) -> Filter {
        let rules = unallocated(node_devices, allocated)
            .into_iter()
            .map(|dev| Rule::device(dev, Access::ALL, false))
            .collect();
        Filter {
            rules,
            default_allow: true,
        }
    }

    /// The whitelist form: only what `rules` allow, everything else denied
    /// (what container runtimes do; v1's `a` in devices.deny first).
    pub fn allow_only(rules: Vec<Rule>) -> Filter {
        Filter {
            rules,
            default_allow: false,
        }
    }

    /// The verdict for one request, computed directly: the meaning the
    /// assembled program must have (the tests hold the two together).
    pub fn allows(&self, kind: DeviceKind, major: u32, minor: u32, access: Access) -> bool {
        self.rules
            .iter()
            .find(|r| r.matches(kind, major, minor, access))
            .map_or(self.default_allow, |r| r.allow)
    }
}

/// The node's devices that are not in `allocated`, sorted, without
/// duplicates.
pub fn unallocated(node_devices: &[Device], allocated: &[Device]) -> Vec<Device> {
    let given: std::collections::BTreeSet<Device> = allocated.iter().copied().collect();
    let rest: std::collections::BTreeSet<Device> = node_devices
        .iter()
        .copied()
        .filter(|d| !given.contains(d))
        .collect();
    rest.into_iter().collect()
}

/// A cgroup level, for the attach mode of its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `job_J`.
    Job,
    /// The step's processes (`job_J/step_S/user` on v2).
    Step,
    /// One task (`.../task_T`).
    Task,
}

impl Level {
    /// How this level's program is attached: `Override`, as Slurm does for
    /// the levels that have levels below them (see the module doc); the
    /// task level too, where it changes nothing for the task's processes
    /// and lets a second attach replace the program in place (the kernel
    /// replaces only with the same flags).
    pub fn attach_mode(self) -> AttachMode {
        match self {
            Level::Job | Level::Step | Level::Task => AttachMode::Override,
        }
    }
}

/// Confines a cgroup v1 directory (of the `devices` controller): denies
/// the node's devices not in `allocated`, allows the ones in it.
pub fn confine_v1(
    cgroup_dir: &Path,
    node_devices: &[Device],
    allocated: &[Device],
) -> Result<(), DeviceError> {
    v1::write(cgroup_dir, &v1::lines(node_devices, allocated))
}

/// Confines a cgroup v2 directory: loads Slurm's filter for the level
/// (`Filter::deny_unallocated`) and attaches it. The program stays
/// attached after this returns, until the directory is removed or another
/// program replaces it.
pub fn confine_v2(
    cgroup_dir: &Path,
    level: Level,
    node_devices: &[Device],
    allocated: &[Device],
) -> Result<(), DeviceError> {
    let insns = assemble(&Filter::deny_unallocated(node_devices, allocated))?;
    let prog = Program::load(&insns)?;
    prog.attach(cgroup_dir, level.attach_mode())
}

/// Why a device could not be confined.
#[derive(Debug)]
pub enum DeviceError {
    /// A GRES `File=` path could not be stat'ed.
    Stat { path: PathBuf, source: io::Error },
    /// A GRES `File=` path is no character or block device.
    NotADevice { path: PathBuf },
    /// A v1 devices file refused a rule.
    WriteRule {
        path: PathBuf,
        rule: String,
        source: io::Error,
    },
    /// A filter cannot be expressed as a program (see the message).
    Assemble { reason: String },
    /// The kernel refused the program; `log` is the verifier's.
    Load { source: io::Error, log: String },
    /// BPF_OBJ_GET_INFO_BY_FD on a loaded program failed.
    ProgInfo { source: io::Error },
    /// A cgroup directory could not be opened.
    OpenCgroup { path: PathBuf, source: io::Error },
    /// BPF_PROG_ATTACH, BPF_PROG_DETACH or BPF_PROG_QUERY failed.
    Bpf {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Stat { path, source } => {
                write!(f, "device file {}: {source}", path.display())
            }
            DeviceError::NotADevice { path } => write!(
                f,
                "{}: not a character or block device (check File= in gres.conf)",
                path.display()
            ),
            DeviceError::WriteRule { path, rule, source } => {
                write!(f, "writing \"{rule}\" to {}: {source}", path.display())
            }
            DeviceError::Assemble { reason } => write!(f, "device filter: {reason}"),
            DeviceError::Load { source, log } => {
                write!(f, "loading the device filter program: {source}")?;
                if !log.is_empty() {
                    write!(f, "; verifier: {}", log.trim_end())?;
                }
                Ok(())
            }
            DeviceError::ProgInfo { source } => {
                write!(f, "reading the device filter program's id: {source}")
            }
            DeviceError::OpenCgroup { path, source } => {
                write!(f, "opening cgroup {}: {source}", path.display())
            }
            DeviceError::Bpf { what, path, source } => {
                write!(f, "{what} on cgroup {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for DeviceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeviceError::Stat { source, .. }
            | DeviceError::WriteRule { source, .. }
            | DeviceError::Load { source, .. }
            | DeviceError::ProgInfo { source }
            | DeviceError::OpenCgroup { source, .. }
            | DeviceError::Bpf { source, .. } => Some(source),
            DeviceError::NotADevice { .. } | DeviceError::Assemble { .. } => None,
        }
    }
}

#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod tests;
