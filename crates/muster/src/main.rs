//! The one binary. `muster ctld|noded|up|down|install-links`, and the Slurm
//! commands by the name it is called with (`sbatch`, `squeue`, ... as
//! links made by `muster install-links DIR`), or as `muster sbatch ...`.

mod alloc;
mod local;

#[global_allocator]
static ALLOC: alloc::Switch = alloc::Switch;

use std::path::Path;

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MUSTER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

const USAGE: &str = "\
Usage: muster <command> [options]

Cluster:
  up [--detach] [--confine] [--state-dir DIR] [--nodes N]
                        start a local cluster (a controller and N node daemons
                        on loopback, as the current user); Ctrl-C stops it
  down [--state-dir DIR]
                        stop a cluster started with `muster up --detach`
  install-links DIR     make the Slurm command names links to this binary in DIR
  ctld [-f slurm.conf]  run the controller (slurmctld)
  noded [-N name] [-f slurm.conf]
                        run a node daemon (slurmd)

Beyond Slurm:
  explain JOBID         why a job waits, in plain words, and when it should start
  sim --trace FILE [--config slurm.conf] [--policy fcfs|easy|backfill]
                        replay a workload trace (SWF) through the scheduler
                        with a virtual clock; `muster sim --help` for more

Slurm commands (also available as `muster <name>`):
  sbatch srun salloc squeue sinfo scancel scontrol sacct sstat sacctmgr sreport sprio sshare
";

fn main() {
    // Listing commands exit quietly when their reader goes away (`squeue | head`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let mut args: Vec<String> = std::env::args().collect();
    let argv0 = args.remove(0);
    let name = Path::new(&argv0)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("muster")
        .to_string();
    if let Some(code) = cli::dispatch(&name, args.clone()) {
        std::process::exit(code);
    }
    if name == "muster-cli" {
        // Handed over by the static muster-cli (its `hand_over`): the user
        // commands alone, never a daemon.
        std::process::exit(cli::dispatch_by_word(&args));
    }
    let Some(sub) = args.first().cloned() else {
        eprint!("{USAGE}");
        std::process::exit(1);
    };
    let rest = args[1..].to_vec();
    if let Some(code) = cli::dispatch(&sub, rest.clone()) {
        std::process::exit(code);
    }
    let code = match sub.as_str() {
        "ctld" => {
            init_logging();
            ctld::main(rest)
        }
        "noded" => {
            init_logging();
            noded::main(rest)
        }
        "up" => local::up(rest),
        "down" => local::down(rest),
        "install-links" => local::install_links_cmd(rest),
        "explain" => cli::explain::main(rest),
        "sim" => {
            // The simulator allocates at every event: mimalloc (`alloc`).
            alloc::use_mimalloc();
            sim::main(rest)
        }
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            0
        }
        "-V" | "--version" | "version" => {
            println!("muster {}", env!("CARGO_PKG_VERSION"));
            0
        }
        other => {
            eprintln!("muster: unknown command {other:?}\n");
            eprint!("{USAGE}");
            1
        }
    };
    std::process::exit(code);
}
