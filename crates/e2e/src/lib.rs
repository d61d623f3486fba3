//! End-to-end harness: a real controller and real node daemons on loopback,
//! driven through the real commands.
//!
//! ```text
//!   Cluster::builder().nodes(2).start()
//!       temp dir: slurm.conf (free loopback ports), muster.key (AuthInfo), state/, spool/, log/, work/
//!       children: muster ctld -f conf, muster noded -N nodeI -f conf
//!   cluster.run("sbatch", &["--wrap", "true"]) -> Output { stdout, stderr, code }
//!   drop(cluster): SIGTERM every daemon (node daemons kill their jobs),
//!                  SIGKILL stragglers; on panic keep the dir and print the logs
//! ```
//!
//! Every cluster has its own ports and directories, so tests run in
//! parallel. Commands run as `muster <cmd> args...` with `SLURM_CONF` set,
//! every other inherited `SLURM_*` variable removed, and the work directory
//! as their current directory.

mod hosts;
pub mod storm;
pub use hosts::unavailable as hosts_unavailable;
pub use hosts::Hosts;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long `start` waits for the controller and every node.
const START_LIMIT: Duration = Duration::from_secs(20);
/// How often the harness polls.
const POLL: Duration = Duration::from_millis(20);

/// What a command printed and how it exited.
#[derive(Clone, Debug)]
pub struct Output {
    /// Standard output, as text.
    pub stdout: String,
    /// Standard error, as text.
    pub stderr: String,
    /// Exit status; -1 when a signal ended the command.
    pub code: i32,
}

impl Output {
    /// True when the command exited 0.
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The `muster` binary: `MUSTER_BIN`, else `muster` next to the directory of
/// the running test binary (`target/debug/deps/it-*` -> `target/debug/muster`).
fn default_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("MUSTER_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test binary has a path");
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("muster")
}

/// A free loopback TCP port (another process may take it before we do; the
/// start retries with new ports when a daemon cannot bind).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    l.local_addr()
        .expect("a bound socket has an address")
        .port()
}

/// This host's name, as the daemons see it.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

/// The current user's name.
pub fn user_name() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// Logical CPUs of this host.
pub fn host_cpus() -> u32 {
    fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count() as u32)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(1)
}

/// Memory of this host in MiB (`MemTotal`).
pub fn host_memory_mb() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

/// Describes a cluster to start.
#[derive(Clone, Debug)]
pub struct Builder {
    binary: PathBuf,
    nodes: u32,
    conf_extra: String,
    conf_tail: String,
    node_extra: BTreeMap<u32, String>,
    node_line: BTreeMap<u32, String>,
    config_overrides: bool,
    cred_expire: u32,
    wait_nodes: bool,
    hosts: bool,
    files: BTreeMap<String, String>,
    soft_nofile: Option<u64>,
}

impl Builder {
    /// The `muster` binary to run (tests pass `env!("CARGO_BIN_EXE_muster")`).
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = path.into();
        self
    }

    /// Number of nodes, `node[1-N]`, each `CPUs=2 RealMemory=2000`.
    pub fn nodes(mut self, n: u32) -> Self {
        self.nodes = n;
        self
    }

    /// Lines appended to slurm.conf before the node lines (later keys win);
    /// `{root}` in them stands for the cluster's directory.
    pub fn conf_extra(mut self, text: &str) -> Self {
        self.conf_extra.push_str(text);
        if !text.ends_with('\n') {
            self.conf_extra.push('\n');
        }
        self
    }

    /// Lines appended after the default partition (more partitions).
    pub fn conf_tail(mut self, text: &str) -> Self {
        self.conf_tail.push_str(text);
        if !text.ends_with('\n') {
            self.conf_tail.push('\n');
        }
        self
    }

    /// Extra words on node `i`'s line, such as `Gres=gpu:2`.
    pub fn node_extra(mut self, i: u32, words: &str) -> Self {
        self.node_extra.insert(i, words.to_string());
        self
    }

    /// Replaces the resource words (`CPUs=2 RealMemory=2000`) of node `i`.
    pub fn node_line_override(mut self, i: u32, words: &str) -> Self {
        self.node_line.insert(i, words.to_string());
        self
    }

    /// Without `SlurmdParameters=config_overrides` the node daemons report
    /// this host's real hardware instead of their configured values.
    pub fn config_overrides(mut self, on: bool) -> Self {
        self.config_overrides = on;
        self
    }

    /// `AuthInfo=cred_expire=N`, which is also how long a requeued job
    /// waits (reason BeginTime) before it may run again: 2 s unless set
    /// (Slurm's default, 120 s, would slow every requeue test).
    pub fn cred_expire(mut self, secs: u32) -> Self {
        self.cred_expire = secs;
        self
    }

    /// Distinct hosts: the controller and each node daemon in its own
    /// network and UTS namespace (see `hosts`); needs root.
    pub fn hosts(mut self, on: bool) -> Self {
        self.hosts = on;
        self
    }

    /// A file written beside slurm.conf before the daemons start (such as
    /// `slurmdbd.conf`).
    pub fn file(mut self, name: &str, text: &str) -> Self {
        self.files.insert(name.to_string(), text.to_string());
        self
    }

    /// Whether `start` waits until every node has registered (default yes).
    pub fn wait_nodes(mut self, on: bool) -> Self {
        self.wait_nodes = on;
        self
    }

    /// Starts the daemons with this soft limit on open files (`ulimit -Sn`)
    /// instead of the test process's own.
    pub fn daemon_soft_nofile(mut self, n: u64) -> Self {
        self.soft_nofile = Some(n);
        self
    }

    /// Writes the configuration and starts the daemons; panics (with the
    /// logs) when they do not come up.
    pub fn start(self) -> Cluster {
        let mut last = String::new();
        for _attempt in 0..3 {
            match Cluster::try_start(&self) {
                Ok(c) => return c,
                Err(StartError::PortTaken(why)) => last = why,
                Err(StartError::Failed(why)) => panic!("cluster did not start: {why}"),
            }
        }
        panic!("cluster did not start after 3 tries with fresh ports: {last}");
    }
}

enum StartError {
    /// A daemon could not bind its port (another test took it): retry.
    PortTaken(String),
    Failed(String),
}

/// A running cluster; stopped (and its directory removed) on drop.
pub struct Cluster {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    conf: PathBuf,
    work: PathBuf,
    binary: PathBuf,
    ctld: Option<Child>,
    noded: BTreeMap<String, Child>,
    node_names: Vec<String>,
    /// The namespaces of a multi-host cluster (removed after the daemons stop).
    hosts: Option<hosts::Hosts>,
    /// `Builder::daemon_soft_nofile`.
    soft_nofile: Option<u64>,
}

impl Cluster {
    /// A cluster of `n` nodes with the default configuration.
    pub fn start(n: u32) -> Cluster {
        Cluster::builder().nodes(n).start()
    }

    /// A builder with the defaults: 1 node, config_overrides on.
    pub fn builder() -> Builder {
        Builder {
            binary: default_binary(),
            nodes: 1,
            conf_extra: String::new(),
            conf_tail: String::new(),
            node_extra: BTreeMap::new(),
            node_line: BTreeMap::new(),
            config_overrides: true,
            cred_expire: 2,
            wait_nodes: true,
            hosts: false,
            files: BTreeMap::new(),
            soft_nofile: None,
        }
    }

    fn try_start(b: &Builder) -> Result<Cluster, StartError> {
        let dir = tempfile::Builder::new()
            .prefix("muster-e2e-")
            .tempdir()
            .map_err(|e| StartError::Failed(format!("temp dir: {e}")))?;
        let root = dir.path().to_path_buf();
        for sub in ["state", "spool", "log", "work", "bin"] {
            fs::create_dir_all(root.join(sub)).expect("creating the cluster's directories");
        }
        // The Slurm command names, for jobs that call `srun` (on PATH in
        // every command the tests run, hence in every job's environment).
        // They run `muster-cli` (the user commands alone) when it lies
        // beside the binary, as `muster install-links` makes them.
        let commands = b.binary.with_file_name("muster-cli");
        let commands = if commands.is_file() {
            commands
        } else {
            b.binary.clone()
        };
        for name in SLURM_COMMANDS {
            let _ = std::os::unix::fs::symlink(&commands, root.join("bin").join(name));
        }
        let conf = root.join("slurm.conf");
        create_key(&root.join(KEY_FILE));
        let hosts = if b.hosts {
            Some(hosts::Hosts::create(b.nodes).map_err(|e| {
                StartError::Failed(format!("cannot make the hosts' namespaces: {e}"))
            })?)
        } else {
            None
        };
        fs::write(&conf, config_text(b, &root, hosts.as_ref())).expect("writing slurm.conf");
        for (name, text) in &b.files {
            fs::write(root.join(name), text).expect("writing a file beside slurm.conf");
        }
        let node_names: Vec<String> = (1..=b.nodes).map(|i| format!("node{i}")).collect();
        let mut c = Cluster {
            dir: Some(dir),
            work: root.join("work"),
            root,
            conf,
            binary: b.binary.clone(),
            ctld: None,
            noded: BTreeMap::new(),
            node_names,
            hosts,
            soft_nofile: b.soft_nofile,
        };
        assert!(
            c.binary.exists(),
            "muster binary {} not found (build it, or set MUSTER_BIN)",
            c.binary.display()
        );
        let conf_s = c.conf.display().to_string();
        c.ctld = Some(c.spawn(&["ctld", "-f", &conf_s], &c.root.join("log/ctld.log")));
        let start = Instant::now();
        loop {
            if c.run("scontrol", &["ping"]).ok() {
                break;
            }
            if let Some(Ok(Some(st))) = c.ctld.as_mut().map(|ch| ch.try_wait()) {
                let log = c.log("ctld");
                c.ctld = None;
                return Err(start_error(format!("ctld exited ({st}):\n{log}")));
            }
            if start.elapsed() > START_LIMIT {
                return Err(StartError::Failed(format!(
                    "the controller did not answer `scontrol ping` in {START_LIMIT:?}\n{}",
                    c.logs()
                )));
            }
            std::thread::sleep(POLL);
        }
        for name in c.node_names.clone() {
            c.start_node_with(&name, &[]);
        }
        if b.wait_nodes {
            let names = c.node_names.clone();
            loop {
                let states = c.node_states();
                if names
                    .iter()
                    .all(|n| states.get(n).is_some_and(|s| !s.starts_with("unk")))
                {
                    break;
                }
                for n in &names {
                    if let Some(Ok(Some(st))) = c.noded.get_mut(n).map(|ch| ch.try_wait()) {
                        let log = c.log(&format!("noded-{n}"));
                        return Err(start_error(format!("noded {n} exited ({st}):\n{log}")));
                    }
                }
                if start.elapsed() > START_LIMIT {
                    return Err(StartError::Failed(format!(
                        "nodes did not register in {START_LIMIT:?}: {states:?}\n{}",
                        c.logs()
                    )));
                }
                std::thread::sleep(POLL);
            }
        }
        Ok(c)
    }

    fn spawn(&self, args: &[&str], log: &Path) -> Child {
        self.spawn_env(args, log, &[])
    }

    /// [`Cluster::spawn`] with variables added to the daemon's environment.
    fn spawn_env(&self, args: &[&str], log: &Path, env: &[(&str, &str)]) -> Child {
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("opening a daemon log");
        let mut cmd = match &self.hosts {
            // `ctld ...` runs on host ctl, `noded -N nodeI ...` on nodeI.
            Some(h) => h.command(
                if args.first() == Some(&"ctld") {
                    "ctl"
                } else {
                    args.get(2).copied().unwrap_or("node1")
                },
                &self.binary,
            ),
            None => Command::new(&self.binary),
        };
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("duplicating a file handle"))
            .stderr(out)
            .current_dir(&self.root)
            .env("MUSTER_LOG", "debug");
        clean_env(&mut cmd);
        cmd.envs(env.iter().copied());
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        if let Some(soft) = self.soft_nofile {
            // SAFETY: getrlimit and setrlimit are async-signal-safe
            // system calls on memory of the child's own stack.
            unsafe {
                cmd.pre_exec(move || {
                    use nix::sys::resource::{getrlimit, setrlimit, Resource};
                    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
                    setrlimit(Resource::RLIMIT_NOFILE, soft.min(hard), hard)?;
                    Ok(())
                });
            }
        }
        // A binary a test just copied (to run it as other users) may still
        // be open for writing in a child another test thread forked during
        // the copy: exec fails with ETXTBSY until that child execs.
        let mut tries = 0;
        loop {
            match cmd.spawn() {
                Ok(child) => return child,
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("starting muster: {e:?}"),
            }
        }
    }

    /// For a multi-host cluster, the test process's address on the hosts'
    /// bridge (where a command run by the test listens).
    pub fn host_side_addr(&self) -> Option<String> {
        self.hosts.as_ref().map(hosts::Hosts::host_side_addr)
    }

    /// The temp directory holding everything.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// slurm.conf.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// The directory commands run in (where `slurm-N.out` lands).
    pub fn work(&self) -> &Path {
        &self.work
    }

    /// The `muster` binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// A file in the work directory, read as text ("" when missing).
    pub fn read(&self, name: &str) -> String {
        fs::read_to_string(self.work.join(name)).unwrap_or_default()
    }

    /// Writes a file in the work directory (made executable).
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.work.join(name);
        fs::write(&p, text).expect("writing a work file");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).expect("chmod");
        p
    }

    /// The command `cmd` (`sbatch`, `squeue`, ...) as `muster cmd args...`.
    pub fn command(&self, cmd: &str) -> Command {
        let mut c = self.in_cluster(&self.binary);
        c.arg(cmd);
        c
    }

    /// `program` run in the work directory with the cluster's
    /// configuration and command links, in a clean environment.
    fn in_cluster(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        clean_env(&mut c);
        c.env("SLURM_CONF", &self.conf);
        c.env("PATH", self.path_env());
        c
    }

    /// Runs `cmd args...` through the cluster's link of that name
    /// (`bin/cmd`: `muster-cli` where it lies beside the binary, as
    /// `muster install-links` makes it), as a user's shell runs it.
    pub fn run_linked(&self, cmd: &str, args: &[&str]) -> Output {
        let mut c = self.in_cluster(&self.root.join("bin").join(cmd));
        c.args(args);
        collect(c, None)
    }

    /// `PATH` with the cluster's command links first.
    pub fn path_env(&self) -> String {
        let old = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        format!("{}:{old}", self.root.join("bin").display())
    }

    /// Runs `muster cmd args...` and collects its output.
    pub fn run(&self, cmd: &str, args: &[&str]) -> Output {
        let mut c = self.command(cmd);
        c.args(args);
        collect(c, None)
    }

    /// Like `run`, with extra environment variables.
    pub fn run_env(&self, cmd: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.command(cmd);
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        collect(c, None)
    }

    /// Like `run`, with `input` on standard input.
    pub fn run_stdin(&self, cmd: &str, args: &[&str], input: &str) -> Output {
        let mut c = self.command(cmd);
        c.args(args);
        collect(c, Some(input))
    }

    /// `run`, and panics (with the logs) unless it exits 0.
    pub fn ok(&self, cmd: &str, args: &[&str]) -> Output {
        let out = self.run(cmd, args);
        assert!(
            out.ok(),
            "`{cmd} {}` failed: {out}\n{}",
            args.join(" "),
            self.logs()
        );
        out
    }

    /// `sbatch --parsable args...`: the new job's id.
    pub fn submit(&self, args: &[&str]) -> u32 {
        let mut all = vec!["--parsable"];
        all.extend_from_slice(args);
        let out = self.ok("sbatch", &all);
        out.stdout
            .trim()
            .split(';')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("sbatch --parsable printed {:?}", out.stdout))
    }

    /// The job's state (`squeue -h -t all -j ID -o %T`), "" when unknown.
    pub fn job_state(&self, id: u32) -> String {
        self.squeue_field(id, "%T")
    }

    /// One `squeue -o` field of one job, trimmed ("" when unknown).
    pub fn squeue_field(&self, id: u32, format: &str) -> String {
        let out = self.run(
            "squeue",
            &["-h", "-t", "all", "-j", &id.to_string(), "-o", format],
        );
        // A job the controller no longer has is "" (squeue's "Invalid job id
        // specified"); any other failure shows as its error, so a wait that
        // sees it says why.
        if out.code != 0 && !out.stderr.contains("Invalid job id specified") {
            return format!("(squeue exit {}: {})", out.code, out.stderr.trim());
        }
        out.stdout.trim().to_string()
    }

    /// Polls the job's state until `pred` holds; returns that state, or
    /// panics with the state history and the logs after `limit`.
    pub fn wait_for(&self, id: u32, limit: Duration, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        let mut seen: Vec<String> = Vec::new();
        loop {
            let s = self.job_state(id);
            if pred(&s) {
                return s;
            }
            if seen.last() != Some(&s) {
                seen.push(s);
            }
            if start.elapsed() > limit {
                panic!(
                    "job {id}: condition not met in {limit:?}; states seen {seen:?}\n{}\n{}",
                    self.run("scontrol", &["show", "job", &id.to_string()]),
                    self.logs()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the job is in `state`.
    pub fn wait_state(&self, id: u32, state: &str, limit: Duration) {
        self.wait_for(id, limit, |s| s == state);
    }

    /// Waits until the job has ended (any state but PENDING, CONFIGURING,
    /// RUNNING, COMPLETING, SUSPENDED); returns that state.
    pub fn wait_done(&self, id: u32, limit: Duration) -> String {
        self.wait_for(id, limit, |s| {
            !s.is_empty()
                && !matches!(
                    s,
                    "PENDING" | "CONFIGURING" | "RUNNING" | "COMPLETING" | "SUSPENDED"
                )
        })
    }

    /// Cancels every job of the user and waits until none is left active
    /// (pending, running, completing), so that no job process outlives
    /// the test: one a node daemon is still starting when it is stopped
    /// could.
    pub fn end_all_jobs(&self, limit: Duration) {
        self.ok("scancel", &["-u", &user_name()]);
        self.wait_until("every job to end", limit, || {
            let out = self.ok("squeue", &["-h", "-o", "%i"]);
            out.stdout.trim().is_empty().then_some(())
        });
    }

    /// Polls `f` until it returns Some, or panics with `what` and the logs.
    pub fn wait_until<T>(
        &self,
        what: &str,
        limit: Duration,
        mut f: impl FnMut() -> Option<T>,
    ) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if start.elapsed() > limit {
                panic!(
                    "timed out after {limit:?} waiting for {what}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until a file exists in the work directory and is not empty;
    /// returns its text.
    pub fn wait_file(&self, name: &str, limit: Duration) -> String {
        self.wait_until(&format!("file {name}"), limit, || {
            let t = self.read(name);
            (!t.is_empty()).then_some(t)
        })
    }

    /// `Key=value` from `scontrol show job ID`.
    pub fn job_field(&self, id: u32, key: &str) -> String {
        let out = self.run("scontrol", &["show", "job", &id.to_string()]);
        field(&out.stdout, key).unwrap_or_default()
    }

    /// `Key=value` from `scontrol show node NAME`.
    pub fn node_field(&self, name: &str, key: &str) -> String {
        let out = self.run("scontrol", &["show", "node", name]);
        field(&out.stdout, key).unwrap_or_default()
    }

    /// Every node's short state (`sinfo -h -N -o "%N %t"`).
    pub fn node_states(&self) -> BTreeMap<String, String> {
        let out = self.run("sinfo", &["-h", "-N", "-o", "%N %t"]);
        out.stdout
            .lines()
            .filter_map(|l| {
                let (n, s) = l.split_once(' ')?;
                Some((n.to_string(), s.trim().to_string()))
            })
            .collect()
    }

    /// One node's short state ("" when sinfo does not list it).
    pub fn node_state(&self, name: &str) -> String {
        self.node_states().remove(name).unwrap_or_default()
    }

    /// Waits until the node's short state is `state`.
    pub fn wait_node_state(&self, name: &str, state: &str, limit: Duration) {
        self.wait_until(&format!("node {name} in state {state}"), limit, || {
            (self.node_state(name) == state).then_some(())
        });
    }

    /// SIGKILLs the node daemon of `name` (its jobs keep running, orphaned).
    pub fn kill_node(&mut self, name: &str) {
        if let Some(mut ch) = self.noded.remove(name) {
            let _ = nix::sys::signal::kill(pid_of(&ch), nix::sys::signal::Signal::SIGKILL);
            let _ = ch.wait();
        }
    }

    /// SIGKILLs the controller, as a crash would.
    pub fn kill_ctld(&mut self) {
        if let Some(mut ch) = self.ctld.take() {
            let _ = nix::sys::signal::kill(pid_of(&ch), nix::sys::signal::Signal::SIGKILL);
            let _ = ch.wait();
        }
    }

    /// Starts the controller again (after `kill_ctld`) without waiting.
    pub fn spawn_ctld(&mut self) {
        self.spawn_ctld_env(&[]);
    }

    /// [`Cluster::spawn_ctld`] with variables added to the controller's
    /// environment (such as its test fault hook, `MUSTER_TEST_FAULT`).
    pub fn spawn_ctld_env(&mut self, env: &[(&str, &str)]) {
        self.kill_ctld();
        let conf_s = self.conf.display().to_string();
        let log = self.root.join("log/ctld.log");
        let ch = self.spawn_env(&["ctld", "-f", &conf_s], &log, env);
        self.ctld = Some(ch);
    }

    /// Starts the controller again and waits until it answers.
    pub fn restart_ctld(&mut self) {
        self.spawn_ctld();
        self.wait_until("the controller to answer", Duration::from_secs(20), || {
            self.run("scontrol", &["ping"]).ok().then_some(())
        });
    }

    /// Starts the controller (stopped or killed) with `extra` arguments
    /// (`-R`) and waits until it answers.
    pub fn restart_ctld_with(&mut self, extra: &[&str]) {
        self.kill_ctld();
        let conf_s = self.conf.display().to_string();
        let log = self.root.join("log/ctld.log");
        let mut args = vec!["ctld", "-f", &conf_s];
        args.extend_from_slice(extra);
        let ch = self.spawn_env(&args, &log, &[]);
        self.ctld = Some(ch);
        self.wait_until("the controller to answer", Duration::from_secs(20), || {
            self.run("scontrol", &["ping"]).ok().then_some(())
        });
    }

    /// Waits for the controller process to exit; its exit status.
    pub fn wait_ctld_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if let Some(ch) = self.ctld.as_mut() {
                if let Ok(Some(st)) = ch.try_wait() {
                    self.ctld = None;
                    return Some(st);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The controller's StateSaveLocation.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join("state")
    }

    /// Sends `sig` to the controller (SIGHUP: reconfigure).
    pub fn signal_ctld(&self, sig: nix::sys::signal::Signal) {
        if let Some(ch) = &self.ctld {
            let _ = nix::sys::signal::kill(pid_of(ch), sig);
        }
    }

    /// Sends `sig` to the node daemon of `name` (SIGSTOP makes it silent
    /// without ending it, as a hung or cut-off host is).
    pub fn signal_node(&self, name: &str, sig: nix::sys::signal::Signal) {
        if let Some(ch) = self.noded.get(name) {
            let _ = nix::sys::signal::kill(pid_of(ch), sig);
        }
    }

    /// Waits for the node daemon of `name` to exit (after `signal_node`);
    /// its exit status, or `None` if it still runs after `limit`.
    pub fn wait_node_exit(&mut self, name: &str, limit: Duration) -> Option<ExitStatus> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if let Some(ch) = self.noded.get_mut(name) {
                if let Ok(Some(st)) = ch.try_wait() {
                    self.noded.remove(name);
                    return Some(st);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Starts (or restarts) the node daemon of `name` with extra arguments.
    pub fn start_node_with(&mut self, name: &str, extra: &[&str]) {
        self.kill_node(name);
        let conf_s = self.conf.display().to_string();
        let mut args = vec!["noded", "-N", name, "-f", &conf_s];
        args.extend_from_slice(extra);
        let log = self.root.join(format!("log/noded-{name}.log"));
        let ch = self.spawn(&args, &log);
        self.noded.insert(name.to_string(), ch);
    }

    /// Plays a host that rebooted: the node daemon of `name` is killed and
    /// started again with the host boot id `boot_id` (`MUSTER_BOOT_ID`),
    /// as the daemon of a freshly booted host registers.
    pub fn reboot_node(&mut self, name: &str, boot_id: &str) {
        self.kill_node(name);
        let conf_s = self.conf.display().to_string();
        let args = ["noded", "-N", name, "-f", &conf_s];
        let log = self.root.join(format!("log/noded-{name}.log"));
        let ch = self.spawn_env(&args, &log, &[("MUSTER_BOOT_ID", boot_id)]);
        self.noded.insert(name.to_string(), ch);
    }

    /// The PIDs of the running daemons (the controller first).
    pub fn daemon_pids(&self) -> Vec<u32> {
        self.ctld
            .iter()
            .chain(self.noded.values())
            .map(Child::id)
            .collect()
    }

    /// One log's text (`ctld`, `noded-node1`).
    pub fn log(&self, name: &str) -> String {
        fs::read_to_string(self.root.join(format!("log/{name}.log"))).unwrap_or_default()
    }

    /// The tail of every daemon log, for assertion messages.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        let mut names = vec!["ctld".to_string()];
        names.extend(self.node_names.iter().map(|n| format!("noded-{n}")));
        for n in names {
            let text = self.log(&n);
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(40);
            let _ = writeln!(s, "===== {n}.log (last {} lines) =====", lines.len() - from);
            for l in &lines[from..] {
                let _ = writeln!(s, "{l}");
            }
        }
        s
    }

    fn stop(&mut self) {
        // Node daemons first (they kill their jobs on SIGTERM and report the
        // ends to the controller, which is still there to answer), then the
        // controller.
        let nodes: Vec<Child> = std::mem::take(&mut self.noded).into_values().collect();
        terminate(nodes);
        terminate(self.ctld.take().into_iter().collect());
    }
}

/// SIGTERM, up to 5 s to exit, then SIGKILL.
fn terminate(mut children: Vec<Child>) {
    use nix::sys::signal::{kill, Signal};
    for ch in &children {
        let _ = kill(pid_of(ch), Signal::SIGTERM);
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        children.retain_mut(|ch| !matches!(ch.try_wait(), Ok(Some(_))));
        if children.is_empty() {
            return;
        }
        std::thread::sleep(POLL);
    }
    for mut ch in children {
        let _ = kill(pid_of(&ch), Signal::SIGKILL);
        let _ = ch.wait();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let kept = dir.keep();
                let mut msg = format!("e2e: test failed; cluster kept in {}\n", kept.display());
                let _ = writeln!(msg, "  conf: {}", self.conf.display());
                if let Ok(rd) = fs::read_dir(kept.join("log")) {
                    for e in rd.flatten() {
                        let _ = writeln!(msg, "  log:  {}", e.path().display());
                    }
                }
                let _ = std::io::stderr().write_all(msg.as_bytes());
            }
        }
    }
}

fn start_error(why: String) -> StartError {
    if why.contains("Address already in use") || why.contains("in use") {
        StartError::PortTaken(why)
    } else {
        StartError::Failed(why)
    }
}

fn pid_of(ch: &Child) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(ch.id() as i32)
}

/// Removes inherited Slurm variables so a test run inside a Slurm job (or
/// with SLURM_CONF set) talks only to its own cluster.
/// The command names linked into the cluster's `bin` directory.
const SLURM_COMMANDS: &[&str] = &[
    "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "srun", "salloc", "sdiag",
    "sbcast", "sattach",
];

fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if let Some(k) = k.to_str() {
            if k.starts_with("SLURM_")
                || k.starts_with("SBATCH_")
                || k.starts_with("SQUEUE_")
                || k.starts_with("SINFO_")
                || k == "MUSTER_LOG"
            {
                cmd.env_remove(k);
            }
        }
    }
}

fn collect(mut c: Command, input: Option<&str>) -> Output {
    if input.is_some() {
        c.stdin(Stdio::piped());
    }
    let mut child = c.spawn().expect("running muster");
    if let Some(text) = input {
        let mut stdin = child.stdin.take().expect("piped stdin");
        let _ = stdin.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().expect("waiting for muster");
    Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// The value of `Key=` in `scontrol show` text (up to the next space).
pub fn field(text: &str, key: &str) -> Option<String> {
    let pat = format!("{key}=");
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(pat.as_str()))
        .map(str::to_string)
}

/// The cluster key in the cluster's directory, as `muster up` makes it.
pub const KEY_FILE: &str = "muster.key";
/// The node daemons' credential socket in the cluster's directory.
pub const SOCKET_FILE: &str = "auth.sock";

/// A cluster key as `muster up` makes one: 32 bytes from /dev/urandom,
/// mode 0600.
fn create_key(path: &Path) {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let mut key = [0u8; 32];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .expect("reading /dev/urandom");
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(&key))
        .expect("writing the cluster key");
}

fn config_text(b: &Builder, root: &Path, hosts: Option<&hosts::Hosts>) -> String {
    let host = hostname();
    let ctld_host = match hosts {
        Some(h) => format!("ctl({})", h.ctld_addr()),
        None => format!("{host}(127.0.0.1)"),
    };
    let mut t = String::new();
    let _ = write!(
        t,
        "# Written by the e2e harness.\n\
         ClusterName=e2e\n\
         SlurmctldHost={ctld_host}\n\
         SlurmctldPort={port}\n\
         SlurmUser={user}\n\
         StateSaveLocation={root}/state\n\
         SlurmdSpoolDir={root}/spool/%n\n\
         {overrides}\
         AuthType=auth/muster\n\
         AuthInfo=key={root}/{KEY_FILE},socket={root}/{SOCKET_FILE},cred_expire={cred_expire}\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core_Memory\n\
         DefMemPerCPU=100\n\
         KillWait=2\n\
         MinJobAge=300\n\
         SlurmdTimeout=300\n\
         GresTypes=gpu\n",
        port = free_port(),
        cred_expire = b.cred_expire,
        user = user_name(),
        root = root.display(),
        overrides = if b.config_overrides {
            "SlurmdParameters=config_overrides\n"
        } else {
            ""
        },
    );
    // `{root}` in the extra lines: the cluster's directory (scripts the
    // test wrote there with `Builder::file`).
    t.push_str(&b.conf_extra.replace("{root}", &root.display().to_string()));
    for i in 1..=b.nodes {
        let res = b
            .node_line
            .get(&i)
            .cloned()
            .unwrap_or_else(|| "CPUs=2 RealMemory=2000".into());
        let extra = b
            .node_extra
            .get(&i)
            .map(|e| format!(" {e}"))
            .unwrap_or_default();
        let (addr, hostname, port) = match hosts {
            Some(h) => (h.node_addr(i), format!("node{i}"), 6818),
            None => ("127.0.0.1".to_string(), host.clone(), free_port()),
        };
        let _ = writeln!(
            t,
            "NodeName=node{i} NodeAddr={addr} NodeHostname={hostname} Port={port} {res}{extra} State=UNKNOWN"
        );
    }
    let _ = writeln!(
        t,
        "PartitionName=debug Nodes=node[1-{}] Default=YES MaxTime=INFINITE State=UP",
        b.nodes
    );
    t.push_str(&b.conf_tail);
    t
}
