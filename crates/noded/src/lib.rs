//! The node daemon (Slurm's slurmd plus slurmstepd for batch jobs).
//!
//! It reports the node's resources to the controller, then starts and
//! signals the batch scripts the controller sends, and reports how each
//! ended. It does not decide anything: what runs where, and when a job is
//! killed, is the controller's call.
//!
//! ```text
//!              RegisterNode, JobExited (retried until answered)
//!   daemon  ----------------------------------------------------> ctld
//!   (shell) <---------------------------------------------------- ctld
//!      |       LaunchBatch, Signal, Terminate, Ping, Shutdown
//!      | socket (SCM_RIGHTS)                   spool/jobNNNNN/{slurm_script,job.log}
//!      v                                           ^ written by both, read at restart
//!   zygote (one per daemon, single-threaded)
//!      | fork, spec on the socket
//!      v
//!   stepd (one per job, own session) --fork/exec--> batch script (own session = the job)
//!
//!   daemon::state::JobTable (pure)   spool (files, /proc identity)   env (pure)
//!
//!   credsock: users' commands --AuthInfo socket, SO_PEERCRED--> a credential for their uid
//! ```
//!
//! Every request carries a credential (crate `auth`) that the daemon checks
//! before anything else; launching, signalling and ending jobs and stopping
//! the daemon are the controller's alone (root or `SlurmUser`), and every
//! refusal is logged with the peer's address.
//!
//! Each job has a supervisor process (`stepd`), the script's parent, which
//! appends the script's wait status to the job's log in the spool (`job.log`). The
//! daemon can die (even by SIGKILL) without harm to its jobs: a restarted
//! daemon scans the spool directory, re-attaches to the jobs whose
//! supervisor still runs and reports those that ended meanwhile.
//!
//! Invariant: every job in the job table has a watcher task that waits for
//! its supervisor and reports its end from the job's log; nothing else
//! removes it. A job's spool directory lives until the controller answered
//! its end report.
//!
//! A job is its batch script's session and process group: signals go to
//! the group, and what is left of the group when the script ends is
//! killed, as Slurm's proctrack does for the batch step.
//!
//! Confinement (`cgroup`, Slurm's proctrack/cgroup): where a cgroup.conf
//! lies beside slurm.conf, `ProctrackType` is `proctrack/cgroup` and the
//! daemon is root, every task joins its cgroup
//! (`uid_U/job_J/step_S/task_T` on v1) before its exec, so a process that
//! left its session is still the job's: a step ends once its cgroup is
//! empty (what is left when its tasks end is killed), suspend freezes the
//! job's cgroups and resume thaws them. A daemon configured for cgroups it
//! cannot use refuses to start; not root, it says so once and runs jobs
//! as without. Otherwise cgroups, where
//! `JobAcctGatherType=jobacct_gather/cgroup` asks for them, serve usage
//! gathering only (`gather`); with confinement, gathering reads the same
//! cgroups. Where cgroup.conf constrains RAM or swap, the step's cgroup
//! (the layer's, else the gathering one) gets its memory limits, and its
//! OOM kills end the step OUT_OF_MEMORY (`oom`). With `ConstrainCores`
//! the job's and each step's cgroups hold them to the CPU ids the
//! controller gave them here; with `TaskPlugin=task/affinity` each task is
//! bound as srun's `--cpu-bind` says (`affinity`).
//!
//! The code lives in one room (folder) per program, over leaves they all
//! share. An arrow is "imports"; no file imports one that imports it back.
//!
//! ```text
//!   lib.rs (dispatch: noded | --stepd DIR | --stepd-zygote SPOOL | --step-tasks)
//!    +---------------------+--------------------------+
//!    v                     v                          v
//!   daemon/ ----------->  stepd/                    taskd/ ----------> pmi/
//!    the node daemon       the batch supervisor,     the step           pmi2, pmix
//!    |                     its zygote, launch        supervisor
//!    +------------------------------------------------^ (spec, control and report lines)
//!   every room --> leaves: spool <-- slots, gather (--> oom), env, gpus, nvml, exec, to_srun, options;
//!                          cgroup <-- gather; devices (device rules, for the cgroup layer);
//!                          affinity (CPU ids on host CPUs, task binding) <-- cgroup
//!                          container (pyxis: the step's mount namespace, images; its
//!                          anchor runs as `--container-anchor`) <-- taskd, stepd
//! ```
//!
//! # Performance notes
//!
//! The batch supervisor forks and executes the script itself (its own fork, not
//! `std::process::Command`), with `SLURM_TASK_PID` set to its pid, through
//! `/bin/sh` only when the kernel cannot execute the script. Supervisors are
//! forked by the zygote, so no job pays for executing and relocating the big
//! binary; where the zygote is gone the daemon executes `noded --stepd DIR`.
//!
//! Usage gathering (`gather`, Slurm's jobacct_gather): the step supervisors
//! sample their tasks every JobAcctGatherFrequency seconds on a thread of their
//! own; the batch supervisor starts it only once the script has run for 50 ms,
//! so a short job has no sampler and no live file. While a step runs its
//! supervisor publishes the usage after every sample (`usage.live` in the job's
//! spool directory for `.batch`, `step<J>.<S>.live` beside it for srun's
//! steps), which the daemon reads to answer `StepStat`; the final report
//! travels with the step's end.
//!
//! The spool's records are never fsynced: they must outlive the daemon, which
//! the page cache does; a host crash kills the jobs anyway, and the controller
//! ends the jobs of a node that booted after it last heard from it. Job
//! directories are used again (`slots`), so a job allocates and frees no
//! inodes.
//!
//! # Stopping, and launches sent twice
//!
//! A stopping daemon (SIGTERM, SIGINT, or the controller's shutdown) kills its
//! running batch jobs' process groups, tells every srun step's supervisor to
//! end its tasks at once (`StepTable::stop`: the supervisors run in sessions of
//! their own, which the batch jobs' groups do not reach), and waits a moment
//! for their ends; from then on the job table (`JobTable::stop`) and the step
//! table refuse launches, and a launch already in flight is killed as soon as
//! its process exists (`AfterStart::Kill`; a step entered while stopping is
//! ended at once), so nothing outlives the daemon that it started (extern-step
//! holders aside: they are kept in the spool, for a restarted daemon).
//!
//! A launch of a job whose end is still being reported (its end is in the job's
//! log in the spool) is answered as done, not run again: a restarted controller
//! re-sends the launch of every job it holds as running. A copy that arrives
//! after the end was acknowledged is refused too: each launch carries its run
//! number (`restarts`, SLURM_RESTART_COUNT), kept in the job's spool record,
//! and the daemon remembers for 10 minutes which run of each job ended; a
//! requeued job's next run has a higher number and starts.

// The rooms, one per program; each one's module doc says what it may import.
mod daemon;
mod pmi;
mod stepd;
mod taskd;

// The leaves the rooms share; they import no room.
mod affinity;
mod cgroup;
mod container;
// Public: the building blocks of device confinement (issue 37) that the
// cgroup layer calls with its directories.
pub mod devices;
mod env;
mod exec;
mod gather;
mod gpus;
mod hooks;
mod nvml;
mod oom;
mod options;
mod slots;
mod spool;
mod to_srun;
mod xid;

use std::path::PathBuf;

pub use daemon::run;
pub use daemon::state;
pub use options::NodedOptions;

/// pyxis.conf's text checked as a container step reads it: the keys that
/// do nothing here (line, why), or the error such a step would fail with
/// (`muster check-config`).
pub fn check_pyxis_conf(text: &str) -> Result<Vec<(usize, String)>, String> {
    container::SiteConf::parse(text).map(|c| c.ignored)
}

const USAGE: &str = "Usage: muster noded [-D] [-v...] [-N nodename] [-f slurm.conf] \
                     [--conf-server host[:port]] [--authinfo options]";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Run(NodedOptions),
    Help,
    Version,
}

/// Parses the daemon's options. `args` are the arguments after the program
/// (or `muster noded`) name.
fn parse_args(args: &[String]) -> Result<Parsed, String> {
    let mut opts = NodedOptions::with_defaults();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value_for = |flag: &str, attached: &str| -> Result<String, String> {
            if !attached.is_empty() {
                return Ok(attached.to_string());
            }
            it.next()
                .cloned()
                .ok_or_else(|| format!("option {flag} requires an argument"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "-D" => opts.foreground = true,
            s if s.starts_with("-v") && s[1..].chars().all(|c| c == 'v') => {
                opts.verbose = opts.verbose.saturating_add((s.len() - 1) as u8);
            }
            s if s.starts_with("-N") => opts.node_name = Some(value_for("-N", &s[2..])?),
            s if s.starts_with("--conf-server") => {
                let attached = s["--conf-server".len()..].strip_prefix('=');
                if s != "--conf-server" && attached.is_none() {
                    return Err(format!("unrecognized option {s:?}"));
                }
                opts.conf_server = Some(value_for("--conf-server", attached.unwrap_or(""))?);
            }
            s if s.starts_with("--authinfo") => {
                let attached = s["--authinfo".len()..].strip_prefix('=');
                if s != "--authinfo" && attached.is_none() {
                    return Err(format!("unrecognized option {s:?}"));
                }
                opts.authinfo = Some(value_for("--authinfo", attached.unwrap_or(""))?);
            }
            s if s.starts_with("-f") => opts.conf_path = PathBuf::from(value_for("-f", &s[2..])?),
            other => return Err(format!("unrecognized option {other:?}")),
        }
    }
    Ok(Parsed::Run(opts))
}

/// Where the daemon leaves its open-file limit as it found it, for its step
/// supervisors (`restore_open_file_limit`).
const SOFT_NOFILE_ENV: &str = "MUSTER_NODED_SOFT_NOFILE";

/// Raises the daemon's soft open-file limit to the hard one (a storm of
/// connections must not make `accept`, nor the spool and pipes of a
/// launch, fail for want of descriptors), and notes the old one in the
/// environment its children inherit. Called before logging and the
/// runtime start: no other thread exists to read the environment yet.
/// What to log once logging is up.
fn raise_open_file_limit() -> String {
    match rpc::admission::raise_open_file_limit() {
        Ok((before, now)) => {
            if before != now {
                std::env::set_var(SOFT_NOFILE_ENV, before.to_string());
            }
            format!("open files: up to {now} (was {before})")
        }
        Err(e) => format!("cannot raise the open-file limit: {e}"),
    }
}

/// In a step supervisor: puts back the soft open-file limit the daemon
/// started with, so jobs and tasks get the limit they got before the
/// daemon raised its own (a soft limit of a million slows programs that
/// close every descriptor up to it). Called before any thread exists.
fn restore_open_file_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Some(soft) = std::env::var(SOFT_NOFILE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    std::env::remove_var(SOFT_NOFILE_ENV);
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, soft.min(hard), hard);
    }
}

/// Removes the node daemons' own cgroup directories of this configuration
/// where no job is left in them: for `muster down`, once the daemons are
/// gone (one that was killed could not remove its own). Nothing without
/// confinement, as non-root, or for a daemon in a delegated v2 cgroup
/// (that base is not ours to remove).
pub fn release_cgroups(config: &conf::Config) {
    let Some(cgroup_conf) = config.confinement() else {
        return;
    };
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    for node in &config.nodes {
        let spool = PathBuf::from(config.spool_dir_for(&node.name));
        let Ok(settings) = cgroup::CgroupSettings::resolve(cgroup_conf, &node.name, &spool) else {
            continue;
        };
        if settings.version == cgroup::Version::V2 && !cgroup_conf.ignore_systemd {
            continue;
        }
        settings.driver().release();
    }
}

/// Entry point of `muster noded`: parses `args` (without the program name),
/// runs the daemon on a fresh tokio runtime and returns the exit status:
/// 0 after a clean shutdown (SIGTERM, SIGINT or the controller's
/// `Shutdown`), 1 on any error, which is printed with its causes.
///
/// `--stepd DIR` (not in the usage: only the daemon passes it) runs a job
/// supervisor instead, see the `stepd` module; `--stepd-zygote SPOOL` the
/// process that forks them, see the `zygote` module.
pub fn main(args: Vec<String>) -> i32 {
    // Tolerate being handed argv[0] as well.
    let args: &[String] = match args.first() {
        Some(first) if !first.starts_with('-') => &args[1..],
        _ => &args[..],
    };
    if matches!(args, [f] if f == "--step-tasks")
        || matches!(args, [f, _] if f == stepd::zygote::FLAG || f == "--stepd")
    {
        // A supervisor: what it starts runs with the daemon's own limit.
        restore_open_file_limit();
    }
    // The anchor: its second word (the run directory) is for `ps` only.
    if matches!(args, [f] | [f, _] if f == container::anchor::FLAG) {
        // Single-threaded: it unshares its mount namespace.
        return container::anchor::main();
    }
    if let [flag] = args {
        if flag == "--step-tasks" {
            // Before any runtime or thread exists: the supervisor forks.
            return taskd::main();
        }
    }
    if let [flag, _spool] = args {
        if flag == stepd::zygote::FLAG {
            // Before any runtime or thread exists: the zygote forks.
            return stepd::zygote::main();
        }
    }
    if let [flag, dir] = args {
        if flag == "--stepd" {
            // Before any runtime or thread exists: the supervisor forks.
            return stepd::supervisor::main(std::path::Path::new(dir));
        }
    }
    let opts = match parse_args(args) {
        Ok(Parsed::Run(opts)) => opts,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return 0;
        }
        Ok(Parsed::Version) => {
            println!("muster noded {}", env!("CARGO_PKG_VERSION"));
            return 0;
        }
        Err(msg) => {
            eprintln!("noded: error: {msg}\n{USAGE}");
            return 1;
        }
    };
    let nofile = raise_open_file_limit();
    init_logging(opts.verbose);
    tracing::debug!("{nofile}");
    // The daemon writes to its step supervisors' stdin; one that has just
    // exited must give EPIPE, not kill the daemon (`muster` restores the
    // default SIGPIPE for the listing commands).
    // SAFETY: SIG_IGN installs no handler.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("noded")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("noded: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(run(opts)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("noded: error: {e:#}");
            1
        }
    }
}

/// Installs a stderr subscriber (`MUSTER_LOG`, else the `-v` level) unless
/// the binary already installed one.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MUSTER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests;
