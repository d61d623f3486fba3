//! muster's own command line (issue 38 items 8 and 2): `--help` and
//! `--version` on the subcommands, completions, man pages, and
//! `muster check-config --diff` against a running controller.

use std::process::Command;

fn muster_in(cwd: &std::path::Path, args: &[&str]) -> e2e::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SLURM_CONF")
        .output()
        .expect("running muster");
    e2e::Output {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

#[test]
fn issue_38_up_help_is_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = muster_in(dir.path(), &["up", "--help"]);
    assert_eq!(out.code, 0, "{out}");
    for flag in ["--detach", "--confine", "--state-dir", "--nodes"] {
        assert!(out.stdout.contains(flag), "{flag}: {out}");
    }
    // Nothing was started or written.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn issue_38_install_links_help_makes_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = muster_in(dir.path(), &["install-links", "--help"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("DIR"), "{out}");
    assert!(!dir.path().join("--help").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Without DIR: a usage error, still nothing made.
    let out = muster_in(dir.path(), &["install-links"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn every_subcommand_answers_help_and_version() {
    let dir = tempfile::tempdir().unwrap();
    for sub in [
        "up",
        "down",
        "install-links",
        "ctld",
        "noded",
        "sim",
        "explain",
        "check-config",
        "keygen",
        "completions",
        "man",
    ] {
        let help = muster_in(dir.path(), &[sub, "--help"]);
        assert_eq!(help.code, 0, "{sub} --help: {help}");
        assert!(help.stdout.contains("Usage: muster "), "{sub}: {help}");
        let version = muster_in(dir.path(), &[sub, "--version"]);
        assert_eq!(version.code, 0, "{sub} --version: {version}");
        assert!(version.stdout.contains("(commit "), "{sub}: {version}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn version_shows_the_release_and_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let out = muster_in(dir.path(), &["--version"]);
    assert_eq!(out.code, 0, "{out}");
    // The commit the test binary was built from: cargo reruns the build
    // script when HEAD moves. Outside a git checkout, `unknown`.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    assert_eq!(
        out.stdout,
        format!("muster {} (commit {head})\n", env!("CARGO_PKG_VERSION"))
    );
    // The Slurm commands keep Slurm's line.
    let out = muster_in(dir.path(), &["sbatch", "--version"]);
    assert_eq!(out.stdout, "slurm 22.05.8\n", "{out}");
}

#[test]
fn completions_and_man_pages() {
    let dir = tempfile::tempdir().unwrap();
    let out = muster_in(dir.path(), &["completions", "bash"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("_muster"), "{out}");
    assert!(out.stdout.contains("check-config"), "{out}");
    assert!(out.stdout.contains("--state-dir"), "{out}");
    for shell in ["zsh", "fish"] {
        let out = muster_in(dir.path(), &["completions", shell]);
        assert_eq!(out.code, 0, "{shell}: {out}");
        assert!(out.stdout.contains("install-links"), "{shell}: {out}");
    }
    assert_eq!(muster_in(dir.path(), &["completions", "tcsh"]).code, 1);
    let pages = dir.path().join("man1");
    let out = muster_in(dir.path(), &["man", &pages.display().to_string()]);
    assert_eq!(out.code, 0, "{out}");
    for page in [
        "muster.1",
        "muster-up.1",
        "muster-check-config.1",
        "sbatch.1",
        "squeue.1",
    ] {
        let text = std::fs::read_to_string(pages.join(page)).unwrap_or_default();
        assert!(text.starts_with(".ie \\n(.g .ds Aq"), "{page}: {text}");
    }
}

#[test]
fn check_config_diff_against_the_running_controller() {
    let c = crate::cluster(2);
    // The file the controller runs with: nothing to apply.
    let out = c.run("check-config", &["--diff"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout
            .contains("diff: the running controller uses this configuration\n"),
        "{out}"
    );
    assert!(
        out.stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("checked slurm.conf"),
        "{out}"
    );
    // A changed copy beside it: each change, and whether `scontrol
    // reconfigure` applies it or it needs a restart.
    let text = std::fs::read_to_string(c.conf()).unwrap();
    let new = c.conf().with_file_name("slurm-new.conf");
    std::fs::write(&new, format!("{text}\nKillWait=17\nMessageTimeout=17\n")).unwrap();
    let out = c.run(
        "check-config",
        &["-f", &new.display().to_string(), "--diff"],
    );
    assert_eq!(out.code, 0, "{out}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("diff: KillWait: running "))
        .unwrap_or_else(|| panic!("no KillWait change: {out}"));
    assert!(
        line.ends_with("-> file 17 sec: applied by `scontrol reconfigure`"),
        "{line}"
    );
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("diff: MessageTimeout: running "))
        .unwrap_or_else(|| panic!("no MessageTimeout change: {out}"));
    assert!(line.ends_with("-> file 17 sec: needs a restart"), "{line}");
    assert!(
        out.stdout
            .contains("diff: 2 changes: 1 applied by `scontrol reconfigure`, 1 needs a restart"),
        "{out}"
    );
    // A broken file: its error at file:line, exit 1, and no comparison.
    std::fs::write(&new, format!("{text}\nKillWait=soon\n")).unwrap();
    let out = c.run(
        "check-config",
        &["-f", &new.display().to_string(), "--diff"],
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stdout.contains("slurm-new.conf:")
            && out
                .stdout
                .contains(": error: invalid value \"soon\" for KillWait"),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("diff: not compared: slurm-new.conf has errors"),
        "{out}"
    );
}
