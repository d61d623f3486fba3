//! `salloc`: get an allocation, run a command (or the user's shell) in it
//! with the allocation's `SLURM_*` variables, and give it back when the
//! command ends. The exit status is the command's.
//!
//! ```text
//!  options --alloc::allocate--> "salloc: Granted job allocation N"
//!    --> command with SLURM_JOB_ID, SLURM_NODELIST, ... --> wait
//!    --> CompleteAllocation --> "salloc: Relinquishing job allocation N"
//! ```

use crate::alloc;
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use model::ExitCode;
use std::os::unix::process::ExitStatusExt;

/// salloc's options beyond sbatch's.
const EXTRA: &[OptSpec] = &[
    opt("no-shell", None, Arg::None),
    opt("bell", None, Arg::None),
    opt("no-bell", None, Arg::None),
    opt("kill-command", Some('K'), Arg::Optional),
    opt("immediate", Some('I'), Arg::Optional),
];

/// salloc's options: sbatch's, less those of batch jobs, and its own.
pub fn specs() -> Vec<OptSpec> {
    let mut specs: Vec<OptSpec> = crate::sbatch::opts::SPECS
        .iter()
        .filter(|s| {
            !matches!(
                s.long,
                "wrap" | "parsable" | "array" | "kill-on-invalid-dep"
            )
        })
        .copied()
        .collect();
    specs.extend_from_slice(EXTRA);
    specs
}

/// Runs `salloc`.
pub fn main(args: Vec<String>) -> i32 {
    let specs = specs();
    let parsed = match getopt::parse(&specs, &args, true) {
        Ok(p) => p,
        Err(e) => {
            eprint!("{}", crate::common::usage_error("salloc", &e.message()));
            return 1;
        }
    };
    let mut items = Vec::new();
    let mut command: Vec<String> = Vec::new();
    let mut quiet = false;
    let mut no_shell = false;
    for item in parsed {
        match item {
            Item::Positional(p) => command.push(p),
            Item::Opt("help", _) | Item::Opt("usage", _) => {
                crate::common::print_stdout(
                    "Usage: salloc [OPTIONS(0)... [ : OPTIONS(N)...]] [command [args...]]\n",
                );
                return 0;
            }
            Item::Opt("version", _) => {
                crate::common::print_stdout(&crate::common::version_line());
                return 0;
            }
            Item::Opt("quiet", _) => quiet = true,
            Item::Opt("no-shell", _) => no_shell = true,
            Item::Opt(name, v) => items.push((name, v)),
        }
    }
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".to_string());
    let st = match alloc::job_state("salloc", &items, &cwd, crate::common::now()) {
        Ok(st) => st,
        Err(text) => {
            eprint!("{text}");
            return 1;
        }
    };
    let client = match client::Client::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("salloc: error: {e}");
            return 1;
        }
    };
    let mut desc = st.desc.clone();
    let id = client.identity().clone();
    desc.alloc_only = true;
    if !st.name_set {
        desc.name = if no_shell { "no-shell" } else { "interactive" }.into();
    }
    desc.work_dir = match &st.chdir {
        Some(d) if d.starts_with('/') => d.clone(),
        Some(d) => format!("{}/{d}", cwd.trim_end_matches('/')),
        None => cwd.clone(),
    };
    desc.submit_dir = cwd.clone();
    desc.submit_host = id.host.clone();
    desc.submit_line = std::iter::once("salloc")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    desc.uid = id.uid;
    desc.gid = id.gid;
    desc.user = id.user.clone();
    desc.alloc_sid = std::process::id();
    let a = match alloc::allocate(&client, "salloc", desc, quiet) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let job_id = a.job_id;
    let mut code = 0;
    let mut exit = ExitCode::default();
    if !no_shell {
        let argv = if command.is_empty() {
            vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
        } else {
            command
        };
        // The allocation's variables, not sbatch's own (SLURM_PRIO_PROCESS,
        // SLURM_UMASK): salloc's command has none of them, as in Slurm; the
        // steps it starts get them from srun.
        let mut env = alloc::process_env();
        for (k, v) in &a.env {
            alloc::set_env(&mut env, k, v);
        }
        // pyxis's options given to salloc reach the steps as Slurm passes
        // SPANK options on (`SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_...`):
        // each srun in the allocation reads them and runs in that container
        // unless its command line says otherwise.
        for (k, v) in proto::container::spank_env(&st.desc.container) {
            alloc::set_env(&mut env, &k, &v);
        }
        // salloc ignores the terminal's signals while its command runs; the
        // command gets them itself.
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTSTP] {
            // SAFETY: SIG_IGN installs no handler.
            unsafe { libc::signal(sig, libc::SIG_IGN) };
        }
        let mut cmd = std::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]).env_clear().envs(env);
        // SAFETY: only resets dispositions before exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTSTP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        match cmd.status() {
            Ok(s) => {
                exit = ExitCode::from_wait_status(s.into_raw());
                code = match (s.code(), s.signal()) {
                    (Some(c), _) => c,
                    (None, Some(sig)) => killed_command_status(sig),
                    _ => 1,
                };
            }
            Err(e) => {
                eprintln!("salloc: error: {}: {e}", argv[0]);
                exit = ExitCode { code: 1, signal: 0 };
                code = 1;
            }
        }
        if !quiet {
            eprintln!("salloc: Relinquishing job allocation {job_id}");
        }
        alloc::release(&client, job_id, exit);
    }
    let _ = exit;
    code
}

/// salloc's exit status when its command was killed by `sig`: 0 for the
/// signals a user sends (hangup, interrupt, quit, kill), 1 for any other,
/// as Slurm 22.05's salloc exits (`salloc bash -c 'kill -KILL $$'` exits 0,
/// `kill -TERM $$` 1).
pub fn killed_command_status(sig: i32) -> i32 {
    match sig {
        libc::SIGHUP | libc::SIGINT | libc::SIGQUIT | libc::SIGKILL => 0,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_35_a_killed_command_ends_salloc_as_slurm_does() {
        for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGKILL] {
            assert_eq!(killed_command_status(sig), 0, "signal {sig}");
        }
        for sig in [libc::SIGTERM, libc::SIGUSR1, libc::SIGSEGV] {
            assert_eq!(killed_command_status(sig), 1, "signal {sig}");
        }
    }
}
