//! The container's anchor (`noded --container-anchor`): a small process,
//! started by the step's supervisor, that builds the container in a mount
//! namespace of its own, answers one line (`Ok(Ready)` or `Err(pyxis:
//! ...)`), then holds the namespace until its stdin closes. Its squashfuse
//! helper, where one serves the image, is its child and ends with it (a
//! parent-death signal). Started as root (root's own jobs, or
//! `user_namespaces=0`), once built it becomes the job's user (remapped:
//! 0 in the user namespace, after the supervisor's `mapped` line, without
//! capabilities), so nothing in the container runs as root but squashfuse.
//!
//! Started as the job's user (`AnchorSpec::rootless`: a node daemon that
//! is not root, or a root one building the container of a user who is not
//! root; as enroot without root), it makes a user namespace first, where
//! its user is 0 with the capabilities to build the container in the
//! mount namespace that namespace owns: squashfuse (never the kernel's
//! squashfs), the kernel's overlay (fuse-overlayfs where the kernel
//! refuses), the host's `/proc` and `/sys` bound (no fresh ones: the PID
//! namespace is the host's), the device files bound onto a tmpfs `/dev`. Then, unless remapped, a
//! nested user namespace where its user is itself again, for the tasks;
//! and it drops every capability.
//!
//! Single-threaded from exec to exit, so it may mount and fork freely.

use super::{AnchorSpec, MountSpec, Ready};
use std::ffi::CString;
use std::io::{BufRead, Read, Write};
use std::path::{Component, Path, PathBuf};

/// The flag that runs the anchor.
pub const FLAG: &str = "--container-anchor";

/// Runs the anchor; returns the exit status.
pub fn main() -> i32 {
    let mut stdin = std::io::BufReader::new(std::io::stdin());
    let mut line = String::new();
    if stdin.read_line(&mut line).is_err() {
        return 1;
    }
    let answer = |r: &Result<Ready, String>| {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer(&mut out, r);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    };
    let spec: AnchorSpec = match serde_json::from_str(&line) {
        Ok(s) => s,
        Err(e) => {
            answer(&Err(format!("pyxis: bad container spec: {e}")));
            return 1;
        }
    };
    let mut helpers = Vec::new();
    let built = build(&spec, &mut helpers);
    let failed = built.is_err();
    let dropped = !failed && spec.owner.is_some();
    answer(&built);
    if !failed {
        if spec.user_ns && spec.owner.is_some() {
            // The supervisor maps the namespace, then says so.
            let mut mapped = String::new();
            let _ = stdin.read_line(&mut mapped);
            if mapped.trim() == "mapped" {
                // SAFETY: plain system calls; 0 here is the job's user.
                unsafe {
                    libc::setresgid(0, 0, 0);
                    libc::setresuid(0, 0, 0);
                }
                // It only holds the namespace: no capabilities in it either.
                let _ = drop_capabilities();
            }
        }
        // Hold the namespace until the supervisor is done with it.
        let mut sink = Vec::new();
        let _ = stdin.read_to_end(&mut sink);
    }
    if !dropped {
        for mut h in helpers {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
    // Otherwise the helpers (root's, which this user may not signal) die
    // with the anchor: their parent-death signal.
    i32::from(failed)
}

/// Clears every capability of this process (capset(2), version 3);
/// false where that failed. Async-signal-safe.
pub(super) fn drop_capabilities() -> bool {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset(2) with a version-3 header and its two data words.
    unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) == 0 }
}

/// Becomes the job's user (no capabilities left), or, remapped, keeps
/// only the job's group before the user namespace is made.
fn drop_to(owner: (u32, u32), remapped: bool) -> Result<(), String> {
    let (uid, gid) = owner;
    // SAFETY: plain system calls on this single-threaded process.
    let rc = unsafe {
        if remapped {
            libc::setgroups(1, &gid)
        } else if libc::setgroups(1, &gid) != 0 || libc::setresgid(gid, gid, gid) != 0 {
            -1
        } else {
            libc::setresuid(uid, uid, uid)
        }
    };
    if rc != 0 {
        return Err(format!(
            "pyxis: cannot become the job's user: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("pyxis: path with a NUL byte: {}", p.display()))
}

/// mount(2), with pyxis-style errors.
fn mount(
    src: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), String> {
    let src_c = src.map(cstr).transpose()?;
    let target_c = cstr(target)?;
    let fs_c = fstype.map(|f| CString::new(f).expect("no NUL"));
    let data_c = data
        .map(|d| CString::new(d).map_err(|_| "pyxis: bad mount options".to_string()))
        .transpose()?;
    // SAFETY: pointers to NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            src_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            target_c.as_ptr(),
            fs_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr().cast()),
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!(
            "pyxis: failed to mount {} on {}: {e}",
            src.map_or_else(
                || fstype.unwrap_or("").to_string(),
                |s| s.display().to_string()
            ),
            target.display()
        ));
    }
    Ok(())
}

/// `path` (absolute, inside the container) as a host path under `root`,
/// following the image's symbolic links inside `root` only: a link in the
/// image never leads a mount out of the container.
pub fn resolve_in_root(root: &Path, path: &str) -> Result<PathBuf, String> {
    let mut out = root.to_path_buf();
    let mut pending: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(str::to_string)
        .collect();
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.as_str() {
            "." => continue,
            ".." => {
                if out != root {
                    out.pop();
                }
                continue;
            }
            _ => {}
        }
        let next = out.join(&c);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > 40 {
                    return Err(format!("pyxis: too many symbolic links in {path}"));
                }
                let target = std::fs::read_link(&next).map_err(|e| format!("pyxis: {e}"))?;
                if target.is_absolute() {
                    out = root.to_path_buf();
                }
                let parts: Vec<String> = target
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                        Component::ParentDir => Some("..".into()),
                        _ => None,
                    })
                    .collect();
                pending.extend(parts.into_iter().rev());
            }
            _ => out = next,
        }
    }
    Ok(out)
}

/// Makes the mount point for `src` at `target`: a directory, or an empty
/// file where `src` is not a directory.
fn make_point(src: Option<&Path>, target: &Path) -> Result<(), String> {
    let dir = src.map_or(true, |s| s.is_dir());
    if target.exists() {
        return Ok(());
    }
    let made = if dir {
        std::fs::create_dir_all(target)
    } else {
        if let Some(parent) = target.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(target)
            .map(drop)
    };
    made.map_err(|e| format!("pyxis: cannot create mount point {}: {e}", target.display()))
}

fn bind(src: &Path, target: &Path, read_only: bool) -> Result<(), String> {
    mount(Some(src), target, None, libc::MS_BIND | libc::MS_REC, None)?;
    if read_only {
        // The flags the source's mount has stay (in a user namespace the
        // host's are locked: dropping `noexec` would be refused).
        mount(
            None,
            target,
            None,
            libc::MS_REMOUNT
                | libc::MS_BIND
                | libc::MS_RDONLY
                | libc::MS_NOSUID
                | libc::MS_NODEV
                | mount_flags(target),
            None,
        )?;
    }
    Ok(())
}

/// `noexec` (and the other locked flags) of the mount at `path`, as
/// mount(2) flags.
fn mount_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = cstr(path) else { return 0 };
    // SAFETY: statvfs(2) into a zeroed struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let mut flags = 0;
    for (st_flag, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
    ] {
        if st.f_flag & st_flag != 0 {
            flags |= ms;
        }
    }
    flags
}

/// Waits until `dir` is a mount point (the FUSE helper has mounted).
fn wait_mounted(dir: &Path, helper: &mut std::process::Child, name: &str) -> Result<(), String> {
    let want = dir.to_string_lossy().into_owned();
    for _ in 0..500 {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if text
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
        {
            return Ok(());
        }
        if let Ok(Some(status)) = helper.try_wait() {
            return Err(format!("pyxis: {name} failed: {status}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Err(format!("pyxis: {name} did not mount {}", dir.display()))
}

/// `/etc/environment` of an image: `KEY=VALUE` lines, `export` and quotes
/// allowed, comments skipped.
pub fn parse_environment(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.push((k.to_string(), v.to_string()));
            }
        }
    }
    out
}

/// Writes this process's own `setgroups` (denied) and one-line uid and
/// gid maps (`INSIDE OUTSIDE 1`) after an unshare of its user namespace.
fn map_self(inside: (u32, u32), outside: (u32, u32)) -> Result<(), String> {
    let write = |f: &str, text: String| {
        std::fs::write(format!("/proc/self/{f}"), text)
            .map_err(|e| format!("pyxis: cannot map the user namespace ({f}): {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{} {} 1\n", inside.0, outside.0))?;
    write("gid_map", format!("{} {} 1\n", inside.1, outside.1))
}

fn build(spec: &AnchorSpec, helpers: &mut Vec<std::process::Child>) -> Result<Ready, String> {
    // Started as the job's user (or by a node daemon that is not root):
    // it builds the container in a user namespace of its own, as enroot
    // does without root.
    let rootless = spec.rootless;
    // SAFETY: getuid/getgid cannot fail.
    let me = unsafe { (libc::getuid(), libc::getgid()) };
    // Without root: a user namespace first, where this user is 0 with
    // every capability (over the namespace's own mounts only), and the
    // mount namespace owned by it. The helpers it runs (squashfuse,
    // fuse-overlayfs) are 0 there too, so they may mount.
    let flags = if rootless {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS
    } else {
        libc::CLONE_NEWNS
    };
    // SAFETY: unshare(2) on this single-threaded process.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!(
            "pyxis: cannot make a mount namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    if rootless {
        map_self((0, 0), me)?;
    }
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    let run = &spec.run_dir;
    mount(
        Some(Path::new("tmpfs")),
        run,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0700"),
    )?;
    let lower = run.join("lower");
    let merged = run.join("merged");
    for d in [&lower, &merged] {
        std::fs::create_dir_all(d).map_err(|e| format!("pyxis: {e}"))?;
    }
    // The image, read-only: by the kernel where the site allows it and the
    // kernel will (a loop device, the squashfs module); by squashfuse
    // otherwise, or when the kernel refuses (no loop device, no module, a
    // namespace where mounting block file systems is not allowed).
    // Without root the kernel mounts no squashfs (a block file system, in
    // a user namespace): squashfuse serves it, as the reason in the
    // node's log says (a root node daemon asks for the kernel's only for
    // root's own containers).
    let kernel_error = if spec.kernel_squashfs && rootless {
        eprintln!(
            "pyxis: kernel_squashfs: the node daemon is not root, so the kernel may not mount the image {}; served by squashfuse instead",
            spec.squashfs.display()
        );
        None
    } else if spec.kernel_squashfs {
        mount_kernel_squashfs(&spec.squashfs, &lower).err()
    } else {
        None
    };
    if !spec.kernel_squashfs || rootless || kernel_error.is_some() {
        match mount_squashfuse(&spec.squashfs, &lower, helpers, rootless) {
            Ok(()) => {
                if let Some(e) = kernel_error {
                    eprintln!("{e}; served by squashfuse instead");
                }
            }
            // Where the kernel was tried first, its reason is the one the
            // user needs (squashfuse was only the fallback).
            Err(e) => {
                return Err(match kernel_error {
                    Some(k) => format!("{k} ({e})"),
                    None => e,
                })
            }
        }
    }
    // The overlay: changes go to a tmpfs, or to the named container's
    // directory on disk.
    let (upper, work) = match &spec.persist {
        Some(dir) => (dir.join("upper"), dir.join("work")),
        None => {
            let rw = run.join("rw");
            std::fs::create_dir_all(&rw).map_err(|e| format!("pyxis: {e}"))?;
            mount(
                Some(Path::new("tmpfs")),
                &rw,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some("mode=0755"),
            )?;
            for d in ["upper", "work"] {
                std::fs::create_dir_all(rw.join(d)).map_err(|e| format!("pyxis: {e}"))?;
            }
            (rw.join("upper"), rw.join("work"))
        }
    };
    let data = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        upper.display(),
        work.display()
    );
    if rootless {
        // The kernel's overlay in a user namespace (Linux 5.11 and later;
        // its own attributes as user.* ones), else fuse-overlayfs.
        let kernel = mount(
            Some(Path::new("overlay")),
            &merged,
            Some("overlay"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&format!("{data},userxattr")),
        );
        if let Err(e) = kernel {
            mount_fuse_overlayfs(&data, &merged, helpers).map_err(|f| format!("{e} ({f})"))?;
            eprintln!("{e}; the overlay is fuse-overlayfs's instead");
        }
    } else {
        mount(
            Some(Path::new("overlay")),
            &merged,
            Some("overlay"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&data),
        )?;
    }
    // The system's file systems. Without root, no fresh proc can be
    // mounted (the PID namespace is the host's, not this user
    // namespace's): the host's, bound with what is mounted under it.
    let proc_dir = resolve_in_root(&merged, "/proc")?;
    make_point(None, &proc_dir)?;
    if rootless {
        bind(Path::new("/proc"), &proc_dir, false)?;
    } else {
        mount(
            Some(Path::new("proc")),
            &proc_dir,
            Some("proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
        )?;
    }
    let sys_dir = resolve_in_root(&merged, "/sys")?;
    make_point(None, &sys_dir)?;
    bind(Path::new("/sys"), &sys_dir, true)?;
    build_dev(&merged, &spec.devices)?;
    let tmp = resolve_in_root(&merged, "/tmp")?;
    make_point(None, &tmp)?;
    mount(
        Some(Path::new("tmpfs")),
        &tmp,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=1777"),
    )?;
    // The step's binds, in order.
    for m in &spec.mounts {
        place(&merged, m)?;
    }
    bind_devices(&merged, &spec.devices)?;
    let env = std::fs::read_to_string(merged.join("etc/environment"))
        .map(|t| parse_environment(&t))
        .unwrap_or_default();
    let workdir = std::fs::read_to_string(merged.join(".muster-image.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("workdir")?.as_str().map(str::to_string))
        .filter(|w| !w.is_empty());
    let has_rc = merged.join("etc/rc").is_file();
    let user_ns = spec.user_ns;
    if !spec.writable {
        mount(
            None,
            &merged,
            None,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            None,
        )?;
    }
    // pivot_root(".", "."), then the old root detached: nothing of the
    // host is left but what was bound in.
    let merged_c = cstr(&merged)?;
    // SAFETY: chdir/pivot_root/umount2 on NUL-terminated paths.
    unsafe {
        if libc::chdir(merged_c.as_ptr()) != 0
            || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0
            || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0
            || libc::chdir(c"/".as_ptr()) != 0
        {
            return Err(format!(
                "pyxis: cannot enter the container: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    if rootless {
        if !user_ns {
            // The tasks' own namespace, nested: this user is itself in
            // it (its 0 in the outer one), so the tasks are the job's
            // user inside, as outside.
            // SAFETY: unshare(2) on this single-threaded process.
            if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
                return Err(format!(
                    "pyxis: cannot make a user namespace: {}",
                    std::io::Error::last_os_error()
                ));
            }
            map_self(me, (0, 0))?;
        }
        // It only holds the namespaces: no capabilities in them.
        if !drop_capabilities() {
            return Err(format!(
                "pyxis: cannot drop capabilities: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    if let Some(owner) = spec.owner {
        drop_to(owner, user_ns)?;
    }
    if user_ns && !rootless {
        // SAFETY: unshare(2) on this single-threaded process, root now
        // the namespace's root (no chroot left).
        if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
            return Err(format!(
                "pyxis: cannot make a user namespace: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(Ready {
        env,
        workdir,
        has_rc,
    })
}

/// The squashfs at `image` on `lower` through a loop device (it clears
/// itself when the last mount goes).
fn mount_kernel_squashfs(image: &Path, lower: &Path) -> Result<(), String> {
    let out = std::process::Command::new("mount")
        .args(["-t", "squashfs", "-o", "loop,ro,nosuid,nodev"])
        .arg(image)
        .arg(lower)
        .output()
        .map_err(|e| format!("pyxis: cannot run mount: {e}"))?;
    if !out.status.success() {
        // mount(8)'s lines as one: it goes to the node's log (the reason
        // for squashfuse) or after `pyxis:` on the step's stderr.
        let words: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        return Err(format!(
            "pyxis: failed to mount the image {}: {}",
            image.display(),
            words.join(" ")
        ));
    }
    Ok(())
}

/// The squashfs at `image` on `lower` through squashfuse, a child of this
/// anchor (killed when the anchor lets the container go).
fn mount_squashfuse(
    image: &Path,
    lower: &Path,
    helpers: &mut Vec<std::process::Child>,
    rootless: bool,
) -> Result<(), String> {
    let mut cmd = std::process::Command::new("squashfuse");
    // Without root, the image's files are the user's (0 in the user
    // namespace, as enroot's `squashfuse -o uid,gid`), and only the
    // user's processes reach the mount (no allow_other), which are all
    // that run in the container.
    let opts = if rootless {
        "ro,uid=0,gid=0"
    } else {
        "ro,allow_other"
    };
    cmd.args(["-f", "-o", opts])
        .arg(image)
        .arg(lower)
        .stdin(std::process::Stdio::null());
    let mut helper = spawn_helper(cmd, "squashfuse")?;
    let ok = wait_mounted(lower, &mut helper, "squashfuse");
    helpers.push(helper);
    ok
}

/// The overlay by fuse-overlayfs (`data`: the overlay's options) on
/// `merged`, where the kernel will not mount one in a user namespace.
fn mount_fuse_overlayfs(
    data: &str,
    merged: &Path,
    helpers: &mut Vec<std::process::Child>,
) -> Result<(), String> {
    let mut cmd = std::process::Command::new("fuse-overlayfs");
    cmd.args(["-f", "-o", data])
        .arg(merged)
        .stdin(std::process::Stdio::null());
    let mut helper = spawn_helper(cmd, "fuse-overlayfs")?;
    let ok = wait_mounted(merged, &mut helper, "fuse-overlayfs");
    helpers.push(helper);
    ok
}

/// Starts a FUSE helper that ends with this anchor.
fn spawn_helper(mut cmd: std::process::Command, name: &str) -> Result<std::process::Child, String> {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(2) only, between fork and exec. The helper ends with
    // the anchor even where the anchor (then the job's user) may not
    // signal it.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| format!("pyxis: cannot run {name}: {e}"))
}

/// One `--container-mounts` entry (or home, PMIx, script bind).
fn place(merged: &Path, m: &MountSpec) -> Result<(), String> {
    let target = resolve_in_root(merged, &m.dst)?;
    make_point(m.src.as_deref(), &target)?;
    match &m.src {
        Some(src) => bind(src, &target, m.read_only),
        None => mount(
            Some(Path::new("tmpfs")),
            &target,
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV | if m.read_only { libc::MS_RDONLY } else { 0 },
            Some("mode=1777"),
        ),
    }
}

/// A fresh `/dev`: the basic character devices, a pty namespace view,
/// `/dev/shm`, and the step's device files (GPUs, InfiniBand).
fn build_dev(merged: &Path, devices: &[PathBuf]) -> Result<(), String> {
    let dev = resolve_in_root(merged, "/dev")?;
    make_point(None, &dev)?;
    mount(
        Some(Path::new("tmpfs")),
        &dev,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("mode=0755"),
    )?;
    for name in ["null", "zero", "full", "random", "urandom", "tty"] {
        let src = Path::new("/dev").join(name);
        if src.exists() {
            let t = dev.join(name);
            make_point(Some(&src), &t)?;
            bind(&src, &t, false)?;
        }
    }
    let pts = dev.join("pts");
    make_point(None, &pts)?;
    if Path::new("/dev/pts").is_dir() {
        bind(Path::new("/dev/pts"), &pts, false)?;
    }
    let _ = std::os::unix::fs::symlink("pts/ptmx", dev.join("ptmx"));
    let _ = std::os::unix::fs::symlink("/proc/self/fd", dev.join("fd"));
    for (i, n) in ["stdin", "stdout", "stderr"].iter().enumerate() {
        let _ = std::os::unix::fs::symlink(format!("/proc/self/fd/{i}"), dev.join(n));
    }
    let shm = dev.join("shm");
    make_point(None, &shm)?;
    mount(
        Some(Path::new("tmpfs")),
        &shm,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=1777"),
    )?;
    for d in devices {
        // Device files outside /dev come after the binds (`bind_devices`).
        if let Ok(rel) = d.strip_prefix("/dev") {
            let t = dev.join(rel);
            make_point(Some(d), &t)?;
            bind(d, &t, false)?;
        }
    }
    Ok(())
}

/// Device files outside `/dev` (gres.conf's `File=` may name any path)
/// at their own path inside, bound last so that neither the container's
/// `/tmp` nor a bind hides them.
fn bind_devices(merged: &Path, devices: &[PathBuf]) -> Result<(), String> {
    for d in devices.iter().filter(|d| !d.starts_with("/dev")) {
        let t = resolve_in_root(merged, &d.to_string_lossy())?;
        make_point(Some(d), &t)?;
        bind(d, &t, false)?;
    }
    Ok(())
}
