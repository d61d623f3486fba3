use super::*;
use clap::Parser;

fn parse(words: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("muster").chain(words.iter().copied()))
}

#[test]
fn command_tree_is_consistent() {
    command().debug_assert();
}

#[test]
fn every_subcommand_has_help_and_version() {
    for sub in [
        "up",
        "down",
        "install-links",
        "ctld",
        "noded",
        "restd",
        "sim",
        "explain",
        "check-config",
        "keygen",
        "completions",
        "man",
    ] {
        let help = parse(&[sub, "--help"]).expect_err("--help stops the parse");
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp, "{sub}");
        assert!(!help.use_stderr(), "{sub} --help prints to stdout");
        let version = parse(&[sub, "--version"]).expect_err("--version stops the parse");
        assert_eq!(
            version.kind(),
            clap::error::ErrorKind::DisplayVersion,
            "{sub}"
        );
        assert!(version.to_string().contains(VERSION), "{sub}: {version}");
    }
}

#[test]
fn version_names_the_release_and_the_commit() {
    assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")));
    assert!(VERSION.contains("(commit "), "{VERSION}");
}

#[test]
fn up_keeps_its_flags() {
    let Sub::Up(a) = parse(&["up", "--detach", "--state-dir", "/tmp/x", "--nodes", "2"])
        .unwrap()
        .command
    else {
        panic!("not up");
    };
    assert!(a.detach && !a.confine);
    assert_eq!(a.state_dir, Some(PathBuf::from("/tmp/x")));
    assert_eq!(a.nodes, 2);
    let Sub::Up(a) = parse(&["up", "-d", "-N", "3", "--confine", "--state-dir=/s"])
        .unwrap()
        .command
    else {
        panic!("not up");
    };
    assert!(a.detach && a.confine);
    assert_eq!(a.nodes, 3);
    assert!(parse(&["up", "--nodes", "65"]).is_err());
    assert!(parse(&["up", "--nodes", "0"]).is_err());
    let Sub::Up(a) = parse(&["up"]).unwrap().command else {
        panic!("not up");
    };
    assert_eq!((a.nodes, a.detach, a.state_dir), (4, false, None));
}

#[test]
fn issue_38_install_links_help_is_help_not_a_directory() {
    let e = parse(&["install-links", "--help"]).expect_err("help");
    assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
    assert!(parse(&["install-links"]).is_err(), "DIR is required");
    let Sub::InstallLinks(a) = parse(&["install-links", "/opt/bin"]).unwrap().command else {
        panic!("not install-links");
    };
    assert_eq!(a.dir, PathBuf::from("/opt/bin"));
}

#[test]
fn daemons_keep_slurm_style_flags() {
    let Sub::Noded(a) = parse(&["noded", "-N", "node1", "-f", "/etc/slurm.conf", "-vv", "-D"])
        .unwrap()
        .command
    else {
        panic!("not noded");
    };
    assert_eq!(a.node_name.as_deref(), Some("node1"));
    assert_eq!(a.conf, Some(PathBuf::from("/etc/slurm.conf")));
    assert_eq!((a.verbose, a.foreground), (2, true));
    let Sub::Noded(a) = parse(&["noded", "-Nnode2", "-f/x.conf"]).unwrap().command else {
        panic!("not noded");
    };
    assert_eq!(a.node_name.as_deref(), Some("node2"));
    assert_eq!(a.conf, Some(PathBuf::from("/x.conf")));
    let Sub::Ctld(a) = parse(&["ctld", "-f", "slurm.conf", "-D", "-v"])
        .unwrap()
        .command
    else {
        panic!("not ctld");
    };
    assert_eq!(a.conf, Some(PathBuf::from("slurm.conf")));
    assert_eq!((a.verbose, a.foreground), (1, true));
}

#[test]
fn sim_keeps_its_flags() {
    let Sub::Sim(a) = parse(&[
        "sim",
        "--trace",
        "t.swf",
        "--policy",
        "EASY",
        "--json",
        "--quiet",
        "--limit=10",
        "--format",
        "sacct",
    ])
    .unwrap()
    .command
    else {
        panic!("not sim");
    };
    let s = a.to_sim();
    assert_eq!(s.trace, PathBuf::from("t.swf"));
    assert_eq!(s.policy, sim::parse_policy("easy"));
    assert!(s.json && s.quiet && !s.skip_bad_lines);
    assert_eq!(s.limit, Some(10));
    assert_eq!(s.format, Some(sim::Format::Sacct));
    let Sub::Sim(a) = parse(&["sim", "--trace", "t", "--policy", "builtin"])
        .unwrap()
        .command
    else {
        panic!("not sim");
    };
    assert_eq!(a.to_sim().policy, sim::parse_policy("fcfs"));
    assert!(!a.to_sim().engine);
    let Sub::Sim(a) = parse(&["sim", "--trace", "t", "--policy", "easy", "--engine"])
        .unwrap()
        .command
    else {
        panic!("not sim");
    };
    assert!(a.to_sim().engine, "--engine runs EASY through the engine");
    assert!(parse(&["sim"]).is_err(), "--trace is required");
    assert!(parse(&["sim", "--trace", "t", "--policy", "lifo"]).is_err());
}

#[test]
fn check_config_flags() {
    let Sub::CheckConfig(a) = parse(&["check-config", "-f", "a.conf", "--diff"])
        .unwrap()
        .command
    else {
        panic!("not check-config");
    };
    assert_eq!(a.file, Some(PathBuf::from("a.conf")));
    assert!(a.diff);
}

#[test]
fn restd_takes_slurmrestds_arguments() {
    let Sub::Restd(a) = parse(&[
        "restd",
        "-f",
        "/etc/slurm.conf",
        "-a",
        "rest_auth/jwt",
        "6820",
        "unix:/run/r.sock",
    ])
    .unwrap()
    .command
    else {
        panic!("not restd");
    };
    assert_eq!(
        a.conf.as_deref(),
        Some(std::path::Path::new("/etc/slurm.conf"))
    );
    assert_eq!(a.auth.as_deref(), Some("rest_auth/jwt"));
    assert_eq!(a.listen, vec!["6820", "unix:/run/r.sock"]);
    assert!(parse(&["restd"]).is_err(), "a listen address is required");
}
