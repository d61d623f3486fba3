//! `PrologSlurmctld` and `EpilogSlurmctld` for the engine's
//! `Command::CtldScript`, off the engine task: each run is a tokio task
//! that starts the program (as the controller's own user, SlurmUser),
//! waits for it under `PrologEpilogTimeout`, and for a prolog sends its
//! end back to the engine task (`Msg::PrologSlurmctldEnded`, journaled,
//! then `Input::PrologSlurmctldEnded`). An epilog's failure is logged.
//!
//! As slurm.conf(5) says for these programs: no search path (give full
//! paths), the job's `SLURM_JOB_*` variables, `SLURM_SCRIPT_CONTEXT`
//! (`prolog_slurmctld`, `epilog_slurmctld`) and `SLURM_CONF`; stdin from
//! /dev/null, output dropped. A glob (`PrologSlurmctld=/etc/slurm/pc.d/*`)
//! runs its files in name order; the first that fails stops the rest.

use crate::Msg;
use model::JobId;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{info, warn};

/// `PrologEpilogTimeout`'s "no limit" (Slurm's default, 65534).
const NO_TIMEOUT: u64 = 65534;

/// The controller's scripts as slurm.conf sets them.
pub(crate) struct CtldScripts {
    prolog: Option<String>,
    epilog: Option<String>,
    timeout: Option<Duration>,
    conf_path: PathBuf,
}

impl CtldScripts {
    pub(crate) fn from_config(cfg: &conf::Config, conf_path: &Path) -> CtldScripts {
        let get = |k: &str| {
            cfg.other
                .get(k)
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        CtldScripts {
            prolog: get("prologslurmctld"),
            epilog: get("epilogslurmctld"),
            timeout: get("prologepilogtimeout")
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|&s| s > 0 && s != NO_TIMEOUT)
                .map(Duration::from_secs),
            conf_path: conf_path.to_path_buf(),
        }
    }

    /// Starts job `job_id`'s PrologSlurmctld (`prolog`) or
    /// EpilogSlurmctld for its run `run`; does not wait for it.
    pub(crate) fn run(
        &self,
        job_id: JobId,
        run: u32,
        prolog: bool,
        mut env: Vec<(String, String)>,
        engine_tx: &mpsc::UnboundedSender<Msg>,
    ) {
        let (name, spec) = if prolog {
            ("PrologSlurmctld", self.prolog.clone())
        } else {
            ("EpilogSlurmctld", self.epilog.clone())
        };
        let Some(spec) = spec else {
            // Set by a reconfigure this process has not read: nothing to
            // run, and a prolog must not leave the job configuring.
            warn!("job {job_id}: no {name} configured here; the job goes on");
            if prolog {
                let _ = engine_tx.send(Msg::PrologSlurmctldEnded {
                    job_id,
                    run,
                    ok: true,
                });
            }
            return;
        };
        env.push((
            "SLURM_CONF".into(),
            self.conf_path.to_string_lossy().into_owned(),
        ));
        let timeout = self.timeout;
        let tx = engine_tx.clone();
        tokio::spawn(async move {
            let outcome = run_scripts(&spec, &env, timeout).await;
            match &outcome {
                Ok(()) => info!("job {job_id}: {name} done"),
                Err(why) => warn!("job {job_id}: {name} failed: {why}"),
            }
            if prolog {
                let _ = tx.send(Msg::PrologSlurmctldEnded {
                    job_id,
                    run,
                    ok: outcome.is_ok(),
                });
            }
        });
    }
}

/// The files `spec` names: itself, or where its last part has a
/// wildcard, the matching files of its directory by name.
fn script_paths(spec: &str) -> Vec<PathBuf> {
    let path = Path::new(spec);
    let Some(pattern) = path.file_name().and_then(|n| n.to_str()) else {
        return vec![path.to_path_buf()];
    };
    if !pattern.contains(['*', '?', '[']) {
        return vec![path.to_path_buf()];
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| conf::wildcard::wildcard(pattern, n))
                })
                .filter(|e| e.path().is_file())
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Runs `spec`'s files in order with only `env`; Err with why at the
/// first that fails or outlives `timeout` (killed with its process
/// group).
async fn run_scripts(
    spec: &str,
    env: &[(String, String)],
    timeout: Option<Duration>,
) -> Result<(), String> {
    for path in script_paths(spec) {
        let mut cmd = tokio::process::Command::new(&path);
        cmd.env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
        let pgid = child.id();
        let waited = match timeout {
            Some(t) => tokio::time::timeout(t, child.wait()).await,
            None => Ok(child.wait().await),
        };
        match waited {
            Err(_) => {
                if let Some(pg) = pgid.and_then(|p| i32::try_from(p).ok()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pg),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                return Err(format!(
                    "{} timed out after {} s",
                    path.display(),
                    timeout.map_or(0, |t| t.as_secs())
                ));
            }
            Ok(Err(e)) => return Err(format!("cannot wait for {}: {e}", path.display())),
            Ok(Ok(status)) if !status.success() => {
                return Err(format!("{} exited with {status}", path.display()));
            }
            Ok(Ok(_)) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_pick_files_in_name_order() {
        assert!(conf::wildcard::wildcard("[0-9]*", "10-a"));
        assert!(!conf::wildcard::wildcard("*", ".hidden"));
        assert!(!conf::wildcard::wildcard("[!0-9]*", "5x"));
        let dir = tempfile::tempdir().unwrap();
        for n in ["20-b", "10-a", "notes"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let got = script_paths(&format!("{}/[0-9]*", dir.path().display()));
        let names: Vec<_> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["10-a", "20-b"]);
    }

    #[tokio::test]
    async fn a_failing_or_slow_script_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p.display().to_string()
        };
        let ok = write("ok", "exit 0");
        let bad = write("bad", "exit 3");
        let slow = write("slow", "exec sleep 30");
        assert_eq!(run_scripts(&ok, &[], None).await, Ok(()));
        assert!(run_scripts(&bad, &[], None)
            .await
            .unwrap_err()
            .contains("exit status: 3"));
        let t = Some(Duration::from_secs(1));
        assert!(run_scripts(&slow, &[], t)
            .await
            .unwrap_err()
            .contains("timed out"));
    }
}
