//! `muster up --detach`, `muster down` and `muster install-links`.

use crate::secs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn muster(args: &[&str]) -> e2e::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_muster"));
    c.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") {
            c.env_remove(k);
        }
    }
    let out = c.output().expect("running muster");
    e2e::Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Runs a command through a link in `bin` (its argv[0] names the command).
fn via_link(bin: &Path, conf: &Path, cmd: &str, args: &[&str], cwd: &Path) -> e2e::Output {
    let out = Command::new(bin.join(cmd))
        .args(args)
        .env("SLURM_CONF", conf)
        .current_dir(cwd)
        .output()
        .expect("running a link");
    e2e::Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// A state directory of its own for `muster up` (its path, and as text).
fn state_dir(tag: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!(
        "muster-e2e-{tag}-{}-{}",
        std::process::id(),
        e2e::free_port()
    ));
    let d = dir.display().to_string();
    (dir, d)
}

/// Stops what `muster up` started in the directory, whatever happens (and
/// removes the directory unless a test failed).
struct Down(String);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = muster(&["down", "--state-dir", &self.0]);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The pids `up` recorded, with the daemon each is.
fn recorded_pids(dir: &Path) -> Vec<(i32, String)> {
    std::fs::read_to_string(dir.join("pids"))
        .expect("up records its pids")
        .lines()
        .filter_map(|l| {
            let (pid, name) = l.split_once(' ')?;
            Some((pid.parse().ok()?, name.to_string()))
        })
        .collect()
}

/// A local cluster's node daemons share one credential socket: killing
/// the daemon that serves it hands it to another one, so the commands of
/// users who cannot read the cluster key keep working.
#[test]
fn the_credential_socket_outlives_the_node_daemon_that_served_it() {
    let (dir, d) = state_dir("credsock");
    let up = muster(&["up", "--detach", "--state-dir", &d, "--nodes", "3"]);
    let guard = Down(d.clone());
    assert_eq!(up.code, 0, "{up}");
    let sock = dir.join("auth.sock");
    let serves = |name: &str| {
        std::fs::read_to_string(dir.join(format!("log/noded-{name}.log")))
            .unwrap_or_default()
            .contains("credential socket on")
    };
    let ask = || auth::credential_from_socket(&sock);
    assert!(ask().is_ok(), "{:?}", ask());
    let pids = recorded_pids(&dir);
    let (server_pid, server) = pids
        .iter()
        .find(|(_, name)| name != "ctld" && serves(name))
        .cloned()
        .expect("a node daemon serves the credential socket");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("killing the serving node daemon");
    let start = Instant::now();
    while alive(server_pid) {
        assert!(start.elapsed() < secs(10), "{server} does not die");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Another live daemon takes the socket over within a poll or two.
    let start = Instant::now();
    while ask().is_err() {
        assert!(
            start.elapsed() < secs(10),
            "no daemon took the credential socket over after {server} died: {:?}",
            ask()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let heirs: Vec<&String> = pids
        .iter()
        .filter(|(_, n)| n != "ctld" && n != &server && serves(n))
        .map(|(_, n)| n)
        .collect();
    assert_eq!(
        heirs.len(),
        1,
        "exactly one daemon serves it now: {heirs:?}"
    );
    // A user who cannot read the key: squeue through the socket.
    if crate::auth::is_root() {
        let user = crate::auth::TestUser::create("cs", &dir);
        let out = user
            .command(&dir.join("bin/squeue"))
            .env("SLURM_CONF", dir.join("slurm.conf"))
            .output()
            .expect("running squeue as another user");
        assert!(out.status.success(), "squeue as {}: {out:?}", user.name);
    }
    drop(guard);
}

/// `up --detach` waits for every node daemon it started; one that cannot
/// start (its port taken) fails the whole start, named with its reason,
/// and nothing `up` started is left running.
#[test]
fn up_detach_names_a_node_daemon_that_could_not_start() {
    let (dir, d) = state_dir("upfail");
    let up = muster(&["up", "--detach", "--state-dir", &d, "--nodes", "2"]);
    let guard = Down(d.clone());
    assert_eq!(up.code, 0, "{up}");
    let down = muster(&["down", "--state-dir", &d]);
    assert_eq!(down.code, 0, "{down}");
    let conf = std::fs::read_to_string(dir.join("slurm.conf")).expect("slurm.conf");
    let port: u16 = conf
        .lines()
        .find(|l| l.starts_with("NodeName=node2 "))
        .and_then(|l| e2e::field(l, "Port"))
        .and_then(|p| p.parse().ok())
        .expect("node2's port");
    // Something else holds node2's port, as an old daemon would.
    let _taken = std::net::TcpListener::bind(("0.0.0.0", port)).expect("taking node2's port");
    let up = muster(&["up", "--detach", "--state-dir", &d, "--nodes", "2"]);
    assert_eq!(up.code, 1, "{up}");
    assert!(up.stderr.contains("node daemon node2 exited"), "{up}");
    assert!(up.stderr.contains("in use"), "{up}");
    assert!(!up.stdout.contains("is up"), "{up}");
    // Whatever it started is stopped again.
    let pids = muster(&["down", "--state-dir", &d]);
    assert_ne!(pids.code, 0, "nothing should be left to stop: {pids}");
    drop(guard);
}

#[test]
fn up_detach_then_down() {
    let (dir, d) = state_dir("up");
    let up = muster(&["up", "--detach", "--state-dir", &d, "--nodes", "2"]);
    // From here on, whatever happens, stop what `up` started.
    let guard = Down(d.clone());
    assert_eq!(up.code, 0, "{up}");
    assert!(up.stdout.contains("2 nodes (node[1-2])"), "{up}");
    let conf = dir.join("slurm.conf");
    let bin = dir.join("bin");
    let pids: Vec<i32> = std::fs::read_to_string(dir.join("pids"))
        .expect("up records its pids")
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(pids.len(), 4, "a controller, two node daemons and restd");
    assert!(pids.iter().all(|p| alive(*p)));
    // The REST API answers at once with a token from `scontrol token`.
    let addr = up
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("REST API (slurmrestd v0.0.38): http://"))
        .and_then(|l| l.split_once('/'))
        .map(|(addr, _)| addr.to_string())
        .unwrap_or_else(|| panic!("no REST URL in {up}"));
    let token = via_link(&bin, &conf, "scontrol", &["token"], &dir);
    assert_eq!(token.code, 0, "{token}");
    let token = token
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .expect("a token")
        .to_string();
    let (status, body) = crate::rest::http(
        &addr,
        "GET",
        "/slurm/v0.0.38/ping",
        &[("X-SLURM-USER-TOKEN", &token)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"ping\": \"UP\""), "{body}");

    let out = via_link(
        &bin,
        &conf,
        "sbatch",
        &["--parsable", "--wrap", "echo up-ok"],
        &dir,
    );
    assert_eq!(out.code, 0, "{out}");
    let id = out.stdout.trim().to_string();
    let start = Instant::now();
    loop {
        let s = via_link(
            &bin,
            &conf,
            "squeue",
            &["-h", "-t", "all", "-j", &id, "-o", "%T"],
            &dir,
        );
        if s.stdout.trim() == "COMPLETED" {
            break;
        }
        assert!(start.elapsed() < secs(10), "job {id}: {s}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(dir.join(format!("slurm-{id}.out"))).unwrap_or_default(),
        "up-ok\n"
    );
    let sinfo = via_link(&bin, &conf, "sinfo", &["-h", "-o", "%P %D %t"], &dir);
    assert_eq!(sinfo.stdout, "debug* 2 idle\n", "{sinfo}");

    let down = muster(&["down", "--state-dir", &d]);
    assert_eq!(down.code, 0, "{down}");
    let start = Instant::now();
    while pids.iter().any(|p| alive(*p)) {
        assert!(
            start.elapsed() < secs(5),
            "still running after down: {pids:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!dir.join("pids").exists());
    drop(guard);
}

#[test]
fn install_links_makes_every_command() {
    let dir = std::env::temp_dir().join(format!(
        "muster-e2e-links-{}-{}",
        std::process::id(),
        e2e::free_port()
    ));
    let d = dir.display().to_string();
    let out = muster(&["install-links", &d]);
    assert_eq!(out.code, 0, "{out}");
    // The links run the user commands' own, smaller binary (built beside
    // `muster`), which starts faster than the whole of `muster`.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_muster-cli")).expect("the binary");
    for cmd in [
        "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sacctmgr", "sreport",
        "sprio", "sshare", "sstat", "srun", "salloc", "sdiag",
    ] {
        let link = dir.join(cmd);
        let meta =
            std::fs::symlink_metadata(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display()));
        assert!(meta.file_type().is_symlink());
        assert_eq!(std::fs::canonicalize(&link).expect("resolving"), exe);
    }
    // slurmrestd is a daemon: it links to muster itself.
    let link = dir.join("slurmrestd");
    assert_eq!(
        std::fs::canonicalize(&link).expect("resolving slurmrestd"),
        std::fs::canonicalize(env!("CARGO_BIN_EXE_muster")).expect("the binary")
    );
    let help = Command::new(&link)
        .arg("--help")
        .output()
        .expect("slurmrestd --help");
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("unix:PATH"),
        "{help:?}"
    );
    // A link runs its command.
    let v = Command::new(dir.join("scontrol"))
        .arg("version")
        .output()
        .expect("scontrol version");
    assert!(
        String::from_utf8_lossy(&v.stdout).starts_with("slurm "),
        "{v:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn muster_cli_runs_the_commands_by_name_or_word() {
    let cli = env!("CARGO_BIN_EXE_muster-cli");
    let run = |args: &[&str]| Command::new(cli).args(args).output().expect("muster-cli");
    // `muster-cli <command> ...`, as `muster <command> ...`.
    let v = run(&["sbatch", "--version"]);
    assert_eq!(
        String::from_utf8_lossy(&v.stdout),
        "slurm 22.05.8\n",
        "{v:?}"
    );
    assert!(v.status.success());
    // Not a command: an error naming the commands; no daemons in here.
    // Also where the static muster-cli hands the command line over to
    // `muster` (a cluster under AuthType=auth/munge, whose libmunge only a
    // dynamic program can load): `muster` called as muster-cli must not
    // start a controller, which would read /etc/slurm/slurm.conf.
    let dir = std::env::temp_dir().join(format!("muster-cli-words-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let munge_conf = dir.join("slurm.conf");
    std::fs::write(&munge_conf, "AuthType=auth/munge\n").expect("writing slurm.conf");
    let handed_over = |args: &[&str]| {
        Command::new(cli)
            .args(args)
            .env("SLURM_CONF", &munge_conf)
            .output()
            .expect("muster-cli")
    };
    for args in [&["ctld"][..], &["noded"][..], &["bogus"][..], &[][..]] {
        for out in [run(args), handed_over(args)] {
            assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("sbatch squeue sinfo"),
                "{args:?}: {out:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `muster down` then `muster up` with a job running, and a partition
/// added to slurm.conf in between (as an administrator adds one): the
/// cluster comes back with its jobs and its nodes in service. The
/// controller starts before the node daemons and re-sends the launch of
/// the job it held as running; it waits for the daemon instead of judging
/// the node down, and the daemon reports the job killed at the stop (its
/// report at the stop, which the stopping controller did not take, is not
/// lost: the script must not run twice).
#[test]
fn down_and_up_again_keep_the_jobs_and_the_nodes_and_take_a_new_partition() {
    let (dir, d) = state_dir("upagain");
    let up = muster(&["up", "--detach", "--state-dir", &d, "--nodes", "2"]);
    let guard = Down(d.clone());
    assert_eq!(up.code, 0, "{up}");
    let (conf, bin) = (dir.join("slurm.conf"), dir.join("bin"));
    let run = |cmd: &str, args: &[&str]| via_link(&bin, &conf, cmd, args, &dir);
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < secs(20), "waiting for {what}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    let out = run(
        "sbatch",
        &[
            "--parsable",
            "-n",
            "2",
            "--wrap",
            "echo ran >> ran.txt; exec sleep 300",
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    let id = out.stdout.trim().to_string();
    let state = |id: &str| {
        run("squeue", &["-h", "-t", "all", "-j", id, "-o", "%T"])
            .stdout
            .trim()
            .to_string()
    };
    wait_for("the job to run", &|| state(&id) == "RUNNING");
    // RUNNING is the controller's word at the launch; the stop must come
    // after the script itself has started (a confined start takes longer).
    wait_for("the script to start", &|| {
        std::fs::read_to_string(dir.join("ran.txt")).is_ok_and(|t| t == "ran\n")
    });
    let pending = run("sbatch", &["--parsable", "-n", "4", "--wrap", "true"]);
    assert_eq!(pending.code, 0, "{pending}");
    let pending = pending.stdout.trim().to_string();
    assert_eq!(muster(&["down", "--state-dir", &d]).code, 0);

    let text = std::fs::read_to_string(&conf).expect("slurm.conf");
    std::fs::write(
        &conf,
        format!("{text}PartitionName=second Nodes=ALL MaxTime=INFINITE State=UP\n"),
    )
    .expect("writing slurm.conf");
    let again = muster(&["up", "--detach", "--state-dir", &d, "--nodes", "2"]);
    assert_eq!(again.code, 0, "{again}");
    // The job killed by the stop ends (its node daemon reports it), the
    // waiting one runs, and no node is left down.
    wait_for("the killed job to fail", &|| state(&id) == "FAILED");
    wait_for("the waiting job to complete", &|| {
        state(&pending) == "COMPLETED"
    });
    // Its script ran once: the launch re-sent found its end in the spool.
    let ran = std::fs::read_to_string(dir.join("ran.txt")).unwrap_or_default();
    assert_eq!(ran, "ran\n", "the killed job's script ran again");
    let sinfo = run("sinfo", &["-h", "-o", "%P %D %t"]);
    assert_eq!(sinfo.stdout, "debug* 2 idle\nsecond 2 idle\n", "{sinfo}");
    let out = run("sbatch", &["--parsable", "-p", "second", "--wrap", "true"]);
    assert_eq!(out.code, 0, "{out}");
    let on_second = out.stdout.trim().to_string();
    wait_for("the job in the new partition", &|| {
        state(&on_second) == "COMPLETED"
    });
    drop(guard);
}
