//! Hostile input for the slurm.conf and gres.conf parsers: random text,
//! random `Key=Value` lines with garbage values, `Include` graphs with
//! cycles, and hostlists far beyond `hostlist::MAX_HOSTS`. Every input must
//! give `Ok` or a `ConfError`, never a panic, a hang, or an exhausted memory.

// A test times the parser with the clock; tests may read it.
#![allow(clippy::disallowed_methods)]

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

const ORIGIN: &str = "/etc/slurm/slurm.conf";

/// The smallest configuration that loads.
const BASE: &str = "ClusterName=c\nSlurmctldHost=ctl\n";

fn parse(text: &str) -> Result<conf::Loaded, conf::ConfError> {
    let mut no_include = |p: &Path| -> std::io::Result<String> {
        Err(std::io::Error::other(p.display().to_string()))
    };
    conf::parse_str(text, Path::new(ORIGIN), &mut no_include)
}

/// Keys the parser gives meaning to, in slurm.conf's spelling, plus a few
/// it does not know.
const KEYS: &[&str] = &[
    "NodeName",
    "PartitionName",
    "NodeSet",
    "DownNodes",
    "FrontendName",
    "Include",
    "NodeAddr",
    "NodeHostname",
    "Port",
    "CPUs",
    "Procs",
    "Boards",
    "Sockets",
    "SocketsPerBoard",
    "CoresPerSocket",
    "ThreadsPerCore",
    "RealMemory",
    "TmpDisk",
    "Gres",
    "Features",
    "Weight",
    "State",
    "Reason",
    "Nodes",
    "Default",
    "MaxTime",
    "DefaultTime",
    "MaxNodes",
    "MinNodes",
    "PriorityTier",
    "PriorityJobFactor",
    "OverSubscribe",
    "AllowAccounts",
    "AllowGroups",
    "DefMemPerCPU",
    "MaxMemPerNode",
    "ClusterName",
    "ControlMachine",
    "SlurmctldHost",
    "SlurmctldPort",
    "SlurmdPort",
    "StateSaveLocation",
    "SlurmdSpoolDir",
    "SlurmUser",
    "SlurmdTimeout",
    "KillWait",
    "MinJobAge",
    "MaxJobCount",
    "FirstJobId",
    "ReturnToService",
    "GresTypes",
    "DefMemPerNode",
    "AuthType",
    "SelectTypeParameters",
    "SlurmdParameters",
    "NoSuchKey",
    "",
];

/// Values a careless or hostile admin might write.
fn garbage_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("DEFAULT".to_string()),
        Just("INFINITE".to_string()),
        Just("UNLIMITED".to_string()),
        Just("YES".to_string()),
        Just("\"".to_string()),
        Just("\"a b\"".to_string()),
        Just("\\".to_string()),
        Just("#".to_string()),
        Just("=".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("4294967296".to_string()),
        Just("n[1-99999999]".to_string()),
        Just("n[1-99999999999999999999]".to_string()),
        Just("n[0-1048576]".to_string()),
        Just("n[1-3],n[2-4]".to_string()),
        Just("n[".to_string()),
        Just("n]".to_string()),
        Just("n[[1]]".to_string()),
        Just("[1-65536]".to_string()),
        Just("gpu:a100:99999999999".to_string()),
        Just("gpu:0".to_string()),
        Just("1-25:61:61".to_string()),
        Just("9999999-00:00:00".to_string()),
        Just("99999999999T".to_string()),
        Just("ctl(".to_string()),
        Just("ctl(1.2.3.4)".to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[a-z0-9,\\[\\]\\-:()]{0,24}",
        "\\PC{0,12}",
    ]
}

fn key_value_line() -> impl Strategy<Value = String> {
    let pair = (prop::sample::select(KEYS), garbage_value()).prop_map(|(k, v)| format!("{k}={v}"));
    prop::collection::vec(pair, 1..6).prop_map(|pairs| pairs.join(" "))
}

fn random_line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => key_value_line(),
        1 => "\\PC{0,40}",
        1 => "[ -~]{0,40}",
        1 => garbage_value().prop_map(|v| format!("Include {v}")),
        1 => Just("\\".to_string()),
        1 => Just("NodeName=DEFAULT CPUs=4".to_string()),
        1 => Just("PartitionName=DEFAULT MaxTime=1".to_string()),
    ]
}

/// The names an `Include` graph may use: a cycle is any edge back.
const FILES: &[&str] = &[
    "a.conf",
    "b.conf",
    "c.conf",
    "/etc/slurm/slurm.conf",
    "d.conf",
];

fn include_graph() -> impl Strategy<Value = BTreeMap<String, String>> {
    let file_text = prop::collection::vec(
        prop_oneof![
            2 => prop::sample::select(FILES).prop_map(|f| format!("Include {f}")),
            1 => random_line(),
        ],
        0..4,
    )
    .prop_map(|lines| lines.join("\n"));
    prop::collection::btree_map(
        prop::sample::select(FILES).prop_map(str::to_string),
        file_text,
        0..5,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let _ = parse(&text);
        let _ = parse(&format!("{BASE}{text}"));
        let _ = conf::parse_gres_conf(&text, Path::new("gres.conf"));
    }

    #[test]
    fn arbitrary_bytes_as_lossy_text_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse(&text);
        let _ = conf::parse_gres_conf(&text, Path::new("gres.conf"));
    }

    #[test]
    fn random_key_value_lines_never_panic(lines in prop::collection::vec(random_line(), 0..12)) {
        let text = lines.join("\n");
        let _ = parse(&text);
        if let Ok(loaded) = parse(&format!("{BASE}{text}")) {
            // What loads can be shown, as `scontrol show config` does.
            let _ = conf::render_show_config(&loaded.config.show_config_entries());
        }
        let _ = conf::parse_gres_conf(&text, Path::new("gres.conf"));
    }

    #[test]
    fn random_lines_among_valid_ones_never_panic(
        extra in prop::collection::vec(random_line(), 0..6),
        at in any::<prop::sample::Index>(),
    ) {
        let mut lines: Vec<String> = [
            "ClusterName=c",
            "SlurmctldHost=ctl(127.0.0.1)",
            "GresTypes=gpu",
            "NodeName=n[1-4] CPUs=8 RealMemory=1000 Gres=gpu:2",
            "PartitionName=p Nodes=n[1-4] Default=YES",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let i = at.index(lines.len() + 1);
        for (k, l) in extra.into_iter().enumerate() {
            lines.insert(i + k, l);
        }
        let _ = parse(&lines.join("\n"));
    }

    #[test]
    fn include_graphs_with_cycles_end(files in include_graph(), root in random_line()) {
        let mut include = |p: &Path| -> std::io::Result<String> {
            let name = p.display().to_string();
            files
                .iter()
                .find(|(f, _)| name == **f || name.ends_with(&format!("/{f}")))
                .map(|(_, text)| text.clone())
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, name))
        };
        let text = format!("{BASE}{root}\nInclude a.conf\n");
        let _ = conf::parse_str(&text, Path::new(ORIGIN), &mut include);
    }

    #[test]
    fn gres_conf_random_lines_never_panic(lines in prop::collection::vec(
        prop_oneof![
            (prop::sample::select(&["NodeName", "Name", "Type", "File", "Count", "Cores", "CPUs",
                                    "AutoDetect", "Flags", "Links", "Bogus"][..]),
             garbage_value())
                .prop_map(|(k, v)| format!("{k}={v}")),
            "\\PC{0,30}",
        ],
        0..10,
    )) {
        let _ = conf::parse_gres_conf(&lines.join(" "), Path::new("gres.conf"));
        let _ = conf::parse_gres_conf(&lines.join("\n"), Path::new("gres.conf"));
    }
}

#[test]
fn a_self_including_file_is_an_include_depth_error() {
    let mut include = |_: &Path| -> std::io::Result<String> { Ok("Include again.conf\n".into()) };
    let err = conf::parse_str(
        &format!("{BASE}Include again.conf\n"),
        Path::new(ORIGIN),
        &mut include,
    )
    .unwrap_err();
    assert!(matches!(err, conf::ConfError::IncludeDepth { .. }), "{err}");
}

#[test]
fn huge_hostlists_are_errors_not_allocations() {
    for line in [
        "NodeName=node[1-99999999] CPUs=1",
        "NodeName=node[1-99999999999999999999] CPUs=1",
        "NodeName=r[1-2000]n[1-2000] CPUs=1",
        "NodeName=n1 CPUs=1\nPartitionName=p Nodes=n[1-99999999]",
        "NodeName=n1 CPUs=1\nDownNodes=n[1-99999999] State=DOWN",
        "NodeName=n1 CPUs=1\nNodeSet=s Nodes=n[1-99999999]",
        "NodeName=n1 NodeAddr=a[1-99999999] CPUs=1",
        "NodeName=n1 NodeHostname=a[1-99999999] CPUs=1",
        "NodeName=n1 Port=[1-99999999] CPUs=1",
    ] {
        let err = parse(&format!("{BASE}{line}\n")).unwrap_err();
        assert!(
            matches!(err, conf::ConfError::Invalid { .. }),
            "{line}: {err}"
        );
    }
    for line in [
        "NodeName=node[1-99999999] Name=gpu",
        "Name=gpu File=/dev/nvidia[0-99999999]",
    ] {
        let err = conf::parse_gres_conf(line, Path::new("gres.conf")).unwrap_err();
        assert!(
            matches!(err, conf::ConfError::Invalid { .. }),
            "{line}: {err}"
        );
    }
}

#[test]
fn a_very_long_line_is_parsed_in_linear_time() {
    // One logical line of a megabyte, joined from continuation lines.
    let long = "Reason=x\\\n".repeat(100_000);
    let start = std::time::Instant::now();
    let _ = parse(&format!("{BASE}NodeName=n1 {long}CPUs=1\n"));
    let _ = parse(&format!("{BASE}{}", "#".repeat(1 << 20)));
    let _ = parse(&format!("{BASE}Reason=\"{}", "a".repeat(1 << 20)));
    assert!(start.elapsed() < std::time::Duration::from_secs(4));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// The unit parsers slurm.conf values go through (and sbatch's
    /// `--time`, `--mem`, GRES counts).
    #[test]
    fn unit_parsers_never_panic(s in prop_oneof![
        garbage_value(),
        "[0-9]{0,25}[kKmMgGtTpPeEbB]{0,3}",
        "[0-9:\\-]{0,25}",
    ]) {
        let _ = model::units::parse_time_limit(&s);
        let _ = model::units::parse_count(&s);
        if let Ok(mb) = model::units::parse_memory_mb(&s) {
            // What parses formats and parses back to itself.
            let again = model::units::parse_memory_mb(&model::units::format_memory_mb(mb));
            prop_assert_eq!(again, Ok(mb));
        }
    }
}
