//! What sbatch, srun and salloc do with each Slurm option: implement it,
//! ignore it with a warning, or refuse it. One table per command decides,
//! the parsers consult it, and docs/compatibility.md is generated from it
//! (`compat_doc`'s test fails when the file is stale).
//!
//! The rule: an option that changes where, when or as whom a job runs is
//! implemented or refused, never ignored. Only a hint that cannot change
//! that (profiling, accounting tags) is warned about and ignored.
//!
//! ```text
//!  getopt item --disposition(cmd, long)--> Implemented: apply
//!                                      --> Warn(why):   "sbatch: warning: --X is ignored here: why", once
//!                                      --> Refuse(why): "sbatch: error: --X is not supported here: why", exit 1
//! ```

use crate::getopt::OptSpec;

/// What a command does with one option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Acted on as Slurm's man page says (possibly with differences that
    /// docs/compatibility.md's prose names).
    Implemented,
    /// Accepted and ignored with a warning on stderr; the text says why.
    /// Only for hints that cannot change where, when or as whom a job runs.
    Warn(&'static str),
    /// Refused with an error and exit status 1; the text says why.
    Refuse(&'static str),
}

use Disposition::{Implemented as I, Refuse as R, Warn as W};

/// sbatch's options (every entry of `sbatch::opts::SPECS`). salloc and srun
/// take their job options from this table too, less what their own tables
/// override.
pub const SBATCH: &[(&str, Disposition)] = &[
    ("account", I),
    ("acctg-freq", I),
    ("array", I),
    (
        "batch",
        R("node features for the batch step alone are not modelled"),
    ),
    ("bb", R("muster has no burst buffer plugin")),
    ("bbf", R("muster has no burst buffer plugin")),
    ("begin", I),
    ("chdir", I),
    ("cluster", I),
    ("cluster-constraint", R("muster has no federation")),
    ("clusters", I),
    ("comment", I),
    ("constraint", I),
    (
        "container",
        R("OCI bundles are not run by muster; pyxis's --container-image is"),
    ),
    ("container-entrypoint", I),
    ("container-entrypoint-log", I),
    ("container-env", I),
    ("container-image", I),
    ("container-mount-home", I),
    ("container-mounts", I),
    ("container-name", I),
    ("container-readonly", I),
    ("container-remap-root", I),
    ("container-save", I),
    ("container-workdir", I),
    ("container-writable", I),
    ("contiguous", R("nodes are not chosen for contiguity")),
    ("core-spec", R("no cores are reserved for system use")),
    (
        "cores-per-socket",
        R("nodes are not chosen by socket layout"),
    ),
    ("cpu-freq", W("CPU frequency is not controlled")),
    ("cpus-per-gpu", I),
    ("cpus-per-task", I),
    ("deadline", I),
    ("delay-boot", W("nodes are never rebooted for a job")),
    ("dependency", I),
    ("distribution", R("give -m/--distribution to srun")),
    ("error", I),
    ("exclude", I),
    ("exclusive", I),
    ("export", I),
    ("export-file", I),
    (
        "extra-node-info",
        R("nodes are not chosen by socket layout"),
    ),
    ("get-user-env", I),
    ("gid", I),
    ("gpu-bind", R("give --gpu-bind to srun")),
    ("gpu-freq", W("GPU frequency is not controlled")),
    ("gpus", I),
    ("gpus-per-node", I),
    ("gpus-per-socket", R("GPUs are not allocated per socket")),
    ("gpus-per-task", I),
    ("gres", I),
    ("gres-flags", I),
    ("help", I),
    ("hint", I),
    ("hold", I),
    ("ignore-pbs", I),
    ("input", I),
    ("job-name", I),
    ("kill-on-invalid-dep", I),
    ("licenses", I),
    ("mail-type", I),
    ("mail-user", I),
    ("mcs-label", R("muster has no MCS plugin")),
    ("mem", I),
    ("mem-bind", W("memory is not bound to NUMA nodes")),
    ("mem-per-cpu", I),
    ("mem-per-gpu", I),
    ("mincpus", R("nodes are not chosen by a minimum CPU count")),
    ("network", R("muster has no switch plugin")),
    ("nice", I),
    (
        "no-kill",
        R("jobs always end when one of their nodes fails"),
    ),
    ("no-container-entrypoint", I),
    ("no-container-mount-home", I),
    ("no-container-remap-root", I),
    ("no-requeue", I),
    ("nodefile", I),
    ("nodelist", I),
    ("nodes", I),
    ("ntasks", I),
    ("ntasks-per-core", I),
    ("ntasks-per-gpu", R("give --ntasks-per-gpu to srun")),
    ("ntasks-per-node", I),
    ("ntasks-per-socket", R("tasks are not placed per socket")),
    ("open-mode", I),
    ("output", I),
    ("overcommit", R("jobs get a CPU per task")),
    ("oversubscribe", I),
    ("parsable", I),
    ("partition", I),
    ("power", R("muster has no power plugin")),
    ("prefer", W("preferred features are not weighed")),
    (
        "priority",
        R("a job's priority is set by the priority plugin only"),
    ),
    ("profile", W("no AcctGatherProfile plugin")),
    ("propagate", R("resource limits are not propagated")),
    ("qos", I),
    ("quiet", I),
    ("reboot", W("nodes are never rebooted for a job")),
    ("requeue", I),
    ("reservation", I),
    ("segment", I),
    ("signal", I),
    (
        "sockets-per-node",
        R("nodes are not chosen by socket layout"),
    ),
    ("spread-job", R("nodes are not chosen to spread a job")),
    ("switches", I),
    ("test-only", I),
    ("thread-spec", R("no threads are reserved for system use")),
    ("threads-per-core", I),
    ("time", I),
    ("time-min", I),
    ("tmp", R("temporary disk space is not a resource")),
    ("tres-per-task", R("use --cpus-per-task or --gpus-per-task")),
    ("uid", I),
    ("usage", I),
    ("use-min-nodes", R("a node count range is not minimised")),
    ("verbose", W("the commands print no debug messages")),
    ("version", I),
    ("wait", I),
    ("wait-all-nodes", I),
    ("wckey", W("wckeys are not tracked")),
    ("wrap", I),
];

/// srun's own options and where srun's answer differs from sbatch's.
pub const SRUN: &[(&str, Disposition)] = &[
    ("bcast", I),
    ("compress", W("--bcast copies are sent uncompressed")),
    ("cpu-bind", I),
    ("cpu_bind", I),
    ("distribution", I),
    ("epilog", I),
    ("exact", I),
    ("external-launcher", I),
    ("gpu-bind", I),
    ("immediate", R("an allocation always waits in the queue")),
    ("jobid", I),
    ("kill-on-bad-exit", I),
    ("label", I),
    ("mpi", I),
    ("multi-prog", I),
    ("no-allocate", R("steps always run in an allocation")),
    ("ntasks-per-gpu", I),
    ("overcommit", I),
    ("overlap", I),
    (
        "preserve-env",
        R("SLURM_NNODES and SLURM_NTASKS are always set from the step"),
    ),
    ("prolog", I),
    ("pty", I),
    ("quit-on-interrupt", R("one Ctrl-C does not end the step")),
    ("relative", R("steps are not placed relative to a node")),
    (
        "resv-ports",
        W("no ports are reserved; SLURM_STEP_RESV_PORTS is not set"),
    ),
    ("slurmd-debug", W("the node daemons' log level is fixed")),
    ("task-epilog", I),
    ("task-prolog", I),
    (
        "test-only",
        R("srun has no estimate; give --test-only to sbatch"),
    ),
    ("unbuffered", I),
    ("wait", I),
    ("whole", I),
    ("x11", R("muster does not forward X11")),
];

/// salloc's own options and where salloc's answer differs from sbatch's.
pub const SALLOC: &[(&str, Disposition)] = &[
    ("bell", W("salloc does not ring the bell")),
    ("immediate", R("an allocation always waits in the queue")),
    (
        "kill-command",
        R("salloc signals no command when the allocation ends"),
    ),
    ("no-bell", I),
    ("no-shell", I),
    (
        "test-only",
        R("salloc has no estimate; give --test-only to sbatch"),
    ),
    ("wait", R("an allocation always waits in the queue")),
];

/// sattach's options (its own table: no job options).
pub const SATTACH: &[(&str, Disposition)] = &[
    (
        "input-filter",
        R("stdin goes to every task of the step that reads it"),
    ),
    (
        "layout",
        R("sattach does not print the step's layout; see `scontrol show step`"),
    ),
    ("pty", R("sattach does not attach to a step's terminal")),
];

/// The commands with a disposition table.
pub const COMMANDS: &[&str] = &["sbatch", "srun", "salloc", "sattach"];

/// What `cmd` does with its option `long`. Options of another command's
/// table, or of no table, are Implemented (the getopt table is the judge
/// of which options exist).
pub fn disposition(cmd: &str, long: &str) -> Disposition {
    let own: &[(&str, Disposition)] = match cmd {
        "srun" => SRUN,
        "salloc" => SALLOC,
        "sattach" => {
            return SATTACH
                .iter()
                .find(|(name, _)| *name == long)
                .map_or(I, |(_, d)| *d)
        }
        _ => &[],
    };
    own.iter()
        .chain(SBATCH)
        .find(|(name, _)| *name == long)
        .map_or(I, |(_, d)| *d)
}

/// The option as Slurm writes it in messages: `--mail-type`, or `-L,
/// --licenses` where it has a letter.
fn shown(spec: Option<&OptSpec>, long: &str) -> String {
    match spec.and_then(|s| s.short) {
        Some(c) => format!("-{c}/--{long}"),
        None => format!("--{long}"),
    }
}

/// The warning line for an ignored option, with `prog`'s prefix.
pub fn warning_line(prog: &str, long: &str, why: &str) -> String {
    let spec = crate::options(prog).and_then(|v| v.into_iter().find(|s| s.long == long));
    format!(
        "{prog}: warning: {} is ignored here: {why}\n",
        shown(spec.as_ref(), long)
    )
}

/// The error line for a refused option, with `prog`'s prefix.
pub fn refusal_line(prog: &str, long: &str, why: &str) -> String {
    let spec = crate::options(prog).and_then(|v| v.into_iter().find(|s| s.long == long));
    format!(
        "{prog}: error: {} is not supported here: {why}\n",
        shown(spec.as_ref(), long)
    )
}

/// Checks the options `prog` was given (in order): Err with the refusal
/// line for the first refused one; else the warning lines, one per
/// ignored option however often it was given.
pub fn check<'a>(prog: &str, longs: impl IntoIterator<Item = &'a str>) -> Result<String, String> {
    let mut warned: Vec<&str> = Vec::new();
    let mut out = String::new();
    for long in longs {
        match disposition(prog, long) {
            Disposition::Implemented => {}
            Disposition::Warn(why) => {
                if !warned.contains(&long) {
                    warned.push(long);
                    out.push_str(&warning_line(prog, long, why));
                }
            }
            Disposition::Refuse(why) => return Err(refusal_line(prog, long, why)),
        }
    }
    Ok(out)
}

/// The generated Markdown table of `cmd`'s options: one row per option
/// in its getopt table, with counts per disposition above it.
pub fn markdown(cmd: &str) -> String {
    let mut specs = crate::options(cmd).unwrap_or_default();
    specs.sort_by_key(|s| s.long);
    let rows: Vec<(String, Disposition)> = specs
        .iter()
        .map(|s| (shown(Some(s), s.long), disposition(cmd, s.long)))
        .collect();
    let count = |f: fn(&Disposition) -> bool| rows.iter().filter(|(_, d)| f(d)).count();
    let mut out = format!(
        "{} options: {} implemented, {} ignored with a warning, {} refused.\n\n",
        rows.len(),
        count(|d| matches!(d, Disposition::Implemented)),
        count(|d| matches!(d, Disposition::Warn(_))),
        count(|d| matches!(d, Disposition::Refuse(_))),
    );
    out.push_str("| option | decision |\n|---|---|\n");
    for (name, d) in rows {
        let decision = match d {
            Disposition::Implemented => "implemented".to_string(),
            Disposition::Warn(why) => format!("warned and ignored: {why}"),
            Disposition::Refuse(why) => format!("refused: {why}"),
        };
        out.push_str(&format!("| `{name}` | {decision} |\n"));
    }
    out
}

#[cfg(test)]
mod tests;
