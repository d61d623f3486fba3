//! The one binary. `muster ctld|noded|restd|up|down|install-links|sim|explain|
//! check-config|keygen|completions|man` (parsed by clap: `args`), and the Slurm
//! commands by the name it is called with (`sbatch`, `squeue`, ... as
//! links made by `muster install-links DIR`), or as `muster sbatch ...`
//! (parsed by their own getopt tables, as Slurm's).

mod alloc;
mod args;
mod check;
#[cfg(test)]
mod compat_doc;
mod keygen;
mod local;
mod logs;
mod man;

#[global_allocator]
static ALLOC: alloc::Switch = alloc::Switch;

use std::path::Path;

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
    if name == "slurmrestd" {
        // `slurmrestd ...` (a link `muster install-links` makes): `muster restd ...`.
        args.insert(0, "restd".to_string());
    } else if name == "muster-cli" {
        // Handed over by the static muster-cli (its `hand_over`): the user
        // commands alone, never a daemon.
        std::process::exit(cli::dispatch_by_word(&args));
    }
    if let Some(sub) = args.first() {
        // The Slurm commands parse their own options, as Slurm's getopt.
        if let Some(code) = cli::dispatch(sub, args[1..].to_vec()) {
            std::process::exit(code);
        }
        // The node daemon's own programs (a job's supervisor, its forker,
        // a step's tasks), started by the daemon with these exact words:
        // straight to it, without the parser.
        if sub == "noded"
            && args.get(1).is_some_and(|f| {
                f == "--stepd"
                    || f == "--stepd-zygote"
                    || f == "--step-tasks"
                    || f == "--container-anchor"
            })
        {
            std::process::exit(noded::main(args[1..].to_vec()));
        }
        if sub == "version" {
            println!("muster {}", args::VERSION);
            std::process::exit(0);
        }
    }
    let parsed = match <args::Cli as clap::Parser>::try_parse_from(
        std::iter::once("muster".to_string()).chain(args),
    ) {
        Ok(p) => p,
        Err(e) => {
            // `--help` and `--version` print to stdout and succeed; a bad
            // command line exits 1, as it did before clap and as Slurm's
            // commands do.
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        }
    };
    std::process::exit(run(parsed.command));
}

/// Runs one of muster's own subcommands; the exit status.
fn run(command: args::Sub) -> i32 {
    use args::Sub;
    match command {
        Sub::Ctld(a) => {
            let conf = a.conf.clone().unwrap_or_else(logs::default_conf);
            logs::init(&logs::Daemon::Ctld, &conf, a.verbose);
            let mut words = Vec::new();
            if let Some(conf) = a.conf {
                words.push("-f".to_string());
                words.push(conf.display().to_string());
            }
            if a.foreground {
                words.push("-D".to_string());
            }
            if a.recover {
                words.push("-R".to_string());
            }
            if a.verbose > 0 {
                words.push(format!("-{}", "v".repeat(a.verbose.min(3) as usize)));
            }
            let verbose = a.verbose;
            ctld::on_reconfigure(Box::new(move |cfg| {
                logs::reload_level(&logs::Daemon::Ctld, cfg, verbose)
            }));
            ctld::main(words)
        }
        Sub::Noded(a) => {
            // Configless: the log settings of the copy an earlier start
            // cached (none at a host's first start: stderr), not a local
            // file the daemon will not read.
            let configless = a.conf_server.is_some()
                || std::env::var_os("SLURM_CONF_SERVER").is_some_and(|v| !v.is_empty());
            let conf = if configless {
                Path::new(proto::CONF_CACHE_LINK).join("slurm.conf")
            } else {
                a.conf.clone().unwrap_or_else(logs::default_conf)
            };
            let node = a.node_name.clone().unwrap_or_else(logs::short_hostname);
            logs::init(&logs::Daemon::Noded { node }, &conf, a.verbose);
            let mut words = Vec::new();
            if a.foreground {
                words.push("-D".to_string());
            }
            if a.verbose > 0 {
                words.push(format!("-{}", "v".repeat(a.verbose as usize)));
            }
            if let Some(node) = a.node_name {
                words.push("-N".to_string());
                words.push(node);
            }
            if let Some(conf) = a.conf {
                words.push("-f".to_string());
                words.push(conf.display().to_string());
            }
            if let Some(server) = a.conf_server {
                words.push(format!("--conf-server={server}"));
            }
            if let Some(info) = a.authinfo {
                words.push(format!("--authinfo={info}"));
            }
            noded::main(words)
        }
        Sub::Restd(a) => {
            let filter =
                tracing_subscriber::EnvFilter::try_from_env("MUSTER_LOG").unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new(if a.verbose > 0 { "debug" } else { "info" })
                });
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .try_init();
            let auth = match a.auth.as_deref().map(|s| (s, restd::AuthMode::parse(s))) {
                None => None,
                Some((_, Some(mode))) => Some(mode),
                Some((s, None)) => {
                    eprintln!("slurmrestd: error: unknown authentication plugin {s}: rest_auth/jwt or rest_auth/local");
                    return 1;
                }
            };
            let mut listen = Vec::new();
            for l in &a.listen {
                match restd::Listen::parse(l) {
                    Ok(l) => listen.push(l),
                    Err(e) => {
                        eprintln!("slurmrestd: error: {e}");
                        return 1;
                    }
                }
            }
            restd::main(restd::Options {
                conf: a.conf,
                auth,
                listen,
                ui_user_header: a.ui_user_header,
            })
        }
        Sub::Up(a) => local::up(&a),
        Sub::Down(a) => local::down(&a),
        Sub::InstallLinks(a) => local::install_links_cmd(&a.dir),
        Sub::Explain(a) => cli::explain::main(vec![a.job_id]),
        Sub::Sim(a) => {
            // The simulator allocates at every event: mimalloc (`alloc`).
            alloc::use_mimalloc();
            let args = a.to_sim();
            if sim::may_take_fast_path(&args) {
                alloc::no_huge_pages();
            }
            match sim::run(&args) {
                Ok(text) => {
                    print!("{text}");
                    0
                }
                Err(e) => {
                    eprintln!("muster sim: {e:#}");
                    1
                }
            }
        }
        Sub::CheckConfig(a) => check::main(&a),
        Sub::Keygen(a) => keygen::main(&a),
        Sub::Completions(a) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            match out.write_all(&man::completions(a.shell)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("muster completions: error: {e}");
                    1
                }
            }
        }
        Sub::Man(a) => match man::write_pages(&a.dir) {
            Ok(files) => {
                println!("wrote {} man pages into {}", files.len(), a.dir.display());
                0
            }
            Err(e) => {
                eprintln!("muster man: error: {e:#}");
                1
            }
        },
    }
}
