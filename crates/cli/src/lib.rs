//! The Slurm commands: `sbatch`, `squeue`, `sinfo`, `scancel`, `scontrol`,
//! `sacct`, `sstat`, ...
//!
//! Each command module has `pub fn main(args: Vec<String>) -> i32` (args
//! without the program name) that talks to the controller through `client`,
//! and pure parsing and rendering functions that the golden tests call.
//! The query commands' `main` is `common::run`'s three steps (parse, ask,
//! show); Slurm's time and date forms are read only in `timespec`.
//! Output text, error text and exit codes follow Slurm 22.05 byte for byte
//! (see `tests/golden/`).

pub mod alloc;
pub mod common;
pub mod compat;
pub mod explain;
pub mod getopt;
pub mod sacct;
pub mod sacctmgr;
pub mod salloc;
pub mod sattach;
pub mod sbatch;
pub mod sbcast;
pub mod scancel;
pub mod scontrol;
pub mod sdiag;
pub mod sinfo;
pub mod sprio;
pub mod squeue;
pub mod sreport;
pub mod srun;
pub mod sshare;
pub mod sstat;
mod timespec;

/// Runs the Slurm command `name` (as found in `argv[0]`) with `args`.
/// Returns None when `name` is not a command this build provides.
pub fn dispatch(name: &str, args: Vec<String>) -> Option<i32> {
    Some(match name {
        "sbatch" => sbatch::main(args),
        "squeue" => squeue::main(args),
        "sinfo" => sinfo::main(args),
        "scancel" => scancel::main(args),
        "scontrol" => scontrol::main(args),
        "sacct" => sacct::main(args),
        "sacctmgr" => sacctmgr::main(args),
        "sreport" => sreport::main(args),
        "sdiag" => sdiag::main(args),
        "sprio" => sprio::main(args),
        "sshare" => sshare::main(args),
        "sstat" => sstat::main(args),
        "srun" => srun::main(args),
        "salloc" => salloc::main(args),
        "sbcast" => sbcast::main(args),
        "sattach" => sattach::main(args),
        _ => return None,
    })
}

/// `muster-cli <command> [args]`: the user commands by word, and nothing
/// else (no daemons). Both binaries answer this way when called as
/// `muster-cli`: `muster` is handed such a command line where the static
/// `muster-cli` cannot serve it (libmunge, name services).
pub fn dispatch_by_word(args: &[String]) -> i32 {
    match args.first() {
        Some(sub) => match dispatch(sub, args[1..].to_vec()) {
            Some(code) => code,
            None => {
                eprintln!(
                    "muster-cli: unknown command {sub:?} (one of: {})",
                    COMMANDS.join(" ")
                );
                1
            }
        },
        None => {
            eprintln!(
                "Usage: muster-cli <command> [options]\n  commands: {}",
                COMMANDS.join(" ")
            );
            1
        }
    }
}

/// The options command `name`'s parser accepts (its getopt table), for
/// man pages and completions; None for a name not in [`COMMANDS`].
pub fn options(name: &str) -> Option<Vec<getopt::OptSpec>> {
    Some(match name {
        "sbatch" => sbatch::opts::SPECS.to_vec(),
        "srun" => srun::specs(),
        "salloc" => salloc::specs(),
        "squeue" => squeue::OPTIONS.to_vec(),
        "sinfo" => sinfo::OPTS.to_vec(),
        "scancel" => scancel::OPTIONS.to_vec(),
        "scontrol" => scontrol::OPTS.to_vec(),
        "sacct" => sacct::OPTIONS.to_vec(),
        "sacctmgr" => sacctmgr::OPTIONS.to_vec(),
        "sreport" => sreport::OPTIONS.to_vec(),
        "sdiag" => sdiag::OPTIONS.to_vec(),
        "sprio" => sprio::OPTIONS.to_vec(),
        "sshare" => sshare::OPTIONS.to_vec(),
        "sstat" => sstat::OPTIONS.to_vec(),
        "sbcast" => sbcast::OPTIONS.to_vec(),
        "sattach" => sattach::OPTIONS.to_vec(),
        _ => return None,
    })
}

/// The command names `muster install-links` creates.
pub const COMMANDS: &[&str] = &[
    "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sacctmgr", "sreport", "sprio",
    "sshare", "sstat", "srun", "salloc", "sdiag", "sbcast", "sattach",
];
