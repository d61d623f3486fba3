//! `muster up`, `muster down` and `muster install-links`: a whole cluster on
//! this machine, as the current user, with nothing to edit.
//!
//! `up` writes a slurm.conf for this host into the state directory the first
//! time (free loopback ports, one partition of N nodes that each get this
//! host's CPUs, `SlurmdParameters=config_overrides` so several node daemons
//! share one host as Slurm's multiple-slurmd does) and a cluster key
//! (`muster.key`, mode 0600, named by `AuthInfo`), then starts the
//! controller and the node daemons as child processes, each in its own
//! process group so that Ctrl-C reaches only `up`, which then stops them in
//! order.
//!
//! Confinement: as root, where this host's cgroups can be written, the
//! slurm.conf `up` writes says `ProctrackType=proctrack/cgroup` and
//! `TaskPlugin=task/cgroup,task/affinity`, and a cgroup.conf with
//! `ConstrainCores=yes` goes beside it, so jobs run in cgroups on their
//! CPUs and their tasks are bound; otherwise `up` says
//! once that jobs are not confined and runs them as before. `--confine`
//! makes a missing cgroup setup an error.

use anyhow::{bail, Context};
use proto::CtldRequest;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct UpOptions {
    detach: bool,
    /// `--confine`: jobs must run in cgroups.
    confine: bool,
    state_dir: PathBuf,
    n_nodes: u32,
}

impl UpOptions {
    fn from_up(a: &crate::args::UpArgs) -> UpOptions {
        UpOptions {
            detach: a.detach,
            confine: a.confine,
            state_dir: a
                .state_dir
                .clone()
                .unwrap_or_else(client::default_state_dir),
            n_nodes: a.nodes,
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

fn host_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

fn host_memory_mb() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb / 1024)
        .unwrap_or(4096)
}

/// The cluster key in the state directory (created by `up`, mode 0600).
const KEY_FILE: &str = "muster.key";
/// The node daemons' credential socket in the state directory.
const SOCKET_FILE: &str = "auth.sock";
/// The JWT key in the state directory (created by `up`, mode 0600), for
/// `scontrol token` and the REST daemon.
const JWT_KEY_FILE: &str = "jwt.key";

/// The slurm.conf lines that enable JWTs with [`JWT_KEY_FILE`].
fn jwt_lines(dir: &Path) -> String {
    format!(
        "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}/{JWT_KEY_FILE}\n",
        dir.display()
    )
}

/// The default slurm.conf for a local cluster on this host.
fn default_config(dir: &Path, n_nodes: u32) -> anyhow::Result<String> {
    let user = client::current_identity().user;
    let host = client::current_identity().host;
    let ctld_port = free_port()?;
    let cpus = host_cpus();
    // Each virtual node offers all of the host's CPUs and a share of its
    // memory; jobs get DefMemPerCPU unless they ask, so many fit at once.
    let mem = (host_memory_mb() / n_nodes as u64).max(256);
    let mut text = format!(
        "# Written by `muster up` for a local cluster on {host}; edit freely.\n\
         ClusterName=muster\n\
         SlurmctldHost={host}(127.0.0.1)\n\
         SlurmctldPort={ctld_port}\n\
         SlurmUser={user}\n\
         StateSaveLocation={dir}/ctld\n\
         SlurmdSpoolDir={dir}/spool/%n\n\
         SlurmdParameters=config_overrides\n\
         AuthType=auth/muster\n\
         AuthInfo=key={dir}/{KEY_FILE},socket={dir}/{SOCKET_FILE}\n\
         {jwt}\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core_Memory\n\
         DefMemPerCPU=100\n\
         SlurmdTimeout=300\n\
         KillWait=5\n\
         MinJobAge=300\n\
         GresTypes=gpu\n",
        dir = dir.display(),
        jwt = jwt_lines(dir),
    );
    for i in 1..=n_nodes {
        text.push_str(&format!(
            "NodeName=node{i} NodeAddr=127.0.0.1 NodeHostname={host} Port={} CPUs={cpus} RealMemory={mem} State=UNKNOWN\n",
            free_port()?
        ));
    }
    text.push_str(&format!(
        "PartitionName=debug Nodes=node[1-{n_nodes}] Default=YES MaxTime=INFINITE State=UP\n"
    ));
    Ok(text)
}

/// The program the command names should run: `muster-cli` beside this
/// binary (the user commands alone, which start several times faster than
/// the whole of `muster`), or this binary itself where there is none.
pub fn commands_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this program")?;
    Ok(commands_binary_beside(&exe))
}

/// [`commands_binary`] for the `muster` binary at `exe`. A `muster-cli`
/// built well before `exe` is passed over: `cargo run -p muster` builds
/// only `muster`, and one left from an older build may not speak this
/// build's binary requests (a submission's fields are positional there).
fn commands_binary_beside(exe: &Path) -> PathBuf {
    let cli = exe.with_file_name(CLI_BINARY);
    let built = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let current = match (built(&cli), built(exe)) {
        (Some(cli_at), Some(exe_at)) => cli_at + STALE_CLI > exe_at,
        _ => false,
    };
    if cli.is_file() && current {
        cli
    } else {
        exe.to_path_buf()
    }
}

/// How much older than `muster` its `muster-cli` may be (the two are
/// linked one after the other by the same build).
const STALE_CLI: std::time::Duration = std::time::Duration::from_secs(600);

/// The name of the user commands' own binary (`src/bin/muster-cli.rs`).
const CLI_BINARY: &str = "muster-cli";

/// Makes `DIR/<command>` links for every Slurm command, to
/// [`commands_binary`].
pub fn install_links(dir: &Path) -> anyhow::Result<()> {
    let exe = commands_binary()?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // The daemons' names link to muster itself: muster-cli runs the user
    // commands alone.
    let daemon = std::env::current_exe().context("finding this program")?;
    let links = cli::COMMANDS
        .iter()
        .map(|name| (*name, &exe))
        .chain(DAEMON_LINKS.iter().map(|name| (*name, &daemon)));
    for (name, target) in links {
        let link = dir.join(name);
        if link.symlink_metadata().is_ok() {
            fs::remove_file(&link).with_context(|| format!("replacing {}", link.display()))?;
        }
        std::os::unix::fs::symlink(target, &link)
            .with_context(|| format!("linking {}", link.display()))?;
    }
    Ok(())
}

/// The daemons that answer to Slurm's name for them through a link.
pub const DAEMON_LINKS: &[&str] = &["slurmrestd"];

/// `muster install-links DIR`.
pub fn install_links_cmd(dir: &Path) -> i32 {
    match install_links(dir) {
        Ok(()) => {
            println!(
                "linked {} {} into {}",
                cli::COMMANDS.join(" "),
                DAEMON_LINKS.join(" "),
                dir.display()
            );
            0
        }
        Err(e) => {
            eprintln!("muster install-links: error: {e:#}");
            1
        }
    }
}

fn client_for(conf_path: &Path) -> anyhow::Result<client::Client> {
    let loaded =
        conf::load(conf_path).with_context(|| format!("reading {}", conf_path.display()))?;
    Ok(client::Client::new(
        loaded.config,
        client::current_identity(),
    ))
}

fn spawn_daemon(exe: &Path, args: &[&str], log: &Path, detach: bool) -> anyhow::Result<Child> {
    let out = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    use std::os::unix::process::CommandExt;
    if detach {
        // A new session: the daemons outlive this terminal.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    } else {
        cmd.process_group(0);
    }
    cmd.spawn()
        .with_context(|| format!("starting {}", exe.display()))
}

/// How long `up` waits for every node daemon it started to register.
const REGISTER_LIMIT: Duration = Duration::from_secs(30);

/// What a node daemon logs once the controller took its registration.
const REGISTERED_LINE: &str = "registered with the controller";

/// Waits until every node daemon `up` started has registered with the
/// controller, and every daemon it started still runs. A daemon that exits
/// meanwhile (its port taken by an old one, say) fails the start at once,
/// named with its exit status and the last line of its log.
///
/// A registration counts only where the daemon this `up` started logged
/// it (past `log_starts`, each log's length before the start): the
/// controller's node states come back from its saved state and may show
/// an earlier run's registration.
fn wait_for_nodes(
    children: &mut [(String, Child)],
    log_starts: &[(String, u64)],
    dir: &Path,
) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        for (name, ch) in children.iter_mut() {
            if let Ok(Some(status)) = ch.try_wait() {
                let log = daemon_log(dir, name);
                bail!(
                    "{} {name} exited ({status}): {}\n(see {})",
                    if name == "ctld" {
                        "the controller"
                    } else {
                        "node daemon"
                    },
                    last_line(&log),
                    log.display()
                );
            }
        }
        let waiting: Vec<&str> = log_starts
            .iter()
            .filter(|(name, from)| {
                !log_since(&daemon_log(dir, name), *from).contains(REGISTERED_LINE)
            })
            .map(|(name, _)| name.as_str())
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= REGISTER_LIMIT {
            bail!(
                "not registered with the controller after {} s: {}; see {}",
                REGISTER_LIMIT.as_secs(),
                waiting.join(", "),
                dir.join("log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A log's text from byte `from` on.
fn log_since(path: &Path, from: u64) -> String {
    let text = fs::read(path).unwrap_or_default();
    let from = (from as usize).min(text.len());
    String::from_utf8_lossy(&text[from..]).into_owned()
}

/// A daemon's log file in the state directory.
fn daemon_log(dir: &Path, name: &str) -> PathBuf {
    if name == "ctld" {
        dir.join("log/ctld.log")
    } else {
        dir.join(format!("log/noded-{name}.log"))
    }
}

/// The last non-empty line of a log, which says why a daemon stopped.
fn last_line(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(its log is empty)")
        .trim()
        .to_string()
}

fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn up_inner(o: &UpOptions) -> anyhow::Result<()> {
    let dir = &o.state_dir;
    fs::create_dir_all(dir.join("log")).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let conf_path = dir.join("slurm.conf");
    // The daemons sign and check every request with this key; the commands
    // of the user who owns the directory sign with it too.
    let key_path = dir.join(KEY_FILE);
    if !key_path.exists() {
        auth::create_key(&key_path).context("creating the cluster key")?;
    }
    // `scontrol token` and the REST daemon sign and check with this key.
    let jwt_key = dir.join(JWT_KEY_FILE);
    if !jwt_key.exists() {
        auth::create_key(&jwt_key).context("creating the JWT key")?;
    }
    if conf_path.exists() {
        // A cluster made before `up` enabled JWTs gets them now.
        let text = fs::read_to_string(&conf_path)
            .with_context(|| format!("reading {}", conf_path.display()))?;
        if !text.lines().any(|l| {
            l.trim_start()
                .to_ascii_lowercase()
                .starts_with("authalttypes")
        }) {
            let mut f = fs::OpenOptions::new().append(true).open(&conf_path)?;
            write!(
                f,
                "# Added by `muster up` for the REST API:\n{}",
                jwt_lines(&dir)
            )?;
        }
    }
    if !conf_path.exists() {
        let mut text = default_config(&dir, o.n_nodes)?;
        match cgroups_writable() {
            Ok(()) => {
                // task/cgroup holds each job to its cores (cgroup.conf
                // `ConstrainCores`), task/affinity binds its tasks.
                text.push_str(
                    "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n",
                );
                let cgroup_conf = dir.join("cgroup.conf");
                fs::write(&cgroup_conf, DEFAULT_CGROUP_CONF)
                    .with_context(|| format!("writing {}", cgroup_conf.display()))?;
            }
            Err(why) if o.confine => bail!("--confine: jobs cannot be confined: {why}"),
            Err(_) => {}
        }
        fs::write(&conf_path, text).with_context(|| format!("writing {}", conf_path.display()))?;
    }
    let loaded =
        conf::load(&conf_path).with_context(|| format!("reading {}", conf_path.display()))?;
    let cfg = loaded.config;
    match (cfg.confinement().is_some(), cgroups_writable()) {
        (true, Ok(())) => {}
        (true, Err(why)) | (false, Err(why)) if o.confine => {
            bail!("--confine: jobs cannot be confined: {why}")
        }
        (false, Ok(())) if o.confine => bail!(
            "--confine: {} does not confine jobs (it needs ProctrackType=proctrack/cgroup and a cgroup.conf beside it)",
            conf_path.display()
        ),
        (true, Err(why)) | (false, Err(why)) => {
            eprintln!("muster: jobs are not confined: {why}")
        }
        (false, Ok(())) => eprintln!(
            "muster: jobs are not confined: {} has no cgroup setup",
            conf_path.display()
        ),
    }
    if !cfg!(feature = "pmix") {
        eprintln!(
            "muster: MPI: --mpi=pmi2 only; this build has no PMIx (--mpi=pmix fails): \
             build with --features pmix (needs libpmix-dev)"
        );
    }
    let c = client_for(&conf_path)?;
    if c.call(CtldRequest::Ping).is_ok() {
        bail!(
            "a controller already answers on port {} (run `muster down --state-dir {}` first)",
            cfg.slurmctld_port,
            dir.display()
        );
    }
    let bin = dir.join("bin");
    install_links(&bin)?;
    let exe = std::env::current_exe()?;
    let conf_s = conf_path.display().to_string();
    let mut children: Vec<(String, Child)> = Vec::new();
    let ctld = spawn_daemon(
        &exe,
        &["ctld", "-f", &conf_s],
        &dir.join("log/ctld.log"),
        o.detach,
    )?;
    children.push(("ctld".into(), ctld));
    if !wait_until(Duration::from_secs(15), || {
        c.call(CtldRequest::Ping).is_ok()
    }) {
        stop_children(&mut children);
        bail!(
            "the controller did not start; see {}",
            dir.join("log/ctld.log").display()
        );
    }
    let mut log_starts = Vec::new();
    for n in &cfg.nodes {
        let log = daemon_log(&dir, &n.name);
        let len = fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        log_starts.push((n.name.clone(), len));
        let child = spawn_daemon(
            &exe,
            &["noded", "-N", &n.name, "-f", &conf_s],
            &log,
            o.detach,
        )?;
        children.push((n.name.clone(), child));
    }
    if let Err(e) = wait_for_nodes(&mut children, &log_starts, &dir) {
        stop_children(&mut children);
        return Err(e);
    }
    // The REST API, on a free loopback port, as the cluster's user.
    let rest_port = free_port()?;
    let rest_addr = format!("127.0.0.1:{rest_port}");
    let restd = spawn_daemon(
        &exe,
        &["restd", "-f", &conf_s, "-a", "rest_auth/jwt", &rest_addr],
        &dir.join("log/restd.log"),
        o.detach,
    )?;
    children.push(("restd".into(), restd));
    let rest_up = wait_until(Duration::from_secs(15), || {
        std::net::TcpStream::connect(&rest_addr).is_ok()
    });
    if !rest_up {
        stop_children(&mut children);
        bail!(
            "the REST daemon did not start; see {}",
            dir.join("log/restd.log").display()
        );
    }
    let pids: String = children
        .iter()
        .map(|(name, ch)| format!("{} {}\n", ch.id(), name))
        .collect();
    fs::write(dir.join("pids"), pids)?;
    let nodes: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "muster: cluster \"{}\" is up: controller on 127.0.0.1:{}, {} nodes ({}), state in {}",
        cfg.cluster_name,
        cfg.slurmctld_port,
        nodes.len(),
        hostlist::compress(&nodes),
        dir.display()
    )?;
    writeln!(out, "To use the Slurm commands from another shell:")?;
    writeln!(
        out,
        "    export PATH=\"{}:$PATH\" SLURM_CONF=\"{}\"",
        bin.display(),
        conf_s
    )?;
    writeln!(out, "    sbatch --wrap 'hostname'; squeue; sinfo")?;
    writeln!(
        out,
        "REST API (slurmrestd v0.0.38): http://{rest_addr}/slurm/v0.0.38/ping"
    )?;
    writeln!(
        out,
        "    export $(scontrol token); curl -H \"X-SLURM-USER-TOKEN: $SLURM_JWT\" http://{rest_addr}/slurm/v0.0.38/jobs"
    )?;
    writeln!(
        out,
        "Dashboard: http://{rest_addr}/ (log in with the token `scontrol token` prints; docs/dashboard.md)"
    )?;
    if o.detach {
        writeln!(
            out,
            "Stop it with: {} down --state-dir {}",
            exe.display(),
            dir.display()
        )?;
        return Ok(());
    }
    writeln!(out, "Press Ctrl-C to stop the cluster.")?;
    drop(out);
    wait_for_interrupt(&mut children);
    eprintln!("muster: stopping the cluster");
    // The REST daemon does not end with the controller: told first.
    stop_named(&mut children, "restd");
    let _ = c.call(CtldRequest::Shutdown);
    let stopped = wait_until(Duration::from_secs(10), || {
        children
            .iter_mut()
            .all(|(_, ch)| ch.try_wait().ok().flatten().is_some())
    });
    if !stopped {
        stop_children(&mut children);
    }
    let _ = fs::remove_file(dir.join("pids"));
    Ok(())
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Blocks until SIGINT/SIGTERM, or until a daemon dies on its own.
fn wait_for_interrupt(children: &mut [(String, Child)]) {
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    loop {
        if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        for (name, ch) in children.iter_mut() {
            if let Ok(Some(status)) = ch.try_wait() {
                eprintln!("muster: {name} exited ({status}); stopping the cluster");
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stops the child named `name` (SIGTERM) and waits for it.
fn stop_named(children: &mut [(String, Child)], name: &str) {
    for (_, ch) in children.iter_mut().filter(|(n, _)| n == name) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(ch.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = ch.wait();
    }
}

fn stop_children(children: &mut [(String, Child)]) {
    for (_, ch) in children.iter_mut() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(ch.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    for (_, ch) in children.iter_mut() {
        let _ = ch.wait();
    }
}

/// The cgroup.conf `up` writes where it confines jobs: the cgroup version
/// this host has, the daemons' scope made by mkdir (no systemd needed).
const DEFAULT_CGROUP_CONF: &str = "# Written by `muster up`: jobs run in cgroups; edit freely.\n\
CgroupPlugin=autodetect\n\
IgnoreSystemd=yes\n\
ConstrainCores=yes\n";

/// Whether this process can make cgroups for jobs: root, with the v1
/// freezer hierarchy or a unified (v2) hierarchy at /sys/fs/cgroup. What
/// is missing otherwise.
fn cgroups_writable() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("cgroups need root (run `muster up` as root to confine jobs)".into());
    }
    let root = Path::new("/sys/fs/cgroup");
    let candidates = [
        root.join("cgroup.controllers"),
        root.join("freezer/cgroup.procs"),
    ];
    if !candidates.iter().any(|p| p.exists()) {
        return Err(format!(
            "no cgroup v2 hierarchy and no v1 freezer hierarchy under {}",
            root.display()
        ));
    }
    if nix::unistd::access(root, nix::unistd::AccessFlags::W_OK).is_err()
        && nix::unistd::access(&root.join("freezer"), nix::unistd::AccessFlags::W_OK).is_err()
    {
        return Err(format!("{} cannot be written (read-only)", root.display()));
    }
    Ok(())
}

/// `muster up [--detach] [--confine] [--state-dir DIR] [--nodes N]`.
pub fn up(args: &crate::args::UpArgs) -> i32 {
    match up_inner(&UpOptions::from_up(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("muster up: error: {e:#}");
            1
        }
    }
}

fn pid_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

fn down_inner(dir: &Path) -> anyhow::Result<()> {
    let conf_path = dir.join("slurm.conf");
    if !conf_path.exists() {
        bail!("no local cluster in {}", dir.display());
    }
    let c = client_for(&conf_path)?;
    // Only the processes `up` started, by the PIDs it recorded.
    let recorded = fs::read_to_string(dir.join("pids")).unwrap_or_default();
    let pids: Vec<i32> = recorded
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    // The REST daemon does not end with the controller: told first.
    for line in recorded.lines() {
        let mut words = line.split_whitespace();
        if let (Some(pid), Some("restd")) =
            (words.next().and_then(|p| p.parse().ok()), words.next())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
    let answered = c.call(CtldRequest::Shutdown).is_ok();
    let gone = wait_until(Duration::from_secs(10), || {
        pids.iter().all(|p| !pid_alive(*p))
    });
    if !gone {
        for p in &pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*p),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        wait_until(Duration::from_secs(5), || {
            pids.iter().all(|p| !pid_alive(*p))
        });
    }
    let _ = fs::remove_file(dir.join("pids"));
    // A node daemon that was killed left its cgroup directory.
    if let Ok(loaded) = conf::load(&conf_path) {
        noded::release_cgroups(&loaded.config);
    }
    if !answered && pids.is_empty() {
        bail!("no cluster is running from {}", dir.display());
    }
    println!("muster: cluster in {} stopped", dir.display());
    Ok(())
}

/// `muster down [--state-dir DIR]`.
pub fn down(args: &crate::args::DownArgs) -> i32 {
    let dir = args
        .state_dir
        .clone()
        .unwrap_or_else(client::default_state_dir);
    match down_inner(&dir) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("muster down: error: {e:#}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn file_at(path: &Path, at: SystemTime) {
        let f = std::fs::File::create(path).expect("creating");
        f.set_modified(at).expect("setting the time");
    }

    /// The commands run `muster-cli` where it is of the same build, else
    /// `muster` itself (an older one may not read this build's requests).
    #[test]
    fn a_stale_muster_cli_is_passed_over() {
        let dir = tempfile::tempdir().expect("a directory");
        let (exe, cli) = (dir.path().join("muster"), dir.path().join(CLI_BINARY));
        let now = SystemTime::now();
        file_at(&exe, now);
        assert_eq!(commands_binary_beside(&exe), exe, "no muster-cli");
        file_at(&cli, now - Duration::from_secs(30));
        assert_eq!(commands_binary_beside(&exe), cli, "built together");
        file_at(&cli, now - Duration::from_secs(3600));
        assert_eq!(commands_binary_beside(&exe), exe, "an hour older");
    }
}
