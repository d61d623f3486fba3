//! The Slurm user commands alone (`sbatch`, `squeue`, ...), without the
//! daemons, the local cluster and the simulator: a much smaller program, so
//! a command starts in a fraction of the time the whole `muster` binary
//! takes (fewer pages to map and relocate). `muster install-links DIR`
//! points the command names here when it lies beside `muster`.
//!
//! Called by a command name (a link), or as `muster-cli <command> ...`.

use std::path::Path;

fn main() {
    // Listing commands exit quietly when their reader goes away (`squeue | head`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let mut args: Vec<String> = std::env::args().collect();
    let argv0 = if args.is_empty() {
        String::new()
    } else {
        args.remove(0)
    };
    let name = Path::new(&argv0)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string();
    if let Some(code) = cli::dispatch(&name, args.clone()) {
        std::process::exit(code);
    }
    let code = match args.first() {
        Some(sub) => match cli::dispatch(sub, args[1..].to_vec()) {
            Some(code) => code,
            None => {
                eprintln!(
                    "muster-cli: unknown command {sub:?} (one of: {})",
                    cli::COMMANDS.join(" ")
                );
                1
            }
        },
        None => {
            eprintln!(
                "Usage: muster-cli <command> [options]\n  commands: {}",
                cli::COMMANDS.join(" ")
            );
            1
        }
    };
    std::process::exit(code);
}
