use super::*;

#[test]
fn pages_for_muster_its_subcommands_and_the_slurm_commands() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_pages(dir.path()).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for page in [
        "muster.1",
        "muster-up.1",
        "muster-down.1",
        "muster-install-links.1",
        "muster-ctld.1",
        "muster-noded.1",
        "muster-restd.1",
        "muster-sim.1",
        "muster-explain.1",
        "muster-check-config.1",
        "muster-completions.1",
        "muster-man.1",
    ] {
        assert!(names.iter().any(|n| n == page), "{page} missing: {names:?}");
    }
    for name in cli::COMMANDS {
        assert!(names.iter().any(|n| *n == format!("{name}.1")), "{name}.1");
    }
    let up = std::fs::read_to_string(dir.path().join("muster-up.1")).unwrap();
    assert!(up.contains("\\-\\-detach"), "{up}");
    assert!(up.contains("\\-\\-state\\-dir"), "{up}");
    let sbatch = std::fs::read_to_string(dir.path().join("sbatch.1")).unwrap();
    assert!(sbatch.contains("\\-\\-time"), "{sbatch}");
    assert!(sbatch.contains("\\-t"), "{sbatch}");
    assert!(sbatch.contains("22.05"), "{sbatch}");
    assert!(
        sbatch.contains("refused here: nodes are not chosen by a minimum CPU count"),
        "{sbatch}"
    );
    assert!(
        sbatch.contains("ignored here, with a warning: wckeys are not tracked"),
        "{sbatch}"
    );
}

#[test]
fn every_slurm_command_has_an_option_table() {
    for name in cli::COMMANDS {
        let cmd = slurm_command(name).unwrap_or_else(|| panic!("{name}"));
        cmd.clone().debug_assert();
        assert!(cmd.get_arguments().count() > 0, "{name}");
    }
    assert!(slurm_command("nosuch").is_none());
    let squeue = slurm_command("squeue").unwrap();
    let user = squeue
        .get_arguments()
        .find(|a| a.get_long() == Some("user"))
        .expect("squeue --user");
    assert_eq!(user.get_short(), Some('u'));
}

#[test]
fn completions_name_the_subcommands_and_their_flags() {
    let bash = String::from_utf8(completions(clap_complete::Shell::Bash)).unwrap();
    for word in ["check-config", "install-links", "--state-dir", "--trace"] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    for shell in [clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
        let text = String::from_utf8(completions(shell)).unwrap();
        assert!(text.contains("check-config"), "{shell}");
    }
}
