//! What both supervisors (`stepd` for the batch script, `taskd` for srun's
//! tasks) share to start a program as the job's user: the exec image made
//! before fork, the supplementary groups, the signals a supervisor ignores
//! and slurmstepd's error texts. A leaf: it imports nothing of the crate.

use std::ffi::CString;

/// strerror(3) text, without Rust's " (os error N)".
pub fn os_error_text(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The line slurmstepd writes to the job's stderr when it cannot enter the
/// working directory.
pub fn chdir_error_line(work_dir: &str, errno: i32) -> String {
    format!(
        "slurmstepd: error: couldn't chdir to `{work_dir}': {}: going to /tmp instead\n",
        os_error_text(errno)
    )
}

/// Signals the supervisor ignores, so that only the job's own signals
/// (sent to the script's group, not to the supervisor) affect the job.
pub const SUPERVISOR_IGNORES: [libc::c_int; 4] =
    [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGPIPE];

/// Supplementary groups of `user` with primary group `gid`.
pub fn groups_of(user: &str, gid: u32) -> Result<Vec<libc::gid_t>, String> {
    let name = CString::new(user).map_err(|_| "user name contains a NUL byte".to_string())?;
    let groups = nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid))
        .map_err(|e| format!("cannot read the groups of user {user}: {e}"))?;
    Ok(groups.into_iter().map(|g| g.as_raw()).collect())
}

/// Becomes `uid`, with primary group `gid` and the supplementary `groups`
/// (from [`groups_of`]), for good: the child of a root supervisor between
/// fork and exec. Async-signal-safe: the list is made before the fork.
pub fn become_user(uid: u32, gid: u32, groups: &[libc::gid_t]) -> std::io::Result<()> {
    // SAFETY: setgroups, setgid and setuid on memory the caller owns.
    let failed = unsafe {
        libc::setgroups(groups.len() as _, groups.as_ptr()) != 0
            || libc::setgid(gid) != 0
            || libc::setuid(uid) != 0
    };
    if failed {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The task's program, arguments and environment, prepared before fork so
/// that the child can exec with `SLURM_TASK_PID` set to its own pid (known
/// only after fork) without allocating.
pub struct ExecImage {
    path: CString,
    argv: Vec<CString>,
    env: Vec<CString>,
    /// `SLURM_TASK_PID=` with room for the digits, written in the child.
    pid_entry: Vec<u8>,
    /// NULL-terminated pointer arrays, filled in the child (no allocation).
    argv_ptrs: Vec<usize>,
    env_ptrs: Vec<usize>,
}

const TASK_PID_KEY: &[u8] = b"SLURM_TASK_PID=";

impl ExecImage {
    /// The image of `program args` with `env`, or None when `program` is
    /// not found on the environment's PATH (the plain spawn then reports
    /// the error). With `root` (a container's file tree as the host sees
    /// it) the program is looked for there, and the path is the one inside.
    pub fn new_in(
        root: Option<&std::path::Path>,
        program: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> Option<ExecImage> {
        let path = resolve_program(root, program, env)?;
        let argv: Vec<CString> = std::iter::once(program)
            .chain(args.iter().map(String::as_str))
            .map(|a| CString::new(a).ok())
            .collect::<Option<_>>()?;
        let env: Vec<CString> = env
            .iter()
            .filter(|(k, _)| k != "SLURM_TASK_PID")
            .map(|(k, v)| CString::new(format!("{k}={v}")).ok())
            .collect::<Option<_>>()?;
        let mut pid_entry = TASK_PID_KEY.to_vec();
        pid_entry.resize(TASK_PID_KEY.len() + 24, 0);
        Some(ExecImage {
            path: CString::new(path).ok()?,
            argv_ptrs: vec![0; argv.len() + 1],
            env_ptrs: vec![0; env.len() + 2],
            argv,
            env,
            pid_entry,
        })
    }

    /// Execs the image with this process's pid as `SLURM_TASK_PID`;
    /// returns only on failure. Async-signal-safe.
    pub fn exec(&mut self) -> std::io::Error {
        // SAFETY: getpid is async-signal-safe.
        let mut pid = unsafe { libc::getpid() } as u64;
        let mut digits = [0u8; 20];
        let mut n = 0;
        loop {
            digits[n] = b'0' + (pid % 10) as u8;
            n += 1;
            pid /= 10;
            if pid == 0 {
                break;
            }
        }
        let base = TASK_PID_KEY.len();
        for (slot, d) in self.pid_entry[base..base + n]
            .iter_mut()
            .zip(digits[..n].iter().rev())
        {
            *slot = *d;
        }
        self.pid_entry[base + n] = 0;
        for (slot, a) in self.argv_ptrs.iter_mut().zip(&self.argv) {
            *slot = a.as_ptr() as usize;
        }
        *self.argv_ptrs.last_mut().expect("argv has a NULL slot") = 0;
        for (slot, e) in self.env_ptrs.iter_mut().zip(&self.env) {
            *slot = e.as_ptr() as usize;
        }
        let len = self.env_ptrs.len();
        self.env_ptrs[len - 2] = self.pid_entry.as_ptr() as usize;
        self.env_ptrs[len - 1] = 0;
        // SAFETY: NUL-terminated strings and NULL-terminated arrays of
        // pointers into memory this struct owns.
        unsafe {
            libc::execve(
                self.path.as_ptr(),
                self.argv_ptrs.as_ptr().cast(),
                self.env_ptrs.as_ptr().cast(),
            );
        }
        std::io::Error::last_os_error()
    }
}

/// `program` as execvp would find it on the task environment's PATH.
fn resolve_program(
    root: Option<&std::path::Path>,
    program: &str,
    env: &[(String, String)],
) -> Option<String> {
    if program.contains('/') {
        return Some(program.to_string());
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("/usr/local/bin:/usr/bin:/bin");
    path.split(':').find_map(|dir| {
        let dir = if dir.is_empty() { "." } else { dir };
        let candidate = format!("{dir}/{program}");
        let meta = match root {
            // Links inside the container are the container's: resolved
            // under its root.
            Some(r) => crate::container::anchor::resolve_in_root(r, &candidate)
                .ok()
                .and_then(|p| std::fs::metadata(p).ok())?,
            None => std::fs::metadata(&candidate).ok()?,
        };
        use std::os::unix::fs::PermissionsExt;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
    })
}

#[cfg(test)]
mod tests;
