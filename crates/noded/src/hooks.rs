//! Site scripts the node daemon runs as root (slurm.conf "Prolog and
//! Epilog Scripts"): `Prolog` before a job's first process on the node,
//! `Epilog` after its end, and `HealthCheckProgram` at start and every
//! `HealthCheckInterval`.
//!
//! ```text
//!   launch_batch --Prolog ok--> stepd starts the script
//!        |        --fails/times out--> JobExited{script_failed: Prolog}
//!        |                               (ctld: node DRAIN "Prolog error",
//!        |                                job requeued held)
//!   script ends --> Epilog --> JobExited{script_failed: Epilog if it failed}
//!                                (ctld: job ends as it did, node DRAIN
//!                                 "Epilog error")
//! ```
//!
//! A path with `*`, `?` or `[` in its last part names every matching file
//! of its directory, run in name order (`Prolog=/etc/slurm/prolog.d/*`);
//! the first that fails stops the rest. Scripts get only Slurm's variables
//! (no `PATH`, as Slurm), stdin from /dev/null, and output nowhere (the
//! health check's first line is kept for `drain_on_failure`).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PrologEpilogTimeout`'s "no limit" value (Slurm's default, 65534).
const NO_TIMEOUT: u64 = 65534;

/// The variables of a job a Prolog/Epilog gets from the launch's
/// environment (slurm.conf "Prolog and Epilog Scripts").
const JOB_VARS: &[&str] = &[
    "SLURM_CLUSTER_NAME",
    "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_CONSTRAINTS",
    "SLURM_JOB_GID",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_UID",
    "SLURM_JOB_USER",
    "SLURM_JOB_QOS",
];

/// What the daemon runs around jobs, from slurm.conf.
#[derive(Clone, Debug, Default)]
pub struct HookSettings {
    /// `Prolog`.
    pub prolog: Option<String>,
    /// `Epilog`.
    pub epilog: Option<String>,
    /// `PrologEpilogTimeout` (None: no limit).
    pub timeout: Option<Duration>,
    /// `PrologFlags=Serial`: one Prolog or Epilog at a time on the node.
    pub serial: bool,
    /// `PrologFlags=RunInJob`: the Prolog and Epilog run in the job's
    /// cgroup (`crate::daemon::scripts::job_cgroup`).
    pub run_in_job: bool,
    /// `HealthCheckProgram` and its settings.
    pub health: Option<HealthSettings>,
    /// `TaskProlog`: run as the user before each task of a step.
    pub task_prolog: Option<String>,
    /// `TaskEpilog`: run as the user after each task of a step.
    pub task_epilog: Option<String>,
}

/// `HealthCheckNodeState`: in which states of the node the check runs
/// (several words: any of them). `CYCLE` (Slurm: the nodes' runs spread
/// over the interval) runs on every node at each interval here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HealthStates {
    /// `IDLE`.
    pub idle: bool,
    /// `NONDRAINED_IDLE`: idle and not drained.
    pub nondrained_idle: bool,
    /// `ALLOC`: every CPU allocated.
    pub alloc: bool,
    /// `MIXED`: some.
    pub mixed: bool,
    /// `CYCLE`.
    pub cycle: bool,
}

impl HealthStates {
    /// Whether every state is one the check runs in (`ANY`).
    pub fn any(self) -> bool {
        self.idle && self.alloc && self.mixed
    }

    /// Whether the check runs on a node in `state`.
    pub fn covers(self, state: &model::NodeState) -> bool {
        use model::NodeBase;
        match state.base {
            NodeBase::Idle => self.idle || (self.nondrained_idle && !state.drain),
            NodeBase::Allocated => self.alloc,
            NodeBase::Mixed => self.mixed,
            _ => self.any(),
        }
    }
}

/// `HealthCheckProgram`, `HealthCheckInterval`, `HealthCheckNodeState`,
/// `HealthCheckParameters`.
#[derive(Clone, Debug)]
pub struct HealthSettings {
    /// The program (a glob as `Prolog`'s).
    pub program: String,
    /// Seconds between runs; zero: only at start.
    pub interval: Duration,
    /// When it runs (`ANY`: always).
    pub states: HealthStates,
    /// `HealthCheckParameters=drain_on_failure` (muster's own): a failing
    /// check drains the node with its first output line as the reason; a
    /// passing one resumes a node that it drained.
    pub drain_on_failure: bool,
}

impl HookSettings {
    /// From slurm.conf's keys (`Config::other`).
    pub fn from_config(config: &conf::Config) -> HookSettings {
        let other = |key: &str| {
            config
                .other
                .get(key)
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let timeout = other("prologepilogtimeout")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&s| s != NO_TIMEOUT && s > 0)
            .map(Duration::from_secs);
        let health = other("healthcheckprogram").map(|program| HealthSettings {
            program,
            interval: Duration::from_secs(
                other("healthcheckinterval")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            ),
            states: health_states(other("healthchecknodestate").as_deref().unwrap_or("ANY")),
            drain_on_failure: other("healthcheckparameters").is_some_and(|p| {
                p.split(',')
                    .any(|w| w.trim().eq_ignore_ascii_case("drain_on_failure"))
            }),
        });
        let flag = |word: &str| {
            other("prologflags")
                .is_some_and(|f| f.split(',').any(|w| w.trim().eq_ignore_ascii_case(word)))
        };
        let serial = flag("serial");
        HookSettings {
            run_in_job: flag("runinjob"),
            task_prolog: other("taskprolog"),
            task_epilog: other("taskepilog"),
            serial,
            prolog: other("prolog"),
            epilog: other("epilog"),
            timeout,
            health,
        }
    }
}

/// `HealthCheckNodeState`'s words (Slurm's default: `ANY`; `CYCLE` alone
/// is `ANY` too).
pub fn health_states(value: &str) -> HealthStates {
    let mut s = HealthStates::default();
    for w in value.split(',') {
        match w.trim().to_ascii_uppercase().as_str() {
            "ANY" => {
                s.idle = true;
                s.alloc = true;
                s.mixed = true;
            }
            "CYCLE" => s.cycle = true,
            "IDLE" => s.idle = true,
            "NONDRAINED_IDLE" => s.nondrained_idle = true,
            "ALLOC" => s.alloc = true,
            "MIXED" => s.mixed = true,
            _ => {}
        }
    }
    if !(s.idle || s.nondrained_idle || s.alloc || s.mixed) {
        s.idle = true;
        s.alloc = true;
        s.mixed = true;
    }
    s
}

/// The files `spec` names, in the order they run: the path itself, or
/// where its last part has a wildcard, the matching files of its
/// directory by name.
pub fn script_paths(spec: &str) -> Vec<PathBuf> {
    let path = Path::new(spec);
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return vec![path.to_path_buf()];
    };
    if !name.contains(['*', '?', '[']) {
        return vec![path.to_path_buf()];
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_str().is_some_and(|n| wildcard(name, n)))
                .filter(|e| e.path().is_file())
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

pub use conf::wildcard::wildcard;

/// The environment of a job's Prolog or Epilog (`context`: `prolog_slurmd`
/// or `epilog_slurmd`, Slurm's `SLURM_SCRIPT_CONTEXT`): the job's own
/// variables from its launch, its GPUs here, the node and the
/// configuration.
pub fn job_env(
    launch_env: &[(String, String)],
    gpus: &[u32],
    node: &str,
    conf_path: &str,
    context: &str,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = launch_env
        .iter()
        .filter(|(k, _)| JOB_VARS.contains(&k.as_str()))
        .cloned()
        .collect();
    let gpu_list = gpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if !gpus.is_empty() {
        env.retain(|(k, _)| k != "SLURM_JOB_GPUS");
        env.push(("SLURM_JOB_GPUS".into(), gpu_list.clone()));
        env.push(("CUDA_VISIBLE_DEVICES".into(), gpu_list));
    }
    env.push(("SLURMD_NODENAME".into(), node.into()));
    env.push(("SLURM_CONF".into(), conf_path.into()));
    env.push(("SLURM_SCRIPT_CONTEXT".into(), context.into()));
    env
}

/// Held while a Prolog or Epilog runs with `PrologFlags=Serial`.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl HookSettings {
    /// Runs a job's Prolog or Epilog (`spec`) with this node's timeout,
    /// one at a time with `PrologFlags=Serial`, each script joining
    /// `join`'s cgroup between fork and exec (`PrologFlags=RunInJob`).
    pub async fn run_job_script_in(
        &self,
        spec: &str,
        env: &[(String, String)],
        join: Option<&crate::cgroup::TaskJoin>,
    ) -> Outcome {
        let _one_at_a_time = if self.serial {
            Some(SERIAL.lock().await)
        } else {
            None
        };
        run_scripts_in(spec, env, self.timeout, join).await
    }
}

/// How a script run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// It exited 0 (every one of a glob's).
    pub ok: bool,
    /// Why not, for the log.
    pub why: String,
    /// The first line of the failing (or last) script's output.
    pub first_line: String,
    /// The failing (or last) script's exit code; None where it did not
    /// exit by itself (a signal, the timeout, not started).
    pub code: Option<i32>,
}

/// Runs the scripts `spec` names in order, as this process's user (root),
/// with only `env`; the first that fails or outlives `timeout` (killed,
/// with its process group) stops the rest.
pub async fn run_scripts(
    spec: &str,
    env: &[(String, String)],
    timeout: Option<Duration>,
) -> Outcome {
    run_scripts_in(spec, env, timeout, None).await
}

/// As `run_scripts`, each script joining `join`'s cgroup before it execs.
pub async fn run_scripts_in(
    spec: &str,
    env: &[(String, String)],
    timeout: Option<Duration>,
    join: Option<&crate::cgroup::TaskJoin>,
) -> Outcome {
    let mut last = Outcome {
        ok: true,
        why: String::new(),
        first_line: String::new(),
        code: Some(0),
    };
    for path in script_paths(spec) {
        last = run_one(&path, env, timeout, join).await;
        if !last.ok {
            break;
        }
    }
    last
}

async fn run_one(
    path: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
    join: Option<&crate::cgroup::TaskJoin>,
) -> Outcome {
    use tokio::io::AsyncReadExt;
    let fail = |why: String| Outcome {
        ok: false,
        why,
        first_line: String::new(),
        code: None,
    };
    let mut cmd = tokio::process::Command::new(path);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(join) = join.cloned() {
        // SAFETY: join_self only opens, writes and closes files named
        // before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if join.join_self() {
                    Ok(())
                } else {
                    Err(std::io::Error::other("cannot join the job's cgroup"))
                }
            });
        }
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot run {}: {e}", path.display())),
    };
    let pgid = child.id().map(|p| p as i32);
    let mut stdout = child.stdout.take();
    let run = async {
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            // Keep the first 4 KiB; drain the rest so the script never blocks.
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) if out.len() < 4096 => out.extend_from_slice(&buf[..n]),
                    Ok(_) => {}
                }
            }
        }
        (child.wait().await, out)
    };
    let result = match timeout {
        Some(t) => tokio::time::timeout(t, run).await,
        None => Ok(run.await),
    };
    match result {
        Err(_) => {
            if let Some(pg) = pgid {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pg),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            fail(format!(
                "{} timed out after {} s",
                path.display(),
                timeout.map_or(0, |t| t.as_secs())
            ))
        }
        Ok((Err(e), _)) => fail(format!("cannot wait for {}: {e}", path.display())),
        Ok((Ok(status), out)) => {
            let first_line = String::from_utf8_lossy(&out)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            Outcome {
                ok: status.success(),
                why: format!("{} exited with {status}", path.display()),
                first_line,
                code: status.code(),
            }
        }
    }
}

/// Runs a TaskProlog or TaskEpilog (slurm.conf's or srun's) for one
/// task, blocking: as the task's user (`switch`: uid, gid, groups) where
/// the supervisor is root, in the task's environment and working
/// directory. Returns its standard output; Slurm does not act on its
/// exit status.
pub fn run_task_script(
    path: &str,
    env: &[(String, String)],
    work_dir: &str,
    switch: Option<&(u32, u32, Vec<u32>)>,
) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(path);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    if Path::new(work_dir).is_dir() {
        cmd.current_dir(work_dir);
    }
    if let Some((uid, gid, groups)) = switch.cloned() {
        // SAFETY: setgroups, setgid and setuid are async-signal-safe, on
        // memory made before the fork.
        unsafe {
            cmd.pre_exec(move || crate::exec::become_user(uid, gid, &groups));
        }
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {path}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Applies a TaskProlog's output to the task's environment: `export
/// NAME=value` sets, `unset NAME` removes; returns the text of its `print
/// ...` lines (for the task's standard output), each with its newline.
pub fn apply_task_prolog(output: &str, env: &mut Vec<(String, String)>) -> String {
    let mut printed = String::new();
    for line in output.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("export ") {
            if let Some((name, value)) = rest.trim().split_once('=') {
                let name = name.trim();
                if !name.is_empty() {
                    env.retain(|(k, _)| k != name);
                    env.push((name.to_string(), value.to_string()));
                }
            }
        } else if let Some(rest) = line.strip_prefix("unset ") {
            let name = rest.trim();
            env.retain(|(k, _)| k != name);
        } else if let Some(rest) = line.strip_prefix("print ") {
            printed.push_str(rest);
            printed.push('\n');
        }
    }
    printed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prolog_flags_run_in_job_and_serial_are_read() {
        let hooks = |flags: &str| {
            let text = format!("ClusterName=c\nSlurmctldHost=h\nNodeName=a\nPrologFlags={flags}\n");
            let config = conf::parse_str(&text, Path::new("/x/slurm.conf"), &mut |_| {
                Err(std::io::Error::other("no includes"))
            })
            .expect("parses")
            .config;
            HookSettings::from_config(&config)
        };
        let h = hooks("Contain,RunInJob");
        assert!(h.run_in_job && !h.serial);
        let h = hooks("serial");
        assert!(!h.run_in_job && h.serial);
    }

    /// The script joins the cgroup before it execs (a fake cgroup.procs:
    /// the join writes `0` into it); a join that fails is a failed script.
    #[tokio::test]
    async fn a_script_joins_its_cgroup_before_it_runs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("prolog");
        let ran = dir.path().join("ran");
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho yes > {}\n", ran.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let procs = dir.path().join("cgroup.procs");
        std::fs::write(&procs, "").unwrap();
        let join = crate::cgroup::TaskJoin::new(std::slice::from_ref(&procs));
        let spec = script.to_string_lossy().into_owned();
        let outcome = run_scripts_in(&spec, &[], None, Some(&join)).await;
        assert!(outcome.ok, "{outcome:?}");
        assert_eq!(std::fs::read_to_string(&procs).unwrap(), "0");
        assert_eq!(std::fs::read_to_string(&ran).unwrap(), "yes\n");

        std::fs::remove_file(&ran).unwrap();
        let gone = crate::cgroup::TaskJoin::new(&[dir.path().join("no/cgroup.procs")]);
        let outcome = run_scripts_in(&spec, &[], None, Some(&gone)).await;
        assert!(!outcome.ok);
        assert!(!ran.exists());
    }

    #[test]
    fn wildcards_match_as_the_shell_does() {
        assert!(wildcard("*", "10-gpu"));
        assert!(!wildcard("*", ".hidden"));
        assert!(wildcard("*.sh", "a.sh"));
        assert!(!wildcard("*.sh", "a.shx"));
        assert!(wildcard("??-x", "10-x"));
        assert!(wildcard("[0-9]*", "5a"));
        assert!(!wildcard("[!0-9]*", "5a"));
    }

    #[test]
    fn a_glob_names_its_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["20-b", "10-a", "README.txt"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let spec = format!("{}/[0-9]*", dir.path().display());
        let names: Vec<_> = script_paths(&spec)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["10-a", "20-b"]);
        assert_eq!(script_paths("/etc/prolog"), [PathBuf::from("/etc/prolog")]);
    }

    #[test]
    fn health_states_read_slurm_words() {
        use model::{NodeBase, NodeState};
        let idle = NodeState::new(NodeBase::Idle);
        let drained = NodeState {
            drain: true,
            ..idle
        };
        let alloc = NodeState::new(NodeBase::Allocated);
        assert!(health_states("IDLE").covers(&idle));
        assert!(!health_states("IDLE").covers(&alloc));
        assert!(health_states("ALLOC,MIXED").covers(&alloc));
        assert!(!health_states("NONDRAINED_IDLE").covers(&drained));
        assert!(health_states("NONDRAINED_IDLE").covers(&idle));
        assert!(health_states("ANY").covers(&drained));
        let cycle = health_states("CYCLE");
        assert!(cycle.cycle && cycle.any());
    }

    #[test]
    fn task_prolog_lines_set_unset_and_print() {
        let mut env = vec![
            ("A".to_string(), "1".to_string()),
            ("GONE".to_string(), "x".to_string()),
        ];
        let printed = apply_task_prolog(
            "export A=2\nexport B=x=y\nunset GONE\nprint hello world\nnoise\n",
            &mut env,
        );
        assert_eq!(
            env,
            [
                ("A".to_string(), "2".to_string()),
                ("B".to_string(), "x=y".to_string())
            ]
        );
        assert_eq!(printed, "hello world\n");
    }

    #[test]
    fn job_env_keeps_slurm_variables_and_adds_the_node_and_gpus() {
        let launch = vec![
            ("SLURM_JOB_ID".to_string(), "7".to_string()),
            ("HOME".to_string(), "/home/u".to_string()),
        ];
        let env = job_env(&launch, &[1, 3], "n1", "/etc/slurm.conf", "prolog_slurmd");
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("SLURM_JOB_ID"), Some("7"));
        assert_eq!(get("HOME"), None);
        assert_eq!(get("CUDA_VISIBLE_DEVICES"), Some("1,3"));
        assert_eq!(get("SLURMD_NODENAME"), Some("n1"));
        assert_eq!(get("SLURM_SCRIPT_CONTEXT"), Some("prolog_slurmd"));
    }
}
