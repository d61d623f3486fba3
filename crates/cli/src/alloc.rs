//! What salloc and srun share: the job options they take from sbatch's
//! table, and getting an allocation (submit, wait, give it back).
//!
//! ```text
//!  options --sbatch::opts::apply--> JobDesc{alloc_only} --Submit--> job id
//!    --AllocationInfo (until RUNNING)--> nodes + SLURM_* of the allocation
//!  command / step ends --CompleteAllocation{exit}--> job COMPLETED or FAILED
//! ```

use crate::sbatch::opts::{self, Ctx, Level, State};
use model::{ExitCode, JobId, JobState, PendingReason};
use proto::{AllocationInfo, CtldRequest, CtldResponse, SlurmError};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The last SIGINT/SIGTERM/SIGHUP seen while waiting for an allocation.
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_signal(sig: libc::c_int) {
    INTERRUPTED.store(sig, Ordering::SeqCst);
}

/// Applies the job options among `items` (sbatch's names) to a fresh
/// state; `prog` prefixes error lines.
pub fn job_state(
    prog: &str,
    items: &[(&'static str, Option<String>)],
    cwd: &str,
    now: i64,
) -> Result<State, String> {
    let ctx = Ctx { now, cwd };
    let mut st = State::default();
    // Refused options fail here, ignored ones are warned about once
    // (`compat`: `prog`'s own table, then sbatch's).
    let warnings = crate::compat::check(prog, items.iter().map(|(name, _)| *name))?;
    eprint!("{warnings}");
    // pyxis's PYXIS_CONTAINER_* variables, for the options not given.
    let named: Vec<&str> = items.iter().map(|(n, _)| *n).collect();
    let mut items: Vec<(&'static str, Option<String>)> = items.to_vec();
    let from_env = proto::container::env_pairs(&named, |k| std::env::var(k).ok());
    for (name, v) in from_env.into_iter().rev() {
        if let Some(spec) = opts::SPECS.iter().find(|s| s.long == name) {
            let v = (spec.arg != crate::getopt::Arg::None).then_some(v);
            items.insert(0, (spec.long, v));
        }
    }
    // Input variables first: the command line overrides them.
    for (var, name) in input_env(prog) {
        let given = items.iter().any(|(n, _)| n == name);
        if let (false, Ok(v)) = (given, std::env::var(var)) {
            opts::apply(&mut st, name, Some(v), Level::Env, &ctx)
                .map_err(|e| relabel(prog, &e.stderr))?;
        }
    }
    for (name, v) in &items {
        if opts::SPECS.iter().any(|s| s.long == *name) {
            opts::apply(&mut st, name, v.clone(), Level::Cli, &ctx)
                .map_err(|e| relabel(prog, &e.stderr))?;
        }
    }
    opts::resolve_memory(&mut st).map_err(|e| relabel(prog, &e.stderr))?;
    if let Some(warning) = opts::fit_nodes_to_tasks(&mut st.desc) {
        eprintln!("{prog}: Warning: {warning}");
    }
    Ok(st)
}

/// The input environment variables `prog` reads (srun's and salloc's man
/// pages, "INPUT ENVIRONMENT VARIABLES"), each with the option it sets.
fn input_env(prog: &str) -> &'static [(&'static str, &'static str)] {
    match prog {
        "srun" => &[("SLURM_RESERVATION", "reservation")],
        "salloc" => &[("SALLOC_RESERVATION", "reservation")],
        _ => &[],
    }
}

/// sbatch's error text under another program's name.
pub fn relabel(prog: &str, text: &str) -> String {
    text.replace("sbatch:", &format!("{prog}:"))
}

/// The process environment as pairs.
pub fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Sets `k` in `env`, replacing an old value.
pub fn set_env(env: &mut Vec<(String, String)>, k: &str, v: &str) {
    match env.iter_mut().find(|(key, _)| key == k) {
        Some(slot) => slot.1 = v.to_string(),
        None => env.push((k.to_string(), v.to_string())),
    }
}

/// Asks for the job's state and allocation.
pub fn info(client: &client::Client, job_id: JobId) -> Result<AllocationInfo, client::ClientError> {
    match client.call(CtldRequest::AllocationInfo { job_id })? {
        CtldResponse::Allocation(a) => Ok(a),
        _ => Err(client::ClientError::Unexpected),
    }
}

/// Submits `desc` as an allocation and waits until it runs. Prints Slurm's
/// lines (`salloc: Granted job allocation N`, or srun's queued/allocated
/// lines). Interrupted while pending, it gives the job up. Err is the exit
/// status to return.
pub fn allocate(
    client: &client::Client,
    prog: &str,
    desc: proto::JobDesc,
    quiet: bool,
) -> Result<AllocationInfo, i32> {
    let job_id = match client.call(CtldRequest::Submit(Box::new(desc))) {
        Ok(CtldResponse::Submitted(r)) => r.job_id,
        Ok(_) => {
            eprintln!("{prog}: error: Unexpected message received");
            return Err(1);
        }
        Err(client::ClientError::Refused(e)) => {
            eprintln!(
                "{prog}: error: Job submit/allocate failed: {}",
                e.as_slurm_str()
            );
            return Err(1);
        }
        Err(e) => {
            eprintln!("{prog}: error: {e}");
            return Err(1);
        }
    };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores into an atomic.
        unsafe { libc::signal(sig, note_signal as *const () as libc::sighandler_t) };
    }
    let mut announced = false;
    let mut delay = Duration::from_millis(5);
    let result = loop {
        let a = match info(client, job_id) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{prog}: error: {e}");
                break Err(1);
            }
        };
        match a.state {
            JobState::Running => {
                if announced && !quiet {
                    eprintln!("{prog}: job {job_id} has been allocated resources");
                }
                if prog == "salloc" && !quiet {
                    eprintln!("salloc: Granted job allocation {job_id}");
                }
                break Ok(a);
            }
            JobState::Pending => {
                if !announced {
                    announced = true;
                    // Real srun said so for -n9 on 8 CPUs (PartitionConfig)
                    // and -N5 on 4 nodes (PartitionNodeLimit) alike.
                    if matches!(
                        a.reason,
                        PendingReason::PartitionConfig | PendingReason::PartitionNodeLimit
                    ) {
                        eprintln!(
                            "{prog}: {}",
                            SlurmError::RequestedPartConfigUnavailable.as_slurm_str()
                        );
                    }
                    if prog == "salloc" {
                        eprintln!("salloc: Pending job allocation {job_id}");
                    }
                    eprintln!("{prog}: job {job_id} queued and waiting for resources");
                }
            }
            _ => {
                eprintln!("{prog}: error: Job allocation {job_id} has been revoked.");
                break Err(1);
            }
        }
        if INTERRUPTED.load(Ordering::SeqCst) != 0 {
            let _ = client.call(CtldRequest::CompleteAllocation {
                job_id,
                exit: ExitCode::default(),
            });
            eprintln!("{prog}: Job allocation {job_id} has been revoked");
            eprintln!("{prog}: Force Terminated JobId={job_id}");
            break Err(1);
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(250));
    };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: back to the default disposition.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    result
}

/// Gives the allocation back with the command's exit.
pub fn release(client: &client::Client, job_id: JobId, exit: ExitCode) {
    let _ = client.call(CtldRequest::CompleteAllocation { job_id, exit });
}
