//! Loading a device filter program into the kernel and attaching it to a
//! cgroup v2 directory, with the raw bpf(2) system call.
//!
//! ```text
//!   Program::load   BPF_PROG_LOAD   type BPF_PROG_TYPE_CGROUP_DEVICE -> program fd
//!   .attach(dir)    BPF_PROG_ATTACH target: the directory's fd, BPF_CGROUP_DEVICE,
//!                                   BPF_F_ALLOW_OVERRIDE or BPF_F_ALLOW_MULTI
//!   .detach(dir)    BPF_PROG_DETACH the same, by program fd
//!   attached(dir)   BPF_PROG_QUERY  the ids and flags of what is attached there
//! ```
//!
//! License string: the kernel reads it only to decide whether the program
//! may call GPL-only helpers and kfuncs (it sets `gpl_compatible`); a
//! device filter calls no helper at all, so the kernel loads it under any
//! string. We give the license the program's instructions are under, the
//! project's ("Apache-2.0"); `kernel_tests` loads it on a real kernel.
//!
//! Kernels before 5.11 charge BPF programs to RLIMIT_MEMLOCK and answer
//! EPERM when it is too low: on EPERM the loader raises the limit (as crun
//! does) and tries once more. When the verifier refuses a program, the
//! load is repeated with a log buffer, and the error carries the log.
//!
//! The program fd is closed on drop; an attached program stays attached
//! (the cgroup holds it) until it is detached, replaced or its directory
//! is removed.

use super::bpf::Insn;
use super::DeviceError;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

// bpf(2) commands.
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_PROG_ATTACH: libc::c_int = 8;
const BPF_PROG_DETACH: libc::c_int = 9;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;
const BPF_PROG_QUERY: libc::c_int = 16;
const BPF_PROG_GET_FD_BY_ID: libc::c_int = 13;

/// `BPF_PROG_TYPE_CGROUP_DEVICE` in `enum bpf_prog_type`.
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
/// `BPF_CGROUP_DEVICE` in `enum bpf_attach_type`.
const BPF_CGROUP_DEVICE: u32 = 6;
/// Attach flags.
const BPF_F_ALLOW_OVERRIDE: u32 = 1;
const BPF_F_ALLOW_MULTI: u32 = 2;

/// The license string the program is loaded under (see the module doc).
const LICENSE: &[u8] = b"Apache-2.0\0";
/// The program's name, as bpftool shows it (at most 15 bytes).
const PROG_NAME: &[u8] = b"muster_devices";
/// The verifier log buffer for a refused program.
const LOG_SIZE: usize = 64 * 1024;

/// The `BPF_PROG_LOAD` part of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// The `BPF_PROG_ATTACH` / `BPF_PROG_DETACH` part.
#[repr(C)]
#[derive(Default)]
struct AttachAttr {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

/// The `BPF_PROG_QUERY` part.
#[repr(C)]
#[derive(Default)]
struct QueryAttr {
    target_fd: u32,
    attach_type: u32,
    query_flags: u32,
    attach_flags: u32,
    prog_ids: u64,
    prog_cnt: u32,
    _pad: u32,
}

/// The `BPF_PROG_GET_FD_BY_ID` part.
#[repr(C)]
#[derive(Default)]
struct GetFdAttr {
    prog_id: u32,
    next_id: u32,
    open_flags: u32,
}

/// The `BPF_OBJ_GET_INFO_BY_FD` part.
#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// bpf(2) with one of the attr structs above.
fn sys_bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live #[repr(C)] prefix of `union bpf_attr` for
    // `cmd`, and the size passed is its size; the kernel zero-fills the rest
    // and writes back only within it. Pointers inside it point at buffers
    // the caller keeps alive for the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// How a program is attached to a cgroup, i.e. what happens with programs
/// on the cgroups above and below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachMode {
    /// `BPF_F_ALLOW_OVERRIDE`: the nearest program up the tree is the one
    /// that runs; a cgroup below may attach its own, which then replaces
    /// this one for its processes. Attaching again replaces the program.
    Override,
    /// `BPF_F_ALLOW_MULTI`: this program and every program attached with
    /// this flag above run, and all must allow.
    Multi,
}

impl AttachMode {
    fn flags(self) -> u32 {
        match self {
            AttachMode::Override => BPF_F_ALLOW_OVERRIDE,
            AttachMode::Multi => BPF_F_ALLOW_MULTI,
        }
    }
}

/// A loaded device filter program (its fd).
#[derive(Debug)]
pub struct Program {
    fd: OwnedFd,
}

impl Program {
    /// Loads `insns` as a `BPF_PROG_TYPE_CGROUP_DEVICE` program.
    pub fn load(insns: &[Insn]) -> Result<Program, DeviceError> {
        match load_once(insns, None) {
            Ok(fd) => Ok(Program { fd }),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) && raise_memlock_limit() => {
                load_once(insns, None)
                    .map(|fd| Program { fd })
                    .map_err(|source| DeviceError::Load {
                        source,
                        log: String::new(),
                    })
            }
            Err(source) if source.raw_os_error() == Some(libc::EPERM) => Err(DeviceError::Load {
                source,
                log: String::new(),
            }),
            Err(source) => {
                // Again, for the verifier's reasons.
                let mut log = vec![0u8; LOG_SIZE];
                let _ = load_once(insns, Some(&mut log));
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                Err(DeviceError::Load {
                    source,
                    log: String::from_utf8_lossy(&log[..end]).into_owned(),
                })
            }
        }
    }

    /// The kernel's id of the program (what `attached` lists, and bpftool).
    pub fn id(&self) -> Result<u32, DeviceError> {
        // The first two fields of `struct bpf_prog_info`: type, id.
        let mut info = [0u32; 2];
        let mut attr = InfoAttr {
            bpf_fd: self.fd.as_raw_fd() as u32,
            info_len: std::mem::size_of_val(&info) as u32,
            info: info.as_mut_ptr() as u64,
        };
        sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr)
            .map_err(|source| DeviceError::ProgInfo { source })?;
        Ok(info[1])
    }

    /// Attaches the program to the cgroup v2 directory `cgroup_dir`. With
    /// `Override` it replaces what was attached there before.
    pub fn attach(&self, cgroup_dir: &Path, mode: AttachMode) -> Result<(), DeviceError> {
        let dir = open_cgroup(cgroup_dir)?;
        let mut attr = AttachAttr {
            target_fd: dir.as_raw_fd() as u32,
            attach_bpf_fd: self.fd.as_raw_fd() as u32,
            attach_type: BPF_CGROUP_DEVICE,
            attach_flags: mode.flags(),
            ..AttachAttr::default()
        };
        sys_bpf(BPF_PROG_ATTACH, &mut attr).map_err(|source| DeviceError::Bpf {
            what: "BPF_PROG_ATTACH",
            path: cgroup_dir.to_path_buf(),
            source,
        })?;
        Ok(())
    }

    /// Detaches the program from `cgroup_dir` (ENOENT when it is not
    /// attached there).
    pub fn detach(&self, cgroup_dir: &Path) -> Result<(), DeviceError> {
        let dir = open_cgroup(cgroup_dir)?;
        let mut attr = AttachAttr {
            target_fd: dir.as_raw_fd() as u32,
            attach_bpf_fd: self.fd.as_raw_fd() as u32,
            attach_type: BPF_CGROUP_DEVICE,
            ..AttachAttr::default()
        };
        sys_bpf(BPF_PROG_DETACH, &mut attr).map_err(|source| DeviceError::Bpf {
            what: "BPF_PROG_DETACH",
            path: cgroup_dir.to_path_buf(),
            source,
        })?;
        Ok(())
    }
}

/// What is attached to a cgroup directory for device checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    /// The mode of the attachments (none when `ids` is empty).
    pub mode: Option<AttachMode>,
    /// The programs' ids, in the order they run.
    pub ids: Vec<u32>,
}

/// The device programs attached to `cgroup_dir` itself (not those it
/// inherits).
pub fn attached(cgroup_dir: &Path) -> Result<Attached, DeviceError> {
    let dir = open_cgroup(cgroup_dir)?;
    let mut ids = vec![0u32; 64];
    let mut attr = QueryAttr {
        target_fd: dir.as_raw_fd() as u32,
        attach_type: BPF_CGROUP_DEVICE,
        prog_ids: ids.as_mut_ptr() as u64,
        prog_cnt: ids.len() as u32,
        ..QueryAttr::default()
    };
    sys_bpf(BPF_PROG_QUERY, &mut attr).map_err(|source| DeviceError::Bpf {
        what: "BPF_PROG_QUERY",
        path: cgroup_dir.to_path_buf(),
        source,
    })?;
    ids.truncate(attr.prog_cnt as usize);
    let mode = if ids.is_empty() {
        None
    } else if attr.attach_flags & BPF_F_ALLOW_MULTI != 0 {
        Some(AttachMode::Multi)
    } else {
        Some(AttachMode::Override)
    };
    Ok(Attached { mode, ids })
}

/// Whether the kernel still holds the program `id` (an id from
/// [`attached`]): a program goes once nothing holds it, neither a cgroup
/// it is attached to nor a descriptor. For tests that nothing outlives a
/// job (root only; false also where the kernel refuses to say).
pub fn is_loaded(id: u32) -> bool {
    let mut attr = GetFdAttr {
        prog_id: id,
        ..GetFdAttr::default()
    };
    match sys_bpf(BPF_PROG_GET_FD_BY_ID, &mut attr) {
        Ok(fd) => {
            // SAFETY: a new descriptor that nothing else owns.
            drop(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
            true
        }
        Err(_) => false,
    }
}

/// One BPF_PROG_LOAD, with the verifier's log in `log` when given.
fn load_once(insns: &[Insn], log: Option<&mut Vec<u8>>) -> io::Result<OwnedFd> {
    let mut name = [0u8; 16];
    name[..PROG_NAME.len()].copy_from_slice(PROG_NAME);
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_CGROUP_DEVICE,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: LICENSE.as_ptr() as u64,
        prog_name: name,
        ..ProgLoadAttr::default()
    };
    if let Some(log) = log {
        attr.log_level = 1;
        attr.log_size = log.len() as u32;
        attr.log_buf = log.as_mut_ptr() as u64;
    }
    let fd = sys_bpf(BPF_PROG_LOAD, &mut attr)?;
    // SAFETY: a successful BPF_PROG_LOAD returns a new fd (close-on-exec)
    // that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Raises RLIMIT_MEMLOCK's soft limit to the hard one (for kernels before
/// 5.11); whether it rose.
fn raise_memlock_limit() -> bool {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) != 0 || lim.rlim_cur == lim.rlim_max {
            return false;
        }
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) == 0
    }
}

/// The cgroup directory, opened for bpf(2)'s `target_fd`.
fn open_cgroup(cgroup_dir: &Path) -> Result<File, DeviceError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(cgroup_dir)
        .map_err(|source| DeviceError::OpenCgroup {
            path: cgroup_dir.to_path_buf(),
            source,
        })
}
