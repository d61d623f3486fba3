//! Deployment on real hosts (issue 38 item 9): `muster keygen`, configless
//! mode, and docs/deploy.md followed on distinct hosts (network
//! namespaces made and removed by `e2e::Hosts`): a controller, three
//! compute hosts that fetch their configuration with `--conf-server`, and
//! a login host that runs no daemon and submits with MUNGE, running a job
//! that finds the configuration with `SLURM_CONF` stripped and a two-node
//! MPI job.

use crate::{builder, secs};
use e2e::{Hosts, Output};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");
const MUNGE_SOCKET: &str = "/var/run/munge/munge.socket.2";
const MPICC_MPICH: &str = "/usr/bin/mpicc.mpich";

fn muster(args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = Command::new(MUSTER)
        .args(args)
        .env_remove("SLURM_CONF")
        .env_remove("SLURM_CONF_SERVER")
        .envs(env.iter().copied())
        .output()
        .expect("running muster");
    Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn keygen_writes_a_private_key_and_keeps_an_existing_one() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("keys/cluster.key");
    let conf = dir.path().join("slurm.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=k\nSlurmctldHost=h\nSlurmUser={}\nAuthType=auth/muster\n\
             AuthInfo=key={}\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n",
            e2e::user_name(),
            key.display()
        ),
    )
    .unwrap();
    let conf_s = conf.display().to_string();
    // Where AuthInfo says, owned by SlurmUser (here the caller), 0600.
    let out = muster(&["keygen", "-f", &conf_s], &[]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout
            .starts_with(&format!("wrote a new cluster key to {}", key.display())),
        "{out}"
    );
    assert_eq!(mode(&key), 0o600);
    let first = std::fs::read(&key).unwrap();
    assert_eq!(first.len(), 32);
    // Never overwritten without --force.
    let out = muster(&["keygen", "-f", &conf_s], &[]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("exists; not overwritten"), "{out}");
    assert_eq!(std::fs::read(&key).unwrap(), first);
    let out = muster(&["keygen", "-f", &conf_s, "--force"], &[]);
    assert_eq!(out.code, 0, "{out}");
    assert_ne!(std::fs::read(&key).unwrap(), first);
    assert_eq!(mode(&key), 0o600);
    // A path given wins; an owner that does not exist writes nothing.
    let other = dir.path().join("other.key");
    let out = muster(
        &[
            "keygen",
            "--owner",
            "no-such-user-here",
            &other.display().to_string(),
        ],
        &[],
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("does not exist"), "{out}");
    assert!(!other.exists());
}

#[test]
fn srun_mpi_list_says_when_the_build_lacks_pmix() {
    let out = muster(&["srun", "--mpi=list"], &[]);
    assert_eq!(out.code, 0, "{out}");
    if cfg!(feature = "pmix") {
        assert!(out.stdout.contains("\tpmix\n"), "{out}");
        assert_eq!(out.stderr, "", "{out}");
    } else {
        assert!(!out.stdout.contains("pmix"), "{out}");
        assert!(out.stderr.contains("built without PMIx"), "{out}");
    }
}

/// The controller's port in the harness's slurm.conf.
fn ctld_port(conf: &Path) -> String {
    let text = std::fs::read_to_string(conf).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("SlurmctldPort="))
        .expect("SlurmctldPort in slurm.conf")
        .to_string()
}

#[test]
fn configless_fetch_is_refused_without_enable_configless() {
    let c = builder().nodes(1).start();
    let key = c.root().join(e2e::KEY_FILE).display().to_string();
    let server = format!("127.0.0.1:{}", ctld_port(c.conf()));
    let out = muster(
        &[
            "noded",
            "-N",
            "node1",
            "--conf-server",
            &server,
            "--authinfo",
            &format!("key={key}"),
        ],
        &[],
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains(&format!(
            "configless mode: the controller at {server} refused to send the configuration: \
             ConfigLess mode is disabled in slurm configuration."
        )),
        "{out}"
    );
}

/// A configless node daemon (`--conf-server`) fetches the files again
/// when the controller reconfigures: its cached slurm.conf and gres.conf
/// become the controller's new ones, as slurmd's cache does.
#[test]
fn a_configless_node_fetches_the_files_again_at_a_reconfigure() {
    let mut c = builder()
        .nodes(1)
        .conf_extra("SlurmctldParameters=enable_configless\n")
        .file("gres.conf", "# first\n")
        .start();
    let key = c.root().join(e2e::KEY_FILE).display().to_string();
    let server = format!("127.0.0.1:{}", ctld_port(c.conf()));
    c.kill_node("node1");
    // As root, in a mount namespace of its own with a tmpfs on /run: its
    // /run/muster/conf link stays out of this host's /run.
    let log = std::fs::File::create(c.root().join("log/noded-configless.log")).unwrap();
    let args = [
        "noded",
        "-N",
        "node1",
        "--conf-server",
        &server,
        "--authinfo",
        &format!("key={key}"),
    ];
    let mut cmd = if nix::unistd::Uid::effective().is_root() {
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount -t tmpfs muster-test /run && exec \"$0\" \"$@\"")
            .arg(MUSTER);
        cmd
    } else {
        Command::new(MUSTER)
    };
    cmd.args(args)
        .env_remove("SLURM_CONF")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut noded = KillOnDrop(cmd.spawn().expect("starting the configless node daemon"));
    let cache = c.root().join("spool/node1/conf-cache");
    let read = |name: &str| std::fs::read_to_string(cache.join(name)).unwrap_or_default();
    let first = std::fs::read_to_string(c.conf()).unwrap();
    let fetched = until(secs(60), || (read("slurm.conf") == first).then_some(()));
    assert!(
        fetched.is_some(),
        "no cache: {}",
        std::fs::read_to_string(c.root().join("log/noded-configless.log")).unwrap_or_default()
    );
    c.wait_node_state("node1", "idle", secs(60));
    assert_eq!(read("gres.conf"), "# first\n");

    // The controller's files change; scontrol reconfigure: the node's
    // cache follows.
    let second = format!("{first}PartitionName=extra Nodes=node1\n");
    std::fs::write(c.conf(), &second).unwrap();
    std::fs::write(c.conf().with_file_name("gres.conf"), "# second\n").unwrap();
    c.ok("scontrol", &["reconfigure"]);
    let refetched = until(secs(60), || {
        (read("slurm.conf") == second && read("gres.conf") == "# second\n").then_some(())
    });
    assert!(
        refetched.is_some(),
        "the cache kept the old files: {}\n{}",
        std::fs::read_to_string(c.root().join("log/noded-configless.log")).unwrap_or_default(),
        c.log("ctld")
    );
    // The node daemon goes on: a job runs there.
    let job = c.submit(&["-p", "extra", "--wrap", "true"]);
    assert_eq!(c.wait_done(job, secs(30)), "COMPLETED");
    let _ = noded.0.kill();
}

/// Ends (SIGKILL) and reaps the child this test started.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------------
// docs/deploy.md on distinct hosts.

/// Why the deployment test cannot run here, if so: it needs root (the
/// namespaces), and munged for the login host. Under CI, or as root
/// with apt-get (where `xtask/setup.sh` installs munged), munged missing
/// fails instead.
fn deploy_unavailable() -> Option<String> {
    if let Some(why) = e2e::hosts_unavailable() {
        return Some(why);
    }
    let probe = auth::munge::Munge::load(Path::new(MUNGE_SOCKET)).and_then(|m| m.encode(b"probe"));
    if let Err(e) = probe {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
        assert!(
            !(ci || Path::new("/usr/bin/apt-get").exists()),
            "munged is required here (xtask/setup.sh installs and starts it): {e}"
        );
        return Some(format!("munged does not answer: {e}"));
    }
    None
}

/// The daemons of the deployment, stopped (nodes first) on drop, before
/// the namespaces go.
struct Daemons {
    children: Vec<(String, Child)>,
    log_dir: PathBuf,
}

impl Daemons {
    fn spawn(&mut self, name: &str, mut cmd: Command) {
        use std::os::unix::process::CommandExt;
        let log = std::fs::File::create(self.log_dir.join(format!("{name}.log"))).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .env("MUSTER_LOG", "debug")
            .env_remove("SLURM_CONF")
            .process_group(0);
        let child = cmd.spawn().expect("starting a daemon");
        self.children.push((name.to_string(), child));
    }

    /// Kills the daemon `name` alone, as `systemctl restart` does with the
    /// unit's `KillMode=process` and `KillSignal=SIGKILL`: its jobs go on.
    fn kill(&mut self, name: &str) {
        use nix::sys::signal::{kill, Signal};
        let i = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .expect("a daemon of that name");
        let (_, mut ch) = self.children.remove(i);
        let _ = kill(nix::unistd::Pid::from_raw(ch.id() as i32), Signal::SIGKILL);
        let _ = ch.wait();
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for (name, _) in &self.children {
            let text = std::fs::read_to_string(self.log_dir.join(format!("{name}.log")))
                .unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(30);
            s.push_str(&format!(
                "===== {name} =====\n{}\n",
                lines[from..].join("\n")
            ));
        }
        s
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        // Node daemons first (they end their jobs), then the controller.
        for (_, ch) in self.children.iter_mut().rev() {
            let _ = kill(Pid::from_raw(ch.id() as i32), Signal::SIGTERM);
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                if matches!(ch.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if !matches!(ch.try_wait(), Ok(Some(_))) {
                let _ = kill(Pid::from_raw(-(ch.id() as i32)), Signal::SIGKILL);
                let _ = ch.wait();
            }
        }
    }
}

/// Removes a directory on drop, if it was not there before and is empty.
struct RunDir(Option<PathBuf>);

impl RunDir {
    fn note(p: &Path) -> RunDir {
        RunDir((!p.exists()).then(|| p.to_path_buf()))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_dir(p);
        }
    }
}

/// A command run on the login host: the Slurm command names from the
/// links directory, slurm.conf copied from the controller.
fn login(hosts: &Hosts, bin: &Path, conf: &Path, work: &Path, args: &[&str]) -> Output {
    let mut c = hosts.command("login", &bin.join(args[0]));
    c.args(&args[1..])
        .current_dir(work)
        .env("SLURM_CONF", conf)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin:/usr/sbin:/sbin", bin.display()),
        )
        // MPICH over UCX between the hosts (see `mpi`).
        .env("UCX_TLS", "self,sm,tcp");
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") || k.starts_with("SBATCH_") || k.starts_with("SQUEUE_") {
            c.env_remove(k);
        }
    }
    c.env("SLURM_CONF", conf);
    let out = c.output().expect("running a command on the login host");
    Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Polls `f` until it returns Some, up to `limit` (a guard against a hang,
/// not a timing assertion).
fn until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn deploy_guide_on_distinct_hosts() {
    if let Some(why) = deploy_unavailable() {
        eprintln!("deploy_guide_on_distinct_hosts: not run: {why}");
        return;
    }
    let hosts = Hosts::create_with(3, true).expect("making the hosts' namespaces");
    // The node hosts mount a tmpfs of their own on /run/muster, made where
    // missing; removed again (once empty) when the test made it.
    let _run_dir = RunDir::note(Path::new("/run/muster"));
    let dir = tempfile::Builder::new()
        .prefix("muster-deploy-")
        .tempdir()
        .unwrap();
    let root = dir.path();
    for sub in ["etc", "state", "spool", "log", "work", "bin", "login"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    // 1. Install: the command links (`muster install-links /usr/bin`).
    let bin = root.join("bin");
    let out = muster(&["install-links", &bin.display().to_string()], &[]);
    assert_eq!(out.code, 0, "{out}");
    // 3. slurm.conf, on the controller only (the compute hosts are
    // configless), with a gres.conf beside it that they must receive too.
    let ctl_addr = hosts.ctld_addr();
    let conf = root.join("etc/slurm.conf");
    let mut text = format!(
        "ClusterName=deploy\n\
         SlurmctldHost=ctl({ctl_addr})\n\
         SlurmUser={user}\n\
         StateSaveLocation={root}/state\n\
         SlurmdSpoolDir={root}/spool/%n\n\
         AuthType=auth/munge\n\
         SlurmctldParameters=enable_configless\n\
         MpiDefault=pmi2\n\
         DefMemPerCPU=100\n\
         KillWait=2\n",
        user = e2e::user_name(),
        root = root.display(),
    );
    for i in 1..=3 {
        text.push_str(&format!(
            "NodeName=node{i} NodeAddr={} CPUs=2 RealMemory=2000 State=UNKNOWN\n",
            hosts.node_addr(i)
        ));
    }
    text.push_str("PartitionName=batch Nodes=node[1-3] Default=YES MaxTime=INFINITE State=UP\n");
    std::fs::write(&conf, &text).unwrap();
    std::fs::write(root.join("etc/gres.conf"), "# no GRES on these hosts\n").unwrap();
    let out = muster(&["check-config", "-f", &conf.display().to_string()], &[]);
    assert_eq!(out.code, 0, "check-config: {out}");
    // 7. The login host's copy of slurm.conf.
    let login_conf = root.join("login/slurm.conf");
    std::fs::copy(&conf, &login_conf).unwrap();
    let mut daemons = Daemons {
        children: Vec::new(),
        log_dir: root.join("log"),
    };
    // 6. The controller: `muster ctld -D -f /etc/slurm/slurm.conf`.
    let mut ctld = hosts.command("ctl", Path::new(MUSTER));
    ctld.args(["ctld", "-D", "-f", &conf.display().to_string()]);
    daemons.spawn("ctld", ctld);
    // 5. Configless compute hosts: `muster noded -D --conf-server ctl`,
    // each with a /run/muster of its own (the hosts share one file system
    // here; on real hosts /run is each host's own).
    let noded = |name: &str| {
        let mut c = hosts.command_after(
            name,
            "mkdir -p /run/muster && mount -t tmpfs muster-test /run/muster",
            Path::new(MUSTER),
        );
        c.args(["noded", "-D", "--conf-server", "ctl"]);
        c
    };
    for i in 1..=3 {
        let name = format!("node{i}");
        daemons.spawn(&name, noded(&name));
    }
    let run = |args: &[&str]| login(&hosts, &bin, &login_conf, &root.join("work"), args);
    let idle = until(secs(60), || {
        let out = run(&["sinfo", "-h", "-N", "-o", "%N %t"]);
        (out.stdout == "node1 idle\nnode2 idle\nnode3 idle\n").then_some(())
    });
    assert!(
        idle.is_some(),
        "nodes not idle: {}\n{}",
        run(&["sinfo", "-N"]),
        daemons.logs()
    );
    // Each node runs on the controller's files, cached in its spool.
    for i in 1..=3 {
        let cache = root.join(format!("spool/node{i}/conf-cache"));
        assert_eq!(
            std::fs::read_to_string(cache.join("slurm.conf")).unwrap(),
            text
        );
        assert!(cache.join("gres.conf").is_file());
        assert_eq!(mode(&cache.join("slurm.conf")), 0o644);
    }
    // A job finds the configuration with SLURM_CONF stripped (as a
    // workflow tool may): through /run/muster/conf on its node.
    let out = run(&[
        "sbatch",
        "--parsable",
        "-w",
        "node2",
        "-o",
        "conf.out",
        "--wrap",
        "echo \"$SLURM_CONF\"; readlink /run/muster/conf; \
         env -u SLURM_CONF squeue -h -j \"$SLURM_JOB_ID\" -o '%i %N'",
    ]);
    assert_eq!(out.code, 0, "sbatch from the login host: {out}");
    let id = out.stdout.trim().to_string();
    let state = until(secs(30), || {
        let out = run(&["squeue", "-h", "-t", "all", "-j", &id, "-o", "%T"]);
        let s = out.stdout.trim().to_string();
        matches!(s.as_str(), "COMPLETED" | "FAILED" | "CANCELLED").then_some(s)
    });
    assert_eq!(state.as_deref(), Some("COMPLETED"), "{}", daemons.logs());
    let cache2 = root.join("spool/node2/conf-cache");
    assert_eq!(
        std::fs::read_to_string(root.join("work/conf.out")).unwrap(),
        format!(
            "{}\n{}\n{id} node2\n",
            cache2.join("slurm.conf").display(),
            cache2.display()
        ),
        "{}",
        daemons.logs()
    );
    // A restart of a configless node daemon, as its unit does it (the
    // daemon alone, SIGKILL): the running job goes on, the new daemon
    // fetches the files again and reports the job's end.
    let out = run(&[
        "sbatch",
        "--parsable",
        "-w",
        "node3",
        "-o",
        "restart.out",
        "--wrap",
        "sleep 3; echo survived",
    ]);
    assert_eq!(out.code, 0, "{out}");
    let id = out.stdout.trim().to_string();
    let running = until(secs(30), || {
        let out = run(&["squeue", "-h", "-j", &id, "-o", "%T"]);
        (out.stdout.trim() == "RUNNING").then_some(())
    });
    assert!(running.is_some(), "{}", daemons.logs());
    daemons.kill("node3");
    daemons.spawn("node3", noded("node3"));
    let state = until(secs(60), || {
        let out = run(&["squeue", "-h", "-t", "all", "-j", &id, "-o", "%T"]);
        let s = out.stdout.trim().to_string();
        matches!(
            s.as_str(),
            "COMPLETED" | "FAILED" | "CANCELLED" | "NODE_FAIL"
        )
        .then_some(s)
    });
    assert_eq!(state.as_deref(), Some("COMPLETED"), "{}", daemons.logs());
    assert_eq!(
        std::fs::read_to_string(root.join("work/restart.out")).unwrap(),
        "survived\n"
    );
    // A two-node MPI job from the login host (MPICH through PMI-2).
    if !Path::new(MPICC_MPICH).exists() {
        assert!(
            std::env::var("MUSTER_REQUIRE_MPI").as_deref() != Ok("1"),
            "MUSTER_REQUIRE_MPI=1 but {MPICC_MPICH} is not installed"
        );
        eprintln!("deploy_guide_on_distinct_hosts: MPI part not run: no {MPICC_MPICH}");
        return;
    }
    std::fs::write(root.join("work/hello.c"), HELLO_C).unwrap();
    let st = Command::new(MPICC_MPICH)
        .args(["-o", "hello", "hello.c"])
        .current_dir(root.join("work"))
        .status()
        .expect("running mpicc");
    assert!(st.success());
    let out = run(&["srun", "-N2", "-n2", "--mpi=pmi2", "./hello"]);
    assert_eq!(out.code, 0, "{out}\n{}", daemons.logs());
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["rank 0 of 2 on node1 sum 3", "rank 1 of 2 on node2 sum 3"],
        "{out}"
    );
}

const HELLO_C: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    int mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
"#;
